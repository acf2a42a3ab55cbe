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

/// Checks a table name: a table id (a table of the database's own
/// instance), or a table of another instance named as Bigtable names it,
/// `projects/{project}/instances/{instance}/tables/{table}`.
pub(crate) fn validate_table_name(name: &str) -> Result<()> {
    let Some((instance, table)) = qualified_table_name(name) else {
        if name.contains('/') {
            return Err(Error::InvalidArgument(format!(
                "table name {name:?} is neither a table id nor projects/{{project}}/instances/{{instance}}/tables/{{table}}"
            )));
        }
        return validate_identifier("table", name, limits::MAX_TABLE_NAME);
    };
    validate_instance_name(instance)?;
    validate_identifier("table", table, limits::MAX_TABLE_NAME)
}

/// The instance (`projects/{project}/instances/{instance}`) and table id of
/// a name of the form `{instance}/tables/{table}`; `None` for a name
/// without `/tables/`.
pub(crate) fn qualified_table_name(name: &str) -> Option<(&str, &str)> {
    // A table id holds no '/', so the last "/tables/" is the separator.
    name.rsplit_once("/tables/")
}

/// Checks an instance's name as Bigtable writes it,
/// `projects/{project}/instances/{instance}`: the ids are letters, digits,
/// `-`, `_`, `.` and `:` (a domain-scoped project is
/// `example.com:project`), starting with a letter or digit, at most
/// [`limits::MAX_RESOURCE_ID`] bytes each. Bigtable's own ids are
/// narrower; this accepts every id it hands out.
///
/// # Errors
/// `Error::InvalidArgument` naming what is wrong.
pub fn validate_instance_name(name: &str) -> Result<()> {
    let parts = name.strip_prefix("projects/").and_then(|rest| rest.rsplit_once("/instances/"));
    let Some((project, instance)) = parts else {
        return Err(Error::InvalidArgument(format!(
            "instance name {name:?} is not of the form projects/{{project}}/instances/{{instance}}"
        )));
    };
    validate_resource_id("project", project)?;
    validate_resource_id("instance", instance)
}

fn validate_resource_id(kind: &str, id: &str) -> Result<()> {
    let bytes = id.as_bytes();
    let first_ok = bytes.first().is_some_and(u8::is_ascii_alphanumeric);
    let rest_ok = bytes.iter().all(|&b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    if !first_ok || !rest_ok {
        return Err(Error::InvalidArgument(format!("{kind} id {id:?} does not match [a-zA-Z0-9][-_.:a-zA-Z0-9]*")));
    }
    if bytes.len() > limits::MAX_RESOURCE_ID {
        return Err(Error::InvalidArgument(format!(
            "{kind} id {id:?} is {} bytes, over the limit of {} bytes",
            bytes.len(),
            limits::MAX_RESOURCE_ID
        )));
    }
    Ok(())
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

    #[test]
    fn a_table_is_named_by_its_id_or_by_its_instance_and_id() {
        for ok in [
            "weather",
            "projects/p/instances/i/tables/weather",
            "projects/example.com:my-project/instances/test-instance-1/tables/t.1",
        ] {
            assert!(validate_table_name(ok).is_ok(), "{ok}");
        }
        let too_long = format!("projects/{}/instances/i/tables/t", "p".repeat(limits::MAX_RESOURCE_ID + 1));
        for bad in [
            "",
            "a/b",
            "projects/p/instances/i/tables/",
            "projects//instances/i/tables/t",
            "projects/p/instances//tables/t",
            "projects/p/instances/i/tables/t/x",
            "projects/p/instances/i/x/tables/t",
            "projects/-p/instances/i/tables/t",
            "projects/p q/instances/i/tables/t",
            "instances/i/tables/t",
            too_long.as_str(),
        ] {
            assert!(validate_table_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            qualified_table_name("projects/tables/instances/tables/tables/t"),
            Some(("projects/tables/instances/tables", "t"))
        );
        assert!(validate_table_name("projects/tables/instances/tables/tables/t").is_ok());
        assert_eq!(qualified_table_name("t"), None);
        assert!(validate_instance_name("projects/p/instances/i").is_ok());
        for bad in ["", "projects/p", "projects/p/instances/", "projects//instances/i", "projects/p/instances/i/x"] {
            assert!(validate_instance_name(bad).is_err(), "{bad}");
        }
        let longest = format!("projects/{0}/instances/{0}/tables/t", "p".repeat(limits::MAX_RESOURCE_ID));
        assert!(validate_table_name(&longest).is_ok());
    }
}
