//! What a compaction is: the files it merges, the files it leaves out
//! that may still hold its rows, the family's rules and where the output
//! goes. Running it is `run.rs`; its output files, `output.rs`.

use std::collections::HashSet;
use std::sync::Arc;

use super::picker::OutputLayout;
use crate::manifest::SstMeta;
use crate::model::{Aggregate, GcRule, RangeDrop};
use crate::sst::SstReader;

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

/// Whether `file` may hold entries of `row`.
pub(crate) fn may_hold(file: &SstReader, row: &[u8]) -> bool {
    let p = file.props();
    &p.first_row[..] <= row && row <= &p.last_row[..] && file.may_contain_row(row)
}
