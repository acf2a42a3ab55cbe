//! A log file appended through a shared memory mapping.
//!
//! A `write` system call per commit costs more than everything else a small
//! row mutation does (`docs/architecture.md`, "A write"). Copying the
//! record into a shared mapping of
//! the file puts it in the operating system's page cache just the same — it
//! survives a crash of the process — without the call. `sync` is `msync` of
//! the range appended since the last sync, the same promise as `fdatasync`.
//!
//! The file is preallocated (`fallocate` on Linux) before it is mapped, so a
//! full disk is an error when the log is created or grown, never a `SIGBUS`
//! on a write to the mapping. It grows by unmapping, preallocating more and
//! mapping again, always to a whole number of 1 MiB units, and changes size
//! in one step, so that a crash leaves it a multiple of
//! [`super::LOG_SIZE_UNIT`]; the preallocated tail is zeros, which the log
//! reader takes for the end of the log (`docs/format/wal.md`). Only
//! [`LogFile::trim`], once the log is recorded closed, ends the file at the
//! bytes appended; dropping the log leaves the file as it is.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use super::LogFile;

/// Smallest preallocation, and the unit preallocations are rounded up to.
const GROWTH_UNIT: usize = 1 << 20;
const _: () = assert!(GROWTH_UNIT.is_multiple_of(super::LOG_SIZE_UNIT));

/// The unit of a write of zeros (a page).
const PAGE: u64 = 4096;

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
        // trimming, in `trim`). Only this struct writes the file, through
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
/// its start hold data), never by leaving a hole that a store into the
/// mapping would have to fill (and could not, on a full disk: `SIGBUS`).
/// The size changes in one step, from the old to `len`, so that a crash,
/// or a full disk part way, leaves one or the other.
fn preallocate(file: &File, used: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::KEEP_SIZE, 0, len) {
        // The blocks are reserved past the end; the size follows at once.
        Ok(()) => return file.set_len(len.max(file.metadata()?.len())),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP => {}
        Err(e) => return Err(e.into()),
    }
    write_zeros(file, used, len)
}

/// Writes zeros from the end of the file (or `from`) to `to`: the last page
/// first, which gives the file its new size in one write, then the pages
/// between. A write that fails part way (a full disk) gives the file its
/// old size back, as far as it can.
fn write_zeros(file: &File, from: u64, to: u64) -> io::Result<()> {
    let start = from.max(file.metadata()?.len());
    if start >= to {
        return Ok(());
    }
    let last_page = to.saturating_sub(PAGE).max(start);
    write_zeros_at(file, last_page, to).and_then(|()| write_zeros_at(file, start, last_page)).inspect_err(|_| {
        let _ = file.set_len(start);
    })
}

/// Bytes of zeros [`write_zeros_at`] writes at a time.
const ZERO_WRITE: usize = 64 << 10;

/// Writes zeros over the bytes `from..to` of `file`, in writes of at most
/// [`ZERO_WRITE`] bytes.
pub(super) fn write_zeros_at(file: &File, from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; usize::try_from(to.saturating_sub(from)).map_or(ZERO_WRITE, |n| n.min(ZERO_WRITE))];
    let mut at = from;
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

    fn trim(&mut self) -> io::Result<()> {
        self.map = None;
        self.file.set_len(self.len as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_grow_the_mapping_in_whole_units_and_only_trim_ends_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut log = MappedLog::create(&path, 0).unwrap();
        let record: Vec<u8> = (0..=255).collect();
        let mut expected = Vec::new();
        for _ in 0..(3 * GROWTH_UNIT / record.len()) {
            log.append(&record).unwrap();
            expected.extend_from_slice(&record);
        }
        log.append(b"end").unwrap();
        expected.extend_from_slice(b"end");
        log.sync().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size >= expected.len() as u64);
        assert_eq!(size % super::super::LOG_SIZE_UNIT as u64, 0, "a log being written is sized in whole units");
        assert_eq!(&std::fs::read(&path).unwrap()[..expected.len()], &expected[..], "visible to readers at once");
        log.trim().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_dropped_log_keeps_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut log = MappedLog::create(&path, 0).unwrap();
        log.append(b"records").unwrap();
        drop(log);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), GROWTH_UNIT);
        assert_eq!(&data[..7], b"records");
        assert!(data[7..].iter().all(|&b| b == 0));
    }

    #[test]
    fn zeros_extend_the_file_to_the_size_asked() {
        let dir = tempfile::tempdir().unwrap();
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(true).open(dir.path().join("f")).unwrap();
        write_zeros(&file, 0, GROWTH_UNIT as u64 + PAGE).unwrap();
        assert_eq!(file.metadata().unwrap().len(), GROWTH_UNIT as u64 + PAGE);
        write_zeros(&file, 0, 2 * GROWTH_UNIT as u64).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 2 * GROWTH_UNIT as u64);
    }
}
