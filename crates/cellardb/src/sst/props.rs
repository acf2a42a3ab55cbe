//! The properties block: what an SSTable holds, readable without its data.
//!
//! Each property is `[tag varint][length varint][bytes]`; readers skip tags
//! they do not know, so properties can be added without a version change.
//! Tags are written to disk: never renumber.

use bytes::Bytes;

use crate::coding::{Cursor, DecodeError, put_bytes, put_varint, put_zigzag, unzigzag};

/// What an SSTable holds. A file holds one column family of one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Properties {
    /// Column family name (as it was when the file was written).
    pub family: String,
    /// Store id: the family's identity, never reused.
    pub store: u32,
    /// Cells (puts).
    pub cells: u64,
    /// Tombstones (column and family deletes).
    pub tombstones: u64,
    /// Distinct rows.
    pub rows: u64,
    /// Sum over entries of row key + family + qualifier + value + 8.
    pub logical_bytes: u64,
    /// Data blocks before compression.
    pub raw_data_bytes: u64,
    /// Data blocks as stored, trailers included.
    pub stored_data_bytes: u64,
    /// Number of data blocks.
    pub data_blocks: u64,
    /// Smallest row key.
    pub first_row: Bytes,
    /// Largest row key.
    pub last_row: Bytes,
    /// Smallest timestamp of a cell (`i64::MAX` if none).
    pub min_timestamp: i64,
    /// Largest timestamp of a cell (`i64::MIN` if none).
    pub max_timestamp: i64,
    /// Smallest sequence number.
    pub min_seq: u64,
    /// Largest sequence number.
    pub max_seq: u64,
    /// When the file was written, µs since the epoch.
    pub created_micros: i64,
}

/// Property tags. Written to disk: never renumber.
mod tag {
    pub const FAMILY: u64 = 1;
    pub const STORE: u64 = 2;
    pub const CELLS: u64 = 3;
    pub const TOMBSTONES: u64 = 4;
    pub const ROWS: u64 = 5;
    pub const LOGICAL_BYTES: u64 = 6;
    pub const RAW_DATA_BYTES: u64 = 7;
    pub const STORED_DATA_BYTES: u64 = 8;
    pub const DATA_BLOCKS: u64 = 9;
    pub const FIRST_ROW: u64 = 10;
    pub const LAST_ROW: u64 = 11;
    pub const MIN_TIMESTAMP: u64 = 12;
    pub const MAX_TIMESTAMP: u64 = 13;
    pub const MIN_SEQ: u64 = 14;
    pub const MAX_SEQ: u64 = 15;
    pub const CREATED_MICROS: u64 = 16;
}

impl Properties {
    /// Encodes every property.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |tag: u64, value: &[u8]| {
            put_varint(&mut out, tag);
            put_bytes(&mut out, value);
        };
        let uint = |v: u64| {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            b
        };
        let int = |v: i64| {
            let mut b = Vec::new();
            put_zigzag(&mut b, v);
            b
        };
        field(tag::FAMILY, self.family.as_bytes());
        field(tag::STORE, &uint(u64::from(self.store)));
        field(tag::CELLS, &uint(self.cells));
        field(tag::TOMBSTONES, &uint(self.tombstones));
        field(tag::ROWS, &uint(self.rows));
        field(tag::LOGICAL_BYTES, &uint(self.logical_bytes));
        field(tag::RAW_DATA_BYTES, &uint(self.raw_data_bytes));
        field(tag::STORED_DATA_BYTES, &uint(self.stored_data_bytes));
        field(tag::DATA_BLOCKS, &uint(self.data_blocks));
        field(tag::FIRST_ROW, &self.first_row);
        field(tag::LAST_ROW, &self.last_row);
        field(tag::MIN_TIMESTAMP, &int(self.min_timestamp));
        field(tag::MAX_TIMESTAMP, &int(self.max_timestamp));
        field(tag::MIN_SEQ, &uint(self.min_seq));
        field(tag::MAX_SEQ, &uint(self.max_seq));
        field(tag::CREATED_MICROS, &int(self.created_micros));
        out
    }

    /// Decodes a properties block; unknown tags are skipped.
    pub(crate) fn decode(raw: &[u8]) -> Result<Properties, DecodeError> {
        let mut p = Properties::default();
        let mut c = Cursor::new(raw);
        while !c.is_empty() {
            let t = c.varint("property tag")?;
            let at = c.position();
            let value = c.length_prefixed("property value")?;
            let mut v = Cursor::new(value);
            let err = |what: &'static str| DecodeError::new(at as u64, what);
            let uint = |v: &mut Cursor<'_>| v.varint("property").map_err(|_| err("integer property"));
            match t {
                tag::FAMILY => p.family = String::from_utf8(value.to_vec()).map_err(|_| err("family name"))?,
                tag::STORE => p.store = u32::try_from(uint(&mut v)?).map_err(|_| err("store id"))?,
                tag::CELLS => p.cells = uint(&mut v)?,
                tag::TOMBSTONES => p.tombstones = uint(&mut v)?,
                tag::ROWS => p.rows = uint(&mut v)?,
                tag::LOGICAL_BYTES => p.logical_bytes = uint(&mut v)?,
                tag::RAW_DATA_BYTES => p.raw_data_bytes = uint(&mut v)?,
                tag::STORED_DATA_BYTES => p.stored_data_bytes = uint(&mut v)?,
                tag::DATA_BLOCKS => p.data_blocks = uint(&mut v)?,
                tag::FIRST_ROW => p.first_row = Bytes::copy_from_slice(value),
                tag::LAST_ROW => p.last_row = Bytes::copy_from_slice(value),
                tag::MIN_TIMESTAMP => p.min_timestamp = unzigzag(uint(&mut v)?),
                tag::MAX_TIMESTAMP => p.max_timestamp = unzigzag(uint(&mut v)?),
                tag::MIN_SEQ => p.min_seq = uint(&mut v)?,
                tag::MAX_SEQ => p.max_seq = uint(&mut v)?,
                tag::CREATED_MICROS => p.created_micros = unzigzag(uint(&mut v)?),
                _ => {}
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip() {
        let p = Properties {
            family: "measurements".into(),
            store: 7,
            cells: 57_600,
            tombstones: 2,
            rows: 40,
            logical_bytes: 2_000_000,
            raw_data_bytes: 500_000,
            stored_data_bytes: 90_000,
            data_blocks: 31,
            first_row: "asia-south2#1001#week09".into(),
            last_row: "us-west2#1000#week09".into(),
            min_timestamp: 1_614_556_800_000_000,
            max_timestamp: 1_614_643_140_000_000,
            min_seq: 1,
            max_seq: 14_400,
            created_micros: 1_700_000_000_000_000,
        };
        assert_eq!(Properties::decode(&p.encode()).unwrap(), p);
    }
}
