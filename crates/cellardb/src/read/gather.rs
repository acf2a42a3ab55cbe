//! One row's entries, gathered from a merge into one buffer.
//!
//! Each entry's qualifier and value are copied into a per-row buffer (a
//! qualifier repeated by consecutive entries is stored once); what is kept
//! per entry is its fixed-size fields and byte ranges. Reads and compaction
//! both consume rows this way.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use crate::Result;
use crate::iter::{EntrySource, MergingIter};
use crate::key::{EntryKind, EntryRef, InternalKey};

/// One gathered entry; byte ranges point into [`RowGather::bytes`].
#[derive(Debug, Clone)]
pub(crate) struct Gathered {
    /// Rank of the source's family.
    pub rank: u16,
    pub qualifier: Range<usize>,
    pub value: Range<usize>,
    pub timestamp: i64,
    pub seq: u64,
    pub kind: EntryKind,
}

/// Decides, entry by entry, whether a row's gather takes an entry or jumps
/// ahead (`read::seek::Seeker`, for reads whose filter drops cells anyway).
pub(crate) trait Skipper {
    /// A new row begins.
    fn start_row(&mut self, row: &[u8]);
    /// What to do with entry `e` of family rank `rank`.
    fn step(&mut self, rank: u16, e: &EntryRef<'_>) -> Step;
}

/// A [`Skipper`]'s decision.
pub(crate) enum Step {
    /// Gather the entry.
    Take,
    /// Step over it: cheaper than a seek when few entries are skipped.
    Drop,
    /// Move the family's sources to this key, after the entry.
    Seek(InternalKey),
}

/// What a gather found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gather {
    /// A row, whole.
    Row,
    /// A row with more entries than the cap: only its key.
    TooWide,
    /// Nothing: the merge is exhausted.
    End,
}

/// When a gather gives up on a row ([`Gather::TooWide`]): past this many
/// entries, or this many of one column in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cap {
    pub entries: usize,
    pub column_run: usize,
}

impl Cap {
    /// No cap: every row is gathered whole.
    pub const NONE: Cap = Cap { entries: usize::MAX, column_run: usize::MAX };
}

/// Capacity of a row buffer once rows are handed out. They are split off
/// the front of one buffer ([`RowGather::take_bytes`]), so rows of a few
/// hundred bytes share an allocation instead of making one each; a row
/// kept alone pins at most this much beside its own bytes.
const ROW_BUFFER: usize = 4096;

/// The entries of the row last gathered.
#[derive(Debug)]
pub(crate) struct RowGather {
    key: Vec<u8>,
    /// Starts empty and grows to the row: a read of one row, or of rows
    /// lent rather than handed out, allocates what it holds. (A first
    /// buffer of `ROW_BUFFER` cost a point read a large allocation and,
    /// in glibc, a sweep of its free lists.)
    bytes: BytesMut,
    entries: Vec<Gathered>,
    /// The buffer is one of `ROW_BUFFER` bytes, set up once rows are
    /// handed out: the capacity it grows back to when rows handed out
    /// still hold the last one.
    shared_by_rows: bool,
    /// A row was handed out of a buffer that is not: the next row sets
    /// one up.
    wants_shared_buffer: bool,
    /// Of a row a reversed gather gave up on, its first entry's key and
    /// family rank: the row's last entry of that family, in key order.
    last_of_wide: Option<(u16, InternalKey)>,
}

impl Default for RowGather {
    fn default() -> Self {
        RowGather {
            key: Vec::new(),
            bytes: BytesMut::new(),
            entries: Vec::new(),
            shared_by_rows: false,
            wants_shared_buffer: false,
            last_of_wide: None,
        }
    }
}

impl RowGather {
    /// A gather that writes into `entries` and `bytes` (cleared; their
    /// capacity kept), buffers of an earlier read.
    pub fn with_buffers(mut entries: Vec<Gathered>, mut bytes: BytesMut) -> RowGather {
        entries.clear();
        bytes.clear();
        RowGather { bytes, entries, ..RowGather::default() }
    }

    /// The gather's buffers, for a later read: the entries' vector, and the
    /// byte buffer if no row was handed out of it (else an empty one: rows
    /// handed out share its allocation, which must go when they do).
    pub fn take_buffers(&mut self) -> (Vec<Gathered>, BytesMut) {
        let handed_out = self.shared_by_rows || self.wants_shared_buffer;
        let bytes = if handed_out { BytesMut::new() } else { std::mem::take(&mut self.bytes) };
        (std::mem::take(&mut self.entries), bytes)
    }

    /// Copies the next row's entries out of `merge`, in key order (reversed
    /// back if the merge runs backwards); false when the merge is exhausted.
    pub fn next_row<S: EntrySource + ?Sized>(&mut self, merge: &mut MergingIter<S>, reverse: bool) -> Result<bool> {
        self.next_row_skipping(merge, reverse, None)
    }

    /// [`RowGather::next_row`], jumping where `skipper` says (forward only).
    pub fn next_row_skipping<S: EntrySource + ?Sized>(
        &mut self,
        merge: &mut MergingIter<S>,
        reverse: bool,
        skipper: Option<&mut dyn Skipper>,
    ) -> Result<bool> {
        Ok(matches!(self.gather(merge, reverse, skipper, Cap::NONE)?, Gather::Row))
    }

    /// [`RowGather::next_row_skipping`], giving up on a row past `cap`:
    /// then only its key is kept ([`RowGather::key`]) and the merge is left
    /// inside the row. A reversed read cannot seek within a row, so it
    /// reads a wide row forward instead.
    pub fn next_row_capped<S: EntrySource + ?Sized>(
        &mut self,
        merge: &mut MergingIter<S>,
        reverse: bool,
        skipper: Option<&mut dyn Skipper>,
        cap: Cap,
    ) -> Result<Gather> {
        self.gather(merge, reverse, skipper, cap)
    }

    fn gather<S: EntrySource + ?Sized>(
        &mut self,
        merge: &mut MergingIter<S>,
        reverse: bool,
        mut skipper: Option<&mut dyn Skipper>,
        cap: Cap,
    ) -> Result<Gather> {
        self.entries.clear();
        if self.wants_shared_buffer {
            self.bytes = BytesMut::with_capacity(ROW_BUFFER);
            (self.shared_by_rows, self.wants_shared_buffer) = (true, false);
        }
        self.bytes.clear();
        self.key.clear();
        self.last_of_wide = None;
        let Some(first) = merge.current_entry() else {
            return Ok(Gather::End);
        };
        self.key.extend_from_slice(first.row);
        if let Some(s) = skipper.as_deref_mut() {
            s.start_row(&self.key);
        }
        // The first entry is of the row by definition: one comparison of
        // keys fewer per row, which counts where rows hold one cell.
        let mut first = true;
        // Entries of one column in a row, the last taken among them.
        let mut column_run = 0;
        // Where the row's key was last seen in a source: a source hands out
        // a row's entries with its key at one place (a block keeps each
        // row's key once, or an SSTable iterator copies it out once), and
        // the next row's at another, so an entry whose key is the same
        // slice is of the same row without comparing bytes.
        let mut seen_at = (std::ptr::null::<u8>(), 0);
        // The entry and its rank are asked for apart: a pair built of them
        // is the entry copied through memory again, in pieces other than
        // the source wrote it in, which stalls on every entry and cost
        // more than the rest of a one-cell row's gather.
        while let Some(e) = merge.current_entry() {
            let rank = merge.leader_rank();
            let at = (e.row.as_ptr(), e.row.len());
            if !first && at != seen_at && e.row != self.key.as_slice() {
                break;
            }
            seen_at = at;
            first = false;
            match skipper.as_deref_mut().map_or(Step::Take, |s| s.step(rank, &e)) {
                Step::Take => {}
                Step::Drop => {
                    merge.advance()?;
                    continue;
                }
                // A target that would not move forward is stepped over
                // instead: slower, never stuck.
                Step::Seek(target) if e.cmp_internal(&target).is_lt() => {
                    merge.seek_rank(rank, &target)?;
                    continue;
                }
                Step::Seek(_) => {
                    debug_assert!(false, "a seek must move forward");
                    merge.advance()?;
                    continue;
                }
            }
            if self.entries.len() == cap.entries {
                return Ok(self.give_up(reverse && skipper.is_none()));
            }
            let qualifier = match self.entries.last() {
                Some(prev) if &self.bytes[prev.qualifier.clone()] == e.qualifier => {
                    column_run += 1;
                    if column_run == cap.column_run {
                        return Ok(self.give_up(reverse && skipper.is_none()));
                    }
                    prev.qualifier.clone()
                }
                _ => {
                    column_run = 1;
                    append(&mut self.bytes, e.qualifier)
                }
            };
            let value = append(&mut self.bytes, e.value);
            self.entries.push(Gathered { rank, qualifier, value, timestamp: e.timestamp, seq: e.seq, kind: e.kind });
            merge.advance()?;
        }
        if reverse {
            self.entries.reverse();
        }
        Ok(Gather::Row)
    }

    /// Ends a gather as [`Gather::TooWide`], keeping the row's key and, if
    /// `first_is_last` (a reversed gather that took every entry it met),
    /// its first entry's key ([`RowGather::take_last_of_wide`]).
    fn give_up(&mut self, first_is_last: bool) -> Gather {
        self.last_of_wide = self.entries.first().filter(|_| first_is_last).map(|g| {
            let key = InternalKey {
                row: Bytes::copy_from_slice(&self.key),
                qualifier: Bytes::copy_from_slice(&self.bytes[g.qualifier.clone()]),
                timestamp: g.timestamp,
                seq: g.seq,
                kind: g.kind,
            };
            (g.rank, key)
        });
        self.entries.clear();
        self.bytes.clear();
        Gather::TooWide
    }

    /// Of the row a reversed gather last gave up on ([`Gather::TooWide`]),
    /// the key of its last entry in key order and that entry's family
    /// rank, taken out: no entry of that family in the row lies beyond it.
    /// `None` if the gather did not see the row's last entry.
    pub fn take_last_of_wide(&mut self) -> Option<(u16, InternalKey)> {
        self.last_of_wide.take()
    }

    /// The row's key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The entries, in key order.
    pub fn gathered(&self) -> &[Gathered] {
        &self.entries
    }

    /// The buffer the entries' ranges point into.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Entry `i` as borrowed parts.
    pub fn entry(&self, i: usize) -> EntryRef<'_> {
        let g = &self.entries[i];
        EntryRef {
            row: &self.key,
            qualifier: &self.bytes[g.qualifier.clone()],
            timestamp: g.timestamp,
            seq: g.seq,
            kind: g.kind,
            value: &self.bytes[g.value.clone()],
        }
    }

    /// Appends `bytes` to the buffer (a value assembly made, such as an
    /// aggregate cell's) and says where they are.
    pub fn append(&mut self, bytes: &[u8]) -> Range<usize> {
        append(&mut self.bytes, bytes)
    }

    /// Appends the row's key to the buffer (for a row handed out whole) and
    /// says where it is.
    pub fn append_key(&mut self) -> Range<usize> {
        append(&mut self.bytes, &self.key)
    }

    /// Takes the buffer's bytes (for rows handed out). What is left of its
    /// allocation takes the next row, and once every row split off it is
    /// dropped, the whole of it is reused.
    pub fn take_bytes(&mut self) -> Bytes {
        self.wants_shared_buffer = !self.shared_by_rows;
        self.bytes.split().freeze()
    }
}

/// Appends `bytes` to `buf`, returning where they are.
fn append(buf: &mut BytesMut, bytes: &[u8]) -> Range<usize> {
    let start = buf.len();
    buf.extend_from_slice(bytes);
    start..buf.len()
}
