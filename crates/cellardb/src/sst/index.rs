//! The index block: for each data block, its last key, its first row and
//! where it is.

use bytes::Bytes;

use super::format::{BlockHandle, MAX_RAW_BLOCK};
use crate::coding::{Cursor, DecodeError, put_bytes, put_varint, put_zigzag};
use crate::key::{EntryKind, InternalKey, MAX_ROW_KEY};

/// The byte after an index's leading zero that says its entries carry
/// their block's first row. An index without it (written before first
/// rows were) starts with its entry count.
const WITH_FIRST_ROWS: u8 = 1;

/// One data block as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexEntry {
    /// The block's last key: every key in the block is at most this, every
    /// key of the next block is greater.
    pub last_key: InternalKey,
    /// The row of the block's first entry; `None` in an index written
    /// before first rows were. A reader that seeks to a key past a row's
    /// end, or reads backwards from a bound, learns from it that a block
    /// begins past that bound without loading it.
    pub first_row: Option<Bytes>,
    /// Where the block is stored.
    pub handle: BlockHandle,
    /// Entries in the block.
    pub entries: u32,
}

/// Encodes the index: a zero and the layout byte, a count, then per block
/// its last key (row key prefix-shared with the previous block's), handle,
/// entry count and first row (prefix-shared with the previous block's
/// last row). An index whose entries lack first rows is encoded as
/// indexes were before them: the count first.
pub fn encode(index: &[IndexEntry]) -> Vec<u8> {
    let with_first_rows = index.iter().all(|e| e.first_row.is_some());
    let mut out = Vec::new();
    if with_first_rows {
        out.extend_from_slice(&[0, WITH_FIRST_ROWS]);
    }
    put_varint(&mut out, index.len() as u64);
    let mut prev: &[u8] = &[];
    for e in index {
        let row: &[u8] = &e.last_key.row;
        put_shared(&mut out, prev, row);
        put_bytes(&mut out, &e.last_key.qualifier);
        out.push(e.last_key.kind as u8);
        put_zigzag(&mut out, e.last_key.timestamp);
        put_varint(&mut out, e.last_key.seq);
        put_varint(&mut out, e.handle.offset);
        put_varint(&mut out, u64::from(e.handle.stored_len));
        put_varint(&mut out, u64::from(e.handle.raw_len));
        put_varint(&mut out, u64::from(e.entries));
        if let Some(first) = e.first_row.as_deref().filter(|_| with_first_rows) {
            put_shared(&mut out, prev, first);
        }
        prev = row;
    }
    out
}

/// Writes `row` as the length of the prefix it shares with `prev`, then
/// the rest, length-prefixed.
fn put_shared(out: &mut Vec<u8>, prev: &[u8], row: &[u8]) {
    let shared = prev.iter().zip(row).take_while(|(a, b)| a == b).count();
    put_varint(out, shared as u64);
    put_bytes(out, &row[shared..]);
}

/// Decodes an index block, with or without first rows.
///
/// # Errors
/// A [`DecodeError`] at the offset in `raw` of the first byte that does
/// not decode, or of an entry whose first row lies outside its block's
/// bounds (before the previous block's last row or after its own).
pub fn decode(raw: &[u8]) -> Result<Vec<IndexEntry>, DecodeError> {
    let mut c = Cursor::new(raw);
    let with_first_rows = raw.len() > 1 && raw[0] == 0;
    if with_first_rows {
        c.u8("index layout")?;
        let at = c.position();
        if c.u8("index layout")? != WITH_FIRST_ROWS {
            return Err(c.error_at(at, "unknown index layout"));
        }
    }
    let n = c.len(raw.len(), "index entry count")?;
    // An entry takes at least 9 bytes.
    let mut index: Vec<IndexEntry> = Vec::with_capacity(n.min(raw.len() / 9));
    for _ in 0..n {
        let prev = index.last().map(|e| &e.last_key.row);
        let row = shared_row(&mut c, prev, "index row")?;
        let qualifier = Bytes::copy_from_slice(c.length_prefixed("index qualifier")?);
        let at = c.position();
        let kind = EntryKind::from_tag(c.u8("index entry kind")?).ok_or(c.error_at(at, "index entry kind"))?;
        let timestamp = c.zigzag("index timestamp")?;
        let seq = c.varint("index sequence")?;
        let offset = c.varint("block offset")?;
        let stored_len = c.u32_at_most(u32::MAX, "block stored length")?;
        let raw_len = c.u32_at_most(MAX_RAW_BLOCK, "block raw length")?;
        let entries = c.u32_at_most(u32::MAX, "block entry count")?;
        let first_row = if with_first_rows {
            let at = c.position();
            let first = shared_row(&mut c, prev, "index first row")?;
            let first = if first == row { row.clone() } else { first };
            if prev.is_some_and(|p| first < *p) || first > row {
                return Err(c.error_at(at, "index first row outside its block's bounds"));
            }
            Some(first)
        } else {
            None
        };
        let last_key = InternalKey { row, qualifier, timestamp, seq, kind };
        index.push(IndexEntry { last_key, first_row, handle: BlockHandle { offset, stored_len, raw_len }, entries });
    }
    if !c.is_empty() {
        return Err(c.error("end of index"));
    }
    Ok(index)
}

/// Reads a row written by [`put_shared`] against `prev` (the previous
/// entry's last row, if any). A row equal to `prev` shares its bytes.
fn shared_row(c: &mut Cursor<'_>, prev: Option<&Bytes>, what: &'static str) -> Result<Bytes, DecodeError> {
    let prev_bytes: &[u8] = prev.map_or(&[], |p| p);
    let shared = c.len(prev_bytes.len(), what)?;
    let suffix = c.length_prefixed(what)?;
    if shared + suffix.len() > MAX_ROW_KEY {
        return Err(c.error("index row key longer than the 4 KiB limit"));
    }
    if let Some(p) = prev.filter(|p| suffix.is_empty() && shared == p.len()) {
        return Ok(p.clone());
    }
    let mut row = Vec::with_capacity(shared + suffix.len());
    row.extend_from_slice(&prev_bytes[..shared]);
    row.extend_from_slice(suffix);
    Ok(row.into())
}

/// The rows of the index's last keys (and first rows, where it has them),
/// back to back in one allocation each, for the search of a seek:
/// comparing a target's row against them reads contiguous memory, where
/// each entry's own key is an allocation of its own. A search of a large
/// file touches a few hundred bytes of this rather than an entry and its
/// row's heap block per step, which matters most when neither is in the
/// CPU's caches.
#[derive(Debug, Default)]
pub(crate) struct IndexRows {
    last: Rows,
    /// Empty where the index has no first rows.
    first: Rows,
}

impl IndexRows {
    /// The rows of `index`'s last keys and first rows, in order.
    ///
    /// # Errors
    /// A [`DecodeError`] if either adds up to 4 GiB or more.
    pub fn of(index: &[IndexEntry]) -> Result<IndexRows, DecodeError> {
        let last = Rows::of(index.iter().map(|e| &e.last_key.row[..]))?;
        let first = match index.iter().map(|e| e.first_row.as_deref()).collect::<Option<Vec<&[u8]>>>() {
            Some(rows) => Rows::of(rows.into_iter())?,
            None => Rows::default(),
        };
        Ok(IndexRows { last, first })
    }

    /// The row of entry `i`'s last key (`i` below the entry count).
    #[inline]
    pub fn row(&self, i: usize) -> &[u8] {
        self.last.row(i)
    }

    /// The row of block `i`'s first entry, if the index says it.
    #[inline]
    pub fn first_row(&self, i: usize) -> Option<&[u8]> {
        (i < self.first.ends.len()).then(|| self.first.row(i))
    }
}

/// Rows back to back, and where each ends.
#[derive(Debug, Default)]
struct Rows {
    bytes: Box<[u8]>,
    ends: Box<[u32]>,
}

impl Rows {
    fn of<'a>(rows: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> Result<Rows, DecodeError> {
        let mut bytes = Vec::with_capacity(rows.clone().map(<[u8]>::len).sum());
        let mut ends = Vec::with_capacity(rows.len());
        for row in rows {
            bytes.extend_from_slice(row);
            ends.push(u32::try_from(bytes.len()).map_err(|_| DecodeError::new(0, "index rows of 4 GiB or more"))?);
        }
        Ok(Rows { bytes: bytes.into(), ends: ends.into() })
    }

    #[inline]
    fn row(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::{IndexEntry, IndexRows, decode, encode};
    use crate::key::{EntryKind, InternalKey};
    use crate::sst::format::BlockHandle;

    fn entry(first: Option<&str>, last: &str, offset: u64) -> IndexEntry {
        let last_key = InternalKey {
            row: last.to_owned().into(),
            qualifier: "q".into(),
            timestamp: 5,
            seq: 1,
            kind: EntryKind::Put,
        };
        let handle = BlockHandle { offset, stored_len: 10, raw_len: 12 };
        IndexEntry { last_key, first_row: first.map(|f| f.to_owned().into()), handle, entries: 3 }
    }

    /// A row continued from the block before, a block of one row, a block
    /// of several.
    fn blocks(first_rows: bool) -> Vec<IndexEntry> {
        let first = |r| first_rows.then_some(r);
        vec![entry(first("a"), "b", 0), entry(first("b"), "b", 15), entry(first("ba"), "c", 30)]
    }

    #[test]
    fn an_index_round_trips_with_first_rows_and_without() {
        for first_rows in [true, false] {
            let index = blocks(first_rows);
            let bytes = encode(&index);
            // An index without first rows is encoded as before they were.
            assert_eq!(bytes[0] == 0, first_rows);
            assert_eq!(decode(&bytes).unwrap(), index);
            let rows = IndexRows::of(&index).unwrap();
            assert_eq!(rows.row(2), b"c");
            assert_eq!(rows.first_row(2), first_rows.then_some(&b"ba"[..]));
            // Cut to its first byte, an index with first rows reads as the
            // empty index of the layout before (the block's checksum, not
            // its layout, catches a cut).
            for cut in (0..bytes.len()).filter(|&c| !(first_rows && c == 1)) {
                assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
            }
        }
        assert_eq!(decode(&encode(&[])).unwrap(), []);
    }

    #[test]
    fn a_first_row_outside_its_block_or_an_unknown_layout_does_not_decode() {
        // Block 2 starting before block 1's last row; block 1 starting
        // after its own last row.
        for bad in [vec![entry(Some("a"), "b", 0), entry(Some("a"), "c", 15)], vec![entry(Some("c"), "b", 0)]] {
            let e = decode(&encode(&bad)).unwrap_err();
            assert_eq!(&*e.what, "index first row outside its block's bounds");
        }
        let mut bytes = encode(&blocks(true));
        bytes[1] = 2;
        let e = decode(&bytes).unwrap_err();
        assert_eq!((e.offset, &*e.what), (1, "unknown index layout"));
    }
}
