//! Internal iterators: the one trait every source of entries implements
//! (memtables in `memtable/iter.rs`, SSTables in `sst/iter.rs`, a level's
//! files read one after another in `read/run.rs`), and
//! [`MergingIter`], which merges sources into one ordered stream. Reads and
//! compaction take a merge a row at a time (`read::RowGather`).

mod merging;

pub use merging::MergingIter;

use crate::Result;
use crate::key::{EntryRef, InternalKey};

/// A positioned stream of entries in key order (or reversed).
pub trait EntrySource: Send {
    /// The entry under the source, `None` when exhausted.
    fn current(&self) -> Option<EntryRef<'_>>;
    /// Moves to the next entry.
    ///
    /// # Errors
    /// What reading the source's next entry failed with.
    fn advance(&mut self) -> Result<()>;
    /// Moves forward to the first entry not less than `target`; nothing if
    /// the source is there already. Only sources read forward are sought.
    ///
    /// # Errors
    /// What reading the source failed with.
    fn seek(&mut self, target: &InternalKey) -> Result<()>;
}

#[cfg(test)]
mod conformance;
