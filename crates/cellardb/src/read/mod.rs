//! The read path: from a snapshot to the rows handed out.
//!
//! A read ([`ReadRows`], made by `Table::read_rows`) takes a snapshot of
//! the database when its first row is read, then owns everything after:
//!
//! - `rows.rs`: the read's one loop, span by span of its row set, with the
//!   limit, the reversed order and the rows it reports passing over;
//! - `sources.rs`: which memtables and files may hold a span's rows
//!   (key range, bloom filter, where a file may start) and their merge;
//! - `run.rs`: a level's files read one after another, as one source;
//! - `gather.rs`: one row's entries out of the merge, into one buffer;
//! - `seek.rs`: jumps over entries the head of the filter drops anyway;
//! - `scan.rs`: a gathered row assembled family by family by Bigtable's
//!   rules (`model::assemble`), filtered (`model::filter`) and handed out.
//!
//! When a source may start inside a row, or a read skip part of a column,
//! is Bigtable's rule, stated once in `model::shortcut`.

mod gather;
mod rows;
mod run;
mod scan;
mod seek;
mod sources;

use std::sync::Arc;

pub(crate) use gather::RowGather;
pub use rows::{ReadRows, Step};
#[cfg(test)]
pub(crate) use run::RunIter;

use crate::Result;
use crate::version::SuperVersion;

/// Where a read takes its snapshot: a table of an open database. The
/// database implements it; `read` does not reach back into the database.
pub(crate) trait TableSnapshots: Send + Sync {
    /// The highest sequence number a read sees and the version that holds
    /// it (`Error::Closed` once the database is closed).
    ///
    /// # Errors
    /// `Error::Closed` after close.
    fn snapshot(&self) -> Result<(u64, Arc<SuperVersion>)>;
    /// The table's id, by which a snapshot's schema knows it.
    fn table_id(&self) -> u32;
    /// The table's name, for errors.
    fn table_name(&self) -> &str;
}
