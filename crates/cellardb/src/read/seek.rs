//! Seeking past cells a filter would drop anyway.
//!
//! A forward read gathers a row entry by entry. Where the head of the
//! filter (its leading cell-local predicates: `Filter::head_keeps_column`,
//! `head_time`, `head_column_limit`) rejects a whole column, the read jumps to the next
//! column; where it rejects timestamps, it jumps to the first cell in
//! range, or past the column; where a `cells_per_column_limit` is met, it
//! jumps past the rest of the column. A wide row read for one column and
//! one hour then decodes the blocks of that column and hour only.
//!
//! A jump must not change which cells are live, so tombstones are always
//! read (they sort before the cells they delete), and newer cells and the
//! rest of a column are jumped over only where Bigtable's rules allow
//! (`model::shortcut`: `cells_stand_alone`, `column_rest_skippable`).

use std::sync::Arc;

use bytes::Bytes;

use super::gather::{Skipper, Step};
use crate::key::{EntryKind, EntryRef, InternalKey};
use crate::model::RangeDrop;
use crate::model::filter::Filter;
use crate::model::range_drop::dropped_below;
use crate::model::shortcut::{self, ColumnSoFar};
use crate::version::FamilyView;

/// Entries of a column stepped over one by one before the read seeks
/// instead: a seek costs a binary search in each source and a new heap, so
/// it pays only for longer runs (a wide row's column, not a tall row's).
const STEPS_BEFORE_SEEK: u32 = 8;

/// Where a forward read of one row may start in a source that holds no
/// tombstone, from the head of the filter: at the first column the head
/// can keep and, where the head keeps one column of a family whose cells
/// stand alone, at that column's first cell older than the time range's
/// end. What lies before is cells the [`Seeker`] would step over or jump
/// past (`shortcut::may_start_inside_row` says why that is safe). A point read then starts in the block that holds
/// its answer: a cold read of one column's hour of a wide row decodes
/// that block alone, not also the block holding the row's first entry.
#[derive(Debug, Clone)]
pub(crate) struct RowStart {
    /// The smallest qualifier a kept column can have.
    column: Bytes,
    /// The head keeps that one column only.
    one_column: bool,
    /// The end of the head's time range.
    end: Option<i64>,
}

impl RowStart {
    /// The start the head of `filter` allows; `None` if it is the row's
    /// first entry.
    pub fn of(filter: &Filter) -> Option<RowStart> {
        let (first, last) = filter.head_qualifier_bounds();
        let first = first?;
        let one_column = last.as_deref() == Some(first.as_slice());
        Some(RowStart { column: Bytes::from(first), one_column, end: filter.head_time().1 })
    }

    /// Where to start reading `row` in `family`'s sources that hold no
    /// tombstone.
    pub fn key(&self, row: &Bytes, family: &FamilyView) -> InternalKey {
        match self.end {
            Some(end) if self.one_column && shortcut::cells_stand_alone(&family.gc_rule) => InternalKey {
                row: row.clone(),
                qualifier: self.column.clone(),
                timestamp: end.saturating_sub(1),
                seq: u64::MAX,
                kind: EntryKind::Put,
            },
            _ => InternalKey {
                row: row.clone(),
                qualifier: self.column.clone(),
                timestamp: i64::MAX,
                seq: u64::MAX,
                kind: EntryKind::DeleteColumn,
            },
        }
    }
}

/// A family as the seeker sees it.
struct SeekFamily {
    name: String,
    /// Cells can be skipped from the newest (`shortcut::cells_stand_alone`).
    cells_stand_alone: bool,
    /// Dropped ranges of the family cover the current row.
    dropped: bool,
    /// A family tombstone of the current row was read.
    tombstoned: bool,
}

/// The column being read and what the seeker knows of it.
#[derive(Default)]
struct ColumnState {
    rank: u16,
    qualifier: Vec<u8>,
    /// Whether the predicates keep the column.
    kept: bool,
    /// A column tombstone of it was read.
    tombstoned: bool,
    /// Distinct visible timestamps counted, and the last.
    distinct: u32,
    last_ts: Option<i64>,
    /// Entries of it stepped over so far.
    dropped: u32,
}

/// The [`Skipper`] of a forward read.
pub(crate) struct Seeker {
    families: Vec<SeekFamily>,
    drops: Vec<Vec<RangeDrop>>,
    filter: Arc<Filter>,
    time: (i64, Option<i64>),
    /// The smallest and largest qualifier a kept column can have.
    first_column: Option<Vec<u8>>,
    last_column: Option<Vec<u8>>,
    limit: Option<u32>,
    snapshot: u64,
    /// The row being gathered (reused from row to row).
    row: Vec<u8>,
    /// The column being read; `None` at the start of a row.
    column: Option<ColumnState>,
    /// The last column's state, kept for its buffer.
    spare: ColumnState,
}

impl Seeker {
    /// A seeker for the head of `filter` over `families`; `None` if there
    /// is nothing to skip.
    pub fn new(filter: &Arc<Filter>, families: &[FamilyView], snapshot: u64) -> Option<Seeker> {
        if !filter.has_head() {
            return None;
        }
        let families_seen = families
            .iter()
            .map(|f| SeekFamily {
                name: f.name.clone(),
                cells_stand_alone: shortcut::cells_stand_alone(&f.gc_rule),
                dropped: false,
                tombstoned: false,
            })
            .collect();
        let (first_column, last_column) = filter.head_qualifier_bounds();
        Some(Seeker {
            families: families_seen,
            drops: families.iter().map(|f| f.drops.clone()).collect(),
            filter: filter.clone(),
            time: filter.head_time(),
            first_column,
            last_column,
            limit: filter.head_column_limit(),
            snapshot,
            row: Vec::new(),
            column: None,
            spare: ColumnState::default(),
        })
    }

    /// The first key after every entry of column `qualifier` of the row.
    fn past_column(&self, qualifier: &[u8]) -> InternalKey {
        let mut next = qualifier.to_vec();
        next.push(0);
        InternalKey {
            row: Bytes::copy_from_slice(&self.row),
            qualifier: next.into(),
            timestamp: i64::MAX,
            seq: u64::MAX,
            kind: EntryKind::DeleteColumn,
        }
    }

    /// Where to go once done with column `qualifier`: to the next row, if
    /// no later column can be kept (a read of one row then ends without
    /// loading the block where the next column starts); else to the next
    /// column.
    fn after_column(&self, qualifier: &[u8]) -> InternalKey {
        if self.last_column.as_deref().is_some_and(|last| qualifier >= last) {
            let mut next_row = self.row.clone();
            next_row.push(0);
            return InternalKey::first_of_row(next_row.into());
        }
        self.past_column(qualifier)
    }

    /// Where to go from rejected column `qualifier`: to the first column
    /// the predicates can keep, if that is further; else as
    /// [`Seeker::after_column`].
    fn next_candidate(&self, qualifier: &[u8]) -> InternalKey {
        match self.first_column.as_deref() {
            Some(first) if qualifier < first => InternalKey {
                row: Bytes::copy_from_slice(&self.row),
                qualifier: Bytes::copy_from_slice(first),
                timestamp: i64::MAX,
                seq: u64::MAX,
                kind: EntryKind::DeleteColumn,
            },
            _ => self.after_column(qualifier),
        }
    }

    /// The first cell of column `qualifier` older than `end`.
    fn before(&self, qualifier: &[u8], end: i64) -> InternalKey {
        InternalKey {
            row: Bytes::copy_from_slice(&self.row),
            qualifier: Bytes::copy_from_slice(qualifier),
            timestamp: end.saturating_sub(1),
            seq: u64::MAX,
            kind: EntryKind::Put,
        }
    }

    /// The state of the column `e` belongs to, started afresh on a new one.
    fn column_of(&mut self, rank: u16, e: &EntryRef<'_>) -> &mut ColumnState {
        let same = self.column.as_ref().is_some_and(|c| c.rank == rank && c.qualifier == e.qualifier);
        if !same {
            let name = self.families.get(usize::from(rank)).map_or("", |f| f.name.as_str());
            let kept = self.filter.head_keeps_column(name, e.qualifier);
            let mut c = self.column.take().unwrap_or_else(|| std::mem::take(&mut self.spare));
            c.qualifier.clear();
            c.qualifier.extend_from_slice(e.qualifier);
            (c.rank, c.kept, c.tombstoned, c.distinct, c.last_ts, c.dropped) = (rank, kept, false, 0, None, 0);
            self.column = Some(c);
        }
        self.column.get_or_insert_with(ColumnState::default)
    }
}

impl Skipper for Seeker {
    fn start_row(&mut self, row: &[u8]) {
        self.row.clear();
        self.row.extend_from_slice(row);
        if let Some(c) = self.column.take() {
            self.spare = c;
        }
        for (f, drops) in self.families.iter_mut().zip(&self.drops) {
            f.tombstoned = false;
            f.dropped = dropped_below(drops, row) > 0;
        }
    }

    fn step(&mut self, rank: u16, e: &EntryRef<'_>) -> Step {
        match self.jump(rank, e) {
            None => Step::Take,
            Some(jump) => {
                let column = self.column.get_or_insert_with(ColumnState::default);
                column.dropped += 1;
                if column.dropped <= STEPS_BEFORE_SEEK {
                    Step::Drop
                } else {
                    Step::Seek(self.target(jump, e.qualifier))
                }
            }
        }
    }
}

/// Where a read may jump from an entry it does not take; the key is made
/// only if it does jump (most such entries are stepped over).
#[derive(Debug, Clone, Copy)]
enum Jump {
    /// The column is rejected: [`Seeker::next_candidate`].
    NextCandidate,
    /// The column has nothing more to give: [`Seeker::after_column`].
    AfterColumn,
    /// To the column's first cell older than this end: [`Seeker::before`].
    Before(i64),
}

impl Seeker {
    /// The key `jump` goes to from an entry of column `qualifier`.
    fn target(&self, jump: Jump, qualifier: &[u8]) -> InternalKey {
        match jump {
            Jump::NextCandidate => self.next_candidate(qualifier),
            Jump::AfterColumn => self.after_column(qualifier),
            Jump::Before(end) => self.before(qualifier, end),
        }
    }

    /// `None` to take `e`; otherwise where the read may jump to.
    fn jump(&mut self, rank: u16, e: &EntryRef<'_>) -> Option<Jump> {
        let family = self.families.get(usize::from(rank))?;
        let (cells_stand_alone, dropped) = (family.cells_stand_alone, family.dropped);
        if e.kind == EntryKind::DeleteFamily {
            if let Some(f) = self.families.get_mut(usize::from(rank)) {
                f.tombstoned = true;
            }
            return None;
        }
        let family_tombstoned = family.tombstoned;
        let (start, end) = self.time;
        let (snapshot, limit) = (self.snapshot, self.limit);
        let column = self.column_of(rank, e);
        if e.kind == EntryKind::DeleteColumn {
            column.tombstoned = true;
            return None;
        }
        if !column.kept {
            return Some(Jump::NextCandidate);
        }
        if e.timestamp < start {
            return Some(Jump::AfterColumn);
        }
        if let Some(end) = end.filter(|&end| e.timestamp >= end && cells_stand_alone) {
            return Some(Jump::Before(end));
        }
        if e.seq > snapshot {
            return None;
        }
        let n = limit?;
        let deletes_apply = dropped || family_tombstoned || column.tombstoned;
        let so_far = ColumnSoFar { cells_stand_alone, deletes_apply };
        if !shortcut::column_rest_skippable(so_far) {
            return None;
        }
        if column.last_ts != Some(e.timestamp) {
            column.last_ts = Some(e.timestamp);
            column.distinct += 1;
        }
        (column.distinct > n).then_some(Jump::AfterColumn)
    }
}
