//! The index block: for each data block, its last key and where it is.

use bytes::Bytes;

use super::format::{BlockHandle, MAX_RAW_BLOCK};
use crate::coding::{Cursor, DecodeError, put_bytes, put_varint, put_zigzag};
use crate::key::{EntryKind, InternalKey, MAX_ROW_KEY};

/// One data block as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexEntry {
    /// The block's last key: every key in the block is at most this, every
    /// key of the next block is greater.
    pub last_key: InternalKey,
    /// Where the block is stored.
    pub handle: BlockHandle,
    /// Entries in the block.
    pub entries: u32,
}

/// Encodes the index: a count, then per block its last key (row key
/// prefix-shared with the previous block's), handle and entry count.
pub fn encode(index: &[IndexEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, index.len() as u64);
    let mut prev: &[u8] = &[];
    for e in index {
        let row: &[u8] = &e.last_key.row;
        let shared = prev.iter().zip(row).take_while(|(a, b)| a == b).count();
        put_varint(&mut out, shared as u64);
        put_bytes(&mut out, &row[shared..]);
        put_bytes(&mut out, &e.last_key.qualifier);
        out.push(e.last_key.kind as u8);
        put_zigzag(&mut out, e.last_key.timestamp);
        put_varint(&mut out, e.last_key.seq);
        put_varint(&mut out, e.handle.offset);
        put_varint(&mut out, u64::from(e.handle.stored_len));
        put_varint(&mut out, u64::from(e.handle.raw_len));
        put_varint(&mut out, u64::from(e.entries));
        prev = row;
    }
    out
}

/// Decodes an index block.
///
/// # Errors
/// A [`DecodeError`] at the offset in `raw` of the first byte that does
/// not decode.
pub fn decode(raw: &[u8]) -> Result<Vec<IndexEntry>, DecodeError> {
    let mut c = Cursor::new(raw);
    let n = c.len(raw.len(), "index entry count")?;
    // An entry takes at least 9 bytes.
    let mut index: Vec<IndexEntry> = Vec::with_capacity(n.min(raw.len() / 9));
    for _ in 0..n {
        let prev: &[u8] = index.last().map_or(&[], |e| &e.last_key.row);
        let shared = c.len(prev.len(), "index row shared prefix")?;
        let suffix = c.length_prefixed("index row suffix")?;
        if shared + suffix.len() > MAX_ROW_KEY {
            return Err(c.error("index row key longer than the 4 KiB limit"));
        }
        let mut row = Vec::with_capacity(shared + suffix.len());
        row.extend_from_slice(&prev[..shared]);
        row.extend_from_slice(suffix);
        let qualifier = Bytes::copy_from_slice(c.length_prefixed("index qualifier")?);
        let at = c.position();
        let kind = EntryKind::from_tag(c.u8("index entry kind")?).ok_or(c.error_at(at, "index entry kind"))?;
        let timestamp = c.zigzag("index timestamp")?;
        let seq = c.varint("index sequence")?;
        let offset = c.varint("block offset")?;
        let stored_len = c.u32_at_most(u32::MAX, "block stored length")?;
        let raw_len = c.u32_at_most(MAX_RAW_BLOCK, "block raw length")?;
        let entries = c.u32_at_most(u32::MAX, "block entry count")?;
        let last_key = InternalKey { row: row.into(), qualifier, timestamp, seq, kind };
        index.push(IndexEntry { last_key, handle: BlockHandle { offset, stored_len, raw_len }, entries });
    }
    if !c.is_empty() {
        return Err(c.error("end of index"));
    }
    Ok(index)
}

/// The rows of the index's last keys, back to back in one allocation, for
/// the search of a seek: comparing a target's row against them reads
/// contiguous memory, where each entry's own key is an allocation of its
/// own. A search of a large file touches a few hundred bytes of this
/// rather than an entry and its row's heap block per step, which matters
/// most when neither is in the CPU's caches.
#[derive(Debug, Default)]
pub(crate) struct IndexRows {
    bytes: Box<[u8]>,
    /// Where each entry's row ends in `bytes`.
    ends: Box<[u32]>,
}

impl IndexRows {
    /// The rows of `index`'s last keys, in order.
    ///
    /// # Errors
    /// A [`DecodeError`] if they add up to 4 GiB or more.
    pub fn of(index: &[IndexEntry]) -> Result<IndexRows, DecodeError> {
        let mut bytes = Vec::with_capacity(index.iter().map(|e| e.last_key.row.len()).sum());
        let mut ends = Vec::with_capacity(index.len());
        for e in index {
            bytes.extend_from_slice(&e.last_key.row);
            ends.push(u32::try_from(bytes.len()).map_err(|_| DecodeError::new(0, "index rows of 4 GiB or more"))?);
        }
        Ok(IndexRows { bytes: bytes.into(), ends: ends.into() })
    }

    /// The row of entry `i`'s last key (`i` below the entry count).
    #[inline]
    pub fn row(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }
}
