//! The write-ahead log: a file of checksummed records, one per row batch.
//!
//! The byte layout is specified in `docs/format/wal.md`. The log frames
//! opaque payloads ([`frame`]); the write path puts one encoded row batch
//! (`model::batch`) in each, so replay restores a row mutation entirely or
//! not at all. [`WalWriter`] appends groups of records with one write (and
//! one sync); [`WalReader`] walks a file and tells a torn tail (cut and
//! reported) from damage in the middle (an error).

mod frame;
mod reader;
mod writer;

pub use frame::append_record;
pub use reader::{ReplayStats, TornTail, WalReader};
pub use writer::WalWriter;

/// First bytes of every log file.
pub const MAGIC: &[u8; 8] = b"CELLARWL";
/// Format version written after the magic. Version changes: 1 is the
/// first; 2 promises that the file, while it is being written, is a whole
/// number of [`crate::fs::LOG_SIZE_UNIT`]s long (same bytes otherwise).
/// Both are read.
pub const VERSION: u32 = 2;
/// The oldest version read.
pub const OLDEST_VERSION: u32 = 1;
/// Bytes before the first record: magic and version.
pub const FILE_HEADER_LEN: usize = 12;
/// Bytes of a record's header: header checksum, length, payload checksum.
pub const RECORD_HEADER_LEN: usize = 12;

/// Whether a log file starting with `data` was written by a version that
/// keeps it a whole number of [`crate::fs::LOG_SIZE_UNIT`]s long until it
/// is closed (version 2 on).
pub fn sized_in_units(data: &[u8]) -> bool {
    data.get(8..12).is_some_and(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]) >= 2)
}

/// The file name of log number `n`.
pub fn file_name(n: u64) -> String {
    format!("{n:06}.log")
}
