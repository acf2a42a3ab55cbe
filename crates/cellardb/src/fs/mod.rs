//! The file-system seam: everything the engine does to files goes through [`Fs`].
//!
//! [`OsFs`] is the real one: SSTables are mapped for reading, logs are
//! appended through a shared mapping of a preallocated file. [`MemFs`] keeps files
//! in memory and models what survives a power loss — only bytes that were
//! `sync_data`'d, under names whose directory was synced — so crash tests can
//! cut power at any point and check what the engine promised. It also counts
//! its operations and fails the one it is told to (an I/O error, a full
//! disk, a short write), to test what the engine does after each.
//!
//! The seam is public on purpose: a program passes a file system to
//! [`crate::Options::file_system`] — [`MemFs`] in its own tests, or one of
//! its own that implements [`Fs`].

mod mapped_log;
mod mem;
mod os;

use std::fmt::Debug;
use std::io;
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

pub use mem::{Fault, FsOp, MemFs};
pub use os::OsFs;

/// A file open for appending.
#[allow(
    clippy::missing_errors_doc,
    reason = "every method fails with the file system's own I/O error, as `std::fs` does"
)]
pub trait WritableFile: Send {
    /// Appends all of `buf`.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes every byte written so far durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
}

/// The unit a log file's size comes in while it is being written: its size
/// is always a multiple of this (64 KiB), at or past the bytes appended,
/// until it is trimmed ([`LogFile::trim`]).
///
/// Recovery relies on it: since neither a crash nor the engine shortens a
/// log being written, one whose size is not a multiple of the unit was cut
/// from outside, and the writes after the cut are lost — which a cut at a
/// record boundary would otherwise hide.
pub const LOG_SIZE_UNIT: usize = 64 << 10;

/// A log file open for appending: what the write-ahead log writes through.
///
/// `append` must leave the bytes where they survive a crash of this process
/// (the operating system's page cache), `sync` where they survive power loss.
///
/// From its creation until [`LogFile::trim`], the file's size must be a
/// multiple of [`LOG_SIZE_UNIT`], and zeros past the bytes appended: the
/// room is reserved in whole units, never given back. A crash, and a drop
/// of the `LogFile`, leave it so.
#[allow(
    clippy::missing_errors_doc,
    reason = "every method fails with the file system's own I/O error, as `std::fs` does"
)]
pub trait LogFile: Send {
    /// Appends all of `buf`.
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes every byte appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Ends the file at the bytes appended, giving back the reserved room:
    /// called once, after the manifest records the log closed at that
    /// length. Not durable by itself: a crash may leave the zeros.
    fn trim(&mut self) -> io::Result<()>;
}

/// Proof that this process holds a directory's lock; dropping it releases it.
pub struct FileLock {
    _guard: Box<dyn Send + Sync>,
}

impl FileLock {
    /// A lock held for as long as `guard` lives: what an [`Fs::try_lock`]
    /// of another file system returns (its guard releases the lock on drop).
    pub fn new(guard: Box<dyn Send + Sync>) -> Self {
        FileLock { _guard: guard }
    }
}

impl Debug for FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileLock")
    }
}

/// The operations the engine needs from a file system.
///
/// Every method fails with the file system's own I/O error.
#[allow(
    clippy::missing_errors_doc,
    reason = "every method fails with the file system's own I/O error, as `std::fs` does"
)]
pub trait Fs: Send + Sync + Debug {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `path` empty (truncating it if present), open for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates the log file `path`, with room reserved for about
    /// `capacity` bytes (it grows past that if needed).
    fn create_log(&self, path: &Path, capacity: usize) -> io::Result<Box<dyn LogFile>>;
    /// The whole content of `path`, read into memory.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The whole content of an immutable file, mapped rather than copied where
    /// the file system allows.
    fn map(&self, path: &Path) -> io::Result<Bytes>;
    /// Makes `to` a durable copy of the immutable file `from`: by default a
    /// copy, synced; a file system that can share the file's blocks (a hard
    /// link) does that instead. The directory of `to` is not synced.
    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()> {
        let data = self.read(from)?;
        let mut file = self.create(to)?;
        file.write_all(&data)?;
        file.sync_data()
    }
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes the file `path`.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Overwrites the bytes `range` of `path` with zeros, durably; the
    /// file keeps its size.
    fn zero_range(&self, path: &Path, range: Range<u64>) -> io::Result<()>;
    /// Names of the files in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Size of `path` in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Takes the exclusive lock file `path`; `None` if someone else holds it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<FileLock>>;
}
