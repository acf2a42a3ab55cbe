//! An entry of a file as `inspect` hands it out: owned, and apart from the
//! engine's own key types, so that the engine may change those without
//! changing what tools see.

use crate::key::{self, EntryRef, InternalKey};

/// What an entry is.
///
/// New kinds may be added with a later format version: match with a
/// wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A cell.
    Put,
    /// A cell that its family's version limit has counted out, kept because
    /// the rest of its GC rule keeps it; written only by compaction.
    PutCountedOut,
    /// Deletes the column's cells from the entry's timestamp to
    /// [`Entry::deleted_until`].
    DeleteColumn,
    /// Deletes every older cell of the row in the file's family.
    DeleteFamily,
}

impl EntryKind {
    /// The kind's name, as `cellar dump --json` gives it: `put`,
    /// `put_counted_out`, `delete_column`, `delete_family`.
    pub fn name(self) -> &'static str {
        engine_kind(self).name()
    }

    /// Whether the entry is a cell (a put, counted out or not).
    pub fn is_cell(self) -> bool {
        matches!(self, EntryKind::Put | EntryKind::PutCountedOut)
    }
}

fn kind_of(kind: key::EntryKind) -> EntryKind {
    match kind {
        key::EntryKind::Put => EntryKind::Put,
        key::EntryKind::PutCountedOut => EntryKind::PutCountedOut,
        key::EntryKind::DeleteColumn => EntryKind::DeleteColumn,
        key::EntryKind::DeleteFamily => EntryKind::DeleteFamily,
    }
}

fn engine_kind(kind: EntryKind) -> key::EntryKind {
    match kind {
        EntryKind::Put => key::EntryKind::Put,
        EntryKind::PutCountedOut => key::EntryKind::PutCountedOut,
        EntryKind::DeleteColumn => key::EntryKind::DeleteColumn,
        EntryKind::DeleteFamily => key::EntryKind::DeleteFamily,
    }
}

/// The ordered part of an entry: entries sort by row, qualifier, newest
/// timestamp first, newest sequence number first, then kind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryKey {
    /// Row key.
    pub row: Vec<u8>,
    /// Column qualifier (empty for a family tombstone).
    pub qualifier: Vec<u8>,
    /// The cell's timestamp in µs, or where a column tombstone's range
    /// starts.
    pub timestamp: i64,
    /// The sequence number of the mutation that wrote the entry.
    pub seq: u64,
    /// What the entry is.
    pub kind: EntryKind,
}

impl EntryKey {
    pub(super) fn of(key: &InternalKey) -> EntryKey {
        EntryKey::copied(&key.row, &key.qualifier, key.timestamp, key.seq, key.kind)
    }

    fn copied(row: &[u8], qualifier: &[u8], timestamp: i64, seq: u64, kind: key::EntryKind) -> EntryKey {
        EntryKey { row: row.to_vec(), qualifier: qualifier.to_vec(), timestamp, seq, kind: kind_of(kind) }
    }
}

/// One entry of an SSTable or a log: a cell or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// Where it sorts, and what it is.
    pub key: EntryKey,
    /// A cell's value; a column tombstone's range end as stored (see
    /// [`Entry::deleted_until`]); empty for a family tombstone.
    pub value: Vec<u8>,
}

impl Entry {
    pub(super) fn of(e: &EntryRef<'_>) -> Entry {
        let key = EntryKey::copied(e.row, e.qualifier, e.timestamp, e.seq, e.kind);
        Entry { key, value: e.value.to_vec() }
    }

    /// For a column tombstone, the end of the time range it deletes
    /// (excluded): `Some(None)` when the range has no end, `None` when the
    /// entry is not a column tombstone or its stored end does not decode.
    pub fn deleted_until(&self) -> Option<Option<i64>> {
        if self.key.kind != EntryKind::DeleteColumn {
            return None;
        }
        key::decode_range_end(&self.value).ok()
    }
}
