//! An in-memory file system that models power loss.
//!
//! The model, close to what ext4 and XFS promise: a file's bytes survive a
//! crash up to its last `sync_data`; a name (creation, rename, removal)
//! survives only once its directory was synced after the change. Everything
//! else is lost by [`MemFs::crash_copy`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{FileLock, Fs, LogFile, WritableFile};

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
}

impl State {
    fn failing(&self, path: &Path) -> bool {
        self.fail_writes.as_ref().is_some_and(|suffix| path.to_string_lossy().ends_with(suffix.as_str()))
    }
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced_len: usize,
    /// A log's reserved size: the file reads as its data followed by zeros
    /// up to here, as a preallocated file does (its size is durable from
    /// creation), until the log is dropped and trimmed.
    preallocated: usize,
}

impl Inode {
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
                let data = inode.data[..inode.synced_len].to_vec();
                Some((*id, Inode { data, synced_len: inode.synced_len, preallocated: inode.preallocated }))
            })
            .collect();
        let state = State {
            inodes,
            durable_names: names.clone(),
            names,
            next_inode: s.next_inode,
            locks: HashSet::new(),
            fail_writes: None,
        };
        MemFs { state: Arc::new(Mutex::new(state)) }
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

/// A log: a preallocated file, trimmed to its data when dropped.
struct MemLog(MemFile);

impl Drop for MemLog {
    fn drop(&mut self) {
        if let Some(inode) = self.0.state.lock().inodes.get_mut(&self.0.inode) {
            inode.preallocated = 0;
        }
    }
}

impl WritableFile for MemFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(&self.path) {
            return Err(injected());
        }
        if let Some(inode) = s.inodes.get_mut(&self.inode) {
            inode.data.extend_from_slice(buf);
        }
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(&self.path) {
            return Err(injected());
        }
        if let Some(inode) = s.inodes.get_mut(&self.inode) {
            inode.synced_len = inode.data.len();
        }
        Ok(())
    }
}

impl LogFile for MemLog {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl MemFs {
    fn create_file(&self, path: &Path) -> io::Result<MemFile> {
        let mut s = self.state.lock();
        if s.failing(path) {
            return Err(injected());
        }
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
            inode.preallocated = capacity;
        }
        Ok(Box::new(MemLog(file)))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.state.lock();
        let id = s.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(s.inodes.get(id).map(Inode::contents).unwrap_or_default())
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        self.read(path).map(Bytes::from)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        let id = s.names.remove(from).ok_or_else(|| not_found(from))?;
        s.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.names.remove(path).ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.failing(path) {
            return Err(injected());
        }
        let id = *s.names.get(path).ok_or_else(|| not_found(path))?;
        if let Some(inode) = s.inodes.get_mut(&id) {
            inode.data.truncate(usize::try_from(len).unwrap_or(usize::MAX));
            inode.synced_len = inode.data.len();
            inode.preallocated = 0;
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.state.lock();
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
        let in_dir = |p: &PathBuf| p.parent() == Some(dir);
        let current: Vec<(PathBuf, u64)> =
            s.names.iter().filter(|(p, _)| in_dir(p)).map(|(p, id)| (p.clone(), *id)).collect();
        s.durable_names.retain(|p, _| !in_dir(p));
        s.durable_names.extend(current);
        Ok(())
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let s = self.state.lock();
        let id = s.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(s.inodes.get(id).map_or(0, |i| i.data.len().max(i.preallocated) as u64))
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<FileLock>> {
        let mut s = self.state.lock();
        if !s.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(FileLock::new(Box::new(MemLock { state: self.state.clone(), path: path.to_path_buf() }))))
    }
}
