//! # cellardb-lab
//!
//! The schema lab: what Bigtable key designs cost for a user's own data,
//! measured on this machine with [cellardb] as the store, or on any
//! Bigtable endpoint.
//!
//! For a schema spec (`cellar lab --spec`, `docs/lab.md`):
//!
//! - [`spec`]: the TOML spec (the data, the key designs, the queries),
//!   checked into a [`spec::Spec`], every mistake one error with its file,
//!   line and field;
//! - [`generator`]: the spec's data, deterministic from its seed, streamed;
//! - [`design`]: an event written as a design's rows, and a cell read back;
//! - [`plan`]: each query's reads in a design, natural and tuned, and the
//!   answer it must give;
//! - [`measure`]: the runner (designs in rounds, queries timed and checked)
//!   over a [`measure::Store`]: cellardb here, or a Bigtable endpoint
//!   ([`endpoint`]);
//! - [`memory`]: the process's peak heap and resident memory over a design;
//! - [`summary`]: the report, as HTML, markdown and CSV, with verdicts and
//!   a recommendation, its charts drawn by [`chart`], its machine told by
//!   [`machine`].
//!
//! The weather-balloon lab (`cellar lab` without a spec), kept for its
//! comparison with RocksDB:
//!
//! - [`workload`]: the balloon data set, exact to the byte
//!   (`docs/workload.md`), and the schema patterns that write it.
//! - [`queries`]: its five queries, planned per pattern in the form a user
//!   writes first and in the tuned form, and checked against the generator.
//! - [`run_pattern`], [`run_rounds`]: load, flush, compact and query each
//!   pattern in each engine, interleaved, each engine's database in a
//!   process of its own if asked ([`worker`]), the engines taking each
//!   query form's runs in turn, a batch at a time (`timing`).
//! - [`report`]: its report, as markdown, CSV and SVG charts ([`chart`]),
//!   with the machine it ran on ([`machine`]) and how it ran during each
//!   query form ([`pace`]).
//! - `baseline` (feature `rocksdb`): RocksDB holding the same cells under
//!   the standard cell key, run through the same plans.
//!
//! `docs/schema-patterns.md` reads the balloon figures. None of this is
//! part of the engine: an application that embeds `cellardb` does not
//! compile it.

#[cfg(feature = "rocksdb")]
pub mod baseline;
pub mod chart;
pub mod design;
pub mod endpoint;
pub mod generator;
mod ingest;
pub mod machine;
pub mod measure;
pub mod memory;
pub mod pace;
pub mod plan;
pub mod queries;
pub mod report;
mod run;
pub mod spec;
pub mod summary;
mod timing;
pub mod worker;
pub mod workload;

pub use queries::{Answer, CellCollector, CellRef, Form, Measurement, Plan, Query, QueryKind};
pub use run::{Engine, LabConfig, PatternReport, Processes, Progress, QueryReport, run_pattern, run_rounds};
