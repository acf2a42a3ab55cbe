//! Reads that seek: a filter on one column and one time range of a wide row
//! reads the blocks of that column and range, not the whole row.

use cellardb::{Db, Filter, GcRule, Mutation, Options, RowRange, RowSet, TimeRange};

const HOUR: i64 = 3_600_000_000;
const MINUTE: i64 = 60_000_000;
/// 2021-03-01T00:00:00Z, a Monday, in µs.
const START_MICROS: i64 = 1_614_556_800_000_000;
const METRICS: [&str; 4] = ["pressure", "temperature", "humidity", "altitude"];

/// Two week-long wide rows, as Bigtable's time-bucket pattern writes them:
/// one cell per metric per minute, in 1 KiB blocks, compacted, then
/// reopened so that the block cache is cold.
fn wide_rows(dir: &std::path::Path) -> Db {
    {
        let db = Options::default().block_size(1 << 10).open(dir).unwrap();
        let t = db.create_table("balloons", [("measurements", GcRule::none())]).unwrap();
        for minute in 0..7 * 1440 {
            let ts = START_MICROS + minute * MINUTE;
            for row in ["asia-south2#1001#week09", "us-west2#1000#week09"] {
                let value = |m: i64| (90_000 + minute * 7 + m * 13).to_string();
                let cells = METRICS
                    .iter()
                    .zip(0..)
                    .map(|(metric, m)| Mutation::set_cell("measurements", *metric, ts, value(m)));
                t.mutate_row(row, cells).unwrap();
            }
        }
        db.compact_table("balloons").unwrap();
    }
    Options::default().block_size(1 << 10).open(dir).unwrap()
}

fn blocks_decoded(db: &Db) -> u64 {
    db.stats().unwrap().tables[0].families[0].blocks_decoded
}

#[test]
fn one_column_and_one_hour_of_a_wide_row_read_only_their_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = wide_rows(dir.path());
    let t = db.table("balloons").unwrap();
    let row = "us-west2#1000#week09";
    let hour = START_MICROS + 50 * HOUR;
    let filter = Filter::chain([
        Filter::column_qualifier_regex("humidity"),
        Filter::timestamp_range(TimeRange::new(hour, hour + HOUR)),
    ]);
    let got = t.read_row(row, &filter).unwrap().unwrap();
    assert_eq!(got.cell_count(), 60);
    assert!(got.cells().all(|(_, q, c)| &q[..] == b"humidity" && (hour..hour + HOUR).contains(&c.timestamp.micros())));
    let filtered = blocks_decoded(&db);

    let whole = t.read_row(row, &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(whole.cell_count(), 7 * 1440 * METRICS.len());
    let all = blocks_decoded(&db) - filtered;
    assert!(all > 100, "the row spans {all} blocks");
    // The hour's blocks, and one where each of the four columns starts.
    // The read starts at the hour's first cell and ends at its last: the
    // blocks holding the hour (one or two of ~100 cells), not those where
    // the row and the column start or where the next column does.
    assert!(filtered <= 2, "one column's hour read {filtered} blocks of the row's {all}");
}

#[test]
fn the_newest_cell_of_each_column_reads_a_block_per_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = wide_rows(dir.path());
    let t = db.table("balloons").unwrap();
    let rows = t.read_rows(RowSet::all(), &Filter::cells_per_column_limit(1)).collect_rows().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.cell_count() == METRICS.len()));
    let last = START_MICROS + (7 * 1440 - 1) * MINUTE;
    assert!(rows.iter().flat_map(cellardb::Row::cells).all(|(_, _, c)| c.timestamp.micros() == last));
    let blocks = blocks_decoded(&db);
    assert!(blocks <= 2 * METRICS.len() as u64 + 2, "{blocks} blocks for 8 cells");
}

/// The newest cells of an entity's last row, read as a user first writes
/// it (its prefix newest first, one row, each column's newest cell): the
/// row is too wide to gather backwards, so it is read forward from its
/// start, seeking column to column, and that read ends at the row's last
/// entry, found going backwards, without loading the block after it. The
/// block cache is kept full, as it is once data outgrows it, so that each
/// block counted is a block decoded for this read.
#[test]
fn the_newest_cells_of_a_last_row_read_backwards_decode_no_block_past_it() {
    let dir = tempfile::tempdir().unwrap();
    drop(wide_rows(dir.path()));
    let db = Options::default().block_size(1 << 10).block_cache_size(1).open(dir.path()).unwrap();
    let t = db.table("balloons").unwrap();
    let prefix = RowSet::from(RowRange::prefix("asia-south2#1001#"));
    let rows = t.read_rows(prefix, &Filter::cells_per_column_limit(1)).reversed().limit(1).collect_rows().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(&rows[0].key[..], b"asia-south2#1001#week09");
    let last = START_MICROS + (7 * 1440 - 1) * MINUTE;
    let qualifiers: Vec<&[u8]> = rows[0].cells().map(|(_, q, _)| &q[..]).collect();
    assert_eq!(qualifiers, [&b"altitude"[..], b"humidity", b"pressure", b"temperature"]);
    assert!(rows[0].cells().all(|(_, _, c)| c.timestamp.micros() == last));
    // The block holding the row's end, where the backward read starts (in
    // this file the row does not end at a block's start), then a block
    // where each column starts; not the row's end again.
    let blocks = blocks_decoded(&db);
    assert!(blocks <= METRICS.len() as u64 + 1, "{blocks} blocks for 4 cells");
}

/// Rows that end where a block ends, as a bound on a block's entries
/// makes them: a read of a row's newest cells, by its key or by its
/// prefix newest first, decodes no block of the row after it, since the
/// index says which row each block starts with. The block cache is kept
/// full, so each block counted is a block decoded for the read.
#[test]
fn reads_of_a_row_that_ends_a_block_decode_no_block_of_the_next_row() {
    let dir = tempfile::tempdir().unwrap();
    let rows = ["balloon#1000", "balloon#1001", "balloon#1002"];
    {
        let db = Options::default().block_entries(16).open(dir.path()).unwrap();
        let t = db.create_table("balloons", [("measurements", GcRule::none())]).unwrap();
        for minute in 0..64 {
            let ts = START_MICROS + minute * MINUTE;
            for row in rows {
                t.mutate_row(row, METRICS.iter().map(|m| Mutation::set_cell("measurements", *m, ts, "x"))).unwrap();
            }
        }
        db.compact_table("balloons").unwrap();
    }
    let db = Options::default().block_entries(16).block_cache_size(1).open(dir.path()).unwrap();
    let t = db.table("balloons").unwrap();
    let newest = Filter::cells_per_column_limit(1);
    let last = START_MICROS + 63 * MINUTE;

    let row = t.read_row(rows[1], &newest).unwrap().unwrap();
    assert_eq!(row.cell_count(), METRICS.len());
    assert!(row.cells().all(|(_, _, c)| c.timestamp.micros() == last));
    // A block where each column starts; not the next row's first.
    let by_key = blocks_decoded(&db);
    assert_eq!(by_key, METRICS.len() as u64);

    let prefix = RowSet::from(RowRange::prefix("balloon#1001"));
    let got = t.read_rows(prefix, &newest).reversed().limit(1).collect_rows().unwrap();
    assert_eq!(got, [row]);
    // The row's last block, where the backward read starts and gives the
    // row up as too wide, then a block where each column starts; not the
    // next row's first.
    let by_prefix = blocks_decoded(&db) - by_key;
    assert_eq!(by_prefix, METRICS.len() as u64 + 1);
}

/// The seek never skips what deletes or GC need: a tombstone newer than
/// the cells in range, and `max_versions` counting from the newest cell.
#[test]
fn seeks_respect_tombstones_and_version_counting() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().block_size(256).open(dir.path()).unwrap();
    let t = db.create_table("t", [("a", GcRule::none()), ("v", GcRule::max_versions(3))]).unwrap();
    for ts in 1..=200 {
        let ms = ts * 1000;
        t.mutate_row("r", [Mutation::set_cell("a", "q", ms, "x"), Mutation::set_cell("v", "q", ms, "y")]).unwrap();
    }
    db.flush().unwrap();
    t.mutate_row("r", [Mutation::delete_from_column("a", "q", TimeRange::new(50_000, 60_000))]).unwrap();
    let window = Filter::timestamp_range(TimeRange::new(40_000, 70_000));
    let row = t.read_row("r", &Filter::chain([Filter::family_name_regex("a"), window.clone()])).unwrap().unwrap();
    let times: Vec<i64> = row.cells().map(|(_, _, c)| c.timestamp.micros() / 1000).collect();
    let expected: Vec<i64> = (40..70).rev().filter(|t| !(50..60).contains(t)).collect();
    assert_eq!(times, expected);
    // max_versions(3) keeps 198..=200: nothing in an older window.
    assert!(t.read_row("r", &Filter::chain([Filter::family_name_regex("v"), window])).unwrap().is_none());
    let newest = t.read_row("r", &Filter::chain([Filter::family_name_regex("v"), Filter::cells_per_column_limit(2)]));
    let times: Vec<i64> = newest.unwrap().unwrap().cells().map(|(_, _, c)| c.timestamp.micros() / 1000).collect();
    assert_eq!(times, [200, 199]);
}

/// A read of one column's time range starts inside the row in files that
/// hold no tombstone, and at the row's start in those that do: a column
/// or family tombstone flushed to its own file still deletes what it
/// covers in older files.
#[test]
fn a_read_that_starts_inside_a_row_still_meets_its_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().block_size(256).open(dir.path()).unwrap();
    let t = db.create_table("t", [("a", GcRule::none())]).unwrap();
    for ms in 1..=200 {
        let cells = |v: &str| [Mutation::set_cell("a", "p", ms * 1000, v), Mutation::set_cell("a", "q", ms * 1000, v)];
        t.mutate_row("r1", cells("x")).unwrap();
        t.mutate_row("r2", cells("y")).unwrap();
    }
    db.flush().unwrap();
    t.mutate_row("r1", [Mutation::delete_from_column("a", "q", TimeRange::new(50_000, 60_000))]).unwrap();
    t.mutate_row("r2", [Mutation::delete_from_family("a")]).unwrap();
    db.flush().unwrap();
    for ms in 150..=160 {
        t.mutate_row("r2", [Mutation::set_cell("a", "q", ms * 1000, "z")]).unwrap();
    }
    db.flush().unwrap();
    let hour = |row: &str, start_ms: i64, end_ms: i64| -> Vec<(i64, Vec<u8>)> {
        let filter = Filter::chain([
            Filter::column_qualifier_regex("q"),
            Filter::timestamp_range(TimeRange::new(start_ms * 1000, end_ms * 1000)),
        ]);
        let row = t.read_row(row, &filter).unwrap();
        row.map(|r| r.cells().map(|(_, _, c)| (c.timestamp.micros() / 1000, c.value.to_vec())).collect())
            .unwrap_or_default()
    };
    let expected: Vec<(i64, Vec<u8>)> =
        (40..70).rev().filter(|t| !(50..60).contains(t)).map(|t| (t, b"x".to_vec())).collect();
    assert_eq!(hour("r1", 40, 70), expected);
    let rewritten: Vec<(i64, Vec<u8>)> = (150..=160).rev().map(|t| (t, b"z".to_vec())).collect();
    assert_eq!(hour("r2", 100, 200), rewritten);
    assert!(hour("r2", 1, 100).is_empty(), "the family tombstone deletes the older file's cells");
}
