//! A log file appended through a shared memory mapping.
//!
//! A `write` system call per commit costs more than everything else a small
//! row mutation does (about 2.7 µs on the machines this project measures on,
//! against 1–2 µs for the rest). Copying the record into a shared mapping of
//! the file puts it in the operating system's page cache just the same — it
//! survives a crash of the process — without the call. `sync` is `msync` of
//! the range appended since the last sync, the same promise as `fdatasync`.
//!
//! The file is preallocated (`fallocate` on Linux) before it is mapped, so a
//! full disk is an error when the log is created or grown, never a `SIGBUS`
//! on a write to the mapping. It grows by unmapping, preallocating more and
//! mapping again. Dropping the log trims the file to the bytes appended; a
//! crash leaves the preallocated tail as zeros, which the log reader takes
//! for the end of the log (`docs/format/wal.md`).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use super::LogFile;

/// Smallest preallocation, and the unit preallocations are rounded up to.
const GROWTH_UNIT: usize = 1 << 20;

/// An append-only log file written through a shared mapping.
pub(super) struct MappedLog {
    file: File,
    path: PathBuf,
    map: Option<MmapMut>,
    len: usize,
    synced: usize,
}

impl MappedLog {
    /// Creates `path` with `capacity` bytes preallocated, and maps it.
    pub(super) fn create(path: &Path, capacity: usize) -> io::Result<MappedLog> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        let mut log = MappedLog { file, path: path.to_path_buf(), map: None, len: 0, synced: 0 };
        log.remap(capacity.max(GROWTH_UNIT))?;
        // The size and the reserved blocks must be durable before any synced
        // record relies on them.
        log.file.sync_data()?;
        Ok(log)
    }

    fn capacity(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Preallocates the file to `capacity` bytes and maps all of it.
    #[allow(unsafe_code)]
    fn remap(&mut self, capacity: usize) -> io::Result<()> {
        let capacity =
            capacity.checked_next_multiple_of(GROWTH_UNIT).ok_or_else(|| io::Error::other("log capacity overflows"))?;
        self.map = None;
        preallocate(&self.file, self.len as u64, capacity as u64)?;
        // SAFETY: the mapping covers the file's preallocated extent, which
        // nothing truncates while it is mapped (this struct unmaps before
        // trimming, in `drop`). Only this struct writes the file, through
        // `&mut self`, and the LOCK file keeps other cellardb processes out
        // of the directory. `preallocate` reserved the blocks (by
        // `fallocate`, or by writing zeros), so a store into the mapping
        // cannot fail for want of space.
        let map = unsafe { MmapMut::map_mut(&self.file)? };
        if map.len() < capacity {
            return Err(io::Error::other(format!("{}: mapped {} of {capacity} bytes", self.path.display(), map.len())));
        }
        self.map = Some(map);
        Ok(())
    }
}

/// Reserves disk blocks for the file up to `len` bytes (`used` bytes at
/// its start hold data): `fallocate` where the file system supports it,
/// else by writing zeros, never by leaving a hole that a store into the
/// mapping would have to fill (and could not, on a full disk: `SIGBUS`).
fn preallocate(file: &File, used: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => return Ok(()),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP => {}
        Err(e) => return Err(e.into()),
    }
    write_zeros(file, used, len)
}

fn write_zeros(file: &File, from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; GROWTH_UNIT];
    let mut at = from.max(file.metadata()?.len());
    while at < to {
        let n = usize::try_from(to - at).map_or(zeros.len(), |left| left.min(zeros.len()));
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

impl LogFile for MappedLog {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let end = self.len + buf.len();
        if end > self.capacity() {
            self.remap(end.max(self.capacity() * 2))?;
        }
        let map = self.map.as_mut().ok_or_else(|| io::Error::other("log is not mapped"))?;
        map[self.len..end].copy_from_slice(buf);
        self.len = end;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.synced < self.len {
            match &self.map {
                Some(map) => map.flush_range(self.synced, self.len - self.synced)?,
                // Unmapped by a failed growth: the pages are in the cache.
                None => self.file.sync_data()?,
            }
        }
        self.synced = self.len;
        Ok(())
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        self.map = None;
        if let Err(e) = self.file.set_len(self.len as u64) {
            log::warn!("cellardb: could not trim log {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_grow_the_mapping_and_drop_trims_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut log = MappedLog::create(&path, 0).unwrap();
        let record: Vec<u8> = (0..=255).collect();
        let mut expected = Vec::new();
        for _ in 0..(3 * GROWTH_UNIT / record.len()) {
            log.append(&record).unwrap();
            expected.extend_from_slice(&record);
        }
        log.sync().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() >= expected.len() as u64);
        assert_eq!(&std::fs::read(&path).unwrap()[..expected.len()], &expected[..], "visible to readers at once");
        drop(log);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }
}
