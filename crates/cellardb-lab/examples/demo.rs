//! Loads the weather-balloon workload into a fresh database once per schema
//! pattern and prints what each costs: ingest rate with compaction running
//! in the background, write amplification, bytes on disk after a full
//! compaction, peak memory, time writers stalled, and the rate of a full
//! scan. Built with `--features rocksdb`, runs the same on RocksDB
//! alongside (zstd level 3, 4 KiB blocks, leveled, each cell under the
//! standard Bigtable key; see `cellardb_lab::baseline`).
//!
//! ```text
//! cargo run --release -p cellardb-lab --example demo [-- [BALLOONS DAYS] [--sync] [--strategy leveled|time-window|both]]
//! ```
//! Defaults: 10 balloons × 1 day, buffered durability, leveled compaction.
//!
//! Each (engine, pattern) runs in a process of its own, so that its peak
//! memory is its own: the parent re-runs this binary with `--one`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use cellardb::{CompactionStrategy, Durability, Filter, GcRule, Mutation, Options, RowSet};
use cellardb_lab::workload::{SchemaPattern, Workload};

type DynResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Time-window compaction's window: a day of cell timestamps.
const DAY_MICROS: i64 = 86_400_000_000;

/// What one engine did with one pattern.
#[derive(Debug, Default)]
struct Figures {
    cells: u64,
    ingest_secs: f64,
    scan_secs: f64,
    /// Bytes written to disk (log, flushes, compactions) per logical byte,
    /// by the end of the ingest (background compaction only).
    write_amp_ingest: f64,
    /// The same after the full compaction.
    write_amp_total: f64,
    /// Allocated bytes of the directory after full compaction and close,
    /// write-ahead log excluded.
    disk_bytes: u64,
    logical_bytes: u64,
    /// Peak anonymous memory (heap) above what the process held before
    /// opening the database (the workload, generated in advance).
    peak_memory: u64,
    /// Peak resident size above the same, mapped file pages included.
    peak_rss: u64,
    stall_secs: f64,
}

impl Figures {
    fn encode(&self) -> String {
        format!(
            "figures {} {} {} {} {} {} {} {} {} {}",
            self.cells,
            self.ingest_secs,
            self.scan_secs,
            self.write_amp_ingest,
            self.write_amp_total,
            self.disk_bytes,
            self.logical_bytes,
            self.peak_memory,
            self.peak_rss,
            self.stall_secs
        )
    }

    fn decode(line: &str) -> Option<Figures> {
        let v: Vec<&str> = line.strip_prefix("figures ")?.split(' ').collect();
        let [cells, ingest, scan, wa_ingest, wa_total, disk, logical, peak, rss, stall] = v[..] else { return None };
        Some(Figures {
            cells: cells.parse().ok()?,
            ingest_secs: ingest.parse().ok()?,
            scan_secs: scan.parse().ok()?,
            write_amp_ingest: wa_ingest.parse().ok()?,
            write_amp_total: wa_total.parse().ok()?,
            disk_bytes: disk.parse().ok()?,
            logical_bytes: logical.parse().ok()?,
            peak_memory: peak.parse().ok()?,
            peak_rss: rss.parse().ok()?,
            stall_secs: stall.parse().ok()?,
        })
    }
}

/// The settings of a run.
#[derive(Debug, Clone, Copy)]
struct Settings {
    balloons: u32,
    days: u32,
    durability: Durability,
}

fn main() -> DynResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        return run_one(&args[1..]);
    }
    let numbers: Vec<u32> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let settings = Settings {
        balloons: numbers.first().copied().unwrap_or(10),
        days: numbers.get(1).copied().unwrap_or(1),
        durability: if args.iter().any(|a| a == "--sync") { Durability::Sync } else { Durability::Buffered },
    };
    let strategies: Vec<&str> = match args.iter().position(|a| a == "--strategy").and_then(|i| args.get(i + 1)) {
        Some(s) if s == "both" => vec!["leveled", "time-window"],
        Some(s) if s == "leveled" || s == "time-window" => vec![s.as_str()],
        Some(s) => return Err(format!("unknown strategy {s:?}: leveled, time-window or both").into()),
        None => vec!["leveled"],
    };
    let w = Workload::new(settings.balloons, settings.days);
    let measurements = w.events_count() * 4;
    println!(
        "balloon workload: {} balloons × {} days = {} events, {measurements} measurements, {:?}",
        settings.balloons,
        settings.days,
        w.events_count(),
        settings.durability
    );
    println!();
    println!(
        "| {:<21} | {:<22} | {:>10} | {:>10} | {:>5} | {:>5} | {:>6} | {:>6} | {:>7} | {:>7} | {:>6} | {:>10} |",
        "engine",
        "pattern",
        "cells",
        "ingest c/s",
        "WA in",
        "WA",
        "B/meas",
        "ratio",
        "heap MB",
        "RSS MB",
        "stall",
        "scan c/s"
    );
    println!(
        "|{:-<23}|{:-<24}|{:->12}|{:->12}|{:->7}|{:->7}|{:->8}|{:->8}|{:->9}|{:->9}|{:->8}|{:->12}|",
        "", "", "", "", "", "", "", "", "", "", "", ""
    );
    let mut engines: Vec<&str> = strategies.clone();
    if cfg!(feature = "rocksdb") {
        engines.push("rocksdb");
    }
    for pattern in SchemaPattern::ALL {
        for &engine in &engines {
            let f = run_child(engine, pattern, settings)?;
            let label = if engine == "rocksdb" { "rocksdb 11.8".to_owned() } else { format!("cellardb {engine}") };
            print_row(&label, pattern, &f, measurements);
        }
    }
    println!();
    println!("ingest: writes and a final flush, compaction running in the background.");
    println!("WA in: bytes written (log, flushes, compactions) per logical byte by the end of the ingest; WA: the");
    println!("same after a full compaction. B/meas: allocated bytes of the directory after full compaction and");
    println!("close, write-ahead log excluded, per measurement. ratio: logical bytes / those bytes. heap MB: peak");
    println!("anonymous memory above the workload the run holds; RSS MB: peak resident size above the same, pages");
    println!("of mapped files (cellardb's log and SSTables) included. stall: seconds writers were slowed or stopped.");
    Ok(())
}

fn run_child(engine: &str, pattern: SchemaPattern, s: Settings) -> DynResult<Figures> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--one", engine, pattern.name(), &s.balloons.to_string(), &s.days.to_string()])
        .arg(if s.durability == Durability::Sync { "sync" } else { "buffered" })
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{engine} on {}: {}", pattern.name(), String::from_utf8_lossy(&out.stderr)).into());
    }
    stdout.lines().find_map(Figures::decode).ok_or_else(|| format!("{engine}: no figures in {stdout:?}").into())
}

/// The child: one engine, one pattern.
fn run_one(args: &[String]) -> DynResult<()> {
    let [engine, pattern, balloons, days, durability] = args else { return Err("--one: bad arguments".into()) };
    let pattern = SchemaPattern::ALL.into_iter().find(|p| p.name() == pattern).ok_or("unknown pattern")?;
    let w = Workload::new(balloons.parse()?, days.parse()?);
    let durability = if durability == "sync" { Durability::Sync } else { Durability::Buffered };
    let rows: Vec<(String, Vec<Mutation>)> = w.events().flat_map(|e| pattern.mutations(&e)).collect();
    // The first clone of a mutation's bytes allocates a shared header that
    // then lives as long as the workload: take it now, so that the memory
    // measured is the engine's.
    rows.iter().flat_map(|(_, ms)| ms).for_each(|m| drop(m.clone()));
    // Above the start: the workload's rows are held beside the engine.
    let watch = cellardb_lab::memory::Watch::start();
    let dir = tempfile::tempdir()?;
    let mut f = match engine.as_str() {
        "leveled" => run_cellardb(dir.path(), pattern, &rows, durability, CompactionStrategy::Leveled)?,
        "time-window" => {
            let strategy = CompactionStrategy::TimeWindow { window_micros: DAY_MICROS };
            run_cellardb(dir.path(), pattern, &rows, durability, strategy)?
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => run_rocksdb(dir.path(), &rows, durability)?,
        other => return Err(format!("unknown engine {other}").into()),
    };
    if let Some(p) = watch.map(cellardb_lab::memory::Watch::finish) {
        f.peak_memory = p.heap.saturating_sub(p.heap_at_start);
        f.peak_rss = p.resident.saturating_sub(p.resident_at_start);
    }
    f.disk_bytes = allocated_bytes_without_log(dir.path())?;
    println!("{}", f.encode());
    Ok(())
}

fn print_row(engine: &str, pattern: SchemaPattern, f: &Figures, measurements: u64) {
    println!(
        "| {:<21} | {:<22} | {:>10} | {:>10.0} | {:>5.2} | {:>5.2} | {:>6.2} | {:>5.1}× | {:>7.0} | {:>7.0} | {:>6.2} | {:>10.0} |",
        engine,
        pattern.name(),
        f.cells,
        f.cells as f64 / f.ingest_secs,
        f.write_amp_ingest,
        f.write_amp_total,
        f.disk_bytes as f64 / measurements as f64,
        f.logical_bytes as f64 / f.disk_bytes as f64,
        f.peak_memory as f64 / 1e6,
        f.peak_rss as f64 / 1e6,
        f.stall_secs,
        f.cells as f64 / f.scan_secs,
    );
}

fn run_cellardb(
    dir: &Path,
    pattern: SchemaPattern,
    rows: &[(String, Vec<Mutation>)],
    durability: Durability,
    strategy: CompactionStrategy,
) -> DynResult<Figures> {
    let db = Options::default().durability(durability).compaction_strategy(strategy).open(dir)?;
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())])?;
    let started = Instant::now();
    for (key, mutations) in rows {
        t.mutate_row(key, mutations.iter().cloned())?;
    }
    db.flush()?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let write_amp_ingest = db.stats()?.write_amplification;
    db.compact_table("balloons")?;
    let stats = db.stats()?;
    let family = t.stats()?.families.remove(0);
    let started = Instant::now();
    let mut cells = 0u64;
    for row in t.read_rows(RowSet::all(), &Filter::pass_all()) {
        cells += row?.cell_count() as u64;
    }
    let scan_secs = started.elapsed().as_secs_f64();
    assert_eq!(cells, family.cells, "the scan reads back every cell written");
    db.close()?;
    Ok(Figures {
        cells,
        ingest_secs,
        scan_secs,
        write_amp_ingest,
        write_amp_total: stats.write_amplification,
        logical_bytes: family.logical_bytes,
        stall_secs: stats.stall_time.as_secs_f64(),
        ..Figures::default()
    })
}

/// Logical bytes as cellardb counts them: row, family, qualifier, value
/// and 8 bytes of timestamp per cell.
#[cfg(feature = "rocksdb")]
fn logical_bytes(rows: &[(String, Vec<Mutation>)]) -> u64 {
    let cell = |row: &str, m: &Mutation| match m {
        Mutation::SetCell { family, qualifier, value, .. } => {
            (row.len() + family.len() + qualifier.len() + value.len() + 8) as u64
        }
        _ => 0,
    };
    rows.iter().flat_map(|(row, ms)| ms.iter().map(move |m| cell(row, m))).sum()
}

#[cfg(feature = "rocksdb")]
fn run_rocksdb(dir: &Path, rows: &[(String, Vec<Mutation>)], durability: Durability) -> DynResult<Figures> {
    let logical = logical_bytes(rows);
    // cellardb's block-cache budget, as in the lab.
    let cache = Options::default().get_block_cache_size();
    let db = cellardb_lab::baseline::RocksBaseline::open(dir, durability, cache)?;
    let started = Instant::now();
    for (key, mutations) in rows {
        db.mutate_row(key.as_bytes(), mutations)?;
    }
    db.flush()?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let written = |w: cellardb_lab::baseline::RocksWrites| (w.wal_bytes + w.flush_bytes + w.compaction_bytes) as f64;
    let write_amp_ingest = written(db.writes()) / logical as f64;
    db.compact();
    let writes = db.writes();
    let started = Instant::now();
    let cells = db.scan_count()?;
    let scan_secs = started.elapsed().as_secs_f64();
    Ok(Figures {
        cells,
        ingest_secs,
        scan_secs,
        write_amp_ingest,
        write_amp_total: written(writes) / logical as f64,
        logical_bytes: logical,
        stall_secs: writes.stall_micros as f64 / 1e6,
        ..Figures::default()
    })
}

/// Allocated bytes of the files in `dir`, write-ahead logs (`*.log`) excluded.
fn allocated_bytes_without_log(dir: &Path) -> DynResult<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.path().extension().is_some_and(|x| x == "log") {
            continue;
        }
        total += entry.metadata()?.blocks() * 512;
    }
    Ok(total)
}
