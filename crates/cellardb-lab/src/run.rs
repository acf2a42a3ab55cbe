//! Running one pattern: ingest, flush, full compaction, queries.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ingest::{self, Ingest};
use crate::pace::Pace;
use crate::queries::{CellRef, Form, Plan, QueryKind, read_cellardb};
use crate::timing::{self, FormTiming};
use crate::worker::Worker;
use crate::workload::{SchemaPattern, SplitMix64, Workload};
use cellardb::{Db, Error, GcRule, Mutation, Options, Result, Table};

/// What a lab run measures, and how.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// The data set.
    pub workload: Workload,
    /// Engine options (durability, block size, compression).
    pub options: Options,
    /// Where each pattern's database is created (one subdirectory each,
    /// removed afterwards).
    pub dir: PathBuf,
    /// Runs of each point query (`balloon-week`, `metric-hour`, `latest`)
    /// in each form; the full scan runs a hundredth as often (at least 3).
    pub samples: usize,
    /// Runs of each fleet query, which reads every balloon, in each form
    /// (`None`: a twentieth of `samples`, at least 3). Set apart so that
    /// point queries can run often enough for a steady p99 where a fleet
    /// query's natural form is a scan of the whole table.
    pub fleet_samples: Option<usize>,
    /// Seed of the query parameters.
    pub seed: u64,
    /// Rounds: each loads every pattern afresh in every engine and measures
    /// it again, engines interleaved ([`run_rounds`]).
    pub rounds: usize,
}

/// Where a run is, for progress reports.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The pattern.
    pub pattern: SchemaPattern,
    /// `ingest`, `flush`, `compact`, or a query's name.
    pub stage: &'a str,
    /// Work done in this stage.
    pub done: u64,
    /// Work in this stage.
    pub total: u64,
}

/// One query's figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueryReport {
    /// Which query.
    pub kind: QueryKind,
    /// In which form.
    pub form: Form,
    /// Times it ran, each with other parameters.
    pub runs: usize,
    /// Median latency.
    pub p50: Duration,
    /// 99th-percentile latency (the slowest run when fewer than 100).
    pub p99: Duration,
    /// Cells the engine returned per run, on average.
    pub cells_read: f64,
    /// Measurements returned per run, on average.
    pub measurements: f64,
    /// How the machine ran over the form ([`Pace`]): whether a slow form
    /// was the machine's or the engine's.
    pub pace: Option<Pace>,
}

/// Everything `workload.md` asks a report to state for one pattern.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PatternReport {
    /// The pattern.
    pub pattern: SchemaPattern,
    /// The engine measured (`cellardb`, or `rocksdb` for the baseline);
    /// not serialized (a worker's parent knows which engine it ran).
    #[serde(skip)]
    pub engine: &'static str,
    /// The round, from 0.
    pub round: usize,
    /// Events written.
    pub events: u64,
    /// Cells written.
    pub cells: u64,
    /// Measurements in the data (4 per event).
    pub measurements: u64,
    /// Σ row key + family + qualifier + value + 8 over the cells written.
    pub logical_bytes: u64,
    /// Bytes of the SSTables (allocated on disk) after the memtables are flushed.
    pub bytes_after_flush: u64,
    /// Bytes of the SSTables and manifest (allocated on disk) after a full
    /// compaction and close; the write-ahead log excluded.
    pub bytes_after_compaction: u64,
    /// Wall time of the ingest: the engine's writes of every event, before
    /// the final flush (making the events is not counted).
    pub ingest: Duration,
    /// Wall time of the writes of the ingest's first tenth of events and
    /// of its last tenth: whether the rate holds as the data grows.
    pub ingest_tenths: (Duration, Duration),
    /// Time writers waited for flushes or compactions (write stalls), where
    /// the engine counts it.
    pub stall: Option<Duration>,
    /// Bytes written to disk (log, flushes, compactions) per logical byte.
    pub write_amplification: f64,
    /// Every query in every form.
    pub queries: Vec<QueryReport>,
}

impl PatternReport {
    /// Bytes on disk after full compaction per measurement.
    pub fn bytes_per_measurement(&self) -> f64 {
        self.bytes_after_compaction as f64 / self.measurements.max(1) as f64
    }

    /// Logical bytes per byte on disk after full compaction.
    pub fn compression_ratio(&self) -> f64 {
        self.logical_bytes as f64 / self.bytes_after_compaction.max(1) as f64
    }

    /// Events written per second of ingest.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.ingest.as_secs_f64().max(1e-9)
    }

    /// Cells written per second of ingest.
    pub fn cells_per_sec(&self) -> f64 {
        self.cells as f64 / self.ingest.as_secs_f64().max(1e-9)
    }

    /// Events written per second over the ingest's first tenth and over its
    /// last tenth.
    pub fn tenth_events_per_sec(&self) -> (f64, f64) {
        let tenth = (self.events / 10).max(1) as f64;
        let rate = |d: Duration| tenth / d.as_secs_f64().max(1e-9);
        (rate(self.ingest_tenths.0), rate(self.ingest_tenths.1))
    }

    /// The last tenth's ingest rate over the first tenth's: 1.0 when the
    /// rate holds to the end, lower when it decays.
    pub fn ingest_decay(&self) -> f64 {
        let (first, last) = self.tenth_events_per_sec();
        last / first.max(1e-9)
    }

    /// The figures of query `kind` in `form`.
    pub fn query(&self, kind: QueryKind, form: Form) -> Option<&QueryReport> {
        self.queries.iter().find(|q| q.kind == kind && q.form == form)
    }
}

/// What the lab needs of an engine: cellardb here, RocksDB in
/// `lab::rocksdb` behind the `rocksdb` feature. Each call is what a user of
/// that engine would do; the runner times and measures around them.
pub(crate) trait LabEngine {
    /// Writes one event's row mutations: each row atomically.
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()>;
    /// Flushes every memtable to SSTables.
    fn flush(&mut self) -> Result<()>;
    /// Compacts everything into the bottom level (GC applied).
    fn compact(&mut self) -> Result<()>;
    /// Bytes written to disk so far: log, flushes, compactions.
    fn bytes_written(&self) -> Result<u64>;
    /// Time writers have waited for flushes or compactions so far, if the
    /// engine counts it.
    fn stall_time(&self) -> Option<Duration>;
    /// Reads `plan` as a user of the engine would, handing every cell to
    /// `sink`, borrowed.
    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<()>;
    /// Closes the database, so that what is on disk is all there is.
    fn close(self: Box<Self>) -> Result<()>;
}

/// cellardb under the lab.
struct Cellar {
    db: Db,
    table: Table,
}

impl LabEngine for Cellar {
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()> {
        self.table.mutate_rows(rows).into_iter().collect()
    }

    fn flush(&mut self) -> Result<()> {
        self.db.flush()
    }

    fn compact(&mut self) -> Result<()> {
        self.db.compact_table(TABLE)
    }

    fn bytes_written(&self) -> Result<u64> {
        let s = self.db.stats()?;
        Ok(s.wal_bytes_written + s.flush_bytes_written + s.compaction_bytes_written)
    }

    fn stall_time(&self) -> Option<Duration> {
        self.db.stats().ok().map(|s| s.stall_time)
    }

    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<()> {
        read_cellardb(&self.table, plan, sink)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }
}

/// The table every pattern is loaded into.
const TABLE: &str = "balloons";

/// Loads `pattern` into a fresh cellardb database under `config.dir`,
/// flushes and fully compacts it, times the queries (checking every run
/// against the generator), and removes the database.
///
/// # Errors
/// The engine's errors; `Error::InvalidArgument` if a query returns other
/// measurements than the generator says (a bug, never a timing artefact).
pub fn run_pattern(
    config: &LabConfig,
    pattern: SchemaPattern,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<PatternReport> {
    let (name, dir, engine) = open_cellardb(config, pattern)?;
    measure(config, pattern, name, dir, engine, progress)
}

/// A fresh cellardb database for `pattern` under `config.dir`, with its table.
fn open_cellardb(config: &LabConfig, pattern: SchemaPattern) -> Result<(&'static str, PathBuf, Box<dyn LabEngine>)> {
    let dir = config.dir.join(format!("cellardb-{}", pattern.name()));
    remove_dir(&dir)?;
    let db = config.options.clone().open(&dir)?;
    let table = db.create_table(TABLE, [(pattern.family(), GcRule::none())])?;
    Ok(("cellardb", dir, Box::new(Cellar { db, table })))
}

/// Measures `engine`, whose fresh database is in `dir`, on `pattern`, and
/// removes the database.
pub(crate) fn measure(
    config: &LabConfig,
    pattern: SchemaPattern,
    name: &'static str,
    dir: PathBuf,
    engine: Box<dyn LabEngine>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<PatternReport> {
    let mut loaded = [Entrant::Here(Loaded::new(name, dir, engine, config, pattern))];
    let measured = load(config, pattern, &mut loaded, progress)
        .and_then(|()| time_queries(config, pattern, &mut loaded, progress));
    let [loaded] = loaded;
    let report = loaded.finish();
    measured.and(report)
}

/// An engine's database while a round measures it: loaded, then queried
/// (by itself or in turns with the other engines), then closed.
pub(crate) struct Loaded {
    engine: Box<dyn LabEngine>,
    dir: PathBuf,
    report: PatternReport,
    /// The query parameters: every engine draws the same sequence.
    random: SplitMix64,
    /// The ingest under way, between its turns (boxed, as `timing`).
    ingest: Option<Box<Ingest>>,
    /// Whether the ingest has ended and the database been flushed and
    /// compacted: no more events go in.
    settled: bool,
    /// The form being timed, between its batches (boxed: a database
    /// between forms carries none).
    timing: Option<Box<FormTiming>>,
}

impl Loaded {
    fn new(
        name: &'static str,
        dir: PathBuf,
        engine: Box<dyn LabEngine>,
        config: &LabConfig,
        pattern: SchemaPattern,
    ) -> Loaded {
        let report = PatternReport {
            pattern,
            engine: name,
            round: 0,
            events: 0,
            cells: 0,
            measurements: 0,
            logical_bytes: 0,
            bytes_after_flush: 0,
            bytes_after_compaction: 0,
            ingest: Duration::ZERO,
            ingest_tenths: (Duration::ZERO, Duration::ZERO),
            stall: None,
            write_amplification: 0.0,
            queries: Vec::new(),
        };
        Loaded { engine, dir, report, random: SplitMix64(config.seed), ingest: None, settled: false, timing: None }
    }

    /// A fresh database of `engine` for `pattern` under `config.dir`.
    pub(crate) fn open(config: &LabConfig, engine: Engine, pattern: SchemaPattern) -> Result<Loaded> {
        let (name, dir, engine) = match engine {
            Engine::Cellardb => open_cellardb(config, pattern)?,
            #[cfg(feature = "rocksdb")]
            Engine::Rocksdb => crate::baseline::open(config, pattern)?,
        };
        Ok(Loaded::new(name, dir, engine, config, pattern))
    }

    /// Begins timing query `kind` in `form` ([`FormTiming::begin`]).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if another form is being timed.
    pub(crate) fn begin(&mut self, (kind, form): (QueryKind, Form)) -> Result<()> {
        if let Some((k, f)) = self.timing.as_ref().map(|t| t.query()) {
            return Err(Error::InvalidArgument(format!(
                "{} ({}) begun while {} ({}) is being timed",
                kind.name(),
                form.name(),
                k.name(),
                f.name()
            )));
        }
        self.timing = Some(Box::new(FormTiming::begin((kind, form))));
        Ok(())
    }

    /// Times a batch of `runs` runs of the form begun ([`FormTiming::run`]),
    /// their parameters the next ones of this database's sequence.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if no form was begun; a run's error.
    pub(crate) fn time(&mut self, config: &LabConfig, pattern: SchemaPattern, runs: usize) -> Result<()> {
        let timing = self.timing.as_mut().ok_or_else(|| no_form("timed"))?;
        timing.run(pattern, &config.workload, &*self.engine, runs, &mut self.random)
    }

    /// Ends the form begun, adding its figures to the report.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if no form was begun, or none of its runs
    /// timed.
    pub(crate) fn end(&mut self) -> Result<()> {
        let timing = self.timing.take().ok_or_else(|| no_form("ended"))?;
        self.report.queries.push(timing.end()?);
        Ok(())
    }

    /// Closes the engine, measures what it left on disk, and removes its
    /// database: the report, if every step went well.
    pub(crate) fn finish(self) -> Result<PatternReport> {
        let Loaded { engine, dir, mut report, .. } = self;
        let bytes =
            engine.close().and_then(|()| allocated_bytes(&dir, |name| !has_extension(name, "log") && name != "LOCK"));
        let removed = remove_dir(&dir);
        report.bytes_after_compaction = bytes?;
        removed?;
        Ok(report)
    }

    /// Ingests the workload in `pattern`, flushes and fully compacts it,
    /// recording what that took: [`Loaded::ingest`] of every event, then
    /// [`Loaded::settle`].
    #[cfg(test)]
    pub(crate) fn load(
        &mut self,
        config: &LabConfig,
        pattern: SchemaPattern,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        self.ingest(config, pattern, config.workload.events_count(), progress)?;
        self.settle(pattern, progress)
    }

    /// Writes the workload's events not yet written whose index is below
    /// `until`, in `pattern`: one turn of the ingest ([`ingest::turn_ends`]).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if the database was settled; the engine's.
    pub(crate) fn ingest(
        &mut self,
        config: &LabConfig,
        pattern: SchemaPattern,
        until: u64,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        if self.settled {
            return Err(Error::InvalidArgument("events written to a database already flushed and compacted".into()));
        }
        let ingest = self.ingest.get_or_insert_with(|| Box::new(Ingest::new(&config.workload)));
        ingest.write_until(&mut *self.engine, pattern, until, progress)
    }

    /// Ends the ingest, which must have written every event: flushes and
    /// fully compacts the database, recording what the ingest took and the
    /// bytes on disk after the flush.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if events are left to write; the engine's.
    pub(crate) fn settle(&mut self, pattern: SchemaPattern, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        let ingest = self.ingest.as_mut().ok_or_else(|| {
            let what = if self.settled { "a database settled twice" } else { "a database settled with no ingest" };
            Error::InvalidArgument(what.into())
        })?;
        // An ingest with events left goes on: the refusal loses nothing.
        let figures = ingest.figures()?;
        (self.ingest, self.settled) = (None, true);
        let engine = &mut self.engine;
        let mut report = |stage, done, total| progress(Progress { pattern, stage, done, total });
        let stall = engine.stall_time();
        report("ingest", figures.events, figures.events);
        report("flush", 0, 1);
        engine.flush()?;
        let bytes_after_flush = allocated_bytes(&self.dir, |name| has_extension(name, "sst"))?;
        report("compact", 0, 1);
        engine.compact()?;
        let written = engine.bytes_written()?;
        let report = &mut self.report;
        let total = figures.events;
        (report.events, report.cells, report.measurements) = (total, total * pattern.cells_per_event(), total * 4);
        (report.logical_bytes, report.bytes_after_flush) = (figures.logical_bytes, bytes_after_flush);
        (report.ingest, report.ingest_tenths, report.stall) = (figures.elapsed, figures.tenths, stall);
        report.write_amplification = written as f64 / figures.logical_bytes.max(1) as f64;
        Ok(())
    }
}

/// An engine asked to time or end a form with none begun.
fn no_form(what: &str) -> Error {
    Error::InvalidArgument(format!("a batch of runs {what} with no query form begun"))
}

/// Times every query in every form on each of `loaded`, which hold
/// `pattern`, in the order they were loaded. A form's runs are split into
/// batches ([`timing::batches`]); the engines take each batch in turn,
/// with the same parameters, the engines' order alternating from one
/// batch to the next and from one form to the next ([`turn_order`]), so
/// that a slow spell of the machine weighs on the engines alike.
fn time_queries(
    config: &LabConfig,
    pattern: SchemaPattern,
    loaded: &mut [Entrant],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let forms = QueryKind::ALL.into_iter().flat_map(|kind| kind.forms().iter().map(move |&form| (kind, form)));
    for (i, (kind, form)) in forms.enumerate() {
        let runs = runs_of(kind, config.samples, config.fleet_samples);
        // Each form draws its own parameters: with the same ones, the
        // form measured second would find the first one's blocks cached.
        let batches = timing::batches(runs);
        let mut done = 0;
        for (b, &batch) in batches.iter().enumerate() {
            for e in turn_order(loaded.len(), i, b) {
                progress(Progress { pattern, stage: kind.name(), done: done as u64, total: runs as u64 });
                let this = &mut loaded[e];
                if b == 0 {
                    this.begin((kind, form), progress)?;
                }
                this.time(config, pattern, batch, progress)?;
                if b + 1 == batches.len() {
                    this.end(progress)?;
                }
            }
            done += batch;
        }
    }
    Ok(())
}

/// The order in which the `n` engines of a round, in the order they were
/// opened, run batch `batch` of the query form numbered `form` (the
/// ingest's turns are batches of a form 0 of their own): opened
/// order when `form + batch` is even, reversed when it is odd. So within
/// a form the engines go A B, B A, A B..., and each form's first batch
/// starts with the engine the previous form's did not. The opening order is
/// itself reversed from one round to the next ([`load_order`]), so each
/// form's first engine alternates from round to round as well.
/// (Reversing here by round too would undo that: each form would then run
/// on the same engine first in every round, after the same other engine's
/// runs.)
fn turn_order(n: usize, form: usize, batch: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if (form + batch) % 2 == 1 {
        order.reverse();
    }
    order
}

/// The order in which `engines` are loaded in round `round`: as given in
/// even rounds, reversed in odd ones.
fn load_order<T: Clone>(engines: &[T], round: usize) -> Vec<T> {
    let mut order = engines.to_vec();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// How many times each form of `kind` runs for `samples` and
/// `fleet_samples` ([`LabConfig`]): the full scan, which reads every cell,
/// a hundredth as often as a point query (at least 3); the fleet queries
/// as [`fleet_runs`] says.
pub(crate) fn runs_of(kind: QueryKind, samples: usize, fleet_samples: Option<usize>) -> usize {
    match kind {
        QueryKind::FullScan => (samples / 100).max(3),
        _ if kind.is_fleet() => fleet_runs(samples, fleet_samples),
        _ => samples.max(1),
    }
}

/// Runs of each form of a query that reads every entity: `fleet_samples`
/// if given (at least 1), else a twentieth of `samples` (at least 3).
pub(crate) fn fleet_runs(samples: usize, fleet_samples: Option<usize>) -> usize {
    fleet_samples.map_or((samples / 20).max(3), |n| n.max(1))
}

/// An engine the lab measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// cellardb, through its public API.
    Cellardb,
    /// RocksDB under the standard cell key (feature `rocksdb`).
    #[cfg(feature = "rocksdb")]
    Rocksdb,
}

impl Engine {
    /// The engine's name, as reports give it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cellardb => "cellardb",
            #[cfg(feature = "rocksdb")]
            Engine::Rocksdb => "rocksdb",
        }
    }

    /// The engine called `name`, if this build measures it.
    pub fn from_name(name: &str) -> Option<Engine> {
        match name {
            "cellardb" => Some(Engine::Cellardb),
            #[cfg(feature = "rocksdb")]
            "rocksdb" => Some(Engine::Rocksdb),
            _ => None,
        }
    }
}

/// Where a round's engines run ([`run_rounds`]).
#[derive(Clone, Copy)]
pub enum Processes<'a> {
    /// All in this process. The engines take the ingest in turns, but an
    /// engine's background work runs on through the others' turns.
    This,
    /// Each engine's database, in each round and pattern, in a worker
    /// process of its own, started by the command this makes for the
    /// engine and pattern: a program that calls
    /// [`crate::worker::serve_stdio`] with the same [`LabConfig`] (`cellar
    /// lab` runs itself again). Engines sharing a process share its heap
    /// and threads, and an engine loaded second was seen to carry tails it
    /// does not show alone. A worker is stopped (`SIGSTOP`) outside its
    /// turns of the ingest.
    Workers(&'a dyn Fn(Engine, SchemaPattern) -> std::process::Command),
}

/// `config.rounds` rounds of every pattern of `patterns` on every engine of
/// `engines`, each engine's database where `processes` says. Within a
/// round each pattern is loaded into each engine in turn, the engines'
/// order reversed from one round to the next, and then queried on all of
/// them, query by query in alternating order (`time_queries`), so that a
/// machine slowing down, warming up or stalling for a while weighs on both
/// alike.
///
/// # Errors
/// The first error of a run.
pub fn run_rounds(
    config: &LabConfig,
    patterns: &[SchemaPattern],
    engines: &[Engine],
    processes: Processes<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<PatternReport>> {
    let mut reports = Vec::new();
    for round in 0..config.rounds.max(1) {
        for &pattern in patterns {
            let order = load_order(engines, round);
            let mut loaded = Vec::new();
            let measured = measure_round(config, pattern, (&order, processes), &mut loaded, progress);
            // Every database opened is closed and removed, whatever failed.
            let finished: Vec<Result<PatternReport>> = loaded.into_iter().map(Entrant::finish).collect();
            measured?;
            for report in finished {
                let mut report = report?;
                report.round = round;
                reports.push(report);
            }
        }
    }
    Ok(reports)
}

/// Opens each of `engines` into `loaded`, loads them ([`load`]), then
/// times the queries on all of them; stops at the first error, leaving in
/// `loaded` every engine opened.
fn measure_round(
    config: &LabConfig,
    pattern: SchemaPattern,
    (engines, processes): (&[Engine], Processes<'_>),
    loaded: &mut Vec<Entrant>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    for &engine in engines {
        loaded.push(match processes {
            Processes::This => Entrant::Here(Loaded::open(config, engine, pattern)?),
            Processes::Workers(command) => Entrant::Apart(Worker::start(command(engine, pattern), engine, pattern)?),
        });
    }
    load(config, pattern, loaded, progress)?;
    time_queries(config, pattern, loaded, progress)
}

/// Loads each of `loaded` with the workload in `pattern`: the ingest in
/// turns ([`ingest_in_turns`]), then each engine in turn settles (flushes
/// and fully compacts).
fn load(
    config: &LabConfig,
    pattern: SchemaPattern,
    loaded: &mut [Entrant],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    ingest_in_turns(config, pattern, loaded, progress)?;
    loaded.iter_mut().try_for_each(|this| this.settle(pattern, progress))
}

/// Writes every event into each of `loaded` in turns: at each of
/// [`ingest::turn_ends`], every engine writes the events up to it, the
/// engines' order alternating from one turn to the next
/// ([`turn_order`]). An engine in a worker process is stopped outside its
/// turns, background threads and all ([`Worker::pause`]), so each
/// engine's writes share the machine with its own flushes and compactions
/// only, as when it is loaded alone, while a slow spell of the machine
/// falls on both engines' ingest alike. Every worker is running again
/// when this returns, whatever failed.
fn ingest_in_turns(
    config: &LabConfig,
    pattern: SchemaPattern,
    loaded: &mut [Entrant],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let mut take_turns = || -> Result<()> {
        for this in loaded.iter_mut() {
            this.pause()?;
        }
        for (turn, until) in ingest::turn_ends(config.workload.events_count()).into_iter().enumerate() {
            for e in turn_order(loaded.len(), 0, turn) {
                let this = &mut loaded[e];
                this.resume()?;
                this.ingest(config, pattern, until, progress)?;
                this.pause()?;
            }
        }
        Ok(())
    };
    let ingested = take_turns();
    let resumed: Vec<Result<()>> = loaded.iter_mut().map(Entrant::resume).collect();
    ingested.and(resumed.into_iter().collect())
}

/// An engine's database in a round: in this process, or in a worker
/// process of its own.
enum Entrant {
    Here(Loaded),
    Apart(Worker),
}

impl Entrant {
    fn ingest(
        &mut self,
        config: &LabConfig,
        pattern: SchemaPattern,
        until: u64,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        match self {
            Entrant::Here(loaded) => loaded.ingest(config, pattern, until, progress),
            Entrant::Apart(worker) => worker.ingest(until, progress),
        }
    }

    fn settle(&mut self, pattern: SchemaPattern, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        match self {
            Entrant::Here(loaded) => loaded.settle(pattern, progress),
            Entrant::Apart(worker) => worker.settle(progress),
        }
    }

    /// Stops a worker's process; an engine in this process runs on.
    fn pause(&mut self) -> Result<()> {
        match self {
            Entrant::Here(_) => Ok(()),
            Entrant::Apart(worker) => worker.pause(),
        }
    }

    fn resume(&mut self) -> Result<()> {
        match self {
            Entrant::Here(_) => Ok(()),
            Entrant::Apart(worker) => worker.resume(),
        }
    }

    fn begin(&mut self, query: (QueryKind, Form), progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        match self {
            Entrant::Here(loaded) => loaded.begin(query),
            Entrant::Apart(worker) => worker.begin(query, progress),
        }
    }

    fn time(
        &mut self,
        config: &LabConfig,
        pattern: SchemaPattern,
        runs: usize,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        match self {
            Entrant::Here(loaded) => loaded.time(config, pattern, runs),
            Entrant::Apart(worker) => worker.time(runs, progress),
        }
    }

    fn end(&mut self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        match self {
            Entrant::Here(loaded) => loaded.end(),
            Entrant::Apart(worker) => worker.end(progress),
        }
    }

    fn finish(self) -> Result<PatternReport> {
        match self {
            Entrant::Here(loaded) => loaded.finish(),
            Entrant::Apart(worker) => worker.finish(),
        }
    }
}

/// Bytes allocated on disk to the files of `dir` whose names pass `keep`.
pub(crate) fn allocated_bytes(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if keep(&entry.file_name().to_string_lossy()) {
            let meta = entry.metadata().map_err(|e| Error::io(entry.path(), e))?;
            total += meta.blocks() * 512;
        }
    }
    Ok(total)
}

pub(crate) fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

/// Whether file `name` ends in `.ext` (the engine names its files in lower case).
fn has_extension(name: &str, ext: &str) -> bool {
    std::path::Path::new(name).extension().is_some_and(|e| e == ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query form's first engine alternates from round to round (and
    /// from form to form within a round), so that neither engine always
    /// runs a query right after the other engine's runs of it.
    #[test]
    fn each_query_form_runs_first_on_each_engine_in_turn() {
        let forms = QueryKind::ALL.iter().map(|k| k.forms().len()).sum::<usize>();
        for form in 0..forms {
            let first = |round| {
                let loaded = load_order(&["cellardb", "rocksdb"], round);
                loaded[turn_order(loaded.len(), form, 0)[0]]
            };
            assert_ne!(first(0), first(1), "form {form}");
            assert_eq!(first(0), first(2), "form {form}");
        }
        for round in 0..2 {
            let loaded = load_order(&["a", "b"], round);
            let firsts: Vec<&str> = (0..forms).map(|f| loaded[turn_order(2, f, 0)[0]]).collect();
            assert!(firsts.windows(2).all(|w| w[0] != w[1]), "round {round}: {firsts:?}");
        }
    }

    /// Within a form the engines take its batches in turn, A B then B A:
    /// neither always runs a batch right after the other's, and every
    /// batch runs on every engine.
    #[test]
    fn the_engines_take_a_forms_batches_in_turn() {
        for form in 0..4 {
            let turns: Vec<Vec<usize>> = (0..6).map(|batch| turn_order(2, form, batch)).collect();
            assert!(turns.iter().all(|t| t.len() == 2 && t.contains(&0) && t.contains(&1)), "{turns:?}");
            assert!(turns.windows(2).all(|w| w[0][0] != w[1][0]), "form {form}: {turns:?}");
        }
    }

    /// A run of two balloons for a day under `dir`, `samples` runs a point
    /// query.
    /// Two cellardb databases of `pattern` in this process, as a round's
    /// two engines.
    fn two_in_this_process(dir: &Path, config: &LabConfig, pattern: SchemaPattern) -> Vec<Entrant> {
        ["a", "b"]
            .into_iter()
            .map(|name| {
                let config = LabConfig { dir: dir.join(name), ..config.clone() };
                Entrant::Here(Loaded::open(&config, Engine::Cellardb, pattern).unwrap())
            })
            .collect()
    }

    fn small_config(dir: &Path, samples: usize) -> LabConfig {
        LabConfig {
            workload: Workload::new(2, 1),
            options: Options::default(),
            dir: dir.to_path_buf(),
            samples,
            fleet_samples: None,
            seed: 3,
            rounds: 1,
        }
    }

    /// An ingest taken in turns writes what one ingest does: the same
    /// events, cells, logical bytes and bytes after compaction, and both
    /// time their first and last tenths. A database settles once, with
    /// every event written, and takes no events after.
    #[test]
    fn an_ingest_in_turns_loads_what_one_ingest_does() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), 4);
        let pattern = SchemaPattern::SingleTsUnserialized;
        let open = |name: &str| {
            let config = LabConfig { dir: dir.path().join(name), ..config.clone() };
            Loaded::open(&config, Engine::Cellardb, pattern).unwrap()
        };
        let err = open("none").settle(pattern, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("no ingest"), "{err}");
        let mut whole = open("whole");
        whole.load(&config, pattern, &mut |_| {}).unwrap();
        let mut turns = open("turns");
        let ends = ingest::turn_ends(config.workload.events_count());
        assert!(ends.len() > 10, "{ends:?}");
        let mut ingested = Vec::new();
        for &until in &ends[..ends.len() - 1] {
            turns.ingest(&config, pattern, until, &mut |p| ingested.push(p.done)).unwrap();
        }
        let err = turns.settle(pattern, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("ended after"), "{err}");
        // The ingest lost nothing to the refused settle: it goes on.
        turns.ingest(&config, pattern, ends[ends.len() - 1], &mut |p| ingested.push(p.done)).unwrap();
        assert!(ingested.windows(2).all(|w| w[0] <= w[1]), "{ingested:?}");
        turns.settle(pattern, &mut |_| {}).unwrap();
        assert!(turns.settle(pattern, &mut |_| {}).unwrap_err().to_string().contains("settled twice"));
        let err = turns.ingest(&config, pattern, u64::MAX, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("already flushed"), "{err}");
        let (a, b) = (whole.finish().unwrap(), turns.finish().unwrap());
        assert_eq!(
            (a.events, a.cells, a.logical_bytes, a.bytes_after_compaction),
            (b.events, b.cells, b.logical_bytes, b.bytes_after_compaction)
        );
        for r in [&a, &b] {
            assert!(r.ingest_tenths.0 > Duration::ZERO && r.ingest_tenths.1 > Duration::ZERO);
            assert!(r.ingest_tenths.0 + r.ingest_tenths.1 <= r.ingest);
        }
    }

    /// Engines in one round take the ingest in turns: each turn's events
    /// go into every engine before the next turn's go into any (each
    /// turn here is one batch, so one progress report each).
    #[test]
    fn engines_take_the_ingest_in_turns() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), 4);
        let pattern = SchemaPattern::BucketSerialized;
        let mut loaded = two_in_this_process(dir.path(), &config, pattern);
        let mut starts = Vec::new();
        ingest_in_turns(&config, pattern, &mut loaded, &mut |p| starts.push(p.done)).unwrap();
        let ends = ingest::turn_ends(config.workload.events_count());
        let turn_starts = std::iter::once(0).chain(ends.iter().copied()).take(ends.len());
        let expected: Vec<u64> = turn_starts.flat_map(|s| [s, s]).collect();
        assert_eq!(starts, expected);
        for this in loaded {
            let Entrant::Here(mut this) = this else { unreachable!("both engines are in this process") };
            this.settle(pattern, &mut |_| {}).unwrap();
            assert_eq!(this.finish().unwrap().events, config.workload.events_count());
        }
    }

    /// An engine times one form at a time: a batch with no form begun, a
    /// second form begun before the first ends, or a form ended with no
    /// run are errors, and the database's report takes no figures from
    /// them.
    #[test]
    fn an_engine_times_one_form_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), 4);
        let pattern = SchemaPattern::BucketNewCell;
        let mut loaded = Loaded::open(&config, Engine::Cellardb, pattern).unwrap();
        loaded.load(&config, pattern, &mut |_| {}).unwrap();
        let latest = (QueryKind::Latest, Form::Natural);
        assert!(loaded.time(&config, pattern, 2).unwrap_err().to_string().contains("no query form begun"));
        assert!(loaded.end().is_err());
        loaded.begin(latest).unwrap();
        let err = loaded.begin((QueryKind::MetricHour, Form::Tuned)).unwrap_err().to_string();
        assert!(err.contains("being timed"), "{err}");
        loaded.time(&config, pattern, 2).unwrap();
        loaded.time(&config, pattern, 3).unwrap();
        loaded.end().unwrap();
        loaded.begin(latest).unwrap();
        assert!(loaded.end().unwrap_err().to_string().contains("no run timed"));
        let report = loaded.finish().unwrap();
        assert_eq!(report.queries.len(), 1);
        assert_eq!((report.queries[0].kind, report.queries[0].runs), (QueryKind::Latest, 5));
        assert!(report.queries[0].pace.is_some());
    }

    /// Engines queried in turn get the same parameters, run for run, each
    /// from its own sequence: two cellardb databases holding the same
    /// pattern read the same cells in every query, whichever goes first.
    #[test]
    fn engines_queried_in_turn_answer_the_same_queries() {
        let dir = tempfile::tempdir().unwrap();
        // Point queries in two batches.
        let config = small_config(dir.path(), 25);
        let pattern = SchemaPattern::BucketNewCell;
        let mut loaded = two_in_this_process(dir.path(), &config, pattern);
        load(&config, pattern, &mut loaded, &mut |_| {}).unwrap();
        for _round in 0..2 {
            time_queries(&config, pattern, &mut loaded, &mut |_| {}).unwrap();
        }
        // Each engine drew the same parameters from its own sequence, one a
        // run, untimed runs included: both stand where a fresh sequence
        // stands after every run.
        let runs: usize = QueryKind::ALL
            .iter()
            .map(|&k| {
                let batches = timing::batches(runs_of(k, config.samples, config.fleet_samples));
                k.forms().len() * batches.iter().map(|&b| b + timing::warm_up_runs(b)).sum::<usize>()
            })
            .sum();
        let mut fresh = SplitMix64(config.seed);
        (0..2 * runs).for_each(|_| {
            fresh.next_u64();
        });
        let [Entrant::Here(a), Entrant::Here(b)] = <[Entrant; 2]>::try_from(loaded).ok().unwrap() else {
            unreachable!("both engines are in this process")
        };
        assert_eq!((a.random.0, b.random.0), (fresh.0, fresh.0));
        let (a, b) = (a.finish().unwrap(), b.finish().unwrap());
        let forms = QueryKind::ALL.iter().map(|k| k.forms().len()).sum::<usize>();
        assert_eq!(a.queries.len(), 2 * forms);
        for (qa, qb) in a.queries.iter().zip(&b.queries) {
            assert_eq!(
                (qa.kind, qa.form, qa.cells_read, qa.measurements),
                (qb.kind, qb.form, qb.cells_read, qb.measurements)
            );
        }
    }
}
