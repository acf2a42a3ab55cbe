//! Ingest and scan of the balloon workload (`docs/workload.md`):
//! `bucket-new-cell`, `single-ts-unserialized` and `single-ts-serialized`
//! (one cell of 14 bytes per event: the write path's fixed cost per row),
//! 10 balloons × 1 day,
//! events in arrival order, one row mutation per event, buffered durability
//! (the log written to the OS on every write, no fsync), flushed at the end.
//!
//! ```text
//! cargo bench -p cellardb-lab --bench ingest                       # cellardb
//! cargo bench -p cellardb-lab --bench ingest --features rocksdb    # and RocksDB, same run
//! ```
//!
//! Throughput is in cells; before timing each pattern the bench prints the
//! bytes of SSTables per measurement. The scan runs in two forms: rows
//! owned (`for row in table.read_rows(..)`, the form most code writes
//! first) and rows borrowed from the read (`ReadRows::next_borrowed`, as
//! the lab reads them). With the `rocksdb` feature, the same
//! events go to RocksDB (`cellardb_lab::baseline`: zstd level 3, 4 KiB blocks,
//! each cell under the standard Bigtable key `row ‖ 0 ‖ family ‖ 0 ‖
//! qualifier ‖ 0 ‖ (u64::MAX − timestamp)` big-endian) for a side-by-side
//! figure, scanned in its two forms too: `db.iterator(..)`, each key and
//! value copied into a box of its own, and the lab's raw iterator, slices
//! borrowed from it.

use std::hint::black_box;
use std::path::Path;

use cellardb::{Db, Filter, GcRule, Mutation, Options, RowSet, Table};
use cellardb_lab::workload::{SchemaPattern, Workload};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const PATTERNS: [SchemaPattern; 3] =
    [SchemaPattern::BucketNewCell, SchemaPattern::SingleTsUnserialized, SchemaPattern::SingleTsSerialized];

fn workload() -> Workload {
    Workload::new(10, 1)
}

/// The row mutations of the workload in arrival order.
fn rows(pattern: SchemaPattern) -> Vec<(String, Vec<Mutation>)> {
    workload().events().flat_map(|e| pattern.mutations(&e)).collect()
}

fn cells(pattern: SchemaPattern) -> u64 {
    workload().events_count() * pattern.cells_per_event()
}

fn open(dir: &Path, pattern: SchemaPattern) -> (Db, Table) {
    let db = Options::default().open(dir).expect("open");
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).expect("create");
    (db, t)
}

fn load(t: &Table, rows: &[(String, Vec<Mutation>)]) {
    for (key, mutations) in rows {
        t.mutate_row(key, mutations.iter().cloned()).expect("write");
    }
}

fn bytes_per_measurement(sst_bytes: u64) -> f64 {
    sst_bytes as f64 / (workload().events_count() * 4) as f64
}

fn ingest(c: &mut Criterion) {
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    for pattern in PATTERNS {
        let rows = rows(pattern);
        group.throughput(Throughput::Elements(cells(pattern)));
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, t) = open(dir.path(), pattern);
        load(&t, &rows);
        db.flush().expect("flush");
        let sst_bytes = t.stats().expect("stats").sst_bytes();
        eprintln!(
            "cellardb {}: {:.2} bytes per measurement after flush",
            pattern.name(),
            bytes_per_measurement(sst_bytes)
        );
        group.bench_function(format!("cellardb/{}", pattern.name()), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let (db, t) = open(dir.path(), pattern);
                    (dir, db, t)
                },
                |(dir, db, t)| {
                    load(&t, &rows);
                    db.flush().expect("flush");
                    (dir, db, t)
                },
                BatchSize::PerIteration,
            );
        });
        #[cfg(feature = "rocksdb")]
        rocks::bench_ingest(&mut group, pattern);
    }
    group.finish();
}

fn scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("scan");
    group.sample_size(10);
    for pattern in PATTERNS {
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, t) = open(dir.path(), pattern);
        load(&t, &rows(pattern));
        db.flush().expect("flush");
        group.throughput(Throughput::Elements(cells(pattern)));
        group.bench_function(format!("cellardb/{}", pattern.name()), |b| {
            b.iter(|| {
                let mut n = 0;
                for row in t.read_rows(RowSet::all(), &Filter::pass_all()) {
                    n += row.expect("read").cell_count();
                }
                assert_eq!(n as u64, cells(pattern));
                black_box(n)
            });
        });
        group.bench_function(format!("cellardb-borrowed/{}", pattern.name()), |b| {
            b.iter(|| {
                let mut n = 0;
                let mut rows = t.read_rows(RowSet::all(), &Filter::pass_all());
                while let Some(row) = rows.next_borrowed() {
                    n += row.expect("read").cells().count();
                }
                assert_eq!(n as u64, cells(pattern));
                black_box(n)
            });
        });
        #[cfg(feature = "rocksdb")]
        rocks::bench_scan(&mut group, pattern);
    }
    group.finish();
}

/// The same workload on RocksDB (`cellardb_lab::baseline`).
#[cfg(feature = "rocksdb")]
mod rocks {
    use cellardb::Durability;
    use cellardb_lab::baseline::{CellSelection, RocksBaseline};
    use cellardb_lab::workload::SchemaPattern;
    use criterion::measurement::WallTime;
    use criterion::{BatchSize, BenchmarkGroup};

    fn open(dir: &std::path::Path) -> RocksBaseline {
        // cellardb's block-cache budget, as in the lab.
        let cache = cellardb::Options::default().get_block_cache_size();
        RocksBaseline::open(dir, Durability::Buffered, cache).expect("open rocksdb")
    }

    fn load(db: &RocksBaseline, rows: &[(String, Vec<cellardb::Mutation>)]) {
        for (key, mutations) in rows {
            db.mutate_row(key.as_bytes(), mutations).expect("write");
        }
    }

    pub fn bench_ingest(group: &mut BenchmarkGroup<'_, WallTime>, pattern: SchemaPattern) {
        let rows = super::rows(pattern);
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        load(&db, &rows);
        db.flush().expect("flush");
        let bytes = super::bytes_per_measurement(db.sst_bytes());
        eprintln!("rocksdb {}: {bytes:.2} bytes per measurement after flush", pattern.name());
        group.bench_function(format!("rocksdb/{}", pattern.name()), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let db = open(dir.path());
                    (dir, db)
                },
                |(dir, db)| {
                    load(&db, &rows);
                    db.flush().expect("flush");
                    (dir, db)
                },
                BatchSize::PerIteration,
            );
        });
    }

    pub fn bench_scan(group: &mut BenchmarkGroup<'_, WallTime>, pattern: SchemaPattern) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        load(&db, &super::rows(pattern));
        db.flush().expect("flush");
        group.bench_function(format!("rocksdb/{}", pattern.name()), |b| {
            b.iter(|| {
                let n = db.scan_count().expect("scan");
                assert_eq!(n, super::cells(pattern));
                std::hint::black_box(n)
            });
        });
        let every_cell = CellSelection { column: None, time: None, newest_per_column: false };
        group.bench_function(format!("rocksdb-borrowed/{}", pattern.name()), |b| {
            b.iter(|| {
                let mut n = 0u64;
                db.read_rows(b"", None, &every_cell, &mut |_| n += 1).expect("scan");
                assert_eq!(n, super::cells(pattern));
                std::hint::black_box(n)
            });
        });
    }
}

criterion_group!(benches, ingest, scan);
criterion_main!(benches);
