//! Bad input: every argument of the public API at and past its limit, and
//! malformed ones. Each gets a clear error — `InvalidArgument` naming the
//! rule, or `NotFound` naming what is missing — and leaves the database
//! exactly as it was and still taking writes. Then files: foreign and
//! garbage files in a database directory, and paths that are no database.

mod common;

use std::ops::Bound;
use std::time::Duration;

use cellardb::{
    Aggregate, Db, Error, FamilySchema, Filter, GcRule, Mutation, Options, ReadModifyWrite, RowSet, Table, TimeRange,
};
use common::*;

/// A call with bad input, what its error must say, and the call.
type Case<'a> = (&'a str, &'a str, Box<dyn Fn() -> cellardb::Result<()> + 'a>);

fn cases<'a>(db: &'a Db, t: &'a Table) -> Vec<Case<'a>> {
    let mut cases = write_cases(t);
    cases.extend(read_cases(t));
    cases.extend(schema_cases(db));
    cases
}

fn write_cases(t: &Table) -> Vec<Case<'_>> {
    let set = |q: &str| Mutation::set_cell("cf1", q, 1000, "v");
    vec![
        ("empty row key", "row key", Box::new(move || t.mutate_row("", [set("q")]))),
        ("row key over 4 KiB", "row key", Box::new(move || t.mutate_row("k".repeat(4097), [set("q")]))),
        ("qualifier over 16 KiB", "qualifier", Box::new(move || t.mutate_row("r", [set(&"q".repeat(16 * 1024 + 1))]))),
        (
            "value over 100 MiB",
            "value",
            Box::new(move || t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, vec![0; (100 << 20) + 1])])),
        ),
        ("no mutation", "at least one", Box::new(move || t.mutate_row("r", Vec::<Mutation>::new()))),
        (
            "over 100 000 mutations",
            "100000",
            Box::new(move || t.mutate_row("r", (0..100_001).map(|i| Mutation::set_cell("cf1", "q", i * 1000, "v")))),
        ),
        (
            "timestamp not in milliseconds",
            "multiple of 1000",
            Box::new(move || t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1500, "v")])),
        ),
        (
            "negative timestamp",
            "-5000",
            Box::new(move || t.mutate_row("r", [Mutation::set_cell("cf1", "q", -5000, "v")])),
        ),
        (
            "delete range ending before it starts",
            "not before its end",
            Box::new(move || t.mutate_row("r", [Mutation::delete_from_column("cf1", "q", TimeRange::new(5000, 1000))])),
        ),
        ("unknown family", "nope", Box::new(move || t.mutate_row("r", [Mutation::set_cell("nope", "q", 1000, "v")]))),
        (
            "add to a family that is not an aggregate",
            "aggregate",
            Box::new(move || t.mutate_row("r", [Mutation::add_to_cell("cf1", "q", 1000, 1)])),
        ),
        (
            "aggregate value not 8 bytes",
            "8-byte",
            Box::new(move || t.mutate_row("r", [Mutation::set_cell("sum", "q", 1000, "seven b")])),
        ),
        (
            "a batch entry with a bad key",
            "row key",
            Box::new(move || t.mutate_rows([("", vec![set("q")])]).into_iter().collect()),
        ),
        (
            "check_and_mutate with no mutation",
            "at least one",
            Box::new(move || t.check_and_mutate_row("r", &Filter::pass_all(), [], []).map(drop)),
        ),
        (
            "check_and_mutate with a bad predicate",
            "regex",
            Box::new(move || t.check_and_mutate_row("r", &Filter::row_key_regex("("), [set("q")], []).map(drop)),
        ),
        (
            "read_modify_write with no rule",
            "at least one rule",
            Box::new(move || t.read_modify_write_row("r", Vec::<ReadModifyWrite>::new()).map(drop)),
        ),
        (
            "increment of a value that is not 8 bytes",
            "64-bit",
            Box::new(move || {
                t.mutate_row("text", [set("q")])?;
                t.read_modify_write_row("text", [ReadModifyWrite::increment("cf1", "q", 1)]).map(drop)
            }),
        ),
    ]
}

fn read_cases(t: &Table) -> Vec<Case<'_>> {
    let read = move |filter: Filter| move || t.read_rows(RowSet::all(), &filter).collect_rows().map(drop);
    // Deep enough to break the limits, shallow enough to drop.
    let deep = (0..1000).fold(Filter::pass_all(), |f, _| Filter::chain([f]));
    vec![
        ("bad regex", "regex", Box::new(read(Filter::value_regex("a{2,1}")))),
        ("bad label", "label", Box::new(read(Filter::apply_label("Not A Label!")))),
        (
            "two labels in a chain",
            "label",
            Box::new(read(Filter::chain([Filter::apply_label("a"), Filter::apply_label("b")]))),
        ),
        ("cells_per_column_limit of 0", "cells_per_column_limit", Box::new(read(Filter::cells_per_column_limit(0)))),
        ("cells_per_row_limit of 0", "cells_per_row_limit", Box::new(read(Filter::cells_per_row_limit(0)))),
        ("row_sample of 1", "row_sample", Box::new(read(Filter::row_sample(1.0)))),
        ("row_sample of NaN", "row_sample", Box::new(read(Filter::row_sample(f64::NAN)))),
        (
            "timestamp range ending before it starts",
            "timestamp_range",
            Box::new(read(Filter::timestamp_range(TimeRange::new(5000, 1000)))),
        ),
        ("filter nested 1000 deep", "deep", Box::new(read(deep))),
        (
            "a column range whose bounds are reversed (reads nothing)",
            "",
            Box::new(read(Filter::column_range("cf1", Bound::Included("z"), Bound::Excluded("a")))),
        ),
    ]
}

fn schema_cases(db: &Db) -> Vec<Case<'_>> {
    let deep_gc = (0..1000).fold(GcRule::max_versions(1), |r, _| GcRule::union([r]));
    vec![
        (
            "bad table name",
            "does not match",
            Box::new(move || db.create_table("no spaces", [("f", GcRule::none())]).map(drop)),
        ),
        (
            "table name over 50 bytes",
            "limit of 50",
            Box::new(move || db.create_table(&"t".repeat(51), [] as [(&str, _); 0]).map(drop)),
        ),
        ("bad family name", "does not match", Box::new(move || db.create_family("t", "-bad", GcRule::none()))),
        ("family name over 64 bytes", "64", Box::new(move || db.create_family("t", &"f".repeat(65), GcRule::none()))),
        (
            "a family listed twice",
            "twice",
            Box::new(move || db.create_table("t2", [("f", GcRule::none()), ("f", GcRule::none())]).map(drop)),
        ),
        (
            "an existing table",
            "already exists",
            Box::new(move || db.create_table("t", [("f", GcRule::none())]).map(drop)),
        ),
        ("an existing family", "already exists", Box::new(move || db.create_family("t", "cf1", GcRule::none()))),
        ("max_versions(0)", "at least 1", Box::new(move || db.create_family("t", "g", GcRule::max_versions(0)))),
        ("max_age of zero", "max_age", Box::new(move || db.create_family("t", "g", GcRule::max_age(Duration::ZERO)))),
        ("GC rule nested 1000 deep", "32 deep", Box::new(move || db.create_family("t", "g", deep_gc.clone()))),
        ("unknown table", "nope", Box::new(move || db.table("nope").map(drop))),
        ("deleting an unknown table", "nope", Box::new(move || db.delete_table("nope"))),
        ("deleting an unknown family", "nope", Box::new(move || db.delete_family("t", "nope"))),
        ("a GC rule for an unknown family", "nope", Box::new(move || db.set_gc_rule("t", "nope", GcRule::none()))),
        (
            "a checkpoint into a directory that holds files",
            "not empty",
            Box::new(move || {
                let dest = tempfile::tempdir().expect("tempdir");
                std::fs::write(dest.path().join("x"), "x").expect("write");
                db.checkpoint(dest.path())
            }),
        ),
    ]
}

#[test]
fn every_bad_argument_gets_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().memtable_size(64 << 10).open(dir.path()).unwrap();
    let sum = FamilySchema { name: "sum".into(), gc_rule: GcRule::none(), aggregate: Some(Aggregate::Sum) };
    let plain = |name: &str| FamilySchema { name: name.into(), gc_rule: GcRule::none(), aggregate: None };
    let t = db.create_table_with_families("t", [plain("cf1"), plain("cf2"), sum]).unwrap();
    for i in 0..50 {
        t.mutate_row(format!("row{i:02}"), [Mutation::set_cell("cf1", "q", 1000, format!("v{i}"))]).unwrap();
    }
    db.flush().unwrap();
    let mut before = scan_all(&t);
    let schema = db.table_schema("t").unwrap();
    let (mut refused, mut accepted) = (Vec::new(), Vec::new());
    let cases = cases(&db, &t);
    let count = cases.len();
    for (what, hint, call) in cases {
        let err = match call() {
            Ok(()) => {
                // Accepted: then it must be harmless.
                assert_eq!(scan_all(&t), before, "{what}: accepted, and the data changed");
                assert_eq!(db.table_schema("t").unwrap(), schema, "{what}: accepted, and the schema changed");
                accepted.push(what);
                continue;
            }
            Err(e) => e,
        };
        assert!(
            matches!(err, Error::InvalidArgument(_) | Error::NotFound { .. } | Error::AlreadyExists { .. }),
            "{what}: {err:?} is not a clear refusal"
        );
        assert!(err.to_string().contains(hint), "{what}: {err} does not name {hint:?}");
        if what.starts_with("increment") {
            before = scan_all(&t); // its first step wrote the text cell on purpose
        }
        assert_eq!(scan_all(&t), before, "{what}: refused, and the data changed");
        assert_eq!(db.table_schema("t").unwrap(), schema, "{what}: refused, and the schema changed");
        t.mutate_row("probe", [Mutation::set_cell("cf2", "q", 1000, what)]).expect("the database still takes writes");
        t.mutate_row("probe", [Mutation::delete_from_row()]).unwrap();
        refused.push(what);
    }
    // Only a reversed column range is accepted: it selects nothing.
    assert_eq!(accepted, ["a column range whose bounds are reversed (reads nothing)"], "accepted");
    assert_eq!(refused.len(), count - 1);
    println!("bad input: {} calls refused, {} accepted and harmless", refused.len(), accepted.len());
    drop(t);
    db.close().unwrap();
    let db = Options::default().open(dir.path()).unwrap();
    assert_eq!(scan_all(&db.table("t").unwrap()), before, "reopened: the data is what it was");
}

#[test]
fn foreign_and_garbage_files_in_a_database_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(dir.path(), Options::default());
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
    db.flush().unwrap();
    drop(t);
    db.close().unwrap();
    // Files of no kind the engine writes are left alone.
    for name in ["notes.txt", "000001.sst.bak", "LOG", "sst", ".hidden"] {
        std::fs::write(dir.path().join(name), "not ours").unwrap();
    }
    std::fs::create_dir(dir.path().join("subdir")).unwrap();
    let (db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t).len(), 1);
    drop(t);
    db.close().unwrap();
    for name in ["notes.txt", "000001.sst.bak", "LOG", "sst", ".hidden", "subdir"] {
        assert!(dir.path().join(name).exists(), "{name} is left alone");
    }
    // A manifest of garbage is corruption naming it, and nothing is removed.
    let manifest = std::fs::read(dir.path().join("MANIFEST")).unwrap();
    std::fs::write(dir.path().join("MANIFEST"), b"{\"not\": \"a manifest\"}").unwrap();
    let files_before = std::fs::read_dir(dir.path()).unwrap().count();
    match Options::default().open(dir.path()) {
        Err(Error::Corruption { file, .. }) => assert!(file.ends_with("MANIFEST")),
        other => panic!("a garbage manifest: {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), files_before, "nothing removed");
    std::fs::write(dir.path().join("MANIFEST"), manifest).unwrap();
    let (_db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t).len(), 1, "the database opens again once its manifest is back");
}

#[test]
fn a_path_that_is_no_database_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = Options::default().open(&file).expect_err("a file is no directory");
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("a-file"), "{err}");
    let err = Options::default().open_read_only(dir.path().join("missing")).expect_err("nothing there");
    assert!(matches!(err, Error::NoDatabase { .. }), "{err:?}");
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("data.csv"), "a,b").unwrap();
    let err = Options::default().open_read_only(other.path()).expect_err("no manifest");
    assert!(err.to_string().contains("MANIFEST"), "{err}");
    // Tables without a manifest: refused, and nothing deleted.
    std::fs::write(other.path().join("000003.sst"), "x").unwrap();
    let err = Options::default().open(other.path()).expect_err("tables and no manifest");
    assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
    assert!(other.path().join("000003.sst").exists());
}
