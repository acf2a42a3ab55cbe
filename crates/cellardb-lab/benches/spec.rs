//! The lab's own cost, which must never be what it measures:
//!
//! - `generate/*`: the generator alone (values in arrival order), and with
//!   each design's rows made of the events, in cells per second on one core;
//! - `load/*`: a spec's events loaded through the lab (generated and made
//!   into rows a few batches ahead of the writes, as the lab's load does)
//!   against the same rows written straight through the API from memory,
//!   made before the timing (`straight`) or made as they are written from
//!   their parts held in memory (`straight-made-as-written`: the cost of
//!   the cells the API takes, which any writer pays, on top).
//!
//! ```text
//! cargo bench -p cellardb-lab --bench spec
//! ```

use std::hint::black_box;

use cellardb::{Db, Mutation, Options, Table};
use cellardb_lab::design::RowWriter;
use cellardb_lab::generator::{Arrivals, Value};
use cellardb_lab::measure::feed;
use cellardb_lab::spec::{SERVER_METRICS, Spec};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

/// The specs the bench runs: the balloons at 10 × 1 day and the server
/// metrics at 100 hosts × 2 hours (about 100k and 72k events).
fn specs() -> Vec<Spec> {
    vec![
        Spec::balloons().resized(Some(10), Some(86_400_000_000)),
        Spec::parse(SERVER_METRICS, "server-metrics").expect("the shipped spec").resized(Some(100), None),
    ]
}

fn values(spec: &Spec) -> u64 {
    let mut n = 0;
    let mut events = Arrivals::new(spec);
    while let Some(e) = events.next() {
        n += e.values.iter().filter(|v| **v != Value::Absent).count() as u64;
    }
    n
}

fn generate(c: &mut Criterion) {
    let mut group = c.benchmark_group("generate");
    group.sample_size(10);
    for spec in specs() {
        group.throughput(Throughput::Elements(values(&spec)));
        group.bench_function(format!("{}/values", spec.name), |b| {
            b.iter(|| {
                let mut events = Arrivals::new(&spec);
                while let Some(e) = events.next() {
                    black_box(e);
                }
            });
        });
        for design in &spec.designs {
            let cells = feed(&spec, design, &mut |_| Ok(())).expect("no sink error").cells;
            group.throughput(Throughput::Elements(cells));
            group.bench_function(format!("{}/rows/{}", spec.name, design.name), |b| {
                b.iter(|| {
                    let mut w = RowWriter::new(&spec, design);
                    let mut events = Arrivals::new(&spec);
                    while let Some(e) = events.next() {
                        black_box(w.rows(e));
                    }
                });
            });
        }
    }
    group.finish();
}

fn open(dir: &std::path::Path, spec: &Spec, design: &cellardb_lab::spec::Design) -> (Db, Table) {
    let db = Options::default().open(dir).expect("open");
    let families = design.families.iter().map(|f| (f.name.as_str(), f.rule.clone()));
    let table = db.create_table(&spec.name, families).expect("create");
    (db, table)
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    for spec in specs() {
        // The design with the most cells per event, where the lab's share is largest.
        let design = spec
            .designs
            .iter()
            .find(|d| d.name == "single-ts-unserialized" || d.name == "report-rows")
            .expect("a design of a cell per value");
        // Made afresh for each run, not cloned: a clone of a cell's bytes
        // would make them shared, and dearer to drop than the lab's.
        let rows = || {
            let mut events: Vec<Vec<(String, Vec<Mutation>)>> = Vec::new();
            feed(&spec, design, &mut |rows| {
                events.push(rows);
                Ok(())
            })
            .expect("no sink error");
            events
        };
        group.throughput(Throughput::Elements(rows().len() as u64));
        group.bench_function(format!("{}/{}/through-the-lab", spec.name, design.name), |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("tempdir"),
                |dir| {
                    let (db, table) = open(dir.path(), &spec, design);
                    feed(&spec, design, &mut |rows| table.mutate_rows(rows).into_iter().collect()).expect("write");
                    db.close().expect("close");
                },
                BatchSize::PerIteration,
            );
        });
        // The rows' cells made as they are written, from the same values
        // held in memory, as a user writing their own data through the
        // API makes them: the part of the lab's cost that is the API's own.
        group.bench_function(format!("{}/{}/straight-made-as-written", spec.name, design.name), |b| {
            b.iter_batched(
                || (tempfile::tempdir().expect("tempdir"), rows()),
                |(dir, events)| {
                    let (db, table) = open(dir.path(), &spec, design);
                    for rows in &events {
                        let rows = rows
                            .iter()
                            .map(|(key, cells)| (key.clone(), cells.iter().map(made_again).collect::<Vec<_>>()));
                        table
                            .mutate_rows(rows.collect::<Vec<_>>())
                            .into_iter()
                            .collect::<cellardb::Result<()>>()
                            .expect("write");
                    }
                    db.close().expect("close");
                    events // dropped outside the timing
                },
                BatchSize::PerIteration,
            );
        });
        group.bench_function(format!("{}/{}/straight", spec.name, design.name), |b| {
            b.iter_batched(
                || (tempfile::tempdir().expect("tempdir"), rows()),
                |(dir, events)| {
                    let (db, table) = open(dir.path(), &spec, design);
                    for rows in events {
                        table.mutate_rows(rows).into_iter().collect::<cellardb::Result<()>>().expect("write");
                    }
                    db.close().expect("close");
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

/// `m` made again from its parts, as a writer holding them makes a cell:
/// the family and value copied, the qualifier (the series' name) shared.
fn made_again(m: &Mutation) -> Mutation {
    match m {
        Mutation::SetCell { family, qualifier, timestamp, value } => Mutation::SetCell {
            family: family.clone(),
            qualifier: qualifier.clone(),
            timestamp: *timestamp,
            value: bytes::Bytes::copy_from_slice(value),
        },
        other => other.clone(),
    }
}

criterion_group!(benches, generate, load);
criterion_main!(benches);
