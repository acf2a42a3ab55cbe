//! The write-ahead log: one checksummed record per row mutation.
//!
//! The byte layout is specified in `docs/format/wal.md`. A record carries a
//! whole row mutation (every entry it writes, for every family), so replay
//! restores a mutation entirely or not at all. [`WalWriter`] appends groups of
//! records with one write (and one sync); [`WalReader`] replays a file and
//! tells a torn tail (cut and reported) from damage in the middle (an error).

mod reader;
mod record;
mod writer;

pub use reader::{ReplayStats, TornTail, WalReader};
pub use record::{LogEntry, RowRecord, decode_payload, encode_record, is_range_end};
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
