//! What one read sees: the memtables, the live SSTables and the schema, as
//! one immutable [`SuperVersion`] swapped atomically on every change.
//!
//! A read clones the current `Arc<SuperVersion>` and keeps it to the end, so
//! a flush or schema change during the read changes nothing it sees. An
//! SSTable made obsolete is deleted when the last `SuperVersion` holding its
//! [`SstHandle`] is dropped: never while something reads it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fs::Fs;
use crate::manifest::SstMeta;
use crate::memtable::Memtable;
use crate::model::{Aggregate, FamilyMeta, GcRule, RangeDrop, TableMeta};
use crate::sst::{SstBlockCache, SstReader};

/// An open, live SSTable.
#[derive(Debug)]
pub(crate) struct SstHandle {
    pub reader: Arc<SstReader>,
    pub meta: SstMeta,
    obsolete: AtomicBool,
    fs: Arc<dyn Fs>,
    cache: Arc<SstBlockCache>,
}

impl SstHandle {
    pub fn new(reader: SstReader, meta: SstMeta, fs: Arc<dyn Fs>, cache: Arc<SstBlockCache>) -> Self {
        SstHandle { reader: Arc::new(reader), meta, obsolete: AtomicBool::new(false), fs, cache }
    }

    /// The block cache its reads go through.
    pub fn cache(&self) -> &Arc<SstBlockCache> {
        &self.cache
    }

    /// Marks the file for deletion once nothing holds it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    fn path(&self) -> PathBuf {
        self.reader.path().to_path_buf()
    }
}

impl Drop for SstHandle {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.cache.forget_file(self.reader.id());
            if let Err(e) = self.fs.remove(&self.path()) {
                log::warn!("cellardb: could not delete obsolete {}: {e}", self.path().display());
            }
        }
    }
}

/// A family as one read sees it; its index in the read's list is its rank.
#[derive(Debug, Clone)]
pub(crate) struct FamilyView {
    pub name: String,
    pub store: u32,
    pub gc_rule: GcRule,
    /// The family's aggregate, if it is an aggregate family.
    pub aggregate: Option<Aggregate>,
    /// The family's dropped row ranges.
    pub drops: Vec<RangeDrop>,
}

/// The families a read sees, in rank order, with their names as rows
/// name them. A snapshot keeps those of every family of every table
/// ([`SuperVersion`]), so a read of them all, the
/// usual one, shares them rather than building them again.
#[derive(Debug, Clone)]
pub(crate) struct ReadFamilies {
    pub views: Arc<Vec<FamilyView>>,
    pub names: Arc<Vec<String>>,
}

impl ReadFamilies {
    pub fn new(views: Vec<FamilyView>) -> ReadFamilies {
        let names = views.iter().map(|f| f.name.clone()).collect();
        ReadFamilies { views: Arc::new(views), names: Arc::new(names) }
    }
}

/// Tables by name, as of one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schema {
    pub tables: Vec<TableMeta>,
}

impl Schema {
    pub fn table(&self, name: &str) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.name == name)
    }

    pub fn table_by_id(&self, id: u32) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.id == id)
    }

    /// The family name of `store`, if the store is live.
    pub fn family_of_store(&self, store: u32) -> Option<&str> {
        self.family_by_store(store).map(|f| f.name.as_str())
    }

    /// The family of `store`, if the store is live.
    pub fn family_by_store(&self, store: u32) -> Option<&FamilyMeta> {
        self.tables.iter().flat_map(|t| &t.families).find(|f| f.store == store)
    }
}

/// Everything a read needs, frozen.
#[derive(Debug)]
pub(crate) struct SuperVersion {
    /// The memtable taking writes.
    pub mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    pub imm: Vec<Arc<Memtable>>,
    /// Live SSTables by store, newest first.
    pub files: HashMap<u32, Vec<Arc<SstHandle>>>,
    /// Dropped row ranges by store.
    pub drops: HashMap<u32, Vec<RangeDrop>>,
    /// The schema.
    pub schema: Arc<Schema>,
    /// Every family of each table as a read sees it, by table id.
    families: HashMap<u32, ReadFamilies>,
    /// The live SSTables by store as a read merges them ([`FileRun`]).
    runs: HashMap<u32, Vec<Arc<FileRun>>>,
}

impl SuperVersion {
    /// A snapshot of these memtables (the one taking writes, then the
    /// frozen ones, newest first), files, dropped ranges and schema.
    pub fn new(
        (mem, imm): (Arc<Memtable>, Vec<Arc<Memtable>>),
        files: HashMap<u32, Vec<Arc<SstHandle>>>,
        drops: HashMap<u32, Vec<RangeDrop>>,
        schema: Arc<Schema>,
    ) -> SuperVersion {
        let families =
            schema.tables.iter().map(|t| (t.id, ReadFamilies::new(family_views(t, &drops, |_| true)))).collect();
        let runs = files.iter().map(|(store, files)| (*store, FileRun::runs_of(files))).collect();
        SuperVersion { mem, imm, files, drops, schema, families, runs }
    }

    /// The families of `table` that `keep` keeps, as a read sees them:
    /// shared with other reads if it keeps every one.
    pub fn read_families(&self, table: &TableMeta, keep: impl Fn(&str) -> bool) -> ReadFamilies {
        match self.families.get(&table.id) {
            Some(all) if table.families.iter().all(|f| keep(&f.name)) => all.clone(),
            _ => ReadFamilies::new(family_views(table, &self.drops, keep)),
        }
    }

    /// Every memtable, newest first.
    pub fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.mem).chain(&self.imm)
    }

    /// The live SSTables of `store`, newest first.
    pub fn files_of(&self, store: u32) -> &[Arc<SstHandle>] {
        self.files.get(&store).map_or(&[], Vec::as_slice)
    }

    /// The live SSTables of `store` as a read merges them: each a run of
    /// files read one after another, runs ordered as their newest files.
    pub fn runs_of(&self, store: u32) -> &[Arc<FileRun>] {
        self.runs.get(&store).map_or(&[], Vec::as_slice)
    }
}

/// Files of one store that a read takes one after another, as one source
/// of its merge: the files of a level none of whose rows is in another
/// file of the level, in row order (LevelDB reads a level so); or one
/// file alone.
///
/// Reading a level's files as separate sources gives the same entries,
/// but the merge then compares each entry's key with the other files'
/// next keys, on every entry of a scan.
///
/// The merge breaks a tie between two sources' equal keys by the order it
/// was given them (newest file first), and a run stands where its newest
/// file would. That moves a run's older files ahead of the files between
/// its newest and them, which matters to no read: no key is in two live
/// files. Every write has its own sequence number, and a compaction
/// writes sequence number 0 only for a row no file outside it may hold
/// (`model::retain`), and replaces its inputs at once.
#[derive(Debug)]
pub(crate) struct FileRun {
    files: Vec<Arc<SstHandle>>,
}

impl FileRun {
    /// The files, in row order.
    pub fn files(&self) -> &[Arc<SstHandle>] {
        &self.files
    }

    /// `files` (newest first) as runs ([`run_groups`]).
    pub fn runs_of(files: &[Arc<SstHandle>]) -> Vec<Arc<FileRun>> {
        let metas: Vec<&SstMeta> = files.iter().map(|f| &f.meta).collect();
        let group = |g: Vec<usize>| Arc::new(FileRun { files: g.into_iter().map(|i| files[i].clone()).collect() });
        run_groups(&metas).into_iter().map(group).collect()
    }
}

/// Files (newest first) grouped into runs, by their indexes: each level but
/// level 0 one run in row order if no two of its files share a row, each
/// file alone otherwise; runs in the order of their newest files.
fn run_groups(files: &[&SstMeta]) -> Vec<Vec<usize>> {
    let mut levels: HashMap<u8, Vec<usize>> = HashMap::new();
    for (i, f) in files.iter().enumerate().filter(|(_, f)| f.level > 0) {
        levels.entry(f.level).or_default().push(i);
    }
    // A sorted level's run, until placed where its newest file is.
    let mut sorted: HashMap<u8, Option<Vec<usize>>> = HashMap::new();
    for (level, mut run) in levels {
        run.sort_by(|&a, &b| files[a].first_row.cmp(&files[b].first_row));
        if run.windows(2).all(|w| files[w[0]].last_row < files[w[1]].first_row) {
            sorted.insert(level, Some(run));
        }
    }
    let mut runs = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match sorted.get_mut(&f.level) {
            Some(run) => runs.extend(run.take()),
            None => runs.push(vec![i]),
        }
    }
    runs
}

/// The families of `table` that `keep` keeps, in the table's order.
fn family_views(
    table: &TableMeta,
    drops: &HashMap<u32, Vec<RangeDrop>>,
    keep: impl Fn(&str) -> bool,
) -> Vec<FamilyView> {
    table
        .families
        .iter()
        .filter(|f| keep(&f.name))
        .map(|f| FamilyView {
            name: f.name.clone(),
            store: f.store,
            gc_rule: f.gc_rule.clone(),
            aggregate: f.aggregate,
            drops: drops.get(&f.store).cloned().unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn file(level: u8, rows: (&'static str, &'static str)) -> SstMeta {
        let (first_row, last_row) = (Bytes::from_static(rows.0.as_bytes()), Bytes::from_static(rows.1.as_bytes()));
        SstMeta { store: 1, file: 0, level, size: 0, first_row, last_row, min_seq: 0, max_seq: 0, drops_applied: 0 }
    }

    fn groups(files: &[SstMeta]) -> Vec<Vec<usize>> {
        run_groups(&files.iter().collect::<Vec<_>>())
    }

    #[test]
    fn a_level_whose_files_share_no_row_is_one_run_in_row_order_where_its_newest_file_is() {
        let files = [
            file(0, ("a", "z")),
            file(1, ("m", "p")),
            file(2, ("a", "k")),
            file(1, ("a", "c")),
            file(0, ("b", "d")),
            file(1, ("q", "q")),
        ];
        assert_eq!(groups(&files), vec![vec![0], vec![3, 1, 5], vec![2], vec![4]]);
    }

    #[test]
    fn a_level_whose_files_share_a_row_is_read_file_by_file_as_level_0_is() {
        // Time windows keep overlapping files in level 1; a row may also
        // end one file and start the next.
        let overlapping = [file(1, ("a", "m")), file(1, ("k", "z")), file(2, ("a", "b"))];
        assert_eq!(groups(&overlapping), vec![vec![0], vec![1], vec![2]]);
        let touching = [file(1, ("a", "m")), file(1, ("m", "z"))];
        assert_eq!(groups(&touching), vec![vec![0], vec![1]]);
        let level0 = [file(0, ("a", "b")), file(0, ("c", "d"))];
        assert_eq!(groups(&level0), vec![vec![0], vec![1]], "level 0 is never a run");
    }
}
