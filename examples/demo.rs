//! Loads the weather-balloon workload into a temporary database once per
//! schema pattern and prints what each costs: ingest rate, bytes on disk per
//! measurement after a flush, compression, and the rate of a full scan.
//! Built with `--features rocksdb`, runs the same on RocksDB alongside.
//!
//! ```text
//! cargo run --release --example demo [-- BALLOONS DAYS [sync|buffered]]
//! ```
//! Defaults: 10 balloons × 1 day, buffered durability.

use std::time::Instant;

use cellardb::workload::{SchemaPattern, Workload};
use cellardb::{Durability, Filter, GcRule, Mutation, Options, RowSet};

/// What one engine did with one pattern.
struct Figures {
    cells: u64,
    ingest_secs: f64,
    scan_secs: f64,
    sst_bytes: u64,
    logical_bytes: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let balloons = args.first().map_or(Ok(10), |s| s.parse())?;
    let days = args.get(1).map_or(Ok(1), |s| s.parse())?;
    let durability = match args.get(2).map(String::as_str) {
        Some("sync") => Durability::Sync,
        _ => Durability::Buffered,
    };
    let w = Workload::new(balloons, days);
    let measurements = w.events_count() * 4;
    println!(
        "balloon workload: {balloons} balloons × {days} days = {} events, {measurements} measurements, {durability:?}",
        w.events_count()
    );
    println!();
    println!(
        "| {:<9} | {:<22} | {:>10} | {:>12} | {:>12} | {:>7} | {:>11} |",
        "engine", "pattern", "cells", "ingest c/s", "scan c/s", "B/meas", "compression"
    );
    println!("|{:-<11}|{:-<24}|{:->12}|{:->14}|{:->14}|{:->9}|{:->13}|", "", "", "", "", "", "", "");
    for pattern in SchemaPattern::ALL {
        let rows: Vec<(String, Vec<Mutation>)> = w.events().flat_map(|e| pattern.mutations(&e)).collect();
        let f = run_cellardb(pattern, &rows, durability)?;
        print_row("cellardb", pattern, &f, measurements);
        #[cfg(feature = "rocksdb")]
        {
            let r = run_rocksdb(&rows, durability, f.logical_bytes)?;
            print_row("rocksdb", pattern, &r, measurements);
        }
    }
    println!();
    println!(
        "ingest: writes and a final flush. B/meas: bytes of SSTables per measurement after the flush (no compaction)."
    );
    Ok(())
}

fn print_row(engine: &str, pattern: SchemaPattern, f: &Figures, measurements: u64) {
    println!(
        "| {:<9} | {:<22} | {:>10} | {:>12.0} | {:>12.0} | {:>7.2} | {:>10.1}× |",
        engine,
        pattern.name(),
        f.cells,
        f.cells as f64 / f.ingest_secs,
        f.cells as f64 / f.scan_secs,
        f.sst_bytes as f64 / measurements as f64,
        f.logical_bytes as f64 / f.sst_bytes as f64,
    );
}

fn run_cellardb(
    pattern: SchemaPattern,
    rows: &[(String, Vec<Mutation>)],
    durability: Durability,
) -> Result<Figures, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Options::default().durability(durability).open(dir.path())?;
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())])?;
    let started = Instant::now();
    for (key, mutations) in rows {
        t.mutate_row(key, mutations.iter().cloned())?;
    }
    db.flush()?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let family = t.stats()?.families.remove(0);
    let started = Instant::now();
    let mut cells = 0u64;
    for row in t.read_rows(RowSet::all(), &Filter::pass_all()) {
        cells += row?.cell_count() as u64;
    }
    let scan_secs = started.elapsed().as_secs_f64();
    assert_eq!(cells, family.cells, "the scan reads back every cell written");
    Ok(Figures { cells, ingest_secs, scan_secs, sst_bytes: family.sst_bytes, logical_bytes: family.logical_bytes })
}

#[cfg(feature = "rocksdb")]
fn run_rocksdb(
    rows: &[(String, Vec<Mutation>)],
    durability: Durability,
    logical_bytes: u64,
) -> Result<Figures, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = cellardb::baseline::RocksBaseline::open(dir.path(), durability)?;
    let started = Instant::now();
    for (key, mutations) in rows {
        db.mutate_row(key.as_bytes(), mutations)?;
    }
    db.flush()?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let cells = db.scan_count()?;
    let scan_secs = started.elapsed().as_secs_f64();
    Ok(Figures { cells, ingest_secs, scan_secs, sst_bytes: db.sst_bytes(), logical_bytes })
}
