//! The mutations of a row, and the limits every write is checked against.

use bytes::Bytes;

use super::{TimeRange, Timestamp};
use crate::{Error, Result};

/// Bigtable's limits; each broken limit is an `Error::InvalidArgument` naming it.
pub mod limits {
    /// Largest row key, in bytes (keys must also be non-empty).
    pub const MAX_ROW_KEY: usize = crate::key::MAX_ROW_KEY;
    /// Largest column qualifier, in bytes.
    pub const MAX_QUALIFIER: usize = 16 << 10;
    /// Largest cell value, in bytes.
    pub const MAX_VALUE: usize = 100 << 20;
    /// Most mutations in one row mutation.
    pub const MAX_MUTATIONS_PER_ROW: usize = 100_000;
    /// Largest row mutation: key, qualifiers and values together, in bytes.
    pub const MAX_ROW_MUTATION_BYTES: usize = 256 << 20;
    /// Longest column family name, in bytes.
    pub const MAX_FAMILY_NAME: usize = 64;
    /// Longest table id, in bytes (a qualified table name adds its
    /// project and instance).
    pub const MAX_TABLE_NAME: usize = 50;
    /// Longest project or instance id in a qualified table name, in bytes.
    pub const MAX_RESOURCE_ID: usize = 128;
}

/// One change to a row. A row mutation applies its list in order, atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Writes a cell, replacing any cell at the same column and timestamp.
    SetCell {
        /// Column family (must be declared).
        family: String,
        /// Column qualifier (any bytes, may be empty).
        qualifier: Bytes,
        /// Cell timestamp, or [`Timestamp::SERVER`].
        timestamp: Timestamp,
        /// Cell value.
        value: Bytes,
    },
    /// Deletes the column's cells whose timestamps lie in `range`.
    DeleteFromColumn {
        /// Column family.
        family: String,
        /// Column qualifier.
        qualifier: Bytes,
        /// Timestamps to delete.
        range: TimeRange,
    },
    /// Deletes every cell of the row in one family.
    DeleteFromFamily {
        /// Column family.
        family: String,
    },
    /// Deletes every cell of the row.
    DeleteFromRow,
    /// Merges `input` into the cell at `family:qualifier` and `timestamp`
    /// of an aggregate family (Bigtable's `AddToCell`): the cell's value
    /// becomes the family's aggregate of it and the input, or the input if
    /// there is no cell there yet.
    AddToCell {
        /// Column family (must be declared with an aggregate).
        family: String,
        /// Column qualifier (any bytes, may be empty).
        qualifier: Bytes,
        /// Cell timestamp: explicit, as Bigtable requires for `AddToCell`.
        timestamp: Timestamp,
        /// The input merged in.
        input: i64,
    },
}

impl Mutation {
    /// Writes `value` at `family:qualifier` with `timestamp`.
    ///
    /// A timestamp older than the family's `max_age` (see
    /// [`crate::GcRule::max_age`]) is accepted, but the cell is collected at
    /// once and never read; [`crate::Stats::cells_expired_at_write`] counts
    /// such cells.
    pub fn set_cell(
        family: impl Into<String>,
        qualifier: impl AsRef<[u8]>,
        timestamp: impl Into<Timestamp>,
        value: impl AsRef<[u8]>,
    ) -> Self {
        Mutation::SetCell {
            family: family.into(),
            qualifier: Bytes::copy_from_slice(qualifier.as_ref()),
            timestamp: timestamp.into(),
            value: Bytes::copy_from_slice(value.as_ref()),
        }
    }

    /// Deletes the cells of `family:qualifier` whose timestamps lie in `range`.
    pub fn delete_from_column(family: impl Into<String>, qualifier: impl AsRef<[u8]>, range: TimeRange) -> Self {
        Mutation::DeleteFromColumn {
            family: family.into(),
            qualifier: Bytes::copy_from_slice(qualifier.as_ref()),
            range,
        }
    }

    /// Deletes every cell of the row in `family`.
    pub fn delete_from_family(family: impl Into<String>) -> Self {
        Mutation::DeleteFromFamily { family: family.into() }
    }

    /// Deletes every cell of the row.
    pub fn delete_from_row() -> Self {
        Mutation::DeleteFromRow
    }

    /// Merges `input` into the cell at `family:qualifier` and `timestamp` of
    /// an aggregate family.
    pub fn add_to_cell(
        family: impl Into<String>,
        qualifier: impl AsRef<[u8]>,
        timestamp: impl Into<Timestamp>,
        input: i64,
    ) -> Self {
        Mutation::AddToCell {
            family: family.into(),
            qualifier: Bytes::copy_from_slice(qualifier.as_ref()),
            timestamp: timestamp.into(),
            input,
        }
    }

    /// The family this mutation names, if any.
    pub fn family(&self) -> Option<&str> {
        match self {
            Mutation::SetCell { family, .. }
            | Mutation::DeleteFromColumn { family, .. }
            | Mutation::DeleteFromFamily { family }
            | Mutation::AddToCell { family, .. } => Some(family),
            Mutation::DeleteFromRow => None,
        }
    }
}

/// Checks a row key against Bigtable's rules: non-empty, at most 4 KiB.
pub(crate) fn validate_row_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::InvalidArgument("row key is empty".into()));
    }
    if key.len() > limits::MAX_ROW_KEY {
        return Err(Error::InvalidArgument(format!(
            "row key is {} bytes, over the limit of {} bytes",
            key.len(),
            limits::MAX_ROW_KEY
        )));
    }
    Ok(())
}

/// Checks the parts of a row mutation that need no schema: key, count,
/// qualifier and value sizes, time ranges. Families and timestamps are
/// checked when the mutation is resolved against the schema.
pub(crate) fn validate_row_mutation(key: &[u8], mutations: &[Mutation]) -> Result<()> {
    validate_row_key(key)?;
    if mutations.is_empty() {
        return Err(Error::InvalidArgument("a row mutation needs at least one mutation".into()));
    }
    if mutations.len() > limits::MAX_MUTATIONS_PER_ROW {
        return Err(Error::InvalidArgument(format!(
            "row mutation has {} mutations, over the limit of {}",
            mutations.len(),
            limits::MAX_MUTATIONS_PER_ROW
        )));
    }
    mutations.iter().try_for_each(validate_mutation)?;
    let total = key.len()
        + mutations
            .iter()
            .map(|m| match m {
                Mutation::SetCell { qualifier, value, .. } => qualifier.len() + value.len(),
                Mutation::DeleteFromColumn { qualifier, .. } => qualifier.len(),
                Mutation::AddToCell { qualifier, .. } => qualifier.len() + 8,
                _ => 0,
            })
            .sum::<usize>();
    if total > limits::MAX_ROW_MUTATION_BYTES {
        return Err(Error::InvalidArgument(format!(
            "row mutation holds {total} bytes, over the limit of {} bytes",
            limits::MAX_ROW_MUTATION_BYTES
        )));
    }
    Ok(())
}

fn validate_mutation(m: &Mutation) -> Result<()> {
    match m {
        Mutation::SetCell { qualifier, value, .. } => {
            validate_qualifier(qualifier)?;
            if value.len() > limits::MAX_VALUE {
                return Err(Error::InvalidArgument(format!(
                    "cell value is {} bytes, over the limit of {} bytes",
                    value.len(),
                    limits::MAX_VALUE
                )));
            }
            Ok(())
        }
        Mutation::DeleteFromColumn { qualifier, range, .. } => {
            validate_qualifier(qualifier)?;
            range.validate()
        }
        Mutation::AddToCell { qualifier, timestamp, .. } => {
            validate_qualifier(qualifier)?;
            if *timestamp == Timestamp::SERVER {
                return Err(Error::InvalidArgument(
                    "add_to_cell needs an explicit timestamp, not Timestamp::SERVER (as Bigtable)".into(),
                ));
            }
            Ok(())
        }
        Mutation::DeleteFromFamily { .. } | Mutation::DeleteFromRow => Ok(()),
    }
}

/// Checks a qualifier against Bigtable's limit of 16 KiB.
pub(crate) fn validate_qualifier(q: &[u8]) -> Result<()> {
    if q.len() > limits::MAX_QUALIFIER {
        return Err(Error::InvalidArgument(format!(
            "column qualifier is {} bytes, over the limit of {} bytes",
            q.len(),
            limits::MAX_QUALIFIER
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_must_be_non_empty_and_at_most_4_kib() {
        assert!(validate_row_key(b"").is_err());
        assert!(validate_row_key(&[b'k'; limits::MAX_ROW_KEY]).is_ok());
        let err = validate_row_key(&[b'k'; limits::MAX_ROW_KEY + 1]).unwrap_err();
        assert!(err.to_string().contains("4096"), "{err}");
    }

    #[test]
    fn oversized_qualifiers_and_values_are_rejected() {
        let q = vec![0u8; limits::MAX_QUALIFIER + 1];
        let m = [Mutation::set_cell("f", &q, 0, "v")];
        assert!(validate_row_mutation(b"r", &m).is_err());
        assert!(validate_row_mutation(b"r", &[]).is_err());
        let big = vec![0u8; 100 << 20];
        let three = [
            Mutation::set_cell("f", "a", 0, &big),
            Mutation::set_cell("f", "b", 0, &big),
            Mutation::set_cell("f", "c", 0, &big),
        ];
        let err = validate_row_mutation(b"r", &three).unwrap_err();
        assert!(err.to_string().contains("268435456"), "{err}");
    }
}
