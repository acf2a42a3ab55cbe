//! Encoding a data block: cells stored column-wise, so zstd sees like with like.
//!
//! Layout (specified in `docs/format/sstable.md`): distinct rows with
//! shared-prefix keys and run lengths, a dictionary of the block's distinct
//! qualifiers, then one stream per field — kinds, qualifier ids, timestamps,
//! sequence numbers, value lengths — and last the values grouped by
//! qualifier. Timestamps and sequence numbers are deltas from the previous
//! entry of the same qualifier, so a column of regular measurements becomes a
//! run of identical small numbers; values of one metric sit next to each
//! other. Both are what zstd compresses best.
//!
//! Entries arrive borrowed and are copied straight into the streams: adding
//! an entry allocates nothing but the streams' growth.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

use super::block::layout::{DeltaByQualifier, FLAG_MILLIS, FLAG_PACKED_STREAMS, Stream};
use crate::coding::{put_bytes, put_varint, zigzag};
use crate::key::EntryRef;

/// Dictionaries up to this size are searched by a scan, not the hash index.
const SCANNED_QUALIFIERS: usize = 8;

/// The size estimate of a block of `entries` entries, `rows` distinct rows
/// of `row_bytes` bytes in all, `qualifiers` dictionary entries of
/// `qualifier_bytes` bytes and `value_bytes` bytes of values: what
/// [`BlockBuilder::estimated_size`] reaches once they are added.
pub(crate) fn estimate(
    entries: usize,
    (rows, row_bytes): (usize, usize),
    (qualifiers, qualifier_bytes): (usize, usize),
    value_bytes: usize,
) -> usize {
    entries * ENTRY_ESTIMATE + value_bytes + row_bytes + 2 * rows + qualifier_bytes + qualifiers
}

/// Bytes an entry costs in the size estimate beyond its value.
const ENTRY_ESTIMATE: usize = 6;

/// Collects the entries of one block, column-wise, and encodes them.
#[derive(Debug, Default)]
pub struct BlockBuilder {
    row_bytes: Vec<u8>,
    /// (end offset in `row_bytes`, entries in the row).
    rows: Vec<(usize, usize)>,
    qual_bytes: Vec<u8>,
    /// End offset of each dictionary qualifier in `qual_bytes`.
    quals: Vec<usize>,
    /// Qualifier hash → dictionary id (a collision only costs a duplicate entry).
    qual_index: HashMap<u64, usize>,
    kinds: Vec<u8>,
    qids: Vec<usize>,
    timestamps: Vec<i64>,
    seqs: Vec<u64>,
    value_ends: Vec<usize>,
    values: Vec<u8>,
    all_millis: bool,
    estimate: usize,
    /// Scratch for one stream at a time, kept from block to block.
    stream: Vec<u64>,
}

impl BlockBuilder {
    /// Adds the next entry (callers keep entries in key order).
    pub fn add(&mut self, e: EntryRef<'_>) {
        if self.kinds.is_empty() {
            self.all_millis = true;
        }
        self.add_row(e.row);
        let qid = self.qualifier_id(e.qualifier);
        self.kinds.push(e.kind as u8);
        self.qids.push(qid);
        self.timestamps.push(e.timestamp);
        self.all_millis &= e.timestamp % 1000 == 0;
        self.seqs.push(e.seq);
        self.values.extend_from_slice(e.value);
        self.value_ends.push(self.values.len());
        self.estimate += ENTRY_ESTIMATE + e.value.len();
    }

    fn add_row(&mut self, row: &[u8]) {
        let start = row_start(&self.rows);
        if let Some(last) = self.rows.last_mut()
            && self.row_bytes[start..last.0] == *row
        {
            last.1 += 1;
            return;
        }
        self.row_bytes.extend_from_slice(row);
        self.rows.push((self.row_bytes.len(), 1));
        self.estimate += row.len() + 2;
    }

    fn qualifier_id(&mut self, q: &[u8]) -> usize {
        if let Some(&last) = self.qids.last()
            && self.qualifier(last) == q
        {
            return last;
        }
        // A few qualifiers (a row's columns, in turn): a scan is cheaper
        // than hashing.
        if self.quals.len() <= SCANNED_QUALIFIERS
            && let Some(id) = (0..self.quals.len()).find(|&id| self.qualifier(id) == q)
        {
            return id;
        }
        let h = xxh3_64(q);
        if let Some(&id) = self.qual_index.get(&h)
            && self.qualifier(id) == q
        {
            return id;
        }
        self.qual_bytes.extend_from_slice(q);
        self.quals.push(self.qual_bytes.len());
        let id = self.quals.len() - 1;
        self.qual_index.entry(h).or_insert(id);
        self.estimate += q.len() + 1;
        id
    }

    fn qualifier(&self, id: usize) -> &[u8] {
        let start = if id == 0 { 0 } else { self.quals[id - 1] };
        &self.qual_bytes[start..self.quals[id]]
    }

    /// Roughly how many bytes the encoded block would take.
    pub fn estimated_size(&self) -> usize {
        self.estimate
    }

    /// Whether the entries added are of one column of one row, and `next`
    /// starts another column of that row.
    pub fn is_column_before(&self, next: &EntryRef<'_>) -> bool {
        self.rows.len() == 1
            && self.quals.len() == 1
            && self.row_bytes[..] == *next.row
            && self.qualifier(0) != next.qualifier
    }

    /// Number of entries added.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Encodes the entries added into `out` and resets the builder.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let scale = if self.all_millis { 1000 } else { 1 };
        out.push(FLAG_PACKED_STREAMS | if self.all_millis { FLAG_MILLIS } else { 0 });
        put_varint(out, self.kinds.len() as u64);
        put_varint(out, self.rows.len() as u64);
        put_varint(out, self.quals.len() as u64);
        self.encode_rows(out);
        for id in 0..self.quals.len() {
            put_bytes(out, self.qualifier(id));
        }
        let mut stream = std::mem::take(&mut self.stream);
        stream.clear();
        stream.extend(self.kinds.iter().map(|&k| u64::from(k)));
        put_stream(out, &stream);
        stream.clear();
        stream.extend(self.qids.iter().map(|&q| q as u64));
        put_stream(out, &stream);
        let mut ts = DeltaByQualifier::new(self.quals.len());
        let deltas = self.timestamps.iter().zip(&self.qids).map(|(&t, &qid)| zigzag(ts.delta(qid, t / scale)));
        self.put_delta_stream(out, deltas, &mut stream);
        let mut seq = DeltaByQualifier::new(self.quals.len());
        // Sequence numbers stay below 2^63 (docs/format/sstable.md).
        let deltas = self.seqs.iter().zip(&self.qids).map(|(&s, &qid)| zigzag(seq.delta(qid, s.cast_signed())));
        self.put_delta_stream(out, deltas, &mut stream);
        stream.clear();
        let mut start = 0;
        for &end in &self.value_ends {
            stream.push((end - start) as u64);
            start = end;
        }
        put_stream(out, &stream);
        self.stream = stream;
        self.encode_values(out);
        self.reset();
    }

    /// Appends a stream of per-qualifier deltas, one an entry: the head
    /// of each qualifier (its first entry's delta, taken from the entry
    /// before it, of whatever qualifier) as a varint, in qualifier-id order,
    /// then the other entries' deltas as one stream. A column's deltas are
    /// alike (a minute, again and again); its head, from another column or
    /// from 0, seldom is, and kept apart it does not widen the rest.
    fn put_delta_stream(&self, out: &mut Vec<u8>, deltas: impl Iterator<Item = u64>, scratch: &mut Vec<u64>) {
        scratch.clear();
        let mut heads = 0;
        for (delta, &qid) in deltas.zip(&self.qids) {
            if qid == heads {
                // Ids are given in order of first appearance.
                put_varint(out, delta);
                heads += 1;
            } else {
                scratch.push(delta);
            }
        }
        put_stream(out, scratch);
    }

    fn encode_rows(&self, out: &mut Vec<u8>) {
        let mut start = 0;
        let mut prev: &[u8] = &[];
        for &(end, run) in &self.rows {
            let row = &self.row_bytes[start..end];
            let shared = prev.iter().zip(row).take_while(|(a, b)| a == b).count();
            put_varint(out, shared as u64);
            put_bytes(out, &row[shared..]);
            put_varint(out, run as u64);
            prev = row;
            start = end;
        }
    }

    /// Values grouped by qualifier id, each group in entry order.
    fn encode_values(&self, out: &mut Vec<u8>) {
        let mut group_len = vec![0usize; self.quals.len()];
        let mut start = 0;
        for (&end, &qid) in self.value_ends.iter().zip(&self.qids) {
            group_len[qid] += end - start;
            start = end;
        }
        let base = out.len();
        let mut cursor = Vec::with_capacity(group_len.len());
        let mut at = base;
        for len in &group_len {
            cursor.push(at);
            at += len;
        }
        out.resize(at, 0);
        let mut start = 0;
        for (&end, &qid) in self.value_ends.iter().zip(&self.qids) {
            let len = end - start;
            out[cursor[qid]..cursor[qid] + len].copy_from_slice(&self.values[start..end]);
            cursor[qid] += len;
            start = end;
        }
    }

    fn reset(&mut self) {
        self.row_bytes.clear();
        self.rows.clear();
        self.qual_bytes.clear();
        self.quals.clear();
        self.qual_index.clear();
        self.kinds.clear();
        self.qids.clear();
        self.timestamps.clear();
        self.seqs.clear();
        self.value_ends.clear();
        self.values.clear();
        self.estimate = 0;
    }
}

/// Appends `values` as one stream: a single value, fixed-width offsets
/// from the smallest (which decode without a dependency from one entry to
/// the next), or varints where those save more than an eighth of the bytes
/// (a few large values would widen every offset). A compacted time series
/// stores its kinds, qualifier ids, sequence numbers and timestamp deltas
/// as single values, and its value lengths as one byte each.
fn put_stream(out: &mut Vec<u8>, values: &[u64]) {
    let (min, max) = values.iter().fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let encoding = match max.wrapping_sub(min) {
        _ if values.is_empty() => Stream::Varints,
        0 => Stream::Same,
        1..=0xff => Stream::Offsets8,
        0x100..=0xffff => Stream::Offsets16,
        0x1_0000..=0xffff_ffff => Stream::Offsets32,
        _ => Stream::Varints,
    };
    let varint_bytes: usize = values.iter().map(|&v| varint_len(v)).sum();
    let packed_bytes = varint_len(min) + values.len() * encoding.width();
    // Offsets decode faster: they are kept unless varints save more than
    // one byte in eight.
    let shorter_as_varints = varint_bytes + values.len() / 8 < packed_bytes;
    let encoding = if shorter_as_varints { Stream::Varints } else { encoding };
    out.push(encoding as u8);
    match encoding {
        Stream::Varints => values.iter().for_each(|&v| put_varint(out, v)),
        Stream::Same => put_varint(out, min),
        fixed => {
            put_varint(out, min);
            for &v in values {
                out.extend_from_slice(&(v - min).to_le_bytes()[..fixed.width()]);
            }
        }
    }
}

/// Bytes of `v` as a varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Start offset of the last row in the row buffer.
fn row_start(rows: &[(usize, usize)]) -> usize {
    match rows.len() {
        0 | 1 => 0,
        n => rows[n - 2].0,
    }
}
