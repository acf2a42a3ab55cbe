//! The last key an SSTable's writer added, or its check read, in buffers
//! reused from entry to entry: the writer holds each entry's order against
//! it, and [`SstReader::check`](super::SstReader::check) each stored
//! entry's. Its own file so that the reader and the writer share it
//! without either importing the other.

use bytes::Bytes;

use crate::key::{EntryKind, EntryRef, InternalKey, compare_parts};

/// An entry's key as the parts [`compare_parts`] takes.
pub(super) fn parts<'a>(e: &EntryRef<'a>) -> (&'a [u8], &'a [u8], i64, u64, EntryKind) {
    (e.row, e.qualifier, e.timestamp, e.seq, e.kind)
}

/// The last key added (or read: [`SstReader::check`]), in buffers reused
/// from entry to entry.
///
/// [`SstReader::check`]: super::SstReader::check
#[derive(Debug)]
pub(crate) struct LastKey {
    pub(super) present: bool,
    pub(super) row: Vec<u8>,
    pub(super) qualifier: Vec<u8>,
    timestamp: i64,
    seq: u64,
    kind: EntryKind,
}

impl Default for LastKey {
    fn default() -> Self {
        LastKey { present: false, row: Vec::new(), qualifier: Vec::new(), timestamp: 0, seq: 0, kind: EntryKind::Put }
    }
}

impl LastKey {
    /// Whether a key was set.
    pub(crate) fn is_set(&self) -> bool {
        self.present
    }

    /// The key of `e`, from now on.
    pub(crate) fn set(&mut self, e: &EntryRef<'_>) {
        self.present = true;
        if self.row != e.row {
            self.row.clear();
            self.row.extend_from_slice(e.row);
        }
        if self.qualifier != e.qualifier {
            self.qualifier.clear();
            self.qualifier.extend_from_slice(e.qualifier);
        }
        (self.timestamp, self.seq, self.kind) = (e.timestamp, e.seq, e.kind);
    }

    /// `key`, from now on.
    pub(crate) fn set_key(&mut self, key: &InternalKey) {
        let (row, qualifier) = (&key.row[..], &key.qualifier[..]);
        self.set(&EntryRef { row, qualifier, timestamp: key.timestamp, seq: key.seq, kind: key.kind, value: &[] });
    }

    /// The key against `e`'s (the key must be set).
    pub(crate) fn cmp_entry(&self, e: &EntryRef<'_>) -> std::cmp::Ordering {
        compare_parts(self.parts(), parts(e))
    }

    pub(super) fn parts(&self) -> (&[u8], &[u8], i64, u64, EntryKind) {
        (&self.row, &self.qualifier, self.timestamp, self.seq, self.kind)
    }

    pub(super) fn to_key(&self) -> InternalKey {
        InternalKey {
            row: Bytes::copy_from_slice(&self.row),
            qualifier: Bytes::copy_from_slice(&self.qualifier),
            timestamp: self.timestamp,
            seq: self.seq,
            kind: self.kind,
        }
    }
}
