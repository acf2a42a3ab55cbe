//! Compaction and GC: every rule gives the same reads before and after
//! compaction, deleted data and tombstones leave the disk, expired files go
//! whole, level 0 is drained in the background.

mod common;

use std::time::{Duration, Instant};

use cellardb::{
    Aggregate, CompactionStrategy, Db, FamilySchema, Filter, GcRule, Mutation, Options, RowRange, RowSet, Table,
    TimeRange, Timestamp,
};
use common::*;

const HOUR: i64 = 3_600_000_000;

fn now() -> i64 {
    Timestamp::now().micros()
}

fn family_stats(db: &Db, family: &str) -> cellardb::FamilyStats {
    let t = db.table("t").unwrap().stats().unwrap();
    t.families.into_iter().find(|f| f.name == family).unwrap()
}

/// Writes versions of a few columns at explicit timestamps, spread over
/// several flushed files, with deletes in between. Versions are whole hours
/// apart plus half an hour, so no cell's age crosses a rule's whole-hour
/// `max_age` while the test runs (a cell 2 h − 19 ms old did, in a fast
/// release build, between the reads before and after compaction).
fn write_history(db: &Db, t: &cellardb::Table, family: &str) {
    let n = now() / 1000 * 1000;
    for row in 0..20 {
        let key = format!("row{row:02}");
        for v in 0..6i64 {
            let ts = n - (6 - v) * HOUR - HOUR / 2 + i64::from(row) * 1000;
            t.mutate_row(
                &key,
                [
                    Mutation::set_cell(family, "a", ts, format!("a{v}")),
                    Mutation::set_cell(family, "b", ts, format!("b{v}")),
                ],
            )
            .unwrap();
        }
        if row % 3 == 0 {
            t.mutate_row(&key, [Mutation::delete_from_column(family, "a", TimeRange::since(n - HOUR - HOUR / 2))])
                .unwrap();
        }
        if row % 7 == 0 {
            t.mutate_row(&key, [Mutation::delete_from_family(family)]).unwrap();
            t.mutate_row(&key, [Mutation::set_cell(family, "c", n - 3 * HOUR - HOUR / 2, "after")]).unwrap();
        }
        if row % 5 == 4 {
            db.flush().unwrap();
        }
    }
}

#[test]
fn every_gc_rule_reads_the_same_before_and_after_compaction() {
    let hours = |h: u64| Duration::from_secs(3600 * h);
    let rules = [
        GcRule::none(),
        GcRule::max_versions(1),
        GcRule::max_versions(3),
        GcRule::max_age(hours(3)),
        GcRule::union([GcRule::max_versions(2), GcRule::max_age(hours(4))]),
        GcRule::intersection([GcRule::max_versions(1), GcRule::max_age(hours(2))]),
        GcRule::union([
            GcRule::max_age(hours(5)),
            GcRule::intersection([GcRule::max_versions(1), GcRule::max_age(hours(3))]),
        ]),
        GcRule::intersection([
            GcRule::max_versions(2),
            GcRule::union([GcRule::max_age(hours(1)), GcRule::max_versions(2)]),
        ]),
    ];
    for rule in rules {
        let (_d, db) = temp_db();
        let t = db.create_table("t", [("f", rule.clone())]).unwrap();
        write_history(&db, &t, "f");
        let before = scan_all(&t);
        db.compact_table("t").unwrap();
        assert_eq!(scan_all(&t), before, "rule {rule}");
        let f = family_stats(&db, "f");
        assert_eq!((f.sst_files, f.tombstones), (1, 0), "rule {rule}: one file, no tombstone left");
        assert_eq!(f.cells, before.len() as u64, "rule {rule}: exactly the live cells stay on disk");
    }
}

#[test]
fn deleting_the_newest_versions_never_resurrects_what_compaction_removed() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::max_versions(2))]).unwrap();
    for v in 1..=3 {
        t.mutate_row("r", [Mutation::set_cell("f", "q", v * 1000, format!("v{v}"))]).unwrap();
    }
    db.flush().unwrap();
    let compacted = tempfile::tempdir().unwrap();
    let db2 = Db::open(compacted.path()).unwrap();
    let t2 = db2.create_table("t", [("f", GcRule::max_versions(2))]).unwrap();
    for v in 1..=3 {
        t2.mutate_row("r", [Mutation::set_cell("f", "q", v * 1000, format!("v{v}"))]).unwrap();
    }
    db2.compact_table("t").unwrap();
    for t in [&t, &t2] {
        t.mutate_row("r", [Mutation::delete_from_column("f", "q", TimeRange::new(3000, 4000))]).unwrap();
        assert_eq!(scan_all(t), vec![flat("r", "f", "q", 2000, "v2")], "v1 was collected for good");
    }
}

#[test]
fn deleted_rows_leave_the_disk_after_compaction() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    for i in 0..2000 {
        t.mutate_row(
            format!("row{i:04}"),
            [Mutation::set_cell("f", "q", 1000, format!("value {i} {}", "x".repeat(50)))],
        )
        .unwrap();
    }
    db.flush().unwrap();
    let full = family_stats(&db, "f").sst_bytes;
    for i in 0..1800 {
        t.mutate_row(format!("row{i:04}"), [Mutation::delete_from_row()]).unwrap();
    }
    db.flush().unwrap();
    assert!(family_stats(&db, "f").sst_bytes > full, "tombstones take room before compaction");
    db.compact_table("t").unwrap();
    let f = family_stats(&db, "f");
    assert_eq!((f.cells, f.tombstones), (200, 0));
    assert!(f.sst_bytes * 4 < full, "{} bytes left of {full}", f.sst_bytes);
    assert_eq!(t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap().len(), 200);
}

#[test]
fn gc_rule_changes_apply_to_the_next_read_and_compaction_makes_them_final() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    for v in 1..=4 {
        t.mutate_row("r", [Mutation::set_cell("f", "q", v * 1000, format!("v{v}"))]).unwrap();
    }
    db.set_gc_rule("t", "f", GcRule::max_versions(1)).unwrap();
    assert_eq!(scan_all(&t).len(), 1);
    db.set_gc_rule("t", "f", GcRule::none()).unwrap();
    assert_eq!(scan_all(&t).len(), 4, "nothing was removed yet");
    db.set_gc_rule("t", "f", GcRule::max_versions(2)).unwrap();
    db.compact_table("t").unwrap();
    db.set_gc_rule("t", "f", GcRule::none()).unwrap();
    assert_eq!(scan_all(&t).len(), 2, "what compaction removed stays removed");
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_file_expired_by_age_is_deleted_whole_without_rewriting() {
    let (_d, db) = temp_db();
    let rule = GcRule::union([GcRule::max_versions(10), GcRule::max_age(Duration::from_secs(3600))]);
    let t = db.create_table("t", [("f", rule)]).unwrap();
    for i in 0..100 {
        t.mutate_row(format!("old{i:03}"), [Mutation::set_cell("f", "q", now() - 5 * HOUR, "old")]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..100 {
        t.mutate_row(format!("new{i:03}"), [Mutation::set_cell("f", "q", Timestamp::SERVER, "new")]).unwrap();
    }
    db.flush().unwrap();
    wait_for("the expired file to go", || family_stats(&db, "f").sst_files == 1);
    let s = db.stats().unwrap();
    assert_eq!(s.compaction_bytes_written, 0, "dropped whole, not rewritten");
    assert_eq!(family_stats(&db, "f").cells, 100);
    assert_eq!(scan_all(&t).len(), 100);
}

#[test]
fn background_compaction_drains_level_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().memtable_size(16 << 10).open(dir.path()).unwrap();
    let t = db.create_table("t", [("f", GcRule::max_versions(1))]).unwrap();
    let mut expected = Vec::new();
    for i in 0..6000 {
        let key = format!("row{:03}", i % 300);
        t.mutate_row(&key, [Mutation::set_cell("f", "q", 1000 * (i / 300 + 1), format!("v{i}"))]).unwrap();
    }
    for r in 0..300 {
        expected.push(flat(&format!("row{r:03}"), "f", "q", 20_000, &format!("v{}", 19 * 300 + r)));
    }
    db.flush().unwrap();
    wait_for("level 0 to drain", || {
        let f = family_stats(&db, "f");
        f.levels.iter().find(|l| l.level == 0).is_none_or(|l| l.files < 4)
    });
    let f = family_stats(&db, "f");
    assert!(f.levels.iter().any(|l| l.level >= 1), "{:?}", f.levels);
    assert!(f.cells < 6000, "old versions went in the background: {} cells left", f.cells);
    assert_eq!(scan_all(&t), expected);
    let s = db.stats().unwrap();
    assert!(s.compaction_bytes_written > 0 && s.write_amplification > 0.0 && s.space_amplification >= 1.0);
}

#[test]
fn compaction_leaves_other_tables_and_ranges_alone() {
    let (_d, db) = temp_db();
    let a = db.create_table("a", [("f", GcRule::max_versions(1))]).unwrap();
    let b = db.create_table("b", [("f", GcRule::max_versions(1))]).unwrap();
    for v in 1..=3 {
        for t in [&a, &b] {
            t.mutate_row("r", [Mutation::set_cell("f", "q", v * 1000, format!("v{v}"))]).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_table("a").unwrap();
    let files = |t: &cellardb::Table| t.stats().unwrap().families[0].sst_files;
    assert_eq!((files(&a), files(&b)), (1, 3));
    let prefix = b.read_rows(RowSet::from(RowRange::prefix("r")), &Filter::pass_all()).collect_rows().unwrap();
    assert_eq!(flatten(&prefix), vec![flat("r", "f", "q", 3000, "v3")]);
}

fn put_rows(t: &cellardb::Table, prefix: &str, n: usize) {
    for i in 0..n {
        t.mutate_row(
            format!("{prefix}{i:04}"),
            [Mutation::set_cell("f", "q", 1000, format!("{prefix} {i} {}", "x".repeat(40)))],
        )
        .unwrap();
    }
}

fn row_count(t: &cellardb::Table, range: RowRange) -> usize {
    t.read_rows(RowSet::from(range), &Filter::pass_all()).collect_rows().unwrap().len()
}

#[test]
fn drop_row_range_deletes_now_keeps_later_writes_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        let t = db.create_table("t", [("f", GcRule::none()), ("g", GcRule::none())]).unwrap();
        put_rows(&t, "a#", 100);
        put_rows(&t, "b#", 100);
        db.flush().unwrap();
        put_rows(&t, "b#", 10); // newer versions in the memtable
        t.mutate_row("b#0001", [Mutation::set_cell("g", "q", 1000, "other family")]).unwrap();
        t.drop_row_range(RowRange::prefix("b#")).unwrap();
        assert_eq!(row_count(&t, RowRange::prefix("b#")), 0, "gone from memtable and files, every family");
        assert_eq!(row_count(&t, RowRange::prefix("a#")), 100);
        t.mutate_row("b#0005", [Mutation::set_cell("f", "q", 0, "after the drop")]).unwrap();
    }
    let db = Db::open(dir.path()).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(
        flatten(&t.read_rows(RowSet::from(RowRange::prefix("b#")), &Filter::pass_all()).collect_rows().unwrap()),
        vec![flat("b#0005", "f", "q", 0, "after the drop")]
    );
    assert_eq!(row_count(&t, RowRange::all()), 101);
}

#[test]
fn dropped_ranges_free_space_without_rewriting_unrelated_files() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    put_rows(&t, "a#", 500);
    db.flush().unwrap();
    put_rows(&t, "b#", 500);
    db.flush().unwrap();
    let f = family_stats(&db, "f");
    assert_eq!(f.sst_files, 2);
    t.drop_row_range(RowRange::prefix("b#")).unwrap();
    let f = family_stats(&db, "f");
    assert_eq!(f.sst_files, 1, "the file of b# rows alone is deleted at once");
    assert_eq!(db.stats().unwrap().compaction_bytes_written, 0, "and nothing was rewritten");
    // A range cutting through a file: the file is rewritten in the background.
    let before = family_stats(&db, "f").sst_bytes;
    t.drop_row_range(RowRange::closed_open("a#0100", "a#0400")).unwrap();
    assert_eq!(row_count(&t, RowRange::all()), 200);
    wait_for("the partly dropped file to be rewritten", || family_stats(&db, "f").cells == 200);
    assert!(family_stats(&db, "f").sst_bytes < before);
    t.drop_all_rows().unwrap();
    assert_eq!(row_count(&t, RowRange::all()), 0);
    assert_eq!(family_stats(&db, "f").sst_files, 0);
}

#[test]
fn writes_after_a_drop_survive_compaction_of_a_file_the_drop_cuts_through() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("f", GcRule::max_versions(1))]).unwrap();
    put_rows(&t, "a#", 50);
    put_rows(&t, "z#", 50);
    db.flush().unwrap();
    t.drop_row_range(RowRange::prefix("a#")).unwrap();
    t.mutate_row("a#0007", [Mutation::set_cell("f", "q", 5000, "after the drop")]).unwrap();
    db.compact_table("t").unwrap();
    let after =
        flatten(&t.read_rows(RowSet::from(RowRange::prefix("a#")), &Filter::pass_all()).collect_rows().unwrap());
    assert_eq!(after, vec![flat("a#0007", "f", "q", 5000, "after the drop")]);
    assert_eq!(row_count(&t, RowRange::all()), 51);
    db.compact_table("t").unwrap();
    assert_eq!(row_count(&t, RowRange::all()), 51, "a second full compaction agrees");
}

/// Time series keyed `series#bucket`: each flush brings cells for the
/// newest bucket of every series, so background compactions copy the
/// older buckets' blocks as stored. Reads see every cell, and a delete
/// and a reopen after such compactions change nothing else.
#[test]
fn time_series_compactions_copy_old_buckets_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options::default().memtable_size(32 << 10).block_size(512);
    let db = opts().open(dir.path()).unwrap();
    let t = db.create_table("t", [("m", GcRule::none())]).unwrap();
    let mut expected = std::collections::BTreeMap::new();
    for bucket in 0..6 {
        for minute in 0..40i64 {
            for series in 0..12 {
                let key = format!("s{series:02}#b{bucket}");
                let ts = (bucket * 1000 + minute) * 60_000_000;
                let value = format!("{series}-{bucket}-{minute}");
                t.mutate_row(&key, [Mutation::set_cell("m", "v", ts, value.clone())]).unwrap();
                expected.insert((key, std::cmp::Reverse(ts)), value);
            }
            if minute % 10 == 9 {
                db.flush().unwrap();
            }
        }
        // One bucket's flushes are compacted before the next bucket's
        // begin, so later compactions find older buckets settled.
        wait_for("level 0 to drain", || {
            let f = family_stats(&db, "m");
            f.levels.iter().find(|l| l.level == 0).is_none_or(|l| l.files < 4)
        });
    }
    t.mutate_row("s03#b2", [Mutation::delete_from_row()]).unwrap();
    expected.retain(|(key, _), _| key != "s03#b2");
    wait_for("level 0 to drain", || {
        let f = family_stats(&db, "m");
        f.levels.iter().find(|l| l.level == 0).is_none_or(|l| l.files < 4)
    });
    let copied = db.stats().unwrap().compaction_blocks_copied;
    assert!(copied > 0, "no block was copied: {:?}", family_stats(&db, "m").levels);
    let want: Vec<Flat> = expected.iter().map(|((k, ts), v)| flat(k, "m", "v", ts.0, v)).collect();
    assert_eq!(scan_all(&t), want);
    db.close().unwrap();
    let db = opts().open(dir.path()).unwrap();
    assert_eq!(scan_all(&db.table("t").unwrap()), want);
}

/// Files of `family` in `level`.
fn files_in_level(db: &Db, family: &str, level: u8) -> usize {
    family_stats(db, family).levels.iter().find(|l| l.level == level).map_or(0, |l| l.files)
}

/// Writes `n` to `f:q` of `row` at second `second`: as a cell's value, or
/// as an input of an aggregate family.
fn write_n(t: &Table, aggregate: Option<Aggregate>, row: &str, second: i64, n: i64) {
    let ts = second * 1_000_000;
    let m = match aggregate {
        Some(_) => Mutation::add_to_cell("f", "q", ts, n),
        None => Mutation::set_cell("f", "q", ts, n.to_string()),
    };
    t.mutate_row(row, [m]).unwrap();
}

/// The layout that lost a write in the long crash runs (seed 20261127,
/// kill 742), reached by switching compaction strategy between opens: level
/// 1 holds, beside one file per time window, a file with only the tombstone
/// of a row delete, newer than some cells of the row in a window file and
/// older than others. Then the leveled strategy merges level 0 with the
/// window file (rows `a..=k`) and not with the tombstone's file (row `k`).
///
/// Under the time-window strategy (windows of a second), row `k` gets 100
/// to 103 in window 1 (merged alone), then in window 5: 1, a row delete,
/// and 10. Window 5's merge leaves window 1 out, which holds `k`, so the
/// tombstone stays, in a file of its own. Returns the database, reopened
/// under the leveled strategy after its merge.
fn tombstone_beside_time_windows(aggregate: Option<Aggregate>) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let windowed = Options::default().compaction_strategy(CompactionStrategy::TimeWindow { window_micros: 1_000_000 });
    let db = windowed.open(dir.path()).unwrap();
    let family = FamilySchema { name: "f".into(), gc_rule: GcRule::none(), aggregate };
    let t = db.create_table_with_families("t", [family]).unwrap();
    for n in 100..104 {
        write_n(&t, aggregate, "k", 1, n);
        db.flush().unwrap();
    }
    wait_for("window 1 to be merged", || files_in_level(&db, "f", 0) == 0);
    write_n(&t, aggregate, "k", 5, 1);
    write_n(&t, aggregate, "a", 5, 1);
    db.flush().unwrap();
    t.mutate_row("k", [Mutation::delete_from_row()]).unwrap();
    write_n(&t, aggregate, "a", 5, 2);
    db.flush().unwrap();
    write_n(&t, aggregate, "k", 5, 10);
    db.flush().unwrap();
    write_n(&t, aggregate, "a", 5, 3);
    db.flush().unwrap();
    wait_for("window 5 to be merged", || files_in_level(&db, "f", 0) == 0);
    assert_eq!(files_in_level(&db, "f", 1), 3, "window 1, window 5 and the tombstone");
    db.close().unwrap();
    drop(db);

    let db = Db::open(dir.path()).unwrap();
    let t = db.table("t").unwrap();
    for n in 0..4 {
        write_n(&t, aggregate, "b", 6, n);
        db.flush().unwrap();
    }
    wait_for("level 0 to be merged", || files_in_level(&db, "f", 0) == 0);
    (dir, db)
}

/// Row `k`'s cells in `db`, as (second, value).
fn row_k(db: &Db) -> Vec<(i64, Vec<u8>)> {
    let row = db.table("t").unwrap().read_row("k", &Filter::pass_all()).unwrap();
    row.map(|r| r.cells().map(|(_, _, c)| (c.timestamp.micros() / 1_000_000, c.value.to_vec())).collect())
        .unwrap_or_default()
}

/// The merge took `k`'s newest cell for the row's whole history, because
/// the tombstone's file is in the output's level; it wrote the cell without
/// its sequence number, and the tombstone then deleted it.
#[test]
fn a_cell_written_after_a_row_delete_survives_a_merge_that_leaves_the_tombstone_out() {
    let (_dir, db) = tombstone_beside_time_windows(None);
    assert_eq!(row_k(&db), [(5, b"10".to_vec())]);
    db.compact_table("t").unwrap();
    assert_eq!(row_k(&db), [(5, b"10".to_vec())], "after a full compaction");
}

/// Before the row delete, `k` had 1 at second 5; after it, 10. A merge
/// that does not hold the tombstone between them must not add them up.
#[test]
fn aggregate_inputs_on_both_sides_of_a_row_delete_are_not_merged_without_it() {
    let (_dir, db) = tombstone_beside_time_windows(Some(Aggregate::Sum));
    assert_eq!(row_k(&db), [(5, 10i64.to_be_bytes().to_vec())]);
    db.compact_table("t").unwrap();
    assert_eq!(row_k(&db), [(5, 10i64.to_be_bytes().to_vec())], "after a full compaction");
}

/// `Options::target_file_size` ends a compaction's output files between
/// rows, so a level holds many; a read takes them one after another, and
/// every row set reads across the cuts as it would from one file.
#[test]
fn a_level_cut_into_many_small_files_reads_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().target_file_size(1 << 10).block_size(1 << 10).open(dir.path()).unwrap();
    let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
    put_rows(&t, "r", 600);
    db.flush().unwrap();
    db.compact_table("t").unwrap();
    let levels = family_stats(&db, "f").levels;
    assert!(levels.iter().all(|l| l.level > 0) && levels.iter().any(|l| l.files >= 5), "{levels:?}");

    let keys = |rows: Vec<cellardb::Row>| rows.into_iter().map(|r| String::from_utf8(r.key.to_vec()).unwrap());
    let want: Vec<String> = (0..600).map(|i| format!("r{i:04}")).collect();
    let read = |set: RowSet| t.read_rows(set, &Filter::pass_all());
    assert_eq!(keys(read(RowSet::all()).collect_rows().unwrap()).collect::<Vec<_>>(), want);
    let mut backward: Vec<String> = keys(read(RowSet::all()).reversed().collect_rows().unwrap()).collect();
    backward.reverse();
    assert_eq!(backward, want, "reversed");
    let some: Vec<String> = want.iter().step_by(7).cloned().collect();
    let got: Vec<String> = keys(read(RowSet::new().keys(&some)).collect_rows().unwrap()).collect();
    assert_eq!(got, some, "one key in every seven, across the files");
    let ranges = RowSet::new().range(RowRange::closed("r0100", "r0250")).range(RowRange::closed_open("r0400", "r0590"));
    let got: Vec<String> = keys(read(ranges).collect_rows().unwrap()).collect();
    let want_ranges: Vec<String> = (100..=250).chain(400..590).map(|i| format!("r{i:04}")).collect();
    assert_eq!(got, want_ranges, "two ranges, each across files");
    let last = keys(read(RowSet::all()).reversed().limit(3).collect_rows().unwrap()).collect::<Vec<_>>();
    assert_eq!(last, ["r0599", "r0598", "r0597"]);
}
