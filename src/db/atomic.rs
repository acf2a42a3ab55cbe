//! Writes that read first: `check_and_mutate_row` and
//! `read_modify_write_row`.
//!
//! Both hold the commit lock from the read to the write, so no other writer
//! of the database, and so none of the row, commits in between: the row
//! read is the row the write applies to, as Bigtable promises for one row.

use bytes::Bytes;

use super::Table;
use super::write::RowWrite;
use crate::model::{ReadModifyWrite, limits, validate_qualifier, validate_row_key, validate_row_mutation};
use crate::{Cell, Column, Error, Family, Filter, Mutation, Result, Row, Timestamp};

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
        let (on_true, on_false) = (self.checked_write(key, on_true)?, self.checked_write(key, on_false)?);
        let core = self.db.core();
        let mut cs = core.commit.lock();
        let matched = self.read_row(key, predicate)?.is_some();
        if let Some(row) = if matched { on_true } else { on_false } {
            core.commit_locked(&mut cs, &[&[row]]).pop().and_then(|mut r| r.pop()).unwrap_or(Err(Error::Closed))?;
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
        self.check_rules(&rules)?;
        let core = self.db.core();
        let mut cs = core.commit.lock();
        let current = self.read_row(key, &Filter::cells_per_column_limit(1))?;
        let cells = new_cells(&rules, current.as_ref(), Timestamp::now().micros())?;
        let mutations = cells
            .iter()
            .map(|(family, qualifier, cell)| Mutation::set_cell(family.clone(), qualifier, cell.timestamp, &cell.value))
            .collect();
        let row =
            RowWrite { table: self.id, table_name: self.name.clone(), key: Bytes::copy_from_slice(key), mutations };
        core.commit_locked(&mut cs, &[&[row]]).pop().and_then(|mut r| r.pop()).unwrap_or(Err(Error::Closed))?;
        Ok(group(key, cells))
    }

    /// `mutations` of row `key` as a write, checked against the schema
    /// (families, timestamps) as the commit will check them, so that a
    /// branch not taken is refused too; `None` if there are none.
    fn checked_write(&self, key: &[u8], mutations: Vec<Mutation>) -> Result<Option<RowWrite>> {
        if mutations.is_empty() {
            return Ok(None);
        }
        let row =
            RowWrite { table: self.id, table_name: self.name.clone(), key: Bytes::copy_from_slice(key), mutations };
        super::write::resolve_row(&self.db.core().current().schema, &row, Timestamp::now(), 1)?;
        Ok(Some(row))
    }

    /// Checks a read-modify-write's rules against the limits and the schema.
    fn check_rules(&self, rules: &[ReadModifyWrite]) -> Result<()> {
        if rules.is_empty() {
            return Err(Error::InvalidArgument("a read-modify-write needs at least one rule".into()));
        }
        if rules.len() > limits::MAX_MUTATIONS_PER_ROW {
            return Err(Error::InvalidArgument(format!(
                "read-modify-write has {} rules, over the limit of {}",
                rules.len(),
                limits::MAX_MUTATIONS_PER_ROW
            )));
        }
        let sv = self.db.core().current();
        let table = sv.schema.table_by_id(self.id).ok_or_else(|| Error::table_not_found(&self.name))?;
        for rule in rules {
            let (family, qualifier) = rule.column();
            validate_qualifier(qualifier)?;
            let Some(f) = table.families.iter().find(|f| f.name == family) else {
                return Err(Error::NotFound { kind: "column family", name: format!("{}:{family}", self.name) });
            };
            if f.aggregate.is_some() {
                return Err(Error::InvalidArgument(format!(
                    "read_modify_write_row on aggregate column family {family:?}: use Mutation::add_to_cell"
                )));
            }
        }
        Ok(())
    }
}

/// The cell each column of `rules` gets, in the order columns first appear.
fn new_cells(rules: &[ReadModifyWrite], current: Option<&Row>, now: i64) -> Result<Vec<(String, Bytes, Cell)>> {
    let mut cells: Vec<(String, Bytes, Cell)> = Vec::new();
    for rule in rules {
        let (family, qualifier) = rule.column();
        let existing = cells.iter().position(|(f, q, _)| f == family && q == qualifier);
        let (value, timestamp) = match existing {
            Some(i) => (Some(cells[i].2.value.clone()), cells[i].2.timestamp),
            None => {
                let newest = current.and_then(|r| r.latest(family, qualifier));
                (newest.map(|c| c.value.clone()), newest.map_or(now, |c| c.timestamp.max(now)))
            }
        };
        let cell = Cell { timestamp, value: rule.apply(value.as_deref())?, labels: Vec::new() };
        match existing {
            Some(i) => cells[i].2 = cell,
            None => cells.push((family.to_owned(), qualifier.clone(), cell)),
        }
    }
    Ok(cells)
}

/// `cells` as a row, families and columns in model order.
fn group(key: &[u8], mut cells: Vec<(String, Bytes, Cell)>) -> Row {
    cells.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut families: Vec<Family> = Vec::new();
    for (family, qualifier, cell) in cells {
        if families.last().is_none_or(|f| f.name != family) {
            families.push(Family { name: family, columns: Vec::new() });
        }
        if let Some(f) = families.last_mut() {
            f.columns.push(Column { qualifier, cells: vec![cell] });
        }
    }
    Row { key: Bytes::copy_from_slice(key), families }
}
