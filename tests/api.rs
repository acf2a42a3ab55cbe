//! The Data API beyond plain reads and writes: conditional and
//! read-modify-write writes, with Bigtable's semantics (checked against its
//! emulator: `tools/emulator/FINDINGS.md`), and every limit a call checks.

use std::sync::Arc;

use cellardb::{Db, Error, Filter, GcRule, Mutation, ReadModifyWrite, RowRange, RowSet, Table, TimeRange, Timestamp};

fn table() -> (tempfile::TempDir, Db, Table) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::max_versions(1))]).unwrap();
    (dir, db, t)
}

fn set(f: &str, q: &str, ms: i64, v: impl AsRef<[u8]>) -> Mutation {
    Mutation::set_cell(f, q, ms * 1000, v.as_ref())
}

fn cells(t: &Table, key: &str) -> Vec<(String, String, i64, Vec<u8>)> {
    t.read_row(key, &Filter::pass_all())
        .unwrap()
        .map(|r| {
            r.cells()
                .map(|(f, q, c)| {
                    (f.to_owned(), String::from_utf8_lossy(q).into_owned(), c.timestamp / 1000, c.value.to_vec())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn invalid<T: std::fmt::Debug>(r: cellardb::Result<T>, what: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m:?} does not name {what:?}"),
        other => panic!("expected an invalid argument naming {what:?}, got {other:?}"),
    }
}

fn not_found<T: std::fmt::Debug>(r: cellardb::Result<T>) {
    assert!(matches!(r, Err(Error::NotFound { .. })), "{r:?}");
}

// ---------------------------------------------------------------- check and mutate

#[test]
fn check_and_mutate_applies_the_true_branch_when_the_predicate_outputs_a_cell() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "a", 1, "x")]).unwrap();
    let matched = t.check_and_mutate_row(
        "r",
        &Filter::column_qualifier_regex("a"),
        [set("cf1", "t", 2, "yes")],
        [set("cf1", "f", 2, "no")],
    );
    assert!(matched.unwrap());
    assert_eq!(cells(&t, "r").iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["a", "t"]);
}

#[test]
fn check_and_mutate_applies_the_false_branch_otherwise() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "a", 1, "x")]).unwrap();
    let pred = Filter::chain([Filter::column_qualifier_regex("a"), Filter::value_regex("y")]);
    assert!(!t.check_and_mutate_row("r", &pred, [set("cf1", "t", 2, "yes")], [set("cf1", "f", 2, "no")]).unwrap());
    assert_eq!(cells(&t, "r").iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["a", "f"]);
}

#[test]
fn check_and_mutate_on_a_missing_row_with_pass_all_is_false() {
    let (_d, _db, t) = table();
    assert!(!t.check_and_mutate_row("new", &Filter::pass_all(), [], [set("cf1", "created", 1, "1")]).unwrap());
    assert!(t.check_and_mutate_row("new", &Filter::pass_all(), [Mutation::delete_from_row()], []).unwrap());
    assert!(t.read_row("new", &Filter::pass_all()).unwrap().is_none());
}

#[test]
fn check_and_mutate_with_an_empty_branch_writes_nothing() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "a", 1, "x")]).unwrap();
    assert!(t.check_and_mutate_row("r", &Filter::pass_all(), [], [set("cf1", "f", 1, "no")]).unwrap());
    assert_eq!(cells(&t, "r").len(), 1);
}

#[test]
fn check_and_mutate_refuses_bad_input_and_writes_nothing() {
    let (_d, _db, t) = table();
    invalid(t.check_and_mutate_row("", &Filter::pass_all(), [set("cf1", "a", 1, "x")], []), "row key is empty");
    invalid(t.check_and_mutate_row("r", &Filter::pass_all(), [], []), "at least one");
    invalid(t.check_and_mutate_row("r", &Filter::value_regex("("), [set("cf1", "a", 1, "x")], []), "invalid regex");
    // Checked before the predicate decides: a branch not taken is refused too.
    let bad_time = Mutation::set_cell("cf1", "a", 1500, "x");
    invalid(t.check_and_mutate_row("r", &Filter::pass_all(), [bad_time.clone()], []), "1500");
    invalid(t.check_and_mutate_row("r", &Filter::pass_all(), [], [bad_time]), "1500");
    not_found(t.check_and_mutate_row("r", &Filter::pass_all(), [set("nope", "a", 1, "x")], []));
    assert!(t.read_row("r", &Filter::pass_all()).unwrap().is_none());
}

/// Many threads race to claim a row with "set if absent": exactly one wins.
#[test]
fn check_and_mutate_is_atomic_against_other_writers_of_the_row() {
    let (_d, _db, t) = table();
    let t = Arc::new(t);
    let winners: usize = (0..8)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mine = [set("cf1", "owner", 1, format!("{i}"))];
                usize::from(
                    !t.check_and_mutate_row("lock", &Filter::column_qualifier_regex("owner"), [], mine).unwrap(),
                )
            })
        })
        .map(|h| h.join().unwrap())
        .sum();
    assert_eq!(winners, 1);
    assert_eq!(cells(&t, "lock").len(), 1);
}

// ---------------------------------------------------------------- read-modify-write

fn be(n: i64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

#[test]
fn increment_of_a_missing_cell_counts_from_zero() {
    let (_d, _db, t) = table();
    let before = Timestamp::now().micros();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 5)]).unwrap();
    let cell = row.latest("cf1", "n").unwrap();
    assert_eq!(cell.value.to_vec(), be(5));
    assert!(cell.timestamp >= before - 1000 && cell.timestamp % 1000 == 0, "the time of the write, in ms");
    assert_eq!(cells(&t, "r"), [("cf1".into(), "n".into(), cell.timestamp / 1000, be(5))]);
}

#[test]
fn increment_adds_to_the_newest_cell_and_keeps_the_older() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "n", 1, be(7)), set("cf1", "n", 0, be(100))]).unwrap();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", -10)]).unwrap();
    assert_eq!(row.latest("cf1", "n").unwrap().value.to_vec(), be(-3));
    let values: Vec<Vec<u8>> = cells(&t, "r").into_iter().map(|c| c.3).collect();
    assert_eq!(values, [be(-3), be(7), be(100)]);
}

#[test]
fn increment_overflow_wraps_as_in_bigtable() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "n", 1, be(i64::MAX))]).unwrap();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 1)]).unwrap();
    assert_eq!(row.latest("cf1", "n").unwrap().value.to_vec(), be(i64::MIN));
}

#[test]
fn increment_of_a_cell_of_another_length_is_refused() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "n", 1, "abc")]).unwrap();
    invalid(t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 1)]), "3 bytes");
    assert_eq!(cells(&t, "r").len(), 1, "nothing written");
}

#[test]
fn a_newest_cell_in_the_future_keeps_its_timestamp_and_is_replaced() {
    let (_d, _db, t) = table();
    let future = 4_000_000_000_000; // ms: the year 2096
    t.mutate_row("r", [set("cf1", "n", future, be(7))]).unwrap();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 1)]).unwrap();
    assert_eq!(row.latest("cf1", "n").unwrap().timestamp, future * 1000);
    assert_eq!(cells(&t, "r"), [("cf1".into(), "n".into(), future, be(8))]);
}

#[test]
fn append_to_missing_present_and_empty() {
    let (_d, _db, t) = table();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::append("cf1", "s", "xy")]).unwrap();
    assert_eq!(row.latest("cf1", "s").unwrap().value, "xy");
    let row = t.read_modify_write_row("r", [ReadModifyWrite::append("cf1", "s", "z")]).unwrap();
    assert_eq!(row.latest("cf1", "s").unwrap().value, "xyz");
    let row = t.read_modify_write_row("r", [ReadModifyWrite::append("cf1", "e", "")]).unwrap();
    assert_eq!(row.latest("cf1", "e").unwrap().value, "");
}

#[test]
fn rules_on_one_column_apply_in_order_and_write_one_cell() {
    let (_d, _db, t) = table();
    let row = t
        .read_modify_write_row(
            "r",
            [
                ReadModifyWrite::append("cf1", "s", "a"),
                ReadModifyWrite::increment("cf2", "n", 1),
                ReadModifyWrite::append("cf1", "s", "b"),
                ReadModifyWrite::increment("cf2", "n", 2),
            ],
        )
        .unwrap();
    let got: Vec<(String, Vec<u8>)> =
        row.cells().map(|(f, q, c)| (format!("{f}:{}", String::from_utf8_lossy(q)), c.value.to_vec())).collect();
    assert_eq!(got, [("cf1:s".to_owned(), b"ab".to_vec()), ("cf2:n".to_owned(), be(3))]);
    assert_eq!(cells(&t, "r").len(), 2);
}

#[test]
fn read_modify_write_sees_deletes_and_gc() {
    let (_d, _db, t) = table();
    t.mutate_row("r", [set("cf1", "n", 2, be(50)), set("cf1", "n", 1, be(10))]).unwrap();
    t.mutate_row("r", [Mutation::delete_from_column("cf1", "n", TimeRange::new(2000, 3000))]).unwrap();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 1)]).unwrap();
    assert_eq!(row.latest("cf1", "n").unwrap().value.to_vec(), be(11), "the deleted cell is not the newest");
}

#[test]
fn read_modify_write_refuses_bad_input_and_writes_nothing() {
    let (_d, _db, t) = table();
    invalid(t.read_modify_write_row("", [ReadModifyWrite::append("cf1", "s", "a")]), "row key is empty");
    invalid(t.read_modify_write_row("r", []), "at least one rule");
    not_found(t.read_modify_write_row("r", [ReadModifyWrite::append("nope", "s", "a")]));
    invalid(t.read_modify_write_row("r", [ReadModifyWrite::append("cf1", "q".repeat(16 << 10 | 1), "a")]), "qualifier");
    assert!(t.read_row("r", &Filter::pass_all()).unwrap().is_none());
}

/// Threads incrementing one counter lose no increment.
#[test]
fn increments_from_many_threads_add_up() {
    let (_d, _db, t) = table();
    let t = Arc::new(t);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    t.read_modify_write_row("counter", [ReadModifyWrite::increment("cf2", "n", 1)]).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let row = t.read_row("counter", &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(row.latest("cf2", "n").unwrap().value.to_vec(), be(800));
}

// ---------------------------------------------------------------- limits

#[test]
fn every_limit_is_an_invalid_argument_naming_it() {
    let (_d, db, t) = table();
    invalid(t.mutate_row("", [set("cf1", "a", 1, "x")]), "row key is empty");
    invalid(t.mutate_row("k".repeat(4097), [set("cf1", "a", 1, "x")]), "row key");
    assert!(t.mutate_row("k".repeat(4096), [set("cf1", "a", 1, "x")]).is_ok(), "4 KiB itself is allowed");
    invalid(t.mutate_row("r", [set("cf1", &"q".repeat((16 << 10) + 1), 1, "x")]), "qualifier");
    invalid(t.mutate_row("r", [set("cf1", "a", 1, vec![0u8; (100 << 20) + 1])]), "value");
    invalid(t.mutate_row("r", (0..100_001).map(|i| set("cf1", "a", i, "x"))), "100000");
    invalid(t.mutate_row("r", Vec::<Mutation>::new()), "at least one mutation");
    invalid(t.mutate_row("r", [Mutation::set_cell("cf1", "a", 1500, "x")]), "1500");
    invalid(t.mutate_row("r", [Mutation::set_cell("cf1", "a", -5000, "x")]), "-5000");
    invalid(db.create_table("t2", [("-bad", GcRule::none())]), "");
    invalid(db.create_table("t2", [("f".repeat(65), GcRule::none())]), "64");
    invalid(db.create_family("t", "has space", GcRule::none()), "");
    not_found(t.mutate_row("r", [set("nope", "a", 1, "x")]));
    not_found(db.table("nope"));
    invalid(t.read_rows(RowSet::all(), &Filter::family_name_regex("[")).collect_rows(), "invalid regex");
    assert!(t.read_rows(RowSet::from(RowRange::prefix("k")), &Filter::pass_all()).collect_rows().unwrap().len() == 1);
    // Server timestamps are the time of the write, in milliseconds.
    t.mutate_row("srv", [Mutation::set_cell("cf1", "a", Timestamp::SERVER, "x")]).unwrap();
    let ts = t.read_row("srv", &Filter::pass_all()).unwrap().unwrap().latest("cf1", "a").unwrap().timestamp;
    assert!(ts % 1000 == 0 && (Timestamp::now().micros() - ts).abs() < 60_000_000, "{ts}");
}

// ---------------------------------------------------------------- sample_row_keys

#[test]
fn sample_row_keys_split_the_table_into_even_ranges_without_reading_data() {
    let (_d, db, t) = table();
    assert_eq!(t.sample_row_keys().unwrap(), [(bytes::Bytes::new(), 0)], "an empty table: only the end");
    // Incompressible values: bytes on disk follow the rows.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..4000 {
        let value: Vec<u8> = (0..256)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        t.mutate_row(format!("row{i:05}"), [set("cf1", "v", 1, value)]).unwrap();
    }
    db.flush().unwrap();
    let decoded = db.stats().unwrap().tables[0].families[0].blocks_decoded;
    let samples = t.sample_row_keys().unwrap();
    assert_eq!(db.stats().unwrap().tables[0].families[0].blocks_decoded, decoded, "indexes only");

    let (last, total) = samples.last().unwrap().clone();
    assert!(last.is_empty());
    assert_eq!(total, t.stats().unwrap().sst_bytes() - sst_metadata_bytes(&db), "the end offset is the data's size");
    // About 1 MiB of data at one sample per 64 KiB at least.
    assert!((10..=101).contains(&samples.len()), "{} samples", samples.len());
    assert!(samples.windows(2).all(|w| w[0].1 < w[1].1), "offsets ascend");
    assert!(samples[..samples.len() - 1].windows(2).all(|w| w[0].0 < w[1].0), "keys ascend");
    // Each range holds a like number of rows: bytes track rows here.
    let keys: Vec<String> =
        samples[..samples.len() - 1].iter().map(|(k, _)| String::from_utf8(k.to_vec()).unwrap()).collect();
    let row_of = |k: &str| k["row".len()..].parse::<i64>().unwrap();
    let mut bounds = vec![-1];
    bounds.extend(keys.iter().map(|k| row_of(k)));
    bounds.push(3999);
    let sizes: Vec<i64> = bounds.windows(2).map(|w| w[1] - w[0]).collect();
    let expected = 4000 / sizes.len() as i64;
    assert!(sizes[..sizes.len() - 1].iter().all(|&s| s >= expected / 2 && s <= expected * 2), "{sizes:?}");
}

/// Bytes of the SSTables that are not data blocks (index, filter,
/// properties, footer): `sample_row_keys` counts data blocks only.
fn sst_metadata_bytes(db: &Db) -> u64 {
    let dir = db.path().to_path_buf();
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let data = bytes::Bytes::from(std::fs::read(&p).unwrap());
            let r = cellardb::sst::SstReader::open(&p, data, 0).unwrap();
            r.file_size() - r.index().iter().map(|e| u64::from(e.handle.stored_len)).sum::<u64>()
        })
        .sum()
}
