//! Compaction: which files to merge ([`picker`], pure) and running a merge
//! ([`job`]). What each row keeps is Bigtable's rule, in `model::retain`.
//! The engine side — the background thread, installing the result,
//! `compact_table` — lives in `db/compact.rs`. `docs/compaction.md` has the
//! strategies and their figures.

pub(crate) mod job;
pub(crate) mod picker;

pub use picker::CompactionStrategy;
