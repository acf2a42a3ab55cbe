//! RocksDB under the lab (behind the `rocksdb` feature): the same events,
//! the same key designs and the same query plans as cellardb, on
//! [`RocksBaseline`], so that `cellar lab --rocksdb` compares the engines
//! in one run.
//!
//! Each event is one write batch, as the baseline is measured (`docs/schema-patterns.md`).
//! Each query plan is read the way a RocksDB user would with the standard
//! cell key: a seek per row key, a bounded scan per range or prefix, a
//! reverse seek for the last row, and a seek into the column when the plan
//! names one.

use crate::baseline::{CellSelection, RocksBaseline};
use crate::queries::{Answer, CellCollector, CellRef, Form, Plan, Query, Rows};
use crate::run::{LabConfig, LabEngine, PatternReport, Progress, measure, remove_dir};
use crate::workload::{SchemaPattern, Workload};
use cellardb::{Mutation, Result};
use std::path::PathBuf;

/// Loads `pattern` into a fresh RocksDB database under `config.dir`, with
/// `config.options`' durability and block-cache size, and measures it as
/// [`crate::run_pattern`] measures cellardb; the database is removed
/// afterwards.
///
/// # Errors
/// RocksDB's errors as `Error::Io`; `Error::InvalidArgument` if a query
/// returns other measurements than the generator says.
pub fn run_pattern(
    config: &LabConfig,
    pattern: SchemaPattern,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<PatternReport> {
    let (name, dir, engine) = open(config, pattern)?;
    measure(config, pattern, name, dir, engine, progress)
}

/// A fresh RocksDB database for `pattern` under `config.dir`.
pub(crate) fn open(config: &LabConfig, pattern: SchemaPattern) -> Result<(&'static str, PathBuf, Box<dyn LabEngine>)> {
    let dir = config.dir.join(format!("rocksdb-{}", pattern.name()));
    remove_dir(&dir)?;
    let engine = RocksBaseline::open(&dir, config.options.get_durability(), config.options.get_block_cache_size())?;
    Ok(("rocksdb", dir, Box::new(engine)))
}

/// Runs `q` in `form` on `db`, which holds `pattern`'s rows of `w`: what
/// [`Query::run`] is for cellardb.
///
/// # Errors
/// RocksDB's errors as `Error::Io`; `Error::InvalidArgument` for rows that
/// do not decode as `pattern`'s.
pub fn query(db: &RocksBaseline, pattern: SchemaPattern, w: &Workload, form: Form, q: &Query) -> Result<Answer> {
    let mut cells = CellCollector::default();
    for plan in q.plans(pattern, w, form) {
        read_plan(db, &plan, &mut |c| cells.push(c))?;
    }
    q.answer(pattern, w, form, &cells)
}

impl LabEngine for RocksBaseline {
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()> {
        self.write_rows(&rows)
    }

    fn flush(&mut self) -> Result<()> {
        RocksBaseline::flush(self)
    }

    fn compact(&mut self) -> Result<()> {
        RocksBaseline::flush(self)?;
        RocksBaseline::compact(self);
        Ok(())
    }

    fn bytes_written(&self) -> Result<u64> {
        let w = self.writes();
        Ok(w.wal_bytes + w.flush_bytes + w.compaction_bytes)
    }

    fn stall_time(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_micros(self.writes().stall_micros))
    }

    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<()> {
        read_plan(self, plan, sink)
    }

    /// Dropping the `DB` closes it: its files are synced and closed.
    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

/// Reads `plan` from `db`, handing each cell to `sink`.
pub fn read_plan(db: &RocksBaseline, plan: &Plan, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<()> {
    let select = CellSelection {
        column: plan.column.map(|q| (plan.family, q.as_bytes())),
        time: plan.time,
        newest_per_column: plan.newest_per_column,
    };
    let (from, to) = match &plan.rows {
        Rows::Keys(keys) => return read_keys(db, keys, plan.last_row_only, &select, sink),
        Rows::Range(from, to) => (from.as_bytes().to_vec(), Some(to.as_bytes().to_vec())),
        Rows::Prefix(p) => (p.as_bytes().to_vec(), prefix_end(p.as_bytes())),
        Rows::All => (Vec::new(), None),
    };
    if plan.last_row_only {
        db.last_row(&from, to.as_deref(), &select, sink)?;
        return Ok(());
    }
    db.read_rows(&from, to.as_deref(), &select, sink)
}

/// Rows `keys` in key order; only the last one with a selected cell if `last_only`.
fn read_keys(
    db: &RocksBaseline,
    keys: &[String],
    last_only: bool,
    select: &CellSelection<'_>,
    sink: &mut dyn FnMut(CellRef<'_>),
) -> Result<()> {
    let mut keys: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    keys.sort_unstable();
    keys.dedup();
    if last_only {
        for k in keys.iter().rev() {
            if db.read_row(k, select, sink)? {
                break;
            }
        }
        return Ok(());
    }
    db.read_keys(&keys, select, sink)
}

/// The first key after every key starting with `prefix`: its last byte
/// below 0xff incremented; `None` if there is none (all 0xff).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}
