//! Opening a database: lock, manifest, SSTables, log replay, cleanup.
//!
//! Recovery, in order:
//! 1. take the `LOCK` file, or fail with `Error::Locked`;
//! 2. read the manifest (none: a new database) and open every live SSTable;
//! 3. delete what no manifest names: SSTables of a flush that crashed before
//!    its manifest, a half-written `MANIFEST.tmp`, logs already flushed;
//! 4. replay the remaining logs in order into a memtable (a torn tail of the
//!    last log is cut — the file truncated there — and reported; damage
//!    anywhere else is an error);
//! 5. flush what was replayed, start a new log, write the manifest, and
//!    delete the replayed logs.
//!
//! Every step can be interrupted by a crash and redone from the start.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Condvar, Mutex, RwLock};

use super::flush::parse_number;
use super::stats::{Counters, RecoveryReport};
use super::version::{Schema, SstHandle, SuperVersion};
use super::{CommitState, Core, EngineState};
use crate::cache::BlockCache;
use crate::manifest::{self, ManifestState};
use crate::memtable::Memtable;
use crate::options::{Durability, Options, RecoveryMode};
use crate::sst::{self, SstReader};
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
    let cache = Arc::new(BlockCache::new(opts.block_cache_size));
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

    let mut handles = HashMap::new();
    for meta in &state.ssts {
        let path = dir.join(sst::file_name(meta.file));
        let data = fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let reader = SstReader::open(&path, data, meta.file)?;
        handles.insert(meta.file, Arc::new(SstHandle::new(reader, meta.clone(), fs.clone(), cache.clone())));
    }

    let replayed = Arc::new(Memtable::new(0));
    let mut last_seq = state.last_seq;
    for (i, &number) in logs.iter().enumerate() {
        let path = dir.join(wal::file_name(number));
        let data = fs.read(&path).map_err(|e| Error::io(&path, e))?;
        let tolerate = opts.recovery == RecoveryMode::TolerateCorruptTail && i + 1 == logs.len();
        let stats = WalReader::new(&path, &data).replay(tolerate, |record| {
            last_seq = last_seq.max(record.entries.iter().map(|e| e.seq).max().unwrap_or(0));
            replayed.insert(std::slice::from_ref(&record));
            Ok(())
        })?;
        report.logs_replayed += 1;
        report.records_replayed += stats.records;
        if let Some(torn) = stats.torn_tail {
            // Make the cut permanent before anything else happens: were this
            // open to fail later, this log would no longer be the newest, and
            // its damage would then read as corruption.
            fs.truncate(&path, torn.offset).map_err(|e| Error::io(&path, e))?;
            log::warn!(
                "cellardb: log {} ends in a damaged record at offset {} ({}); cut {} bytes there",
                torn.file.display(),
                torn.offset,
                torn.what,
                torn.dropped_bytes
            );
            report.torn_tails.push(torn);
        }
    }

    let log_number = state.next_file;
    state.next_file += 1;
    let wal = WalWriter::create(&*fs, dir, log_number, opts.memtable_size)?;
    if opts.durability == Durability::Sync {
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mem = Arc::new(Memtable::new(log_number));
    let sv = SuperVersion {
        mem: mem.clone(),
        imm: Vec::new(),
        files: HashMap::new(),
        drops: HashMap::new(),
        schema: Arc::new(Schema { tables: state.tables.clone() }),
    };
    let core = Core {
        dir: dir.to_path_buf(),
        fs,
        cache,
        _lock: lock,
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
    core.finish_recovery(&replayed, log_number, last_seq)?;
    Ok(core)
}

/// Sorts the directory's files: returns the logs to replay in order, and
/// lists in the report the files to remove.
fn sort_files(names: &[String], state: &ManifestState, report: &mut RecoveryReport) -> Vec<u64> {
    let mut logs = Vec::new();
    for name in names {
        if let Some(n) = parse_number(name, ".log") {
            if n >= state.log_number {
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

impl Core {
    /// Flushes what replay recovered, records the new log in the manifest and
    /// deletes the replayed logs.
    fn finish_recovery(&self, replayed: &Arc<Memtable>, log_number: u64, last_seq: u64) -> Result<()> {
        let schema = self.current().schema.clone();
        let outputs = if replayed.is_empty() { Vec::new() } else { self.write_tables(replayed, &schema)? };
        let mut st = self.state.lock();
        let mut next = st.manifest.clone();
        next.ssts.extend(outputs.iter().map(|h| h.meta.clone()));
        next.log_number = log_number;
        next.last_seq = last_seq;
        manifest::write(&*self.fs, &self.dir, &next)?;
        st.manifest = next;
        for h in outputs {
            st.handles.insert(h.meta.file, h);
        }
        self.install(&st, self.current().mem.clone());
        drop(st);
        self.remove_logs_below(log_number);
        Ok(())
    }
}
