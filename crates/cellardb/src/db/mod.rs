//! The engine: a database directory opened for reading and writing.
//!
//! Split by path: [`open`] (recovery), [`write`] (group commit into log and
//! memtable), [`flush`] (memtables to SSTables on a background thread),
//! [`admin`] (tables and families), [`stats`]. A read takes a snapshot
//! here and is `crate::read`'s from then on. `docs/architecture.md`
//! follows a write and a read through them. [`Core`]'s methods are split
//! the same way, one path a file (as RocksDB splits its `DBImpl`); its
//! locks and their order are stated where it is defined. `Db`'s methods are
//! here, but for the admin surface (`admin.rs`, as Bigtable's clients keep
//! a table admin client apart); `Table`'s are all in `table.rs`.

mod admin;
mod atomic;
mod checkpoint;
mod compact;
mod flush;
mod open;
mod sample;
mod stats;
mod table;
pub(crate) mod verify;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub use stats::{FamilyStats, LevelStats, RecoveryReport, Stats, TableStats};
pub use table::Table;

use crate::fs::{FileLock, Fs};
use crate::manifest::{self, ManifestState};
use crate::memtable::Memtable;
use crate::model::RangeDrop;
use crate::options::{Durability, Options};
use crate::sst::SstBlockCache;
use crate::version::{Schema, SstHandle, SuperVersion};
use crate::wal::WalWriter;
use crate::{Error, Result};
use write::WriteQueue;

/// An open database. Cheap to clone; every clone is the same database.
/// Background work stops when the last clone (and the last [`Table`]) is
/// dropped, or at [`Db::close`].
#[derive(Clone)]
pub struct Db {
    handle: Arc<DbHandle>,
}

/// Owns the background threads; dropping it stops the engine.
struct DbHandle {
    core: Arc<Core>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The state shared by every handle and the background threads.
///
/// # Locks
///
/// Five locks and two condition variables, each guarding one thing:
///
/// | lock | guards | held for |
/// | --- | --- | --- |
/// | `queue` (with `queue_cv`) | the writers waiting for a group commit, and whether a leader is committing | an enqueue or a hand-over, never across I/O |
/// | `commit` | [`CommitState`]: the log, the memtable taking writes, the next sequence number | one write group, schema change or memtable switch, log I/O included |
/// | `state` (with `state_cv`) | [`EngineState`]: the manifest, the live files, the flush queue, the background error | a manifest write and an install; flush and compaction wait on `state_cv` |
/// | `current` (a read-write lock) | the published [`SuperVersion`] | an `Arc` clone (reads) or a swap (installs) |
/// | `lock` | the directory's file lock, until close | close |
///
/// Taken in this order, never the other way: `queue` is let go before
/// `commit` is taken (a leader drops it to commit), then `commit`, then
/// `state`, then `current`. `lock` is taken alone, at close. A read takes
/// only `current`, for the time of an `Arc` clone, and then loads
/// `visible_seq`: it never waits for a writer, a flush or a compaction.
pub(crate) struct Core {
    dir: PathBuf,
    opts: Options,
    fs: Arc<dyn Fs>,
    cache: Arc<SstBlockCache>,
    /// Whether the database was opened read-only: then it holds no lock,
    /// and another process may hold it.
    read_only: bool,
    /// The directory's lock, released at close (`None` when read-only).
    lock: Mutex<Option<FileLock>>,
    commit: Mutex<CommitState>,
    queue: Mutex<WriteQueue>,
    queue_cv: Condvar,
    state: Mutex<EngineState>,
    state_cv: Condvar,
    current: RwLock<Arc<SuperVersion>>,
    visible_seq: AtomicU64,
    closed: AtomicBool,
    /// Set when a background flush failed (the error is in `EngineState`);
    /// checked by every commit without taking the state lock.
    bg_failed: AtomicBool,
    /// Level-0 files of the store that has the most, for write stalls.
    l0_files: AtomicUsize,
    recovery: RecoveryReport,
    counters: stats::Counters,
}

/// What the write path owns: the log, the memtable taking writes, the next
/// sequence number, and whether an earlier failure forbids writing.
pub(crate) struct CommitState {
    /// `None` when open read-only.
    wal: Option<WalWriter>,
    mem: Arc<Memtable>,
    next_seq: u64,
    /// The first failure of the log, after which writes are refused.
    poisoned: Option<Error>,
    /// The group's log records, reused from commit to commit.
    encoded: Vec<u8>,
}

/// The durable state and the flush queue.
pub(crate) struct EngineState {
    manifest: ManifestState,
    handles: std::collections::HashMap<u64, Arc<SstHandle>>,
    /// Frozen memtables, oldest first.
    imm: Vec<Arc<Memtable>>,
    bg_error: Option<Error>,
    shutting_down: bool,
    /// Stores a compaction is running on.
    busy: std::collections::HashSet<u32>,
    /// Set to wake the compaction thread.
    compaction_requested: bool,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.core().dir).field("read_only", &self.core().read_only).finish()
    }
}

/// Opening is the database's: the options say how, `db/` does it.
impl Options {
    /// Opens (creating if missing) the database in directory `path`.
    ///
    /// # Errors
    /// `Error::Locked` if another handle holds the directory, `Error::Corruption`
    /// if the manifest, a log or a table fails its checks, `Error::Io` on I/O failure.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Db> {
        Db::open_with(path.as_ref(), self)
    }

    /// Opens the existing database in `path` to read it, beside a process
    /// that may have it open for writing, as RocksDB's `OpenForReadOnly`.
    ///
    /// Nothing in the directory is created, changed or deleted, and the lock
    /// is not taken: the view is the live SSTables plus the logs not yet
    /// flushed, replayed into memory, as of the moment of opening. It does not
    /// follow later writes (open again for a newer view). If the writer
    /// flushes or compacts while the view is being gathered, gathering starts
    /// over, so the view is always a consistent prefix of the writer's
    /// history. A torn record at the end of the newest log is read as its
    /// end (it is a write in flight), and the file is left as it is. Writes,
    /// schema changes, `flush` and `compact_table` fail with
    /// `Error::ReadOnly`; no background thread runs.
    ///
    /// # Errors
    /// `Error::NoDatabase` if `path` holds no manifest (it is not a database,
    /// and a read-only open creates none), `Error::Corruption` if the
    /// manifest, a log or a table fails its checks, `Error::Io` on I/O
    /// failure, and `Error::Io` naming the manifest if a writer flushed or
    /// compacted during each of 20 attempts to gather the view.
    pub fn open_read_only(self, path: impl AsRef<Path>) -> Result<Db> {
        Db::open_read_only_with(path.as_ref(), self)
    }
}

impl Db {
    /// Opens (creating if missing) the database in `path` with default options.
    ///
    /// # Errors
    /// See [`Options::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Options::default().open(path)
    }

    pub(crate) fn open_with(path: &Path, opts: Options) -> Result<Db> {
        let core = Arc::new(open::recover(path, opts)?);
        let spawn = |name: &str, run: fn(&Arc<Core>)| {
            let core = core.clone();
            std::thread::Builder::new().name(name.into()).spawn(move || run(&core)).map_err(|e| Error::io(path, e))
        };
        let threads =
            vec![spawn("cellardb-flush", flush::flusher_loop)?, spawn("cellardb-compact", compact::compactor_loop)?];
        Ok(Db { handle: Arc::new(DbHandle { core, threads: Mutex::new(threads) }) })
    }

    pub(crate) fn open_read_only_with(path: &Path, opts: Options) -> Result<Db> {
        let core = Arc::new(open::open_read_only(path, opts)?);
        Ok(Db { handle: Arc::new(DbHandle { core, threads: Mutex::new(Vec::new()) }) })
    }

    /// Opens the database in `path` read-only, with default options: see
    /// [`Options::open_read_only`].
    ///
    /// # Errors
    /// See [`Options::open_read_only`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db> {
        Options::default().open_read_only(path)
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.core().read_only
    }

    /// What an acknowledged write survives: a `Buffered` write is in the
    /// log's file when acknowledged (a `write`, no `fsync`), a `Sync`
    /// write on the disk.
    pub fn durability(&self) -> Durability {
        self.core().opts.durability
    }

    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.handle.core
    }

    /// The database's directory.
    pub fn path(&self) -> &Path {
        &self.core().dir
    }

    /// Freezes the memtable and waits until every frozen memtable is in SSTables.
    ///
    /// # Errors
    /// `Error::Closed` after close; `Error::Poisoned` if a flush failed
    /// (its source is the first failure), now or before.
    pub fn flush(&self) -> Result<()> {
        self.core().flush()
    }

    /// Stops background work, syncs and ends the log, and releases the
    /// directory's lock, so the database can be opened again at once —
    /// even while [`Table`] handles or clones of this `Db` live on. From
    /// then on every call through any handle (reads included) fails with
    /// `Error::Closed`, except a read already under way, which finishes
    /// from its snapshot. Dropping the last handle closes too, silently.
    ///
    /// # Errors
    /// `Error::Io` if the final log sync fails; `Error::Poisoned` if a
    /// background flush or compaction had failed (reopening recovers from
    /// what is on disk). The lock is released all the same.
    pub fn close(&self) -> Result<()> {
        self.handle.shutdown()
    }

    /// Flushes, then compacts every file of every family of `table` into
    /// one run: GC rules applied, deleted cells and tombstones dropped.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table; I/O errors of the flush or
    /// compaction.
    pub fn compact_table(&self, table: &str) -> Result<()> {
        self.core().compact_table(table)
    }

    /// Writes a consistent copy of the database into `dest`, a directory
    /// that must not exist yet or be empty. Writers pause only while the
    /// live files are listed, linked and the unflushed logs read; they go
    /// on while the copy is written. The copy holds every write
    /// acknowledged before the call, and whole row mutations only; it is
    /// durable when the call returns, and opens on its own
    /// ([`Db::open`] on `dest`). SSTables are hard-linked where `dest` is on
    /// the same file system, so the copy costs little space until the two
    /// databases compact apart.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `dest` holds files; `Error::ReadOnly` for
    /// a database opened read-only; `Error::Closed` after close;
    /// `Error::Poisoned` if a write failed before; `Error::Io` from reading
    /// or writing the files.
    pub fn checkpoint(&self, dest: impl AsRef<Path>) -> Result<()> {
        self.core().checkpoint(dest.as_ref())
    }

    /// The engine's figures now.
    ///
    /// # Errors
    /// `Error::Closed` after [`Db::close`].
    pub fn stats(&self) -> Result<Stats> {
        stats::stats_of(self.core())
    }
}

impl DbHandle {
    fn shutdown(&self) -> Result<()> {
        let core = &self.core;
        let first = !core.closed.swap(true, Ordering::AcqRel);
        {
            let mut st = core.state.lock();
            st.shutting_down = true;
            core.state_cv.notify_all();
        }
        for t in std::mem::take(&mut *self.threads.lock()) {
            let _ = t.join();
        }
        if !first {
            return Ok(());
        }
        // The log is synced, the manifest records it closed at its length,
        // so that damage to it later is not taken for a crash's torn tail,
        // and its file is ended there; only then may another open take the
        // directory.
        let closed = core.close_log();
        core.lock.lock().take();
        closed?;
        // A failure no call has reported yet (a compaction after the last
        // write) is reported here, not swallowed.
        core.background_error().map_or(Ok(()), Err)
    }
}

/// Ends the file of a log the manifest records closed at its length. A
/// failure costs disk space only: recovery reads the zeros after a closed
/// log's length as the room it was given.
pub(super) fn trim_closed_log(wal: WalWriter) {
    if let Err(e) = wal.trim() {
        log::warn!("cellardb: could not trim a closed log: {e}");
    }
}

impl Drop for DbHandle {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            log::warn!("cellardb: closing {}: {e}", self.core.dir.display());
        }
    }
}

impl Core {
    /// Syncs the log, records it in the manifest as closed at its length,
    /// then trims its file to that length. Nothing to do for a read-only
    /// database. After a failed write the log is left recorded as being
    /// written, and its file as it is: what the failure left at its end is
    /// for recovery to judge, as after a crash.
    fn close_log(&self) -> Result<()> {
        let mut cs = self.commit.lock();
        let Some(mut wal) = cs.wal.take() else { return Ok(()) };
        wal.sync()?;
        if cs.poisoned.is_some() {
            return Ok(());
        }
        let (number, size) = (cs.mem.wal_number(), wal.len());
        self.change_manifest(&mut self.state.lock(), |next| next.close_log(number, size))?;
        trim_closed_log(wal);
        Ok(())
    }

    /// Writes the manifest as `change` leaves a copy of `st`'s, and makes
    /// that copy the state's once it is durable.
    pub(super) fn change_manifest(&self, st: &mut EngineState, change: impl FnOnce(&mut ManifestState)) -> Result<()> {
        let mut next = st.manifest.clone();
        change(&mut next);
        self.write_manifest(st, &next)?;
        st.manifest = next;
        Ok(())
    }

    /// Writes `next` as the manifest of the database. A failure after the
    /// rename leaves unknown which manifest a crash would keep: the
    /// database is poisoned then, as after a failed flush, so that no file
    /// either manifest lists is deleted and no write is taken until it
    /// reopens and finds out.
    pub(super) fn write_manifest(
        &self,
        st: &mut EngineState,
        next: &ManifestState,
    ) -> std::result::Result<(), manifest::WriteError> {
        let written = manifest::write(&*self.fs, &self.dir, next);
        if let Err(e) = &written
            && e.in_doubt
        {
            st.bg_error.get_or_insert_with(|| e.error.clone());
            self.bg_failed.store(true, Ordering::Release);
            self.state_cv.notify_all();
        }
        written
    }

    /// The published view reads start from.
    pub(crate) fn current(&self) -> Arc<SuperVersion> {
        self.current.read().clone()
    }

    /// The published view, for a call of the API: `Error::Closed` after
    /// close.
    pub(crate) fn view(&self) -> Result<Arc<SuperVersion>> {
        self.check_open()?;
        Ok(self.current())
    }

    /// A consistent snapshot: the view, then the highest visible sequence
    /// number. Entries above the number are ignored by the read. Entries at
    /// or below it that the view lacks went to a memtable started after the
    /// view was taken, so they are all newer than anything the view holds:
    /// the read sees a prefix of history. And since the number is loaded
    /// after the view, it covers everything in the view's files, so a
    /// compaction that dropped versions hidden from every later snapshot
    /// cannot take anything from this read (a read holding an older view
    /// keeps that view's files).
    pub(crate) fn snapshot(&self) -> (u64, Arc<SuperVersion>) {
        let sv = self.current();
        let seq = self.visible_seq.load(Ordering::Acquire);
        (seq, sv)
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) { Err(Error::Closed) } else { Ok(()) }
    }

    /// `check_open`, and refuses anything that would change the directory
    /// of a database open read-only.
    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only { Err(Error::ReadOnly { path: self.dir.clone() }) } else { Ok(()) }
    }

    /// Records the error a background flush or compaction failed with:
    /// from now on writes are refused. The first failure is kept: a later
    /// one (the compaction thread failing after the flush thread did) is
    /// most likely its consequence.
    fn record_background_error(&self, e: Error) {
        let mut st = self.state.lock();
        st.bg_error.get_or_insert(e);
        self.bg_failed.store(true, Ordering::Release);
        self.state_cv.notify_all();
    }

    /// The error a background flush or compaction failed with, if one did:
    /// writes are refused from then on, as after a failed log write.
    fn background_error(&self) -> Option<Error> {
        if !self.bg_failed.load(Ordering::Acquire) {
            return None;
        }
        self.state.lock().bg_error.as_ref().map(Error::poisoned)
    }

    /// Publishes a new view of `st` with `mem` taking writes.
    fn install(&self, st: &EngineState, mem: Arc<Memtable>) {
        let mut metas: Vec<_> = st.manifest.ssts.iter().collect();
        metas.sort_by_key(|m| std::cmp::Reverse(m.file));
        let mut files: std::collections::HashMap<u32, Vec<Arc<SstHandle>>> = std::collections::HashMap::new();
        for m in metas {
            if let Some(h) = st.handles.get(&m.file) {
                files.entry(m.store).or_default().push(h.clone());
            }
        }
        let mut drops: std::collections::HashMap<u32, Vec<RangeDrop>> = std::collections::HashMap::new();
        for d in &st.manifest.drops {
            drops.entry(d.store).or_default().push(d.clone());
        }
        let imm = st.imm.iter().rev().cloned().collect();
        let sv = SuperVersion::new((mem, imm), files, drops, Arc::new(Schema { tables: st.manifest.tables.clone() }));
        let mut level0 = std::collections::HashMap::<u32, usize>::new();
        for m in st.manifest.ssts.iter().filter(|m| m.level == 0) {
            *level0.entry(m.store).or_default() += 1;
        }
        self.l0_files.store(level0.values().copied().max().unwrap_or(0), Ordering::Relaxed);
        *self.current.write() = Arc::new(sv);
    }
}

impl EngineState {
    /// A fresh file number.
    fn next_file_number(&mut self) -> u64 {
        let n = self.manifest.next_file;
        self.manifest.next_file += 1;
        n
    }
}
