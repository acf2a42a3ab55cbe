//! The schema-pattern lab as criterion benchmarks: ingest of each of the
//! five patterns, and each query of `workload.md` on each pattern,
//! preloaded, flushed and fully compacted.
//!
//! ```text
//! cargo bench -p cellardb-lab --bench patterns                    # every pattern and query
//! cargo bench -p cellardb-lab --bench patterns -- metric-hour     # one query, every pattern
//! ```
//!
//! Throughput is in cells: cells written for ingest, cells the query read
//! for queries, so criterion reports cells/s. The scale is 10 balloons × 7
//! days (`CELLARDB_BENCH_BALLOONS`, `CELLARDB_BENCH_DAYS` change it); under
//! `cargo test --benches` each benchmark runs once on 2 balloons × 1 day.
//! `cellar lab` reports the same queries' median and p99 latencies. Before
//! timing a query, the bench prints how many blocks one run decodes from a
//! cold block cache: `metric-hour` on `bucket-new-cell` reads the blocks of
//! one column's hour, not the row's.

use std::hint::black_box;

use cellardb::{Db, GcRule, Mutation, Options, Table};
use cellardb_lab::Query;
use cellardb_lab::workload::{SchemaPattern, SplitMix64, Workload};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

/// The scale: small when criterion runs each benchmark once as a test.
fn workload() -> Workload {
    let benching = std::env::args().any(|a| a == "--bench");
    let var = |name: &str, default: u32| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    if benching {
        Workload::new(var("CELLARDB_BENCH_BALLOONS", 10), var("CELLARDB_BENCH_DAYS", 7))
    } else {
        Workload::new(2, 1)
    }
}

fn open(dir: &std::path::Path, pattern: SchemaPattern) -> (Db, Table) {
    let db = Options::default().open(dir).expect("open");
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).expect("create");
    (db, t)
}

/// Each event's row mutations, in arrival order.
fn events(w: &Workload, pattern: SchemaPattern) -> Vec<Vec<(String, Vec<Mutation>)>> {
    w.events().map(|e| pattern.mutations(&e)).collect()
}

fn write(t: &Table, events: &[Vec<(String, Vec<Mutation>)>]) {
    for rows in events {
        for r in t.mutate_rows(rows.iter().cloned()) {
            r.expect("write");
        }
    }
}

fn ingest(c: &mut Criterion) {
    let w = workload();
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    for pattern in SchemaPattern::ALL {
        let events = events(&w, pattern);
        group.throughput(Throughput::Elements(w.events_count() * pattern.cells_per_event()));
        group.bench_function(pattern.name(), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let (db, t) = open(dir.path(), pattern);
                    (dir, db, t)
                },
                |(dir, db, t)| {
                    write(&t, &events);
                    db.flush().expect("flush");
                    (dir, db)
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

fn queries(c: &mut Criterion) {
    let w = workload();
    for pattern in SchemaPattern::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (db, t) = open(dir.path(), pattern);
            write(&t, &events(&w, pattern));
            db.compact_table("balloons").expect("compact");
            db.close().expect("close");
        }
        let mut group = c.benchmark_group(format!("query/{}", pattern.name()));
        group.sample_size(10);
        for (kind, form) in cellardb_lab::report::measured() {
            let mut random = SplitMix64(7);
            let sample: Vec<Query> = (0..64).map(|_| kind.sample(&w, random.next_u64())).collect();
            // Reopened for each query: the first run meets a cold cache.
            let db = Options::default().open(dir.path()).expect("reopen");
            let t = db.table("balloons").expect("table");
            let decoded = || db.stats().expect("stats").tables[0].families[0].blocks_decoded;
            let name = format!("{}/{}", kind.name(), form.name());
            sample[0].run(pattern, &w, form, &t).expect("query");
            eprintln!("{}/{name}: {} blocks decoded by a cold run", pattern.name(), decoded());
            // The cells one query reads, on average, for cells/s.
            let cells: u64 = sample.iter().map(|q| q.run(pattern, &w, form, &t).expect("query").cells_read).sum();
            group.throughput(Throughput::Elements((cells / sample.len() as u64).max(1)));
            let mut next = sample.iter().cycle();
            group.bench_function(name, |b| {
                b.iter(|| {
                    let q = next.next().expect("cycle");
                    black_box(q.run(pattern, &w, form, &t).expect("query"))
                });
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = ingest, queries
}
criterion_main!(benches);
