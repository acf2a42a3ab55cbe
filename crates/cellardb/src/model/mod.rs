//! Bigtable's rules, in one pure home: nothing here touches a file or a
//! lock, and no rule reads the clock (the time of a read or write is passed
//! in). The one clock here is [`Timestamp::now`], which the API offers to
//! applications and `db/` calls to stamp a write or a read.
//!
//! - the data model: [`cell`] (timestamps, time ranges), [`row`], [`schema`],
//!   [`gc_rule`], [`aggregate`] families;
//! - writes: [`mutation`] (and Bigtable's limits), [`rmw`]
//!   (read-modify-write), and [`batch`], a row mutation resolved into the
//!   entries it writes, which the log and the memtable both take;
//! - reads: [`row_set`], [`filter`] (every `RowFilter`), and [`assemble`],
//!   one row's entries turned into the cells a read returns, with deletes,
//!   the snapshot, [`range_drop`]s and the GC rule applied;
//! - compaction: [`retain`], what a compaction keeps of a row;
//! - [`shortcut`]: when a read or a compaction may skip entries without
//!   changing an answer, each rule with its proof.
//!
//! `read/`, `compaction/` and `db/` call these; none re-implements them, so
//! a rule changes in one place.

pub(crate) mod aggregate;
pub(crate) mod assemble;
pub(crate) mod batch;
pub(crate) mod cell;
pub(crate) mod filter;
pub(crate) mod gc_rule;
pub(crate) mod mutation;
pub(crate) mod range_drop;
pub(crate) mod re2;
pub(crate) mod retain;
pub(crate) mod rmw;
pub(crate) mod row;
pub(crate) mod row_set;
pub(crate) mod schema;
pub(crate) mod shortcut;

pub use aggregate::Aggregate;
pub use batch::{BatchEntry, RowBatch};
pub use cell::{TimeRange, Timestamp};
pub use filter::Filter;
pub use gc_rule::GcRule;
pub use mutation::{Mutation, limits};
pub use range_drop::RangeDrop;
pub use re2::BytesRegex;
pub use rmw::ReadModifyWrite;
pub use row::{Cell, CellRef, Column, Family, Row, RowRef};
pub use row_set::{RowRange, RowSet};
pub use schema::{FamilyMeta, FamilySchema, TableMeta, TableSchema, validate_instance_name};
