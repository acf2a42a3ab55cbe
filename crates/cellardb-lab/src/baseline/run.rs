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
use crate::queries::{Answer, Plan, Query, Rows};
use crate::run::{LabConfig, LabEngine, PatternReport, Progress, measure, remove_dir};
use crate::workload::{SchemaPattern, Workload};
use cellardb::{Mutation, Result, Row};

/// Loads `pattern` into a fresh RocksDB database under `config.dir`, with
/// `config.options`' durability, and measures it as [`crate::run_pattern`]
/// measures cellardb; the database is removed afterwards.
///
/// # Errors
/// RocksDB's errors as `Error::Io`; `Error::InvalidArgument` if a query
/// returns other measurements than the generator says.
pub fn run_pattern(
    config: &LabConfig,
    pattern: SchemaPattern,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<PatternReport> {
    let dir = config.dir.join(format!("rocksdb-{}", pattern.name()));
    remove_dir(&dir)?;
    let engine = RocksBaseline::open(&dir, config.options.get_durability())?;
    let report = measure(config, pattern, "rocksdb", &dir, Box::new(engine), progress);
    remove_dir(&dir)?;
    report
}

/// Runs `q` on `db`, which holds `pattern`'s rows of `w`: what
/// [`Query::run`] is for cellardb.
///
/// # Errors
/// RocksDB's errors as `Error::Io`; `Error::InvalidArgument` for rows that
/// do not decode as `pattern`'s.
pub fn query(db: &RocksBaseline, pattern: SchemaPattern, w: &Workload, q: &Query) -> Result<Answer> {
    let plan = q.plan(pattern, w);
    plan.answer(pattern, &read(db, &plan, pattern.family())?)
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

    fn query(&self, pattern: SchemaPattern, w: &Workload, q: &Query) -> Result<Answer> {
        query(self, pattern, w, q)
    }

    /// Dropping the `DB` closes it: its files are synced and closed.
    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

/// The rows `plan` reads from `db`, whose cells are all in `family`.
fn read(db: &RocksBaseline, plan: &Plan, family: &str) -> Result<Vec<Row>> {
    let select = CellSelection {
        column: plan.column.map(|q| (family, q.as_bytes())),
        time: plan.time,
        newest_per_column: plan.newest_per_column,
    };
    let (from, to) = match &plan.rows {
        Rows::Keys(keys) => return read_keys(db, keys, plan.last_row_only, &select),
        Rows::Range(from, to) => (from.as_bytes().to_vec(), Some(to.as_bytes().to_vec())),
        Rows::Prefix(p) => (p.as_bytes().to_vec(), prefix_end(p.as_bytes())),
        Rows::All => (Vec::new(), None),
    };
    if plan.last_row_only {
        return Ok(db.last_row(&from, to.as_deref(), &select)?.into_iter().collect());
    }
    db.read_rows(&from, to.as_deref(), &select)
}

/// Rows `keys`, one seek each in key order; only the last one found if
/// `last_only`.
fn read_keys(db: &RocksBaseline, keys: &[String], last_only: bool, select: &CellSelection<'_>) -> Result<Vec<Row>> {
    let mut keys: Vec<&String> = keys.iter().collect();
    keys.sort();
    keys.dedup();
    if last_only {
        for k in keys.iter().rev() {
            if let Some(row) = db.read_row(k.as_bytes(), select)? {
                return Ok(vec![row]);
            }
        }
        return Ok(Vec::new());
    }
    keys.into_iter().map(|k| db.read_row(k.as_bytes(), select)).filter_map(Result::transpose).collect()
}

/// The first key after every key starting with `prefix`: its last byte
/// below 0xff incremented; `None` if there is none (all 0xff).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}
