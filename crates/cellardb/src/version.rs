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

    /// `files` (newest first) as runs: each level but level 0 one run if
    /// no two of its files share a row, each file its own run otherwise.
    fn runs_of(files: &[Arc<SstHandle>]) -> Vec<Arc<FileRun>> {
        let mut levels: HashMap<u8, Vec<Arc<SstHandle>>> = HashMap::new();
        for f in files.iter().filter(|f| f.meta.level > 0) {
            levels.entry(f.meta.level).or_default().push(f.clone());
        }
        // A sorted level's run, until placed where its newest file is.
        let mut sorted: HashMap<u8, Option<Arc<FileRun>>> = HashMap::new();
        for (level, mut files) in levels {
            files.sort_by(|a, b| a.meta.first_row.cmp(&b.meta.first_row));
            if files.windows(2).all(|w| w[0].meta.last_row < w[1].meta.first_row) {
                sorted.insert(level, Some(Arc::new(FileRun { files })));
            }
        }
        let mut runs = Vec::new();
        for f in files {
            match sorted.get_mut(&f.meta.level) {
                Some(run) => runs.extend(run.take()),
                None => runs.push(Arc::new(FileRun { files: vec![f.clone()] })),
            }
        }
        runs
    }
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
