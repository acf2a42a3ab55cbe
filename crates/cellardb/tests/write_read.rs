//! Writes and reads: the four mutations, row sets, limits, reversed scans,
//! across the memtable and SSTables.

mod common;

use std::ops::Bound;

use cellardb::{Error, Filter, GcRule, Mutation, RowRange, RowSet, Step, TimeRange, Timestamp};
use common::*;

#[test]
fn set_cells_read_back_in_model_order() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf2", GcRule::none()), ("cf1", GcRule::none())]).unwrap();
    t.mutate_row(
        "r",
        [
            Mutation::set_cell("cf2", "z", 1000, "z1"),
            Mutation::set_cell("cf1", "b", 1000, "b1"),
            Mutation::set_cell("cf1", "a", 1000, "a1"),
            Mutation::set_cell("cf1", "a", 3000, "a3"),
            Mutation::set_cell("cf1", "a", 2000, "a2"),
        ],
    )
    .unwrap();
    let row = t.read_row("r", &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(
        flatten(&[row]),
        vec![
            flat("r", "cf1", "a", 3000, "a3"),
            flat("r", "cf1", "a", 2000, "a2"),
            flat("r", "cf1", "a", 1000, "a1"),
            flat("r", "cf1", "b", 1000, "b1"),
            flat("r", "cf2", "z", 1000, "z1"),
        ]
    );
    assert_eq!(t.read_row("absent", &Filter::pass_all()).unwrap(), None);
}

#[test]
fn same_timestamp_replaces_the_value_in_memtable_and_across_flush() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "first")]).unwrap();
    db.flush().unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "second")]).unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf1", "q", 1000, "second")]);
    db.flush().unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf1", "q", 1000, "second")]);
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "a"), Mutation::set_cell("cf1", "q", 1000, "b")]).unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf1", "q", 1000, "b")]);
}

/// Writes the same history with flushes at each point between mutations, and
/// checks that deletes give the same result wherever the boundary falls.
#[test]
fn deletes_apply_across_memtable_and_sstable_boundaries() {
    let steps: Vec<Vec<Mutation>> = vec![
        vec![Mutation::set_cell("cf1", "a", 1000, "a1"), Mutation::set_cell("cf1", "a", 2000, "a2")],
        vec![Mutation::set_cell("cf1", "b", 1000, "b1"), Mutation::set_cell("cf2", "c", 1000, "c1")],
        vec![Mutation::delete_from_column("cf1", "a", TimeRange::new(2000, 3000))],
        vec![Mutation::delete_from_family("cf2")],
        vec![Mutation::set_cell("cf2", "c", 0, "after family delete, older timestamp")],
        vec![Mutation::delete_from_row(), Mutation::set_cell("cf1", "d", 9000, "same mutation, after row delete")],
        vec![Mutation::set_cell("cf1", "a", 1000, "rewritten")],
    ];
    let after_family_delete = vec![
        flat("r", "cf1", "a", 1000, "a1"),
        flat("r", "cf1", "b", 1000, "b1"),
        flat("r", "cf2", "c", 0, "after family delete, older timestamp"),
    ];
    let expected =
        vec![flat("r", "cf1", "a", 1000, "rewritten"), flat("r", "cf1", "d", 9000, "same mutation, after row delete")];
    for flush_mask in 0..(1u32 << steps.len()) {
        let (_d, db) = temp_db();
        let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
        for (i, muts) in steps.iter().enumerate() {
            t.mutate_row("r", muts.clone()).unwrap();
            if flush_mask & (1 << i) != 0 {
                db.flush().unwrap();
            }
            if i == 4 {
                assert_eq!(scan_all(&t), after_family_delete, "flush mask {flush_mask:b}");
            }
        }
        assert_eq!(scan_all(&t), expected, "flush mask {flush_mask:b}");
    }
}

#[test]
fn delete_then_set_in_one_mutation_keeps_the_set_and_set_then_delete_drops_it() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    t.mutate_row(
        "a",
        [Mutation::set_cell("cf1", "q", 1000, "v"), Mutation::delete_from_column("cf1", "q", TimeRange::all())],
    )
    .unwrap();
    t.mutate_row("b", [Mutation::set_cell("cf1", "q", 1000, "v"), Mutation::delete_from_row()]).unwrap();
    t.mutate_row("c", [Mutation::delete_from_family("cf1"), Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
    assert_eq!(scan_all(&t), vec![flat("c", "cf1", "q", 1000, "v")]);
}

#[test]
fn empty_qualifiers_and_values_are_cells() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "", 1000, ""), Mutation::set_cell("cf1", "", 2000, "v")]).unwrap();
    let expected = vec![flat("r", "cf1", "", 2000, "v"), flat("r", "cf1", "", 1000, "")];
    assert_eq!(scan_all(&t), expected);
    db.flush().unwrap();
    assert_eq!(scan_all(&t), expected);
    t.mutate_row("r", [Mutation::delete_from_column("cf1", "", TimeRange::new(2000, 3000))]).unwrap();
    assert_eq!(scan_all(&t), vec![flat("r", "cf1", "", 1000, "")]);
}

fn table_with_keys(keys: &[&[u8]], flush: bool) -> (tempfile::TempDir, cellardb::Db, cellardb::Table) {
    let (d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    for k in keys {
        t.mutate_row(k, [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
    }
    if flush {
        db.flush().unwrap();
    }
    (d, db, t)
}

fn read_keys(t: &cellardb::Table, set: RowSet) -> Vec<Vec<u8>> {
    t.read_rows(set, &Filter::pass_all()).collect_rows().unwrap().into_iter().map(|r| r.key.to_vec()).collect()
}

#[test]
fn prefixes_at_0xff_boundaries() {
    let keys: [&[u8]; 9] =
        [b"a", b"a\x00", b"a\xfe\xff", b"a\xff", b"a\xff\x00", b"a\xff\xff", b"b", b"\xff", b"\xff\xff"];
    for flush in [false, true] {
        let (_d, _db, t) = table_with_keys(&keys, flush);
        let got = read_keys(&t, RowRange::prefix(b"a\xff").into());
        assert_eq!(got, vec![b"a\xff".to_vec(), b"a\xff\x00".to_vec(), b"a\xff\xff".to_vec()], "flush {flush}");
        let got = read_keys(&t, RowRange::prefix(b"\xff").into());
        assert_eq!(got, vec![b"\xff".to_vec(), b"\xff\xff".to_vec()]);
        let got = read_keys(&t, RowRange::prefix(b"\xff\xff").into());
        assert_eq!(got, vec![b"\xff\xff".to_vec()]);
        let got = read_keys(&t, RowRange::prefix(b"a\xfe").into());
        assert_eq!(got, vec![b"a\xfe\xff".to_vec()]);
        assert_eq!(read_keys(&t, RowRange::prefix(b"").into()).len(), keys.len());
    }
}

#[test]
fn row_sets_of_keys_and_ranges_read_each_row_once_in_order() {
    let keys: Vec<String> = (0..30).map(|i| format!("k{i:02}")).collect();
    let refs: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    for flush in [false, true] {
        let (_d, _db, t) = table_with_keys(&refs, flush);
        let set = RowSet::new()
            .key("k25")
            .range(RowRange::closed("k03", "k05"))
            .range(RowRange::open("k04", "k08"))
            .key("k04")
            .key("missing")
            .range(RowRange::open_closed("k20", "k21"))
            .range(RowRange::starting_at("k28"));
        let got: Vec<String> = read_keys(&t, set).into_iter().map(|k| String::from_utf8(k).unwrap()).collect();
        assert_eq!(got, ["k03", "k04", "k05", "k06", "k07", "k21", "k25", "k28", "k29"]);
        let got = read_keys(&t, RowRange::until("k02").into());
        assert_eq!(got.len(), 2);
        let got = read_keys(&t, RowRange::new(Bound::Excluded("k28"), Bound::<&str>::Unbounded).into());
        assert_eq!(got, vec![b"k29".to_vec()]);
    }
}

#[test]
fn reversed_scans_return_rows_descending_with_cells_in_model_order() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    for (i, k) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let ts = 1000 * (i64::try_from(i).unwrap() + 1);
        t.mutate_row(
            k,
            [
                Mutation::set_cell("cf1", "x", ts, "1"),
                Mutation::set_cell("cf1", "x", ts + 1000, "2"),
                Mutation::set_cell("cf2", "y", ts, "3"),
            ],
        )
        .unwrap();
        if i == 2 {
            db.flush().unwrap();
        }
    }
    let forward = t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
    let backward = t.read_rows(RowSet::all(), &Filter::pass_all()).reversed().collect_rows().unwrap();
    assert_eq!(keys(&backward), ["e", "d", "c", "b", "a"]);
    let mut reversed_back = backward.clone();
    reversed_back.reverse();
    assert_eq!(reversed_back, forward, "each row's cells are the same in both directions");
    let last_two = t.read_rows(RowSet::all(), &Filter::pass_all()).reversed().limit(2).collect_rows().unwrap();
    assert_eq!(keys(&last_two), ["e", "d"]);
    let set = RowSet::new().range(RowRange::closed_open("b", "d")).key("e");
    assert_eq!(keys(&t.read_rows(set, &Filter::pass_all()).reversed().collect_rows().unwrap()), ["e", "c", "b"]);
}

#[test]
fn limit_counts_rows_returned_after_filtering() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    for k in ["a", "b", "c", "d"] {
        let family = if k == "b" { "cf2" } else { "cf1" };
        t.mutate_row(k, [Mutation::set_cell(family, "q", 1000, "v")]).unwrap();
    }
    let rows = t.read_rows(RowSet::all(), &Filter::family_name_regex("cf1")).limit(2).collect_rows().unwrap();
    assert_eq!(keys(&rows), ["a", "c"]);
    // As in Bigtable's ReadRows, a limit of 0 is no limit.
    assert_eq!(t.read_rows(RowSet::all(), &Filter::pass_all()).limit(0).count(), 4);
}

#[test]
fn filters_select_families_columns_and_versions() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    let muts: Vec<Mutation> = (1..=3)
        .flat_map(|v| {
            [
                Mutation::set_cell("cf1", "a", v * 1000, format!("a{v}")),
                Mutation::set_cell("cf1", "b", v * 1000, format!("b{v}")),
                Mutation::set_cell("cf2", "a", v * 1000, format!("c{v}")),
            ]
        })
        .collect();
    t.mutate_row("r", muts).unwrap();
    let read = |f: Filter| flatten(&t.read_rows(RowSet::all(), &f).collect_rows().unwrap());
    assert_eq!(read(Filter::block_all()), vec![]);
    assert_eq!(read(Filter::pass_all()).len(), 9);
    assert_eq!(read(Filter::family_name_regex("cf2")).len(), 3);
    assert_eq!(read(Filter::family_name_regex("cf")).len(), 0, "regexes match whole names");
    assert_eq!(read(Filter::column_qualifier_regex("b")).len(), 3);
    assert_eq!(
        read(Filter::column_range("cf1", Bound::Excluded("a"), Bound::Included("b"))),
        vec![flat("r", "cf1", "b", 3000, "b3"), flat("r", "cf1", "b", 2000, "b2"), flat("r", "cf1", "b", 1000, "b1")]
    );
    assert_eq!(
        read(Filter::chain([Filter::timestamp_range(TimeRange::new(1000, 3000)), Filter::cells_per_column_limit(1)])),
        vec![flat("r", "cf1", "a", 2000, "a2"), flat("r", "cf1", "b", 2000, "b2"), flat("r", "cf2", "a", 2000, "c2")]
    );
    assert_eq!(
        read(Filter::chain([
            Filter::family_name_regex("cf1"),
            Filter::column_qualifier_regex("a"),
            Filter::pass_all()
        ])),
        vec![flat("r", "cf1", "a", 3000, "a3"), flat("r", "cf1", "a", 2000, "a2"), flat("r", "cf1", "a", 1000, "a1")]
    );
    let err = t.read_rows(RowSet::all(), &Filter::column_qualifier_regex("[")).collect_rows().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(ref m) if m.contains("regex")), "{err}");
}

#[test]
fn a_read_of_one_family_decodes_no_block_of_another() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("narrow", GcRule::none()), ("wide", GcRule::none())]).unwrap();
    for i in 0..2000 {
        let key = format!("row{i:05}");
        t.mutate_row(
            &key,
            [Mutation::set_cell("narrow", "n", 1000, "x"), Mutation::set_cell("wide", "w", 1000, "y".repeat(200))],
        )
        .unwrap();
    }
    db.flush().unwrap();
    let rows = t.read_rows(RowSet::all(), &Filter::family_name_regex("narrow")).collect_rows().unwrap();
    assert_eq!(rows.len(), 2000);
    let stats = t.stats().unwrap();
    let decoded = |name: &str| stats.families.iter().find(|f| f.name == name).unwrap().blocks_decoded;
    assert!(decoded("narrow") > 0);
    assert_eq!(decoded("wide"), 0, "reading `narrow` must not decompress `wide`");
}

#[test]
fn server_timestamps_are_now_in_whole_milliseconds() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    let before = Timestamp::now().micros();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", Timestamp::SERVER, "v")]).unwrap();
    let after = Timestamp::now().micros();
    let ts = scan_all(&t)[0].3;
    assert!(ts >= before && ts <= after && ts % 1000 == 0, "{before} <= {ts} <= {after}");
}

#[test]
fn bad_input_is_rejected_and_leaves_the_table_intact() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "kept")]).unwrap();
    let invalid = |r: cellardb::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(t.mutate_row("", [Mutation::set_cell("cf1", "q", 1000, "v")])));
    assert!(invalid(t.mutate_row(vec![b'k'; 4097], [Mutation::set_cell("cf1", "q", 1000, "v")])));
    assert!(invalid(t.mutate_row("r", [Mutation::set_cell("cf1", vec![b'q'; 16 * 1024 + 1], 1000, "v")])));
    assert!(invalid(t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1500, "v")])));
    assert!(invalid(t.mutate_row("r", [Mutation::set_cell("cf1", "q", -2000, "v")])));
    assert!(invalid(t.mutate_row("r", Vec::new())));
    assert!(invalid(t.mutate_row("r", [Mutation::delete_from_column("cf1", "q", TimeRange::new(3000, 2000))])));
    // A bad mutation anywhere in the row mutation writes nothing of it.
    let r = t
        .mutate_row("r", [Mutation::set_cell("cf1", "q", 2000, "partial"), Mutation::set_cell("nope", "q", 1000, "v")]);
    assert!(matches!(r, Err(Error::NotFound { kind: "column family", .. })), "{r:?}");
    assert!(invalid(t.read_row("", &Filter::pass_all()).map(|_| ())));
    assert_eq!(scan_all(&t), vec![flat("r", "cf1", "q", 1000, "kept")]);
}

#[test]
fn mutate_rows_reports_each_row_on_its_own() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    let results = t.mutate_rows([
        ("a", vec![Mutation::set_cell("cf1", "q", 1000, "v")]),
        ("", vec![Mutation::set_cell("cf1", "q", 1000, "v")]),
        ("b", vec![Mutation::set_cell("nope", "q", 1000, "v")]),
        ("c", vec![Mutation::set_cell("cf1", "q", 1000, "v")]),
    ]);
    assert!(results[0].is_ok() && results[3].is_ok());
    assert!(matches!(results[1], Err(Error::InvalidArgument(_))));
    assert!(matches!(results[2], Err(Error::NotFound { .. })));
    assert_eq!(keys(&t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap()), ["a", "c"]);
}

#[test]
fn data_spanning_many_flushes_and_blocks_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(dir.path(), small_options());
    let mut expected = Vec::new();
    for i in 0..3000i64 {
        let key = format!("row{:04}", (i * 7919) % 3000);
        let v = format!("value-{i}");
        t.mutate_row(&key, [Mutation::set_cell("cf1", "q", 1000, &v)]).unwrap();
        expected.push(flat(&key, "cf1", "q", 1000, &v));
    }
    expected.sort();
    db.flush().unwrap();
    // Several memtables' worth, so several flushes (how many files are
    // left depends on how far background compaction got: not checked).
    let stats = db.stats().unwrap();
    let memtable = 16 << 10;
    assert!(stats.logical_bytes_written > 3 * memtable, "{} logical bytes", stats.logical_bytes_written);
    assert!(stats.flush_bytes_written > 0 && stats.memtable_bytes == 0);
    assert_eq!(scan_all(&t), expected);
    let mut backward = flatten(&t.read_rows(RowSet::all(), &Filter::pass_all()).reversed().collect_rows().unwrap());
    backward.reverse();
    assert_eq!(backward, expected);
}

#[test]
fn options_change_the_layout_not_the_contents() {
    let write = |opts: cellardb::Options| {
        let dir = tempfile::tempdir().unwrap();
        let db = opts.open(dir.path()).unwrap();
        let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
        for i in 0..2000 {
            t.mutate_row(
                format!("row{:04}", i % 200),
                [Mutation::set_cell("cf1", "q", 1000 * i, format!("{}", 90_000 + i % 7))],
            )
            .unwrap();
        }
        db.flush().unwrap();
        let cells = scan_all(&t);
        let stats = t.stats().unwrap();
        (cells, stats.sst_bytes(), stats.families[0].sst_files)
    };
    let (base, zstd_bytes, _) = write(cellardb::Options::default());
    let (raw, raw_bytes, _) = write(cellardb::Options::default().compression(cellardb::Compression::None));
    let (small, _, _) = write(cellardb::Options::default().block_size(256).memtable_size(8 << 10));
    assert_eq!(base.len(), 2000);
    assert_eq!(raw, base);
    assert_eq!(small, base);
    assert!(zstd_bytes < raw_bytes, "zstd {zstd_bytes} bytes, raw {raw_bytes}");
}

#[test]
fn handles_are_shareable_across_threads() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    fn sendable<T: Send>() {}
    shareable::<cellardb::Db>();
    shareable::<cellardb::Table>();
    sendable::<cellardb::ReadRows>();
}

#[test]
fn stats_report_what_was_written_and_flushed() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    for i in 0..100 {
        t.mutate_row(format!("r{i}"), [Mutation::set_cell("cf1", "q", 1000, "v"), Mutation::delete_from_row()])
            .unwrap();
    }
    let s = db.stats().unwrap();
    assert_eq!(s.last_sequence, 200, "one sequence number per mutation");
    assert!(s.memtable_bytes > 0 && s.wal_bytes_written > s.logical_bytes_written / 2);
    db.flush().unwrap();
    let s = db.stats().unwrap();
    assert_eq!(s.memtable_bytes, 0);
    let families = &s.tables[0].families;
    assert_eq!((families[0].sst_files, families[0].cells, families[0].tombstones), (1, 100, 100));
    assert_eq!((families[1].sst_files, families[1].cells, families[1].tombstones), (1, 0, 100));
    assert_eq!(s.flush_bytes_written, s.tables[0].sst_bytes());
}

#[test]
fn logical_bytes_count_row_family_qualifier_value_and_timestamp() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("measurements", GcRule::none())]).unwrap();
    t.mutate_row("row1", [Mutation::set_cell("measurements", "pressure", 1000, "95437")]).unwrap();
    let expected = "row1".len() + "measurements".len() + "pressure".len() + "95437".len() + 8;
    assert_eq!(db.stats().unwrap().logical_bytes_written, expected as u64);
}

#[test]
fn a_read_is_an_iterator_of_rows() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    for k in ["a", "b", "c"] {
        t.mutate_row(k, [Mutation::set_cell("cf1", "q", 1000, k)]).unwrap();
    }
    assert_eq!(t.read_rows(RowSet::all(), &Filter::pass_all()).count(), 3);
    let keys: Vec<Vec<u8>> =
        t.read_rows(RowSet::all(), &Filter::pass_all()).map(|r| r.unwrap().key.to_vec()).skip(1).collect();
    assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    let mut last = t.read_rows(RowSet::all(), &Filter::pass_all()).reversed().limit(1);
    assert_eq!(&last.next().unwrap().unwrap().key[..], b"c");
    assert!(last.next().is_none());
}

#[test]
fn bounds_of_one_type_need_no_annotation() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("m", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("m", "a", 1000, "1"), Mutation::set_cell("m", "c", 1000, "3")]).unwrap();
    let from_b = Filter::column_range("m", Bound::Included("b"), Bound::Unbounded);
    let values = Filter::value_range(Bound::Unbounded, Bound::Excluded("2"));
    let rows = RowSet::from(RowRange::new(Bound::Included("r"), Bound::Unbounded));
    assert_eq!(flatten(&t.read_rows(rows.clone(), &from_b).collect_rows().unwrap()), [flat("r", "m", "c", 1000, "3")]);
    assert_eq!(flatten(&t.read_rows(rows, &values).collect_rows().unwrap()), [flat("r", "m", "a", 1000, "1")]);
}

#[test]
fn timestamps_are_one_type_from_write_to_read() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("m", GcRule::none())]).unwrap();
    let launch = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_614_556_800);
    let at = Timestamp::from(launch);
    t.mutate_row("r", [Mutation::set_cell("m", "q", at, "v"), Mutation::set_cell("m", "q", 5_000, "old")]).unwrap();
    let row = t.read_row("r", &Filter::pass_all()).unwrap().unwrap();
    let newest = row.latest("m", "q").unwrap();
    assert_eq!(newest.timestamp, at);
    assert_eq!(newest.timestamp.to_system_time(), launch);
    let before = Filter::timestamp_range(TimeRange::until(at));
    let row = t.read_row("r", &before).unwrap().unwrap();
    assert_eq!(row.latest("m", "q").unwrap().timestamp, Timestamp::from_millis(5));
    t.mutate_row("r", [Mutation::delete_from_column("m", "q", TimeRange::until(at))]).unwrap();
    assert_eq!(t.read_row("r", &Filter::pass_all()).unwrap().unwrap().cell_count(), 1);
}

#[test]
fn a_cell_older_than_its_familys_max_age_is_accepted_counted_and_never_read() {
    let (_d, db) = temp_db();
    let day = std::time::Duration::from_secs(86_400);
    let t = db.create_table("t", [("recent", GcRule::max_age(day)), ("all", GcRule::none())]).unwrap();
    let long_ago = Timestamp::from_millis(1_000);
    t.mutate_row(
        "r",
        [Mutation::set_cell("recent", "q", long_ago, "stale"), Mutation::set_cell("all", "q", long_ago, "kept")],
    )
    .unwrap();
    t.mutate_row("r", [Mutation::set_cell("recent", "q", Timestamp::SERVER, "fresh")]).unwrap();
    let cells = flatten(&[t.read_row("r", &Filter::pass_all()).unwrap().unwrap()]);
    assert_eq!(cells.iter().map(|c| c.4.as_str()).collect::<Vec<_>>(), ["kept", "fresh"]);
    assert_eq!(db.stats().unwrap().cells_expired_at_write, 1, "only the stale cell, not the one kept forever");
}

/// Reversed reads of rows too wide to gather backwards read them forward:
/// across memtable and files, with filters and limits, they return the
/// forward read's rows in reverse; and the newest cell of each column of
/// the last row, read backwards with a limit of one row, decodes a few of
/// that row's blocks, not all of them.
#[test]
fn reversed_reads_of_wide_rows_seek_and_match_forward_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = cellardb::Options::default().block_size(512).block_cache_size(0).open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).unwrap();
    // The first family holds the row's greatest qualifier: a bound taken
    // from the last family's last entry must not cut it short.
    let write = |row: &str, columns: usize, versions: i64| {
        for v in 0..versions {
            let cells = (0..columns).map(|c| {
                let family = if c % 2 == 0 { "cf1" } else { "cf2" };
                Mutation::set_cell(family, format!("q{}", columns - c), 1000 * (v + 1), format!("{row}-{c}-{v}"))
            });
            t.mutate_row(row, cells.collect::<Vec<_>>()).unwrap();
        }
    };
    write("a", 2, 1);
    write("w1", 4, 300);
    write("m", 3, 2);
    write("w2", 4, 150);
    db.flush().unwrap();
    // Half of w2 in the memtable, half in a file; w3 wide and last, in a file.
    write("w2", 4, 300);
    write("w3", 4, 400);
    db.flush().unwrap();
    write("n", 1, 1);

    let filters = [
        Filter::pass_all(),
        Filter::cells_per_column_limit(1),
        Filter::timestamp_range(TimeRange::new(100_000, 200_000)),
        Filter::column_qualifier_regex("q1"),
        Filter::cells_per_row_limit(5),
        Filter::value_regex("w2-.*"),
    ];
    for filter in &filters {
        let mut forward = t.read_rows(RowSet::all(), filter).collect_rows().unwrap();
        forward.reverse();
        for limit in [0, 1, 2, 3] {
            let backward = t.read_rows(RowSet::all(), filter).reversed().limit(limit).collect_rows().unwrap();
            let n = if limit == 0 { forward.len() } else { limit.min(forward.len()) };
            assert_eq!(backward, forward[..n], "{filter:?} limit {limit}");
            let borrowed = borrowed_rows(t.read_rows(RowSet::all(), filter).reversed().limit(limit));
            assert_eq!(borrowed, forward[..n], "{filter:?} limit {limit}, borrowed");
        }
        let set = RowSet::new().range(RowRange::prefix("w")).key("a");
        let mut forward = t.read_rows(set.clone(), filter).collect_rows().unwrap();
        forward.reverse();
        assert_eq!(t.read_rows(set, filter).reversed().collect_rows().unwrap(), forward, "{filter:?}");
    }

    db.compact_table("t").unwrap();
    let decoded = || -> u64 { db.stats().unwrap().tables[0].families.iter().map(|f| f.blocks_decoded).sum() };
    let before = decoded();
    let whole = t.read_rows(RowSet::from(RowRange::prefix("w3")), &Filter::pass_all()).collect_rows().unwrap();
    let blocks_of_w3 = decoded() - before;
    assert!(blocks_of_w3 >= 20, "w3 spans {blocks_of_w3} blocks");
    let before = decoded();
    let newest = Filter::cells_per_column_limit(1);
    let latest = t.read_rows(RowSet::from(RowRange::prefix("w")), &newest).reversed().limit(1).collect_rows().unwrap();
    let blocks_read = decoded() - before;
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].key, whole[0].key);
    assert_eq!(latest[0].cell_count(), 4, "the newest cell of each column");
    assert!(blocks_read * 4 <= blocks_of_w3, "read {blocks_read} of w3's {blocks_of_w3} blocks");
}

/// The rows of `read`, read through `next_borrowed` and made owned.
fn borrowed_rows(mut read: cellardb::ReadRows) -> Vec<cellardb::Row> {
    let mut rows = Vec::new();
    while let Some(row) = read.next_borrowed() {
        let row = row.unwrap();
        let owned = row.to_row();
        assert_eq!(owned.key, row.key());
        assert_eq!(owned.cell_count(), row.cell_count());
        rows.push(owned);
    }
    rows
}

/// A read of many keys and ranges moves one set of sources from span to
/// span: it returns what reading each key or range alone returns, with
/// rows spread over the memtable and files (some rows only in a file its
/// bloom filter turns down for the others, deletes in newer files, cells
/// rewritten in the memtable), under filters that let a read start inside
/// a row and filters that do not, with limits, through both ways of
/// reading rows.
#[test]
fn a_read_of_many_keys_gives_what_each_key_gives_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = cellardb::Options::default().block_size(256).open(dir.path()).unwrap();
    let t = db.create_table("t", [("a", GcRule::none()), ("b", GcRule::max_versions(2))]).unwrap();
    let write = |row: String, ms: i64, v: &str| {
        let cells = ["p", "q"].map(|q| Mutation::set_cell("a", q, ms * 1000, format!("{row}-{q}-{v}")));
        t.mutate_row(&row, cells.into_iter().chain([Mutation::set_cell("b", "q", ms * 1000, v)])).unwrap();
    };
    for r in (0..60).step_by(2) {
        for ms in 1..=20 {
            write(format!("r{r:02}"), ms, "old");
        }
    }
    db.flush().unwrap();
    for r in (1..60).step_by(6) {
        write(format!("r{r:02}"), 5, "odd");
    }
    t.mutate_row("r10", [Mutation::delete_from_column("a", "q", TimeRange::new(3000, 9000))]).unwrap();
    t.mutate_row("r20", [Mutation::delete_from_family("a")]).unwrap();
    t.mutate_row("r30", [Mutation::delete_from_row()]).unwrap();
    db.flush().unwrap();
    for r in (0..60).step_by(10) {
        write(format!("r{r:02}"), 7, "new");
    }

    let keys: Vec<String> = [0, 1, 2, 3, 10, 11, 19, 20, 21, 30, 31, 44, 58, 59, 61].map(|r| format!("r{r:02}")).into();
    let ranges = [RowRange::closed_open("r40", "r43"), RowRange::prefix("r5")];
    let filters = [
        Filter::pass_all(),
        Filter::chain([Filter::column_qualifier_regex("q"), Filter::timestamp_range(TimeRange::new(4000, 12_000))]),
        Filter::chain([Filter::family_name_regex("a"), Filter::cells_per_column_limit(1)]),
        Filter::value_regex(".*new"),
    ];
    for filter in &filters {
        let mut alone: Vec<cellardb::Row> = keys.iter().filter_map(|k| t.read_row(k, filter).unwrap()).collect();
        for range in &ranges {
            alone.extend(t.read_rows(RowSet::from(range.clone()), filter).collect_rows().unwrap());
        }
        alone.sort_by(|x, y| x.key.cmp(&y.key));
        // A key inside a range is read once.
        alone.dedup_by(|x, y| x.key == y.key);
        let set = ranges.iter().fold(RowSet::new().keys(&keys), |set, r| set.range(r.clone()));
        assert_eq!(t.read_rows(set.clone(), filter).collect_rows().unwrap(), alone, "{filter:?}");
        assert_eq!(borrowed_rows(t.read_rows(set.clone(), filter)), alone, "{filter:?}, borrowed");
        let limited = t.read_rows(set, filter).limit(4).collect_rows().unwrap();
        assert_eq!(limited, alone[..4.min(alone.len())], "{filter:?}, limit 4");
    }
}

/// A read's steps as text: `row KEY` or `scanned KEY`.
fn steps(read: &mut cellardb::ReadRows) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(step) = read.next_step() {
        out.push(match step.unwrap() {
            Step::Row(row) => format!("row {}", String::from_utf8_lossy(row.key())),
            Step::Scanned(key) => format!("scanned {}", String::from_utf8_lossy(key)),
        });
    }
    out
}

#[test]
fn a_read_reports_how_far_it_scanned_past_rows_its_filter_drops() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    for i in 0..1000 {
        t.mutate_row(format!("k{i:04}"), vec![Mutation::set_cell("cf1", "q", Timestamp::from_millis(1), "v")]).unwrap();
        if i == 400 {
            db.flush().unwrap();
        }
    }
    // A row whose only cell is deleted is passed over as a filtered one is.
    t.mutate_row("k0001", vec![Mutation::DeleteFromRow]).unwrap();
    let filter = Filter::row_key_regex("k0500|k0999");
    let expect = |list: &[&str]| list.iter().map(ToString::to_string).collect::<Vec<_>>();

    // Every 100 rows passed over in a row, the last one's key; a row kept
    // starts the count again.
    let mut forward = t.read_rows(RowSet::all(), &filter).report_scanned(100);
    let want = [
        "scanned k0099",
        "scanned k0199",
        "scanned k0299",
        "scanned k0399",
        "scanned k0499",
        "row k0500",
        "scanned k0600",
        "scanned k0700",
        "scanned k0800",
        "scanned k0900",
        "row k0999",
    ];
    assert_eq!(steps(&mut forward), expect(&want));
    let mut backward = t.read_rows(RowSet::all(), &filter).report_scanned(100).reversed();
    let want = [
        "row k0999",
        "scanned k0899",
        "scanned k0799",
        "scanned k0699",
        "scanned k0599",
        "row k0500",
        "scanned k0400",
        "scanned k0300",
        "scanned k0200",
        "scanned k0100",
        "scanned k0000",
    ];
    assert_eq!(steps(&mut backward), expect(&want));

    // The limit counts rows only; rows and their order are the same with
    // or without reports, and without, nothing is reported.
    let mut limited = t.read_rows(RowSet::all(), &filter).report_scanned(100).limit(1);
    assert_eq!(steps(&mut limited).last().map(String::as_str), Some("row k0500"));
    let reported = t.read_rows(RowSet::all(), &filter).report_scanned(100).collect_rows().unwrap();
    assert_eq!(keys(&reported), ["k0500", "k0999"]);
    let mut quiet = t.read_rows(RowSet::all(), &filter);
    assert_eq!(steps(&mut quiet), expect(&["row k0500", "row k0999"]));
    let mut borrowed = t.read_rows(RowSet::all(), &filter).report_scanned(1);
    assert_eq!(borrowed.next_borrowed().unwrap().unwrap().key(), b"k0500");
}

/// A thread's reads reuse the buffers of its last one: rows a read handed
/// out, and rows borrowed in between, keep their cells whatever reads come
/// after, wide or narrow, borrowed or owned, with rows dropped or kept.
#[test]
fn rows_keep_their_cells_across_reads_that_reuse_buffers() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    // A wide row of 3,000 cells, then narrow rows, some in an SSTable.
    let wide: Vec<Mutation> =
        (0..3000).map(|i| Mutation::set_cell("f", format!("q{i:04}"), 1000, format!("wide-{i}"))).collect();
    t.mutate_row("m-wide", wide).unwrap();
    for r in 0..50 {
        t.mutate_row(format!("n{r:02}"), [Mutation::set_cell("f", "q", 1000, format!("narrow-{r}"))]).unwrap();
    }
    db.flush().unwrap();
    t.mutate_row("n07", [Mutation::set_cell("f", "q", 2000, "newer")]).unwrap();
    let expected_narrow =
        flatten(&t.read_rows(RowSet::new().range(RowRange::prefix("n")), &Filter::pass_all()).collect_rows().unwrap());
    assert_eq!(expected_narrow.len(), 51);

    // Owned rows handed out, then wide and narrow reads of every kind.
    let kept = t.read_rows(RowSet::new().range(RowRange::prefix("n")), &Filter::pass_all()).collect_rows().unwrap();
    for round in 0..3 {
        let wide_row = t.read_row("m-wide", &Filter::pass_all()).unwrap().unwrap();
        assert_eq!(wide_row.cells().count(), 3000, "round {round}");
        let mut borrowed = t.read_rows(RowSet::new().range(RowRange::prefix("m")), &Filter::pass_all());
        while let Some(row) = borrowed.next_borrowed() {
            let row = row.unwrap();
            assert_eq!(row.cells().count(), 3000);
            assert!(row.cells().all(|c| c.value.starts_with(b"wide-")));
        }
        drop(borrowed);
        let narrow = t
            .read_rows(RowSet::new().range(RowRange::prefix("n")), &Filter::pass_all())
            .reversed()
            .limit(10)
            .collect_rows()
            .unwrap();
        assert_eq!(narrow.len(), 10);
        assert_eq!(flatten(&kept), expected_narrow, "round {round}");
        let values: Vec<String> =
            wide_row.cells().map(|(_, _, c)| String::from_utf8(c.value.to_vec()).unwrap()).collect();
        assert_eq!(values[..2], ["wide-0", "wide-1"]);
        assert_eq!(values[2999], "wide-2999");
    }
}
