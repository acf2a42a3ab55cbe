//! Reading a decoded block: its row keys, its entries by index, and the
//! search for the first entry at or past a key.

use std::cmp::Ordering;

use super::decode::DecodedBlock;
use super::ints::SIGN;
use crate::key::{Entry, EntryKind, EntryRef, InternalKey};

/// The first index of `lo..hi` where `below` turns false (`below` true
/// then false along the range).
pub(crate) fn partition_point(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// An entry against `key`, whose row is the entry's: the entry's kind
/// tag (checked at decode), qualifier, timestamp (asked for only if the
/// rest ties) and sequence number.
#[allow(clippy::cast_possible_truncation, reason = "kind tags are checked at decode")]
#[inline]
pub(super) fn cmp_in_row(
    kind: u64,
    qualifier: &[u8],
    timestamp: impl FnOnce() -> i64,
    seq: u64,
    key: &InternalKey,
) -> Ordering {
    let kind = EntryKind::from_tag(kind as u8).unwrap_or(EntryKind::Put);
    let (group, sub) = kind.rank();
    let (key_group, key_sub) = key.kind.rank();
    group
        .cmp(&key_group)
        .then_with(|| qualifier.cmp(&key.qualifier[..]))
        .then(sub.cmp(&key_sub))
        .then_with(|| key.timestamp.cmp(&timestamp()))
        .then_with(|| key.seq.cmp(&seq))
}

/// `bytes[ends[i - 1]..ends[i]]`, the `i`th of back-to-back strings.
#[inline]
fn nth<'a>(bytes: &'a [u8], ends: &[u32], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &bytes[start..ends[i] as usize]
}

/// The bytes of a span [`span`] found.
#[inline]
fn part(bytes: &[u8], (start, end): (u32, u32)) -> &[u8] {
    &bytes[start as usize..end as usize]
}

/// Where the `i`th of the strings ending at `ends` lies.
#[inline]
fn span(ends: &[u32], i: usize) -> (u32, u32) {
    (if i == 0 { 0 } else { ends[i - 1] }, ends[i])
}

/// A row key of a [`DecodedBlock`]: the prefix the block's rows share,
/// then the rest. Rows of many narrow rows (a single-timestamp table's
/// minutes of one balloon) share most of their bytes, and kept whole they
/// would be nearly half of what the block costs the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowKey<'a> {
    prefix: &'a [u8],
    rest: &'a [u8],
}

impl<'a> RowKey<'a> {
    /// The key as one slice, where it is one in the block: a block's only
    /// row (all prefix), or a row whose rest is empty.
    #[inline]
    pub(crate) fn whole(&self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            Some(self.prefix)
        } else if self.prefix.is_empty() {
            Some(self.rest)
        } else {
            None
        }
    }

    /// The key as one slice: the block's, or a copy in `buf`.
    pub(crate) fn bytes<'b>(&self, buf: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if let Some(key) = self.whole() {
            key
        } else {
            self.copy_into(buf);
            buf
        }
    }

    /// The key, as `buf` now holds it.
    pub(crate) fn copy_into(&self, buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(self.prefix);
        buf.extend_from_slice(self.rest);
    }

    /// Bytes in the key.
    pub(crate) fn len(&self) -> usize {
        self.prefix.len() + self.rest.len()
    }

    /// Orders the key against `key`, as byte strings.
    #[inline]
    pub(crate) fn cmp_bytes(&self, key: &[u8]) -> Ordering {
        let p = self.prefix.len();
        match key.get(..p) {
            Some(head) => self.prefix.cmp(head).then_with(|| self.rest.cmp(&key[p..])),
            // `key` is shorter than the prefix: it decides, or is a prefix
            // of this key, which is then the greater.
            None => self.prefix[..key.len()].cmp(key).then(Ordering::Greater),
        }
    }

    /// Whether the key is `key`.
    #[inline]
    pub(crate) fn is(&self, key: &[u8]) -> bool {
        key.len() == self.len() && key.starts_with(self.prefix) && &key[self.prefix.len()..] == self.rest
    }
}

/// An entry's place in a [`DecodedBlock`] ([`DecodedBlock::locate`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryAt {
    /// The row's index among the block's rows.
    row: usize,
    /// The row key's bytes, where they lie together in the block.
    row_whole: Option<(u32, u32)>,
    qualifier: (u32, u32),
    value: (u32, u32),
    timestamp: i64,
    seq: u64,
    kind: EntryKind,
}

impl EntryAt {
    /// The row's index among the block's rows, if the block does not hold
    /// its key whole: then [`DecodedBlock::at`] takes the key from the
    /// caller, who copies it out once a row ([`RowKey::copy_into`]).
    #[inline]
    pub(crate) fn needs_row(&self) -> Option<usize> {
        self.row_whole.is_none().then_some(self.row)
    }
}

impl DecodedBlock {
    /// The index among the block's distinct rows of entry `i`'s row.
    #[allow(clippy::cast_possible_truncation, reason = "row indexes were decoded below the row count")]
    #[inline]
    pub(crate) fn row_index(&self, i: usize) -> Option<usize> {
        (i < self.len).then(|| self.row_of.get(i) as usize)
    }

    /// Row `r`'s key.
    #[inline]
    pub(crate) fn row_key(&self, r: usize) -> RowKey<'_> {
        let (start, end) = self.row_rest(r);
        RowKey {
            prefix: &self.row_bytes[..self.row_prefix as usize],
            rest: &self.row_bytes[start as usize..end as usize],
        }
    }

    /// Where the rest of row `r`'s key lies in `row_bytes`.
    #[inline]
    fn row_rest(&self, r: usize) -> (u32, u32) {
        self.row_ends.rest(r, self.row_prefix)
    }

    /// Entry `i` against `key` (`i` below the entry count).
    #[allow(clippy::cast_possible_truncation, reason = "row indexes were decoded below the row count")]
    pub(crate) fn cmp_key(&self, i: usize, key: &InternalKey) -> Ordering {
        self.row_key(self.row_of.get(i) as usize).cmp_bytes(&key.row).then_with(|| self.cmp_in_row(i, key))
    }

    /// Entry `i`, copied out (inspection and tests; reads borrow entries
    /// through an SSTable iterator).
    pub fn entry(&self, i: usize) -> Option<Entry> {
        let mut row = Vec::new();
        self.entry_in(i, &mut row).map(EntryRef::to_entry)
    }

    /// Every entry in order, copied out (tests).
    #[cfg(test)]
    pub fn entries(&self) -> impl Iterator<Item = Entry> + use<'_> {
        let mut entries = Vec::with_capacity(self.len);
        self.for_each_entry(|e| entries.push(e.to_entry()));
        entries.into_iter()
    }

    /// Entry `i`, borrowed, with its row key put in `row` where the block
    /// does not hold it whole.
    #[inline]
    pub(crate) fn entry_in<'a>(&'a self, i: usize, row: &'a mut Vec<u8>) -> Option<EntryRef<'a>> {
        let at = self.locate(i)?;
        if at.row_whole.is_none() {
            self.row_key(at.row).copy_into(row);
        }
        Some(self.at(&at, row))
    }

    /// Calls `f` with each entry in order, borrowed.
    pub(crate) fn for_each_entry(&self, mut f: impl FnMut(EntryRef<'_>)) {
        let done: Result<(), std::convert::Infallible> = self.try_for_each_entry(|e| {
            f(e);
            Ok(())
        });
        let Ok(()) = done;
    }

    /// Calls `f` with each entry in order, borrowed, until it fails.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub(crate) fn try_for_each_entry<E>(&self, mut f: impl FnMut(EntryRef<'_>) -> Result<(), E>) -> Result<(), E> {
        let mut row = Vec::new();
        let mut row_held = None;
        for at in (0..self.len).filter_map(|i| self.locate(i)) {
            if at.row_whole.is_none() && row_held != Some(at.row) {
                self.row_key(at.row).copy_into(&mut row);
                row_held = Some(at.row);
            }
            f(self.at(&at, &row))?;
        }
        Ok(())
    }

    /// Where entry `i`'s parts lie in the block: everything
    /// [`DecodedBlock::at`] decodes, kept by an iterator standing on the
    /// entry so that it is decoded once, however often it is read.
    #[allow(clippy::cast_possible_truncation, reason = "indexes and offsets were decoded from 32-bit ranges")]
    #[inline]
    pub(crate) fn locate(&self, i: usize) -> Option<EntryAt> {
        if i >= self.len {
            return None;
        }
        let kind = EntryKind::from_tag(self.kinds.get(i) as u8)?;
        let v0 = self.value_starts.get(i) as u32;
        let row = self.row_of.get(i) as usize;
        let (start, end) = self.row_rest(row);
        let row_whole = if start == end {
            Some((0, self.row_prefix))
        } else if self.row_prefix == 0 {
            Some((start, end))
        } else {
            None
        };
        Some(EntryAt {
            row,
            row_whole,
            qualifier: span(&self.qualifier_ends, self.qualifier_of.get(i) as usize),
            value: (v0, v0 + self.value_lens.get(i) as u32),
            timestamp: (self.timestamps.get(i) ^ SIGN).cast_signed() * self.scale,
            seq: self.seqs.get(i) ^ SIGN,
            kind,
        })
    }

    /// The entry `at` locates ([`DecodedBlock::locate`] on this block),
    /// whose row key is `row` where the block does not hold it whole
    /// ([`EntryAt::needs_row`]).
    #[inline]
    pub(crate) fn at<'a>(&'a self, at: &EntryAt, row: &'a [u8]) -> EntryRef<'a> {
        EntryRef {
            row: at.row_whole.map_or(row, |whole| part(&self.row_bytes, whole)),
            qualifier: part(&self.qualifier_bytes, at.qualifier),
            timestamp: at.timestamp,
            seq: at.seq,
            kind: at.kind,
            value: part(&self.values, at.value),
        }
    }

    /// The distinct row keys of the block, in order.
    pub(crate) fn rows(&self) -> impl Iterator<Item = RowKey<'_>> {
        (0..self.row_ends.len()).map(|r| self.row_key(r))
    }

    /// Index of the first entry not less than `key` (`inclusive`) or greater
    /// than `key` (`!inclusive`). The block's rows are distinct and in
    /// order, so the search finds the row among them first, comparing row
    /// keys only, and then the entry within the row's run, comparing the
    /// rest of the key field by field without locating whole entries.
    pub(crate) fn seek(&self, key: &InternalKey, inclusive: bool) -> usize {
        let rows = self.row_ends.len();
        let row = self.first_row_not_below(&key.row);
        let (start, end) = if rows == 1 {
            // A block inside one wide row (the common case of a seek): its
            // entries are all the row's.
            if row == 1 { (self.len, self.len) } else { (0, self.len) }
        } else if rows == self.len {
            // A row per entry (a tall table's block): entry `row` is the
            // row's, with no search of the packed row numbers, whose
            // memory a read of rows far apart would fetch for nothing else.
            (row, (row + 1).min(self.len))
        } else {
            let row_id = row as u64;
            let start = partition_point(0, self.len, |i| self.row_of.get(i) < row_id);
            (start, partition_point(start, self.len, |i| self.row_of.get(i) == row_id))
        };
        if row == rows || !self.row_key(row).is(&key.row) {
            return start;
        }
        let below = |i: usize| {
            let ord = self.cmp_in_row(i, key);
            if inclusive { ord.is_lt() } else { ord.is_le() }
        };
        // A read starts at its row's first key: settled by one comparison.
        if !below(start) {
            return start;
        }
        partition_point(start + 1, end, below)
    }

    /// The index of the first row whose key is not below `key` (the row
    /// count if every row's is). The prefix all rows share is compared
    /// once; the search by halves then compares only the rest of each key.
    fn first_row_not_below(&self, key: &[u8]) -> usize {
        let rows = self.row_ends.len();
        let prefix = &self.row_bytes[..self.row_prefix as usize];
        let Some(head) = key.get(..prefix.len()) else {
            return partition_point(0, rows, |r| self.row_key(r).cmp_bytes(key).is_lt());
        };
        match prefix.cmp(head) {
            Ordering::Less => rows,
            Ordering::Greater => 0,
            Ordering::Equal => {
                let rest = &key[prefix.len()..];
                partition_point(0, rows, |r| self.row_key(r).rest < rest)
            }
        }
    }

    /// Entry `i` against `key`, whose row is entry `i`'s.
    #[allow(clippy::cast_possible_truncation, reason = "kind tags and qualifier ids were checked at decode")]
    fn cmp_in_row(&self, i: usize, key: &InternalKey) -> Ordering {
        let qualifier = nth(&self.qualifier_bytes, &self.qualifier_ends, self.qualifier_of.get(i) as usize);
        let timestamp = || (self.timestamps.get(i) ^ SIGN).cast_signed() * self.scale;
        cmp_in_row(self.kinds.get(i), qualifier, timestamp, self.seqs.get(i) ^ SIGN, key)
    }
}
