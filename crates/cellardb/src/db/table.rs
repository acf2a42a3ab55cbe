//! A handle to one table: writes and reads.

use std::sync::Arc;

use bytes::Bytes;

use super::Db;
use super::stats::TableStats;
use super::write::RowWrite;
use crate::model::mutation::{validate_row_key, validate_row_mutation};
use crate::model::{Filter, Mutation, Row, RowSet};
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
