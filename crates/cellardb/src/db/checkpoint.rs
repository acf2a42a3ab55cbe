//! A consistent copy of a database, openable on its own
//! ([`Db::checkpoint`]).
//!
//! SSTables are immutable, so the copy shares them (a hard link where the
//! file system allows). The live logs are copied up to the last record
//! written when the checkpoint began, so the copy holds exactly the writes
//! acknowledged by then, each row mutation whole. Its manifest is the
//! database's, with those logs recorded closed at the copied lengths: an
//! open of the copy replays them, checked as any closed log is.

use std::path::Path;

use super::Core;
use crate::manifest::{self, LogMeta, ManifestState};
use crate::{Error, Result, sst, wal};

/// A live log's bytes, as a checkpoint copies them.
struct LogCopy {
    number: u64,
    data: Vec<u8>,
    /// Whether `data` ends where the log's records end (the log being
    /// written, cut where the checkpoint began, or a closed one); if not,
    /// the whole file, to be replayed as found.
    ends: bool,
}

impl Core {
    pub(super) fn checkpoint(&self, dest: &Path) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly { path: self.dir.clone() });
        }
        let names = self.fs.list(dest).unwrap_or_default();
        if !names.is_empty() {
            let what = format!("checkpoint destination {} is not empty ({} files)", dest.display(), names.len());
            return Err(Error::InvalidArgument(what));
        }
        self.fs.create_dir_all(dest).map_err(|e| Error::io(dest, e))?;
        let (mut state, logs) = self.freeze_files(dest)?;
        state.logs.clear();
        for LogCopy { number, data, ends } in logs {
            let path = dest.join(wal::file_name(number));
            let mut file = self.fs.create(&path).map_err(|e| Error::io(&path, e))?;
            file.write_all(&data).and_then(|()| file.sync_data()).map_err(|e| Error::io(&path, e))?;
            let closed_size = ends.then_some(data.len() as u64);
            state.logs.push(LogMeta { number, closed_size });
        }
        // Written last, and its write syncs the directory: a copy cut short
        // by a crash has no manifest, and is no database.
        Ok(manifest::write(&*self.fs, dest, &state)?)
    }

    /// The manifest, with every SSTable it lists linked into `dest`, and
    /// the bytes of each live log up to its last record, as of one instant:
    /// taken under the commit lock (no write in flight) and the state lock
    /// (no flush or compaction changing the files). Writers resume once the
    /// state is read; the files are read under the state lock only, so no
    /// flush deletes a log meanwhile.
    fn freeze_files(&self, dest: &Path) -> Result<(ManifestState, Vec<LogCopy>)> {
        let cs = self.commit.lock();
        if let Some(first) = &cs.poisoned {
            return Err(Error::poisoned(first));
        }
        let wal = cs.wal.as_ref().ok_or_else(|| Error::ReadOnly { path: self.dir.clone() })?;
        let (current, written) = (cs.mem.wal_number(), wal.len());
        let st = self.state.lock();
        // Writers append past `written` from here on; the copy stops there.
        drop(cs);
        let state = st.manifest.clone();
        for meta in &state.ssts {
            let name = sst::file_name(meta.file);
            let (from, to) = (self.dir.join(&name), dest.join(&name));
            self.fs.link_or_copy(&from, &to).map_err(|e| Error::io(&to, e))?;
        }
        let mut logs = Vec::new();
        for log in state.logs.iter().filter(|l| l.number >= state.log_number) {
            let path = self.dir.join(wal::file_name(log.number));
            let mut data = self.fs.read(&path).map_err(|e| Error::io(&path, e))?;
            let end = if log.number == current { Some(written) } else { log.closed_size };
            if let Some(end) = end {
                data.truncate(usize::try_from(end).unwrap_or(usize::MAX));
            }
            logs.push(LogCopy { number: log.number, data, ends: end.is_some() });
        }
        Ok((state, logs))
    }
}
