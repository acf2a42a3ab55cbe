//! Decoding a data block (see [`super::block_builder`] for the layout).
//!
//! A block decodes whole, once, into compact per-entry slots that point into
//! the decompressed bytes (values, qualifiers) and into one buffer of
//! rebuilt row keys; the block cache keeps the decoded form, so iteration
//! forward and backward is indexing, and an entry is handed out as a
//! borrowed [`EntryRef`] without copying or reference counting.

use bytes::Bytes;

use super::block_builder::{DeltaByQualifier, FLAG_MILLIS};
use crate::cache::Charge;
use crate::coding::{Cursor, DecodeError};
use crate::key::{EntryKind, EntryRef, InternalKey, MAX_ROW_KEY, compare_parts, is_range_end};

/// One entry's fixed-size fields and where its bytes are.
#[derive(Debug, Clone, Copy)]
struct Slot {
    timestamp: i64,
    seq: u64,
    value_start: u32,
    value_len: u32,
    row: u32,
    qualifier: u32,
    kind: EntryKind,
}

/// A decoded data block.
#[derive(Debug)]
pub struct DecodedBlock {
    raw: Bytes,
    row_bytes: Vec<u8>,
    /// End offset of each distinct row in `row_bytes`.
    row_ends: Vec<u32>,
    /// (start, end) of each dictionary qualifier in `raw`.
    quals: Vec<(u32, u32)>,
    slots: Vec<Slot>,
}

impl DecodedBlock {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the block holds no entry.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Entry `i`, borrowed.
    pub fn entry(&self, i: usize) -> Option<EntryRef<'_>> {
        let s = self.slots.get(i)?;
        let row_start = if s.row == 0 { 0 } else { self.row_ends[s.row as usize - 1] as usize };
        let (q0, q1) = self.quals[s.qualifier as usize];
        let v0 = s.value_start as usize;
        Some(EntryRef {
            row: &self.row_bytes[row_start..self.row_ends[s.row as usize] as usize],
            qualifier: &self.raw[q0 as usize..q1 as usize],
            timestamp: s.timestamp,
            seq: s.seq,
            kind: s.kind,
            value: &self.raw[v0..v0 + s.value_len as usize],
        })
    }

    /// Every entry in order.
    pub fn entries(&self) -> impl Iterator<Item = EntryRef<'_>> {
        (0..self.len()).filter_map(|i| self.entry(i))
    }

    /// Index of the first entry not less than `key` (`inclusive`) or greater
    /// than `key` (`!inclusive`): a binary search.
    pub(crate) fn seek(&self, key: &InternalKey, inclusive: bool) -> usize {
        let target = (&key.row[..], &key.qualifier[..], key.timestamp, key.seq, key.kind);
        let below = |i: usize| {
            self.entry(i).is_some_and(|e| {
                let ord = compare_parts((e.row, e.qualifier, e.timestamp, e.seq, e.kind), target);
                if inclusive { ord.is_lt() } else { ord.is_le() }
            })
        };
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Decodes the raw (decompressed) block `raw`.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset in `raw` of the first byte that does
    /// not decode, or of the stream holding a value out of range.
    #[allow(clippy::cast_possible_truncation, reason = "offsets and counts within a block checked to be under 4 GiB")]
    pub(crate) fn decode(raw: Bytes) -> Result<DecodedBlock, DecodeError> {
        if u32::try_from(raw.len()).is_err() {
            return Err(DecodeError::new(0, "block larger than 4 GiB"));
        }
        let mut c = Cursor::new(&raw);
        let flags = c.u8("block flags")?;
        if flags & !FLAG_MILLIS != 0 {
            return Err(c.error_at(0, "unknown block flags"));
        }
        let scale = if flags & FLAG_MILLIS != 0 { 1000 } else { 1 };
        // Every entry takes at least one byte in the kinds stream.
        let n = c.len(raw.len(), "entry count")?;
        let row_count = c.len(n, "row count")?;
        let qual_count = c.len(n, "qualifier count")?;
        let (row_bytes, row_ends, row_of) = decode_rows(&mut c, row_count, n)?;
        let mut quals = Vec::with_capacity(qual_count);
        for _ in 0..qual_count {
            let len = c.len(c.remaining(), "qualifier")?;
            let start = c.position();
            c.bytes(len, "qualifier")?;
            quals.push((start as u32, (start + len) as u32));
        }
        let kinds_at = c.position();
        let kinds = c.bytes(n, "kinds")?;
        if qual_count == 0 && n > 0 {
            return Err(c.error("qualifier dictionary is empty"));
        }
        let qids =
            (0..n).map(|_| c.len(qual_count.saturating_sub(1), "qualifier id")).collect::<Result<Vec<_>, _>>()?;
        let timestamps = decode_deltas(&mut c, &qids, qual_count, scale, "timestamp")?;
        let seqs_at = c.position();
        let seqs = decode_deltas(&mut c, &qids, qual_count, 1, "sequence")?;
        let value_lens = (0..n).map(|_| c.len(c.remaining(), "value length")).collect::<Result<Vec<_>, _>>()?;
        let value_starts = value_offsets(&mut c, &qids, &value_lens, qual_count)?;
        if !c.is_empty() {
            return Err(c.error("end of block"));
        }
        let mut slots = Vec::with_capacity(n);
        for i in 0..n {
            let kind = EntryKind::from_tag(kinds[i]).ok_or(c.error_at(kinds_at + i, "entry kind"))?;
            let value = &raw[value_starts[i]..value_starts[i] + value_lens[i]];
            if kind == EntryKind::DeleteColumn && !is_range_end(value) {
                return Err(c.error_at(value_starts[i], "column tombstone's range end"));
            }
            let seq = u64::try_from(seqs[i]).map_err(|_| c.error_at(seqs_at, "negative sequence number"))?;
            slots.push(Slot {
                timestamp: timestamps[i],
                seq,
                value_start: value_starts[i] as u32,
                value_len: value_lens[i] as u32,
                row: row_of[i],
                qualifier: qids[i] as u32,
                kind,
            });
        }
        Ok(DecodedBlock { raw, row_bytes, row_ends, quals, slots })
    }
}

type Rows = (Vec<u8>, Vec<u32>, Vec<u32>);

/// The rebuilt row keys, each one's end offset, and each entry's row index.
#[allow(clippy::cast_possible_truncation, reason = "row indexes within a block checked to be under 4 GiB")]
fn decode_rows(c: &mut Cursor<'_>, count: usize, entries: usize) -> Result<Rows, DecodeError> {
    let mut row_bytes = Vec::new();
    let mut row_ends: Vec<u32> = Vec::with_capacity(count);
    let mut row_of = Vec::with_capacity(entries);
    for r in 0..count {
        let prev_start = if r < 2 { 0 } else { row_ends[r - 2] as usize };
        let prev_len = row_bytes.len() - prev_start;
        let shared = c.len(prev_len, "row shared prefix")?;
        let suffix = c.length_prefixed("row suffix")?;
        if shared + suffix.len() > MAX_ROW_KEY {
            return Err(c.error("row key longer than the 4 KiB limit"));
        }
        let run = c.len(entries - row_of.len(), "row run")?;
        if run == 0 {
            return Err(c.error("row with no entries"));
        }
        row_bytes.extend_from_within(prev_start..prev_start + shared);
        row_bytes.extend_from_slice(suffix);
        let end = u32::try_from(row_bytes.len()).map_err(|_| c.error("row keys"))?;
        row_ends.push(end);
        row_of.extend(std::iter::repeat_n(r as u32, run));
    }
    if row_of.len() != entries {
        return Err(c.error("row runs do not add up to the entry count"));
    }
    Ok((row_bytes, row_ends, row_of))
}

/// One stream of per-qualifier deltas, each value multiplied by `scale`.
fn decode_deltas(
    c: &mut Cursor<'_>,
    qids: &[usize],
    quals: usize,
    scale: i64,
    what: &'static str,
) -> Result<Vec<i64>, DecodeError> {
    let mut base = DeltaByQualifier::new(quals);
    qids.iter()
        .map(|&qid| {
            let at = c.position();
            let v = base.base(qid).wrapping_add(c.zigzag(what)?);
            base.record(qid, v);
            v.checked_mul(scale).ok_or_else(|| c.error_at(at, "timestamp out of range"))
        })
        .collect()
}

/// Each entry's value offset in the block: values are grouped by qualifier.
fn value_offsets(c: &mut Cursor<'_>, qids: &[usize], lens: &[usize], quals: usize) -> Result<Vec<usize>, DecodeError> {
    let mut group_len = vec![0usize; quals];
    for (&qid, &len) in qids.iter().zip(lens) {
        group_len[qid] = group_len[qid].checked_add(len).ok_or(c.error("value lengths"))?;
    }
    let mut cursor = Vec::with_capacity(quals);
    for len in &group_len {
        cursor.push(c.position());
        c.bytes(*len, "values")?;
    }
    Ok(qids
        .iter()
        .zip(lens)
        .map(|(&qid, &len)| {
            let start = cursor[qid];
            cursor[qid] += len;
            start
        })
        .collect())
}

impl Charge for DecodedBlock {
    /// Bytes of memory the block holds, for the cache's budget.
    fn charge(&self) -> usize {
        self.raw.len()
            + self.row_bytes.len()
            + self.slots.len() * std::mem::size_of::<Slot>()
            + self.row_ends.len() * 4
            + self.quals.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Entry;
    use crate::sst::block_builder::BlockBuilder;

    fn round_trip(entries: &[Entry]) -> Vec<Entry> {
        let mut b = BlockBuilder::default();
        for e in entries {
            b.add(e.as_ref());
        }
        let mut raw = Vec::new();
        b.finish(&mut raw);
        DecodedBlock::decode(raw.into()).unwrap().entries().map(EntryRef::to_entry).collect()
    }

    #[test]
    fn entries_survive_encoding_exactly() {
        let mut entries = vec![
            Entry::delete_family("a".into(), 9),
            Entry::delete_column("a".into(), "".into(), (0, Some(5000)), 8),
            Entry::put("a".into(), "".into(), 3000, 7, "".into()),
            Entry::put("a".into(), "x".into(), 2_000_000, 6, "v1".into()),
            Entry::put("a".into(), "x".into(), 1_000_000, 5, "v0".into()),
            Entry::put("ab".into(), "\0\u{ff}".into(), -5, 4, vec![0u8, 255].into()),
            Entry::put("b".into(), "x".into(), i64::MAX, u64::MAX >> 1, "w".into()),
        ];
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(round_trip(&entries), entries);
    }

    /// The worked example of `docs/format/sstable.md`, byte for byte.
    #[test]
    fn worked_example_of_the_format_doc() {
        let entries = [
            Entry::put("r1".into(), "a".into(), 2000, 5, "x".into()),
            Entry::put("r1".into(), "a".into(), 1000, 3, "y".into()),
            Entry::put("r2".into(), "b".into(), 1000, 4, "zz".into()),
        ];
        let mut b = BlockBuilder::default();
        for e in &entries {
            b.add(e.as_ref());
        }
        let mut raw = Vec::new();
        b.finish(&mut raw);
        let expected: Vec<u8> = vec![
            0x01, 0x03, 0x02, 0x02, // flags (ms), entries, rows, qualifiers
            0x00, 0x02, b'r', b'1', 0x02, // row "r1": shares 0, suffix "r1", 2 entries
            0x01, 0x01, b'2', 0x01, // row "r2": shares 1, suffix "2", 1 entry
            0x01, b'a', 0x01, b'b', // qualifier dictionary
            0x00, 0x00, 0x00, // kinds: put, put, put
            0x00, 0x00, 0x01, // qualifier ids
            0x04, 0x01, 0x00, // timestamps/1000 as zigzag deltas: 2, 1-2, 1-1
            0x0a, 0x03, 0x02, // sequences as zigzag deltas: 5, 3-5, 4-3
            0x01, 0x01, 0x02, // value lengths
            b'x', b'y', b'z', b'z', // values, grouped by qualifier
        ];
        assert_eq!(raw, expected);
        let decoded: Vec<Entry> = DecodedBlock::decode(raw.into()).unwrap().entries().map(EntryRef::to_entry).collect();
        assert_eq!(decoded, entries);
    }

    #[test]
    fn truncated_or_garbled_blocks_are_errors_not_panics() {
        let entries: Vec<Entry> = (0..50u64)
            .map(|i| {
                let ts = 1000 * i.cast_signed();
                Entry::put(format!("row{:03}", i / 4).into(), format!("q{}", i % 4).into(), ts, i, "val".into())
            })
            .collect();
        let mut b = BlockBuilder::default();
        for e in &entries {
            b.add(e.as_ref());
        }
        let mut raw = Vec::new();
        b.finish(&mut raw);
        for cut in 0..raw.len() {
            assert!(DecodedBlock::decode(Bytes::copy_from_slice(&raw[..cut])).is_err());
        }
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0xa5;
            let _ = DecodedBlock::decode(bad.into());
        }
    }
}
