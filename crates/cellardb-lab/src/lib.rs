//! # cellardb-lab
//!
//! The schema-pattern lab: Bigtable's time-series schema guide turned into
//! measurements on this machine, with [cellardb] as the store.
//!
//! - [`workload`]: the weather-balloon data set, exact to the byte
//!   (`docs/workload.md`), and the schema patterns that write it.
//! - [`queries`]: the five queries of the workload, planned per pattern in
//!   the form a user writes first and in the tuned form, and checked
//!   against the generator.
//! - [`run_pattern`]: loads the workload in one pattern, flushes and fully
//!   compacts it, measures ingest, bytes and each query;
//!   [`run_rounds`] repeats that for each engine, interleaved: each
//!   pattern loaded in each engine, then every query run on each in turn.
//! - [`report`]: what a report states, as markdown, CSV and SVG charts
//!   ([`svg`]), with the machine it ran on ([`machine`]).
//! - `baseline` (feature `rocksdb`): RocksDB holding the same cells under
//!   the standard cell key, run through the same plans.
//!
//! `cellar lab` is the command; `docs/schema-patterns.md` reads the figures.
//! None of this is part of the engine: an application that embeds
//! `cellardb` does not compile it.

#[cfg(feature = "rocksdb")]
pub mod baseline;
pub mod design;
pub mod endpoint;
pub mod generator;
pub mod machine;
pub mod measure;
pub mod plan;
pub mod queries;
pub mod report;
mod run;
pub mod spec;
pub mod summary;
pub mod svg;
pub mod workload;

pub use queries::{Answer, CellCollector, CellRef, Form, Measurement, Plan, Query, QueryKind};
pub use run::{Engine, LabConfig, PatternReport, Progress, QueryReport, run_pattern, run_rounds};
