//! What a compaction hands to its output as it is: rows no other input
//! touches, in files already settled by a compaction.
//!
//! A store of time series is keyed `series#bucket` (or `series#time`): each
//! flush brings new cells for the newest bucket of every series, so the
//! level-0 files span the whole key range and every merge into level 1
//! rewrites all of level 1, although most of its rows (the older buckets)
//! gain nothing. Merging such a row only to write it out again costs the
//! whole merge path per entry, and the work grows with the data until
//! compaction falls behind the writers.
//!
//! [`PassThrough`] finds those stretches as the merge reaches them: the
//! input that leads the merge, up to the next row of any other input, holds
//! rows no other input has. Whole blocks of such rows are copied as stored
//! (compressed bytes, checksum and all: [`SstWriter::copy_block`]), and the
//! rest of a block already begun is added entry by entry, skipping the
//! row's gather and the retain rules.
//!
//! An entry passes only where `model::retain` would write it unchanged,
//! which `model::shortcut` states and proves: the family may pass
//! (`family_may_pass`), the file is settled (`file_settled`: written by a
//! compaction that saw each of its rows whole), and the entry passes
//! (`entry_passes_compaction`: a plain cell of a complete row that no
//! dropped range covers and the GC rule does not collect now). Its row is
//! complete when it is in no other input and no file left out may hold
//! it. The output must also be one run (time-window outputs split rows by
//! timestamp). Those are the rules of Bigtable's model; the format adds one
//! of its own: a block compressed with its file's dictionary is copied
//! only into an output that compresses with the same one
//! ([`SstWriter::can_copy`]), and is otherwise encoded again.
//!
//! `tests/compaction.rs` and the unit tests here check that a compaction
//! writes the same entries with and without passing rows through.

use super::job::Job;
use super::output::{NewWriter, Sink};
use crate::Result;
use crate::iter::MergingIter;
use crate::key::{EntryKind, EntryRef};
use crate::model::range_drop::dropped_below;
use crate::model::shortcut::{self, PassCandidate};
use crate::sst::{DecodedBlock, SstIter, SstReader};

/// Passes rows through to a compaction's output (see the module's doc).
pub(crate) struct PassThrough<'a> {
    job: &'a Job<'a>,
    /// Per input, in the merge's order: whether its file is settled (every
    /// row written whole by a compaction).
    settled: Vec<bool>,
    /// The next row of the other inputs: what passes sorts before it.
    bound: Option<Vec<u8>>,
    /// The last row checked, and whether it is complete and dropped.
    checked: Option<(Vec<u8>, RowFacts)>,
    /// What passed.
    pub counts: PassCounts,
}

/// What a compaction passed through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PassCounts {
    /// Blocks copied as stored.
    pub blocks_copied: u64,
    /// Entries of those blocks.
    pub entries_copied: u64,
    /// Entries added one by one without a merge.
    pub entries_added: u64,
}

impl<'a> PassThrough<'a> {
    /// The pass-through of `job`, if its output and family allow one.
    pub fn new(job: &'a Job<'a>) -> Option<PassThrough<'a>> {
        let one_run = matches!(job.layout, super::picker::OutputLayout::Level(_));
        if !one_run || !shortcut::family_may_pass(job.gc_rule, job.aggregate) {
            return None;
        }
        let settled =
            job.inputs.iter().map(|r| shortcut::file_settled(r.props().max_seq, r.props().tombstones)).collect();
        Some(PassThrough { job, settled, bound: None, checked: None, counts: PassCounts::default() })
    }

    /// Passes through what leads `merge`, for as long as it may; `merge`
    /// is left on the first entry of a row to merge (or exhausted).
    ///
    /// # Errors
    /// What reading the inputs or writing the output failed with.
    pub fn run(
        &mut self,
        merge: &mut MergingIter<SstIter>,
        sink: &mut Sink,
        new_writer: &mut NewWriter<'_>,
    ) -> Result<()> {
        loop {
            {
                // Checked first: on a merge of level-0 files it ends here,
                // before any comparison.
                if !merge.leader().is_some_and(|i| self.settled[i]) {
                    return Ok(());
                }
                let Some((_, current)) = merge.current() else { return Ok(()) };
                let next = merge.runner_up();
                if next.is_some_and(|n| current.row >= n.row) {
                    return Ok(());
                }
                self.bound = next.map(|n| n.row.to_vec());
            }
            let moved = merge.with_leader(|it| self.pass_source(it, sink, new_writer)).transpose()?;
            if moved != Some(true) {
                return Ok(());
            }
        }
    }

    /// Passes through the leading rows of `it`; false if none passed.
    fn pass_source(&mut self, it: &mut SstIter, sink: &mut Sink, new_writer: &mut NewWriter<'_>) -> Result<bool> {
        let mut moved = false;
        loop {
            if let Some((i, block)) = it.at_block_start() {
                let block = block.clone();
                if self.block_passes(it.reader(), i, &block) {
                    self.copy_block(it.reader(), i, &block, sink, new_writer)?;
                    it.skip_block()?;
                    moved = true;
                    continue;
                }
            }
            if self.pass_entries(it, sink, new_writer)? == 0 {
                return Ok(moved);
            }
            moved = true;
            // Stopped inside the block: at an entry to merge, or the end.
            if it.at_block_start().is_none() {
                return Ok(moved);
            }
        }
    }

    /// Adds the leading entries of the current block that may pass, one by
    /// one; returns how many.
    fn pass_entries(&mut self, it: &mut SstIter, sink: &mut Sink, new_writer: &mut NewWriter<'_>) -> Result<usize> {
        let mut n = 0;
        while let Some(e) = it.current() {
            if n > 0 && it.at_block_start().is_some() {
                break; // the next block: it may be copied whole
            }
            if !self.entry_passes(&e) {
                break;
            }
            let starts_row = sink.last_row() != Some(e.row);
            if starts_row {
                sink.end_row()?;
            }
            sink.level_writer(new_writer)?.add(e)?;
            n += 1;
            it.advance()?;
        }
        self.counts.entries_added += n as u64;
        Ok(n)
    }

    /// Copies block `i` of `reader` into the output: as stored, or, if the
    /// block being built is small enough to take it, re-encoded into that
    /// one (so that the small blocks left where passing begins and ends
    /// join their neighbours instead of accumulating).
    fn copy_block(
        &mut self,
        reader: &SstReader,
        i: usize,
        block: &DecodedBlock,
        sink: &mut Sink,
        new_writer: &mut NewWriter<'_>,
    ) -> Result<()> {
        let continues_row = block.rows().next().zip(sink.last_row()).is_some_and(|(first, last)| first.is(last));
        if !continues_row {
            sink.end_row()?;
        }
        let index = &reader.index()[i];
        let writer = sink.level_writer(new_writer)?;
        // Sizes in the estimate blocks are cut by, not raw bytes (packed
        // streams make a block's raw bytes far fewer than its estimate).
        if writer.can_join(block.estimated_size(), block.len()) {
            block.try_for_each_entry(|e| writer.push(e))?;
            writer.end_block()?;
            self.counts.entries_added += block.len() as u64;
            return Ok(());
        }
        let stored = reader.stored_block(i)?;
        if writer.can_copy(&stored) {
            writer.copy_block(&stored, block, &index.last_key)?;
            self.counts.blocks_copied += 1;
            self.counts.entries_copied += block.len() as u64;
        } else {
            // Compressed with a dictionary the output does not have: the
            // same entries, in a block of their own, compressed again.
            writer.end_block()?;
            block.try_for_each_entry(|e| writer.push(e))?;
            writer.end_block()?;
            self.counts.entries_added += block.len() as u64;
        }
        Ok(())
    }

    /// Whether block `i` of `reader` (decoded: `block`) passes whole.
    fn block_passes(&mut self, reader: &SstReader, i: usize, block: &DecodedBlock) -> bool {
        let last_row = &reader.index()[i].last_key.row[..];
        if self.bound.as_deref().is_some_and(|b| last_row >= b) || !block.all_settled_puts() {
            return false;
        }
        // Every entry is a settled cell, and GC by age collects an older
        // cell wherever it collects a newer one: the block passes if its
        // oldest cell would with each of its rows.
        let oldest = block.oldest_timestamp().unwrap_or(i64::MAX);
        let mut key = Vec::new();
        block.rows().all(|row| {
            let facts = self.row_facts(row.bytes(&mut key));
            self.passes(EntryKind::Put, 0, oldest, facts)
        })
    }

    /// Whether entry `e` passes.
    fn entry_passes(&mut self, e: &EntryRef<'_>) -> bool {
        if self.bound.as_deref().is_some_and(|b| e.row >= b) {
            return false;
        }
        let facts = self.row_facts(e.row);
        self.passes(e.kind, e.seq, e.timestamp, facts)
    }

    fn passes(&self, kind: EntryKind, seq: u64, timestamp: i64, row: RowFacts) -> bool {
        shortcut::entry_passes_compaction(PassCandidate {
            kind,
            seq,
            timestamp,
            gc_rule: self.job.gc_rule,
            now: self.job.now,
            row_complete: row.complete,
            row_dropped: row.dropped,
        })
    }

    /// Whether `row` is complete (no file left out may hold it) and whether
    /// a dropped range covers it; the last row's answer is kept.
    fn row_facts(&mut self, row: &[u8]) -> RowFacts {
        if let Some((checked, facts)) = &self.checked
            && checked == row
        {
            return *facts;
        }
        let facts = RowFacts {
            complete: !self.job.older.iter().any(|f| f.may_hold(row)),
            dropped: dropped_below(self.job.drops, row) > 0,
        };
        let slot = self.checked.get_or_insert_with(|| (Vec::new(), facts));
        slot.0.clear();
        slot.0.extend_from_slice(row);
        slot.1 = facts;
        facts
    }
}

/// What pass-through knows of a row.
#[derive(Debug, Clone, Copy)]
struct RowFacts {
    complete: bool,
    dropped: bool,
}

#[cfg(test)]
mod tests;
