//! The write batch: one row mutation resolved into the entries it writes.
//!
//! This is the currency of the write path, as LevelDB's `WriteBatch` is:
//! [`resolve`] turns a row's mutations into a [`RowBatch`] once, against the
//! table's schema; the log writes its encoding as one record's payload
//! ([`RowBatch::encode`]) and replay decodes it back ([`RowBatch::decode`]);
//! the memtable applies it. Neither the log nor the memtable defines it.
//!
//! Bigtable's rules for a mutation live here:
//! - each mutation of a row mutation gets its own sequence number, in
//!   order, so a delete and a later set in the same row mutation apply in
//!   order (an entry deletes only entries with smaller sequence numbers);
//! - `SetCell` writes a cell, replacing one at the same column and
//!   timestamp; `Timestamp::SERVER` becomes the write's time;
//! - `DeleteFromColumn` is a column tombstone over `[start, end)`;
//! - `DeleteFromFamily` is a family tombstone; `DeleteFromRow` one per family;
//! - in an aggregate family every cell entry is an input: `AddToCell` and
//!   `SetCell` (of 8 bytes) both write one, and reads merge them.
//!
//! The encoding is specified in `docs/format/wal.md` (the record payload).

use std::borrow::Cow;

use crate::coding::{Cursor, DecodeError, put_bytes, put_varint, put_zigzag};
use crate::key::{EntryKind, EntryRef, encode_range_end, is_range_end};
use crate::model::aggregate::validate_aggregate_value;
use crate::model::{Mutation, TableMeta, Timestamp};
use crate::{Error, Result};

/// A row mutation resolved into entries. Bytes are borrowed from the
/// mutations (when writing) or from the log (when replaying).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RowBatch<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Sequence number of the row mutation's first mutation.
    pub first_seq: u64,
    /// The entries, each with its store and absolute sequence number.
    pub entries: Vec<BatchEntry<'a>>,
}

/// One entry of a row batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchEntry<'a> {
    /// Store (one column family of one table) the entry is written to.
    pub store: u32,
    /// What the entry is.
    pub kind: EntryKind,
    /// Absolute sequence number.
    pub seq: u64,
    /// Column qualifier.
    pub qualifier: &'a [u8],
    /// Timestamp, or a column tombstone's range start.
    pub timestamp: i64,
    /// Value, or a column tombstone's encoded range end.
    pub value: Cow<'a, [u8]>,
}

impl BatchEntry<'_> {
    /// The entry with its row, as the memtable and SSTables order it.
    pub fn entry_ref<'b>(&'b self, row: &'b [u8]) -> EntryRef<'b> {
        EntryRef {
            row,
            qualifier: self.qualifier,
            timestamp: self.timestamp,
            seq: self.seq,
            kind: self.kind,
            value: &self.value,
        }
    }
}

impl RowBatch<'_> {
    /// Gives the batch its place in history: its first mutation takes
    /// sequence number `first_seq`, the others follow in order.
    pub(crate) fn renumber(&mut self, first_seq: u64) {
        for e in &mut self.entries {
            e.seq = e.seq - self.first_seq + first_seq;
        }
        self.first_seq = first_seq;
    }

    /// Sequence numbers the batch takes: one per mutation it came from.
    pub(crate) fn seq_count(&self) -> u64 {
        self.entries.iter().map(|e| e.seq - self.first_seq + 1).max().unwrap_or(0)
    }

    /// Appends the batch's encoding (a log record's payload).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_seq.to_le_bytes());
        put_bytes(out, self.row);
        put_varint(out, self.entries.len() as u64);
        for e in &self.entries {
            out.push(e.kind as u8);
            put_varint(out, u64::from(e.store));
            put_varint(out, e.seq - self.first_seq);
            put_bytes(out, e.qualifier);
            put_zigzag(out, e.timestamp);
            put_bytes(out, &e.value);
        }
    }

    /// Decodes an encoded batch, borrowing from it.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset (in `payload`) of the first byte
    /// that does not decode.
    pub(crate) fn decode(payload: &[u8]) -> Result<RowBatch<'_>, DecodeError> {
        let mut c = Cursor::new(payload);
        let first_seq = c.u64_le("first sequence")?;
        let row = c.length_prefixed("row key")?;
        let count = c.len(c.remaining(), "entry count")?;
        // An entry takes at least 6 bytes.
        let mut entries = Vec::with_capacity(count.min(c.remaining() / 6));
        for _ in 0..count {
            let at = c.position();
            // A log holds what writes resolve to; compaction alone writes
            // counted-out cells, and only to SSTables.
            let kind = EntryKind::from_tag(c.u8("entry kind")?)
                .filter(|k| *k != EntryKind::PutCountedOut)
                .ok_or(c.error_at(at, "entry kind"))?;
            let at = c.position();
            let store = u32::try_from(c.varint("store")?).map_err(|_| c.error_at(at, "store"))?;
            let at = c.position();
            let seq = first_seq.checked_add(c.varint("sequence offset")?).ok_or(c.error_at(at, "sequence offset"))?;
            let qualifier = c.length_prefixed("qualifier")?;
            let timestamp = c.zigzag("timestamp")?;
            let at = c.position();
            let value = c.length_prefixed("value")?;
            if kind == EntryKind::DeleteColumn && !is_range_end(value) {
                return Err(c.error_at(at, "column tombstone's range end"));
            }
            entries.push(BatchEntry { store, kind, seq, qualifier, timestamp, value: Cow::Borrowed(value) });
        }
        if !c.is_empty() {
            return Err(c.error("end of record"));
        }
        Ok(RowBatch { row, first_seq, entries })
    }
}

/// Resolves row `row`'s `mutations` against `table`'s families into a
/// batch whose first sequence number is 0 (see [`RowBatch::renumber`]):
/// one sequence number per mutation, bytes borrowed from the mutations,
/// `Timestamp::SERVER` taken as `now`.
///
/// # Errors
/// `Error::NotFound` for an undeclared family; `Error::InvalidArgument`
/// for a timestamp the table's granularity does not allow, a value of
/// another size than 8 bytes in an aggregate family, or `add_to_cell` on
/// a plain family. Sizes and counts are checked before (`validate_row_mutation`).
pub fn resolve<'a>(
    table: &TableMeta,
    row: &'a [u8],
    mutations: &'a [Mutation],
    now: Timestamp,
) -> Result<RowBatch<'a>> {
    let family = |name: &str| table.family(name).ok_or_else(|| Error::family_not_found(&table.name, name));
    let mut entries = Vec::with_capacity(mutations.len());
    for (seq, m) in (0..).zip(mutations) {
        match m {
            Mutation::SetCell { family: name, qualifier, timestamp, value } => {
                let f = family(name)?;
                if f.aggregate.is_some() {
                    validate_aggregate_value(name, value)?;
                }
                entries.push(put(f.store, seq, qualifier, timestamp.resolve(now)?, Cow::Borrowed(value)));
            }
            Mutation::AddToCell { family: name, qualifier, timestamp, input } => {
                let f = family(name)?;
                if f.aggregate.is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "add_to_cell on column family {name:?}, which is not an aggregate family"
                    )));
                }
                // In an aggregate family's store every cell entry is an input.
                let input = Cow::Owned(input.to_be_bytes().to_vec());
                entries.push(put(f.store, seq, qualifier, timestamp.resolve(now)?, input));
            }
            Mutation::DeleteFromColumn { family: name, qualifier, range } => {
                let (start, end) = range.span();
                entries.push(BatchEntry {
                    store: family(name)?.store,
                    kind: EntryKind::DeleteColumn,
                    seq,
                    qualifier,
                    timestamp: start,
                    value: Cow::Owned(encode_range_end(end)),
                });
            }
            Mutation::DeleteFromFamily { family: name } => entries.push(family_tombstone(family(name)?.store, seq)),
            Mutation::DeleteFromRow => entries.extend(table.families.iter().map(|f| family_tombstone(f.store, seq))),
        }
    }
    Ok(RowBatch { row, first_seq: 0, entries })
}

fn put<'a>(store: u32, seq: u64, qualifier: &'a [u8], timestamp: i64, value: Cow<'a, [u8]>) -> BatchEntry<'a> {
    BatchEntry { store, kind: EntryKind::Put, seq, qualifier, timestamp, value }
}

fn family_tombstone<'a>(store: u32, seq: u64) -> BatchEntry<'a> {
    BatchEntry { store, kind: EntryKind::DeleteFamily, seq, qualifier: &[], timestamp: 0, value: Cow::Borrowed(&[]) }
}

#[cfg(test)]
mod tests {
    use super::EntryKind::{DeleteColumn, DeleteFamily, Put};
    use super::*;
    use crate::model::{Aggregate, FamilyMeta, GcRule, TimeRange};

    fn table() -> TableMeta {
        let family =
            |name: &str, store, aggregate| FamilyMeta { name: name.into(), store, gc_rule: GcRule::None, aggregate };
        TableMeta {
            id: 1,
            name: "t".into(),
            families: vec![family("a", 3, None), family("n", 4, Some(Aggregate::Sum))],
        }
    }

    #[test]
    fn each_mutation_takes_a_sequence_number_in_order() {
        let mutations = [
            Mutation::set_cell("a", "q", 5000, "v"),
            Mutation::delete_from_column("a", "q", TimeRange::new(1000, 2000)),
            Mutation::delete_from_row(),
            Mutation::add_to_cell("n", "c", 1000, 7),
        ];
        let now = Timestamp::from_millis(9);
        let mut batch = resolve(&table(), b"r", &mutations, now).unwrap();
        batch.renumber(100);
        let got: Vec<(u32, EntryKind, u64)> = batch.entries.iter().map(|e| (e.store, e.kind, e.seq)).collect();
        assert_eq!(
            got,
            [(3, Put, 100), (3, DeleteColumn, 101), (3, DeleteFamily, 102), (4, DeleteFamily, 102), (4, Put, 103)]
        );
        assert_eq!(batch.seq_count(), 4);
        assert_eq!(batch.entries[1].entry_ref(b"r").deleted_span(), Some((1000, Some(2000))));
        assert_eq!(&batch.entries[4].value[..], &7i64.to_be_bytes());
    }

    #[test]
    fn a_batch_round_trips_through_its_encoding() {
        let mutations = [Mutation::set_cell("a", "", Timestamp::SERVER, "x"), Mutation::delete_from_family("n")];
        let mut batch = resolve(&table(), b"row", &mutations, Timestamp::from_millis(3)).unwrap();
        batch.renumber(1 << 40);
        let mut buf = Vec::new();
        batch.encode(&mut buf);
        assert_eq!(RowBatch::decode(&buf).unwrap(), batch);
        assert_eq!(batch.entries[0].timestamp, 3000, "the server's time");
        for cut in 0..buf.len() {
            assert!(RowBatch::decode(&buf[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// Only compaction writes counted-out cells, and only to SSTables: a
    /// log record holding one is damaged.
    #[test]
    fn a_counted_out_cell_in_a_log_record_is_refused_where_it_stands() {
        let mutations = [Mutation::set_cell("a", "q", 1000, "x")];
        let mut buf = Vec::new();
        resolve(&table(), b"row", &mutations, Timestamp::from_millis(3)).unwrap().encode(&mut buf);
        let kind_at = 8 + 1 + 3 + 1; // first sequence, row length, "row", entry count
        assert_eq!(buf[kind_at], EntryKind::Put as u8);
        buf[kind_at] = EntryKind::PutCountedOut as u8;
        let err = RowBatch::decode(&buf).unwrap_err();
        assert_eq!((err.offset, &*err.what), (kind_at as u64, "entry kind"));
    }

    #[test]
    fn undeclared_families_and_misfit_writes_are_refused() {
        let t = table();
        let refused = |m: Mutation| resolve(&t, b"r", std::slice::from_ref(&m), Timestamp::from_millis(1)).unwrap_err();
        assert!(matches!(refused(Mutation::set_cell("zz", "q", 0, "v")), Error::NotFound { .. }));
        assert!(matches!(refused(Mutation::set_cell("a", "q", 1500, "v")), Error::InvalidArgument(_)));
        assert!(matches!(refused(Mutation::set_cell("n", "q", 0, "short")), Error::InvalidArgument(_)));
        assert!(matches!(refused(Mutation::add_to_cell("a", "q", 0, 1)), Error::InvalidArgument(_)));
    }

    /// The worked example of `docs/format/wal.md`: the payload of its record.
    #[test]
    fn worked_example_of_the_format_doc() {
        let entry = BatchEntry {
            store: 1,
            kind: EntryKind::Put,
            seq: 7,
            qualifier: b"q",
            timestamp: 1000,
            value: Cow::Borrowed(b"v"),
        };
        let mut buf = Vec::new();
        RowBatch { row: b"r", first_seq: 7, entries: vec![entry] }.encode(&mut buf);
        let expected = [
            0x07, 0, 0, 0, 0, 0, 0, 0, 0x01, b'r', 0x01, // first sequence, row, 1 entry
            0x00, 0x01, 0x00, 0x01, b'q', 0xd0, 0x0f, 0x01, b'v', // put, store 1, +0, "q", 1000, "v"
        ];
        assert_eq!(buf, expected);
    }
}
