//! Aggregate column families: cells that merge what is written to them.

use std::fmt;

use crate::{Error, Result};

/// How an aggregate family merges the inputs written to one cell (one
/// column and timestamp). Values are 64-bit signed integers, big-endian
/// on the wire and on disk, as Bigtable's `Int64` with `BigEndianBytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    /// The sum of the inputs; overflow wraps, as in Bigtable.
    Sum,
    /// The smallest input.
    Min,
    /// The largest input.
    Max,
}

impl Aggregate {
    /// The cell's value after merging `input` into `value`.
    pub fn merge(self, value: i64, input: i64) -> i64 {
        match self {
            Aggregate::Sum => value.wrapping_add(input),
            Aggregate::Min => value.min(input),
            Aggregate::Max => value.max(input),
        }
    }

    /// The name `cbt` uses for it.
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Sum => "sum",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
        }
    }
}

impl fmt::Display for Aggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Decodes an aggregate cell's value or input: exactly 8 bytes, big-endian.
pub(crate) fn decode_i64(value: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(value.try_into().ok()?))
}

/// Checks a value written to an aggregate family.
pub(crate) fn validate_aggregate_value(family: &str, value: &[u8]) -> Result<()> {
    if value.len() == 8 {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "a value written to aggregate column family {family:?} must be an 8-byte big-endian integer, not {} bytes",
        value.len()
    )))
}
