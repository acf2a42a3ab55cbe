//! The manifest: the durable record of the schema and the live SSTables.
//!
//! The whole state is small (a few records per table, family and file), so
//! each change writes it anew to `MANIFEST.tmp`, syncs it, renames it over
//! `MANIFEST` and syncs the directory. A rename is atomic, so after a crash
//! the manifest is either the old state or the new one, never a mix; there
//! is no log to repair. Layout in `docs/format/manifest.md`.
//!
//! Public so that tools can read it ([`Records`] walks a file record by
//! record, with offsets); the engine alone writes it.

mod records;

use std::path::{Path, PathBuf};

use bytes::Bytes;

pub use records::{FamilyMeta, ManifestState, RangeDrop, Record, Records, SstMeta, TableMeta};

use crate::fs::Fs;
use crate::{Error, Result};

/// Name of the manifest file.
pub const FILE_NAME: &str = "MANIFEST";
/// Name of a manifest being written.
pub const TEMP_NAME: &str = "MANIFEST.tmp";

/// Writes `state` as the new manifest of `dir`, atomically.
pub fn write(fs: &dyn Fs, dir: &Path, state: &ManifestState) -> Result<()> {
    let tmp = dir.join(TEMP_NAME);
    let path = dir.join(FILE_NAME);
    let bytes = state.encode();
    let mut file = fs.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    file.write_all(&bytes).map_err(|e| Error::io(&tmp, e))?;
    file.sync_data().map_err(|e| Error::io(&tmp, e))?;
    drop(file);
    fs.rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Reads the manifest of `dir`; `None` if there is none (a new database).
///
/// # Errors
/// `Error::Corruption` naming the offset of the first bad record.
pub fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<ManifestState>> {
    let path: PathBuf = dir.join(FILE_NAME);
    let data = match fs.read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    ManifestState::decode(&Bytes::from(data))
        .map(Some)
        .map_err(|(offset, what)| Error::corruption(&path, offset as u64, what))
}
