//! Tables and families: creation, GC rules, deletion, persistence across reopen.

mod common;

use std::time::Duration;

use cellardb::{Db, Error, FamilySchema, Filter, GcRule, Mutation, RowSet, TableSchema};
use common::*;

fn family(name: &str, gc_rule: GcRule) -> FamilySchema {
    FamilySchema { name: name.into(), gc_rule, aggregate: None }
}

#[test]
fn schema_and_gc_rules_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let nested = GcRule::union([
        GcRule::max_age(Duration::from_secs(30 * 86_400)),
        GcRule::intersection([GcRule::max_age(Duration::from_secs(7 * 86_400)), GcRule::max_versions(1)]),
    ]);
    {
        let db = Db::open(dir.path()).unwrap();
        db.create_table("weather", [("measurements", GcRule::max_versions(1)), ("m", GcRule::none())]).unwrap();
        db.create_family("weather", "raw", GcRule::max_age(Duration::from_secs(3600))).unwrap();
        db.set_gc_rule("weather", "raw", nested.clone()).unwrap();
        db.create_table("other", [("f", GcRule::none())]).unwrap();
        db.delete_family("other", "f").unwrap();
    }
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.list_tables().unwrap(), ["other", "weather"]);
    assert_eq!(
        db.table_schema("weather").unwrap(),
        TableSchema {
            name: "weather".into(),
            families: vec![
                family("m", GcRule::none()),
                family("measurements", GcRule::max_versions(1)),
                family("raw", nested)
            ],
        }
    );
    assert!(db.table_schema("other").unwrap().families.is_empty());
}

#[test]
fn admin_errors_name_what_is_wrong() {
    let (_d, db) = temp_db();
    db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    assert!(matches!(db.create_table("t", [("x", GcRule::none())]), Err(Error::AlreadyExists { kind: "table", .. })));
    assert!(matches!(db.create_family("t", "cf1", GcRule::none()), Err(Error::AlreadyExists { .. })));
    assert!(matches!(db.create_family("nope", "x", GcRule::none()), Err(Error::NotFound { kind: "table", .. })));
    assert!(matches!(db.delete_family("t", "nope"), Err(Error::NotFound { kind: "column family", .. })));
    assert!(matches!(db.delete_table("nope"), Err(Error::NotFound { .. })));
    assert!(matches!(db.table("nope"), Err(Error::NotFound { .. })));
    assert!(matches!(db.create_family("t", "-bad", GcRule::none()), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.create_family("t", &"f".repeat(65), GcRule::none()), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.create_family("t", "ok", GcRule::max_versions(0)), Err(Error::InvalidArgument(_))));
    let two_limits = GcRule::union([GcRule::max_versions(5), GcRule::intersection([GcRule::max_versions(1)])]);
    assert!(matches!(db.set_gc_rule("t", "cf1", two_limits), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.create_table("bad name", [("f", GcRule::none())]), Err(Error::InvalidArgument(_))));
    let dup = db.create_table("u", [("f", GcRule::none()), ("f", GcRule::none())]);
    assert!(matches!(dup, Err(Error::InvalidArgument(_))), "{dup:?}");
    assert_eq!(db.list_tables().unwrap(), ["t"]);
}

#[test]
fn a_deleted_family_comes_back_empty() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "flushed"), Mutation::set_cell("cf2", "q", 1000, "kept")])
        .unwrap();
    db.flush().unwrap();
    t.mutate_row("s", [Mutation::set_cell("cf1", "q", 1000, "in memtable")]).unwrap();
    db.delete_family("t", "cf1").unwrap();
    assert!(matches!(t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]), Err(Error::NotFound { .. })));
    db.create_family("t", "cf1", GcRule::none()).unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf2", "q", 1000, "kept")]);
    db.flush().unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf2", "q", 1000, "kept")]);
}

#[test]
fn a_deleted_table_frees_its_files_and_its_name() {
    let (dir, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
    db.flush().unwrap();
    let ssts = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"))
            .count()
    };
    assert_eq!(ssts(), 1);
    db.delete_table("t").unwrap();
    assert_eq!(ssts(), 0, "no read holds the file, so it is deleted at once");
    assert!(matches!(t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]), Err(Error::NotFound { .. })));
    let t2 = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    assert!(scan_all(&t2).is_empty());
}

#[test]
fn an_obsolete_file_outlives_the_reads_that_hold_it() {
    let (dir, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    for i in 0..500 {
        t.mutate_row(format!("r{i:03}"), [Mutation::set_cell("cf1", "q", 1000, "v".repeat(100))]).unwrap();
    }
    db.flush().unwrap();
    let mut rows = t.read_rows(RowSet::all(), &Filter::pass_all());
    assert!(rows.next().unwrap().is_ok());
    db.delete_table("t").unwrap();
    let still_there =
        std::fs::read_dir(dir.path()).unwrap().any(|e| e.unwrap().path().extension().is_some_and(|x| x == "sst"));
    assert!(still_there, "the file a read holds is not deleted under it");
    let rest: Vec<_> = rows.collect::<cellardb::Result<_>>().unwrap();
    assert_eq!(rest.len(), 499, "the read goes on from its snapshot");
    let gone =
        !std::fs::read_dir(dir.path()).unwrap().any(|e| e.unwrap().path().extension().is_some_and(|x| x == "sst"));
    assert!(gone, "deleted once the read is done");
}

#[test]
fn gc_rules_apply_at_read_time_and_changes_apply_at_once() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    let now = cellardb::Timestamp::now().micros();
    let hour = 3_600_000_000;
    t.mutate_row(
        "r",
        [
            Mutation::set_cell("cf1", "q", now - 3 * hour, "3h"),
            Mutation::set_cell("cf1", "q", now - 2 * hour, "2h"),
            Mutation::set_cell("cf1", "q", now - hour / 2, "30m"),
        ],
    )
    .unwrap();
    let values = || scan_all(&t).into_iter().map(|c| c.4).collect::<Vec<_>>();
    assert_eq!(values(), ["30m", "2h", "3h"]);
    db.set_gc_rule("t", "cf1", GcRule::max_versions(2)).unwrap();
    assert_eq!(values(), ["30m", "2h"]);
    db.set_gc_rule("t", "cf1", GcRule::max_age(Duration::from_secs(3600))).unwrap();
    assert_eq!(values(), ["30m"]);
    db.flush().unwrap();
    db.set_gc_rule(
        "t",
        "cf1",
        GcRule::intersection([GcRule::max_versions(1), GcRule::max_age(Duration::from_secs(9000))]),
    )
    .unwrap();
    assert_eq!(values(), ["30m", "2h"]);
    db.set_gc_rule("t", "cf1", GcRule::none()).unwrap();
    assert_eq!(values(), ["30m", "2h", "3h"], "nothing was collected for good before compaction");
}
