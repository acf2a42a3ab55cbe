//! The index block: for each data block, its last key, its first row and
//! where it is.

use std::cmp::Ordering;

use bytes::Bytes;

use super::block::partition_point;
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

/// The index's keys laid out for a seek's search, which must find a
/// block without touching much memory: a search of a large file whose
/// index is out of the CPU's caches pays a cache miss for every place it
/// looks, and an entry's own key is three (the entry, its row's heap
/// block, its qualifier's).
///
/// - Each distinct last row is held once, back to back, with the first
///   entry that ends in it: the search by row runs over rows, not
///   blocks, and a wide row's hundreds of blocks are one step of it.
/// - Each entry keeps the rest of its last key in a small fixed-size
///   [`Tail`]: its row's number, its column's (each run of entries
///   ending in one qualifier and kind shares one), and its timestamp.
///   Among a wide row's blocks the search compares these, one cache
///   line for several steps, and the column's qualifier, which the steps
///   share; only a tie on the timestamp looks at the entry itself.
/// - The row of each block's first entry (where the index records it),
///   for a bounded read to tell a block past its bound: each distinct one
///   once, its place in the entry's tail, where the search just looked.
///   A wide row's blocks begin and end in it.
#[derive(Debug, Default)]
pub(crate) struct IndexKeys {
    /// Distinct last rows, in order.
    rows: Rows,
    /// Per distinct last row, the first entry whose last key is of it.
    row_starts: Box<[u32]>,
    /// Per entry, its last key past the row.
    tails: Box<[Tail]>,
    /// Distinct qualifiers of consecutive entries, and each one's kind
    /// rank ([`EntryKind::rank`]).
    qualifiers: Rows,
    kinds: Box<[(u8, u8)]>,
    /// Distinct first rows of consecutive blocks; empty where the index
    /// has none.
    first_rows: Rows,
}

/// An index entry's last key past its row, for [`IndexKeys`].
#[derive(Debug, Clone, Copy)]
struct Tail {
    /// The row's place among the distinct last rows.
    row: u32,
    /// The qualifier's (and kind's) place among [`IndexKeys::qualifiers`].
    column: u32,
    timestamp: i64,
    /// The block's first row's place among [`IndexKeys::first_rows`].
    first_row: u32,
}

impl IndexKeys {
    /// `index`'s keys laid out for search.
    ///
    /// # Errors
    /// A [`DecodeError`] if its rows, qualifiers or first rows add up to
    /// 4 GiB or more, or it has 4 G entries or more.
    pub fn of(index: &[IndexEntry]) -> Result<IndexKeys, DecodeError> {
        let place = |n: usize| u32::try_from(n).map_err(|_| DecodeError::new(0, "an index of 4 G entries or more"));
        let mut rows = Rows::default();
        let mut row_starts = Vec::new();
        let mut qualifiers = Rows::default();
        let mut kinds = Vec::new();
        let mut first_rows = Rows::default();
        let with_first_rows = index.iter().all(|e| e.first_row.is_some());
        let mut tails = Vec::with_capacity(index.len());
        let mut prev: Option<&IndexEntry> = None;
        for (i, e) in index.iter().enumerate() {
            let key = &e.last_key;
            if prev.is_none_or(|p| p.last_key.row != key.row) {
                rows.push(&key.row)?;
                row_starts.push(place(i)?);
            }
            if prev.is_none_or(|p| p.last_key.qualifier != key.qualifier || p.last_key.kind.rank() != key.kind.rank()) {
                qualifiers.push(&key.qualifier)?;
                kinds.push(key.kind.rank());
            }
            // Without first rows, a place past the (empty) table.
            let first_row = match e.first_row.as_deref().filter(|_| with_first_rows) {
                Some(first) if prev.and_then(|p| p.first_row.as_deref()) == Some(first) => first_rows.len() - 1,
                Some(first) => {
                    first_rows.push(first)?;
                    first_rows.len() - 1
                }
                None => first_rows.len(),
            };
            tails.push(Tail {
                row: place(rows.len() - 1)?,
                column: place(qualifiers.len() - 1)?,
                timestamp: key.timestamp,
                first_row: place(first_row)?,
            });
            prev = Some(e);
        }
        Ok(IndexKeys {
            rows: rows.finish(),
            row_starts: row_starts.into(),
            tails: tails.into(),
            qualifiers: qualifiers.finish(),
            kinds: kinds.into(),
            first_rows: first_rows.finish(),
        })
    }

    /// The row of block `i`'s first entry, if the index says it.
    #[inline]
    pub fn first_row(&self, i: usize) -> Option<&[u8]> {
        let place = self.tails.get(i)?.first_row as usize;
        (place < self.first_rows.len()).then(|| self.first_rows.row(place))
    }

    /// The first block at or after `from` whose last key is not below
    /// `key` (`inclusive`) or is above it: the block a seek to `key` lands
    /// in, where every block before `from` ends below it. `index` is the
    /// index these keys were laid out from.
    ///
    /// Keys order by row first: the search finds `key`'s row among the
    /// distinct rows, then compares the rest of the key only among the
    /// blocks that end in that row (a wide row's). Both searches gallop
    /// from where they start (the row of `from`, the row's first block):
    /// a read lands at a row's start, or a seek moves on to a near column.
    pub fn first_block(&self, index: &[IndexEntry], from: usize, key: &InternalKey, inclusive: bool) -> usize {
        let len = self.tails.len();
        if from >= len {
            return len;
        }
        let row: &[u8] = &key.row;
        // The blocks before `from` end below `key`: the search by row
        // starts at `from`'s row, and within it at `from`.
        let from_row = self.tails[from].row as usize;
        let below = |r: usize| self.rows.row(r) < row;
        // From the start, by halves; from elsewhere (a seek moving on),
        // galloping.
        let r = if from_row == 0 {
            partition_point(0, self.rows.len(), below)
        } else {
            gallop(self.rows.len(), from_row, below)
        };
        let Some(&start) = self.row_starts.get(r) else { return len };
        let start = (start as usize).max(from);
        if self.rows.row(r) != row {
            return start;
        }
        let end = self.row_starts.get(r + 1).map_or(len, |&e| e as usize);
        gallop(end, start, |i| match self.cmp_in_row(index, i, key) {
            Ordering::Less => true,
            Ordering::Equal => !inclusive,
            Ordering::Greater => false,
        })
    }

    /// Entry `i`'s last key against `key`, whose row is the entry's (as
    /// [`InternalKey`]'s order: kind group, qualifier, kind, timestamp
    /// newest first, sequence number newest first).
    fn cmp_in_row(&self, index: &[IndexEntry], i: usize, key: &InternalKey) -> Ordering {
        let tail = self.tails[i];
        let column = tail.column as usize;
        let (group, sub) = self.kinds[column];
        let (key_group, key_sub) = key.kind.rank();
        group
            .cmp(&key_group)
            .then_with(|| self.qualifiers.row(column).cmp(&key.qualifier[..]))
            .then(sub.cmp(&key_sub))
            .then(key.timestamp.cmp(&tail.timestamp))
            .then_with(|| key.seq.cmp(&index[i].last_key.seq))
    }
}

/// The first index in `from..len` for which `below` turns false, where
/// `below`, past the first index it turns false, holds for none: steps
/// of 1, 2, 4... from `from`, then halves.
fn gallop(len: usize, from: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (from.min(len), 1);
    while lo < len && below(lo) {
        let next = (lo + step).min(len);
        if next == len || !below(next) {
            // The answer is in (lo, next].
            return partition_point(lo + 1, next, below);
        }
        (lo, step) = (next, step * 2);
    }
    lo
}

/// Byte strings back to back, and where each ends.
#[derive(Debug, Default)]
struct Rows {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl Rows {
    fn push(&mut self, row: &[u8]) -> Result<(), DecodeError> {
        self.bytes.extend_from_slice(row);
        let end = u32::try_from(self.bytes.len()).map_err(|_| DecodeError::new(0, "index keys of 4 GiB or more"))?;
        self.ends.push(end);
        Ok(())
    }

    /// Gives back the room left over from building.
    fn finish(mut self) -> Rows {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn row(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{IndexEntry, IndexKeys, decode, encode, gallop};
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
            let keys = IndexKeys::of(&index).unwrap();
            assert_eq!(keys.first_row(2), first_rows.then_some(&b"ba"[..]));
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

    /// A key from `r`: rows from a small alphabet, some prefixes of others,
    /// so that runs of blocks share a last row and targets fall on them.
    fn key(r: &mut impl FnMut() -> u64) -> InternalKey {
        let rows: [&[u8]; 7] = [b"", b"a", b"a\0", b"ab", b"abc", b"b", b"b\xff"];
        let kinds = [EntryKind::Put, EntryKind::DeleteColumn, EntryKind::DeleteFamily];
        InternalKey {
            row: Bytes::from_static(rows[(r() % 7) as usize]),
            qualifier: Bytes::from(vec![b'q'; (r() % 3) as usize]),
            timestamp: (r() % 5).cast_signed() - 2,
            seq: r() % 4,
            kind: kinds[(r() % 3) as usize],
        }
    }

    #[test]
    fn the_laid_out_keys_find_the_block_a_search_of_whole_keys_finds_and_keep_first_rows() {
        let mut state = 7u64;
        let mut r = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for _ in 0..200 {
            let n = (r() % 24) as usize;
            let mut last_keys: Vec<InternalKey> = (0..n).map(|_| key(&mut r)).collect();
            last_keys.sort();
            last_keys.dedup();
            let handle = BlockHandle { offset: 0, stored_len: 0, raw_len: 0 };
            // Each block begins in its own last row or in the block
            // before's (runs of equal first rows), or, in every third
            // index, the index records no first rows.
            let with_first_rows = r() % 3 != 0;
            let mut index: Vec<IndexEntry> = Vec::new();
            for last_key in last_keys {
                let before = index.last().map(|e: &IndexEntry| e.last_key.row.clone());
                let first_row = match before {
                    Some(row) if r() % 2 == 0 => row,
                    _ => last_key.row.clone(),
                };
                let first_row = with_first_rows.then_some(first_row);
                index.push(IndexEntry { last_key, first_row, handle, entries: 1 });
            }
            let keys = IndexKeys::of(&index).unwrap();
            for (i, e) in index.iter().enumerate() {
                assert_eq!(keys.first_row(i), e.first_row.as_deref(), "block {i} of {index:?}");
            }
            assert_eq!(keys.first_row(index.len()), None);
            for _ in 0..50 {
                let target = key(&mut r);
                for inclusive in [true, false] {
                    let want =
                        index.partition_point(|e| if inclusive { e.last_key < target } else { e.last_key <= target });
                    for from in 0..=want {
                        let got = keys.first_block(&index, from, &target, inclusive);
                        assert_eq!(got, want, "{target:?} inclusive {inclusive} from {from} in {index:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn galloping_finds_what_a_binary_search_finds() {
        for len in 0..40usize {
            for split in 0..=len {
                for from in 0..=split {
                    assert_eq!(gallop(len, from, |x| x < split), split, "len {len} split {split} from {from}");
                }
            }
        }
    }
}
