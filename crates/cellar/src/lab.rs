//! `cellar lab`: the schema-pattern report (the project's main job).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use cellardb::{Compression, Durability, Options};
use cellardb_lab::measure::{SpecConfig, Step};
use cellardb_lab::spec::{Spec, time as spec_time};
use cellardb_lab::workload::{SchemaPattern, Workload};
use cellardb_lab::{self as lab, Engine, LabConfig, PatternReport, Progress};

use crate::{Failure, Out, Outcome};

/// What to run and where to write the report.
#[derive(clap::Args)]
pub struct Args {
    /// A schema spec (TOML, `docs/lab.md`): your data, key designs and
    /// queries. Without it, the balloon workload's schema patterns.
    #[arg(long)]
    spec: Option<PathBuf>,
    /// With --spec: the spec's entities, instead of its count.
    #[arg(long)]
    entities: Option<u32>,
    /// With --spec: how long the data lasts from its start, instead of the
    /// spec's duration (`7d`, `2h`).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<i64>,
    /// With --spec: only these designs, comma-separated (default: every one).
    #[arg(long, value_delimiter = ',')]
    designs: Vec<String>,
    /// With --spec: keep the last round's databases (in --dir) for `cellar` to inspect.
    #[arg(long)]
    keep: bool,
    /// With --spec: run the designs on a Bigtable endpoint (`cellar serve`,
    /// Google's emulator; plaintext) instead of an embedded database.
    #[arg(long, value_name = "HOST:PORT")]
    endpoint: Option<String>,
    /// With --endpoint: the project its tables go under.
    #[arg(long, default_value = "lab")]
    project: String,
    /// With --endpoint: the instance its tables go under.
    #[arg(long, default_value = "lab")]
    instance: String,
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
    /// Entries per data block at most (default: no bound).
    #[arg(long)]
    block_entries: Option<usize>,
    /// Bytes of a zstd dictionary for each compacted file (default: none;
    /// 256 bytes to 64 KiB).
    #[arg(long)]
    dictionary: Option<usize>,
    /// `zstd`, `zstd:LEVEL` or `none`.
    #[arg(long, default_value = "zstd:3", value_parser = parse_compression)]
    compression: Compression,
    /// Patterns to run, comma-separated (default: all five).
    #[arg(long, value_delimiter = ',', value_parser = parse_pattern)]
    patterns: Vec<SchemaPattern>,
    /// Runs of each point query in each form (with a spec: each query of one entity).
    #[arg(long, default_value_t = 100)]
    samples: usize,
    /// Runs of each fleet query in each form (fleet-minute and fleet-scan, which read every balloon;
    /// with a spec: each query across every entity). Default: a twentieth of --samples, at least 3.
    #[arg(long)]
    fleet_samples: Option<usize>,
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
    /// Not for users: serve one engine's database of one pattern for a
    /// parent `cellar lab` run with the same arguments (each engine's
    /// database runs in a process of its own; `lab::worker`).
    #[arg(long, hide = true, value_name = "ENGINE:PATTERN", value_parser = parse_worker)]
    worker: Option<(Engine, SchemaPattern)>,
}

fn parse_duration(s: &str) -> Result<i64, String> {
    spec_time::parse_duration(s).and_then(|d| if d > 0 { Ok(d) } else { Err("a duration longer than zero".into()) })
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

fn parse_worker(s: &str) -> Result<(Engine, SchemaPattern), String> {
    let (engine, pattern) = s.split_once(':').ok_or("expected ENGINE:PATTERN")?;
    let engine = Engine::from_name(engine).ok_or_else(|| format!("no engine {engine:?} in this build"))?;
    Ok((engine, parse_pattern(pattern)?))
}

fn parse_pattern(s: &str) -> Result<SchemaPattern, String> {
    SchemaPattern::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = SchemaPattern::ALL.iter().map(|p| p.name()).collect();
        format!("unknown pattern; expected one of {}", names.join(", "))
    })
}

/// `--rounds` and `--fleet-samples`, which mean nothing at 0.
fn check_runs(args: &Args) -> Result<(), Failure> {
    if args.rounds == 0 {
        return Err(Failure::Usage("--rounds must be at least 1".into()));
    }
    if args.fleet_samples == Some(0) {
        return Err(Failure::Usage("--fleet-samples must be at least 1".into()));
    }
    Ok(())
}

pub fn run(args: &Args, out: &mut Out) -> Outcome {
    if let Some(path) = &args.spec {
        return run_spec(args, path, out);
    }
    if args.entities.is_some()
        || args.duration.is_some()
        || args.keep
        || args.endpoint.is_some()
        || !args.designs.is_empty()
    {
        return Err(Failure::Usage("--entities, --duration, --designs, --keep and --endpoint go with --spec".into()));
    }
    if args.balloons == 0 || args.days == 0 || args.balloons > 9000 {
        return Err(Failure::Usage("--balloons must be 1 to 9000 and --days at least 1".into()));
    }
    check_runs(args)?;
    let patterns = if args.patterns.is_empty() { SchemaPattern::ALL.to_vec() } else { args.patterns.clone() };
    let dir = args.dir.clone().unwrap_or_else(|| args.out.join("db"));
    let options = engine_options(args)?;
    for d in [&args.out, &dir] {
        std::fs::create_dir_all(d).map_err(|e| Failure::Other(format!("cannot create {}: {e}", d.display())))?;
    }
    let config = LabConfig {
        workload: Workload::new(args.balloons, args.days),
        options,
        dir: dir.clone(),
        samples: args.samples,
        fleet_samples: args.fleet_samples,
        seed: args.seed,
        rounds: args.rounds,
    };
    if let Some((engine, pattern)) = args.worker {
        return Ok(lab::worker::serve_stdio(&config, engine, pattern)?);
    }
    let machine = lab::machine::describe(&dir);
    let bars = Bars::new();
    let mut progress = |p: Progress<'_>| bars.show(&format!("{} {}", p.pattern.name(), p.stage), p.done, p.total);
    #[allow(unused_mut, reason = "RocksDB joins only with the rocksdb feature")]
    let mut engines = vec![Engine::Cellardb];
    #[cfg(feature = "rocksdb")]
    if args.rocksdb {
        engines.push(Engine::Rocksdb);
    }
    // Each engine's database in a process of its own: this program again,
    // with these arguments and the engine and pattern to serve.
    let program = std::env::current_exe().map_err(|e| Failure::Other(format!("cannot find this program: {e}")))?;
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let worker = |engine: Engine, pattern: SchemaPattern| {
        let mut command = std::process::Command::new(&program);
        command.args(&arguments).arg("--worker").arg(format!("{}:{}", engine.name(), pattern.name()));
        command
    };
    let reports = lab::run_rounds(&config, &patterns, &engines, lab::Processes::Workers(&worker), &mut progress)?;
    bars.finish();
    let _ = std::fs::remove_dir(&dir);
    write_report(&args.out, &reports, &config, &machine)?;
    write!(out, "{}", lab::report::markdown(&reports, &config, &machine))?;
    writeln!(out, "\n(written to {}: report.md, report.csv, pace.csv and the charts)", args.out.display())?;
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
    write("pace.csv", &lab::report::pace_csv(reports))?;
    for (name, svg) in lab::report::charts(reports) {
        write(name, &svg)?;
    }
    Ok(())
}

/// `cellar lab --spec FILE`: every design of the spec, in rounds, and a
/// report of HTML, markdown and CSV.
/// The spec in `path`, resized and cut to the designs `args` name, once
/// the arguments that go with it are checked.
fn read_spec(args: &Args, path: &std::path::Path) -> Result<Spec, Failure> {
    if !args.patterns.is_empty() {
        return Err(Failure::Usage("--patterns is for the balloon lab; a spec names its own designs".into()));
    }
    check_runs(args)?;
    if args.entities == Some(0) {
        return Err(Failure::Usage("--entities must be at least 1".into()));
    }
    let mut spec =
        Spec::from_file(path).map_err(|e| Failure::Usage(e.to_string()))?.resized(args.entities, args.duration);
    if !args.designs.is_empty() {
        if let Some(unknown) = args.designs.iter().find(|d| spec.design(d).is_none()) {
            let names: Vec<&str> = spec.designs.iter().map(|d| d.name.as_str()).collect();
            return Err(Failure::Usage(format!(
                "--designs: {} has no design {unknown:?}; it has {}",
                path.display(),
                names.join(", ")
            )));
        }
        spec.designs.retain(|d| args.designs.contains(&d.name));
    }
    spec.check_size().map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    Ok(spec)
}

fn run_spec(args: &Args, path: &std::path::Path, out: &mut Out) -> Outcome {
    let spec = read_spec(args, path)?;
    let dir = args.dir.clone().unwrap_or_else(|| args.out.join("db"));
    let machine = lab::machine::describe(&dir);
    if args.endpoint.is_some() && args.keep {
        return Err(Failure::Usage("--keep keeps local databases; an endpoint's tables stay on it".into()));
    }
    let need = if args.endpoint.is_some() { 0 } else { lab::measure::estimate_disk(&spec, args.keep) };
    if let Some(free) = machine.free_bytes
        && need > free
    {
        return Err(Failure::Other(format!(
            "{}: the spec would write about {:.1} GB to {} (its designs' cells twice over: log and tables), which has {:.1} GB free; \
                 nothing was written. Use --entities or --duration to run it smaller, or --dir on a larger disk.",
            path.display(),
            need as f64 / 1e9,
            dir.display(),
            free as f64 / 1e9
        )));
    }
    let options = engine_options(args)?;
    // An endpoint's tables live on it: only a local run makes databases here.
    if args.endpoint.is_none() {
        std::fs::create_dir_all(&dir).map_err(|e| Failure::Other(format!("cannot create {}: {e}", dir.display())))?;
    }
    let config = SpecConfig {
        spec,
        options,
        dir: dir.clone(),
        samples: args.samples,
        fleet_samples: args.fleet_samples,
        seed: args.seed,
        rounds: args.rounds,
        keep: args.keep,
    };
    let bars = Bars::new();
    let mut progress =
        |s: Step<'_>| bars.show(&format!("round {} {} {}", s.round + 1, s.design, s.stage), s.done, s.total);
    let stopped = |e: cellardb::Error| Failure::Other(format!("the lab stopped; no report was written: {e}"));
    let reports = match &args.endpoint {
        None => {
            let open = lab::measure::open_local(&config);
            lab::measure::run_spec(&config, "cellardb", &open, &mut progress).map_err(stopped)?
        }
        Some(address) => {
            let endpoint = lab::endpoint::Endpoint {
                address: address.clone(),
                project: args.project.clone(),
                instance: args.instance.clone(),
            };
            let open = lab::endpoint::open_endpoint(&config, &endpoint).map_err(stopped)?;
            lab::measure::run_spec(&config, &endpoint.name(), &open, &mut progress).map_err(stopped)?
        }
    };
    bars.finish();
    if !args.keep && args.endpoint.is_none() {
        let _ = std::fs::remove_dir(&dir);
    }
    let spec = &config.spec;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure::Other(format!("cannot create {}: {e}", args.out.display())))?;
    let write = |name: &str, text: &str| {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| Failure::Other(format!("cannot write {}: {e}", path.display())))
    };
    let csv = lab::summary::csv(spec, &reports).map_err(|e| Failure::Other(format!("cannot write the CSV: {e}")))?;
    write("report.csv", &csv)?;
    write("report.md", &lab::summary::markdown(spec, &reports, &config, &machine))?;
    write("report.html", &lab::summary::html(spec, &reports, &config, &machine))?;
    for (name, svg) in lab::summary::charts(spec, &reports) {
        write(name, &svg)?;
    }
    write!(out, "{}", lab::summary::markdown(spec, &reports, &config, &machine))?;
    writeln!(out, "\n(written to {}: report.html, report.md, report.csv and the charts)", args.out.display())?;
    if args.keep {
        writeln!(
            out,
            "(databases kept in {}: try `cellar ls --dir {}/{}-{}`)",
            dir.display(),
            dir.display(),
            spec.name,
            spec.designs[0].name
        )?;
    }
    Ok(())
}

/// Progress on stderr: on a terminal, a bar per stage with its count, rate
/// and time left; otherwise a line per stage.
struct Bars {
    bar: Option<indicatif::ProgressBar>,
    stage: std::cell::RefCell<String>,
}

impl Bars {
    fn new() -> Bars {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:40} [{bar:30}] {human_pos}/{human_len} {per_sec} ({eta} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar
        });
        Bars { bar, stage: std::cell::RefCell::new(String::new()) }
    }

    fn show(&self, stage: &str, done: u64, total: u64) {
        let mut last = self.stage.borrow_mut();
        let new_stage = *last != stage;
        match &self.bar {
            Some(bar) => {
                if new_stage {
                    bar.reset();
                    bar.set_message(stage.to_owned());
                    bar.set_length(total);
                }
                bar.set_position(done);
            }
            None if new_stage => eprintln!("{stage}"),
            None => {}
        }
        if new_stage {
            stage.clone_into(&mut last);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The engine's options the arguments ask for.
fn engine_options(args: &Args) -> Result<Options, Failure> {
    let mut options =
        Options::default().durability(args.durability).block_size(args.block_size).compression(args.compression);
    if let Some(bytes) = args.dictionary {
        if !(256..=64 << 10).contains(&bytes) {
            return Err(Failure::Usage("--dictionary takes 256 bytes to 64 KiB (65536)".into()));
        }
        options = options.compression_dictionary(bytes);
    }
    match args.block_entries {
        Some(0) => Err(Failure::Usage("--block-entries must be at least 1".into())),
        Some(entries) => Ok(options.block_entries(entries)),
        None => Ok(options),
    }
}
