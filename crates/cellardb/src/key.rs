//! The internal key: how every cell and tombstone of one column family is
//! ordered in the memtable, the log and the SSTables.
//!
//! Within a family, entries sort by
//!
//! ```text
//! row ↑ · group ↑ · qualifier ↑ · sub ↑ · timestamp ↓ · sequence ↓
//! ```
//!
//! where a family tombstone has group 0 (so it precedes every column of its
//! row) and columns have group 1, in which a column tombstone (sub 0) precedes
//! the column's cells (sub 1). A reader meets every tombstone before the cells
//! it may delete, and meets a column's cells newest first. Sequence numbers
//! make deletes exact: a tombstone deletes only entries with a smaller
//! sequence, as Bigtable applies mutations in order.
//!
//! The entry format is shared by the memtable, the write batch, the log and
//! the SSTables, and depends on none of them.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::coding::{Cursor, DecodeError, put_zigzag};

/// Largest row key, in bytes: Bigtable's limit, which decoders also check.
pub const MAX_ROW_KEY: usize = 4 << 10;

/// What an entry is. Written to disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum EntryKind {
    /// A cell: `timestamp` and `value` are the cell's.
    Put = 0,
    /// Deletes the column's older cells in a time range: `timestamp` is the
    /// range's start, `value` its end (empty, or a zigzag varint).
    DeleteColumn = 1,
    /// Deletes every older cell of the row in this family. Qualifier and
    /// value are empty, timestamp 0.
    DeleteFamily = 2,
    /// A cell that its family's `max_versions` limit has already counted
    /// out, kept only because the rest of the rule keeps it (an
    /// intersection with `max_age`, while the cell is young). Written only
    /// by compaction, which discards the history that showed it; ordered
    /// and read as a cell otherwise.
    PutCountedOut = 3,
}

impl EntryKind {
    /// The kind with tag `b`, if any.
    pub(crate) fn from_tag(b: u8) -> Option<EntryKind> {
        match b {
            0 => Some(EntryKind::Put),
            1 => Some(EntryKind::DeleteColumn),
            2 => Some(EntryKind::DeleteFamily),
            3 => Some(EntryKind::PutCountedOut),
            _ => None,
        }
    }

    /// (group, sub) of the ordering above.
    pub(crate) fn rank(self) -> (u8, u8) {
        match self {
            EntryKind::DeleteFamily => (0, 0),
            EntryKind::DeleteColumn => (1, 0),
            EntryKind::Put | EntryKind::PutCountedOut => (1, 1),
        }
    }

    /// The kind's name in `docs/format/` and in tools' output: `put`,
    /// `delete_column`, `delete_family`, `put_counted_out`.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Put => "put",
            EntryKind::DeleteColumn => "delete_column",
            EntryKind::DeleteFamily => "delete_family",
            EntryKind::PutCountedOut => "put_counted_out",
        }
    }

    /// Whether the entry is a cell (rather than a tombstone).
    pub fn is_cell(self) -> bool {
        matches!(self, EntryKind::Put | EntryKind::PutCountedOut)
    }
}

/// The ordered part of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InternalKey {
    /// Row key.
    pub row: Bytes,
    /// Column qualifier (empty for a family tombstone).
    pub qualifier: Bytes,
    /// Cell timestamp in µs, or a column tombstone's range start.
    pub timestamp: i64,
    /// Sequence number of the mutation that wrote the entry.
    pub seq: u64,
    /// What the entry is.
    pub kind: EntryKind,
}

impl InternalKey {
    /// The smallest key of `row`: every entry of the row sorts at or after it.
    pub(crate) fn first_of_row(row: Bytes) -> InternalKey {
        InternalKey { row, qualifier: Bytes::new(), timestamp: i64::MAX, seq: u64::MAX, kind: EntryKind::DeleteFamily }
    }

    /// Whether this is the smallest key of its row ([`InternalKey::first_of_row`]).
    pub(crate) fn is_first_of_row(&self) -> bool {
        self.qualifier.is_empty()
            && self.timestamp == i64::MAX
            && self.seq == u64::MAX
            && self.kind == EntryKind::DeleteFamily
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_parts(
            (&self.row, &self.qualifier, self.timestamp, self.seq, self.kind),
            (&other.row, &other.qualifier, other.timestamp, other.seq, other.kind),
        )
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An entry whose bytes are borrowed: what the write path, the memtable's
/// flush and the SSTable writer pass around without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryRef<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Column qualifier.
    pub qualifier: &'a [u8],
    /// Timestamp (a column tombstone's range start).
    pub timestamp: i64,
    /// Sequence number.
    pub seq: u64,
    /// What the entry is.
    pub kind: EntryKind,
    /// Value (a column tombstone's encoded range end).
    pub value: &'a [u8],
}

/// Orders two keys given as parts, as [`InternalKey`]'s `Ord` does.
/// Inlined: it is the memtable's and the merge's inner loop, run for
/// every comparison an ingest into wide rows makes.
#[inline]
pub(crate) fn compare_parts(
    a: (&[u8], &[u8], i64, u64, EntryKind),
    b: (&[u8], &[u8], i64, u64, EntryKind),
) -> Ordering {
    let (ga, sa) = a.4.rank();
    let (gb, sb) = b.4.rank();
    a.0.cmp(b.0).then(ga.cmp(&gb)).then_with(|| a.1.cmp(b.1)).then(sa.cmp(&sb)).then(b.2.cmp(&a.2)).then(b.3.cmp(&a.3))
}

impl EntryRef<'_> {
    /// Orders the entry's key against `key`.
    #[inline]
    pub(crate) fn cmp_internal(&self, key: &InternalKey) -> Ordering {
        compare_parts(self.parts(), (&key.row, &key.qualifier, key.timestamp, key.seq, key.kind))
    }

    fn parts(&self) -> (&[u8], &[u8], i64, u64, EntryKind) {
        (self.row, self.qualifier, self.timestamp, self.seq, self.kind)
    }

    /// Orders by key, as [`InternalKey`] does.
    #[inline]
    pub(crate) fn cmp_key(&self, other: &EntryRef<'_>) -> Ordering {
        compare_parts(self.parts(), other.parts())
    }

    /// Bytes the entry stands for, but for its family's name (which the
    /// caller knows and adds): row, qualifier, value and 8 for the timestamp.
    pub(crate) fn logical_size(&self) -> usize {
        self.row.len() + self.qualifier.len() + self.value.len() + 8
    }

    /// The timestamps `[start, end)` a column tombstone deletes (`end`
    /// `None`: no end); `None` if the encoded end does not decode (the
    /// SSTable and log decoders reject such entries, so an entry read from
    /// disk always decodes).
    pub fn deleted_span(&self) -> Option<(i64, Option<i64>)> {
        Some((self.timestamp, decode_range_end(self.value).ok()?))
    }

    /// An owned copy.
    pub(crate) fn to_entry(self) -> Entry {
        let key = InternalKey {
            row: Bytes::copy_from_slice(self.row),
            qualifier: Bytes::copy_from_slice(self.qualifier),
            timestamp: self.timestamp,
            seq: self.seq,
            kind: self.kind,
        };
        Entry { key, value: Bytes::copy_from_slice(self.value) }
    }
}

/// Encodes a column tombstone's range end as its value: empty for no end.
pub fn encode_range_end(end: Option<i64>) -> Vec<u8> {
    let mut value = Vec::new();
    if let Some(end) = end {
        put_zigzag(&mut value, end);
    }
    value
}

/// The range end a column tombstone's value encodes (`None`: no end).
///
/// # Errors
/// If the value is not empty and not exactly one zigzag varint.
pub fn decode_range_end(value: &[u8]) -> Result<Option<i64>, DecodeError> {
    if value.is_empty() {
        return Ok(None);
    }
    let mut c = Cursor::new(value);
    let end = c.zigzag("range end")?;
    if c.is_empty() { Ok(Some(end)) } else { Err(c.error("range end followed by more bytes")) }
}

/// Whether `value` is a column tombstone's encoded range end: what every
/// decoder checks of a `DeleteColumn` entry.
pub fn is_range_end(value: &[u8]) -> bool {
    decode_range_end(value).is_ok()
}

/// A key and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The ordered part.
    pub key: InternalKey,
    /// Cell value, or a column tombstone's encoded range end.
    pub value: Bytes,
}

#[cfg(test)]
impl Entry {
    /// A cell.
    pub fn put(row: Bytes, qualifier: Bytes, timestamp: i64, seq: u64, value: Bytes) -> Entry {
        let key = InternalKey { row, qualifier, timestamp, seq, kind: EntryKind::Put };
        Entry { key, value }
    }

    /// A column tombstone over the timestamps `[start, end)` (`end` `None`:
    /// no end).
    pub fn delete_column(row: Bytes, qualifier: Bytes, (start, end): (i64, Option<i64>), seq: u64) -> Entry {
        let value = encode_range_end(end);
        let key = InternalKey { row, qualifier, timestamp: start, seq, kind: EntryKind::DeleteColumn };
        Entry { key, value: value.into() }
    }

    /// A family tombstone.
    pub fn delete_family(row: Bytes, seq: u64) -> Entry {
        let key = InternalKey { row, qualifier: Bytes::new(), timestamp: 0, seq, kind: EntryKind::DeleteFamily };
        Entry { key, value: Bytes::new() }
    }
}

impl Entry {
    /// The entry as borrowed parts.
    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            row: &self.key.row,
            qualifier: &self.key.qualifier,
            timestamp: self.key.timestamp,
            seq: self.key.seq,
            kind: self.key.kind,
            value: &self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EntryKind::{DeleteColumn, DeleteFamily, Put};
    use super::*;

    /// An internal key's parts, in the order keys compare.
    type Key<'a> = (&'a [u8], &'a [u8], EntryKind, i64, u64);

    fn put(row: &'static str, q: &'static str, ts: i64, seq: u64) -> InternalKey {
        Entry::put(row.into(), q.into(), ts, seq, Bytes::new()).key
    }

    #[test]
    fn rows_then_tombstones_then_columns_newest_first() {
        let mut keys = [
            put("r", "b", 5, 1),
            put("r", "a", 5, 1),
            put("r", "a", 9, 1),
            put("r", "a", 9, 3),
            Entry::delete_column("r".into(), "a".into(), (0, None), 2).key,
            Entry::delete_family("r".into(), 1).key,
            put("q", "z", 1, 1),
            put("r\0", "", 1, 1),
        ];
        keys.sort();
        let order: Vec<Key<'_>> =
            keys.iter().map(|k| (&k.row[..], &k.qualifier[..], k.kind, k.timestamp, k.seq)).collect();
        assert_eq!(
            order,
            vec![
                (&b"q"[..], &b"z"[..], Put, 1, 1),
                (b"r", b"", DeleteFamily, 0, 1),
                (b"r", b"a", DeleteColumn, 0, 2),
                (b"r", b"a", Put, 9, 3),
                (b"r", b"a", Put, 9, 1),
                (b"r", b"a", Put, 5, 1),
                (b"r", b"b", Put, 5, 1),
                (b"r\0", b"", Put, 1, 1),
            ]
        );
    }

    #[test]
    fn first_of_row_precedes_the_whole_row() {
        let first = InternalKey::first_of_row("r".into());
        assert!(first < Entry::delete_family("r".into(), u64::MAX - 1).key);
        assert!(first > put("q\u{ff}", "", 0, 0));
        let empty_family_tomb = Entry::delete_family("r".into(), 1).key;
        assert!(first < empty_family_tomb);
    }

    #[test]
    fn column_tombstones_round_trip_their_range() {
        let e = Entry::delete_column("r".into(), "q".into(), (1000, Some(5000)), 1);
        assert_eq!(e.as_ref().deleted_span(), Some((1000, Some(5000))));
        let e = Entry::delete_column("r".into(), "q".into(), (7000, None), 1);
        assert_eq!(e.as_ref().deleted_span(), Some((7000, None)));
        assert!(is_range_end(&[]) && is_range_end(&[0x02]));
        assert!(!is_range_end(&[0x80]) && !is_range_end(&[0x02, 0x02]), "cut short, or bytes after the varint");
    }
}
