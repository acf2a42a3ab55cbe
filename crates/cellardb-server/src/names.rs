//! Resource names. Bigtable names a table
//! `projects/{project}/instances/{instance}/tables/{table}`; one cellardb
//! database is one instance of every project, so the project and instance
//! are checked for shape and otherwise ignored, and the table is the
//! database's table of that name (`docs/server.md`).

use tonic::Status;

use crate::status::invalid;

/// The table a request names, from its `table_name`; a request that names
/// an authorized or materialized view instead is refused, as cellardb has
/// neither.
pub fn table_of<'a>(table_name: &'a str, view_name: &str) -> Result<&'a str, Status> {
    if table_name.is_empty() && !view_name.is_empty() {
        return Err(Status::unimplemented(format!("views are not served by cellardb ({view_name:?}); name the table")));
    }
    table_in(table_name)
}

/// The table of `projects/{p}/instances/{i}/tables/{t}`.
pub fn table_in(name: &str) -> Result<&str, Status> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i, "tables", t] if !p.is_empty() && !i.is_empty() && !t.is_empty() => Ok(t),
        _ => Err(invalid(format!(
            "table name {name:?} is not of the form projects/{{project}}/instances/{{instance}}/tables/{{table}}"
        ))),
    }
}

/// Checks that `name` is `projects/{p}/instances/{i}` (a `PingAndWarm`).
pub fn check_instance(name: &str) -> Result<(), Status> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i] if !p.is_empty() && !i.is_empty() => Ok(()),
        _ => Err(invalid(format!(
            "instance name {name:?} is not of the form projects/{{project}}/instances/{{instance}}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_name_gives_its_table_and_anything_else_is_invalid() {
        assert_eq!(table_in("projects/p/instances/i/tables/weather").unwrap(), "weather");
        for bad in ["", "weather", "projects/p/instances/i/tables/", "projects/p/instances/i/tables/t/x", "p/i/t"] {
            assert_eq!(table_in(bad).unwrap_err().code(), tonic::Code::InvalidArgument, "{bad:?}");
        }
        assert_eq!(
            table_of("", "projects/p/instances/i/tables/t/authorizedViews/v").unwrap_err().code(),
            tonic::Code::Unimplemented
        );
        assert!(check_instance("projects/p/instances/i").is_ok());
        assert!(check_instance("projects/p/instances/i/tables/t").is_err());
    }
}
