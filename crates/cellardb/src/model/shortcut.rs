//! When a read or a compaction may skip work without changing an answer:
//! Bigtable's shortcut rules, stated once.
//!
//! The read (`read/seek.rs`, `read/sources.rs`) and compaction
//! (`compaction/pass.rs`) take a shortcut only where a predicate here says
//! it is safe; a new GC rule or tombstone kind changes these, and the
//! property tests below check each against row assembly (`assemble`) and
//! compaction's rules (`retain`): a shortcut taken never changes an answer.
//!
//! The proofs rest on the assembly rules (S, F, C, D, A, V, G) of
//! `assemble.rs`. Of those, only (V), `max_versions`, makes one cell's fate
//! depend on the cells of *other* timestamps of its column; (F) and (C)
//! depend on tombstones, (D) and (A) on the cells of the same timestamp,
//! and (S) and (G) by age on the cell alone.

use crate::key::EntryKind;
use crate::model::{Aggregate, GcRule};

/// Whether a family's cells stand alone: whether a cell is live never
/// depends on the cells at other timestamps of its column. True when the
/// GC rule names no `max_versions`.
///
/// Proof: without (V), a cell's fate is decided by the tombstones (F, C),
/// the cells at its own timestamp (D, A) and its own age (G). So a read may
/// skip every cell of other timestamps (a time range's newer cells, the
/// rest of a column) as long as it reads the tombstones, and what it keeps
/// is unchanged. With `max_versions`, skipping a newer version would let
/// an older one count as newer than it is.
pub(crate) fn cells_stand_alone(gc_rule: &GcRule) -> bool {
    gc_rule.version_limit().is_none()
}

/// Whether a forward read of one row may start a source inside the row,
/// past entries the head of the filter drops anyway (columns it rejects;
/// newer cells of the one column it keeps, in a family whose cells stand
/// alone): when the source holds no tombstone.
///
/// Proof: what such a start skips is cells, and a cell deletes nothing; so
/// every entry after the start is deleted, overwritten or kept exactly as
/// if the read had stepped over the skipped ones. The tombstones of every
/// other source are still read from the row's first entry. Columns are
/// assembled one by one (a family tombstone aside, which sorts first and
/// which this source lacks), and in a family whose cells stand alone, the
/// newer cells skipped cannot change an older cell's fate
/// ([`cells_stand_alone`]).
pub(crate) fn may_start_inside_row(tombstones_in_source: u64) -> bool {
    tombstones_in_source == 0
}

/// What a read knows of one column of a row when it has seen the column's
/// newest `n` distinct visible timestamps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnSoFar {
    /// The family's cells stand alone ([`cells_stand_alone`]).
    pub cells_stand_alone: bool,
    /// A delete may apply to the column's cells: a dropped row range
    /// covers the row, or a tombstone of the row's family or of the
    /// column was read.
    pub deletes_apply: bool,
}

/// Whether a read that keeps at most a column's newest `n` cells may skip
/// the rest of the column once it has seen `n` distinct visible timestamps
/// of it.
///
/// Proof: with no tombstone and no dropped range, every visible timestamp
/// of the column holds one cell after (D) and (A). With cells standing
/// alone, that cell is live unless GC by age collects it, and age collects
/// an older cell wherever it collects a newer one. So the live cells are a
/// prefix of the column's timestamps, newest first, and the newest `n` of
/// them are among the first `n` timestamps read.
pub(crate) fn column_rest_skippable(column: ColumnSoFar) -> bool {
    column.cells_stand_alone && !column.deletes_apply
}

/// Whether compaction may copy a family's entries to its output without
/// assembling their rows at all (`compaction/pass.rs`), given the rest of
/// [`entry_passes_compaction`]: its cells stand alone and it is not an
/// aggregate family.
pub(crate) fn family_may_pass(gc_rule: &GcRule, aggregate: Option<Aggregate>) -> bool {
    aggregate.is_none() && cells_stand_alone(gc_rule)
}

/// Whether a file is settled: written by a compaction that saw each of its
/// rows whole (every entry has sequence number 0) and holding no tombstone.
/// Such a file holds one entry per live cell as of its compaction.
pub(crate) fn file_settled(max_seq: u64, tombstones: u64) -> bool {
    max_seq == 0 && tombstones == 0
}

/// What compaction knows of one entry of a settled file, in a family that
/// may pass ([`family_may_pass`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PassCandidate<'a> {
    pub kind: EntryKind,
    pub seq: u64,
    pub timestamp: i64,
    /// The family's GC rule, and the compaction's clock (µs).
    pub gc_rule: &'a GcRule,
    pub now: i64,
    /// No file left out of the compaction may hold the entry's row.
    pub row_complete: bool,
    /// A dropped row range covers the row.
    pub row_dropped: bool,
}

/// Whether compaction writes this entry of a settled file unchanged, so it
/// may pass without its row's assembly.
///
/// Proof: compaction keeps a complete row's live cells with sequence
/// number 0 and drops the rest (`retain`, K1 and K2). A settled file holds
/// one plain cell per column and timestamp, with sequence 0 and no
/// tombstone; in a family that may pass, such a cell is live unless GC by
/// age collects it ([`cells_stand_alone`]), so if the rule does not collect
/// it now, compaction would write it as it is. A dropped range would keep
/// the cells' sequence numbers and may delete them, so its rows are
/// assembled.
pub(crate) fn entry_passes_compaction(e: PassCandidate<'_>) -> bool {
    e.kind == EntryKind::Put
        && e.seq == 0
        && e.row_complete
        && !e.row_dropped
        && !e.gc_rule.collects(0, e.timestamp, e.now)
}

#[cfg(test)]
mod tests;
