//! The write path: validate, group, log, apply, publish.
//!
//! Writers queue up; the first becomes the leader and commits the whole
//! queue at once (LevelDB's and RocksDB's group commit): it resolves each
//! row mutation against the schema, gives it a range of sequence numbers
//! (one per mutation, so a delete and a set in one row mutation apply in
//! order), encodes one log record per row, writes them with one call (and
//! one `fdatasync` under `Durability::Sync`), inserts the entries in the
//! memtable and publishes the last sequence number, which is the moment the
//! writes become visible, all rows of the group together.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{CommitState, Core};
use std::borrow::Cow;

use crate::key::{EntryKind, encode_range_end};
use crate::memtable::Memtable;
use crate::model::{Mutation, Timestamp, validate_aggregate_value};
use crate::options::Durability;
use crate::wal::{LogEntry, RowRecord, WalWriter, encode_record};
use crate::{Error, Result};

use super::version::Schema;

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
            let mut results = self.commit(&[&rows]);
            return results.pop().unwrap_or_default();
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
            *w.done.lock() = results.next();
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

    fn commit(&self, group: &[&[RowWrite]]) -> Vec<Vec<Result<()>>> {
        let mut cs = self.commit.lock();
        self.commit_locked(&mut cs, group)
    }

    pub(super) fn commit_locked(&self, cs: &mut CommitState, group: &[&[RowWrite]]) -> Vec<Vec<Result<()>>> {
        let refuse = |e: Error| group.iter().map(|rows| rows.iter().map(|_| Err(e.clone())).collect()).collect();
        if let Err(e) = self.check_writable() {
            return refuse(e);
        }
        if let Some(why) = &cs.poisoned {
            return refuse(Error::Poisoned(why.clone()));
        }
        if let Some(e) = self.background_error() {
            return refuse(e);
        }
        if self.level0_pressure() >= super::compact::L0_SLOWDOWN {
            // Compaction is falling behind: give it time, writers in line.
            std::thread::sleep(super::compact::SLOWDOWN_DELAY);
            self.counters.add_stall(super::compact::SLOWDOWN_DELAY);
        }
        let schema = self.current().schema.clone();
        let now = Timestamp::now();
        let mut encoded = std::mem::take(&mut cs.encoded);
        encoded.clear();
        let mut staged = Vec::new();
        let mut results: Vec<Vec<Result<()>>> = group
            .iter()
            .map(|rows| {
                rows.iter().map(|row| self.stage_row(cs, &schema, row, now, &mut encoded, &mut staged)).collect()
            })
            .collect();
        let logged = if staged.is_empty() { Ok(()) } else { self.log_and_apply(cs, &encoded, &staged) };
        drop(staged);
        cs.encoded = encoded;
        if let Err(e) = logged {
            cs.poisoned = Some(e.to_string());
            results.iter_mut().flatten().filter(|r| r.is_ok()).for_each(|r| *r = Err(e.clone()));
            return results;
        }
        if cs.mem.approximate_bytes() >= self.opts.memtable_size {
            // A failure poisons the database (see `switch_memtable`); these
            // writes are in the log and the memtable already.
            let _ = self.switch_memtable(cs);
        }
        results
    }

    /// Resolves a row against the schema, encodes its log record and keeps
    /// it for the memtable.
    fn stage_row<'a>(
        &self,
        cs: &mut CommitState,
        schema: &Schema,
        row: &'a RowWrite,
        now: Timestamp,
        encoded: &mut Vec<u8>,
        staged: &mut Vec<RowRecord<'a>>,
    ) -> Result<()> {
        let record = resolve_row(schema, row, now, cs.next_seq)?;
        encode_record(encoded, &record);
        cs.next_seq += row.mutations.len() as u64;
        // As the workload defines it: row, family, qualifier, value, 8.
        // A row mutation's entries come grouped by family: look each up once.
        let mut family = (u32::MAX, 0);
        let mut logical = 0;
        for e in &record.entries {
            if e.store != family.0 {
                family = (e.store, schema.family_of_store(e.store).map_or(0, str::len));
            }
            logical += e.entry_ref(record.row).logical_size() + family.1;
        }
        self.counters.add_logical(logical as u64);
        staged.push(record);
        Ok(())
    }

    fn log_and_apply(&self, cs: &mut CommitState, encoded: &[u8], staged: &[RowRecord<'_>]) -> Result<()> {
        let wal = cs.wal.as_mut().ok_or_else(|| Error::ReadOnly { path: self.dir.clone() })?;
        wal.append(encoded)?;
        if self.opts.durability == Durability::Sync {
            wal.sync()?;
        }
        self.counters.add_wal(encoded.len() as u64);
        cs.mem.insert(staged);
        self.visible_seq.store(cs.next_seq - 1, Ordering::Release);
        Ok(())
    }

    /// Freezes the memtable and starts a new one with a new log, waiting
    /// first while too many frozen memtables wait for flush (the stall that
    /// keeps memory bounded). Holds the commit lock throughout, so writers
    /// wait too. A failure (of the old log's sync, of the new log) poisons
    /// the database: what the log holds is no longer known.
    pub(crate) fn switch_memtable(&self, cs: &mut CommitState) -> Result<()> {
        let switched = self.try_switch_memtable(cs);
        if let Err(e) = &switched {
            cs.poisoned = Some(e.to_string());
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
            return Err(e.clone());
        }
        let old = cs.wal.as_mut().ok_or_else(|| Error::ReadOnly { path: self.dir.clone() })?;
        let number = self.next_file_number(&mut st);
        old.sync()?;
        let wal = WalWriter::create(&*self.fs, &self.dir, number, self.opts.memtable_size)?;
        if self.opts.durability == Durability::Sync {
            self.fs.sync_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }
        cs.wal = Some(wal);
        let frozen = std::mem::replace(&mut cs.mem, Arc::new(Memtable::new(number)));
        st.imm.push(frozen);
        self.install(&st, cs.mem.clone());
        self.state_cv.notify_all();
        Ok(())
    }
}

/// The log record of a row mutation: its entries, with sequence numbers
/// from `first_seq`, one per mutation, borrowing the mutations' bytes.
///
/// # Errors
/// `Error::NotFound` for an unknown table or family, `Error::InvalidArgument`
/// for a timestamp the table's granularity does not allow.
pub(crate) fn resolve_row<'a>(
    schema: &Schema,
    row: &'a RowWrite,
    now: Timestamp,
    first_seq: u64,
) -> Result<RowRecord<'a>> {
    let table = schema.table_by_id(row.table).ok_or_else(|| Error::table_not_found(&row.table_name))?;
    let family_of = |family: &str| {
        table.families.iter().find(|f| f.name == family).ok_or_else(|| Error::family_not_found(&table.name, family))
    };
    let store_of = |family: &str| family_of(family).map(|f| f.store);
    let tombstone = |store, seq| LogEntry {
        store,
        kind: EntryKind::DeleteFamily,
        seq,
        qualifier: &[],
        timestamp: 0,
        value: Cow::Borrowed(&[]),
    };
    let put = |store, seq, qualifier: &'a [u8], timestamp, value| LogEntry {
        store,
        kind: EntryKind::Put,
        seq,
        qualifier,
        timestamp,
        value,
    };
    let mut entries = Vec::with_capacity(row.mutations.len());
    for (seq, m) in (first_seq..).zip(&row.mutations) {
        match m {
            Mutation::SetCell { family, qualifier, timestamp, value } => {
                let f = family_of(family)?;
                if f.aggregate.is_some() {
                    validate_aggregate_value(family, value)?;
                }
                entries.push(put(f.store, seq, qualifier, timestamp.resolve(now)?, Cow::Borrowed(value)));
            }
            Mutation::AddToCell { family, qualifier, timestamp, input } => {
                let f = family_of(family)?;
                if f.aggregate.is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "add_to_cell on column family {family:?}, which is not an aggregate family"
                    )));
                }
                // In an aggregate family's store every cell entry is an input.
                let input = Cow::Owned(input.to_be_bytes().to_vec());
                entries.push(put(f.store, seq, qualifier, timestamp.resolve(now)?, input));
            }
            Mutation::DeleteFromColumn { family, qualifier, range } => entries.push(LogEntry {
                store: store_of(family)?,
                kind: EntryKind::DeleteColumn,
                seq,
                qualifier,
                timestamp: range.start,
                value: Cow::Owned(encode_range_end(range.end)),
            }),
            Mutation::DeleteFromFamily { family } => entries.push(tombstone(store_of(family)?, seq)),
            Mutation::DeleteFromRow => entries.extend(table.families.iter().map(|f| tombstone(f.store, seq))),
        }
    }
    Ok(RowRecord { row: &row.key, first_seq, entries })
}
