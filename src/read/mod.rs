//! The read side of the model: which rows ([`RowSet`]), which cells
//! ([`Filter`]), and how a row is assembled from the entries that hold it.

mod assemble;
mod filter;
mod row_set;
mod scan;
mod seek;

pub use filter::{BytesRegex, Filter};
pub use row_set::{RowRange, RowSet};

pub(crate) use assemble::{FamilyRules, LiveCell, assemble_family};
pub(crate) use row_set::KeySpan;
pub(crate) use scan::{FamilyView, RowScanner, dropped_below};
pub(crate) use seek::Seeker;
