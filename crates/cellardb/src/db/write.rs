//! The write path: validate, group, log, apply, publish.
//!
//! Writers queue up; the first becomes the leader and commits the whole
//! queue at once (LevelDB's and RocksDB's group commit): it resolves each
//! row mutation against the schema into a row batch (`model::batch`: one
//! sequence number per mutation, so a delete and a set in one row mutation
//! apply in order), gives each batch its sequence numbers, logs one record
//! per batch with one write (and one `fdatasync` under `Durability::Sync`),
//! applies the batches to the memtable and publishes the last sequence
//! number, which is the moment the writes become visible, all rows of the
//! group together.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{CommitState, Core};
use crate::manifest::LogMeta;
use crate::memtable::Memtable;
use crate::model::batch::resolve;
use crate::model::cell::now_micros;
use crate::model::{Mutation, RowBatch, Timestamp};
use crate::options::Durability;
use crate::version::Schema;
use crate::wal::{self, WalWriter};
use crate::{Error, Result};

/// One row mutation on its way in.
pub(crate) struct RowWrite {
    pub table: u32,
    pub table_name: Arc<str>,
    pub key: Bytes,
    pub mutations: Vec<Mutation>,
}

/// A writer waiting in the queue, and where its results go.
struct Waiter {
    rows: Vec<RowWrite>,
    done: Mutex<Option<Vec<Result<()>>>>,
}

/// The writers waiting for a leader.
#[derive(Default)]
pub(crate) struct WriteQueue {
    pending: Vec<Arc<Waiter>>,
    leader_active: bool,
}

impl Core {
    /// Commits `rows`, each atomically, and returns one result per row.
    pub(crate) fn write(&self, rows: Vec<RowWrite>) -> Vec<Result<()>> {
        let mut q = self.queue.lock();
        if !q.leader_active && q.pending.is_empty() {
            // Nobody else is writing: commit at once, without queueing.
            q.leader_active = true;
            drop(q);
            let _leading = Leading(self);
            return self.commit(&[&rows]);
        }
        let waiter = Arc::new(Waiter { rows, done: Mutex::new(None) });
        q.pending.push(waiter.clone());
        loop {
            if let Some(results) = waiter.done.lock().take() {
                return results;
            }
            if !q.leader_active {
                break;
            }
            self.queue_cv.wait(&mut q);
        }
        q.leader_active = true;
        let group = std::mem::take(&mut q.pending);
        drop(q);
        let leading = Leading(self);
        let slices: Vec<&[RowWrite]> = group.iter().map(|w| w.rows.as_slice()).collect();
        let mut results = self.commit(&slices).into_iter();
        for w in &group {
            *w.done.lock() = Some(results.by_ref().take(w.rows.len()).collect());
        }
        drop(leading);
        let results = waiter.done.lock().take();
        results.unwrap_or_else(|| vec![Err(Error::Closed)])
    }
}

/// Leadership of the write queue, handed back when dropped — also when a
/// commit panics, so no writer waits forever for a leader that is gone
/// (its own waiters then get `Error::Closed`).
struct Leading<'a>(&'a Core);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.0.stop_leading();
    }
}

impl Core {
    /// Hands leadership back and wakes every waiter: those whose results
    /// are ready, and those queued meanwhile, one of which leads next. (A
    /// waiter may be waiting for a result another leader set, so the wake-up
    /// cannot depend on the queue being non-empty.)
    fn stop_leading(&self) {
        let mut q = self.queue.lock();
        q.leader_active = false;
        self.queue_cv.notify_all();
    }

    /// Commits the rows of every writer of `group`: one result per row,
    /// the writers' rows one after another.
    fn commit(&self, group: &[&[RowWrite]]) -> Vec<Result<()>> {
        let mut cs = self.commit.lock();
        self.commit_locked(&mut cs, group)
    }

    pub(super) fn commit_locked(&self, cs: &mut CommitState, group: &[&[RowWrite]]) -> Vec<Result<()>> {
        let rows = group.iter().flat_map(|rows| rows.iter());
        if let Err(e) = self.check_commit(cs) {
            return rows.map(|_| Err(e.clone())).collect();
        }
        let schema = self.current().schema.clone();
        let now = now_micros();
        let server_time = Timestamp::from_micros(now).truncate_to_millis();
        let mut staged = Vec::new();
        let mut results: Vec<Result<()>> =
            rows.map(|row| resolve_write(&schema, row, server_time).map(|b| staged.push(b))).collect();
        if let Err(e) = self.log_and_apply(cs, &mut staged, &schema, now) {
            results.iter_mut().filter(|r| r.is_ok()).for_each(|r| *r = Err(e.clone()));
        }
        results
    }

    /// Commits one batch resolved already (by a write that read first,
    /// under the commit lock since).
    pub(super) fn commit_batch_locked(&self, cs: &mut CommitState, batch: RowBatch<'_>) -> Result<()> {
        self.check_commit(cs)?;
        let schema = self.current().schema.clone();
        self.log_and_apply(cs, &mut [batch], &schema, now_micros())
    }

    /// Refuses a commit the database cannot take; delays it while
    /// compaction falls behind.
    fn check_commit(&self, cs: &CommitState) -> Result<()> {
        self.check_writable()?;
        if let Some(first) = &cs.poisoned {
            return Err(Error::poisoned(first));
        }
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        if self.level0_pressure() >= super::compact::L0_SLOWDOWN {
            // Compaction is falling behind: give it time, writers in line.
            std::thread::sleep(super::compact::SLOWDOWN_DELAY);
            self.counters.add_stall(super::compact::SLOWDOWN_DELAY);
        }
        Ok(())
    }

    /// Numbers `staged` in order, logs one record per batch with one write
    /// (and one sync), applies them to the memtable and publishes them. A
    /// failure to log poisons the database: what the log holds is unknown.
    /// `schema` is the one `staged` was resolved against (no schema change
    /// passes the commit lock the caller holds); `now` (microseconds) is
    /// the commit's time, for the cells a GC rule collects as they are
    /// written.
    fn log_and_apply(
        &self,
        cs: &mut CommitState,
        staged: &mut [RowBatch<'_>],
        schema: &Schema,
        now: i64,
    ) -> Result<()> {
        if staged.is_empty() {
            return Ok(());
        }
        let mut encoded = std::mem::take(&mut cs.encoded);
        encoded.clear();
        let mut written = Written::default();
        for batch in staged.iter_mut() {
            batch.renumber(cs.next_seq);
            cs.next_seq += batch.seq_count();
            wal::append_record(&mut encoded, |payload| batch.encode(payload));
            written.add(schema, batch, now);
        }
        let logged = self.append_to_log(cs, &encoded);
        cs.encoded = encoded;
        if let Err(e) = logged {
            cs.poisoned = Some(e.clone());
            return Err(e);
        }
        self.counters.add_logical(written.logical);
        self.counters.add_expired_at_write(written.expired);
        cs.mem.insert(staged);
        self.visible_seq.store(cs.next_seq - 1, Ordering::Release);
        if cs.mem.approximate_bytes() >= self.opts.memtable_size {
            // A failure poisons the database (see `switch_memtable`); these
            // writes are in the log and the memtable already.
            let _ = self.switch_memtable(cs);
        }
        Ok(())
    }

    fn append_to_log(&self, cs: &mut CommitState, encoded: &[u8]) -> Result<()> {
        let wal = cs.wal.as_mut().ok_or_else(|| Error::ReadOnly { path: self.dir.clone() })?;
        wal.append(encoded)?;
        if self.opts.durability == Durability::Sync {
            wal.sync()?;
        }
        self.counters.add_wal(encoded.len() as u64);
        Ok(())
    }

    /// Makes every acknowledged write durable before a manifest change that
    /// later writes are ordered after (a range drop, a schema change): under
    /// `Buffered` the log is synced first, so power loss cannot keep the
    /// change yet lose writes acknowledged before it, and what survives is a
    /// prefix of what was acknowledged. Refused once the database is
    /// poisoned; a failed sync poisons it.
    /// `st` is the engine state, locked by the caller (after `cs`, as
    /// everywhere), for its background failure.
    pub(super) fn sync_log_before_manifest(&self, cs: &mut CommitState, st: &super::EngineState) -> Result<()> {
        if let Some(first) = cs.poisoned.as_ref().or(st.bg_error.as_ref()) {
            return Err(Error::poisoned(first));
        }
        let Some(wal) = cs.wal.as_mut() else { return Ok(()) };
        if self.opts.durability == Durability::Sync {
            return Ok(()); // every acknowledged record is synced already
        }
        let synced = wal.sync();
        if let Err(e) = &synced {
            cs.poisoned = Some(e.clone());
        }
        synced
    }

    /// Freezes the memtable and starts a new one with a new log, waiting
    /// first while too many frozen memtables wait for flush (the stall that
    /// keeps memory bounded). Holds the commit lock throughout, so writers
    /// wait too. A failure (of the old log's sync, of the new log) poisons
    /// the database: what the log holds is no longer known.
    pub(crate) fn switch_memtable(&self, cs: &mut CommitState) -> Result<()> {
        let switched = self.try_switch_memtable(cs);
        if let Err(e) = &switched {
            cs.poisoned = Some(e.clone());
        }
        switched
    }

    fn try_switch_memtable(&self, cs: &mut CommitState) -> Result<()> {
        let mut st = self.state.lock();
        let behind = |st: &super::EngineState| {
            st.imm.len() >= self.opts.max_immutable_memtables || self.level0_pressure() >= super::compact::L0_STOP
        };
        while behind(&st) && st.bg_error.is_none() && !st.shutting_down {
            let started = std::time::Instant::now();
            self.state_cv.wait(&mut st);
            self.counters.add_stall(started.elapsed());
        }
        if let Some(e) = &st.bg_error {
            return Err(Error::poisoned(e));
        }
        let old = cs.wal.as_mut().ok_or_else(|| Error::ReadOnly { path: self.dir.clone() })?;
        let number = st.next_file_number();
        old.sync()?;
        let wal = WalWriter::create(&*self.fs, &self.dir, number, self.opts.memtable_size)?;
        // The manifest lists the new log before anything is written to it,
        // and the old one as closed at its length (its file is trimmed to
        // it only then; a crash before that leaves zeros after it, which
        // recovery accepts). Its write syncs the directory, so the new
        // log's name is durable too.
        let (closed, closed_size) = (cs.mem.wal_number(), old.len());
        self.change_manifest(&mut st, |next| {
            next.close_log(closed, closed_size);
            next.logs.push(LogMeta::open(number));
        })?;
        if let Some(closed) = cs.wal.replace(wal) {
            super::trim_closed_log(closed);
        }
        let frozen = std::mem::replace(&mut cs.mem, Arc::new(Memtable::new(number)));
        st.imm.push(frozen);
        self.install(&st, cs.mem.clone());
        self.state_cv.notify_all();
        Ok(())
    }
}

/// `row` resolved against the table it names in `schema` (see
/// [`resolve`]).
///
/// # Errors
/// `Error::NotFound` if the table was deleted; what [`resolve`] refuses.
pub(crate) fn resolve_write<'a>(schema: &Schema, row: &'a RowWrite, now: Timestamp) -> Result<RowBatch<'a>> {
    let table = schema.table_by_id(row.table).ok_or_else(|| Error::table_not_found(&row.table_name))?;
    resolve(table, &row.key, &row.mutations, now)
}

/// What a commit wrote, for the stats.
#[derive(Default)]
struct Written {
    /// Logical bytes, as the workload defines them: row, family, qualifier,
    /// value and 8 for the timestamp, per entry.
    logical: u64,
    /// Cells the family's GC rule collected at once: written with a
    /// timestamp older than its `max_age`, so never visible.
    expired: u64,
}

impl Written {
    fn add(&mut self, schema: &Schema, batch: &RowBatch<'_>, now: i64) {
        // A batch's entries come grouped by family: look each up once.
        let mut family = (u32::MAX, None);
        for e in &batch.entries {
            if e.store != family.0 {
                family = (e.store, schema.family_by_store(e.store));
            }
            let Some(f) = family.1 else { continue };
            self.logical += (e.entry_ref(batch.row).logical_size() + f.name.len()) as u64;
            // Collected even as the newest version: by age alone.
            if e.kind.is_cell() && f.gc_rule.collects(0, e.timestamp, now) {
                self.expired += 1;
            }
        }
    }
}
