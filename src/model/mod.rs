//! Bigtable's data model, pure: cells and timestamps, mutations, GC rules,
//! schemas and rows. Nothing here touches a file.

mod aggregate;
mod cell;
mod gc_rule;
mod mutation;
mod rmw;
mod row;
mod schema;

pub use aggregate::Aggregate;
pub use cell::{TimeRange, Timestamp};
pub use gc_rule::GcRule;
pub use mutation::{Mutation, limits};
pub use rmw::ReadModifyWrite;
pub use row::{Cell, Column, Family, Row};
pub use schema::{FamilySchema, TableSchema};

pub(crate) use aggregate::{decode_i64, validate_aggregate_value};
pub(crate) use cell::now_micros;
pub(crate) use mutation::{validate_qualifier, validate_row_key, validate_row_mutation};
pub(crate) use schema::{validate_family_name, validate_table_name};
