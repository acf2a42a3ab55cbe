//! Encoding of one log record and its payload.

use std::borrow::Cow;

use super::RECORD_HEADER_LEN;
use crate::coding::{Cursor, DecodeError, crc32, put_bytes, put_varint, put_zigzag};
use crate::key::{EntryKind, EntryRef};

/// A row mutation as the log holds it: the row, the first sequence number,
/// and the entries it writes. Bytes are borrowed from the caller's mutations
/// (when writing) or from the log file (when replaying).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRecord<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Sequence number of the row mutation's first mutation.
    pub first_seq: u64,
    /// The entries, each with its store and absolute sequence number.
    pub entries: Vec<LogEntry<'a>>,
}

/// One entry of a row mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry<'a> {
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

impl LogEntry<'_> {
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

/// Whether `value` is a column tombstone's encoded range end: empty, or
/// exactly one zigzag varint.
pub fn is_range_end(value: &[u8]) -> bool {
    let mut c = Cursor::new(value);
    value.is_empty() || (c.zigzag("range end").is_ok() && c.is_empty())
}

/// Appends `record` as one framed log record.
pub fn encode_record(buf: &mut Vec<u8>, record: &RowRecord<'_>) {
    let start = buf.len();
    buf.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    buf.extend_from_slice(&record.first_seq.to_le_bytes());
    put_bytes(buf, record.row);
    put_varint(buf, record.entries.len() as u64);
    for e in &record.entries {
        buf.push(e.kind as u8);
        put_varint(buf, u64::from(e.store));
        put_varint(buf, e.seq - record.first_seq);
        put_bytes(buf, e.qualifier);
        put_zigzag(buf, e.timestamp);
        put_bytes(buf, &e.value);
    }
    let payload_len = buf.len() - start - RECORD_HEADER_LEN;
    let payload_crc = crc32(&[&buf[start + RECORD_HEADER_LEN..]]);
    let len = u32::try_from(payload_len).unwrap_or(u32::MAX);
    buf[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    buf[start + 8..start + 12].copy_from_slice(&payload_crc.to_le_bytes());
    let header_crc = crc32(&[&buf[start + 4..start + 12]]);
    buf[start..start + 4].copy_from_slice(&header_crc.to_le_bytes());
}

/// Decodes a record's payload (already checksummed), borrowing from it.
pub fn decode_payload(payload: &[u8]) -> Result<RowRecord<'_>, DecodeError> {
    let mut c = Cursor::new(payload);
    let first_seq = c.u64_le("first sequence")?;
    let row = c.length_prefixed("row key")?;
    let count = c.len(c.remaining(), "entry count")?;
    // An entry takes at least 6 bytes.
    let mut entries = Vec::with_capacity(count.min(c.remaining() / 6));
    for _ in 0..count {
        let kind = EntryKind::from_tag(c.u8("entry kind")?).ok_or(c.error("entry kind"))?;
        let store = u32::try_from(c.varint("store")?).map_err(|_| c.error("store"))?;
        let seq = first_seq.checked_add(c.varint("sequence offset")?).ok_or(c.error("sequence offset"))?;
        let qualifier = c.length_prefixed("qualifier")?;
        let timestamp = c.zigzag("timestamp")?;
        let value = c.length_prefixed("value")?;
        if kind == EntryKind::DeleteColumn && !is_range_end(value) {
            return Err(c.error("column tombstone's range end"));
        }
        let value = Cow::Borrowed(value);
        entries.push(LogEntry { store, kind, seq, qualifier, timestamp, value });
    }
    if !c.is_empty() {
        return Err(c.error("end of record"));
    }
    Ok(RowRecord { row, first_seq, entries })
}
