//! Running a compaction: merge the input files row by row, decide what each
//! row keeps (`model::retain`), write the output run.

use std::ops::Bound;

use super::job::Job;
use super::output::{NewWriter, Output, Sink};
use super::pass::{PassCounts, PassThrough};
use crate::Result;
use crate::iter::MergingIter;
use crate::key::EntryRef;
use crate::model::range_drop::dropped_below;
use crate::model::retain::{Keeper, RowContext};
use crate::read::RowGather;
use crate::sst::SstIter;

/// What a job did.
pub(crate) struct Ran {
    /// The files written.
    pub outputs: Vec<Output>,
    /// What passed through without a merge.
    pub passed: PassCounts,
}

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
