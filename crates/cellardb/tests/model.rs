//! The randomized model test: random mutations of all four kinds, random
//! flushes and reopens (each under a compaction strategy drawn anew),
//! applied both to cellardb and to a plain in-memory model of Bigtable's
//! semantics; every read compared.
//!
//! Seeded and bounded in time (`CELLARDB_MODEL_SECS`, default 6). A failure
//! prints its seed; `CELLARDB_MODEL_SEED=N` replays that seed alone.
//! `CELLARDB_MODEL_FIRST_SEED=N` starts the seeds at `N` (default 0), so
//! that runs side by side try different ones.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "the generator's draws are small numbers"
)]

mod common;

use std::ops::Bound;
use std::path::Path;
use std::time::{Duration, Instant};

use cellardb::fs::MemFs;
use cellardb::{
    Aggregate, CompactionStrategy, Db, Filter, GcRule, Mutation, Options, RowRange, RowSet, Table, TimeRange,
};
use common::Rng;
use common::model::{Model, ModelCell, ModelFilter, ModelGc, cells_of};

const KEY_BYTES: [u8; 4] = [b'a', b'b', 0x00, 0xff];
const QUALIFIERS: [&[u8]; 4] = [b"", b"q0", b"q1", b"q\xff"];
/// Regexes matching exactly the qualifier of the same index.
const QUALIFIER_REGEXES: [&str; 4] = ["", "q0", "q1", r"q\xff"];
const FAMILIES: [&str; 6] = ["ag1", "ag2", "cf1", "cf2", "cf3", "cf4"];
/// 2200-01-01 in µs: cells from then on are never too old for `max_age`,
/// cells near 1970 always are, so age decisions do not depend on the clock.
const FUTURE: i64 = 7_258_118_400_000_000;
const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

/// The families, their GC rules, and the model's mirror of each.
fn families() -> Vec<(&'static str, GcRule, ModelGc)> {
    let hour = HOUR.as_micros() as i64;
    vec![
        ("cf1", GcRule::none(), ModelGc::None),
        ("cf2", GcRule::max_versions(2), ModelGc::Versions(2)),
        (
            "cf3",
            GcRule::union([GcRule::max_versions(3), GcRule::max_age(HOUR)]),
            ModelGc::Union(vec![ModelGc::Versions(3), ModelGc::Age(hour)]),
        ),
        (
            "cf4",
            GcRule::intersection([GcRule::max_versions(1), GcRule::max_age(HOUR)]),
            ModelGc::Intersection(vec![ModelGc::Versions(1), ModelGc::Age(hour)]),
        ),
    ]
}

/// The aggregate families, their aggregates and GC rules (never an
/// intersection: see `docs/data-model.md` on counted-out aggregate cells).
fn aggregate_families() -> Vec<(&'static str, Aggregate, GcRule, ModelGc)> {
    vec![
        ("ag1", Aggregate::Sum, GcRule::max_versions(2), ModelGc::Versions(2)),
        ("ag2", Aggregate::Min, GcRule::max_age(HOUR), ModelGc::Age(HOUR.as_micros() as i64)),
    ]
}

fn key(rng: &mut Rng) -> Vec<u8> {
    (0..=rng.below(3)).map(|_| *rng.pick(&KEY_BYTES)).collect()
}

fn timestamp(rng: &mut Rng) -> i64 {
    let base = if rng.chance(50) { 0 } else { FUTURE };
    base + 1000 * rng.below(8) as i64
}

fn mutation(rng: &mut Rng) -> Mutation {
    let family = *rng.pick(&FAMILIES);
    let q = *rng.pick(&QUALIFIERS);
    match rng.below(20) {
        0..=12 if family.starts_with("ag") => {
            let n = rng.below(2000) as i64 - 1000;
            match rng.below(4) {
                0 => Mutation::set_cell(family, q, timestamp(rng), n.to_be_bytes()),
                _ => Mutation::add_to_cell(family, q, timestamp(rng), n),
            }
        }
        0..=12 => Mutation::set_cell(family, q, timestamp(rng), format!("v{}", rng.below(1000))),
        13..=15 => {
            let start = timestamp(rng);
            let range = if rng.chance(30) {
                TimeRange::since(start)
            } else {
                TimeRange::new(start, start + 1000 * (1 + rng.below(4) as i64))
            };
            Mutation::delete_from_column(family, q, range)
        }
        16..=18 => Mutation::delete_from_family(family),
        _ => Mutation::delete_from_row(),
    }
}

/// A random filter, as the engine's `Filter` and the model's mirror.
fn filter(rng: &mut Rng, depth: u32) -> (Filter, ModelFilter) {
    let choice = if depth > 1 { rng.below(11) } else { rng.below(15) };
    match choice {
        0 => (Filter::pass_all(), ModelFilter::PassAll),
        1 => (Filter::block_all(), ModelFilter::BlockAll),
        2 => {
            let f = *rng.pick(&FAMILIES);
            (Filter::family_name_regex(f), ModelFilter::Family(f.into()))
        }
        3 => {
            let i = rng.below(4) as usize;
            (Filter::column_qualifier_regex(QUALIFIER_REGEXES[i]), ModelFilter::Qualifier(QUALIFIERS[i].to_vec()))
        }
        4 => {
            let f = *rng.pick(&FAMILIES);
            let bound = |rng: &mut Rng| {
                let q = rng.pick(&QUALIFIERS).to_vec();
                match rng.below(3) {
                    0 => Bound::Included(q),
                    1 => Bound::Excluded(q),
                    _ => Bound::Unbounded,
                }
            };
            let (lo, hi) = (bound(rng), bound(rng));
            (Filter::column_range(f, lo.clone(), hi.clone()), ModelFilter::ColumnRange(f.into(), lo, hi))
        }
        5 => {
            let start = timestamp(rng);
            let end = rng.chance(70).then(|| start + 1000 * (1 + rng.below(5) as i64));
            let range = TimeRange { start: start.into(), end: end.map(Into::into) };
            (Filter::timestamp_range(range), ModelFilter::Timestamps(start, end))
        }
        6 => {
            let n = 1 + rng.below(3) as u32;
            (Filter::cells_per_column_limit(n), ModelFilter::PerColumn(n as usize))
        }
        7 => {
            let bound = |rng: &mut Rng| {
                let v = vec![b'v', b'0' + rng.below(10) as u8];
                match rng.below(3) {
                    0 => Bound::Included(v),
                    1 => Bound::Excluded(v),
                    _ => Bound::Unbounded,
                }
            };
            let (lo, hi) = (bound(rng), bound(rng));
            (Filter::value_range(lo.clone(), hi.clone()), ModelFilter::ValueRange(lo, hi))
        }
        8 => {
            let n = rng.below(4) as u32;
            (Filter::cells_per_row_offset(n), ModelFilter::RowOffset(n as usize))
        }
        9 => {
            let n = 1 + rng.below(4) as u32;
            (Filter::cells_per_row_limit(n), ModelFilter::RowLimit(n as usize))
        }
        10 => (Filter::strip_value(), ModelFilter::StripValue),
        11 => {
            let (p, mp) = filter(rng, depth + 1);
            let branch = |rng: &mut Rng| rng.chance(80).then(|| filter(rng, depth + 1));
            let (t, f) = (branch(rng), branch(rng));
            let engine = Filter::condition(p, t.as_ref().map(|b| b.0.clone()), f.as_ref().map(|b| b.0.clone()));
            let model = ModelFilter::Condition(Box::new(mp), t.map(|b| Box::new(b.1)), f.map(|b| Box::new(b.1)));
            (engine, model)
        }
        12 => {
            let (a, ma) = filter(rng, depth + 1);
            let (b, mb) = filter(rng, depth + 1);
            (Filter::interleave([a, b]), ModelFilter::Interleave(vec![ma, mb]))
        }
        _ => {
            let (a, ma) = filter(rng, depth + 1);
            let (b, mb) = filter(rng, depth + 1);
            (Filter::chain([a, b]), ModelFilter::Chain(vec![ma, mb]))
        }
    }
}

/// Whether a row key belongs to a part of a row set.
type KeyTest = Box<dyn Fn(&[u8]) -> bool>;

/// A random row set, and the membership tests the model reads it by.
fn row_set(rng: &mut Rng) -> (RowSet, Vec<KeyTest>) {
    let mut set = RowSet::new();
    let mut tests: Vec<KeyTest> = Vec::new();
    for _ in 0..=rng.below(3) {
        let (a, b) = (key(rng), key(rng));
        match rng.below(5) {
            0 => {
                set = set.key(&a);
                tests.push(Box::new(move |k| k == a.as_slice()));
            }
            1 => {
                set = set.range(RowRange::prefix(&a));
                tests.push(Box::new(move |k| k.starts_with(&a)));
            }
            2 => {
                set = set.range(RowRange::closed_open(&a, &b));
                tests.push(Box::new(move |k| k >= a.as_slice() && k < b.as_slice()));
            }
            3 => {
                set = set.range(RowRange::open_closed(&a, &b));
                tests.push(Box::new(move |k| k > a.as_slice() && k <= b.as_slice()));
            }
            _ => {
                set = set.range(RowRange::all());
                tests.push(Box::new(|_| true));
            }
        }
    }
    (set, tests)
}

/// A read through the iterator of owned rows, or (`borrowed`) through
/// `next_borrowed`, whose rows must give the same cells.
fn engine_read(
    t: &Table,
    set: RowSet,
    f: &Filter,
    reverse: bool,
    limit: Option<usize>,
    borrowed: bool,
) -> Vec<Vec<ModelCell>> {
    let mut read = t.read_rows(set, f);
    if reverse {
        read = read.reversed();
    }
    if let Some(n) = limit {
        read = read.limit(n);
    }
    if !borrowed {
        return cells_of(&read.collect_rows().expect("read"));
    }
    let mut rows = Vec::new();
    while let Some(row) = read.next_borrowed() {
        let row = row.expect("read");
        let cells: Vec<ModelCell> = row
            .cells()
            .map(|c| {
                (row.key().to_vec(), c.family.to_owned(), c.qualifier.to_vec(), c.timestamp.micros(), c.value.to_vec())
            })
            .collect();
        assert_eq!(cells_of(&[row.to_row()]), std::slice::from_ref(&cells), "to_row keeps the cells");
        rows.push(cells);
    }
    rows
}

/// Opens the database, with the compaction strategy `strategies` draws:
/// leveled, or time windows of 2 ms (four windows per run of timestamps),
/// so that a store compacted one way is later compacted the other.
fn open(path: &Path, fs: Option<&MemFs>, strategies: &mut Rng) -> (Db, Table) {
    let strategy = if strategies.chance(30) {
        CompactionStrategy::TimeWindow { window_micros: 2000 }
    } else {
        CompactionStrategy::Leveled
    };
    let mut opts = Options::default().memtable_size(4 << 10).block_size(256).compaction_strategy(strategy);
    // Compactions cut small files: a level holds many, read as one run.
    if strategies.chance(50) {
        opts = opts.target_file_size(1 << 10);
    }
    // A full block cache: reads of one row decode parts of blocks.
    if strategies.chance(40) {
        opts = opts.block_cache_size(if strategies.chance(50) { 0 } else { 16 << 10 });
    }
    if let Some(fs) = fs {
        opts = opts.file_system(std::sync::Arc::new(fs.clone()));
    }
    let db = opts.open(path).expect("open");
    let t = db.table("t").unwrap_or_else(|_| {
        let t = db.create_table("t", families().into_iter().map(|(f, rule, _)| (f, rule))).expect("create");
        for (f, agg, rule, _) in aggregate_families() {
            db.create_aggregate_family("t", f, agg, rule).expect("create aggregate family");
        }
        t
    });
    (db, t)
}

fn run_seed(seed: u64, ops: usize) {
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let fs = (seed % 2 == 1).then(MemFs::new);
    // Drawn apart from the operations, which a seed keeps.
    let mut strategies = Rng(seed ^ 0x57A7_E61E);
    let (mut db, mut t) = open(dir.path(), fs.as_ref(), &mut strategies);
    let mut gc: std::collections::BTreeMap<String, ModelGc> =
        families().into_iter().map(|(f, _, m)| (f.to_owned(), m)).collect();
    gc.extend(aggregate_families().into_iter().map(|(f, _, _, m)| (f.to_owned(), m)));
    let aggregates = aggregate_families().into_iter().map(|(f, agg, _, _)| (f.to_owned(), agg)).collect();
    let mut model = Model { gc, aggregates, ..Model::default() };
    for op in 0..ops {
        let context = format!("seed {seed}, op {op} (replay: CELLARDB_MODEL_SEED={seed})");
        match rng.below(100) {
            0..=69 => {
                let k = key(&mut rng);
                let muts: Vec<Mutation> = (0..=rng.below(4)).map(|_| mutation(&mut rng)).collect();
                t.mutate_row(&k, muts.clone()).unwrap_or_else(|e| panic!("{context}: write failed: {e}"));
                model.apply(&k, &muts);
            }
            70..=72 => db.flush().unwrap_or_else(|e| panic!("{context}: flush failed: {e}")),
            73 => db.compact_table("t").unwrap_or_else(|e| panic!("{context}: compaction failed: {e}")),
            76 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                if rng.chance(50) {
                    t.drop_row_range(RowRange::prefix(&a)).unwrap_or_else(|e| panic!("{context}: drop failed: {e}"));
                    model.drop_rows(|k| k.starts_with(&a));
                } else {
                    t.drop_row_range(RowRange::closed_open(&a, &b))
                        .unwrap_or_else(|e| panic!("{context}: drop failed: {e}"));
                    model.drop_rows(|k| k >= a.as_slice() && k < b.as_slice());
                }
            }
            74..=75 => {
                drop(t);
                drop(db);
                (db, t) = open(dir.path(), fs.as_ref(), &mut strategies);
            }
            _ => {
                let (set, tests) = row_set(&mut rng);
                let (f, mf) = filter(&mut rng, 0);
                let reverse = rng.chance(30);
                let limit = rng.chance(30).then(|| rng.below(4) as usize);
                let borrowed = rng.chance(50);
                let got = engine_read(&t, set.clone(), &f, reverse, limit, borrowed);
                // A limit of 0 means none, as in Bigtable.
                let want = model.read(|k| tests.iter().any(|t| t(k)), &mf, reverse, limit.filter(|&n| n > 0));
                assert_eq!(
                    got, want,
                    "{context}: read of {set:?} with {f:?}, reverse {reverse}, limit {limit:?}, borrowed {borrowed}"
                );
            }
        }
    }
    let all = engine_read(&t, RowSet::all(), &Filter::pass_all(), false, None, seed.is_multiple_of(2));
    assert_eq!(all, model.read(|_| true, &ModelFilter::PassAll, false, None), "seed {seed}: final scan");
}

#[test]
fn engine_agrees_with_the_model() {
    if let Some(seed) = std::env::var("CELLARDB_MODEL_SEED").ok().and_then(|s| s.parse().ok()) {
        run_seed(seed, 400);
        return;
    }
    let secs = std::env::var("CELLARDB_MODEL_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let first: u64 = std::env::var("CELLARDB_MODEL_FIRST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut seeds = 0;
    while seeds < 4 || Instant::now() < deadline {
        run_seed(first + seeds, 400);
        seeds += 1;
    }
    eprintln!("model test: {seeds} seeds of 400 operations agreed (seeds {first} to {})", first + seeds - 1);
}
