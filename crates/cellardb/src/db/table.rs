//! A handle to one table: every method of `Table`, Bigtable's data API for
//! one table. Writes that read first (`atomic.rs`) and the row-key sample
//! (`sample.rs`) keep their logic beside; the row-range drop is the
//! admin's (`admin.rs`).

use std::sync::Arc;

use bytes::Bytes;

use super::stats::TableStats;
use super::write::RowWrite;
use super::{Db, atomic, sample};
use crate::model::mutation::{validate_row_key, validate_row_mutation};
use crate::model::{Filter, Mutation, ReadModifyWrite, Row, RowRange, RowSet};
use crate::read::{ReadRows, TableSnapshots};
use crate::version::SuperVersion;
use crate::{Error, Result};

/// A table of an open database. Cheap to clone, `Send + Sync`; keeps the
/// database open while it lives. If the table is deleted, calls fail with
/// `Error::NotFound` (a new table of the same name is a different table).
#[derive(Clone)]
pub struct Table {
    pub(super) db: Db,
    pub(super) id: u32,
    pub(super) name: Arc<str>,
}

impl Table {
    pub(super) fn new(db: Db, id: u32, name: &str) -> Self {
        Table { db, id, name: name.into() }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database the table belongs to.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Applies `mutations` to row `key`, in order, atomically and durably as
    /// the database's durability promises.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a key, qualifier, value, timestamp or
    /// count that breaks a limit (nothing is written); `Error::NotFound` for
    /// an unknown family; `Error::Io` or `Error::Poisoned` if the log cannot
    /// be written.
    pub fn mutate_row(&self, key: impl AsRef<[u8]>, mutations: impl IntoIterator<Item = Mutation>) -> Result<()> {
        let row = self.row_write(key.as_ref(), mutations.into_iter().collect())?;
        self.db.core().write(vec![row]).pop().unwrap_or(Err(Error::Closed))
    }

    /// Applies many row mutations in one group: each row atomic on its own,
    /// one result per entry, in order.
    pub fn mutate_rows<K: AsRef<[u8]>, M: IntoIterator<Item = Mutation>>(
        &self,
        entries: impl IntoIterator<Item = (K, M)>,
    ) -> Vec<Result<()>> {
        let mut results: Vec<Option<Result<()>>> = Vec::new();
        let mut rows = Vec::new();
        for (key, mutations) in entries {
            match self.row_write(key.as_ref(), mutations.into_iter().collect()) {
                Ok(row) => {
                    rows.push(row);
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut committed = self.db.core().write(rows).into_iter();
        results.into_iter().map(|r| r.unwrap_or_else(|| committed.next().unwrap_or(Err(Error::Closed)))).collect()
    }

    fn row_write(&self, key: &[u8], mutations: Vec<Mutation>) -> Result<RowWrite> {
        validate_row_mutation(key, &mutations)?;
        Ok(RowWrite { table: self.id, table_name: self.name.clone(), key: Bytes::copy_from_slice(key), mutations })
    }

    /// Row `key` as `filter` sees it, or `None` if it has no cell (after
    /// deletes, GC and the filter).
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad key or filter, `Error::NotFound` if
    /// the table was deleted, `Error::Corruption` if a file it reads is damaged.
    pub fn read_row(&self, key: impl AsRef<[u8]>, filter: &Filter) -> Result<Option<Row>> {
        validate_row_key(key.as_ref())?;
        self.read_rows(RowSet::new().key(key), filter).next().transpose()
    }

    /// The rows of `rows` that have cells `filter` keeps, in key order, as
    /// an iterator of `Result<Row>`; add `.limit(n)` and `.reversed()`
    /// before the first row is read. The read sees one snapshot, taken
    /// when the first row is read, and streams rows from it (it never
    /// holds the whole answer in memory). After an error it yields nothing
    /// more.
    pub fn read_rows(&self, rows: RowSet, filter: &Filter) -> ReadRows {
        ReadRows::new(Box::new(self.clone()), rows, filter)
    }

    /// Applies `true_mutations` to row `key` if `predicate` outputs any cell
    /// of it, else `false_mutations`, atomically with respect to every other
    /// writer; returns whether the predicate matched. (`Filter::pass_all()`
    /// asks whether the row exists.) One list may be empty: then that
    /// outcome writes nothing.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for an invalid key, predicate or mutation
    /// (nothing is written); the write's errors.
    pub fn check_and_mutate_row(
        &self,
        key: impl AsRef<[u8]>,
        predicate: &Filter,
        true_mutations: impl IntoIterator<Item = Mutation>,
        false_mutations: impl IntoIterator<Item = Mutation>,
    ) -> Result<bool> {
        let (on_true, on_false): (Vec<_>, Vec<_>) =
            (true_mutations.into_iter().collect(), false_mutations.into_iter().collect());
        atomic::check_and_mutate(self, key.as_ref(), predicate, &on_true, &on_false)
    }

    /// Applies `rules` in order to the newest cells of their columns in row
    /// `key`, atomically with respect to every other writer, and returns the
    /// cells written: one per column, in model order. As in Bigtable, a new
    /// cell's timestamp is the time of the write (to the millisecond), or
    /// the newest cell's if that is later, which it then replaces.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for an invalid key, no rules or too many, an
    /// increment of a cell that is not 8 bytes, or a value over the limit;
    /// `Error::NotFound` for an unknown family. Nothing is written then.
    pub fn read_modify_write_row(
        &self,
        key: impl AsRef<[u8]>,
        rules: impl IntoIterator<Item = ReadModifyWrite>,
    ) -> Result<Row> {
        atomic::read_modify_write(self, key.as_ref(), &rules.into_iter().collect::<Vec<_>>())
    }

    /// Deletes every row in `range` — in every family, in the memtable and
    /// on disk — as Bigtable's `DropRowRange` does. Files holding only rows
    /// of the range are deleted at once; others are rewritten by compaction
    /// soon after, without touching unrelated files. Writes after the call
    /// are kept.
    ///
    /// # Errors
    /// `Error::NotFound` if the table was deleted; I/O errors writing the manifest.
    #[allow(clippy::needless_pass_by_value, reason = "row ranges are passed by value throughout the API")]
    pub fn drop_row_range(&self, range: RowRange) -> Result<()> {
        self.db.core().drop_rows(self.id, &self.name, &range.half_open())
    }

    /// Deletes every row of the table.
    ///
    /// # Errors
    /// As [`Table::drop_row_range`].
    pub fn drop_all_rows(&self) -> Result<()> {
        self.drop_row_range(RowRange::all())
    }

    /// Row keys that split the table into contiguous ranges of roughly
    /// equal size, each with the approximate bytes of the table before it,
    /// as Bigtable's `SampleRowKeys`: keys ascend, and the last entry is the
    /// empty key with the table's whole size. Computed from the SSTables'
    /// indexes (every data block's last key and stored size) without
    /// reading data; writes not yet flushed are not counted. Ranges are
    /// about 1/100 of the table, and at least 64 KiB.
    ///
    /// # Errors
    /// `Error::NotFound` if the table was deleted.
    pub fn sample_row_keys(&self) -> Result<Vec<(Bytes, u64)>> {
        let sv = self.db.core().view()?;
        let table = sv.schema.table_by_id(self.id).ok_or_else(|| Error::table_not_found(&self.name))?;
        Ok(sample::sample_row_keys(&sv, table))
    }

    /// Files, bytes and cells of the table, per family.
    ///
    /// # Errors
    /// `Error::NotFound` if the table was deleted.
    pub fn stats(&self) -> Result<TableStats> {
        let sv = self.db.core().view()?;
        let t = sv.schema.table_by_id(self.id).ok_or_else(|| Error::table_not_found(&self.name))?;
        Ok(TableStats::of(t, &sv))
    }
}

/// A read holds its table, which keeps the database open while it runs.
impl TableSnapshots for Table {
    fn snapshot(&self) -> Result<(u64, Arc<SuperVersion>)> {
        let core = self.db.core();
        core.check_open()?;
        Ok(core.snapshot())
    }

    fn table_id(&self) -> u32 {
        self.id
    }

    fn table_name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("name", &self.name).finish_non_exhaustive()
    }
}
