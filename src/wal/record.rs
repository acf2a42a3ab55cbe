//! Encoding of one log record and its payload.

use bytes::Bytes;

use super::RECORD_HEADER_LEN;
use crate::coding::{Cursor, DecodeError, crc32, put_bytes, put_varint, put_zigzag};
use crate::key::{Entry, EntryKind, InternalKey};

/// An entry of a row mutation, with the column family store it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Store (one column family of one table) the entry is written to.
    pub store: u32,
    /// The entry; its sequence number is absolute.
    pub entry: Entry,
}

/// Appends one record holding a row mutation's entries, which must all name
/// the same row and carry sequence numbers `first_seq..`.
pub fn encode_record(buf: &mut Vec<u8>, row: &[u8], first_seq: u64, entries: &[LogEntry]) {
    let start = buf.len();
    buf.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    buf.extend_from_slice(&first_seq.to_le_bytes());
    put_bytes(buf, row);
    put_varint(buf, entries.len() as u64);
    for LogEntry { store, entry } in entries {
        buf.push(entry.key.kind as u8);
        put_varint(buf, u64::from(*store));
        put_varint(buf, entry.key.seq - first_seq);
        put_bytes(buf, &entry.key.qualifier);
        put_zigzag(buf, entry.key.timestamp);
        put_bytes(buf, &entry.value);
    }
    let payload_len = buf.len() - start - RECORD_HEADER_LEN;
    let payload_crc = crc32(&[&buf[start + RECORD_HEADER_LEN..]]);
    let len = u32::try_from(payload_len).unwrap_or(u32::MAX);
    buf[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    buf[start + 8..start + 12].copy_from_slice(&payload_crc.to_le_bytes());
    let header_crc = crc32(&[&buf[start + 4..start + 12]]);
    buf[start..start + 4].copy_from_slice(&header_crc.to_le_bytes());
}

/// Decodes a record's payload (already checksummed) into its entries.
pub fn decode_payload(payload: &[u8]) -> Result<Vec<LogEntry>, DecodeError> {
    let mut c = Cursor::new(payload);
    let first_seq = c.u64_le("first sequence")?;
    let row = Bytes::copy_from_slice(c.length_prefixed("row key")?);
    let count = c.len(c.remaining(), "entry count")?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = EntryKind::from_tag(c.u8("entry kind")?).ok_or(c.error("entry kind"))?;
        let store = u32::try_from(c.varint("store")?).map_err(|_| c.error("store"))?;
        let seq = first_seq.checked_add(c.varint("sequence offset")?).ok_or(c.error("sequence offset"))?;
        let qualifier = Bytes::copy_from_slice(c.length_prefixed("qualifier")?);
        let timestamp = c.zigzag("timestamp")?;
        let value = Bytes::copy_from_slice(c.length_prefixed("value")?);
        let key = InternalKey { row: row.clone(), qualifier, timestamp, seq, kind };
        entries.push(LogEntry { store, entry: Entry { key, value } });
    }
    if !c.is_empty() {
        return Err(c.error("end of record"));
    }
    Ok(entries)
}
