//! Resource names. Bigtable names a table
//! `projects/{project}/instances/{instance}/tables/{table}`, and tables of
//! two instances are apart. One database serves every instance a client
//! names: the server's own instance (`ServeOptions::instance`) holds the
//! database's own tables, named by their ids (those an embedding program
//! made); any other instance's table is the database's table of the full
//! name (`docs/server.md`, "Resource names").

use tonic::Status;

use crate::status::{invalid, status_of};

/// Maps resource names onto the database's tables.
#[derive(Debug, Clone)]
pub struct Names {
    /// `projects/{p}/instances/{i}`: the instance whose tables are the
    /// database's own.
    own: String,
}

impl Names {
    /// Names with `own` (`projects/{p}/instances/{i}`) the instance whose
    /// tables are the database's own.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` if `own` is not an instance's name.
    pub fn new(own: &str) -> Result<Names, Status> {
        Ok(Names { own: instance(own)?.to_owned() })
    }

    /// The database table that a request's `table_name` names; a request
    /// that names an authorized or materialized view instead is refused, as
    /// cellardb has neither.
    ///
    /// # Errors
    /// `UNIMPLEMENTED` for a view; as [`Names::table`]'s.
    pub fn table_of<'a>(&self, table_name: &'a str, view_name: &str) -> Result<&'a str, Status> {
        if table_name.is_empty() && !view_name.is_empty() {
            return Err(Status::unimplemented(format!(
                "views are not served by cellardb ({view_name:?}); name the table"
            )));
        }
        self.table(table_name)
    }

    /// The database table of `projects/{p}/instances/{i}/tables/{t}`: `t`
    /// in the server's own instance, the full name in any other.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a name of another shape.
    pub fn table<'a>(&self, name: &'a str) -> Result<&'a str, Status> {
        let shape_error = || {
            invalid(format!(
                "table name {name:?} is not of the form projects/{{project}}/instances/{{instance}}/tables/{{table}}"
            ))
        };
        let (parent, table) = name.rsplit_once("/tables/").ok_or_else(shape_error)?;
        if table.is_empty() || table.contains('/') {
            return Err(shape_error());
        }
        Ok(if instance(parent)? == self.own { table } else { name })
    }

    /// The database table that table `table_id` of instance `parent` is.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` if `parent` is not an instance's name.
    pub fn table_in(&self, parent: &str, table_id: &str) -> Result<String, Status> {
        if instance(parent)? == self.own { Ok(table_id.to_owned()) } else { Ok(format!("{parent}/tables/{table_id}")) }
    }

    /// The ids of instance `parent`'s tables among the database's `tables`
    /// (every instance's, as `Db::list_tables` gives them), in their order.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` if `parent` is not an instance's name.
    pub fn tables_of<'a>(&self, parent: &str, tables: &'a [String]) -> Result<Vec<&'a str>, Status> {
        let parent = instance(parent)?;
        let own = parent == self.own;
        let prefix = format!("{parent}/tables/");
        Ok(tables
            .iter()
            .filter_map(|t| if own { (!t.contains('/')).then_some(t.as_str()) } else { t.strip_prefix(&prefix) })
            .collect())
    }
}

/// `name`, if it is an instance's name, `projects/{p}/instances/{i}`.
pub fn instance(name: &str) -> Result<&str, Status> {
    cellardb::validate_instance_name(name).map_err(|e| status_of(&e))?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_of_the_own_instance_is_its_id_and_of_another_its_full_name() {
        let names = Names::new("projects/p/instances/i").unwrap();
        assert_eq!(names.table("projects/p/instances/i/tables/weather").unwrap(), "weather");
        assert_eq!(
            names.table("projects/p/instances/j/tables/weather").unwrap(),
            "projects/p/instances/j/tables/weather"
        );
        assert_eq!(
            names.table("projects/q/instances/i/tables/weather").unwrap(),
            "projects/q/instances/i/tables/weather"
        );
        assert_eq!(names.table_in("projects/p/instances/i", "t").unwrap(), "t");
        assert_eq!(names.table_in("projects/p/instances/j", "t").unwrap(), "projects/p/instances/j/tables/t");
        for bad in [
            "",
            "weather",
            "projects/p/instances/i/tables/",
            "projects/p/instances/i/tables/t/x",
            "p/i/t",
            "projects//instances/i/tables/t",
            "projects/p q/instances/i/tables/t",
        ] {
            assert_eq!(names.table(bad).unwrap_err().code(), tonic::Code::InvalidArgument, "{bad:?}");
        }
        assert_eq!(
            names.table_of("", "projects/p/instances/i/tables/t/authorizedViews/v").unwrap_err().code(),
            tonic::Code::Unimplemented
        );
        assert!(instance("projects/p/instances/i").is_ok());
        assert!(instance("projects/p/instances/i/tables/t").is_err());
        assert!(Names::new("p").is_err());
    }

    #[test]
    fn each_instance_lists_its_own_tables() {
        let names = Names::new("projects/p/instances/i").unwrap();
        let tables: Vec<String> = [
            "a",
            "projects/p/instances/i2/tables/b",
            "projects/p/instances/i2/tables/c",
            "projects/p/instances/i22/tables/d",
            "z",
        ]
        .map(String::from)
        .into();
        assert_eq!(names.tables_of("projects/p/instances/i", &tables).unwrap(), ["a", "z"]);
        assert_eq!(names.tables_of("projects/p/instances/i2", &tables).unwrap(), ["b", "c"]);
        assert_eq!(names.tables_of("projects/p/instances/i22", &tables).unwrap(), ["d"]);
        assert!(names.tables_of("projects/q/instances/i", &tables).unwrap().is_empty());
    }
}
