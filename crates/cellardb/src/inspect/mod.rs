//! Reading cellardb's files one at a time, without opening a database: the
//! one surface for tools (`cellar dump` and its `--verify`), fuzzers and
//! tests, as LevelDB keeps `DumpFile` in its library.
//!
//! Each reader takes a file's path and its bytes (read or mapped by the
//! caller, so a fuzzer can hand it anything), checks what the format
//! promises (`docs/format/`), and returns records of this module's own:
//! owned, and `#[non_exhaustive]`, so that the engine's internal types
//! can change without changing them. A fault is `Error::Corruption`
//! naming the file and the byte offset where it was found; no input
//! makes a reader panic. Nothing here writes to a file.
//!
//! - SSTables: [`SstFile`] — properties, layout, the data blocks the index
//!   lists, each block's entries ([`SstFile::block`]), and
//!   [`SstFile::check`], which goes on past a bad block to report every
//!   fault; [`SstFile::recompressed_size`] says what the entries would
//!   take with other block sizes and compression.
//! - Logs: [`LogReader`] — every row batch with its offset, and how the log
//!   ends (intact, or a torn tail and where).
//! - Manifests: [`ManifestReader`] — every record with its offset, and
//!   [`read_manifest`] for the state they add up to.
//! - Recovery's own checks, without opening: [`verify_database`] (every
//!   file of a directory) and [`check_listed_log`] (one log, as the
//!   manifest lists it).
//! - The decoders alone, over bytes, for fuzzers and for tools that take
//!   files apart: [`decode_data_block`], [`decode_index_block`],
//!   [`decode_properties_block`], [`decode_sst_footer`] and
//!   [`decode_log_payload`].
//!
//! ```
//! use cellardb::inspect::{LogReader, ManifestReader, read_manifest};
//! use cellardb::{Db, GcRule, Mutation};
//!
//! # fn main() -> cellardb::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path())?;
//! db.create_table("t", [("cf", GcRule::none())])?.mutate_row("r", [Mutation::set_cell("cf", "q", 1000, "v")])?;
//! db.close()?;
//! let path = dir.path().join(cellardb::inspect::MANIFEST_FILE_NAME);
//! let data = std::fs::read(&path).unwrap();
//! assert_eq!(read_manifest(&path, &data)?.tables[0].name, "t");
//! assert!(ManifestReader::new(&path, &data)?.all(|record| record.is_ok()));
//! let state = read_manifest(&path, &data)?;
//! let log = dir.path().join(cellardb::inspect::log_file_name(state.log_number));
//! let bytes = std::fs::read(&log).unwrap();
//! let mut rows = Vec::new();
//! let end = LogReader::new(&log, &bytes).read(|_offset, batch| {
//!     rows.push(batch.row);
//!     Ok(())
//! })?;
//! assert_eq!((rows, end.torn_tail), (vec![b"r".to_vec()], None));
//! # Ok(()) }
//! ```

use std::path::Path;

mod entry;
mod log;
mod manifest;
mod sst;

pub use entry::{Entry, EntryKey, EntryKind};
pub use log::{LogBatch, LogEnd, LogEntry, LogReader, decode_log_payload};
pub use manifest::{
    FamilyInfo, LogInfo, MANIFEST_FILE_NAME, Manifest, ManifestReader, ManifestRecord, RangeDropInfo, SstInfo,
    TableInfo, read_manifest,
};
pub use sst::{
    BlockInfo, BlockSpan, DataBlock, SST_FOOTER_LEN, SST_FORMAT_VERSION, SstCheck, SstFile, SstLayout, SstProperties,
    SstSpans, decode_data_block, decode_index_block, decode_properties_block, decode_sst_footer,
};

use crate::Result;
pub use crate::db::verify::{VerifyReport, verify_database};

/// The file name of SSTable number `n` (`000012.sst`).
pub fn sst_file_name(n: u64) -> String {
    crate::sst::file_name(n)
}

/// The file name of log number `n` (`000013.log`).
pub fn log_file_name(n: u64) -> String {
    crate::wal::file_name(n)
}

/// Whether recovery would accept `data`, the bytes of log `path`, as the
/// manifest lists it (`listed`): its header, and its length (a whole
/// number of units for a log being written, its closed length and only
/// zeros after for a closed one). `Ok` if it would.
///
/// # Errors
/// The `Error::Corruption` an open would refuse the log with, naming the
/// file and offset.
pub fn check_listed_log(path: &Path, data: &[u8], listed: &LogInfo) -> Result<()> {
    crate::db::verify::check_listed_log(path, data, &listed.meta())
}
