//! Logs, one file at a time: every row batch and how the log ends
//! (`docs/format/wal.md`).

use std::path::Path;

use super::entry::Entry;
use crate::model::{BatchEntry, RowBatch};
use crate::wal::WalReader;
use crate::{Result, TornTail};

/// The row batches of a log file, in order, each with the offset of its
/// record.
#[derive(Debug, Clone, Copy)]
pub struct LogReader<'a> {
    path: &'a Path,
    data: &'a [u8],
}

impl<'a> LogReader<'a> {
    /// A reader of `data`, the bytes of the log file `path`.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Self {
        LogReader { path, data }
    }

    /// Calls `each` with every intact record's offset and row batch, then
    /// says how the log ends. A damaged tail (a write torn by a crash, or
    /// unwritten sectors power loss left) is reported in
    /// [`LogEnd::torn_tail`], as recovery would cut it.
    ///
    /// # Errors
    /// `Error::Corruption` for a bad header, damage followed by intact
    /// records, or a record that passes its checksum but does not decode;
    /// whatever `each` returns.
    pub fn read(&self, mut each: impl FnMut(u64, LogBatch) -> Result<()>) -> Result<LogEnd> {
        let reader = WalReader::new(self.path, self.data);
        let stats = reader.replay(true, |offset, payload| {
            let batch = RowBatch::decode(payload).map_err(|e| reader.payload_error(offset, e))?;
            each(offset, LogBatch::of(&batch))
        })?;
        Ok(LogEnd { records: stats.records, end_offset: stats.end_offset, torn_tail: stats.torn_tail })
    }
}

/// How a log ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogEnd {
    /// Intact records.
    pub records: u64,
    /// The offset just past the last intact record.
    pub end_offset: u64,
    /// The damage after it that recovery would cut, if any.
    pub torn_tail: Option<TornTail>,
}

/// One record of a log: the entries one mutation of one row wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogBatch {
    /// The row.
    pub row: Vec<u8>,
    /// The sequence number of the first entry; each next one is one more.
    pub first_seq: u64,
    /// The entries, in the order the mutation gave them.
    pub entries: Vec<LogEntry>,
}

impl LogBatch {
    fn of(batch: &RowBatch<'_>) -> LogBatch {
        let entries = batch.entries.iter().map(|e| LogEntry::of(batch.row, e)).collect();
        LogBatch { row: batch.row.to_vec(), first_seq: batch.first_seq, entries }
    }
}

/// One entry of a log record, with the store (the column family's
/// identity, as the manifest names it) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogEntry {
    /// The family's store id.
    pub store: u32,
    /// The entry, its key's row the batch's.
    pub entry: Entry,
}

impl LogEntry {
    fn of(row: &[u8], e: &BatchEntry<'_>) -> LogEntry {
        LogEntry { store: e.store, entry: Entry::of(&e.entry_ref(row)) }
    }
}

/// Decodes `bytes` as the payload of a log record: for fuzzers and for
/// tools that take logs apart.
///
/// # Errors
/// `Error::Corruption` in the file `(log record)`, at the offset in `bytes`
/// where the decoder gave up.
pub fn decode_log_payload(bytes: &[u8]) -> Result<LogBatch> {
    let batch = RowBatch::decode(bytes).map_err(|e| e.in_file(Path::new("(log record)")))?;
    Ok(LogBatch::of(&batch))
}
