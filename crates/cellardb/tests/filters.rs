//! Bigtable's row filters, one table of cases: each filter alone and
//! nested, on one small table, with the exact cells and labels expected.
//! Semantics follow Bigtable's documentation of `RowFilter` (and its
//! emulator where the documentation is silent; see `docs/data-model.md`).

use std::ops::Bound;

use cellardb::{Db, Error, Filter, GcRule, Mutation, Row, RowSet, Table, TimeRange};

/// The table: three rows over two families, timestamps in milliseconds.
///
/// ```text
/// r1      cf1:a @3 v3, @2 v2, @1 v1;  cf1:b @1 x;  cf2:c @5 hello
/// r2      cf1:a @1 w;  cf2:c @2 "";  cf2:d @4 123
/// r3\x00  cf2:\xff @7 \x00\x01
/// ```
fn fixture() -> (tempfile::TempDir, Db, Table) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    let set = |f: &str, q: &[u8], ms: i64, v: &[u8]| Mutation::set_cell(f, q, ms * 1000, v);
    t.mutate_row(
        "r1",
        [
            set("cf1", b"a", 1, b"v1"),
            set("cf1", b"a", 2, b"v2"),
            set("cf1", b"a", 3, b"v3"),
            set("cf1", b"b", 1, b"x"),
            set("cf2", b"c", 5, b"hello"),
        ],
    )
    .unwrap();
    t.mutate_row("r2", [set("cf1", b"a", 1, b"w"), set("cf2", b"c", 2, b""), set("cf2", b"d", 4, b"123")]).unwrap();
    t.mutate_row(b"r3\x00", [set("cf2", b"\xff", 7, b"\x00\x01")]).unwrap();
    (dir, db, t)
}

fn escape(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| if b.is_ascii_graphic() { (b as char).to_string() } else { format!("\\x{b:02x}") }).collect()
}

/// Each cell as `row family:qualifier@ms=value`, plus ` [labels]` if any.
fn lines(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for row in rows {
        for (family, qualifier, cell) in row.cells() {
            let labels = if cell.labels.is_empty() { String::new() } else { format!(" [{}]", cell.labels.join(",")) };
            out.push(format!(
                "{} {family}:{}@{}={}{labels}",
                escape(&row.key),
                escape(qualifier),
                cell.timestamp.micros() / 1000,
                escape(&cell.value)
            ));
        }
    }
    out
}

fn read(t: &Table, filter: &Filter) -> cellardb::Result<Vec<String>> {
    Ok(lines(&t.read_rows(RowSet::all(), filter).collect_rows()?))
}

const ALL: [&str; 9] = [
    "r1 cf1:a@3=v3",
    "r1 cf1:a@2=v2",
    "r1 cf1:a@1=v1",
    "r1 cf1:b@1=x",
    "r1 cf2:c@5=hello",
    "r2 cf1:a@1=w",
    "r2 cf2:c@2=",
    "r2 cf2:d@4=123",
    "r3\\x00 cf2:\\xff@7=\\x00\\x01",
];

fn ms(start: i64, end: i64) -> TimeRange {
    TimeRange::new(start * 1000, end * 1000)
}

fn family(f: &str) -> Filter {
    Filter::family_name_regex(f)
}

fn column(q: &str) -> Filter {
    Filter::column_qualifier_regex(q)
}

/// Every case: a name, a filter, the exact cells.
#[allow(clippy::too_many_lines, reason = "a table of cases")]
fn cases() -> Vec<(&'static str, Filter, Vec<&'static str>)> {
    vec![
        ("pass_all", Filter::pass_all(), ALL.to_vec()),
        ("block_all", Filter::block_all(), vec![]),
        ("chain of nothing passes all", Filter::chain([]), ALL.to_vec()),
        (
            "family_name_regex",
            family("cf2"),
            vec!["r1 cf2:c@5=hello", "r2 cf2:c@2=", "r2 cf2:d@4=123", "r3\\x00 cf2:\\xff@7=\\x00\\x01"],
        ),
        ("family_name_regex matches the whole name", family("cf"), vec![]),
        (
            "family_name_regex alternation",
            family("cf1|nope"),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1", "r1 cf1:b@1=x", "r2 cf1:a@1=w"],
        ),
        (
            "column_qualifier_regex",
            column("a"),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1", "r2 cf1:a@1=w"],
        ),
        ("column_qualifier_regex on raw bytes", column(r"\xff"), vec!["r3\\x00 cf2:\\xff@7=\\x00\\x01"]),
        ("column_qualifier_regex any byte", column(r"\C"), ALL.to_vec()),
        (
            "column_qualifier_regex matches the whole qualifier",
            column("a|b."),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1", "r2 cf1:a@1=w"],
        ),
        (
            "column_range open start",
            Filter::column_range("cf1", Bound::Excluded("a"), Bound::<&str>::Unbounded),
            vec!["r1 cf1:b@1=x"],
        ),
        (
            "column_range closed-open",
            Filter::column_range("cf2", Bound::Included("c"), Bound::Excluded("d")),
            vec!["r1 cf2:c@5=hello", "r2 cf2:c@2="],
        ),
        (
            "column_range closed",
            Filter::column_range("cf2", Bound::Included("c"), Bound::Included("d")),
            vec!["r1 cf2:c@5=hello", "r2 cf2:c@2=", "r2 cf2:d@4=123"],
        ),
        (
            "column_range names one family",
            Filter::column_range("cf1", Bound::Included("c"), Bound::Included("d")),
            vec![],
        ),
        (
            "timestamp_range is [start, end)",
            Filter::timestamp_range(ms(2, 5)),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r2 cf2:c@2=", "r2 cf2:d@4=123"],
        ),
        (
            "timestamp_range unbounded end",
            Filter::timestamp_range(TimeRange::since(5000)),
            vec!["r1 cf2:c@5=hello", "r3\\x00 cf2:\\xff@7=\\x00\\x01"],
        ),
        ("value_regex", Filter::value_regex("v."), ALL[..3].to_vec()),
        ("value_regex matches an empty value", Filter::value_regex(""), vec!["r2 cf2:c@2="]),
        ("value_regex on raw bytes", Filter::value_regex(r"\x00\x01"), vec!["r3\\x00 cf2:\\xff@7=\\x00\\x01"]),
        (
            "value_range from",
            Filter::value_range(Bound::Included("v2"), Bound::<&str>::Unbounded),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:b@1=x", "r2 cf1:a@1=w"],
        ),
        (
            "value_range below",
            Filter::value_range(Bound::<&str>::Unbounded, Bound::Excluded("a")),
            vec!["r2 cf2:c@2=", "r2 cf2:d@4=123", "r3\\x00 cf2:\\xff@7=\\x00\\x01"],
        ),
        (
            "value_range open both ends",
            Filter::value_range(Bound::Excluded("v1"), Bound::Excluded("v3")),
            vec!["r1 cf1:a@2=v2"],
        ),
        (
            "cells_per_column_limit",
            Filter::cells_per_column_limit(1),
            vec![
                "r1 cf1:a@3=v3",
                "r1 cf1:b@1=x",
                "r1 cf2:c@5=hello",
                "r2 cf1:a@1=w",
                "r2 cf2:c@2=",
                "r2 cf2:d@4=123",
                "r3\\x00 cf2:\\xff@7=\\x00\\x01",
            ],
        ),
        (
            "cells_per_row_limit",
            Filter::cells_per_row_limit(2),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r2 cf1:a@1=w", "r2 cf2:c@2=", "r3\\x00 cf2:\\xff@7=\\x00\\x01"],
        ),
        (
            "cells_per_row_offset drops a row left empty",
            Filter::cells_per_row_offset(2),
            vec!["r1 cf1:a@1=v1", "r1 cf1:b@1=x", "r1 cf2:c@5=hello", "r2 cf2:d@4=123"],
        ),
        ("cells_per_row_offset 0", Filter::cells_per_row_offset(0), ALL.to_vec()),
        (
            "strip_value",
            Filter::strip_value(),
            vec![
                "r1 cf1:a@3=",
                "r1 cf1:a@2=",
                "r1 cf1:a@1=",
                "r1 cf1:b@1=",
                "r1 cf2:c@5=",
                "r2 cf1:a@1=",
                "r2 cf2:c@2=",
                "r2 cf2:d@4=",
                "r3\\x00 cf2:\\xff@7=",
            ],
        ),
        ("row_key_regex", Filter::row_key_regex("r[12]"), ALL[..8].to_vec()),
        ("row_key_regex on raw bytes", Filter::row_key_regex(r"r3\x00"), ALL[8..].to_vec()),
        ("row_key_regex matches the whole key", Filter::row_key_regex("r"), vec![]),
        (
            "chain: family then column",
            Filter::chain([family("cf1"), column("a")]),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1", "r2 cf1:a@1=w"],
        ),
        (
            "chain: newest per column, then a time range",
            Filter::chain([Filter::cells_per_column_limit(1), Filter::timestamp_range(TimeRange::since(2000))]),
            vec![
                "r1 cf1:a@3=v3",
                "r1 cf2:c@5=hello",
                "r2 cf2:c@2=",
                "r2 cf2:d@4=123",
                "r3\\x00 cf2:\\xff@7=\\x00\\x01",
            ],
        ),
        (
            "chain: a time range, then newest per column",
            Filter::chain([Filter::timestamp_range(ms(0, 3)), Filter::cells_per_column_limit(1)]),
            vec!["r1 cf1:a@2=v2", "r1 cf1:b@1=x", "r2 cf1:a@1=w", "r2 cf2:c@2="],
        ),
        (
            "chain: row limit after a family",
            Filter::chain([family("cf2"), Filter::cells_per_row_limit(1)]),
            vec!["r1 cf2:c@5=hello", "r2 cf2:c@2=", "r3\\x00 cf2:\\xff@7=\\x00\\x01"],
        ),
        (
            "interleave: union in model order",
            Filter::interleave([column("c"), column("a")]),
            vec!["r1 cf1:a@3=v3", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1", "r1 cf2:c@5=hello", "r2 cf1:a@1=w", "r2 cf2:c@2="],
        ),
        (
            "interleave: a cell from two branches appears twice",
            Filter::interleave([Filter::pass_all(), family("cf2")]),
            vec![
                "r1 cf1:a@3=v3",
                "r1 cf1:a@2=v2",
                "r1 cf1:a@1=v1",
                "r1 cf1:b@1=x",
                "r1 cf2:c@5=hello",
                "r1 cf2:c@5=hello",
                "r2 cf1:a@1=w",
                "r2 cf2:c@2=",
                "r2 cf2:c@2=",
                "r2 cf2:d@4=123",
                "r2 cf2:d@4=123",
                "r3\\x00 cf2:\\xff@7=\\x00\\x01",
                "r3\\x00 cf2:\\xff@7=\\x00\\x01",
            ],
        ),
        ("interleave of nothing", Filter::interleave([]), vec![]),
        (
            "interleave: labels tell the copies apart",
            Filter::interleave([
                Filter::chain([column("b"), Filter::apply_label("b")]),
                Filter::chain([family("cf1"), Filter::cells_per_row_limit(1), Filter::apply_label("first")]),
            ]),
            vec!["r1 cf1:a@3=v3 [first]", "r1 cf1:b@1=x [b]", "r2 cf1:a@1=w [first]"],
        ),
        (
            "apply_label",
            Filter::chain([Filter::row_key_regex("r2"), Filter::apply_label("lbl")]),
            vec!["r2 cf1:a@1=w [lbl]", "r2 cf2:c@2= [lbl]", "r2 cf2:d@4=123 [lbl]"],
        ),
        (
            "condition: true branch where the predicate matches",
            Filter::condition(column("b"), Some(family("cf2")), Some(Filter::block_all())),
            vec!["r1 cf2:c@5=hello"],
        ),
        (
            "condition: the predicate's output is not returned",
            Filter::condition(family("cf1"), Some(family("cf2")), None),
            vec!["r1 cf2:c@5=hello", "r2 cf2:c@2=", "r2 cf2:d@4=123"],
        ),
        (
            "condition: a missing branch yields nothing",
            Filter::condition(Filter::value_regex("w"), None, Some(Filter::strip_value())),
            vec!["r1 cf1:a@3=", "r1 cf1:a@2=", "r1 cf1:a@1=", "r1 cf1:b@1=", "r1 cf2:c@5=", "r3\\x00 cf2:\\xff@7="],
        ),
        (
            "condition: predicate on a family the branches do not read",
            Filter::condition(Filter::value_regex("hello"), Some(family("cf1")), None),
            ALL[..4].to_vec(),
        ),
        (
            "sink: labelled copies skip the filters after it",
            Filter::chain([
                family("cf1"),
                Filter::interleave([Filter::pass_all(), Filter::chain([Filter::apply_label("s"), Filter::sink()])]),
                column("b"),
            ]),
            vec![
                "r1 cf1:a@3=v3 [s]",
                "r1 cf1:a@2=v2 [s]",
                "r1 cf1:a@1=v1 [s]",
                "r1 cf1:b@1=x [s]",
                "r1 cf1:b@1=x",
                "r2 cf1:a@1=w [s]",
            ],
        ),
        ("sink: its parent sees no cell", Filter::chain([Filter::sink(), Filter::block_all()]), ALL.to_vec()),
        (
            "nested: chains in interleaves in conditions",
            Filter::condition(
                Filter::chain([family("cf2"), Filter::value_regex("1.*")]),
                Some(Filter::interleave([
                    Filter::chain([column("d"), Filter::strip_value()]),
                    Filter::chain([family("cf1"), Filter::apply_label("one")]),
                ])),
                Some(Filter::chain([Filter::cells_per_column_limit(1), Filter::cells_per_row_offset(2)])),
            ),
            vec!["r1 cf2:c@5=hello", "r2 cf1:a@1=w [one]", "r2 cf2:d@4="],
        ),
        (
            "nested: interleave of a chain and a condition",
            Filter::interleave([
                Filter::chain([family("cf1"), Filter::cells_per_column_limit(1)]),
                Filter::condition(Filter::value_regex("hello"), Some(Filter::apply_label("greet")), None),
            ]),
            vec![
                "r1 cf1:a@3=v3",
                "r1 cf1:a@3=v3 [greet]",
                "r1 cf1:a@2=v2 [greet]",
                "r1 cf1:a@1=v1 [greet]",
                "r1 cf1:b@1=x",
                "r1 cf1:b@1=x [greet]",
                "r1 cf2:c@5=hello [greet]",
                "r2 cf1:a@1=w",
            ],
        ),
    ]
}

#[test]
fn every_filter_returns_exactly_bigtables_cells() {
    let (_dir, _db, t) = fixture();
    let mut failures = Vec::new();
    let cases = cases();
    for (name, filter, expected) in &cases {
        match read(&t, filter) {
            Ok(got) if got == *expected => {}
            Ok(got) => failures.push(format!("{name}:\n  expected {expected:?}\n  got      {got:?}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn filters_read_the_same_after_a_flush_and_a_compaction() {
    let (_dir, db, t) = fixture();
    let before: Vec<_> = cases().iter().map(|(_, f, _)| read(&t, f).unwrap()).collect();
    db.compact_table("t").unwrap();
    let after: Vec<_> = cases().iter().map(|(_, f, _)| read(&t, f).unwrap()).collect();
    assert_eq!(before, after);
}

#[test]
fn invalid_filters_are_refused_with_the_rule_they_break() {
    let (_dir, _db, t) = fixture();
    let refused = |f: Filter, what: &str| match read(&t, &f) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        other => panic!("{f:?}: expected invalid argument, got {other:?}"),
    };
    refused(column("("), "invalid regex");
    refused(Filter::row_key_regex("[a"), "invalid regex");
    refused(Filter::value_regex("a)|(b"), "invalid regex");
    refused(Filter::chain([family("x"), Filter::interleave([family("*")])]), "invalid regex");
    refused(Filter::row_sample(0.0), "row_sample");
    refused(Filter::row_sample(1.0), "row_sample");
    refused(Filter::cells_per_row_limit(0), "cells_per_row_limit");
    refused(Filter::cells_per_column_limit(0), "cells_per_column_limit");
    refused(Filter::timestamp_range(TimeRange::new(0, i64::MIN)), "timestamp_range");
    refused(Filter::chain([Filter::apply_label("a"), Filter::apply_label("b")]), "label");
    refused(Filter::apply_label("Upper"), "[a-z0-9-]");
    refused(Filter::apply_label("sixteen-chars-xx"), "1 to 15");
    refused(Filter::condition(Filter::pass_all(), Some(column("(")), None), "invalid regex");
    // Two labels in an interleave label separate copies: allowed.
    assert_eq!(read(&t, &Filter::interleave([Filter::apply_label("a"), Filter::apply_label("b")])).unwrap().len(), 18);
}

#[test]
fn row_sample_keeps_whole_rows_with_the_given_probability() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    for i in 0..2000 {
        t.mutate_row(
            format!("row{i:05}"),
            [Mutation::set_cell("f", "a", 1000, "x"), Mutation::set_cell("f", "b", 1000, "y")],
        )
        .unwrap();
    }
    let rows = t.read_rows(RowSet::all(), &Filter::row_sample(0.25)).collect_rows().unwrap();
    assert!((380..=620).contains(&rows.len()), "{} of 2000 rows at p = 0.25", rows.len());
    assert!(rows.iter().all(|r| r.cell_count() == 2), "a sampled row is whole");
}

/// Reversed reads apply the filter to each row as forward reads do, rows
/// in descending key order, cells within a row still in model order; a
/// limit counts rows that have cells after the filter.
#[test]
fn reversed_reads_with_limits_filter_each_row_the_same() {
    let (_dir, _db, t) = fixture();
    let reversed = |f: &Filter, limit: usize| {
        lines(&t.read_rows(RowSet::all(), f).reversed().limit(limit).collect_rows().unwrap())
    };
    let cases: Vec<(Filter, usize, Vec<&str>)> = vec![
        (Filter::pass_all(), 1, vec!["r3\\x00 cf2:\\xff@7=\\x00\\x01"]),
        (
            Filter::cells_per_column_limit(1),
            2,
            vec!["r3\\x00 cf2:\\xff@7=\\x00\\x01", "r2 cf1:a@1=w", "r2 cf2:c@2=", "r2 cf2:d@4=123"],
        ),
        (family("cf1"), 1, vec!["r2 cf1:a@1=w"]),
        (
            Filter::chain([Filter::timestamp_range(ms(1, 3)), column("a")]),
            5,
            vec!["r2 cf1:a@1=w", "r1 cf1:a@2=v2", "r1 cf1:a@1=v1"],
        ),
        (Filter::cells_per_row_limit(1), 3, vec!["r3\\x00 cf2:\\xff@7=\\x00\\x01", "r2 cf1:a@1=w", "r1 cf1:a@3=v3"]),
        (Filter::interleave([column("d"), Filter::value_regex("v3")]), 2, vec!["r2 cf2:d@4=123", "r1 cf1:a@3=v3"]),
    ];
    for (filter, limit, expected) in cases {
        assert_eq!(reversed(&filter, limit), expected, "{filter:?} limit {limit}");
        // The forward read of the same rows holds the same cells per row.
        let forward = read(&t, &filter).unwrap();
        assert!(expected.iter().all(|c| forward.contains(&c.to_string())), "{filter:?}");
    }
}

/// RE2 syntax Bigtable accepts, which the `regex` crate spells otherwise:
/// quoted literals, octal escapes, Unicode classes (over Latin-1 bytes).
#[test]
fn re2_quoting_octal_escapes_and_unicode_classes_work_in_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    for q in [&b"a.b"[..], b"axb", b"ab", b"7", b"\xb2", b"x"] {
        t.mutate_row("r", [Mutation::set_cell("f", q, 1000, "v")]).unwrap();
    }
    let qualifiers = |pattern: &str| -> Vec<Vec<u8>> {
        let row = t.read_row("r", &Filter::column_qualifier_regex(pattern)).unwrap();
        row.map(|r| r.cells().map(|(_, q, _)| q.to_vec()).collect()).unwrap_or_default()
    };
    assert_eq!(qualifiers(r"\Qa.b\E"), [b"a.b".to_vec()]);
    assert_eq!(qualifiers(r"\141\142"), [b"ab".to_vec()]);
    assert_eq!(qualifiers(r"\pN"), [b"7".to_vec(), b"\xb2".to_vec()], "a digit and superscript two");
    assert_eq!(qualifiers(r"[^\pN]").len(), 1, "one byte that is not a number: x");
    let refused = |pattern: &str| t.read_row("r", &Filter::column_qualifier_regex(pattern)).unwrap_err();
    assert!(matches!(refused(r"(a)\1"), Error::InvalidArgument(_)), "RE2 has no backreferences");
    assert!(matches!(refused(r"\p{Nope}"), Error::InvalidArgument(_)));
}
