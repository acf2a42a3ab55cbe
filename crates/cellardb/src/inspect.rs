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
use crate::fs::Fs as _;
use crate::fs::MemFs;
pub use crate::key::{Entry, EntryKind, EntryRef, InternalKey};
pub use crate::manifest::{FILE_NAME as MANIFEST_FILE_NAME, LogMeta, ManifestState, Record as ManifestRecord, SstMeta};
pub use crate::model::{BatchEntry, FamilyMeta, RangeDrop, RowBatch, TableMeta};
pub use crate::sst::format::{FOOTER_LEN as SST_FOOTER_LEN, VERSION as SST_FORMAT_VERSION};
pub use crate::sst::{BlockHandle, BloomSummary, CheckReport, DecodedBlock, Footer, IndexEntry, Properties, SstReader};
use crate::sst::{SstOptions, SstOrigin, SstWriter};
use crate::wal::WalReader;
pub use crate::wal::{ReplayStats, TornTail, sized_in_units as log_sized_in_units};
use crate::{Error, Result, manifest, sst, wal};

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

/// What [`verify_database`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// SSTables the manifest lists, each opened and checked.
    pub ssts: usize,
    /// Their data blocks, each read and decoded.
    pub blocks: u64,
    /// Their entries.
    pub entries: u64,
    /// Live logs replayed.
    pub logs: usize,
    /// Their records.
    pub log_records: u64,
    /// Damage, each `Error::Corruption` (or `Error::Io` for a file that
    /// cannot be read) naming the file and offset: what an open would
    /// refuse, or what a read would meet.
    pub faults: Vec<Error>,
    /// What is there but harmless: files the next open deletes (an SSTable
    /// no manifest names, an obsolete or never-listed log), a torn tail the
    /// next open cuts.
    pub notes: Vec<String>,
}

/// Checks a whole database directory without opening it (and without
/// changing it), as LevelDB's and RocksDB's consistency checkers do:
///
/// - the manifest decodes;
/// - every SSTable it lists exists, is as long as it records, opens (footer,
///   index, filter, properties), reads and decodes block by block with its
///   entries in order, and holds the rows and sequence numbers the manifest
///   records for it;
/// - key order across files: the files of one family in one level from 2
///   down (from 1 down, if `level1_is_one_run`: a store only ever compacted
///   by the leveled strategy keeps level 1 so; the time-window strategy
///   keeps one run per window there, and the files stay after a change
///   of strategy, which compaction allows for) do not overlap in rows;
/// - the live logs pass the checks of an open (`docs/format/wal.md`,
///   "Recovery"), and every record decodes.
///
/// The files are read as they are: beside a live writer, one flushed or
/// compacted away meanwhile is reported missing. Check a checkpoint of a
/// live database instead.
///
/// # Errors
/// `Error::Corruption` if the manifest does not decode; `Error::Io` if it
/// or the directory cannot be read. Damage elsewhere is listed in the
/// report, every file checked.
pub fn verify_database(dir: &Path, level1_is_one_run: bool) -> Result<VerifyReport> {
    let fs = crate::fs::OsFs;
    let manifest_path = dir.join(manifest::FILE_NAME);
    let data = fs.read(&manifest_path).map_err(|e| Error::io(&manifest_path, e))?;
    let state = manifest::decode(&manifest_path, &data)?;
    let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    let mut report = VerifyReport::default();
    // What an open would do with each file: the live logs to replay, and
    // the leftovers it would delete.
    let mut leftovers = crate::RecoveryReport::default();
    let live_logs = crate::db::open::sort_files(&names, &state, &mut leftovers);
    for name in &leftovers.removed_files {
        report.notes.push(format!(
            "{name}: a leftover the next open deletes (an unlisted SSTable, an obsolete or never-listed log)"
        ));
    }
    let ours = |n: &str| {
        leftovers.removed_files.iter().any(|r| r == n)
            || state.ssts.iter().any(|m| sst::file_name(m.file) == n)
            || live_logs.iter().any(|&l| wal::file_name(l) == n)
            || matches!(n, "MANIFEST" | "LOCK")
    };
    for name in names.iter().filter(|n| !ours(n)) {
        report.notes.push(format!("{name}: not a file of cellardb's"));
    }
    for meta in &state.ssts {
        verify_sst(dir, meta, &mut report);
    }
    verify_runs(dir, &state, if level1_is_one_run { 1 } else { 2 }, &mut report);
    verify_logs(dir, &state, &live_logs, &mut report);
    Ok(report)
}

fn verify_sst(dir: &Path, meta: &SstMeta, report: &mut VerifyReport) {
    let fs = crate::fs::OsFs;
    let path = dir.join(sst::file_name(meta.file));
    let data = match fs.map(&path) {
        Ok(data) => data,
        Err(e) => return report.faults.push(Error::io(&path, e)),
    };
    if data.len() as u64 != meta.size {
        let what = format!("{} bytes, where the manifest records {}", data.len(), meta.size);
        return report.faults.push(Error::corruption(&path, (data.len() as u64).min(meta.size), what));
    }
    let reader = match SstReader::open_with_id(&path, data, meta.file) {
        Ok(reader) => reader,
        Err(e) => return report.faults.push(e),
    };
    report.ssts += 1;
    let props = reader.props();
    let recorded = (&meta.first_row, &meta.last_row, meta.min_seq, meta.max_seq, meta.store);
    if (&props.first_row, &props.last_row, props.min_seq, props.max_seq, props.store) != recorded {
        let what = format!(
            "its properties (rows {:?}..{:?}, seq {}..{}, store {}) differ from the manifest's record ({:?}..{:?}, seq {}..{}, store {})",
            props.first_row,
            props.last_row,
            props.min_seq,
            props.max_seq,
            props.store,
            meta.first_row,
            meta.last_row,
            meta.min_seq,
            meta.max_seq,
            meta.store
        );
        report.faults.push(Error::corruption(&path, 0, what));
    }
    let check = reader.check();
    report.blocks += check.blocks;
    report.entries += check.entries;
    report.faults.extend(check.faults);
}

/// The files of each family's levels from `first_level` down must not
/// overlap in rows.
fn verify_runs(dir: &Path, state: &ManifestState, first_level: u8, report: &mut VerifyReport) {
    let mut runs: std::collections::BTreeMap<(u32, u8), Vec<&SstMeta>> = std::collections::BTreeMap::new();
    for meta in state.ssts.iter().filter(|m| m.level >= first_level) {
        runs.entry((meta.store, meta.level)).or_default().push(meta);
    }
    for files in runs.values_mut() {
        files.sort_by(|a, b| a.first_row.cmp(&b.first_row));
        for pair in files.windows(2) {
            if pair[0].last_row >= pair[1].first_row {
                let what = format!(
                    "its rows overlap those of {} in the same level {} of the same family",
                    sst::file_name(pair[0].file),
                    pair[1].level
                );
                report.faults.push(Error::corruption(dir.join(sst::file_name(pair[1].file)), 0, what));
            }
        }
    }
}

fn verify_logs(dir: &Path, state: &ManifestState, live: &[u64], report: &mut VerifyReport) {
    let fs = crate::fs::OsFs;
    report.faults.extend(crate::db::open::missing_log(dir, state, live));
    for (i, &number) in live.iter().enumerate() {
        let path = dir.join(wal::file_name(number));
        let data = match fs.read(&path) {
            Ok(data) => data,
            Err(e) => {
                report.faults.push(Error::io(&path, e));
                continue;
            }
        };
        let listed = state.logs.iter().find(|l| l.number == number);
        match crate::db::open::replay_log(&path, &data, listed, i + 1 == live.len(), |_| {}) {
            Ok(replay) => {
                report.logs += 1;
                report.log_records += replay.records;
                if let Some(torn) = replay.torn_tail {
                    report.notes.push(format!(
                        "{}: a torn tail at offset {} ({}), which the next open cuts",
                        wal::file_name(number),
                        torn.offset,
                        torn.what
                    ));
                }
            }
            Err(e) => report.faults.push(e),
        }
    }
}
