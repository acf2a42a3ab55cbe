//! An in-memory file system that models power loss and fails on command.
//!
//! The model, close to what ext4 and XFS promise: a file's bytes survive a
//! crash up to its last `sync_data`; a name (creation, rename, removal)
//! survives only once its directory was synced after the change. Everything
//! else is lost by [`MemFs::crash_copy`]; [`MemFs::torn_crash_copy`] also
//! keeps part of what was not synced, its last page possibly garbage. A
//! log's size is reserved in whole units and durable from its creation;
//! trimming it is not synced, so power loss leaves the size before the trim.
//!
//! Faults: every operation is counted by kind ([`FsOp`]), and the Nth
//! operation of a kind can be made to fail ([`MemFs::fail_operation`]) with
//! an I/O error, a full disk or a short write ([`Fault`]). A failed sync
//! behaves as Linux's does after a write-back error: the bytes it should
//! have made durable are dropped from the durable image for good, and a
//! later sync that succeeds does not bring them back (a crash copy holds
//! zeros there). So a program that retries a failed sync and carries on
//! loses data in these tests, as it would on a real disk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{FileLock, Fs, LOG_SIZE_UNIT, LogFile, WritableFile};

/// In-memory files with a power-loss model. Clones share the same files.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    next_inode: u64,
    locks: HashSet<PathBuf>,
    /// Writes fail to files whose name ends with this (`""`: every file).
    fail_writes: Option<String>,
    /// Operations done so far, by kind.
    counts: BTreeMap<FsOp, u64>,
    /// The one operation to fail, until it has.
    armed: Option<(FsOp, u64, Fault)>,
    /// What the armed fault struck, once it has.
    fired: Option<String>,
}

impl State {
    fn contents(&self, path: &Path) -> io::Result<Vec<u8>> {
        let id = self.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(self.inodes.get(id).map(Inode::contents).unwrap_or_default())
    }

    fn failing(&self, path: &Path) -> bool {
        self.fail_writes.as_ref().is_some_and(|suffix| path.to_string_lossy().ends_with(suffix.as_str()))
    }

    /// Counts an operation of kind `op` on `path`: the fault it must fail
    /// with, if it is the armed one.
    fn count(&mut self, op: FsOp, path: &Path) -> Option<Fault> {
        let count = self.counts.entry(op).or_default();
        let n = *count;
        *count += 1;
        match self.armed {
            Some((armed, nth, fault)) if armed == op && nth == n => {
                self.armed = None;
                self.fired = Some(format!("{op:?} #{n} ({fault:?}) on {}", path.display()));
                Some(fault)
            }
            _ => None,
        }
    }

    /// Counts an operation that only fails with an error: `Err` if it is
    /// the armed one.
    fn check(&mut self, op: FsOp, path: &Path) -> io::Result<()> {
        match self.count(op, path) {
            Some(fault) => Err(fault.error()),
            None => Ok(()),
        }
    }
}

/// A kind of file-system operation, as [`MemFs`] counts and fails them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FsOp {
    /// Creating a file or a log.
    Create,
    /// Appending to a file or a log.
    Write,
    /// Syncing a file's or a log's data.
    Sync,
    /// Reading a whole file.
    Read,
    /// Mapping an immutable file.
    Map,
    /// Renaming a file.
    Rename,
    /// Removing a file.
    Remove,
    /// Zeroing a range of a file.
    ZeroRange,
    /// Ending a log at its bytes ([`LogFile::trim`]).
    Trim,
    /// Listing a directory.
    List,
    /// Syncing a directory's entries.
    SyncDir,
    /// Asking a file's size.
    Size,
    /// Taking a directory's lock.
    Lock,
}

impl FsOp {
    /// Every kind.
    pub const ALL: [FsOp; 13] = [
        FsOp::Create,
        FsOp::Write,
        FsOp::Sync,
        FsOp::Read,
        FsOp::Map,
        FsOp::Rename,
        FsOp::Remove,
        FsOp::ZeroRange,
        FsOp::Trim,
        FsOp::List,
        FsOp::SyncDir,
        FsOp::Size,
        FsOp::Lock,
    ];

    /// The faults this kind of operation can meet: every kind can fail with
    /// an I/O error; creations and writes can also find the disk full, and
    /// writes can store part of their bytes.
    #[must_use]
    pub fn faults(self) -> &'static [Fault] {
        match self {
            FsOp::Write => &[Fault::Error, Fault::NoSpace, Fault::ShortWrite],
            FsOp::Create => &[Fault::Error, Fault::NoSpace],
            _ => &[Fault::Error],
        }
    }
}

/// How an injected fault fails its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The operation fails with an I/O error (`EIO`) and changes nothing;
    /// a sync's unsynced bytes are dropped from the durable image.
    Error,
    /// The operation fails because the disk is full (`ENOSPC`) and
    /// changes nothing.
    NoSpace,
    /// A write stores the first half of its bytes, then fails with an I/O
    /// error; other operations fail as with `Error`.
    ShortWrite,
}

impl Fault {
    fn error(self) -> io::Error {
        match self {
            Fault::NoSpace => io::Error::new(io::ErrorKind::StorageFull, "injected fault: no space left on device"),
            Fault::Error | Fault::ShortWrite => io::Error::other("injected fault: input/output error"),
        }
    }
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced_len: usize,
    /// A log's reserved size, a whole number of [`LOG_SIZE_UNIT`]s: the
    /// file reads as its data followed by zeros up to here, as a
    /// preallocated file does (its size is durable from creation), until
    /// the log is trimmed.
    preallocated: usize,
    /// The reserved size power loss leaves: a trim is not synced, so the
    /// size before it.
    durable_preallocated: usize,
    /// Byte ranges a failed sync dropped: zeros in any crash copy.
    lost: Vec<Range<usize>>,
}

impl Inode {
    /// The file as a crash leaves it when its first `kept` bytes reached
    /// the disk: ranges a failed sync dropped read as zeros, and with a
    /// seed, the last page written since the last sync holds garbage.
    fn durable_image(&self, kept: usize, torn: Option<u64>) -> Inode {
        let mut data = self.data[..kept.min(self.data.len())].to_vec();
        for range in &self.lost {
            let end = range.end.min(data.len());
            if range.start < end {
                data[range.start..end].fill(0);
            }
        }
        if let Some(mut rng) = torn.filter(|_| data.len() > self.synced_len) {
            let page_start = ((data.len() - 1) / PAGE * PAGE).max(self.synced_len);
            for byte in &mut data[page_start..] {
                *byte = splitmix(&mut rng).to_le_bytes()[0];
            }
        }
        let preallocated = self.durable_preallocated;
        Inode { synced_len: data.len(), data, preallocated, durable_preallocated: preallocated, lost: Vec::new() }
    }

    fn contents(&self) -> Vec<u8> {
        let mut data = self.data.clone();
        if data.len() < self.preallocated {
            data.resize(self.preallocated, 0);
        }
        data
    }
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file system as power loss at this instant would leave it: only
    /// bytes that were synced, under names whose directory was synced since
    /// they changed. The copy is independent: whatever still runs against
    /// `self` (a database being torn down) does not reach it.
    #[must_use]
    pub fn crash_copy(&self) -> MemFs {
        let s = self.state.lock();
        let names = s.durable_names.clone();
        let inodes = names
            .values()
            .filter_map(|id| {
                let inode = s.inodes.get(id)?;
                Some((*id, inode.durable_image(inode.synced_len, None)))
            })
            .collect();
        MemFs::from_crash(&s, names, inodes)
    }

    /// The file system as a crash of the process (not of the machine)
    /// leaves it at this instant: every name and every byte written, synced
    /// or not. The copy is independent, as [`MemFs::crash_copy`]'s is.
    #[must_use]
    pub fn process_crash_copy(&self) -> MemFs {
        let s = self.state.lock();
        let inodes = s
            .names
            .values()
            .filter_map(|id| {
                let inode = s.inodes.get(id)?;
                let data = inode.data.clone();
                let preallocated = inode.preallocated;
                let durable_preallocated = inode.durable_preallocated;
                Some((
                    *id,
                    Inode { synced_len: data.len(), data, preallocated, durable_preallocated, lost: Vec::new() },
                ))
            })
            .collect();
        MemFs::from_crash(&s, s.names.clone(), inodes)
    }

    /// As [`MemFs::crash_copy`], but each file also keeps a seeded share of
    /// the bytes written since its last sync, as a disk that wrote some of
    /// them before power went; with one chance in two, the last page of
    /// that share holds garbage instead (a torn page). Synced bytes are
    /// never touched. With one chance in two (by `seed`), the directory's
    /// entries are as the process last saw them rather than as last synced:
    /// creations, renames and removals not yet synced reached the disk.
    #[must_use]
    pub fn torn_crash_copy(&self, seed: u64) -> MemFs {
        let s = self.state.lock();
        let names =
            if splitmix(&mut seed.clone()).is_multiple_of(2) { s.names.clone() } else { s.durable_names.clone() };
        let inodes = names
            .values()
            .filter_map(|id| {
                let inode = s.inodes.get(id)?;
                let mut rng = seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let unsynced = inode.data.len().saturating_sub(inode.synced_len) as u64;
                let kept = inode.synced_len + usize::try_from(splitmix(&mut rng) % (unsynced + 1)).unwrap_or(0);
                let torn = splitmix(&mut rng).is_multiple_of(2);
                Some((*id, inode.durable_image(kept, torn.then_some(rng))))
            })
            .collect();
        MemFs::from_crash(&s, names, inodes)
    }

    fn from_crash(s: &State, names: BTreeMap<PathBuf, u64>, inodes: HashMap<u64, Inode>) -> MemFs {
        let state = State { inodes, durable_names: names.clone(), names, next_inode: s.next_inode, ..State::default() };
        MemFs { state: Arc::new(Mutex::new(state)) }
    }

    /// Makes operation number `n` (counting from 0 since this file system
    /// was made) of kind `op` fail with `fault`, once. Replaces any fault
    /// armed before that has not struck.
    pub fn fail_operation(&self, op: FsOp, n: u64, fault: Fault) {
        self.state.lock().armed = Some((op, n, fault));
    }

    /// Disarms the fault armed by [`MemFs::fail_operation`], if it has not
    /// struck.
    pub fn disarm(&self) {
        self.state.lock().armed = None;
    }

    /// The operations done so far, by kind (kinds not yet used are absent).
    #[must_use]
    pub fn operation_counts(&self) -> BTreeMap<FsOp, u64> {
        self.state.lock().counts.clone()
    }

    /// What the fault armed by [`MemFs::fail_operation`] struck, once it
    /// has: the operation, its number, the fault and the file.
    #[must_use]
    pub fn fault_struck(&self) -> Option<String> {
        self.state.lock().fired.clone()
    }

    /// While `fail` is set, every creation, write and sync fails with an I/O error.
    pub fn set_fail_writes(&self, fail: bool) {
        self.state.lock().fail_writes = fail.then(String::new);
    }

    /// While set, creations, writes and syncs of files whose name ends with
    /// `suffix` fail with an I/O error (`None`: nothing fails).
    pub fn fail_writes_to(&self, suffix: Option<&str>) {
        self.state.lock().fail_writes = suffix.map(str::to_owned);
    }

    /// Flips the bits of byte `offset` of `path` (for corruption tests).
    ///
    /// # Errors
    /// `NotFound` if there is no file `path`, `InvalidInput` if `offset` is
    /// past its end.
    pub fn corrupt_byte(&self, path: &Path, offset: usize) -> io::Result<()> {
        let mut s = self.state.lock();
        let id = *s.names.get(path).ok_or_else(|| not_found(path))?;
        let inode = s.inodes.get_mut(&id).ok_or_else(|| not_found(path))?;
        let byte = inode
            .data
            .get_mut(offset)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset past end of file"))?;
        *byte ^= 0xff;
        Ok(())
    }
}

/// The page a torn write damages.
const PAGE: usize = 4096;

/// SplitMix64: a seed means the same tear everywhere.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} not found", path.display()))
}

fn injected() -> io::Error {
    io::Error::other("injected write failure")
}

struct MemFile {
    state: Arc<Mutex<State>>,
    inode: u64,
    path: PathBuf,
}

/// A log: a file preallocated in whole [`LOG_SIZE_UNIT`]s, ended at its
/// data only by [`LogFile::trim`].
struct MemLog(MemFile);

/// `len` rounded up to whole log units (one at least).
fn log_units(len: usize) -> usize {
    len.max(1).next_multiple_of(LOG_SIZE_UNIT)
}

impl WritableFile for MemFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(&self.path) {
            return Err(injected());
        }
        let fault = s.count(FsOp::Write, &self.path);
        let stored = if fault == Some(Fault::ShortWrite) { &buf[..buf.len() / 2] } else { buf };
        if (fault.is_none() || fault == Some(Fault::ShortWrite))
            && let Some(inode) = s.inodes.get_mut(&self.inode)
        {
            inode.data.extend_from_slice(stored);
        }
        fault.map_or(Ok(()), |f| Err(f.error()))
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(&self.path) {
            return Err(injected());
        }
        let fault = s.count(FsOp::Sync, &self.path);
        if let Some(inode) = s.inodes.get_mut(&self.inode) {
            if fault.is_some() {
                let dropped = inode.synced_len..inode.data.len();
                inode.lost.push(dropped);
            } else {
                inode.synced_len = inode.data.len();
            }
        }
        fault.map_or(Ok(()), |f| Err(f.error()))
    }
}

impl LogFile for MemLog {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let written = self.0.write_all(buf);
        if let Some(inode) = self.0.state.lock().inodes.get_mut(&self.0.inode)
            && inode.data.len() > inode.preallocated
        {
            inode.preallocated = log_units(inode.data.len());
            inode.durable_preallocated = inode.preallocated;
        }
        written
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn trim(&mut self) -> io::Result<()> {
        let mut s = self.0.state.lock();
        s.check(FsOp::Trim, &self.0.path)?;
        if let Some(inode) = s.inodes.get_mut(&self.0.inode) {
            inode.preallocated = 0;
        }
        Ok(())
    }
}

impl MemFs {
    fn create_file(&self, path: &Path) -> io::Result<MemFile> {
        let mut s = self.state.lock();
        if s.failing(path) {
            return Err(injected());
        }
        s.check(FsOp::Create, path)?;
        s.next_inode += 1;
        let id = s.next_inode;
        s.inodes.insert(id, Inode::default());
        s.names.insert(path.to_path_buf(), id);
        Ok(MemFile { state: self.state.clone(), inode: id, path: path.to_path_buf() })
    }
}

struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

impl Fs for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(self.create_file(path)?))
    }

    fn create_log(&self, path: &Path, capacity: usize) -> io::Result<Box<dyn LogFile>> {
        let file = self.create_file(path)?;
        if let Some(inode) = self.state.lock().inodes.get_mut(&file.inode) {
            inode.preallocated = log_units(capacity);
            inode.durable_preallocated = inode.preallocated;
        }
        Ok(Box::new(MemLog(file)))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut s = self.state.lock();
        s.check(FsOp::Read, path)?;
        s.contents(path)
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        let mut s = self.state.lock();
        s.check(FsOp::Map, path)?;
        s.contents(path).map(Bytes::from)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(FsOp::Rename, to)?;
        let id = s.names.remove(from).ok_or_else(|| not_found(from))?;
        s.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check(FsOp::Remove, path)?;
        s.names.remove(path).ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn zero_range(&self, path: &Path, range: Range<u64>) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(path) {
            return Err(injected());
        }
        s.check(FsOp::ZeroRange, path)?;
        let id = *s.names.get(path).ok_or_else(|| not_found(path))?;
        if let Some(inode) = s.inodes.get_mut(&id) {
            let len = inode.data.len();
            let end = usize::try_from(range.end).map_or(len, |end| end.min(len));
            let start = usize::try_from(range.start).map_or(len, |start| start.min(end));
            inode.data[start..end].fill(0);
            // Synced, as the real one's `sync_data` does.
            inode.synced_len = len;
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut s = self.state.lock();
        s.check(FsOp::List, dir)?;
        Ok(s.names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.fail_writes.as_deref() == Some("") {
            return Err(injected());
        }
        s.check(FsOp::SyncDir, dir)?;
        let in_dir = |p: &PathBuf| p.parent() == Some(dir);
        let current: Vec<(PathBuf, u64)> =
            s.names.iter().filter(|(p, _)| in_dir(p)).map(|(p, id)| (p.clone(), *id)).collect();
        s.durable_names.retain(|p, _| !in_dir(p));
        s.durable_names.extend(current);
        Ok(())
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let mut s = self.state.lock();
        s.check(FsOp::Size, path)?;
        let id = s.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(s.inodes.get(id).map_or(0, |i| i.data.len().max(i.preallocated) as u64))
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<FileLock>> {
        let mut s = self.state.lock();
        s.check(FsOp::Lock, path)?;
        if !s.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(FileLock::new(Box::new(MemLock { state: self.state.clone(), path: path.to_path_buf() }))))
    }
}
