//! The manifest: the durable record of the schema and the live SSTables.
//!
//! The whole state is small (a few records per table, family and file), so
//! each change writes it anew to `MANIFEST.tmp`, syncs it, renames it over
//! `MANIFEST` and syncs the directory. A rename is atomic, so after a crash
//! the manifest is either the old state or the new one, never a mix; there
//! is no log to repair. Layout in `docs/format/manifest.md`.
//!
//! The format knows the model's schema types (tables, families, GC rules,
//! dropped ranges), which it records, and nothing of the engine.

mod records;

use std::path::Path;

#[cfg(test)]
pub(crate) use records::LOG_HEADER_LEN;
pub use records::{LogMeta, ManifestState, Record, Records, SstMeta};

use crate::fs::Fs;
use crate::{Error, Result};

/// Name of the manifest file.
pub const FILE_NAME: &str = "MANIFEST";
/// Name of a manifest being written.
pub const TEMP_NAME: &str = "MANIFEST.tmp";

/// A manifest write that failed.
#[derive(Debug)]
pub struct WriteError {
    /// What failed.
    pub error: Error,
    /// Whether it failed after the rename: the new manifest is in place,
    /// but whether it or the old one survives a crash is unknown. The
    /// files either lists must then be kept until the database reopens.
    pub in_doubt: bool,
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Error {
        e.error
    }
}

/// Writes `state` as the new manifest of `dir`, atomically.
///
/// # Errors
/// `Error::Io` naming the file or directory that failed, and whether the
/// failure leaves the outcome in doubt ([`WriteError::in_doubt`]).
pub fn write(fs: &dyn Fs, dir: &Path, state: &ManifestState) -> Result<(), WriteError> {
    let tmp = dir.join(TEMP_NAME);
    let path = dir.join(FILE_NAME);
    let bytes = state.encode();
    let before = |error| WriteError { error, in_doubt: false };
    let mut file = fs.create(&tmp).map_err(|e| before(Error::io(&tmp, e)))?;
    file.write_all(&bytes).map_err(|e| before(Error::io(&tmp, e)))?;
    file.sync_data().map_err(|e| before(Error::io(&tmp, e)))?;
    drop(file);
    fs.rename(&tmp, &path).map_err(|e| before(Error::io(&path, e)))?;
    fs.sync_dir(dir).map_err(|e| WriteError { error: Error::io(dir, e), in_doubt: true })
}

/// Reads the manifest of `dir`; `None` if there is none (a new database).
///
/// # Errors
/// `Error::Corruption` naming the offset of the first bad record;
/// `Error::Io` if the file cannot be read.
pub fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<ManifestState>> {
    let path = dir.join(FILE_NAME);
    let data = match fs.read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    decode(&path, &data).map(Some)
}

/// Decodes `data`, the content of the manifest file `path`.
///
/// # Errors
/// `Error::Corruption` naming `path` and the offset of the first bad record.
pub fn decode(path: &Path, data: &[u8]) -> Result<ManifestState> {
    ManifestState::decode(data).map_err(|e| e.in_file(path))
}
