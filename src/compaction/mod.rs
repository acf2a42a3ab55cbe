//! Compaction: which files to merge ([`picker`], pure), what each row keeps
//! ([`gc`], pure), and running a merge ([`job`]). The engine side — the
//! background thread, installing the result, `compact_table` — lives in
//! `db/compact.rs`. `docs/compaction.md` has the strategy and its figures.

pub(crate) mod gc;
pub(crate) mod job;
pub mod picker;

pub use picker::{Choice, CompactionStrategy, FileInfo, OutputLayout};
