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
/// Format version written after the magic. Version changes: 1 is the first.
pub const VERSION: u32 = 1;
/// Bytes before the first record: magic and version.
pub const FILE_HEADER_LEN: usize = 12;
/// Bytes of a record's header: header checksum, length, payload checksum.
pub const RECORD_HEADER_LEN: usize = 12;

/// The file name of log number `n`.
pub fn file_name(n: u64) -> String {
    format!("{n:06}.log")
}
