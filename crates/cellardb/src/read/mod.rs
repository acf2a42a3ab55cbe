//! The read path: rows out of a merge of every source of a span of keys.
//!
//! [`RowScanner`] gathers a row's entries, assembles each family by
//! Bigtable's rules (`model::assemble`), applies the filter (`model::filter`)
//! and groups the cells into a [`crate::Row`]; [`Seeker`] lets a forward
//! read jump over entries the head of the filter drops anyway. What is read
//! (the snapshot, the sources) is set up in `db/read.rs`.

mod scan;
mod seek;

pub(crate) use scan::{FamilyView, ReadFamilies, RowScanner, Scanned};
pub(crate) use seek::{RowStart, Seeker};
