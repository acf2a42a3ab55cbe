//! What `Table::sample_row_keys` answers: where to split a table into ranges of about equal
//! size, read from the SSTables' indexes alone.

use bytes::Bytes;

use crate::model::TableMeta;
use crate::version::SuperVersion;

/// The fewest bytes between two sampled keys.
const MIN_STEP: u64 = 64 << 10;
/// The most samples returned (besides the final one).
const MAX_SAMPLES: u64 = 100;

/// Row keys that split `table` into ranges of about equal stored size, by
/// the indexes of its files in `sv` (`Table::sample_row_keys`).
pub(super) fn sample_row_keys(sv: &SuperVersion, table: &TableMeta) -> Vec<(Bytes, u64)> {
    let mut blocks: Vec<(Bytes, u64)> = Vec::new();
    for family in &table.families {
        for file in sv.files_of(family.store) {
            let index = file.reader.index();
            blocks.extend(index.iter().map(|e| (e.last_key.row.clone(), u64::from(e.handle.stored_len))));
        }
    }
    blocks.sort_by(|a, b| a.0.cmp(&b.0));
    let total: u64 = blocks.iter().map(|b| b.1).sum();
    let step = (total / MAX_SAMPLES).max(MIN_STEP);
    let mut samples: Vec<(Bytes, u64)> = Vec::new();
    let mut offset = 0;
    let mut next = step;
    for (row, bytes) in blocks {
        offset += bytes;
        if offset >= next && offset < total && samples.last().is_none_or(|(k, _)| *k != row) {
            samples.push((row, offset));
            next = offset + step;
        }
    }
    samples.push((Bytes::new(), total));
    samples
}
