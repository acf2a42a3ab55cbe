//! Opening a database: lock, manifest, SSTables, log replay, cleanup.
//!
//! Recovery, in order:
//! 1. take the `LOCK` file, or fail with `Error::Locked`;
//! 2. read the manifest (none: a new database) and open every live SSTable;
//! 3. delete what no manifest names: SSTables of a flush that crashed before
//!    its manifest, a half-written `MANIFEST.tmp`, logs already flushed, and
//!    logs the manifest never listed (their creation failed or was cut
//!    short before any record was written to them);
//! 4. replay the remaining logs in order into a memtable (a torn tail of the
//!    last log is cut — zeroed, the file keeping its size — and reported;
//!    damage anywhere else is an error);
//! 5. flush what was replayed, start a new log, write the manifest, and
//!    delete the replayed logs.
//!
//! Every step can be interrupted by a crash and redone from the start.
//!
//! A read-only open ([`open_read_only`]) does steps 2 and 4 only, into
//! memory, and takes no lock: it reads the manifest, opens its SSTables,
//! replays the live logs, and reads the manifest again, starting over if a
//! writer changed it meanwhile (a flush may have deleted a log before it was
//! listed). With the manifest unchanged, every log it names was still there
//! when listed, so the view is the files plus a prefix of the logs: a prefix
//! of the writer's history. A directory without a manifest is not a
//! database: `Error::NotFound`, at once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Condvar, Mutex, RwLock};

use super::flush::parse_number;
use super::stats::{Counters, RecoveryReport};
use super::{CommitState, Core, EngineState};
use crate::fs::{FileLock, Fs, LOG_SIZE_UNIT};
use crate::manifest::{self, LogMeta, ManifestState};
use crate::memtable::Memtable;
use crate::model::RowBatch;
use crate::options::{Durability, Options, RecoveryMode};
use crate::sst::{self, SstBlockCache, SstReader};
use crate::version::{Schema, SstHandle, SuperVersion};
use crate::wal::{self, WalReader, WalWriter};
use crate::{Error, Result};

/// Name of the lock file.
const LOCK_NAME: &str = "LOCK";

/// Opens the database in `dir`, recovering whatever a crash left.
pub(super) fn recover(dir: &Path, opts: Options) -> Result<Core> {
    let fs = opts.fs.clone();
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock_path = dir.join(LOCK_NAME);
    let lock = fs.try_lock(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
    let lock = lock.ok_or_else(|| Error::Locked { path: dir.to_path_buf() })?;
    let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    let mut state = match manifest::read(&*fs, dir)? {
        Some(state) => state,
        None if names.iter().any(|n| parse_number(n, ".sst").is_some()) => {
            // Without a manifest every table would look orphaned and be deleted.
            let what = "missing, yet the directory holds SSTables: refusing to treat them as orphans";
            return Err(Error::corruption(dir.join(manifest::FILE_NAME), 0, what));
        }
        None => ManifestState { next_file: 1, next_store: 1, next_table: 1, ..ManifestState::default() },
    };
    let cache = Arc::new(SstBlockCache::new(opts.block_cache_size));
    let mut report = RecoveryReport::default();
    let logs = sort_files(&names, &state, &mut report);
    for name in &report.removed_files {
        if let Err(e) = fs.remove(&dir.join(name)) {
            log::warn!("cellardb: could not remove {name}: {e}");
        }
    }
    let max_seen =
        names.iter().filter_map(|n| parse_number(n, ".log").or_else(|| parse_number(n, ".sst"))).max().unwrap_or(0);
    state.next_file = state.next_file.max(max_seen + 1);

    let handles = open_tables(dir, &fs, &state, &cache)?;

    let replayed = Arc::new(Memtable::new(0));
    let mut last_seq = state.last_seq;
    if let Some((torn, damage_end)) = replay_logs(dir, &opts, &state, &logs, &replayed, &mut last_seq, &mut report)? {
        // Make the cut permanent before anything else happens: were this
        // open to fail later, this log would no longer be the newest, and
        // its damage would then read as corruption. Zeroed, not truncated:
        // a log being written keeps its size in whole units, which is how
        // recovery tells a cut from outside.
        let path = &torn.file;
        fs.zero_range(path, torn.offset..damage_end).map_err(|e| Error::io(path, e))?;
        log::warn!(
            "cellardb: log {} ends in a damaged record at offset {} ({}); cut {} bytes there",
            torn.file.display(),
            torn.offset,
            torn.what,
            torn.dropped_bytes
        );
        report.torn_tails.push(torn);
    }

    let log_number = state.next_file;
    state.next_file += 1;
    let wal = WalWriter::create(&*fs, dir, log_number, opts.memtable_size)?;
    if opts.durability == Durability::Sync {
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    let parts = Parts { state, handles, cache, report, last_seq };
    let core = Core::assemble(dir, opts, Some(lock), Some(wal), Arc::new(Memtable::new(log_number)), parts);
    core.finish_recovery(&replayed, log_number, last_seq)?;
    Ok(core)
}

/// What an open gathered before the engine starts.
struct Parts {
    state: ManifestState,
    handles: HashMap<u64, Arc<SstHandle>>,
    cache: Arc<SstBlockCache>,
    report: RecoveryReport,
    last_seq: u64,
}

impl Core {
    /// The engine over `parts`, with `mem` taking writes (or, read-only,
    /// holding what the logs replayed) and the view published.
    fn assemble(
        dir: &Path,
        opts: Options,
        lock: Option<FileLock>,
        wal: Option<WalWriter>,
        mem: Arc<Memtable>,
        parts: Parts,
    ) -> Core {
        let Parts { state, handles, cache, report, last_seq } = parts;
        let schema = Arc::new(Schema { tables: state.tables.clone() });
        let sv = SuperVersion::new((mem.clone(), Vec::new()), HashMap::new(), HashMap::new(), schema);
        let core = Core {
            dir: dir.to_path_buf(),
            fs: opts.fs.clone(),
            cache,
            read_only: lock.is_none(),
            lock: Mutex::new(lock),
            commit: Mutex::new(CommitState {
                wal,
                mem: mem.clone(),
                next_seq: last_seq + 1,
                poisoned: None,
                encoded: Vec::new(),
            }),
            queue: Mutex::new(super::write::WriteQueue::default()),
            queue_cv: Condvar::new(),
            state: Mutex::new(EngineState {
                manifest: state,
                handles,
                imm: Vec::new(),
                bg_error: None,
                shutting_down: false,
                busy: std::collections::HashSet::new(),
                compaction_requested: true,
            }),
            state_cv: Condvar::new(),
            current: RwLock::new(Arc::new(sv)),
            visible_seq: AtomicU64::new(last_seq),
            closed: AtomicBool::new(false),
            bg_failed: AtomicBool::new(false),
            l0_files: std::sync::atomic::AtomicUsize::new(0),
            recovery: report,
            counters: Counters::default(),
            opts,
        };
        core.install(&core.state.lock(), mem);
        core
    }

    /// Flushes what replay recovered, records the new log in the manifest and
    /// deletes the replayed logs.
    fn finish_recovery(&self, replayed: &Arc<Memtable>, log_number: u64, last_seq: u64) -> Result<()> {
        let schema = self.current().schema.clone();
        let outputs = if replayed.is_empty() { Vec::new() } else { self.write_tables(replayed, &schema)? };
        let mut st = self.state.lock();
        self.change_manifest(&mut st, |next| {
            next.ssts.extend(outputs.iter().map(|h| h.meta.clone()));
            next.log_number = log_number;
            // Every log replayed is flushed now: the new one is the only live log.
            next.logs = vec![LogMeta::open(log_number)];
            next.last_seq = last_seq;
        })?;
        for h in outputs {
            st.handles.insert(h.meta.file, h);
        }
        self.install(&st, self.current().mem.clone());
        drop(st);
        self.remove_logs_below(log_number);
        Ok(())
    }
}

/// How many times a read-only open gathers its view before giving up on a
/// writer that keeps changing the manifest under it.
const READ_ONLY_ATTEMPTS: u32 = 20;

/// Opens the database in `dir` without changing anything in it.
pub(super) fn open_read_only(dir: &Path, opts: Options) -> Result<Core> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match gather_read_only(dir, &opts) {
            Ok(Some((parts, mem))) => return Ok(Core::assemble(dir, opts, None, None, mem, parts)),
            // The writer flushed or compacted meanwhile: gather again.
            Ok(None) if attempt < READ_ONLY_ATTEMPTS => {}
            Err(e) if attempt < READ_ONLY_ATTEMPTS && may_be_a_race(&e) => {}
            Ok(None) => {
                let what = format!("the manifest changed {attempt} times while the view was gathered");
                return Err(Error::io(dir.join(manifest::FILE_NAME), std::io::Error::other(what)));
            }
            // Given up on a race, the error says so, as the case above
            // does: the file it last met missing is a symptom, not the fault.
            Err(e) if may_be_a_race(&e) => {
                let what =
                    format!("a writer changed the database {attempt} times while the view was gathered (last: {e})");
                return Err(Error::io(dir.join(manifest::FILE_NAME), std::io::Error::other(what)));
            }
            Err(e) => return Err(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(5 * u64::from(attempt)));
    }
}

/// An error a concurrent writer can cause while a view is gathered: a file
/// deleted by a flush or compaction, or a log record being written.
fn may_be_a_race(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::Corruption { file, .. } => parse_number(&file_name_of(file), ".log").is_some(),
        _ => false,
    }
}

fn file_name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads the manifest, opens its SSTables and replays the live logs, then
/// reads the manifest again: `None` if it changed meanwhile (a flush may
/// then have deleted a log before it was listed, and the view would not be
/// a prefix of history).
fn gather_read_only(dir: &Path, opts: &Options) -> Result<Option<(Parts, Arc<Memtable>)>> {
    let fs = &opts.fs;
    let manifest_path = dir.join(manifest::FILE_NAME);
    let before = fs.read(&manifest_path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => not_a_database(dir),
        _ => Error::io(&manifest_path, e),
    })?;
    let state = manifest::decode(&manifest_path, &before)?;
    let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    let mut logs: Vec<u64> =
        names.iter().filter_map(|n| parse_number(n, ".log")).filter(|&n| is_live_log(&state, n)).collect();
    logs.sort_unstable();
    let cache = Arc::new(SstBlockCache::new(opts.block_cache_size));
    let handles = open_tables(dir, fs, &state, &cache)?;
    let mem = Arc::new(Memtable::new(0));
    let mut last_seq = state.last_seq;
    let mut report = RecoveryReport::default();
    // A torn tail here is most likely a record being written: left as it is.
    let replayed = replay_logs(dir, opts, &state, &logs, &mem, &mut last_seq, &mut report);
    let replayed = replayed.map(|torn| torn.map(|(torn, _)| torn));
    let after = fs.read(&manifest_path).map_err(|e| Error::io(&manifest_path, e))?;
    if after != before {
        // A flush or switch meanwhile may have deleted or closed a log
        // after it was listed: what replay met then proves nothing.
        return Ok(None);
    }
    report.torn_tails.extend(replayed?);
    Ok(Some((Parts { state, handles, cache, report, last_seq }, mem)))
}

/// A directory with no manifest (or no directory): not a database, which a
/// read-only open may not create. Not retried: a writer replaces its
/// manifest by a rename, so once a database exists its manifest never goes
/// missing.
fn not_a_database(dir: &Path) -> Error {
    Error::NoDatabase { path: dir.to_path_buf() }
}

/// Replays `logs` in order into `into`, raising `last_seq` to the highest
/// sequence number met and counting what was replayed in `report`. Returns
/// the torn tail of the newest log, which the recovery mode may tolerate,
/// with the end of its last byte that is not zero.
///
/// Where the manifest lists the live logs, each listed log must be
/// among `logs`, and begin with its header; a log it records as closed must
/// hold intact records up to exactly its closed length, and nothing but
/// zeros after it; a log being written must be a whole number of
/// [`LOG_SIZE_UNIT`]s long. Otherwise the writes it held are lost, which is
/// `Error::Corruption`, not a torn tail, whatever the mode.
fn replay_logs(
    dir: &Path,
    opts: &Options,
    manifest: &ManifestState,
    logs: &[u64],
    into: &Memtable,
    last_seq: &mut u64,
    report: &mut RecoveryReport,
) -> Result<Option<(wal::TornTail, u64)>> {
    if let Some(missing) = missing_log(dir, manifest, logs) {
        return Err(missing);
    }
    let mut torn = None;
    for (i, &number) in logs.iter().enumerate() {
        let path = dir.join(wal::file_name(number));
        let data = opts.fs.read(&path).map_err(|e| Error::io(&path, e))?;
        let listed = manifest.logs.iter().find(|l| l.number == number);
        let newest = opts.recovery == RecoveryMode::TolerateCorruptTail && i + 1 == logs.len();
        let stats = replay_log(&path, &data, listed, newest, |batch| {
            *last_seq = (*last_seq).max(batch.entries.iter().map(|e| e.seq).max().unwrap_or(0));
            into.insert(std::slice::from_ref(&batch));
        })?;
        report.logs_replayed += 1;
        report.records_replayed += stats.records;
        torn = stats.torn_tail.map(|t| (t, data.iter().rposition(|&b| b != 0).map_or(0, |i| i as u64 + 1)));
    }
    Ok(torn)
}

/// The first log the manifest lists as live that is not among `logs` (the
/// live logs in the directory), as the corruption it is.
pub(super) fn missing_log(dir: &Path, manifest: &ManifestState, logs: &[u64]) -> Option<Error> {
    let missing = manifest.logs.iter().find(|l| l.number >= manifest.log_number && !logs.contains(&l.number))?;
    let what = "the manifest lists this log as live, and it is missing: the writes it held are lost";
    Some(Error::corruption(dir.join(wal::file_name(missing.number)), 0, what))
}

/// Replays the log file `path`, whose bytes are `data`, into `apply`,
/// record by record, as recovery does: checked against `listed`, its
/// record in the manifest if it has one (`check_listed_log`, and a closed
/// log's records must end at its length), its torn tail tolerated only if
/// `may_be_torn` and the log is not recorded closed.
pub(super) fn replay_log(
    path: &Path,
    data: &[u8],
    listed: Option<&LogMeta>,
    may_be_torn: bool,
    mut apply: impl FnMut(RowBatch<'_>),
) -> Result<wal::ReplayStats> {
    let records = match listed {
        Some(log) => check_listed_log(path, data, log)?,
        None => data,
    };
    let closed = listed.is_some_and(|l| l.closed_size.is_some());
    let reader = WalReader::new(path, records);
    let stats = reader.replay(may_be_torn && !closed, |offset, payload| {
        apply(RowBatch::decode(payload).map_err(|e| reader.payload_error(offset, e))?);
        Ok(())
    })?;
    if closed && stats.end_offset != records.len() as u64 {
        let what = format!(
            "a log closed at {} bytes holds records up to offset {} only: zeroed after it",
            records.len(),
            stats.end_offset
        );
        return Err(Error::corruption(path, stats.end_offset, what));
    }
    Ok(stats)
}

/// The part of `data`, the file of `log`, that holds its records: the
/// whole file for a log being written (its header checked, and its size, a
/// whole number of units for a version that keeps it so), the bytes up to
/// its closed length for a closed one.
pub(super) fn check_listed_log<'a>(path: &Path, data: &'a [u8], log: &LogMeta) -> Result<&'a [u8]> {
    if !data.starts_with(wal::MAGIC) {
        let what = "the manifest lists this log, and it has no header: emptied or overwritten";
        return Err(Error::corruption(path, 0, what));
    }
    if data.len() < wal::FILE_HEADER_LEN {
        // Listed only once its header was synced.
        let what = "the manifest lists this log, and its header is cut short";
        return Err(Error::corruption(path, data.len() as u64, what));
    }
    let Some(size) = log.closed_size else {
        if wal::sized_in_units(data) && !data.len().is_multiple_of(LOG_SIZE_UNIT) {
            let what = format!(
                "a log being written is {} bytes long, not a whole number of {} KiB units: cut short from \
                 outside the engine, and the writes after the cut are lost",
                data.len(),
                LOG_SIZE_UNIT >> 10
            );
            return Err(Error::corruption(path, data.len() as u64, what));
        }
        return Ok(data);
    };
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if data.len() < size {
        let what = format!("a log closed at {size} bytes is {} bytes long: cut short", data.len());
        return Err(Error::corruption(path, data.len() as u64, what));
    }
    // A crash between the close and the trim leaves the preallocated zeros.
    if let Some(at) = data[size..].iter().position(|&b| b != 0) {
        let what = format!("bytes after the end of a log closed at {size} bytes");
        return Err(Error::corruption(path, (size + at) as u64, what));
    }
    Ok(&data[..size])
}

/// Opens every SSTable the manifest lists.
fn open_tables(
    dir: &Path,
    fs: &Arc<dyn Fs>,
    state: &ManifestState,
    cache: &Arc<SstBlockCache>,
) -> Result<HashMap<u64, Arc<SstHandle>>> {
    let mut handles = HashMap::new();
    for meta in &state.ssts {
        let path = dir.join(sst::file_name(meta.file));
        let data = fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let reader = SstReader::open_with_id(&path, data, meta.file)?;
        handles.insert(meta.file, Arc::new(SstHandle::new(reader, meta.clone(), fs.clone(), cache.clone())));
    }
    Ok(handles)
}

/// Whether log `number` may hold unflushed writes: numbered at or above the
/// manifest's log number and, where the manifest lists the live logs,
/// listed. A log is listed before anything is written to it, so one the
/// list does not name (its creation failed, or the process died before the
/// manifest listed it) holds no acknowledged write, whatever its bytes.
fn is_live_log(state: &ManifestState, number: u64) -> bool {
    number >= state.log_number && (!state.logs_tracked || state.logs.iter().any(|l| l.number == number))
}

/// Sorts the directory's files: returns the logs to replay in order, and
/// lists in the report the files to remove.
pub(super) fn sort_files(names: &[String], state: &ManifestState, report: &mut RecoveryReport) -> Vec<u64> {
    let mut logs = Vec::new();
    for name in names {
        if let Some(n) = parse_number(name, ".log") {
            if is_live_log(state, n) {
                logs.push(n);
            } else {
                report.removed_files.push(name.clone());
            }
        } else if let Some(n) = parse_number(name, ".sst") {
            if !state.ssts.iter().any(|s| s.file == n) {
                report.removed_files.push(name.clone());
            }
        } else if name == manifest::TEMP_NAME {
            report.removed_files.push(name.clone());
        }
    }
    logs.sort_unstable();
    logs
}

#[cfg(test)]
mod format_agreement {
    /// The manifest states a log's header length for itself (to import no
    /// other format); it must be the log's.
    #[test]
    fn the_manifest_knows_the_logs_header_length() {
        assert_eq!(crate::manifest::LOG_HEADER_LEN, crate::wal::FILE_HEADER_LEN as u64);
    }
}
