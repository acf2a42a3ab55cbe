//! The operating system's file system: SSTables mapped for reading, logs
//! mapped for appending ([`super::mapped_log`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

use super::mapped_log::{MappedLog, write_zeros_at};
use super::{FileLock, Fs, LogFile, WritableFile};

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsFs;

struct OsFile(File);

impl WritableFile for OsFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl Fs for OsFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(OsFile(f)))
    }

    fn create_log(&self, path: &Path, capacity: usize) -> io::Result<Box<dyn LogFile>> {
        Ok(Box::new(MappedLog::create(path, capacity)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()> {
        // A hard link where the file system allows (the same device); a
        // copy, synced, where it does not.
        if fs::hard_link(from, to).is_ok() {
            return Ok(());
        }
        fs::copy(from, to)?;
        File::open(to)?.sync_data()
    }

    #[allow(unsafe_code)]
    fn map(&self, path: &Path) -> io::Result<Bytes> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Bytes::new());
        }
        // SAFETY: cellardb maps for reading only SSTables, each written once
        // under a file number never reused, closed and synced before it is
        // mapped, and never modified or truncated afterwards (they are
        // deleted whole, which keeps the mapping valid on Unix); a crashed
        // flush's partial file is deleted at open before anything is mapped.
        // The LOCK file keeps other cellardb processes out of the directory;
        // a foreign process truncating the file could still raise SIGBUS,
        // which is outside what any mmap-based engine can prevent.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Bytes::from_owner(map))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn zero_range(&self, path: &Path, range: Range<u64>) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        let end = range.end.min(file.metadata()?.len());
        if end <= range.start {
            return Ok(());
        }
        // A hole punched needs no new blocks (writing zeros over data may,
        // on a copy-on-write file system or a full disk).
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::FallocateFlags;
            let punch = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            if rustix::fs::fallocate(&file, punch, range.start, end - range.start).is_ok() {
                return file.sync_data();
            }
        }
        write_zeros_at(&file, range.start, end)?;
        file.sync_data()
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<FileLock>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock::new(Box::new(file)))),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_range_zeroes_the_range_and_keeps_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let data: Vec<u8> = (1..=255).cycle().take(3 * 4096 + 100).collect();
        fs::write(&path, &data).unwrap();
        OsFs.zero_range(&path, 100..(2 * 4096 + 7)).unwrap();
        OsFs.zero_range(&path, (3 * 4096)..u64::MAX).unwrap();
        let mut expected = data.clone();
        expected[100..2 * 4096 + 7].fill(0);
        expected[3 * 4096..].fill(0);
        assert_eq!(fs::read(&path).unwrap(), expected);
    }
}
