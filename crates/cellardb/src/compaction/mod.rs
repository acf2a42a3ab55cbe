//! Compaction: which files to merge ([`picker`], pure), what a merge is
//! ([`job`]), running it ([`run`]) into its output files ([`output`]), and
//! handing what no merge would change to the output as it is ([`pass`]).
//! What each row keeps is Bigtable's rule, in `model::retain`. The engine
//! side — the background thread, installing the result,
//! `compact_table` — lives in `db/compact.rs`. `docs/compaction.md` has the
//! strategies and their figures.

pub(crate) mod job;
pub(crate) mod output;
pub(crate) mod pass;
pub(crate) mod picker;
pub(crate) mod run;

pub use picker::CompactionStrategy;
