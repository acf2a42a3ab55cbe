//! Decoding a data block (see [`super::block_builder`] for the layout).
//!
//! A block decodes whole, once, into entries whose values are slices of the
//! decompressed buffer; the block cache keeps the decoded form, so iteration
//! forward and backward is indexing into a vector.

use bytes::Bytes;

use super::block_builder::{DeltaByQualifier, FLAG_MILLIS};
use crate::coding::{Cursor, DecodeError};
use crate::key::{Entry, EntryKind, InternalKey};

/// A decoded data block.
#[derive(Debug)]
pub struct DecodedBlock {
    entries: Vec<Entry>,
    charge: usize,
}

impl DecodedBlock {
    /// The entries, in key order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Bytes of memory the block holds, for the cache's budget.
    pub fn charge(&self) -> usize {
        self.charge
    }

    /// Decodes the raw (decompressed) block `raw`.
    pub fn decode(raw: Bytes) -> Result<DecodedBlock, DecodeError> {
        let mut c = Cursor::new(&raw);
        let flags = c.u8("block flags")?;
        if flags & !FLAG_MILLIS != 0 {
            return Err(DecodeError { offset: 0, what: "unknown block flags" });
        }
        let scale = if flags & FLAG_MILLIS != 0 { 1000 } else { 1 };
        // Every entry takes at least one byte in the kinds stream.
        let n = c.len(raw.len(), "entry count")?;
        let row_count = c.len(n, "row count")?;
        let qual_count = c.len(n, "qualifier count")?;
        let rows = decode_rows(&mut c, &raw, row_count, n)?;
        let quals = (0..qual_count)
            .map(|_| c.length_prefixed("qualifier").map(|q| raw.slice_ref(q)))
            .collect::<Result<Vec<_>, _>>()?;
        let kinds = c.bytes(n, "kinds")?;
        let qids =
            (0..n).map(|_| c.len(qual_count.saturating_sub(1), "qualifier id")).collect::<Result<Vec<_>, _>>()?;
        if qual_count == 0 && n > 0 {
            return Err(c.error("qualifier dictionary is empty"));
        }
        let timestamps = decode_deltas(&mut c, &qids, qual_count, "timestamp")?;
        let seqs = decode_deltas(&mut c, &qids, qual_count, "sequence")?;
        let value_lens = (0..n).map(|_| c.len(c.remaining(), "value length")).collect::<Result<Vec<_>, _>>()?;
        let values = slice_values(&mut c, &raw, &qids, &value_lens, qual_count)?;
        if !c.is_empty() {
            return Err(c.error("end of block"));
        }
        let mut entries = Vec::with_capacity(n);
        let mut row_iter = rows.iter().flat_map(|(row, run)| std::iter::repeat_n(row, *run));
        for i in 0..n {
            let kind = EntryKind::from_tag(kinds[i]).ok_or(DecodeError { offset: 0, what: "entry kind" })?;
            let row = row_iter.next().ok_or(DecodeError { offset: 0, what: "row runs shorter than entries" })?;
            let key = InternalKey {
                row: row.clone(),
                qualifier: quals[qids[i]].clone(),
                timestamp: timestamps[i].checked_mul(scale).ok_or(DecodeError { offset: 0, what: "timestamp" })?,
                seq: seqs[i] as u64,
                kind,
            };
            entries.push(Entry { key, value: values[i].clone() });
        }
        let charge = raw.len() + n * std::mem::size_of::<Entry>() + rows.iter().map(|(r, _)| r.len()).sum::<usize>();
        Ok(DecodedBlock { entries, charge })
    }
}

fn decode_rows(
    c: &mut Cursor<'_>,
    raw: &Bytes,
    count: usize,
    entries: usize,
) -> Result<Vec<(Bytes, usize)>, DecodeError> {
    let mut rows: Vec<(Bytes, usize)> = Vec::with_capacity(count);
    let mut total = 0usize;
    for _ in 0..count {
        let prev: &[u8] = rows.last().map_or(&[], |(r, _)| r);
        let shared = c.len(prev.len(), "row shared prefix")?;
        let suffix = c.length_prefixed("row suffix")?;
        let run = c.len(entries - total, "row run")?;
        total += run;
        let row = if shared == 0 {
            raw.slice_ref(suffix)
        } else {
            let mut key = Vec::with_capacity(shared + suffix.len());
            key.extend_from_slice(&prev[..shared]);
            key.extend_from_slice(suffix);
            Bytes::from(key)
        };
        rows.push((row, run));
    }
    if total != entries {
        return Err(c.error("row runs do not add up to the entry count"));
    }
    Ok(rows)
}

fn decode_deltas(
    c: &mut Cursor<'_>,
    qids: &[usize],
    quals: usize,
    what: &'static str,
) -> Result<Vec<i64>, DecodeError> {
    let mut base = DeltaByQualifier::new(quals);
    qids.iter()
        .map(|&qid| {
            let v = base.base(qid).wrapping_add(c.zigzag(what)?);
            base.record(qid, v);
            Ok(v)
        })
        .collect()
}

fn slice_values(
    c: &mut Cursor<'_>,
    raw: &Bytes,
    qids: &[usize],
    lens: &[usize],
    quals: usize,
) -> Result<Vec<Bytes>, DecodeError> {
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
            raw.slice(start..start + len)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Entry;
    use crate::model::TimeRange;
    use crate::sst::block_builder::BlockBuilder;

    fn round_trip(entries: &[Entry]) -> Vec<Entry> {
        let mut b = BlockBuilder::default();
        entries.iter().for_each(|e| b.add(e.as_ref()));
        let mut raw = Vec::new();
        b.finish(&mut raw);
        DecodedBlock::decode(raw.into()).unwrap().entries
    }

    #[test]
    fn entries_survive_encoding_exactly() {
        let mut entries = vec![
            Entry::delete_family("a".into(), 9),
            Entry::delete_column("a".into(), "".into(), TimeRange::new(0, 5000), 8),
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
        entries.iter().for_each(|e| b.add(e.as_ref()));
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
        assert_eq!(DecodedBlock::decode(raw.into()).unwrap().entries, entries);
    }

    #[test]
    fn truncated_or_garbled_blocks_are_errors_not_panics() {
        let entries: Vec<Entry> = (0..50)
            .map(|i| {
                Entry::put(
                    format!("row{:03}", i / 4).into(),
                    format!("q{}", i % 4).into(),
                    1000 * i,
                    i as u64,
                    "val".into(),
                )
            })
            .collect();
        let mut b = BlockBuilder::default();
        entries.iter().for_each(|e| b.add(e.as_ref()));
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
