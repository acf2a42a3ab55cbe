//! Table and column-family schemas, and the rules their names follow.

use super::{Aggregate, GcRule, limits};
use crate::{Error, Result};

/// A table's name and its column families, in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// Table name.
    pub name: String,
    /// Column families, sorted by name.
    pub families: Vec<FamilySchema>,
}

impl TableSchema {
    /// The family called `name`, if declared.
    pub fn family(&self, name: &str) -> Option<&FamilySchema> {
        self.families.iter().find(|f| f.name == name)
    }
}

/// A column family and its GC rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilySchema {
    /// Family name.
    pub name: String,
    /// Which cells the family keeps.
    pub gc_rule: GcRule,
    /// How its cells merge what is written to them; `None` for a plain
    /// family, where a write replaces the cell at its timestamp.
    pub aggregate: Option<Aggregate>,
}

/// A table as the engine keeps it: its schema, and the ids under which its
/// data lives. Recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableMeta {
    /// Id, never reused.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Families, in name order.
    pub families: Vec<FamilyMeta>,
}

impl TableMeta {
    /// The family called `name`, if declared.
    pub fn family(&self, name: &str) -> Option<&FamilyMeta> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The public schema.
    pub fn schema(&self) -> TableSchema {
        let families = self.families.iter().map(FamilyMeta::schema).collect();
        TableSchema { name: self.name.clone(), families }
    }
}

/// A column family as the engine keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyMeta {
    /// Name.
    pub name: String,
    /// Store id: where its data lives (one per family ever created; never
    /// reused, so a family created again starts empty).
    pub store: u32,
    /// Its GC rule.
    pub gc_rule: GcRule,
    /// How its cells merge inputs; `None` for a plain family.
    pub aggregate: Option<Aggregate>,
}

impl FamilyMeta {
    /// The public schema.
    pub fn schema(&self) -> FamilySchema {
        FamilySchema { name: self.name.clone(), gc_rule: self.gc_rule.clone(), aggregate: self.aggregate }
    }
}

/// Bigtable's identifier rule `[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most `max` bytes.
fn validate_identifier(kind: &str, name: &str, max: usize) -> Result<()> {
    let bytes = name.as_bytes();
    let first_ok = bytes.first().is_some_and(|&b| b == b'_' || b.is_ascii_alphanumeric());
    let rest_ok = bytes.iter().skip(1).all(|&b| b == b'-' || b == b'_' || b == b'.' || b.is_ascii_alphanumeric());
    if !first_ok || !rest_ok {
        return Err(Error::InvalidArgument(format!("{kind} name {name:?} does not match [_a-zA-Z0-9][-_.a-zA-Z0-9]*")));
    }
    if bytes.len() > max {
        return Err(Error::InvalidArgument(format!(
            "{kind} name {name:?} is {} bytes, over the limit of {max} bytes",
            bytes.len()
        )));
    }
    Ok(())
}

/// Checks a column family name.
pub(crate) fn validate_family_name(name: &str) -> Result<()> {
    validate_identifier("column family", name, limits::MAX_FAMILY_NAME)
}

/// Checks a table name.
pub(crate) fn validate_table_name(name: &str) -> Result<()> {
    validate_identifier("table", name, limits::MAX_TABLE_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_names_follow_bigtable_rules() {
        for ok in ["m", "measurements", "_x", "1abc", "a.b-c_d"] {
            assert!(validate_family_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-abc", ".a", "a b", "a:b", "é"] {
            assert!(validate_family_name(bad).is_err(), "{bad}");
        }
        assert!(validate_family_name(&"f".repeat(64)).is_ok());
        assert!(validate_family_name(&"f".repeat(65)).is_err());
    }
}
