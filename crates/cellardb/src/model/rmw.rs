//! Read-modify-write rules: what `Table::read_modify_write_row` does to the
//! newest cell of a column.

use std::sync::Arc;

use bytes::Bytes;

use super::mutation::{limits, validate_qualifier};
use super::row::{ColumnRun, Columns};
use super::{Cell, Row, TableMeta, Timestamp};
use crate::{Error, Result};

/// One rule of a read-modify-write, applied to the newest cell of its
/// column (or, for a later rule on the same column, to the previous rule's
/// result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadModifyWrite {
    /// Appends bytes to the value (a missing cell counts as empty).
    Append {
        /// Column family.
        family: String,
        /// Column qualifier.
        qualifier: Bytes,
        /// Bytes to append.
        value: Bytes,
    },
    /// Adds to the value read as a 64-bit big-endian signed integer (a
    /// missing cell counts as 0; overflow wraps, as in Bigtable).
    Increment {
        /// Column family.
        family: String,
        /// Column qualifier.
        qualifier: Bytes,
        /// The amount, which may be negative.
        amount: i64,
    },
}

impl ReadModifyWrite {
    /// Appends `value` to `family:qualifier`.
    pub fn append(family: impl Into<String>, qualifier: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Self {
        ReadModifyWrite::Append {
            family: family.into(),
            qualifier: Bytes::copy_from_slice(qualifier.as_ref()),
            value: Bytes::copy_from_slice(value.as_ref()),
        }
    }

    /// Adds `amount` to the 64-bit big-endian integer in `family:qualifier`.
    pub fn increment(family: impl Into<String>, qualifier: impl AsRef<[u8]>, amount: i64) -> Self {
        ReadModifyWrite::Increment {
            family: family.into(),
            qualifier: Bytes::copy_from_slice(qualifier.as_ref()),
            amount,
        }
    }

    /// The rule's column.
    pub fn column(&self) -> (&str, &Bytes) {
        match self {
            ReadModifyWrite::Append { family, qualifier, .. }
            | ReadModifyWrite::Increment { family, qualifier, .. } => (family, qualifier),
        }
    }

    /// The value the rule makes of `current` (`None`: no cell).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if an increment meets a value that is not
    /// 8 bytes long, or an append makes a value over the limit.
    pub(crate) fn apply(&self, current: Option<&[u8]>) -> Result<Bytes> {
        match self {
            ReadModifyWrite::Append { value, .. } => {
                let old = current.unwrap_or_default();
                if old.len() + value.len() > limits::MAX_VALUE {
                    return Err(Error::InvalidArgument(format!(
                        "append makes a value of {} bytes, over the limit of {} bytes",
                        old.len() + value.len(),
                        limits::MAX_VALUE
                    )));
                }
                Ok([old, &value[..]].concat().into())
            }
            ReadModifyWrite::Increment { family, qualifier, amount } => {
                let old = match current {
                    None => 0,
                    Some(v) => i64::from_be_bytes(v.try_into().map_err(|_| {
                        Error::InvalidArgument(format!(
                            "increment of {family}:{}: the cell holds {} bytes, not a 64-bit big-endian integer",
                            String::from_utf8_lossy(qualifier),
                            v.len()
                        ))
                    })?),
                };
                Ok(Bytes::copy_from_slice(&old.wrapping_add(*amount).to_be_bytes()))
            }
        }
    }
}

/// Checks a read-modify-write's rules against the limits and the schema.
///
/// # Errors
/// `Error::InvalidArgument` for no rules or too many, a qualifier over the
/// limit, or a rule on an aggregate family; `Error::NotFound` for an
/// undeclared family.
pub(crate) fn validate_rules(table: &TableMeta, rules: &[ReadModifyWrite]) -> Result<()> {
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
    for rule in rules {
        let (family, qualifier) = rule.column();
        validate_qualifier(qualifier)?;
        let Some(f) = table.family(family) else {
            return Err(Error::family_not_found(&table.name, family));
        };
        if f.aggregate.is_some() {
            return Err(Error::InvalidArgument(format!(
                "read_modify_write_row on aggregate column family {family:?}: use Mutation::add_to_cell"
            )));
        }
    }
    Ok(())
}

/// The cell each column of `rules` gets, in the order columns first appear,
/// given the row's newest cells `current` and the write's time `now` (µs):
/// as in Bigtable, a new cell's timestamp is `now`, or the newest cell's if
/// that is later, which it then replaces.
///
/// # Errors
/// What [`ReadModifyWrite::apply`] refuses.
pub(crate) fn new_cells(
    rules: &[ReadModifyWrite],
    current: Option<&Row>,
    now: Timestamp,
) -> Result<Vec<(String, Bytes, Cell)>> {
    let mut cells: Vec<(String, Bytes, Cell)> = Vec::new();
    for rule in rules {
        let (family, qualifier) = rule.column();
        let existing = cells.iter().position(|(f, q, _)| f == family && q == qualifier);
        let (value, timestamp) = if let Some(i) = existing {
            (Some(cells[i].2.value.clone()), cells[i].2.timestamp)
        } else {
            let newest = current.and_then(|r| r.latest(family, qualifier));
            (newest.map(|c| c.value.clone()), newest.map_or(now, |c| c.timestamp.max(now)))
        };
        let cell = Cell { timestamp, value: rule.apply(value.as_deref())?, labels: Vec::new() };
        match existing {
            Some(i) => cells[i].2 = cell,
            None => cells.push((family.to_owned(), qualifier.clone(), cell)),
        }
    }
    Ok(cells)
}

/// `cells` (one per column) as a row, families and columns in model order.
pub(crate) fn row_of(key: &[u8], mut cells: Vec<(String, Bytes, Cell)>) -> Row {
    cells.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut names: Vec<String> = Vec::new();
    let mut columns = None;
    let mut row_cells = Vec::with_capacity(cells.len());
    for (family, qualifier, cell) in cells {
        if names.last() != Some(&family) {
            names.push(family);
        }
        row_cells.push(cell);
        let family = u16::try_from(names.len() - 1).unwrap_or(u16::MAX);
        let end = u32::try_from(row_cells.len()).unwrap_or(u32::MAX);
        Columns::push(&mut columns, ColumnRun { family, qualifier, end });
    }
    Row::new(Bytes::copy_from_slice(key), Arc::new(names), columns.unwrap_or(Columns::Many(Vec::new())), row_cells)
}
