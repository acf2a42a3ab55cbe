//! Read-modify-write rules: what `Table::read_modify_write_row` does to the
//! newest cell of a column.

use bytes::Bytes;

use super::mutation::limits;
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
