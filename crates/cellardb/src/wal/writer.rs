//! Appending to a log file.

use std::path::{Path, PathBuf};

use super::{MAGIC, VERSION};
use crate::fs::{Fs, LogFile};
use crate::{Error, Result};

/// An open log file, appended to by the write path's group leader.
pub struct WalWriter {
    file: Box<dyn LogFile>,
    path: PathBuf,
    /// Bytes appended: where the file ends once trimmed.
    len: u64,
}

impl WalWriter {
    /// Creates log file `number` in `dir` with room for about `capacity`
    /// bytes, header written and synced: the manifest lists a log only once
    /// its header is durable, so a listed log without one is damage.
    pub fn create(fs: &dyn Fs, dir: &Path, number: u64, capacity: usize) -> Result<WalWriter> {
        let path = dir.join(super::file_name(number));
        let mut file = fs.create_log(&path, capacity).map_err(|e| Error::io(&path, e))?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        file.append(&header).map_err(|e| Error::io(&path, e))?;
        file.sync().map_err(|e| Error::io(&path, e))?;
        Ok(WalWriter { file, path, len: header.len() as u64 })
    }

    /// Appends already-encoded records; on return they survive a crash of
    /// this process.
    pub fn append(&mut self, records: &[u8]) -> Result<()> {
        self.file.append(records).map_err(|e| Error::io(&self.path, e))?;
        self.len += records.len() as u64;
        Ok(())
    }

    /// Bytes appended, header included: the file's length once trimmed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Ends the file at the bytes appended ([`LogFile::trim`]). Only for a
    /// log the manifest records closed at [`WalWriter::len`]: until then the
    /// file keeps its preallocated size, which recovery checks.
    pub fn trim(mut self) -> Result<()> {
        self.file.trim().map_err(|e| Error::io(&self.path, e))
    }

    /// Makes everything appended durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync().map_err(|e| Error::io(&self.path, e))
    }
}
