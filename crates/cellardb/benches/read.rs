//! What a read costs, piece by piece, through the public API:
//!
//! - `point-read`: one narrow row by key with the default 64 MiB block
//!   cache, where most reads find their block decoded: a read's fixed cost
//!   (snapshot, sources, filter, assembly of a few cells);
//! - `point-read-missing`: a key no file holds (bloom filters and the index
//!   turn every file down);
//! - `block-decode`: the same point read with no block cache, so each read
//!   fetches and checks one data block and decodes the part of it that
//!   holds the row;
//! - `block-decode-whole`: a range of 8 narrow rows with no block cache: a
//!   read of more than one row decodes its block whole;
//! - `block-decode-wide`: the `seek` read with no block cache: one block of
//!   one column's minutes fetched and checked, and the hour's part of it
//!   decoded;
//! - `seek`: one column of a wide row over an hour, a seek into the column;
//! - `reversed-seek`: the newest cell of each column of a prefix's last
//!   row, read backwards with a limit of one row;
//! - `row-assembly`: a wide row read whole (cached), cells per second;
//! - `tall-scan`: a source's week of one-cell rows (cached), borrowed as
//!   users of a scan read them: the read's fixed cost per row, rows per
//!   second;
//! - `many-keys`: one read of a list of keys, every source's row at one
//!   minute (cached): a merge moved from key to key.
//!
//! The data is a week of minutes for 64 sources in three layouts: narrow
//! rows (a row per source and minute, four columns), wide rows (a row per
//! source and week, four columns of 10 080 cells) and tall rows (a row per
//! source and minute, one cell holding the minute's four values
//! serialized), fully compacted. Under
//! `cargo test --benches`, where each benchmark runs once, it is a day of
//! 4 sources.

use std::hint::black_box;
use std::path::Path;

use cellardb::{Db, Filter, GcRule, Mutation, Options, RowRange, RowSet, Table, TimeRange};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Sources and minutes: small when criterion runs each benchmark once as a test.
fn scale() -> (u32, i64) {
    if std::env::args().any(|a| a == "--bench") { (64, 7 * 1440) } else { (4, 1440) }
}
const COLUMNS: [&str; 4] = ["altitude", "humidity", "pressure", "temperature"];
const MINUTE_MICROS: i64 = 60_000_000;

fn narrow_key(source: u32, minute: i64) -> String {
    format!("src{source:04}#{minute:06}")
}

fn wide_key(source: u32) -> String {
    format!("src{source:04}#week")
}

/// A value that drifts as a measurement does.
fn value(source: u32, minute: i64, column: u16) -> String {
    (i64::from(source) * 7 + minute / 3 + i64::from(column) * 1000).to_string()
}

fn load(dir: &Path, cache: usize, (sources, minutes): (u32, i64)) -> (Db, Table, Table, Table) {
    let db = Options::default().block_cache_size(cache).open(dir).expect("open");
    let narrow = db.create_table("narrow", [("m", GcRule::none())]).expect("narrow");
    let wide = db.create_table("wide", [("m", GcRule::none())]).expect("wide");
    let tall = db.create_table("tall", [("m", GcRule::none())]).expect("tall");
    for minute in 0..minutes {
        let ts = minute * MINUTE_MICROS;
        for source in 0..sources {
            let cells: Vec<Mutation> =
                (0..).zip(COLUMNS).map(|(c, q)| Mutation::set_cell("m", q, ts, value(source, minute, c))).collect();
            narrow.mutate_row(narrow_key(source, minute), cells.clone()).expect("write");
            wide.mutate_row(wide_key(source), cells).expect("write");
            let event: Vec<String> =
                (0..).zip(COLUMNS).map(|(c, q)| format!("{q}={}", value(source, minute, c))).collect();
            tall.mutate_row(narrow_key(source, minute), [Mutation::set_cell("m", "event", ts, event.join(","))])
                .expect("write");
        }
    }
    for name in ["narrow", "wide", "tall"] {
        db.compact_table(name).expect("compact");
    }
    (db, narrow, wide, tall)
}

/// One hour of the `pressure` column among `minutes`, the hour drawn from `r`.
fn hour_of_pressure(r: u32, minutes: i64) -> Filter {
    let hour = i64::from(r >> 8) % (minutes / 60);
    let time = TimeRange::new(hour * 3600 * 1_000_000, (hour + 1) * 3600 * 1_000_000);
    Filter::chain([Filter::column_qualifier_regex("pressure"), Filter::timestamp_range(time)])
}

fn reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (sources, minutes) = scale();
    let (db, narrow, wide, tall) = load(dir.path(), 64 << 20, (sources, minutes));
    let mut group = c.benchmark_group("read");
    let mut i = 0u32;
    let mut next = move || {
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        i
    };
    let all = Filter::pass_all();
    group.bench_function("point-read", |b| {
        b.iter(|| {
            let r = next();
            let key = narrow_key(r % sources, i64::from(r >> 8) % minutes);
            black_box(narrow.read_row(key, &all).expect("read").expect("row"))
        });
    });
    group.bench_function("point-read-missing", |b| {
        b.iter(|| {
            let r = next();
            let key = format!("{}x", narrow_key(r % sources, i64::from(r >> 8) % minutes));
            assert!(narrow.read_row(key, &all).expect("read").is_none());
        });
    });
    group.bench_function("seek", |b| {
        b.iter(|| {
            let r = next();
            let row = wide.read_row(wide_key(r % sources), &hour_of_pressure(r, minutes)).expect("read").expect("row");
            assert_eq!(row.cell_count(), 60);
        });
    });
    let newest = Filter::cells_per_column_limit(1);
    group.bench_function("reversed-seek", |b| {
        b.iter(|| {
            let prefix = format!("src{:04}#", next() % sources);
            let rows = wide.read_rows(RowSet::from(RowRange::prefix(prefix)), &newest).reversed().limit(1);
            let rows = rows.collect_rows().expect("read");
            assert_eq!(rows[0].cell_count(), COLUMNS.len());
        });
    });
    group.throughput(Throughput::Elements(minutes.unsigned_abs() * COLUMNS.len() as u64));
    group.bench_function("row-assembly", |b| {
        b.iter(|| black_box(wide.read_row(wide_key(next() % sources), &all).expect("read").expect("row")));
    });
    group.throughput(Throughput::Elements(u64::from(sources)));
    group.bench_function("many-keys", |b| {
        b.iter(|| {
            let minute = i64::from(next() >> 8) % minutes;
            let keys = (0..sources).fold(RowSet::new(), |set, s| set.key(narrow_key(s, minute)));
            let mut rows = tall.read_rows(keys, &all);
            let mut n = 0;
            while let Some(row) = rows.next_borrowed() {
                n += row.expect("read").cells().count();
            }
            assert_eq!(n, sources as usize);
        });
    });
    group.throughput(Throughput::Elements(minutes.unsigned_abs()));
    group.bench_function("tall-scan", |b| {
        b.iter(|| {
            let prefix = format!("src{:04}#", next() % sources);
            let mut rows = tall.read_rows(RowSet::from(RowRange::prefix(prefix)), &all);
            let mut bytes = 0;
            while let Some(row) = rows.next_borrowed() {
                bytes += row.expect("read").cells().map(|c| c.value.len()).sum::<usize>();
            }
            black_box(bytes)
        });
    });
    group.finish();
    db.close().expect("close");

    let db = Options::default().block_cache_size(0).open(dir.path()).expect("reopen");
    let narrow = db.table("narrow").expect("table");
    let wide = db.table("wide").expect("table");
    let mut group = c.benchmark_group("read");
    group.bench_function("block-decode", |b| {
        b.iter(|| {
            let r = next();
            let key = narrow_key(r % sources, i64::from(r >> 8) % minutes);
            black_box(narrow.read_row(key, &all).expect("read").expect("row"))
        });
    });
    group.bench_function("block-decode-whole", |b| {
        b.iter(|| {
            let r = next();
            let (source, minute) = (r % sources, i64::from(r >> 8) % (minutes - 8));
            let range = RowRange::closed_open(narrow_key(source, minute), narrow_key(source, minute + 8));
            let rows = narrow.read_rows(RowSet::from(range), &all).collect_rows().expect("read");
            assert_eq!(rows.len(), 8);
        });
    });
    group.bench_function("block-decode-wide", |b| {
        b.iter(|| {
            let r = next();
            let row = wide.read_row(wide_key(r % sources), &hour_of_pressure(r, minutes)).expect("read").expect("row");
            assert_eq!(row.cell_count(), 60);
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = reads
}
criterion_main!(benches);
