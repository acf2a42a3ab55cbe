//! `cellar lab`: the schema-pattern report (the project's main job).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use cellardb::{Compression, Durability, Options};
use cellardb_lab::workload::{SchemaPattern, Workload};
use cellardb_lab::{self as lab, Engine, LabConfig, PatternReport, Progress};

use crate::{Failure, Out, Outcome};

/// What to run and where to write the report.
#[derive(clap::Args)]
pub struct Args {
    /// Balloons in the workload.
    #[arg(long, default_value_t = 10)]
    balloons: u32,
    /// Days of one-minute events.
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// `buffered` (survives a process crash) or `sync` (survives power loss).
    #[arg(long, default_value = "buffered", value_parser = parse_durability)]
    durability: Durability,
    /// Bytes per data block.
    #[arg(long, default_value_t = 16 << 10)]
    block_size: usize,
    /// `zstd`, `zstd:LEVEL` or `none`.
    #[arg(long, default_value = "zstd:3", value_parser = parse_compression)]
    compression: Compression,
    /// Patterns to run, comma-separated (default: all five).
    #[arg(long, value_delimiter = ',', value_parser = parse_pattern)]
    patterns: Vec<SchemaPattern>,
    /// Runs of each point query in each form (fleet-minute and fleet-scan, which read every balloon, run a twentieth as often).
    #[arg(long, default_value_t = 100)]
    samples: usize,
    /// Seed of the query parameters.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Rounds: every pattern loaded and measured again on every engine,
    /// engines interleaved; figures are medians with their range.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where the report goes: report.md, report.csv and the charts.
    #[arg(long, default_value = "lab-report")]
    out: PathBuf,
    /// Where the databases are built (default: OUT/db); put it on the disk to measure.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also run every pattern on RocksDB, in the same run, and compare.
    #[cfg(feature = "rocksdb")]
    #[arg(long)]
    rocksdb: bool,
}

pub(crate) fn parse_durability(s: &str) -> Result<Durability, String> {
    match s {
        "buffered" => Ok(Durability::Buffered),
        "sync" => Ok(Durability::Sync),
        _ => Err("expected buffered or sync".into()),
    }
}

fn parse_compression(s: &str) -> Result<Compression, String> {
    match s.split_once(':') {
        None if s == "none" => Ok(Compression::None),
        None if s == "zstd" => Ok(Compression::Zstd { level: 3 }),
        Some(("zstd", level)) => {
            level.parse().map(|level| Compression::Zstd { level }).map_err(|_| format!("bad zstd level {level:?}"))
        }
        _ => Err("expected none, zstd or zstd:LEVEL".into()),
    }
}

fn parse_pattern(s: &str) -> Result<SchemaPattern, String> {
    SchemaPattern::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = SchemaPattern::ALL.iter().map(|p| p.name()).collect();
        format!("unknown pattern; expected one of {}", names.join(", "))
    })
}

pub fn run(args: &Args, out: &mut Out) -> Outcome {
    if args.balloons == 0 || args.days == 0 || args.balloons > 9000 {
        return Err(Failure::Usage("--balloons must be 1 to 9000 and --days at least 1".into()));
    }
    if args.rounds == 0 {
        return Err(Failure::Usage("--rounds must be at least 1".into()));
    }
    let patterns = if args.patterns.is_empty() { SchemaPattern::ALL.to_vec() } else { args.patterns.clone() };
    let dir = args.dir.clone().unwrap_or_else(|| args.out.join("db"));
    for d in [&args.out, &dir] {
        std::fs::create_dir_all(d).map_err(|e| Failure::Other(format!("cannot create {}: {e}", d.display())))?;
    }
    let options =
        Options::default().durability(args.durability).block_size(args.block_size).compression(args.compression);
    let config = LabConfig {
        workload: Workload::new(args.balloons, args.days),
        options,
        dir: dir.clone(),
        samples: args.samples,
        seed: args.seed,
        rounds: args.rounds,
    };
    let machine = lab::machine::describe(&dir);
    let mut progress = progress_printer();
    #[allow(unused_mut, reason = "RocksDB joins only with the rocksdb feature")]
    let mut engines = vec![Engine::Cellardb];
    #[cfg(feature = "rocksdb")]
    if args.rocksdb {
        engines.push(Engine::Rocksdb);
    }
    let reports = lab::run_rounds(&config, &patterns, &engines, &mut progress)?;
    eprintln!();
    let _ = std::fs::remove_dir(&dir);
    write_report(&args.out, &reports, &config, &machine)?;
    write!(out, "{}", lab::report::markdown(&reports, &config, &machine))?;
    writeln!(out, "\n(written to {}: report.md, report.csv and the charts)", args.out.display())?;
    Ok(())
}

fn write_report(
    dir: &std::path::Path,
    reports: &[PatternReport],
    config: &LabConfig,
    machine: &lab::machine::Machine,
) -> Outcome {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| Failure::Other(format!("cannot write {}: {e}", path.display())))
    };
    write("report.md", &lab::report::markdown(reports, config, machine))?;
    write("report.csv", &lab::report::csv(reports))?;
    for (name, svg) in lab::report::charts(reports) {
        write(name, &svg)?;
    }
    Ok(())
}

/// Prints progress on stderr: a line rewritten in place on a terminal, one
/// line per stage otherwise.
fn progress_printer() -> impl FnMut(Progress<'_>) {
    let terminal = std::io::stderr().is_terminal();
    let mut last_stage = String::new();
    move |p: Progress<'_>| {
        let stage = format!("{} {}", p.pattern.name(), p.stage);
        if terminal {
            let percent = (p.done * 100).checked_div(p.total).unwrap_or(100);
            eprint!("\r\x1b[2K{stage}: {percent}%");
        } else if stage != last_stage {
            eprintln!("{stage}");
        }
        last_stage = stage;
    }
}
