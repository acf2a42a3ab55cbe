//! The Data API beyond plain reads and writes: conditional and
//! read-modify-write writes, with Bigtable's semantics (checked against its
//! emulator: `tools/emulator/FINDINGS.md`), and every limit a call checks.

use std::sync::Arc;

use cellardb::{
    Aggregate, Db, Error, Filter, GcRule, Mutation, Options, ReadModifyWrite, RowRange, RowSet, Table, TimeRange,
    Timestamp,
};

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
                    (
                        f.to_owned(),
                        String::from_utf8_lossy(q).into_owned(),
                        c.timestamp.micros() / 1000,
                        c.value.to_vec(),
                    )
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

fn not_found<T: std::fmt::Debug>(r: &cellardb::Result<T>) {
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
    not_found(&t.check_and_mutate_row("r", &Filter::pass_all(), [set("nope", "a", 1, "x")], []));
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
    assert!(
        cell.timestamp.micros() >= before - 1000 && cell.timestamp.micros() % 1000 == 0,
        "the time of the write, in ms"
    );
    assert_eq!(cells(&t, "r"), [("cf1".into(), "n".into(), cell.timestamp.micros() / 1000, be(5))]);
}

#[test]
fn counters_read_back_as_integers() {
    let (_d, _db, t) = table();
    let row = t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 41)]).unwrap();
    assert_eq!(row.latest("cf1", "n").unwrap().as_i64(), Some(41));
    t.read_modify_write_row("r", [ReadModifyWrite::increment("cf1", "n", 1)]).unwrap();
    let read = t.read_row("r", &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(read.latest("cf1", "n").unwrap().as_i64(), Some(42));
    t.mutate_row("r", [set("cf1", "text", 1, "hello")]).unwrap();
    let read = t.read_row("r", &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(read.latest("cf1", "text").unwrap().as_i64(), None, "not 8 bytes: not a counter");
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
    assert_eq!(row.latest("cf1", "n").unwrap().timestamp.micros(), future * 1000);
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
    not_found(&t.read_modify_write_row("r", [ReadModifyWrite::append("nope", "s", "a")]));
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
    for h in handles {
        h.join().unwrap();
    }
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
    not_found(&t.mutate_row("r", [set("nope", "a", 1, "x")]));
    not_found(&db.table("nope"));
    invalid(t.read_rows(RowSet::all(), &Filter::family_name_regex("[")).collect_rows(), "invalid regex");
    assert!(t.read_rows(RowSet::from(RowRange::prefix("k")), &Filter::pass_all()).collect_rows().unwrap().len() == 1);
    // Server timestamps are the time of the write, in milliseconds.
    t.mutate_row("srv", [Mutation::set_cell("cf1", "a", Timestamp::SERVER, "x")]).unwrap();
    let ts = t.read_row("srv", &Filter::pass_all()).unwrap().unwrap().latest("cf1", "a").unwrap().timestamp.micros();
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
                x.to_le_bytes()[0]
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
    let expected = 4000 / i64::try_from(sizes.len()).unwrap();
    assert!(sizes[..sizes.len() - 1].iter().all(|&s| s >= expected / 2 && s <= expected * 2), "{sizes:?}");
}

/// `Options::block_entries` bounds the entries of every block a flush
/// and a compaction write; without it, blocks of one-byte cells are cut
/// by size alone and hold far more.
#[test]
fn block_entries_bounds_the_blocks_flushes_and_compactions_write() {
    let most_entries = |db: &Db| -> u32 {
        std::fs::read_dir(db.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sst"))
            .flat_map(|p| {
                let data = bytes::Bytes::from(std::fs::read(&p).unwrap());
                cellardb::inspect::SstFile::open(&p, data).unwrap().blocks()
            })
            .map(|b| b.entries)
            .max()
            .unwrap()
    };
    for bound in [None, Some(100)] {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::default().block_size(16 << 10);
        let db = match bound {
            Some(n) => options.block_entries(n),
            None => options,
        }
        .open(dir.path())
        .unwrap();
        let t = db.create_table("t", [("f", GcRule::none())]).unwrap();
        for round in 0..2 {
            for i in 0..2000 {
                t.mutate_row(format!("r{i:05}"), [Mutation::set_cell("f", "q", 1000 * (1 + round), "x")]).unwrap();
            }
            db.flush().unwrap();
            match bound {
                Some(n) => assert!(most_entries(&db) as usize <= n, "after flush {round}"),
                None => assert!(most_entries(&db) > 200, "after flush {round}"),
            }
        }
        db.compact_table("t").unwrap();
        let most = most_entries(&db) as usize;
        assert!(bound.map_or(most > 200, |n| most <= n * 3 / 2), "after compaction: {most} entries");
    }
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
            let sst = cellardb::inspect::SstFile::open(&p, data).unwrap();
            sst.file_size() - sst.blocks().iter().map(|b| u64::from(b.span.stored_bytes)).sum::<u64>()
        })
        .sum()
}

// ---------------------------------------------------------------- aggregate families

/// What an aggregate case expects: the cells of `agg` in row `r` as
/// (qualifier, timestamp in ms, value), or an error naming something.
enum Want {
    Cells(Vec<(&'static str, i64, i64)>),
    Invalid(&'static str),
    NotFound,
}

struct AggCase {
    name: &'static str,
    aggregate: Aggregate,
    gc: GcRule,
    /// Row mutations of row `r`, in order.
    writes: Vec<Vec<Mutation>>,
    want: Want,
}

fn add(q: &str, ms: i64, n: i64) -> Mutation {
    Mutation::add_to_cell("agg", q, ms * 1000, n)
}

#[allow(clippy::too_many_lines, reason = "a table of cases")]
fn agg_cases() -> Vec<AggCase> {
    use Aggregate::{Max, Min, Sum};
    let case = |name, aggregate, writes, want| AggCase { name, aggregate, gc: GcRule::none(), writes, want };
    let hour_ago_ms = Timestamp::now().micros() / 1000 - 3_600_000;
    vec![
        case(
            "sum of inputs at one timestamp",
            Sum,
            vec![vec![add("q", 1, 5)], vec![add("q", 1, 3)]],
            Want::Cells(vec![("q", 1, 8)]),
        ),
        case(
            "inputs at other timestamps are other cells",
            Sum,
            vec![vec![add("q", 1, 5)], vec![add("q", 2, 7)], vec![add("q", 1, 1)]],
            Want::Cells(vec![("q", 2, 7), ("q", 1, 6)]),
        ),
        case(
            "columns merge apart",
            Sum,
            vec![vec![add("a", 1, 1), add("b", 1, 2), add("a", 1, 4)]],
            Want::Cells(vec![("a", 1, 5), ("b", 1, 2)]),
        ),
        case(
            "negative inputs",
            Sum,
            vec![vec![add("q", 1, -5)], vec![add("q", 1, 3)]],
            Want::Cells(vec![("q", 1, -2)]),
        ),
        case(
            "sum overflow wraps",
            Sum,
            vec![vec![add("q", 1, i64::MAX)], vec![add("q", 1, 1)]],
            Want::Cells(vec![("q", 1, i64::MIN)]),
        ),
        case(
            "min keeps the smallest (the emulator keeps the last)",
            Min,
            vec![vec![add("q", 1, 5)], vec![add("q", 1, 3)], vec![add("q", 1, 7)]],
            Want::Cells(vec![("q", 1, 3)]),
        ),
        case(
            "max keeps the largest (the emulator keeps the last)",
            Max,
            vec![vec![add("q", 1, 5)], vec![add("q", 1, 3)]],
            Want::Cells(vec![("q", 1, 5)]),
        ),
        case("a single input is the cell", Max, vec![vec![add("q", 1, -9)]], Want::Cells(vec![("q", 1, -9)])),
        case(
            "set_cell of 8 bytes merges as an input (as the emulator)",
            Sum,
            vec![vec![add("q", 1, 5)], vec![Mutation::set_cell("agg", "q", 1000, 100i64.to_be_bytes())]],
            Want::Cells(vec![("q", 1, 105)]),
        ),
        case(
            "set_cell of another length is refused",
            Sum,
            vec![vec![Mutation::set_cell("agg", "q", 1000, "abc")]],
            Want::Invalid("8-byte"),
        ),
        case(
            "add_to_cell on a plain family is refused",
            Sum,
            vec![vec![Mutation::add_to_cell("cf1", "q", 1000, 1)]],
            Want::Invalid("not an aggregate"),
        ),
        case(
            "add_to_cell needs an explicit timestamp",
            Sum,
            vec![vec![Mutation::add_to_cell("agg", "q", Timestamp::SERVER, 1)]],
            Want::Invalid("explicit timestamp"),
        ),
        case(
            "add_to_cell to an unknown family",
            Sum,
            vec![vec![Mutation::add_to_cell("nope", "q", 1000, 1)]],
            Want::NotFound,
        ),
        case(
            "add_to_cell at a timestamp finer than ms",
            Sum,
            vec![vec![Mutation::add_to_cell("agg", "q", 1500, 1)]],
            Want::Invalid("millisecond"),
        ),
        case(
            "delete_from_column resets the cell",
            Sum,
            vec![
                vec![add("q", 1, 5)],
                vec![Mutation::delete_from_column("agg", "q", TimeRange::all())],
                vec![add("q", 1, 2)],
            ],
            Want::Cells(vec![("q", 1, 2)]),
        ),
        case(
            "a delete and an add in one row mutation apply in order",
            Sum,
            vec![
                vec![add("q", 1, 5)],
                vec![add("q", 1, 1), Mutation::delete_from_family("agg"), add("q", 1, 2), add("q", 1, 3)],
            ],
            Want::Cells(vec![("q", 1, 5)]),
        ),
        case(
            "delete_from_column of other timestamps leaves the cell",
            Sum,
            vec![
                vec![add("q", 1, 5), add("q", 3, 1)],
                vec![Mutation::delete_from_column("agg", "q", TimeRange::new(2000, 4000))],
                vec![add("q", 1, 2)],
            ],
            Want::Cells(vec![("q", 1, 7)]),
        ),
        case(
            "delete_from_row resets every cell",
            Min,
            vec![vec![add("q", 1, 5)], vec![Mutation::delete_from_row()], vec![add("q", 1, 8)]],
            Want::Cells(vec![("q", 1, 8)]),
        ),
        AggCase {
            name: "max_versions counts cells, not inputs",
            aggregate: Sum,
            gc: GcRule::max_versions(1),
            writes: vec![vec![add("q", 1, 5)], vec![add("q", 1, 5)], vec![add("q", 2, 1)], vec![add("q", 1, 9)]],
            want: Want::Cells(vec![("q", 2, 1)]),
        },
        AggCase {
            name: "a cell counted out does not come back with its inputs",
            aggregate: Sum,
            gc: GcRule::max_versions(1),
            writes: vec![
                vec![add("q", 1, 5)],
                vec![add("q", 2, 1)],
                vec![Mutation::delete_from_column("agg", "q", TimeRange::new(2000, 3000))],
                vec![add("q", 1, 9)],
            ],
            want: Want::Cells(vec![("q", 1, 9)]),
        },
        AggCase {
            name: "max_age collects old cells whatever their inputs",
            aggregate: Max,
            gc: GcRule::max_age(std::time::Duration::from_secs(60)),
            writes: vec![vec![add("old", 1, 5)], vec![add("new", hour_ago_ms + 7_200_000, 3), add("old", 1, 6)]],
            want: Want::Cells(vec![("new", hour_ago_ms + 7_200_000, 3)]),
        },
    ]
}

fn agg_table(aggregate: Aggregate, gc: GcRule) -> (tempfile::TempDir, Db, Table) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    db.create_aggregate_family("t", "agg", aggregate, gc).unwrap();
    (dir, db, t)
}

fn agg_cells(t: &Table) -> Vec<(String, i64, i64)> {
    let row = t.read_row("r", &Filter::family_name_regex("agg")).unwrap();
    row.map(|r| {
        r.cells()
            .map(|(_, q, c)| {
                let v = i64::from_be_bytes(c.value[..].try_into().expect("an aggregate cell holds 8 bytes"));
                (String::from_utf8_lossy(q).into_owned(), c.timestamp.micros() / 1000, v)
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Every case reads the same from the memtable, from files flushed after
/// each write, after a full compaction, and after reopening.
#[test]
fn aggregate_families_merge_inputs_before_and_after_compaction() {
    for case in agg_cases() {
        let (dir, db, t) = agg_table(case.aggregate, case.gc.clone());
        let (_dir2, db2, t2) = agg_table(case.aggregate, case.gc.clone());
        let mut result = Ok(());
        for muts in &case.writes {
            result = result.and(t.mutate_row("r", muts.clone()));
            result = result.and(t2.mutate_row("r", muts.clone()));
            db2.flush().unwrap();
        }
        let want = match (&case.want, result) {
            (Want::Cells(cells), Ok(())) => cells,
            (Want::Invalid(what), r) => {
                invalid(r, what);
                assert!(agg_cells(&t).is_empty(), "{}: a refused write wrote nothing", case.name);
                continue;
            }
            (Want::NotFound, r) => {
                not_found(&r);
                continue;
            }
            (Want::Cells(_), Err(e)) => panic!("{}: {e}", case.name),
        };
        let want: Vec<(String, i64, i64)> = want.iter().map(|(q, ts, v)| (q.to_string(), *ts, *v)).collect();
        assert_eq!(agg_cells(&t), want, "{}: memtable", case.name);
        assert_eq!(agg_cells(&t2), want, "{}: one file per write", case.name);
        db2.compact_table("t").unwrap();
        assert_eq!(agg_cells(&t2), want, "{}: compacted", case.name);
        drop((t, db));
        let db = Db::open(dir.path()).unwrap();
        assert_eq!(agg_cells(&db.table("t").unwrap()), want, "{}: replayed from the log", case.name);
    }
}

#[test]
fn an_aggregate_family_survives_reopen_and_shows_in_the_schema() {
    let (dir, db, t) = agg_table(Aggregate::Max, GcRule::none());
    t.mutate_row("r", [add("q", 1, 4)]).unwrap();
    db.flush().unwrap();
    drop((t, db));
    let db = Db::open(dir.path()).unwrap();
    let schema = db.table_schema("t").unwrap();
    assert_eq!(schema.family("agg").unwrap().aggregate, Some(Aggregate::Max));
    assert_eq!(schema.family("cf1").unwrap().aggregate, None);
    let t = db.table("t").unwrap();
    t.mutate_row("r", [add("q", 1, 2), add("q", 1, 9)]).unwrap();
    assert_eq!(agg_cells(&t), [("q".to_string(), 1, 9)]);
}

#[test]
fn filters_see_the_merged_value_and_conditions_can_add() {
    let (_d, _db, t) = agg_table(Aggregate::Sum, GcRule::none());
    t.mutate_row("r", [add("q", 1, 40), add("q", 1, 2)]).unwrap();
    let at_least_42 = Filter::value_range(
        std::ops::Bound::Included(42i64.to_be_bytes().to_vec()),
        std::ops::Bound::<Vec<u8>>::Unbounded,
    );
    assert!(t.read_row("r", &at_least_42).unwrap().is_some(), "neither input alone is 42");
    assert!(t.check_and_mutate_row("r", &at_least_42, [add("q", 1, 1)], []).unwrap());
    assert_eq!(agg_cells(&t), [("q".to_string(), 1, 43)]);
    let stripped = t.read_row("r", &Filter::strip_value()).unwrap().unwrap();
    assert!(stripped.cells().all(|(_, _, c)| c.value.is_empty()));
}

#[test]
fn read_modify_write_on_an_aggregate_family_is_refused() {
    let (_d, _db, t) = agg_table(Aggregate::Sum, GcRule::none());
    invalid(t.read_modify_write_row("r", [ReadModifyWrite::increment("agg", "q", 1)]), "add_to_cell");
    assert!(agg_cells(&t).is_empty());
}

// ---------------------------------------------------------------- mutations, deletes and drops

/// A cell as the mutation cases name it: (row, family, qualifier, ms, value).
type RowCell = (&'static str, &'static str, &'static str, i64, &'static str);

enum Step {
    Write(&'static str, Vec<Mutation>),
    Drop(RowRange),
}

struct MutationCase {
    name: &'static str,
    steps: Vec<Step>,
    /// Every cell of the table afterwards, in model order.
    want: Vec<RowCell>,
}

#[allow(clippy::too_many_lines, reason = "a table of cases")]
fn mutation_cases() -> Vec<MutationCase> {
    use Step::{Drop, Write};
    let case = |name, steps, want| MutationCase { name, steps, want };
    let abc = || {
        vec![
            Write("a", vec![set("cf1", "q", 1, "a1"), set("cf2", "q", 1, "a2")]),
            Write("ab", vec![set("cf1", "q", 1, "ab")]),
            Write("b", vec![set("cf1", "q", 1, "b")]),
        ]
    };
    let with = |mut steps: Vec<Step>, more: Vec<Step>| {
        steps.extend(more);
        steps
    };
    vec![
        case(
            "set_cell writes a cell",
            vec![Write("r", vec![set("cf1", "q", 1, "v")])],
            vec![("r", "cf1", "q", 1, "v")],
        ),
        case(
            "set_cell at the same timestamp replaces",
            vec![Write("r", vec![set("cf1", "q", 1, "old")]), Write("r", vec![set("cf1", "q", 1, "new")])],
            vec![("r", "cf1", "q", 1, "new")],
        ),
        case(
            "versions come newest first",
            vec![Write("r", vec![set("cf1", "q", 1, "one"), set("cf1", "q", 3, "three"), set("cf1", "q", 2, "two")])],
            vec![("r", "cf1", "q", 3, "three"), ("r", "cf1", "q", 2, "two"), ("r", "cf1", "q", 1, "one")],
        ),
        case(
            "max_versions(1) keeps the newest",
            vec![Write("r", vec![set("cf2", "q", 2, "two")]), Write("r", vec![set("cf2", "q", 1, "one")])],
            vec![("r", "cf2", "q", 2, "two")],
        ),
        case(
            "delete_from_column deletes [start, end)",
            vec![
                Write("r", (1..=4).map(|ms| set("cf1", "q", ms, format!("{ms}"))).collect()),
                Write("r", vec![Mutation::delete_from_column("cf1", "q", TimeRange::new(2000, 4000))]),
            ],
            vec![("r", "cf1", "q", 4, "4"), ("r", "cf1", "q", 1, "1")],
        ),
        case(
            "delete_from_column with an open end",
            vec![
                Write("r", (1..=3).map(|ms| set("cf1", "q", ms, format!("{ms}"))).collect()),
                Write("r", vec![Mutation::delete_from_column("cf1", "q", TimeRange::since(2000))]),
            ],
            vec![("r", "cf1", "q", 1, "1")],
        ),
        case(
            "delete_from_column of all time leaves other columns",
            vec![
                Write("r", vec![set("cf1", "q", 1, "q"), set("cf1", "p", 1, "p")]),
                Write("r", vec![Mutation::delete_from_column("cf1", "q", TimeRange::all())]),
            ],
            vec![("r", "cf1", "p", 1, "p")],
        ),
        case(
            "delete_from_family leaves other families",
            vec![
                Write("r", vec![set("cf1", "q", 1, "1"), set("cf2", "q", 1, "2")]),
                Write("r", vec![Mutation::delete_from_family("cf1")]),
            ],
            vec![("r", "cf2", "q", 1, "2")],
        ),
        case(
            "delete_from_row leaves other rows",
            vec![
                Write("r", vec![set("cf1", "q", 1, "1"), set("cf2", "q", 1, "2")]),
                Write("s", vec![set("cf1", "q", 1, "s")]),
                Write("r", vec![Mutation::delete_from_row()]),
            ],
            vec![("s", "cf1", "q", 1, "s")],
        ),
        case(
            "a delete then a set in one row mutation keeps the set",
            vec![
                Write("r", vec![set("cf1", "q", 1, "old")]),
                Write("r", vec![Mutation::delete_from_row(), set("cf1", "q", 1, "new")]),
            ],
            vec![("r", "cf1", "q", 1, "new")],
        ),
        case(
            "a set then a delete in one row mutation keeps nothing",
            vec![Write("r", vec![set("cf1", "q", 1, "v"), Mutation::delete_from_family("cf1")])],
            vec![],
        ),
        case(
            "deleting what is not there is no error",
            vec![Write(
                "r",
                vec![
                    Mutation::delete_from_column("cf1", "nothing", TimeRange::all()),
                    Mutation::delete_from_family("cf2"),
                    set("cf1", "q", 1, "v"),
                ],
            )],
            vec![("r", "cf1", "q", 1, "v")],
        ),
        case(
            "drop_row_range of a prefix drops its rows only",
            with(abc(), vec![Drop(RowRange::prefix("a"))]),
            vec![("b", "cf1", "q", 1, "b")],
        ),
        case(
            "drop_row_range of all rows, then a write",
            with(abc(), vec![Drop(RowRange::all()), Write("ab", vec![set("cf1", "q", 2, "again")])]),
            vec![("ab", "cf1", "q", 2, "again")],
        ),
        case(
            "drop_row_range of a key range is [start, end)",
            with(abc(), vec![Drop(RowRange::closed_open("ab", "b"))]),
            vec![("a", "cf1", "q", 1, "a1"), ("a", "cf2", "q", 1, "a2"), ("b", "cf1", "q", 1, "b")],
        ),
    ]
}

fn table_cells(t: &Table) -> Vec<(String, String, String, i64, Vec<u8>)> {
    let rows = t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    rows.iter()
        .flat_map(|r| {
            r.cells()
                .map(|(f, q, c)| (text(&r.key), f.to_owned(), text(q), c.timestamp.micros() / 1000, c.value.to_vec()))
        })
        .collect()
}

/// Every case reads the same from the memtable, from a file flushed after
/// each step, and after a full compaction.
#[test]
fn every_mutation_delete_and_drop_reads_as_in_bigtable() {
    for case in mutation_cases() {
        let (_d, _db, t) = table();
        let (_d2, db2, t2) = table();
        for step in &case.steps {
            match step {
                Step::Write(key, muts) => {
                    t.mutate_row(key, muts.clone()).unwrap();
                    t2.mutate_row(key, muts.clone()).unwrap();
                }
                Step::Drop(range) => {
                    t.drop_row_range(range.clone()).unwrap();
                    t2.drop_row_range(range.clone()).unwrap();
                }
            }
            db2.flush().unwrap();
        }
        let want: Vec<(String, String, String, i64, Vec<u8>)> = case
            .want
            .iter()
            .map(|(r, f, q, ms, v)| (r.to_string(), f.to_string(), q.to_string(), *ms, v.as_bytes().to_vec()))
            .collect();
        assert_eq!(table_cells(&t), want, "{}: memtable", case.name);
        assert_eq!(table_cells(&t2), want, "{}: one file per step", case.name);
        db2.compact_table("t").unwrap();
        assert_eq!(table_cells(&t2), want, "{}: compacted", case.name);
    }
}
