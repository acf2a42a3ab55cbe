//! The schema-pattern lab: Bigtable's time-series schema guide turned into
//! measurements on this machine.
//!
//! [`run_pattern`] loads the balloon workload ([`crate::workload`]) in one
//! schema pattern, flushes and fully compacts it, and times the four
//! queries of `workload.md` ([`queries`]), each checked against the
//! generator. [`report`] writes what the workload's "What a report states"
//! asks for as markdown, CSV and SVG charts. `cellar lab` is the command;
//! `docs/schema-patterns.md` reads the figures.

pub mod machine;
pub mod queries;
pub mod report;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
mod run;
pub mod svg;

pub use queries::{Answer, Measurement, Query, QueryKind};
pub use run::{LabConfig, PatternReport, Progress, QueryReport, run_pattern};
