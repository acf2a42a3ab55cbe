//! Turning a merged entry stream into rows: gather a row's entries into one
//! buffer ([`RowGather`]), assemble each family, apply the filter, group
//! into a [`Row`]. The returned row's qualifiers and values are slices of
//! the gathered buffer, so a row costs a handful of allocations whatever
//! its number of cells.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::gather::{Cap, Gather, Gathered, RowGather, Skipper};
use super::seek::Seeker;
use super::sources::ReadMerge;
use crate::Result;
use crate::key::InternalKey;
use crate::model::assemble::{Assembler, FamilyRules, LiveCell};
use crate::model::filter::{Filter, RowCell, RowView};
use crate::model::range_drop::dropped_below;
use crate::model::{Row, RowRef};
use crate::version::{FamilyView, ReadFamilies};

/// Bytes of capacity up to which a finished read's buffer is kept for the
/// thread's next read.
const KEPT_BUFFER_BYTES: usize = 4 << 20;

/// The growable buffers of a read, kept by each thread between reads.
///
/// A read of a wide row grows a buffer per entry, per live cell and per
/// cell handed out, and one of the row's bytes: a week of minutes in one
/// row is about 7 MB. Freed at the end of every read, memory of that size
/// goes back to the operating system (glibc maps it apart, or trims it off
/// the heap), and the next read takes a page fault for every 4 KiB of it
/// again, which can cost more than the read itself.
/// Kept here, a thread's next read starts with the capacity its last one
/// grew to, up to [`KEPT_BUFFER_BYTES`] a buffer.
#[derive(Default)]
struct ReadBuffers {
    entries: Vec<Gathered>,
    bytes: BytesMut,
    live: Vec<LiveCell>,
    cells: Vec<RowCell>,
}

impl ReadBuffers {
    /// The buffers of the thread's last read, if any.
    fn take() -> ReadBuffers {
        KEPT.try_with(|k| k.borrow_mut().take()).ok().flatten().unwrap_or_default()
    }

    /// Keeps `self` for the thread's next read, each buffer emptied, and
    /// dropped if it grew past [`KEPT_BUFFER_BYTES`].
    fn keep(mut self) {
        fn small<T>(v: &mut Vec<T>) {
            v.clear();
            if v.capacity() * size_of::<T>() > KEPT_BUFFER_BYTES {
                *v = Vec::new();
            }
        }
        small(&mut self.entries);
        small(&mut self.live);
        small(&mut self.cells);
        self.bytes.clear();
        if self.bytes.capacity() > KEPT_BUFFER_BYTES {
            self.bytes = BytesMut::new();
        }
        // During the thread's exit the slot may be gone: then nothing is kept.
        let _ = KEPT.try_with(|k| *k.borrow_mut() = Some(self));
    }
}

thread_local! {
    static KEPT: RefCell<Option<ReadBuffers>> = const { RefCell::new(None) };
}

/// Entries a reversed read gathers of one row before it gives up and reads
/// the row forward. A merge cannot seek backwards within a row, so a
/// reversed read of a wide row would step over every entry of it, however
/// few the filter keeps (the newest cell of each column of a week of
/// minutes: four cells of 40 000). Reading the row forward lets the filter
/// seek; for a narrow row, the entries already gathered are cheaper than
/// setting up another merge.
pub(crate) const WIDE_ROW_ENTRIES: usize = 128;

/// Entries of one column in a row after which a reversed read whose filter
/// can seek gives up on gathering the row backwards: a column this long is
/// a history the forward read jumps through (a week of minutes) rather
/// than a row of many short columns (an hour of events, one a column),
/// which it would read whole either way.
pub(crate) const WIDE_COLUMN_ENTRIES: usize = 16;

/// What a scanner found next.
pub(crate) enum Scanned {
    /// A row, held by the scanner until it moves on
    /// ([`RowScanner::take_row`], [`RowScanner::row_ref`]).
    Row,
    /// A row a reversed read found too wide to gather backwards: its key,
    /// and where known its last entry of one family (that family's rank,
    /// and the entry's key), past which that family holds nothing of the
    /// row. The scanner is left inside the row, and is done with.
    Wide(Bytes, Option<(u16, InternalKey)>),
    /// A row the read found empty after deletes, GC and the filter, the
    /// last of as many in a row as [`RowScanner::report_dropped`] asks;
    /// its key is [`RowScanner::row_key`].
    Dropped,
    /// Nothing more in the span.
    End,
}

/// Rows out of a merge of every source of one span of keys.
pub(crate) struct RowScanner {
    merge: ReadMerge,
    families: Arc<Vec<FamilyView>>,
    names: Arc<Vec<String>>,
    filter: Arc<Filter>,
    snapshot: u64,
    now: i64,
    reverse: bool,
    row: RowGather,
    live: Vec<LiveCell>,
    assembler: Assembler,
    /// Reused from row to row.
    cells: Vec<RowCell>,
    /// Jumps over what the filter drops anyway (forward reads only).
    seeker: Option<Seeker>,
    /// Whether a forward read of a row could jump within it.
    seekable: bool,
    /// Rows found empty since the last row returned or reported.
    dropped: usize,
    /// Report every this many empty rows in a row ([`Scanned::Dropped`]).
    report_dropped: usize,
}

impl Drop for RowScanner {
    fn drop(&mut self) {
        let (entries, bytes) = self.row.take_buffers();
        let (live, cells) = (std::mem::take(&mut self.live), std::mem::take(&mut self.cells));
        ReadBuffers { entries, bytes, live, cells }.keep();
    }
}

impl RowScanner {
    pub fn new(
        merge: ReadMerge,
        families: &ReadFamilies,
        filter: Arc<Filter>,
        snapshot: u64,
        now: i64,
        reverse: bool,
    ) -> Self {
        let (families, names) = (families.views.clone(), families.names.clone());
        let seekable = filter.has_head();
        let seeker = if reverse { None } else { Seeker::new(&filter, &families, snapshot) };
        let ReadBuffers { entries, bytes, live, cells } = ReadBuffers::take();
        RowScanner {
            merge,
            families,
            names,
            filter,
            snapshot,
            now,
            reverse,
            row: RowGather::with_buffers(entries, bytes),
            live,
            assembler: Assembler::default(),
            cells,
            seeker,
            seekable,
            dropped: 0,
            report_dropped: usize::MAX,
        }
    }

    /// Has [`RowScanner::next_row`] stop at every `n`th row in a row that it
    /// finds empty ([`Scanned::Dropped`]), so a read whose filter drops
    /// much can tell how far it got; 0: never.
    pub fn report_dropped(&mut self, n: usize) {
        self.report_dropped = if n == 0 { usize::MAX } else { n };
    }

    /// The key of the row last found, returned or dropped.
    pub fn row_key(&self) -> &[u8] {
        self.row.key()
    }

    /// Counts a row found empty; whether it is one to report.
    fn drop_row(&mut self) -> bool {
        self.dropped += 1;
        if self.dropped < self.report_dropped {
            return false;
        }
        self.dropped = 0;
        true
    }

    /// Moves the scanner on to another span's merge, keeping its buffers:
    /// a read of many keys sets up one scanner, not one a key.
    pub fn restart(&mut self, merge: ReadMerge) {
        self.merge = merge;
    }

    /// The merge rows come out of, to move its sources on to another span.
    pub fn merge_mut(&mut self) -> &mut ReadMerge {
        &mut self.merge
    }

    /// The next row with at least one cell after deletes, GC and the
    /// filter; in a reversed read, the key of a row too wide to gather
    /// backwards instead ([`WIDE_ROW_ENTRIES`]); or an empty row to report
    /// ([`RowScanner::report_dropped`]).
    pub fn next_row(&mut self) -> Result<Scanned> {
        let cap = match (self.reverse, self.seekable) {
            (false, _) => Cap::NONE,
            (true, false) => Cap { entries: WIDE_ROW_ENTRIES, column_run: usize::MAX },
            (true, true) => Cap { entries: WIDE_ROW_ENTRIES, column_run: WIDE_COLUMN_ENTRIES },
        };
        loop {
            let skipper = self.seeker.as_mut().map(|s| s as &mut dyn Skipper);
            match self.row.next_row_capped(&mut self.merge, self.reverse, skipper, cap)? {
                Gather::Row => {}
                Gather::TooWide => {
                    let key = Bytes::copy_from_slice(self.row.key());
                    return Ok(Scanned::Wide(key, self.row.take_last_of_wide()));
                }
                Gather::End => return Ok(Scanned::End),
            }
            self.find_live();
            if self.live.is_empty() {
                if self.drop_row() {
                    return Ok(Scanned::Dropped);
                }
                continue;
            }
            let mut cells = std::mem::take(&mut self.cells);
            cells.clear();
            let live = std::mem::take(&mut self.live);
            cells.extend(live.iter().map(|c| self.row_cell(c)));
            self.live = live;
            let view = RowView { key: self.row.key(), families: &self.names, bytes: self.row.bytes() };
            self.cells = self.filter.apply(&view, cells);
            if !self.cells.is_empty() {
                self.dropped = 0;
                return Ok(Scanned::Row);
            }
            if self.drop_row() {
                return Ok(Scanned::Dropped);
            }
        }
    }

    /// The row [`RowScanner::next_row`] found, borrowed from the scanner.
    pub fn row_ref(&self) -> RowRef<'_> {
        RowRef::new(self.row.key(), &self.names, &self.cells, self.row.bytes())
    }

    /// The row [`RowScanner::next_row`] found, owned: its bytes move out of
    /// the scanner's buffer without a copy.
    pub fn take_row(&mut self) -> Row {
        let mut cells = std::mem::take(&mut self.cells);
        let row = self.group(&mut cells);
        self.cells = cells;
        row
    }

    /// The indices of the live cells of the gathered row, family by family.
    fn find_live(&mut self) {
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        let gathered = self.row.gathered();
        let mut start = 0;
        while start < gathered.len() {
            let rank = gathered[start].rank;
            let n = gathered[start..].iter().take_while(|g| g.rank == rank).count();
            if let Some(view) = self.families.get(usize::from(rank)) {
                let dropped_below = dropped_below(&view.drops, self.row.key());
                let rules = FamilyRules {
                    gc_rule: &view.gc_rule,
                    snapshot: self.snapshot,
                    now: self.now,
                    dropped_below,
                    aggregate: view.aggregate,
                };
                let entries = (start..start + n).map(|i| (i, self.row.entry(i)));
                if !Assembler::family_unchanged(entries.clone(), &rules, &mut live) {
                    self.assembler.family(entries, &rules, &mut live);
                }
            }
            start += n;
        }
        self.live = live;
    }

    fn row_cell(&mut self, live: &LiveCell) -> RowCell {
        let g = &self.row.gathered()[live.index];
        let (family, qualifier, timestamp) = (g.rank, g.qualifier.clone(), g.timestamp);
        let value = match live.merged {
            Some(v) => self.row.append(&v.to_be_bytes()),
            None => g.value.clone(),
        };
        RowCell { family, qualifier, timestamp, value, labels: Vec::new() }
    }

    /// Groups cells in model order into a row whose key and bytes share one
    /// buffer.
    fn group(&mut self, cells: &mut Vec<RowCell>) -> Row {
        let key = self.row.append_key();
        let buffer = self.row.take_bytes();
        Row::from_cells(&buffer, key, Arc::clone(&self.names), cells.drain(..))
    }
}
