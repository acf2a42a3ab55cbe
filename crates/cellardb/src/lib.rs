//! # cellardb
//!
//! Bigtable's data model as an embedded LSM-tree storage engine, on local disk.
//!
//! A database is a directory holding tables; a table has column families,
//! each with a GC rule; rows hold timestamped cells in `family:qualifier`
//! columns. Every row mutation is atomic and durable; reads see one
//! consistent snapshot. Writes go to a write-ahead log and a memtable;
//! memtables flush into immutable, zstd-compressed SSTables, one per column
//! family, so a read of one family never touches another's data.
//!
//! cellardb is **not** a server, not distributed, and not Bigtable: there is
//! no replication, no tablet splitting, no network API. It is a library for
//! one process, for people who want Bigtable's model (and to measure its
//! schema patterns) without a cluster.
//!
//! The crate root is the API an application embeds: [`Db`] and [`Table`],
//! [`Options`], [`Mutation`]s, [`Filter`]s, [`RowSet`]s, [`Row`]s,
//! [`GcRule`]s, [`Stats`] and [`Error`]. Two modules are public beside it,
//! each for a narrower audience: [`inspect`] reads single files (an
//! SSTable, a log, a manifest) into structured records, for tools such as
//! `cellar` and for fuzzers; [`fs`] is the file-system seam, through which
//! tests run a database on [`fs::MemFs`].
//!
//! ```
//! use cellardb::{Db, Filter, GcRule, Mutation, RowRange, RowSet};
//!
//! # fn main() -> cellardb::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path())?;
//! let t = db.create_table("weather", [("measurements", GcRule::max_versions(1))])?;
//! t.mutate_row("us-west2#1000#week09", [
//!     Mutation::set_cell("measurements", "pressure", 1_614_556_800_000_000, "95437"),
//! ])?;
//! let row = t.read_row("us-west2#1000#week09", &Filter::pass_all())?.unwrap();
//! assert_eq!(row.latest("measurements", "pressure").unwrap().value, "95437");
//! let rows = t.read_rows(RowSet::from(RowRange::prefix("us-west2#")), &Filter::pass_all()).collect_rows()?;
//! assert_eq!(rows.len(), 1);
//! # Ok(()) }
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cache;
mod coding;
mod compaction;
mod db;
mod error;
pub mod fs;

pub mod inspect;
mod iter;
mod key;
mod manifest;
mod memtable;
mod model;
mod options;
mod read;
mod sst;
mod version;
mod wal;

pub use compaction::CompactionStrategy;
pub use db::{Db, FamilyStats, LevelStats, RecoveryReport, Stats, Table, TableStats};
pub use error::{Error, Result};
pub use model::{
    Aggregate, BytesRegex, Cell, CellRef, Column, Family, FamilySchema, Filter, GcRule, Mutation, ReadModifyWrite, Row,
    RowRange, RowRef, RowSet, TableSchema, TimeRange, Timestamp, limits, validate_instance_name,
};
pub use options::{Compression, Durability, Options, RecoveryMode};
pub use read::{ReadRows, Step};
pub use wal::TornTail;
