//! Running a compaction: merge the input files row by row, decide what each
//! row keeps (`model::retain`), write the output run.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use super::pass::{PassCounts, PassThrough};
use super::picker::{OutputLayout, TOMBSTONE_WINDOW};
use crate::Result;
use crate::iter::MergingIter;
use crate::key::EntryRef;
use crate::manifest::SstMeta;
use crate::model::range_drop::dropped_below;
use crate::model::retain::{Keeper, RowContext};
use crate::model::{Aggregate, GcRule, RangeDrop};
use crate::read::RowGather;
use crate::sst::{SstIter, SstReader, SstSummary, SstWriter};

/// A compaction to run.
pub(crate) struct Job<'a> {
    /// The files merged.
    pub inputs: &'a [Arc<SstReader>],
    /// The store's files outside the input that are not wholly newer than
    /// it: a row any of them may hold is not complete.
    pub older: &'a [LeftOut],
    /// The family's GC rule.
    pub gc_rule: &'a GcRule,
    /// The family's aggregate, if it is an aggregate family.
    pub aggregate: Option<Aggregate>,
    /// The compaction's clock, µs.
    pub now: i64,
    /// Where the output goes.
    pub layout: OutputLayout,
    /// The store's dropped row ranges.
    pub drops: &'a [RangeDrop],
    /// Whether rows no other input touches may pass through as they are
    /// (`compaction::pass`); a full compaction rewrites every block.
    pub pass_through: bool,
    /// Bytes at which an output file is cut, at a row boundary.
    pub target_file_size: u64,
    /// Rows at which an output file is cut: a file's row filter is built
    /// from a hash of each of its rows, held until the file ends.
    pub target_file_rows: u64,
}

/// A file of the store that a compaction leaves out, and that may hold
/// entries older than some of the input's.
///
/// Which files these are is decided by sequence numbers, not levels: a
/// file is left out of this list only if its oldest entry is newer than
/// every entry of the input, as a memtable is. Levels do not say it: a
/// store compacted by time windows keeps overlapping files in level 1, one
/// of them the tombstones alone, and a later leveled merge into level 1 may
/// take a window file and leave out the tombstones of its rows (found by the
/// long crash runs: `tests/compaction.rs`).
pub(crate) struct LeftOut {
    /// The file (`None`: listed without a handle, which does not happen
    /// while the manifest and the handles change together; taken to hold
    /// every row, with tombstones).
    pub reader: Option<Arc<SstReader>>,
    /// Whether it may hold a tombstone newer than some entry of the input
    /// and older than another: then no two input cells of a row it may
    /// hold are merged (`RowContext::tombstones_outside`).
    pub tombstone_between: bool,
}

impl LeftOut {
    /// The files of `store` outside `input` (manifest entries) that are
    /// not wholly newer than it, with the handles to read them.
    pub fn of<'m>(
        store_files: impl Iterator<Item = &'m SstMeta> + Clone,
        input: &HashSet<u64>,
        reader: impl Fn(u64) -> Option<Arc<SstReader>>,
    ) -> Vec<LeftOut> {
        let chosen = store_files.clone().filter(|m| input.contains(&m.file));
        let (min_in, max_in) = chosen.fold((u64::MAX, 0), |(lo, hi), m| (lo.min(m.min_seq), hi.max(m.max_seq)));
        store_files
            .filter(|m| !input.contains(&m.file) && m.min_seq <= max_in)
            .map(|m| {
                let reader = reader(m.file);
                let tombstones = reader.as_ref().is_none_or(|r| r.props().tombstones > 0);
                LeftOut { reader, tombstone_between: tombstones && m.max_seq >= min_in }
            })
            .collect()
    }

    /// Whether the file may hold entries of `row`.
    pub fn may_hold(&self, row: &[u8]) -> bool {
        self.reader.as_ref().is_none_or(|r| may_hold(r, row))
    }
}

/// What a job did.
pub(crate) struct Ran {
    /// The files written.
    pub outputs: Vec<Output>,
    /// What passed through without a merge.
    pub passed: PassCounts,
}

/// A file the job wrote.
pub(crate) struct Output {
    /// Its number, as the writer factory gave it.
    pub number: u64,
    /// What it holds.
    pub summary: SstSummary,
    /// The level it belongs to.
    pub level: u8,
}

/// Makes the writer of the next output file, and says its number.
pub(crate) type NewWriter<'a> = dyn FnMut() -> Result<(u64, SstWriter)> + 'a;

impl Job<'_> {
    /// Runs the compaction; the outputs are synced, not yet installed.
    pub fn run(&self, new_writer: &mut NewWriter<'_>) -> Result<Ran> {
        let mut merge: MergingIter<SstIter> = MergingIter::new(false);
        for reader in self.inputs {
            let all = (Bound::Unbounded, Bound::Unbounded);
            merge.add(Box::new(SstIter::new(reader.clone(), None, all, false)?), 0);
        }
        let mut pass = if self.pass_through { PassThrough::new(self) } else { None };
        let mut sink = Sink::new(self.layout, self.target_file_size, self.target_file_rows);
        let mut row = RowGather::default();
        let mut keep = Vec::new();
        let mut keeper = Keeper::default();
        loop {
            if let Some(pass) = pass.as_mut() {
                pass.run(&mut merge, &mut sink, new_writer)?;
            }
            if !row.next_row(&mut merge, false)? {
                break;
            }
            let complete = !self.older.iter().any(|f| f.may_hold(row.key()));
            let entries: Vec<EntryRef<'_>> = (0..row.gathered().len()).map(|i| row.entry(i)).collect();
            keep.clear();
            let ctx = RowContext {
                complete,
                tombstones_outside: !complete
                    && self.older.iter().any(|f| f.tombstone_between && f.may_hold(row.key())),
                gc_rule: self.gc_rule,
                now: self.now,
                dropped_below: dropped_below(self.drops, row.key()),
                aggregate: self.aggregate,
            };
            keeper.keep_row(&entries, &ctx, &mut keep);
            for k in &keep {
                let merged = k.merged.map(i64::to_be_bytes);
                let value = merged.as_ref().map_or(entries[k.index].value, |m| &m[..]);
                sink.add(EntryRef { seq: k.seq, kind: k.kind, value, ..entries[k.index] }, new_writer)?;
            }
            sink.end_row()?;
        }
        let passed = pass.map(|p| p.counts).unwrap_or_default();
        Ok(Ran { outputs: sink.finish()?, passed })
    }
}

/// Whether `file` may hold entries of `row`.
pub(crate) fn may_hold(file: &SstReader, row: &[u8]) -> bool {
    let p = file.props();
    &p.first_row[..] <= row && row <= &p.last_row[..] && file.may_contain_row(row)
}

/// The output files being written: one run, or one run per time window.
pub(crate) struct Sink {
    layout: OutputLayout,
    target_file_size: u64,
    target_file_rows: u64,
    /// Open writers by window (a single one, window 0, for a level).
    open: BTreeMap<i64, (u64, SstWriter)>,
    done: Vec<Output>,
}

impl Sink {
    fn new(layout: OutputLayout, target_file_size: u64, target_file_rows: u64) -> Self {
        Sink { layout, target_file_size, target_file_rows, open: BTreeMap::new(), done: Vec::new() }
    }

    fn level(&self) -> u8 {
        match self.layout {
            OutputLayout::Level(l) => l,
            OutputLayout::Windows(_) => 1,
        }
    }

    /// The writer of a one-run output, opened if none is.
    pub fn level_writer(&mut self, new_writer: &mut NewWriter<'_>) -> Result<&mut SstWriter> {
        debug_assert!(matches!(self.layout, OutputLayout::Level(_)));
        self.writer(0, new_writer)
    }

    /// The open writer of `window`, opened if none is.
    fn writer(&mut self, window: i64, new_writer: &mut NewWriter<'_>) -> Result<&mut SstWriter> {
        let (_, writer) = match self.open.entry(window) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(new_writer()?),
        };
        Ok(writer)
    }

    /// The row last written to a one-run output's open file.
    pub fn last_row(&self) -> Option<&[u8]> {
        self.open.get(&0).and_then(|(_, w)| w.last_row())
    }

    fn add(&mut self, e: EntryRef<'_>, new_writer: &mut NewWriter<'_>) -> Result<()> {
        let window = match self.layout {
            OutputLayout::Level(_) => 0,
            OutputLayout::Windows(_) if !e.kind.is_cell() => TOMBSTONE_WINDOW,
            OutputLayout::Windows(width) => e.timestamp.div_euclid(width),
        };
        self.writer(window, new_writer)?.add(e)
    }

    /// At a row boundary: finishes the files that reached their target size
    /// or row count.
    pub fn end_row(&mut self) -> Result<()> {
        let is_full = |w: &SstWriter| w.file_size() >= self.target_file_size || w.rows() >= self.target_file_rows;
        let full: Vec<i64> = self.open.iter().filter(|(_, (_, w))| is_full(w)).map(|(k, _)| *k).collect();
        for window in full {
            if let Some((number, writer)) = self.open.remove(&window) {
                self.close(number, writer)?;
            }
        }
        Ok(())
    }

    fn close(&mut self, number: u64, writer: SstWriter) -> Result<()> {
        let summary = writer.finish()?;
        self.done.push(Output { number, summary, level: self.level() });
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<Output>> {
        for (_, (number, writer)) in std::mem::take(&mut self.open) {
            self.close(number, writer)?;
        }
        Ok(self.done)
    }
}
