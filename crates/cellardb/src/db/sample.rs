//! `sample_row_keys`: where to split a table into ranges of about equal
//! size, read from the SSTables' indexes alone.

use bytes::Bytes;

use super::Table;
use crate::{Error, Result};

/// The fewest bytes between two sampled keys.
const MIN_STEP: u64 = 64 << 10;
/// The most samples returned (besides the final one).
const MAX_SAMPLES: u64 = 100;

impl Table {
    /// Row keys that split the table into contiguous ranges of roughly
    /// equal size, each with the approximate bytes of the table before it,
    /// as Bigtable's `SampleRowKeys`: keys ascend, and the last entry is the
    /// empty key with the table's whole size. Computed from the SSTables'
    /// indexes (every data block's last key and stored size) without
    /// reading data; writes not yet flushed are not counted. Ranges are
    /// about 1/100 of the table, and at least 64 KiB.
    ///
    /// # Errors
    /// `Error::NotFound` if the table was deleted.
    pub fn sample_row_keys(&self) -> Result<Vec<(Bytes, u64)>> {
        let sv = self.db.core().view()?;
        let table = sv.schema.table_by_id(self.id).ok_or_else(|| Error::table_not_found(&self.name))?;
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
        Ok(samples)
    }
}
