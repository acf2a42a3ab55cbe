//! Compaction on the engine's side: the background thread, `compact_table`,
//! and installing a compaction's result atomically.
//!
//! One compaction runs per store at a time (the store is marked busy). A
//! compaction reads a fixed set of files and writes new ones; nothing it
//! writes is read until the manifest lists it. Install, under the state
//! lock: if the inputs are still live, write the manifest without them and
//! with the outputs, publish a new view, and mark the inputs obsolete (they
//! are deleted when the last read holding them ends). A crash before the
//! manifest leaves orphans that the next open deletes; after it, the
//! compaction happened.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Core, EngineState};
use crate::compaction::job::{Job, LeftOut};
use crate::compaction::output::Output;
use crate::compaction::picker::{self, Choice, FileInfo};
use crate::manifest::{ManifestState, SstMeta};
use crate::model::cell::now_micros;
use crate::model::{FamilyMeta, RangeDrop};
use crate::sst::{self, SstOrigin, SstReader, SstWriter};
use crate::version::SstHandle;
use crate::{Error, Result};

/// How often the compaction thread looks for files that expired by age
/// when nothing else wakes it.
const EXPIRY_CHECK: Duration = Duration::from_secs(10);

/// Level-0 files (in any store) from which each write group is delayed.
/// RocksDB's defaults, and for the same reason: while level 0 grows, the
/// next compaction takes all of it at once, so a compaction that falls
/// behind catches up by merging more per run. Delaying writers at 12 files
/// cut in before that could happen, and writers stalled and slowed where
/// at 20 and 36 they did not (`docs/compaction.md` has the runs).
pub(crate) const L0_SLOWDOWN: usize = 20;
/// Level-0 files (in any store) at which writers wait for compaction.
pub(crate) const L0_STOP: usize = 36;
/// The delay of a write group while level 0 is at `L0_SLOWDOWN` or more.
pub(crate) const SLOWDOWN_DELAY: Duration = Duration::from_micros(200);

/// A compaction about to run.
struct Task {
    store: u32,
    family: FamilyMeta,
    choice: Choice,
    inputs: Vec<Arc<SstHandle>>,
    older: Vec<LeftOut>,
    drops: Vec<RangeDrop>,
    /// Whether rows may pass through unmerged (not in a full compaction,
    /// which rewrites every block).
    pass_through: bool,
}

/// The background thread: runs due compactions after each flush or schema
/// change, and every `EXPIRY_CHECK`, until shutdown.
pub(super) fn compactor_loop(core: &Arc<Core>) {
    loop {
        {
            let mut st = core.state.lock();
            while !st.shutting_down && !std::mem::take(&mut st.compaction_requested) {
                if core.state_cv.wait_for(&mut st, EXPIRY_CHECK).timed_out() {
                    break;
                }
            }
            if st.shutting_down {
                return;
            }
        }
        loop {
            match core.compact_once() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    log::error!("cellardb: compaction failed, writes will fail until reopen: {e}");
                    core.record_background_error(e);
                    return;
                }
            }
        }
    }
}

impl Core {
    pub(super) fn compact_table(&self, table: &str) -> Result<()> {
        self.flush()?;
        let families = {
            let sv = self.current();
            let t = sv.schema.table(table).ok_or_else(|| Error::table_not_found(table))?;
            t.families.clone()
        };
        for family in families {
            let task = {
                let mut st = self.state.lock();
                while st.busy.contains(&family.store) && !st.shutting_down {
                    self.state_cv.wait(&mut st);
                }
                self.check_open()?;
                let files = file_infos(&st, family.store);
                let Some(choice) = picker::pick_full(&files, self.opts.compaction, &family.gc_rule) else { continue };
                Self::claim(&mut st, &family, choice, false)
            };
            self.run_and_release(&task)?;
        }
        Ok(())
    }

    /// Runs one due compaction, if any; false if none was due.
    /// Shutdown stops the search: a close does not wait for more than the
    /// compaction under way.
    fn compact_once(&self) -> Result<bool> {
        let task = {
            let mut st = self.state.lock();
            if st.shutting_down {
                return Ok(false);
            }
            let now = now_micros();
            let mut due = None;
            'search: for table in &st.manifest.tables {
                for f in &table.families {
                    if st.busy.contains(&f.store) {
                        continue;
                    }
                    let files = file_infos(&st, f.store);
                    if let Some(choice) = picker::pick(&files, &f.gc_rule, now, self.opts.compaction) {
                        due = Some((f.clone(), choice));
                        break 'search;
                    }
                }
            }
            let Some((family, choice)) = due else { return Ok(false) };
            Self::claim(&mut st, &family, choice, true)
        };
        self.run_and_release(&task)?;
        Ok(true)
    }

    /// Marks `store` busy and gathers what the compaction needs.
    fn claim(st: &mut EngineState, family: &FamilyMeta, choice: Choice, pass_through: bool) -> Task {
        let store = family.store;
        st.busy.insert(store);
        let chosen: HashSet<u64> = match &choice {
            Choice::Drop(files) | Choice::Merge { inputs: files, .. } => files.iter().copied().collect(),
        };
        let inputs = chosen.iter().filter_map(|f| st.handles.get(f).cloned()).collect();
        let store_files = st.manifest.ssts.iter().filter(|m| m.store == store);
        let older = LeftOut::of(store_files, &chosen, |file| st.handles.get(&file).map(|h| h.reader.clone()));
        let drops = drops_of(st, store);
        Task { store, family: family.clone(), choice, inputs, older, drops, pass_through }
    }

    fn run_and_release(&self, task: &Task) -> Result<()> {
        let result = self.run_task(task);
        let mut st = self.state.lock();
        st.busy.remove(&task.store);
        self.state_cv.notify_all();
        result
    }

    fn run_task(&self, task: &Task) -> Result<()> {
        let Choice::Merge { layout, .. } = task.choice else {
            return self.install_compaction(task, Vec::new());
        };
        let started = Instant::now();
        let readers: Vec<Arc<SstReader>> = task.inputs.iter().map(|h| h.reader.clone()).collect();
        let job = Job {
            inputs: &readers,
            older: &task.older,
            gc_rule: &task.family.gc_rule,
            aggregate: task.family.aggregate,
            now: now_micros(),
            layout,
            drops: &task.drops,
            pass_through: task.pass_through,
            target_file_size: self.opts.target_file_size,
            target_file_rows: picker::TARGET_FILE_ROWS,
        };
        let options = self.opts.sst_options();
        let origin = SstOrigin { family: &task.family.name, store: task.store, created_micros: job.now };
        let mut new_writer = || -> Result<(u64, SstWriter)> {
            let number = self.state.lock().next_file_number();
            let path = self.dir.join(sst::file_name(number));
            Ok((number, SstWriter::create(&*self.fs, &path, origin, options)?))
        };
        let ran = job.run(&mut new_writer)?;
        let outputs = ran.outputs;
        self.counters.add_passed(ran.passed.blocks_copied, ran.passed.entries_copied + ran.passed.entries_added);
        if !outputs.is_empty() {
            self.fs.sync_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }
        let drops_applied = task.drops.iter().map(|d| d.seq).max().unwrap_or(0);
        let handles =
            outputs.iter().map(|o| self.open_output(task.store, o, drops_applied)).collect::<Result<Vec<_>>>()?;
        log::debug!(
            "cellardb: compacted {} files of {} into {} in {:?} ({} blocks copied)",
            task.inputs.len(),
            task.family.name,
            handles.len(),
            started.elapsed(),
            ran.passed.blocks_copied
        );
        self.install_compaction(task, handles)
    }

    /// Opens a file the job wrote; `drops_applied` as in [`SstMeta`].
    fn open_output(&self, store: u32, o: &Output, drops_applied: u64) -> Result<SstHandle> {
        let path = self.dir.join(sst::file_name(o.number));
        let data = self.fs.map(&path).map_err(|e| Error::io(&path, e))?;
        let reader = SstReader::open_with_id(&path, data, o.number)?;
        let meta = SstMeta {
            store,
            file: o.number,
            level: o.level,
            size: o.summary.file_size,
            first_row: o.summary.props.first_row.clone(),
            last_row: o.summary.props.last_row.clone(),
            min_seq: o.summary.props.min_seq,
            max_seq: o.summary.props.max_seq,
            drops_applied,
        };
        Ok(SstHandle::new(reader, meta, self.fs.clone(), self.cache.clone()))
    }

    /// Replaces the task's inputs by `outputs`, atomically, if the inputs
    /// are still live (their family may have been deleted meanwhile).
    fn install_compaction(&self, task: &Task, outputs: Vec<SstHandle>) -> Result<()> {
        let outputs: Vec<Arc<SstHandle>> = outputs.into_iter().map(Arc::new).collect();
        let mut st = self.state.lock();
        let inputs: HashSet<u64> = task.inputs.iter().map(|h| h.meta.file).collect();
        let live = inputs.iter().all(|f| st.handles.contains_key(f));
        if !live {
            for h in &outputs {
                h.mark_obsolete();
            }
            return Ok(());
        }
        let mut next = st.manifest.clone();
        next.ssts.retain(|s| !inputs.contains(&s.file));
        next.ssts.extend(outputs.iter().map(|h| h.meta.clone()));
        self.retire_drops(&st, &mut next);
        if let Err(e) = self.write_manifest(&mut st, &next) {
            // In doubt, the new manifest may be the one that survives: its
            // outputs stay until the next open removes whichever set of
            // files the manifest it finds does not list.
            if !e.in_doubt {
                for h in &outputs {
                    h.mark_obsolete();
                }
            }
            return Err(e.into());
        }
        st.manifest = next;
        for f in &inputs {
            if let Some(h) = st.handles.remove(f) {
                h.mark_obsolete();
            }
        }
        let read: u64 = task.inputs.iter().map(|h| h.meta.size).sum();
        let written: u64 = outputs.iter().map(|h| h.meta.size).sum();
        self.counters.add_compaction(read, written);
        for h in outputs {
            st.handles.insert(h.meta.file, h);
        }
        self.install(&st, self.current().mem.clone());
        st.compaction_requested = true;
        self.state_cv.notify_all();
        Ok(())
    }

    /// Asks the compaction thread to look for work.
    pub(super) fn request_compaction(&self, st: &mut EngineState) {
        st.compaction_requested = true;
        self.state_cv.notify_all();
    }

    /// Level-0 files of the store that has the most.
    pub(super) fn level0_pressure(&self) -> usize {
        self.l0_files.load(Ordering::Relaxed)
    }

    /// Forgets the dropped ranges with nothing left to delete: no file of
    /// the store holds an entry of the range older than the drop, and every
    /// memtable started after it.
    pub(super) fn retire_drops(&self, st: &EngineState, next: &mut ManifestState) {
        let oldest_log = st.imm.first().map_or_else(|| self.current().mem.wal_number(), |m| m.wal_number());
        let ManifestState { ssts, drops, .. } = next;
        drops.retain(|d| !d.is_spent(ssts.iter().any(|s| s.holds_dropped(d)), oldest_log));
    }
}

/// The dropped ranges of `store`.
fn drops_of(st: &EngineState, store: u32) -> Vec<RangeDrop> {
    st.manifest.drops.iter().filter(|d| d.store == store).cloned().collect()
}

/// What the picker needs to know of each file of `store`.
fn file_infos(st: &EngineState, store: u32) -> Vec<FileInfo> {
    st.manifest
        .ssts
        .iter()
        .filter(|m| m.store == store)
        .filter_map(|m| {
            let props = st.handles.get(&m.file)?.reader.props().clone();
            Some(FileInfo {
                file: m.file,
                level: m.level,
                size: m.size,
                holds_dropped: st.manifest.drops.iter().any(|d| m.holds_dropped(d)),
                max_seq: m.max_seq,
                first_row: m.first_row.clone(),
                last_row: m.last_row.clone(),
                min_timestamp: props.min_timestamp,
                max_timestamp: props.max_timestamp,
                cells: props.cells,
                tombstones: props.tombstones,
            })
        })
        .collect()
}
