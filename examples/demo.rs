//! Loads the weather-balloon workload into a temporary database once per
//! schema pattern and prints what each costs: ingest rate, bytes on disk per
//! measurement after a flush, compression, and the rate of a full scan.
//!
//! ```text
//! cargo run --release --example demo [-- BALLOONS DAYS [sync|buffered]]
//! ```
//! Defaults: 10 balloons × 1 day, buffered durability.

use std::time::Instant;

use cellardb::workload::{SchemaPattern, Workload};
use cellardb::{Durability, Filter, GcRule, Options, RowSet};

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
        "| {:<22} | {:>10} | {:>12} | {:>12} | {:>9} | {:>9} | {:>11} |",
        "pattern", "cells", "ingest c/s", "scan c/s", "B/meas", "logical", "compression"
    );
    println!("|{:-<24}|{:->12}|{:->14}|{:->14}|{:->11}|{:->11}|{:->13}|", "", "", "", "", "", "", "");
    for pattern in SchemaPattern::ALL {
        let dir = tempfile::tempdir()?;
        let db = Options::default().durability(durability).open(dir.path())?;
        let t = db.create_table("balloons", [(pattern.family(), GcRule::none())])?;
        let rows: Vec<_> = w.events().flat_map(|e| pattern.mutations(&e)).collect();
        let cells = w.events_count() * pattern.cells_per_event();
        let started = Instant::now();
        for (key, mutations) in rows {
            t.mutate_row(key, mutations)?;
        }
        db.flush()?;
        let ingest = cells as f64 / started.elapsed().as_secs_f64();
        let stats = t.stats()?;
        let family = &stats.families[0];
        let started = Instant::now();
        let scanned: usize = t
            .read_rows(RowSet::all(), &Filter::pass_all())
            .into_iter()
            .map(|r| r.map(|r| r.cell_count()))
            .sum::<cellardb::Result<usize>>()?;
        let scan = scanned as f64 / started.elapsed().as_secs_f64();
        assert_eq!(scanned as u64, cells, "the scan reads back every cell written");
        println!(
            "| {:<22} | {:>10} | {:>12.0} | {:>12.0} | {:>9.2} | {:>8.1}M | {:>10.1}× |",
            pattern.name(),
            cells,
            ingest,
            scan,
            family.sst_bytes as f64 / measurements as f64,
            family.logical_bytes as f64 / 1e6,
            family.logical_bytes as f64 / family.sst_bytes as f64,
        );
    }
    println!();
    println!("B/meas: bytes of SSTables per measurement after a flush (no compaction yet).");
    Ok(())
}
