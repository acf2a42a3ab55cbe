//! Flush: frozen memtables become SSTables, one per column family, on a
//! background thread while writes go on into the next memtable.
//!
//! Order of a flush, each step durable before the next:
//! 1. write and sync one SSTable per store with entries, then sync the directory;
//! 2. write the manifest that lists them and moves the log number past the
//!    frozen memtable's log;
//! 3. publish a view with the files instead of the memtable;
//! 4. delete the obsolete log.
//!
//! A crash before 2 leaves orphan SSTables (deleted at the next open) and the
//! log (replayed); after 2, the files are live and the log is obsolete.

use std::sync::Arc;

use super::Core;
use crate::manifest::SstMeta;
use crate::memtable::Memtable;
use crate::model::cell::now_micros;
use crate::sst::{self, SstOptions, SstOrigin, SstReader, SstWriter};
use crate::version::{Schema, SstHandle};
use crate::{Error, Result};

/// The background thread: flushes frozen memtables, oldest first, until shutdown.
pub(super) fn flusher_loop(core: &Arc<Core>) {
    loop {
        let mem = {
            let mut st = core.state.lock();
            while st.imm.is_empty() && !st.shutting_down {
                core.state_cv.wait(&mut st);
            }
            if st.shutting_down {
                return;
            }
            st.imm[0].clone()
        };
        let flushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.flush_memtable(&mem)));
        let flushed =
            flushed.unwrap_or_else(|_| Err(Error::io(&core.dir, std::io::Error::other("the flush thread panicked"))));
        if let Err(e) = flushed {
            log::error!("cellardb: flush failed, writes will fail until reopen: {e}");
            core.record_background_error(e);
            return;
        }
    }
}

impl Core {
    /// Freezes the memtable (if it holds anything) and waits for every
    /// frozen memtable to be flushed.
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_writable()?;
        {
            let mut cs = self.commit.lock();
            if let Some(first) = &cs.poisoned {
                return Err(Error::poisoned(first));
            }
            if !cs.mem.is_empty() {
                self.switch_memtable(&mut cs)?;
            }
        }
        let mut st = self.state.lock();
        while !st.imm.is_empty() && st.bg_error.is_none() && !st.shutting_down {
            self.state_cv.wait(&mut st);
        }
        match &st.bg_error {
            Some(e) => Err(Error::poisoned(e)),
            None if !st.imm.is_empty() => Err(Error::Closed),
            None => Ok(()),
        }
    }

    /// Flushes the oldest frozen memtable, `mem`, and retires it.
    fn flush_memtable(&self, mem: &Arc<Memtable>) -> Result<()> {
        let schema = self.current().schema.clone();
        let outputs = self.write_tables(mem, &schema)?;
        let mut st = self.state.lock();
        let mut next = st.manifest.clone();
        let next_log = st.imm.get(1).map_or_else(|| self.current().mem.wal_number(), |m| m.wal_number());
        let live: Vec<u32> = next.tables.iter().flat_map(|t| t.families.iter().map(|f| f.store)).collect();
        let (kept, dropped): (Vec<_>, Vec<_>) = outputs.into_iter().partition(|h| live.contains(&h.meta.store));
        next.ssts.extend(kept.iter().map(|h| h.meta.clone()));
        next.log_number = next_log;
        next.logs.retain(|log| log.number >= next_log);
        next.last_seq = next.last_seq.max(mem.max_seq());
        self.retire_drops(&st, &mut next);
        self.write_manifest(&mut st, &next)?;
        st.manifest = next;
        for h in kept {
            self.counters.add_flushed(h.meta.size);
            st.handles.insert(h.meta.file, h);
        }
        for h in &dropped {
            h.mark_obsolete();
        }
        st.imm.remove(0);
        self.install(&st, self.current().mem.clone());
        self.request_compaction(&mut st);
        drop(st);
        self.remove_logs_below(next_log);
        Ok(())
    }

    /// Writes one SSTable per live store of `mem` and syncs the directory.
    pub(super) fn write_tables(&self, mem: &Arc<Memtable>, schema: &Schema) -> Result<Vec<Arc<SstHandle>>> {
        let mut out = Vec::new();
        for store in mem.stores() {
            let Some(family) = schema.family_of_store(store) else { continue };
            let number = self.state.lock().next_file_number();
            out.push(Arc::new(self.write_table(mem, store, family, number)?));
        }
        if !out.is_empty() {
            self.fs.sync_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }
        Ok(out)
    }

    fn write_table(&self, mem: &Arc<Memtable>, store: u32, family: &str, number: u64) -> Result<SstHandle> {
        let path = self.dir.join(sst::file_name(number));
        // No dictionary: training one would slow the flush, and the file
        // is soon compacted.
        let options = SstOptions { dictionary: None, ..self.opts.sst_options() };
        let origin = SstOrigin { family, store, created_micros: now_micros() };
        let mut writer = SstWriter::create(&*self.fs, &path, origin, options)?;
        mem.for_each(store, |e| writer.add(e))?;
        let summary = writer.finish()?;
        let data = self.fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let reader = SstReader::open_with_id(&path, data, number)?;
        let meta = SstMeta {
            store,
            file: number,
            level: 0,
            size: summary.file_size,
            first_row: summary.props.first_row.clone(),
            last_row: summary.props.last_row.clone(),
            min_seq: summary.props.min_seq,
            max_seq: summary.props.max_seq,
            drops_applied: 0,
        };
        Ok(SstHandle::new(reader, meta, self.fs.clone(), self.cache.clone()))
    }

    /// Deletes the log files numbered below `number` (flushed, obsolete).
    pub(super) fn remove_logs_below(&self, number: u64) {
        let names = match self.fs.list(&self.dir) {
            Ok(names) => names,
            Err(e) => {
                // Harmless: the next open removes logs the manifest does not list.
                log::warn!("cellardb: could not list {} for obsolete logs: {e}", self.dir.display());
                return;
            }
        };
        for name in names {
            let obsolete = parse_number(&name, ".log").is_some_and(|n| n < number);
            if obsolete && let Err(e) = self.fs.remove(&self.dir.join(&name)) {
                log::warn!("cellardb: could not delete obsolete log {name}: {e}");
            }
        }
    }
}

/// The number of a file named `NNNNNN{suffix}`.
pub(super) fn parse_number(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
