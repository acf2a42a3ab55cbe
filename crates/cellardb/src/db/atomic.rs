//! Writes that read first: what `Table::check_and_mutate_row` and
//! `Table::read_modify_write_row` do.
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

/// `Table::check_and_mutate_row`, its mutations collected.
pub(super) fn check_and_mutate(
    t: &Table,
    key: &[u8],
    predicate: &Filter,
    on_true: &[Mutation],
    on_false: &[Mutation],
) -> Result<bool> {
    validate_row_key(key)?;
    if on_true.is_empty() && on_false.is_empty() {
        return Err(Error::InvalidArgument(
            "check_and_mutate_row needs a mutation in at least one of its two lists".into(),
        ));
    }
    for list in [on_true, on_false].into_iter().filter(|l| !l.is_empty()) {
        validate_row_mutation(key, list)?;
    }
    predicate.validate()?;
    let core = t.db.core();
    let mut cs = core.commit.lock();
    // Both branches are resolved (so a branch not taken is refused too)
    // under the commit lock, so no schema change comes between the
    // check and the write.
    let sv = core.current();
    let table = meta(t, &sv.schema)?;
    let now = Timestamp::now();
    let (on_true, on_false) = (resolve_branch(table, key, on_true, now)?, resolve_branch(table, key, on_false, now)?);
    let matched = t.read_row(key, predicate)?.is_some();
    if let Some(batch) = if matched { on_true } else { on_false } {
        core.commit_batch_locked(&mut cs, batch)?;
    }
    Ok(matched)
}

/// `Table::read_modify_write_row`, its rules collected.
pub(super) fn read_modify_write(t: &Table, key: &[u8], rules: &[ReadModifyWrite]) -> Result<Row> {
    validate_row_key(key)?;
    let core = t.db.core();
    let mut cs = core.commit.lock();
    let sv = core.current();
    let table = meta(t, &sv.schema)?;
    validate_rules(table, rules)?;
    let now = Timestamp::now();
    let current = t.read_row(key, &Filter::cells_per_column_limit(1))?;
    let cells = new_cells(rules, current.as_ref(), now)?;
    let mutations: Vec<Mutation> = cells
        .iter()
        .map(|(family, qualifier, cell)| Mutation::set_cell(family.clone(), qualifier, cell.timestamp, &cell.value))
        .collect();
    let batch: RowBatch<'_> = resolve(table, key, &mutations, now)?;
    core.commit_batch_locked(&mut cs, batch)?;
    Ok(row_of(key, cells))
}

/// The table in `schema`, if it was not deleted.
fn meta<'s>(t: &Table, schema: &'s Schema) -> Result<&'s TableMeta> {
    schema.table_by_id(t.id).ok_or_else(|| Error::table_not_found(&t.name))
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
