//! Reading cellardb's files one at a time, without opening a database: the
//! one surface for tools (`cellar dump` and its `--verify`), fuzzers and
//! tests, as LevelDB keeps `DumpFile` in its library.
//!
//! Each reader takes a file's path and its bytes (read or mapped by the
//! caller, so a fuzzer can hand it anything), checks what the format
//! promises (`docs/format/`), and returns structured records. A fault is
//! `Error::Corruption` naming the file and the byte offset where it was
//! found; no input makes a reader panic. Nothing here writes to a file.
//!
//! - SSTables: [`SstReader`] — properties, footer, index, each data block's
//!   entries ([`SstReader::read_block`]), and [`SstReader::check`], which
//!   goes on past a bad block to report every fault; [`recompress`] says
//!   what the entries would take with other block sizes and compression.
//! - Logs: [`LogReader`] — every row batch with its offset, and how the log
//!   ends (intact, or a torn tail and where).
//! - Manifests: [`ManifestReader`] — every record with its offset, and
//!   [`read_manifest`] for the state they add up to.
//! - Recovery's own checks, without opening: [`verify_database`] (every
//!   file of a directory) and [`check_listed_log`] (one log, as the
//!   manifest lists it).
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
//!     rows.push(batch.row.to_vec());
//!     Ok(())
//! })?;
//! assert_eq!((rows, end.torn_tail), (vec![b"r".to_vec()], None));
//! # Ok(()) }
//! ```

use std::path::Path;

use crate::Compression;
pub use crate::db::verify::{VerifyReport, check_listed_log, verify_database};
use crate::fs::MemFs;
pub use crate::key::{Entry, EntryKind, EntryRef, InternalKey};
pub use crate::manifest::{FILE_NAME as MANIFEST_FILE_NAME, LogMeta, ManifestState, Record as ManifestRecord, SstMeta};
pub use crate::model::{BatchEntry, FamilyMeta, RangeDrop, RowBatch, TableMeta};
pub use crate::sst::format::{FOOTER_LEN as SST_FOOTER_LEN, VERSION as SST_FORMAT_VERSION};
pub use crate::sst::{BlockHandle, BloomSummary, CheckReport, DecodedBlock, Footer, IndexEntry, Properties, SstReader};
use crate::sst::{SstOptions, SstOrigin, SstWriter};
use crate::wal::WalReader;
pub use crate::wal::{ReplayStats, TornTail, sized_in_units as log_sized_in_units};
use crate::{Result, manifest};

/// The file name of SSTable number `n` (`000012.sst`).
pub fn sst_file_name(n: u64) -> String {
    crate::sst::file_name(n)
}

/// The file name of log number `n` (`000013.log`).
pub fn log_file_name(n: u64) -> String {
    crate::wal::file_name(n)
}

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
    /// [`ReplayStats::torn_tail`], as recovery would cut it.
    ///
    /// # Errors
    /// `Error::Corruption` for a bad header, damage followed by intact
    /// records, or a record that passes its checksum but does not decode;
    /// whatever `each` returns.
    pub fn read(&self, mut each: impl FnMut(u64, RowBatch<'a>) -> Result<()>) -> Result<ReplayStats> {
        let reader = WalReader::new(self.path, self.data);
        reader.replay(true, |offset, payload| {
            let batch = RowBatch::decode(payload).map_err(|e| reader.payload_error(offset, e))?;
            each(offset, batch)
        })
    }
}

/// The records of a manifest file, in order, each with its offset; checked
/// as opening a database checks them. After an error it yields nothing more.
pub struct ManifestReader<'a> {
    path: &'a Path,
    records: manifest::Records<'a>,
}

impl<'a> ManifestReader<'a> {
    /// A reader of `data`, the bytes of the manifest file `path`.
    ///
    /// # Errors
    /// `Error::Corruption` if the magic or the format version is not a
    /// manifest's.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Result<Self> {
        let records = manifest::Records::new(data).map_err(|e| e.in_file(path))?;
        Ok(ManifestReader { path, records })
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.records.version()
    }
}

impl Iterator for ManifestReader<'_> {
    type Item = Result<(u64, ManifestRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.records.next()?.map_err(|e| e.in_file(self.path)))
    }
}

/// The state the manifest file `path`, whose bytes are `data`, records.
///
/// # Errors
/// `Error::Corruption` at the offset of the first bad record.
pub fn read_manifest(path: &Path, data: &[u8]) -> Result<ManifestState> {
    manifest::decode(path, data)
}

/// The size of the SSTable `reader`'s entries written again, in memory,
/// with `block_size` bytes per block and `compression`: what
/// `cellar dump sst --recompress` reports, as RocksDB's `sst_dump
/// --command=recompress` does.
///
/// # Errors
/// `Error::Corruption` if a block of `reader` does not read;
/// `Error::InvalidArgument` for a block size of 0.
pub fn recompress(reader: &SstReader, block_size: usize, compression: Compression) -> Result<u64> {
    if block_size == 0 {
        return Err(crate::Error::InvalidArgument("a block size must be positive".into()));
    }
    let fs = MemFs::new();
    let path = Path::new("recompressed.sst");
    let p = reader.props();
    let origin = SstOrigin { family: &p.family, store: p.store, created_micros: p.created_micros };
    let mut w = SstWriter::create(&fs, path, origin, SstOptions { block_size, compression })?;
    for i in 0..reader.index().len() {
        reader.read_block(i)?.try_for_each_entry(|e| w.add(e))?;
    }
    Ok(w.finish()?.file_size)
}
