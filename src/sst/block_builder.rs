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

use std::collections::HashMap;

use bytes::Bytes;

use crate::coding::{put_bytes, put_varint, put_zigzag};
use crate::key::Entry;

/// Block flag: timestamps are stored divided by 1000 (all were whole milliseconds).
pub const FLAG_MILLIS: u8 = 1;

/// Bytes an entry costs in the estimate beyond its key parts and value.
const ENTRY_ESTIMATE: usize = 6;

/// Collects the entries of one block and encodes them.
#[derive(Debug, Default)]
pub struct BlockBuilder {
    entries: Vec<Entry>,
    estimate: usize,
}

impl BlockBuilder {
    /// Adds the next entry (callers keep entries in key order).
    pub fn add(&mut self, entry: &Entry) {
        let new_row = self.entries.last().is_none_or(|last| last.key.row != entry.key.row);
        self.estimate += ENTRY_ESTIMATE + entry.value.len() + entry.key.qualifier.len() / 4;
        if new_row {
            self.estimate += entry.key.row.len() + 2;
        }
        self.entries.push(entry.clone());
    }

    /// Roughly how many bytes the encoded block would take.
    pub fn estimated_size(&self) -> usize {
        self.estimate
    }

    /// The last entry added.
    pub fn last(&self) -> Option<&Entry> {
        self.entries.last()
    }

    /// Number of entries added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Encodes the entries added into `out` and resets the builder.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let entries = std::mem::take(&mut self.entries);
        self.estimate = 0;
        encode(&entries, out);
    }
}

fn encode(entries: &[Entry], out: &mut Vec<u8>) {
    let millis = entries.iter().all(|e| e.key.timestamp % 1000 == 0);
    let scale = if millis { 1000 } else { 1 };
    let (quals, qids) = qualifier_dictionary(entries);
    let rows = row_runs(entries);

    out.push(if millis { FLAG_MILLIS } else { 0 });
    put_varint(out, entries.len() as u64);
    put_varint(out, rows.len() as u64);
    put_varint(out, quals.len() as u64);
    let mut prev_row: &[u8] = &[];
    for (row, run) in &rows {
        let shared = common_prefix(prev_row, row);
        put_varint(out, shared as u64);
        put_bytes(out, &row[shared..]);
        put_varint(out, *run as u64);
        prev_row = row;
    }
    for q in &quals {
        put_bytes(out, q);
    }
    out.extend(entries.iter().map(|e| e.key.kind as u8));
    for &qid in &qids {
        put_varint(out, qid as u64);
    }
    let mut ts = DeltaByQualifier::new(quals.len());
    for (e, &qid) in entries.iter().zip(&qids) {
        put_zigzag(out, ts.delta(qid, e.key.timestamp / scale));
    }
    let mut seq = DeltaByQualifier::new(quals.len());
    for (e, &qid) in entries.iter().zip(&qids) {
        put_zigzag(out, seq.delta(qid, e.key.seq as i64));
    }
    for e in entries {
        put_varint(out, e.value.len() as u64);
    }
    for qid in 0..quals.len() {
        for (e, _) in entries.iter().zip(&qids).filter(|&(_, &q)| q == qid) {
            out.extend_from_slice(&e.value);
        }
    }
}

/// The block's distinct qualifiers in order of first appearance, and each
/// entry's index into them.
fn qualifier_dictionary(entries: &[Entry]) -> (Vec<Bytes>, Vec<usize>) {
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut quals = Vec::new();
    let mut qids = Vec::with_capacity(entries.len());
    for e in entries {
        let q: &[u8] = &e.key.qualifier;
        let id = *index.entry(q).or_insert_with(|| {
            quals.push(e.key.qualifier.clone());
            quals.len() - 1
        });
        qids.push(id);
    }
    (quals, qids)
}

/// Distinct rows in order, each with how many consecutive entries it has.
fn row_runs(entries: &[Entry]) -> Vec<(Bytes, usize)> {
    let mut runs: Vec<(Bytes, usize)> = Vec::new();
    for e in entries {
        match runs.last_mut() {
            Some((row, n)) if *row == e.key.row => *n += 1,
            _ => runs.push((e.key.row.clone(), 1)),
        }
    }
    runs
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Deltas against the previous value of the same qualifier, or against the
/// previous value of any qualifier for a qualifier's first entry.
pub(crate) struct DeltaByQualifier {
    prev: Vec<Option<i64>>,
    last: i64,
}

impl DeltaByQualifier {
    pub(crate) fn new(qualifiers: usize) -> Self {
        DeltaByQualifier { prev: vec![None; qualifiers], last: 0 }
    }

    /// The base a value of qualifier `qid` is stored relative to.
    pub(crate) fn base(&self, qid: usize) -> i64 {
        self.prev.get(qid).copied().flatten().unwrap_or(self.last)
    }

    /// Records `value` for `qid`.
    pub(crate) fn record(&mut self, qid: usize, value: i64) {
        if let Some(slot) = self.prev.get_mut(qid) {
            *slot = Some(value);
        }
        self.last = value;
    }

    fn delta(&mut self, qid: usize, value: i64) -> i64 {
        let d = value.wrapping_sub(self.base(qid));
        self.record(qid, value);
        d
    }
}
