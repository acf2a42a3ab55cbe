//! Writes that read first: `check_and_mutate_row` and
//! `read_modify_write_row`.
//!
//! Both hold the commit lock from the read to the write, so no other writer
//! of the database, and so none of the row, commits in between: the row
//! read is the row the write applies to, as Bigtable promises for one row.

use super::Table;
use crate::model::batch::resolve;
use crate::model::mutation::{validate_row_key, validate_row_mutation};
use crate::model::rmw::{new_cells, row_of, validate_rules};
use crate::model::{ReadModifyWrite, RowBatch, TableMeta};
use crate::version::Schema;
use crate::{Error, Filter, Mutation, Result, Row, Timestamp};

impl Table {
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
        let key = key.as_ref();
        validate_row_key(key)?;
        let (on_true, on_false): (Vec<Mutation>, Vec<Mutation>) =
            (true_mutations.into_iter().collect(), false_mutations.into_iter().collect());
        if on_true.is_empty() && on_false.is_empty() {
            return Err(Error::InvalidArgument(
                "check_and_mutate_row needs a mutation in at least one of its two lists".into(),
            ));
        }
        for list in [&on_true, &on_false].into_iter().filter(|l| !l.is_empty()) {
            validate_row_mutation(key, list)?;
        }
        predicate.validate()?;
        let core = self.db.core();
        let mut cs = core.commit.lock();
        // Both branches are resolved (so a branch not taken is refused too)
        // under the commit lock, so no schema change comes between the
        // check and the write.
        let sv = core.current();
        let table = self.meta(&sv.schema)?;
        let now = Timestamp::now();
        let (on_true, on_false) =
            (resolve_branch(table, key, &on_true, now)?, resolve_branch(table, key, &on_false, now)?);
        let matched = self.read_row(key, predicate)?.is_some();
        if let Some(batch) = if matched { on_true } else { on_false } {
            core.commit_batch_locked(&mut cs, batch)?;
        }
        Ok(matched)
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
        let key = key.as_ref();
        validate_row_key(key)?;
        let rules: Vec<ReadModifyWrite> = rules.into_iter().collect();
        let core = self.db.core();
        let mut cs = core.commit.lock();
        let sv = core.current();
        let table = self.meta(&sv.schema)?;
        validate_rules(table, &rules)?;
        let now = Timestamp::now();
        let current = self.read_row(key, &Filter::cells_per_column_limit(1))?;
        let cells = new_cells(&rules, current.as_ref(), now)?;
        let mutations: Vec<Mutation> = cells
            .iter()
            .map(|(family, qualifier, cell)| Mutation::set_cell(family.clone(), qualifier, cell.timestamp, &cell.value))
            .collect();
        let batch: RowBatch<'_> = resolve(table, key, &mutations, now)?;
        core.commit_batch_locked(&mut cs, batch)?;
        Ok(row_of(key, cells))
    }

    /// The table in `schema`, if it was not deleted.
    fn meta<'s>(&self, schema: &'s Schema) -> Result<&'s TableMeta> {
        schema.table_by_id(self.id).ok_or_else(|| Error::table_not_found(&self.name))
    }
}

/// A branch of a conditional write, resolved; `None` if it writes nothing.
fn resolve_branch<'a>(
    table: &TableMeta,
    key: &'a [u8],
    mutations: &'a [Mutation],
    now: Timestamp,
) -> Result<Option<RowBatch<'a>>> {
    if mutations.is_empty() {
        return Ok(None);
    }
    resolve(table, key, mutations, now).map(Some)
}
