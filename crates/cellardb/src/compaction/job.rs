//! Running a compaction: merge the input files row by row, decide what each
//! row keeps (`model::retain`), write the output run.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use super::picker::{OutputLayout, TARGET_FILE_SIZE, TOMBSTONE_WINDOW};
use crate::Result;
use crate::iter::{MergingIter, RowGather};
use crate::key::EntryRef;
use crate::model::range_drop::dropped_below;
use crate::model::retain::{Keeper, RowContext};
use crate::model::{Aggregate, GcRule, RangeDrop};
use crate::sst::{SstIter, SstReader, SstSummary, SstWriter};

/// A compaction to run.
pub(crate) struct Job<'a> {
    /// The files merged.
    pub inputs: &'a [Arc<SstReader>],
    /// The store's files outside the input that may hold entries older
    /// than the input's: a row any of them may hold is not complete.
    pub older: &'a [Arc<SstReader>],
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
    pub fn run(&self, new_writer: &mut NewWriter<'_>) -> Result<Vec<Output>> {
        let mut merge = MergingIter::new(false);
        for reader in self.inputs {
            let all = (Bound::Unbounded, Bound::Unbounded);
            merge.add(Box::new(SstIter::new(reader.clone(), None, all, false)?), 0);
        }
        let mut sink = Sink::new(self.layout);
        let mut row = RowGather::default();
        let mut keep = Vec::new();
        let mut keeper = Keeper::default();
        while row.next_row(&mut merge, false)? {
            let complete = !self.older.iter().any(|f| may_hold(f, row.key()));
            let entries: Vec<EntryRef<'_>> = (0..row.gathered().len()).map(|i| row.entry(i)).collect();
            keep.clear();
            let ctx = RowContext {
                complete,
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
        sink.finish()
    }
}

/// Whether `file` may hold entries of `row`.
fn may_hold(file: &SstReader, row: &[u8]) -> bool {
    let p = file.props();
    &p.first_row[..] <= row && row <= &p.last_row[..] && file.may_contain_row(row)
}

/// The output files being written: one run, or one run per time window.
struct Sink {
    layout: OutputLayout,
    /// Open writers by window (a single one, window 0, for a level).
    open: BTreeMap<i64, (u64, SstWriter)>,
    done: Vec<Output>,
}

impl Sink {
    fn new(layout: OutputLayout) -> Self {
        Sink { layout, open: BTreeMap::new(), done: Vec::new() }
    }

    fn level(&self) -> u8 {
        match self.layout {
            OutputLayout::Level(l) => l,
            OutputLayout::Windows(_) => 1,
        }
    }

    fn add(&mut self, e: EntryRef<'_>, new_writer: &mut NewWriter<'_>) -> Result<()> {
        let window = match self.layout {
            OutputLayout::Level(_) => 0,
            OutputLayout::Windows(_) if !e.kind.is_cell() => TOMBSTONE_WINDOW,
            OutputLayout::Windows(width) => e.timestamp.div_euclid(width),
        };
        let (_, writer) = match self.open.entry(window) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(new_writer()?),
        };
        writer.add(e)
    }

    /// At a row boundary: finishes the files that reached their target size.
    fn end_row(&mut self) -> Result<()> {
        let full: Vec<i64> =
            self.open.iter().filter(|(_, (_, w))| w.file_size() >= TARGET_FILE_SIZE).map(|(k, _)| *k).collect();
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
