//! Checking a database directory as recovery would, without opening it:
//! `verify_database` (every file), and `check_listed_log` (one log), which
//! `inspect` offers to tools. Recovery's own rules (`open.rs`) decide, so a
//! tool never works them out for itself.

use std::path::Path;

use crate::fs::Fs as _;
use crate::manifest::{self, LogMeta, ManifestState, SstMeta};
use crate::sst::{self, SstReader};
use crate::{Error, Result, wal};

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
/// `Error::NoDatabase` if `dir` holds no manifest; `Error::Corruption` if
/// the manifest does not decode; `Error::Io` if it or the directory cannot
/// be read. Damage elsewhere is listed in the report, every file checked.
pub fn verify_database(dir: &Path, level1_is_one_run: bool) -> Result<VerifyReport> {
    let fs = crate::fs::OsFs;
    let manifest_path = dir.join(manifest::FILE_NAME);
    let data = fs.read(&manifest_path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NoDatabase { path: dir.to_path_buf() },
        _ => Error::io(&manifest_path, e),
    })?;
    let state = manifest::decode(&manifest_path, &data)?;
    let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    let mut report = VerifyReport::default();
    // What an open would do with each file: the live logs to replay, and
    // the leftovers it would delete.
    let mut leftovers = super::RecoveryReport::default();
    let live_logs = super::open::sort_files(&names, &state, &mut leftovers);
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
    report.faults.extend(super::open::missing_log(dir, state, live));
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
        match super::open::replay_log(&path, &data, listed, i + 1 == live.len(), |_| {}) {
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

/// Whether recovery would accept `data`, the bytes of log `path`, as the
/// manifest lists it (`listed`): its header, and its length (a whole
/// number of units for a log being written, its closed length and only
/// zeros after for a closed one). `Ok` if it would.
///
/// # Errors
/// The `Error::Corruption` an open would refuse the log with, naming the
/// file and offset.
pub(crate) fn check_listed_log(path: &Path, data: &[u8], listed: &LogMeta) -> Result<()> {
    super::open::check_listed_log(path, data, listed).map(|_| ())
}
