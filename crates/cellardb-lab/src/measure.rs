//! Running a spec: each design loaded into a store, flushed and compacted,
//! then every query timed in each of its forms, every answer checked
//! against the generator; in rounds, the designs interleaved within each.
//!
//! A store is cellardb in this process ([`open_local`]) or any Bigtable
//! endpoint ([`crate::endpoint`]); the runner times and measures around the
//! calls a user of it would make ([`Store`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cellardb::{Db, Error, Mutation, Options, Result, Table};

use crate::design::{RowWriter, logical_size};
use crate::generator::{Arrivals, instants_count};
use crate::memory::Watch;
use crate::plan::{self, Cell, Copied, Form, Params, Plan};
use crate::run::fleet_runs;
use crate::spec::{Design, QuerySpec, Spec};
use crate::workload::SplitMix64;

/// What a spec run measures, and how.
#[derive(Debug, Clone)]
pub struct SpecConfig {
    /// The spec.
    pub spec: Spec,
    /// Engine options (durability, block size, compression, cache).
    pub options: Options,
    /// Where each design's database is made (a subdirectory each).
    pub dir: PathBuf,
    /// Runs of each query of one entity in each form.
    pub samples: usize,
    /// Runs of each query across every entity in each form (`None`: a
    /// twentieth of `samples`, at least 3).
    pub fleet_samples: Option<usize>,
    /// Seed of the query parameters.
    pub seed: u64,
    /// Rounds: each loads every design afresh and measures it again.
    pub rounds: usize,
    /// Keep the last round's databases (for `cellar` to inspect).
    pub keep: bool,
}

/// Where a run is, for progress reports.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The round, from 0.
    pub round: usize,
    /// The design.
    pub design: &'a str,
    /// `ingest`, `flush`, `compact`, or a query's name.
    pub stage: &'a str,
    /// Work done in this stage.
    pub done: u64,
    /// Work in this stage.
    pub total: u64,
}

/// One query's figures in one form.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryFigures {
    /// The query's name.
    pub query: String,
    /// The form.
    pub form: Form,
    /// Times it ran, each with parameters of its own.
    pub runs: usize,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile (the slowest run when fewer than 100).
    pub p99: Duration,
    /// Cells the store returned per run, on average.
    pub cells_read: f64,
    /// Values the answer held per run, on average.
    pub values_returned: f64,
    /// Blocks the store read (block-cache hits and misses) per run, where
    /// it tells.
    pub blocks_read: Option<f64>,
}

/// Everything a report states of one design in one round.
#[derive(Debug, Clone, PartialEq)]
pub struct DesignReport {
    /// The design.
    pub design: String,
    /// Where it ran: `cellardb`, or the endpoint.
    pub target: String,
    /// The round, from 0.
    pub round: usize,
    /// Events written.
    pub events: u64,
    /// Values in them.
    pub values: u64,
    /// Cells written.
    pub cells: u64,
    /// Σ row key + family + qualifier + value + 8 over the cells written.
    pub logical_bytes: u64,
    /// Bytes on disk after a full compaction and close (log excluded),
    /// where the store tells.
    pub bytes: Option<u64>,
    /// Wall time of the ingest.
    pub ingest: Duration,
    /// Time the same events took to generate and turn into rows, alone.
    pub generation: Duration,
    /// Bytes written (log, flushes, compactions) per logical byte, where
    /// the store tells.
    pub write_amplification: Option<f64>,
    /// Time writers waited for flushes or compactions.
    pub stall: Option<Duration>,
    /// The process's peak heap (anonymous resident memory) over this
    /// design's load and queries, where the OS tells: what the engine's
    /// settings bound, with the lab's own data.
    pub peak_memory: Option<u64>,
    /// The process's peak resident memory, pages of mapped files included
    /// (they are the OS's page cache and grow with the data read).
    pub peak_resident: Option<u64>,
    /// Every query in every form.
    pub queries: Vec<QueryFigures>,
}

impl DesignReport {
    /// Events written per second of ingest.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.ingest.as_secs_f64().max(1e-9)
    }

    /// Bytes on disk per value.
    pub fn bytes_per_value(&self) -> Option<f64> {
        self.bytes.map(|b| b as f64 / self.values.max(1) as f64)
    }

    /// The share of the ingest's time that generating the events took.
    pub fn generation_share(&self) -> f64 {
        self.generation.as_secs_f64() / self.ingest.as_secs_f64().max(1e-9)
    }

    /// The figures of query `name` in `form`.
    pub fn query(&self, name: &str, form: Form) -> Option<&QueryFigures> {
        self.queries.iter().find(|q| q.query == name && q.form == form)
    }
}

/// What the lab needs of a store; each call is what its user would do.
///
/// # Errors
/// Every call returns the store's own errors (I/O, a refused call).
#[allow(clippy::missing_errors_doc, reason = "the trait's doc says it once for every call")]
pub trait Store {
    /// Writes one event's rows, each row atomically.
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()>;
    /// Waits until every write is in (a batching client's flush).
    fn finish_writes(&mut self) -> Result<()> {
        Ok(())
    }
    /// Flushes and fully compacts, where the store lets its user.
    fn compact(&mut self) -> Result<()>;
    /// Bytes written to disk so far (log, flushes, compactions), if known.
    fn bytes_written(&self) -> Result<Option<u64>>;
    /// Time writers waited for flushes or compactions, if known.
    fn stall_time(&self) -> Option<Duration>;
    /// Blocks read so far, if known.
    fn blocks_read(&self) -> Option<u64>;
    /// Reads `plan` as its user would, handing every cell to `sink`.
    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(Cell<'_>)) -> Result<()>;
    /// Closes the store; returns the bytes it holds on disk, if known.
    fn close(self: Box<Self>) -> Result<Option<u64>>;
}

/// Opens a fresh store for a design in a round.
pub type Opener<'a> = dyn Fn(&Design, usize) -> Result<Box<dyn Store>> + 'a;

/// cellardb under the lab.
struct Local {
    db: Db,
    table: Table,
    dir: PathBuf,
    keep: bool,
}

impl Store for Local {
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()> {
        self.table.mutate_rows(rows).into_iter().collect()
    }

    fn compact(&mut self) -> Result<()> {
        self.db.flush()?;
        self.db.compact_table(self.table.name())
    }

    fn bytes_written(&self) -> Result<Option<u64>> {
        let s = self.db.stats()?;
        Ok(Some(s.wal_bytes_written + s.flush_bytes_written + s.compaction_bytes_written))
    }

    fn stall_time(&self) -> Option<Duration> {
        self.db.stats().ok().map(|s| s.stall_time)
    }

    fn blocks_read(&self) -> Option<u64> {
        self.db.stats().ok().map(|s| s.block_cache_hits + s.block_cache_misses)
    }

    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(Cell<'_>)) -> Result<()> {
        plan::read_cellardb(&self.table, plan, sink)
    }

    fn close(self: Box<Self>) -> Result<Option<u64>> {
        let Local { db, dir, keep, .. } = *self;
        db.close()?;
        let bytes = crate::run::allocated_bytes(&dir, |name| !has_extension(name, "log") && name != "LOCK")?;
        if !keep {
            crate::run::remove_dir(&dir)?;
        }
        Ok(Some(bytes))
    }
}

fn has_extension(name: &str, ext: &str) -> bool {
    Path::new(name).extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// The directory of `design`'s database under `dir`.
pub fn design_dir(dir: &Path, spec: &Spec, design: &Design) -> PathBuf {
    dir.join(format!("{}-{}", spec.name, design.name))
}

/// An opener of fresh cellardb databases under `config.dir`, one per
/// design, each with the spec's table and the design's families; the last
/// round's kept if `config.keep`.
pub fn open_local(config: &SpecConfig) -> impl Fn(&Design, usize) -> Result<Box<dyn Store>> + '_ {
    move |design, round| {
        let dir = design_dir(&config.dir, &config.spec, design);
        crate::run::remove_dir(&dir)?;
        let db = config.options.clone().open(&dir)?;
        let families = design.families.iter().map(|f| (f.name.as_str(), f.rule.clone()));
        let table = db.create_table(&config.spec.name, families)?;
        let keep = config.keep && round + 1 == config.rounds.max(1);
        Ok(Box::new(Local { db, table, dir, keep }) as Box<dyn Store>)
    }
}

/// Runs every design of `config.spec` in `config.rounds` rounds on the
/// stores `open` makes.
///
/// # Errors
/// The first error of a store, or `Error::InvalidArgument` if an answer is
/// not the generator's (a bug, never a timing effect). Partial results are
/// not returned.
pub fn run_spec(
    config: &SpecConfig,
    target: &str,
    open: &Opener<'_>,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Vec<DesignReport>> {
    let mut reports = Vec::new();
    let mut generation = vec![None; config.spec.designs.len()];
    for round in 0..config.rounds.max(1) {
        for (i, design) in config.spec.designs.iter().enumerate() {
            let generated = *generation[i].get_or_insert_with(|| time_generation(&config.spec, design));
            let watch = Watch::start();
            let mut store = open(design, round)?;
            let measured = measure(config, design, round, store.as_mut(), progress);
            let bytes = store.close();
            let mut report = measured?;
            report.bytes = bytes?;
            report.generation = generated;
            target.clone_into(&mut report.target);
            let peaks = watch.map(Watch::finish);
            report.peak_memory = peaks.map(|p| p.heap);
            report.peak_resident = peaks.map(|p| p.resident);
            reports.push(report);
        }
    }
    Ok(reports)
}

/// How long generating every event of `spec` and making `design`'s rows of
/// them takes, with nothing written.
pub fn time_generation(spec: &Spec, design: &Design) -> Duration {
    let started = Instant::now();
    let mut events = Arrivals::new(spec);
    let mut writer = RowWriter::new(spec, design);
    let mut bytes = 0;
    while let Some(e) = events.next() {
        bytes += logical_size(&writer.rows(e));
    }
    std::hint::black_box(bytes);
    started.elapsed()
}

fn measure(
    config: &SpecConfig,
    design: &Design,
    round: usize,
    store: &mut dyn Store,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<DesignReport> {
    let spec = &config.spec;
    let mut report = load(spec, design, round, store, progress)?;
    let mut step = |stage: &str, done, total| progress(Step { round, design: &design.name, stage, done, total });
    step("compact", 0, 1);
    store.compact()?;
    step("compact", 1, 1);
    report.write_amplification = store.bytes_written()?.map(|w| w as f64 / report.logical_bytes.max(1) as f64);
    for q in &spec.queries {
        for &form in Form::of(&q.kind) {
            let runs = if q.kind.is_cross_entity() {
                fleet_runs(config.samples, config.fleet_samples)
            } else {
                config.samples.max(1)
            };
            // Every design draws the same parameters, run for run.
            let mut random = SplitMix64(config.seed ^ hash_name(&q.name) ^ form as u64);
            let figures = time_query(spec, design, store, q, form, runs, &mut random, &mut |done| {
                progress(Step { round, design: &design.name, stage: &q.name, done, total: runs as u64 });
            })?;
            report.queries.push(figures);
        }
    }
    Ok(report)
}

fn hash_name(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Writes every event of `spec` in arrival order as `design`'s rows.
fn load(
    spec: &Spec,
    design: &Design,
    round: usize,
    store: &mut dyn Store,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<DesignReport> {
    let total = u64::from(spec.data.entities.count) * instants_count(&spec.data);
    let started = Instant::now();
    let mut written = 0u64;
    let fed = feed(spec, design, &mut |rows| {
        store.write_event(rows)?;
        written += 1;
        if written.is_multiple_of(8192) {
            progress(Step { round, design: &design.name, stage: "ingest", done: written, total });
        }
        Ok(())
    })?;
    store.finish_writes()?;
    let ingest = started.elapsed();
    progress(Step { round, design: &design.name, stage: "ingest", done: total, total });
    Ok(DesignReport {
        design: design.name.clone(),
        target: String::new(),
        round,
        events: fed.events,
        values: fed.values,
        cells: fed.cells,
        logical_bytes: fed.logical_bytes,
        bytes: None,
        ingest,
        generation: Duration::ZERO,
        write_amplification: None,
        stall: store.stall_time(),
        peak_memory: None,
        peak_resident: None,
        queries: Vec::new(),
    })
}

/// What [`feed`] handed over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fed {
    /// Events, each one call of the sink.
    pub events: u64,
    /// Values in them.
    pub values: u64,
    /// Cells in their rows.
    pub cells: u64,
    /// Their logical bytes (row key + family + qualifier + value + 8 a cell).
    pub logical_bytes: u64,
}

/// Hands every event of `spec`, as `design`'s rows, to `sink`, in arrival
/// order, made one at a time on the caller's thread. (Made on a thread of
/// their own, a few batches ahead, they cost the writer more: their memory
/// is then freed on another thread than the one that allocated it.)
///
/// # Errors
/// The sink's first error; the events after it are not generated.
pub fn feed(
    spec: &Spec,
    design: &Design,
    sink: &mut dyn FnMut(Vec<(String, Vec<Mutation>)>) -> Result<()>,
) -> Result<Fed> {
    let mut arrivals = Arrivals::new(spec);
    let mut writer = RowWriter::new(spec, design);
    let mut fed = Fed::default();
    while let Some(e) = arrivals.next() {
        let rows = writer.rows(e);
        fed.events += 1;
        fed.values += e.values.iter().filter(|v| **v != crate::generator::Value::Absent).count() as u64;
        fed.cells += rows.iter().map(|(_, m)| m.len() as u64).sum::<u64>();
        fed.logical_bytes += logical_size(&rows);
        sink(rows)?;
    }
    Ok(fed)
}

/// Runs `runs` queries `q` in `form` with random parameters. Each run is
/// timed with the cells handed to a sink that only counts them, then read
/// again into a copy that is checked against the generator.
#[allow(clippy::too_many_arguments, reason = "the one place a query is timed; its inputs are all distinct")]
fn time_query(
    spec: &Spec,
    design: &Design,
    store: &dyn Store,
    q: &QuerySpec,
    form: Form,
    runs: usize,
    random: &mut SplitMix64,
    progress: &mut dyn FnMut(u64),
) -> Result<QueryFigures> {
    // Latencies in nanoseconds; the histogram keeps three significant
    // digits over the range a read can take.
    let mut latencies = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let (mut cells, mut returned) = (0u64, 0u64);
    // Blocks are counted over all the runs (each reads its plans twice,
    // timed and copied): asking the store between runs would disturb the
    // caches the timed reads use.
    let reader = crate::design::CellReader::new(spec, design);
    let blocks_before = store.blocks_read();
    for run in 0..runs {
        let params = Params::draw(spec, q, random.next_u64());
        let plans = plan::plans(spec, design, q, &params, form);
        let (mut count, mut value_bytes) = (0u64, 0usize);
        let started = Instant::now();
        for p in &plans {
            if p.only_if_empty && count > 0 {
                continue;
            }
            store.read(p, &mut |c| {
                count += 1;
                value_bytes += c.value.len();
            })?;
        }
        let elapsed = started.elapsed();
        latencies.saturating_record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX).max(1));
        std::hint::black_box(value_bytes);
        let mut copy = Copied::default();
        for p in &plans {
            if p.only_if_empty && !copy.is_empty() {
                continue;
            }
            store.read(p, &mut |c| copy.push(c))?;
        }
        if copy.len() as u64 != count {
            return Err(Error::InvalidArgument(format!(
                "{} ({}) on {} read {count} cells, then {}: {params:?}",
                q.name,
                form.name(),
                design.name,
                copy.len()
            )));
        }
        let got = plan::answer(&reader, q, &params, &copy).map_err(Error::InvalidArgument)?;
        let want = plan::expected(spec, q, &params);
        if got != want {
            return Err(Error::InvalidArgument(format!(
                "{} ({}) on {} returned {} values, the generator says {}: {params:?}",
                q.name,
                form.name(),
                design.name,
                got.len(),
                want.len()
            )));
        }
        cells += count;
        returned += got.len() as u64;
        progress(run as u64 + 1);
    }
    let blocks = blocks_before.zip(store.blocks_read()).map(|(b, a)| a.saturating_sub(b) / 2);
    let at = |q: f64| Duration::from_nanos(latencies.value_at_quantile(q));
    Ok(QueryFigures {
        query: q.name.clone(),
        form,
        runs,
        p50: at(0.5),
        p99: at(0.99),
        cells_read: cells as f64 / runs as f64,
        values_returned: returned as f64 / runs as f64,
        blocks_read: blocks.map(|b| b as f64 / runs as f64),
    })
}

/// What a spec's designs would write to disk, at most: the logical bytes
/// of each (estimated from its first events) twice over (the log and the
/// tables before compaction), summed if every database is kept, else the
/// largest.
pub fn estimate_disk(spec: &Spec, keep: bool) -> u64 {
    const SAMPLE: u64 = 20_000;
    let total = u64::from(spec.data.entities.count) * instants_count(&spec.data);
    let mut per_design = Vec::new();
    for design in &spec.designs {
        let mut arrivals = Arrivals::new(spec);
        let mut writer = RowWriter::new(spec, design);
        let (mut n, mut bytes) = (0u64, 0u64);
        while n < SAMPLE {
            let Some(e) = arrivals.next() else { break };
            bytes += logical_size(&writer.rows(e));
            n += 1;
        }
        let estimate = if n < SAMPLE { bytes } else { bytes.saturating_mul(total / n.max(1)) };
        per_design.push(2 * estimate);
    }
    if keep { per_design.iter().sum() } else { per_design.into_iter().max().unwrap_or(0) }
}
