//! The balloon workload through gRPC, against `cellardb-server` and Google's
//! Bigtable emulator in the same run (`docs/server.md`, "Beside Google's
//! emulator: speed and memory").
//!
//! ```text
//! cargo bench -p cellardb-server --bench grpc_load -- [--balloons 10] [--days 7]
//!     [--clients 1,4] [--patterns bucket-new-cell,single-ts-unserialized]
//!     [--rounds 3] [--reads 200] [--no-emulator]
//! ```
//!
//! Each server runs as its own process, on a free loopback port, fresh for
//! every run: cellardb as this program started again with `--serve-child`
//! (the library's `serve` over a new database, `Options::default()`), the
//! emulator as the `cbtemulator` that `gcloud` installs (found through
//! `gcloud info`, or the `CBTEMULATOR` variable). A run, for one pattern, one
//! number of clients and one server:
//!
//! - **write**: the clients share the workload's events in arrival order,
//!   each sending one `MutateRows` per event (the pattern's rows, one entry
//!   each), one call at a time; cells/s, row writes/s (entries/s), the calls'
//!   p50/p99, and the server's resident memory (`VmRSS`) sampled as the data
//!   grows;
//! - **hour reads**: each client reads a random balloon-hour, as the pattern
//!   lays it out (a row range, or a row and a timestamp range), `--reads`
//!   times; p50/p99 and cells/s;
//! - **latest**: the natural "newest event of a balloon" (the balloon's
//!   prefix, reversed, one row, the newest cell of each column); p50/p99;
//! - **scan**: the whole table in one `ReadRows`; rows/s.
//!
//! Every answer is checked (statuses, and the cells a read must return), and
//! for cellardb the rows are counted again after a restart. Rounds
//! interleave the servers, so both meet the same machine; the summary gives
//! each figure's median and range over rounds, and each ratio's.
//!
//! `--node-rates [--rows 100000] [--reads 2000] [--rounds 3]` measures
//! instead what Google states one Cloud Bigtable SSD node's rates in, with
//! 1 KB rows: writes and point reads per second and per server CPU second,
//! and a scan's MB/s (`grpc_load/node_rates.rs`).
//!
//! `--server-workers N` runs cellardb's server on a runtime of N worker
//! threads rather than Tokio's default (one per core), to compare.
//!
//! Without `--bench` (as `cargo test --benches` runs it), it makes one small
//! run of each kind against cellardb alone, so the program cannot rot.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use cellardb::{Mutation, Options};
use cellardb_lab::workload::{Event, SchemaPattern, SplitMix64, Workload};
use cellardb_server::{ServeOptions, serve};
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use pb::row_filter::Filter as F;
use prost::Message as _;
use tonic::transport::Channel;

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "grpc_load/node_rates.rs"]
mod node_rates;

const INSTANCE: &str = "projects/bench/instances/bench";
const TABLE_ID: &str = "balloons";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--serve-child") {
        return serve_child(Path::new(&args[i + 1]), flag_value(&args, "--workers")?);
    }
    SERVER_WORKERS.get_or_init(|| flag_value(&args, "--server-workers").ok().flatten());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if !args.iter().any(|a| a == "--bench") {
        let node = node_rates::NodeConfig { rows: 400, reads: 5, rounds: 1, emulator: false };
        return runtime.block_on(async {
            run_all(&Config::smoke()).await?;
            node_rates::run(&node).await
        });
    }
    if args.iter().any(|a| a == "--node-rates") {
        return runtime.block_on(node_rates::run(&node_config(&args)?));
    }
    runtime.block_on(run_all(&Config::from_args(&args)?))
}

/// `--node-rates`' arguments.
fn node_config(args: &[String]) -> Result<node_rates::NodeConfig, BoxError> {
    let mut c = node_rates::NodeConfig { rows: 100_000, reads: 2000, rounds: 3, emulator: true };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--bench" | "--node-rates" => {}
            "--rows" => c.rows = value()?.parse()?,
            "--reads" => c.reads = value()?.parse()?,
            "--rounds" => c.rounds = value()?.parse()?,
            "--no-emulator" => c.emulator = false,
            "--server-workers" => drop(value()?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(c)
}

/// What to run.
#[derive(Debug, Clone)]
struct Config {
    workload: Workload,
    clients: Vec<usize>,
    patterns: Vec<SchemaPattern>,
    rounds: usize,
    reads: usize,
    emulator: bool,
}

impl Config {
    fn from_args(args: &[String]) -> Result<Config, BoxError> {
        let mut c = Config {
            workload: Workload::new(10, 7),
            clients: vec![1, 4],
            patterns: vec![SchemaPattern::BucketNewCell, SchemaPattern::SingleTsUnserialized],
            rounds: 3,
            reads: 200,
            emulator: true,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--bench" => {}
                "--balloons" => c.workload.balloons = value()?.parse()?,
                "--days" => c.workload.days = value()?.parse()?,
                "--rounds" => c.rounds = value()?.parse()?,
                "--reads" => c.reads = value()?.parse()?,
                "--clients" => c.clients = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
                "--patterns" => {
                    c.patterns = value()?
                        .split(',')
                        .map(|p| SchemaPattern::from_name(p).ok_or_else(|| format!("no pattern named {p}")))
                        .collect::<Result<_, _>>()?;
                }
                "--no-emulator" => c.emulator = false,
                "--server-workers" => drop(value()?),
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        Ok(c)
    }

    /// The run `cargo test --benches` makes: small, cellardb only.
    fn smoke() -> Config {
        Config {
            workload: Workload::new(2, 1),
            clients: vec![2],
            patterns: vec![SchemaPattern::BucketNewCell, SchemaPattern::SingleTsUnserialized],
            rounds: 1,
            reads: 5,
            emulator: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ServerKind {
    Cellardb,
    Emulator,
}

impl ServerKind {
    fn name(self) -> &'static str {
        match self {
            ServerKind::Cellardb => "cellardb",
            ServerKind::Emulator => "emulator",
        }
    }
}

/// One run's figures.
#[derive(Debug, Clone, Default)]
struct Figures {
    cells_per_s: f64,
    row_writes_per_s: f64,
    write_p50_us: f64,
    write_p99_us: f64,
    /// The server's CPU time (user and system) per row write.
    server_cpu_us_per_row: f64,
    /// This process's (the clients') CPU time per row write.
    client_cpu_us_per_row: f64,
    hour_p50_us: f64,
    hour_p99_us: f64,
    hour_cells_per_s: f64,
    latest_p50_us: f64,
    latest_p99_us: f64,
    scan_rows_per_s: f64,
    scan_cells_per_s: f64,
    rss_start: u64,
    rss_peak: u64,
    rss_end: u64,
    /// Resident memory as the cells written grow: for each tenth of the
    /// write, the cells written when it began and the most memory seen in it.
    rss_by_cells: Vec<(u64, u64)>,
}

async fn run_all(config: &Config) -> Result<(), BoxError> {
    let servers: Vec<ServerKind> =
        if config.emulator { vec![ServerKind::Cellardb, ServerKind::Emulator] } else { vec![ServerKind::Cellardb] };
    let w = config.workload;
    println!(
        "# grpc_load: {} balloons x {} days ({} events), clients {:?}, {} rounds, {} reads a client",
        w.balloons,
        w.days,
        w.events_count(),
        config.clients,
        config.rounds,
        config.reads
    );
    let mut results: BTreeMap<(&str, usize, ServerKind), Vec<Figures>> = BTreeMap::new();
    for round in 1..=config.rounds {
        for &pattern in &config.patterns {
            for &clients in &config.clients {
                for &server in &servers {
                    let figures = run_one(config, pattern, clients, server).await?;
                    println!(
                        "round {round} {:<22} clients {clients} {:<8} write {:>8.0} cells/s {:>7.0} rows/s \
                         p50 {:>6.0} us p99 {:>6.0} us | hour p50 {:>6.0} us p99 {:>6.0} us | latest p50 {:>6.0} us \
                         | scan {:>8.0} rows/s | rss {} -> {} MiB (peak {})",
                        pattern.name(),
                        server.name(),
                        figures.cells_per_s,
                        figures.row_writes_per_s,
                        figures.write_p50_us,
                        figures.write_p99_us,
                        figures.hour_p50_us,
                        figures.hour_p99_us,
                        figures.latest_p50_us,
                        figures.scan_rows_per_s,
                        figures.rss_start >> 20,
                        figures.rss_end >> 20,
                        figures.rss_peak >> 20,
                    );
                    results.entry((pattern.name(), clients, server)).or_default().push(figures);
                }
            }
        }
    }
    report(config, &results);
    Ok(())
}

/// One server's run of one pattern with `clients` clients.
async fn run_one(
    config: &Config,
    pattern: SchemaPattern,
    clients: usize,
    kind: ServerKind,
) -> Result<Figures, BoxError> {
    let dir = tempfile::tempdir()?;
    let mut server = Server::start(kind, dir.path())?;
    let channel = server.connect().await?;
    create_table(channel.clone(), TABLE_ID, pattern.family()).await?;
    let mut figures = Figures::default();
    write_phase(config, pattern, clients, &server, &mut figures).await?;
    read_phase(config, pattern, clients, &server, &mut figures).await?;
    (figures.scan_rows_per_s, figures.scan_cells_per_s) = scan(channel, config, pattern).await?;
    if kind == ServerKind::Cellardb {
        // The data is there after a restart.
        server.stop()?;
        server = Server::start(kind, dir.path())?;
        let channel = server.connect().await?;
        scan(channel, config, pattern).await?;
    }
    server.stop()?;
    Ok(figures)
}

/// Creates table `table_id` with `family`, which keeps every cell.
async fn create_table(channel: Channel, table_id: &str, family: &str) -> Result<(), BoxError> {
    use admin::bigtable_table_admin_client::BigtableTableAdminClient;
    let keep_all = admin::ColumnFamily { gc_rule: None, ..Default::default() };
    let table =
        admin::Table { column_families: [(family.to_owned(), keep_all)].into_iter().collect(), ..Default::default() };
    let request = admin::CreateTableRequest {
        parent: INSTANCE.into(),
        table_id: table_id.into(),
        table: Some(table),
        ..Default::default()
    };
    BigtableTableAdminClient::new(channel).create_table(request).await?;
    Ok(())
}

fn table_name() -> String {
    format!("{INSTANCE}/tables/{TABLE_ID}")
}

/// One `MutateRows` request recording `e`: an entry per row of the pattern.
fn event_request(pattern: SchemaPattern, e: &Event) -> pb::MutateRowsRequest {
    let entries = pattern
        .mutations(e)
        .into_iter()
        .map(|(key, mutations)| pb::mutate_rows_request::Entry {
            row_key: Bytes::from(key),
            mutations: mutations.into_iter().map(set_cell).collect(),
            idempotency: None,
        })
        .collect();
    pb::MutateRowsRequest { table_name: table_name(), entries, ..Default::default() }
}

fn set_cell(m: Mutation) -> pb::Mutation {
    let Mutation::SetCell { family, qualifier, timestamp, value } = m else {
        unreachable!("the lab's patterns only set cells")
    };
    pb::Mutation {
        mutation: Some(pb::mutation::Mutation::SetCell(pb::mutation::SetCell {
            family_name: family,
            column_qualifier: qualifier,
            timestamp_micros: timestamp.micros(),
            value,
        })),
    }
}

async fn write_phase(
    config: &Config,
    pattern: SchemaPattern,
    clients: usize,
    server: &Server,
    figures: &mut Figures,
) -> Result<(), BoxError> {
    let total_cells = config.workload.events_count() * pattern.cells_per_event();
    let written = Arc::new(AtomicU64::new(0));
    figures.rss_start = rss_of(server.pid).unwrap_or(0);
    let rss = RssSampler::start(server.pid, Arc::clone(&written), total_cells);
    let (server_cpu, client_cpu) = (cpu_of(server.pid)?, cpu_of(std::process::id())?);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let channel = server.connect().await?;
        let (workload, written) = (config.workload, Arc::clone(&written));
        tasks.push(tokio::spawn(async move {
            let mut bt = BigtableClient::new(channel);
            let (mut latencies, mut rows) = (Vec::new(), 0u64);
            for e in workload.events().skip(client).step_by(clients) {
                let request = event_request(pattern, &e);
                rows += request.entries.len() as u64;
                let t = Instant::now();
                let mut stream = bt.mutate_rows(request).await?.into_inner();
                while let Some(response) = stream.message().await? {
                    if let Some(failed) =
                        response.entries.iter().find(|e| e.status.as_ref().is_some_and(|s| s.code != 0))
                    {
                        return Err(format!("a write failed: {failed:?}").into());
                    }
                }
                latencies.push(t.elapsed());
                written.fetch_add(pattern.cells_per_event(), Ordering::Relaxed);
            }
            Ok::<_, BoxError>((latencies, rows))
        }));
    }
    let (mut latencies, mut rows) = (Vec::new(), 0);
    for task in tasks {
        let (l, r) = task.await??;
        latencies.extend(l);
        rows += r;
    }
    let secs = started.elapsed().as_secs_f64();
    let server_cpu = cpu_of(server.pid)?.saturating_sub(server_cpu);
    let client_cpu = cpu_of(std::process::id())?.saturating_sub(client_cpu);
    let samples = rss.stop();
    figures.server_cpu_us_per_row = server_cpu.as_secs_f64() * 1e6 / rows as f64;
    figures.client_cpu_us_per_row = client_cpu.as_secs_f64() * 1e6 / rows as f64;
    figures.cells_per_s = total_cells as f64 / secs;
    figures.row_writes_per_s = rows as f64 / secs;
    (figures.write_p50_us, figures.write_p99_us) = percentiles(&mut latencies);
    figures.rss_peak = samples.iter().map(|s| s.1).max().unwrap_or(0);
    figures.rss_end = rss_of(server.pid).unwrap_or(0);
    figures.rss_by_cells = samples;
    Ok(())
}

/// A read of one balloon-hour as `pattern` lays it out, and the cells it
/// must return.
fn hour_request(pattern: SchemaPattern, balloon: u32, hour: u32) -> (pb::ReadRowsRequest, u64) {
    let first = Event::at(balloon, hour * 60);
    let prefix = format!("{}#{}#", first.location(), first.id());
    let minute = first.minute_string();
    let hour_key = &minute[..13];
    let time_range = || {
        F::TimestampRangeFilter(pb::TimestampRange {
            start_timestamp_micros: first.timestamp(),
            end_timestamp_micros: first.timestamp() + 3_600_000_000,
        })
    };
    let (rows, filter) = match pattern {
        SchemaPattern::SingleTsSerialized | SchemaPattern::SingleTsUnserialized => {
            (prefix_range(&format!("{prefix}{hour_key}")), None)
        }
        SchemaPattern::BucketSerialized => (keys([format!("{prefix}{hour_key}")]), None),
        SchemaPattern::BucketNewCell => (keys([format!("{prefix}{}", first.week_string())]), Some(time_range())),
        SchemaPattern::BucketNewColumn => (prefix_range(&prefix), Some(time_range())),
    };
    let request = pb::ReadRowsRequest {
        table_name: table_name(),
        rows: Some(rows),
        filter: filter.map(|f| pb::RowFilter { filter: Some(f) }),
        ..Default::default()
    };
    (request, 60 * pattern.cells_per_event())
}

fn keys(keys: impl IntoIterator<Item = String>) -> pb::RowSet {
    pb::RowSet { row_keys: keys.into_iter().map(Bytes::from).collect(), row_ranges: vec![] }
}

fn prefix_range(prefix: &str) -> pb::RowSet {
    let mut end = prefix.as_bytes().to_vec();
    *end.last_mut().expect("a prefix is not empty") += 1;
    let range = pb::RowRange {
        start_key: Some(pb::row_range::StartKey::StartKeyClosed(Bytes::copy_from_slice(prefix.as_bytes()))),
        end_key: Some(pb::row_range::EndKey::EndKeyOpen(Bytes::from(end))),
    };
    pb::RowSet { row_keys: vec![], row_ranges: vec![range] }
}

/// The natural "latest event of a balloon": its prefix, reversed, one row,
/// the newest cell of each column. Sent with the header that says the
/// client merges reversed answers, as Google's clients send it.
fn latest_request(balloon: u32) -> tonic::Request<pb::ReadRowsRequest> {
    let e = Event::at(balloon, 0);
    let request = pb::ReadRowsRequest {
        table_name: table_name(),
        rows: Some(prefix_range(&format!("{}#{}#", e.location(), e.id()))),
        filter: Some(pb::RowFilter { filter: Some(F::CellsPerColumnLimitFilter(1)) }),
        rows_limit: 1,
        reversed: true,
        ..Default::default()
    };
    let flags = pb::FeatureFlags { reverse_scans: true, ..Default::default() };
    let mut request = tonic::Request::new(request);
    let header = base64::engine::general_purpose::URL_SAFE.encode(flags.encode_to_vec());
    request.metadata_mut().insert("bigtable-features", header.parse().expect("base64 is a header value"));
    request
}

/// Reads a whole answer, checks it merges as a client merges it, and
/// returns its rows' cell counts.
async fn read_all(
    bt: &mut BigtableClient<Channel>,
    request: impl tonic::IntoRequest<pb::ReadRowsRequest>,
    reversed: bool,
) -> Result<Vec<usize>, BoxError> {
    let mut stream = bt.read_rows(request).await?.into_inner();
    let mut chunks = Vec::new();
    while let Some(response) = stream.message().await? {
        chunks.extend(response.chunks);
    }
    let rows = support::merge_chunks(&chunks, reversed)?;
    Ok(rows.iter().map(|r| r.1.len()).collect())
}

async fn read_phase(
    config: &Config,
    pattern: SchemaPattern,
    clients: usize,
    server: &Server,
    figures: &mut Figures,
) -> Result<(), BoxError> {
    let mut tasks = Vec::new();
    for client in 0..clients {
        let channel = server.connect().await?;
        let (w, reads) = (config.workload, config.reads);
        tasks.push(tokio::spawn(async move {
            let mut bt = BigtableClient::new(channel);
            let mut rng = SplitMix64(0x5eed + client as u64);
            let (mut hour, mut latest, mut cells) = (Vec::new(), Vec::new(), 0u64);
            for _ in 0..reads {
                let (balloon, h) = (draw(&mut rng, w.balloons), draw(&mut rng, w.minutes() / 60));
                let (request, want) = hour_request(pattern, balloon, h);
                let t = Instant::now();
                let got = read_all(&mut bt, request, false).await?.iter().sum::<usize>() as u64;
                hour.push(t.elapsed());
                if got != want {
                    return Err(format!("balloon {balloon} hour {h}: {got} cells, want {want}").into());
                }
                cells += got;
            }
            let hour_secs = hour.iter().sum::<Duration>().as_secs_f64();
            for _ in 0..reads {
                let balloon = draw(&mut rng, w.balloons);
                let t = Instant::now();
                let rows = read_all(&mut bt, latest_request(balloon), true).await?;
                latest.push(t.elapsed());
                if rows.len() != 1 {
                    return Err(format!("latest of balloon {balloon}: {} rows", rows.len()).into());
                }
            }
            Ok::<_, BoxError>((hour, latest, cells as f64 / hour_secs))
        }));
    }
    let (mut hour, mut latest, mut cells_per_s) = (Vec::new(), Vec::new(), 0.0);
    for task in tasks {
        let (h, l, c) = task.await??;
        hour.extend(h);
        latest.extend(l);
        cells_per_s += c;
    }
    (figures.hour_p50_us, figures.hour_p99_us) = percentiles(&mut hour);
    (figures.latest_p50_us, figures.latest_p99_us) = percentiles(&mut latest);
    figures.hour_cells_per_s = cells_per_s;
    Ok(())
}

/// Reads the whole table in one call; checks every cell is there; rows/s
/// and cells/s.
async fn scan(channel: Channel, config: &Config, pattern: SchemaPattern) -> Result<(f64, f64), BoxError> {
    let mut bt = BigtableClient::new(channel);
    let request = pb::ReadRowsRequest { table_name: table_name(), ..Default::default() };
    let t = Instant::now();
    let rows = read_all(&mut bt, request, false).await?;
    let secs = t.elapsed().as_secs_f64();
    let cells: usize = rows.iter().sum();
    let want = config.workload.events_count() * pattern.cells_per_event();
    if cells as u64 != want {
        return Err(format!("the scan read {cells} cells, want {want}").into());
    }
    Ok((rows.len() as f64 / secs, cells as f64 / secs))
}

/// A number below `n`, drawn from `rng`.
fn draw(rng: &mut SplitMix64, n: u32) -> u32 {
    u32::try_from(rng.next_u64() % u64::from(n)).expect("a remainder of a u32 fits one")
}

fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    samples.sort_unstable();
    let at = |per_mille: usize| samples[(samples.len() - 1) * per_mille / 1000].as_secs_f64() * 1e6;
    (at(500), at(990))
}

/// A server process on a free loopback port.
struct Server {
    child: Child,
    /// cellardb's child stops when its standard input closes.
    stdin: Option<ChildStdin>,
    addr: String,
    pid: u32,
}

impl Server {
    fn start(kind: ServerKind, dir: &Path) -> Result<Server, BoxError> {
        let mut command = match kind {
            ServerKind::Cellardb => {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("--serve-child").arg(dir).stdin(Stdio::piped());
                if let Some(n) = SERVER_WORKERS.get().copied().flatten() {
                    c.arg("--workers").arg(n.to_string());
                }
                c
            }
            ServerKind::Emulator => {
                let mut c = Command::new(emulator_binary()?);
                c.args(["--host=127.0.0.1", "--port=0"]).stdin(Stdio::null());
                c
            }
        };
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first)?;
        // cellardb: "listening ADDR"; the emulator: "... running on ADDR".
        let addr = first.split_whitespace().last().ok_or("the server printed no address")?.to_owned();
        let pid = child.id();
        Ok(Server { stdin: child.stdin.take(), child, addr, pid })
    }

    /// A new connection to the server, as a client process would open.
    async fn connect(&self) -> Result<Channel, BoxError> {
        Ok(Channel::from_shared(format!("http://{}", self.addr))?.connect().await?)
    }

    fn stop(&mut self) -> Result<(), BoxError> {
        match self.stdin.take() {
            Some(stdin) => drop(stdin),
            None => self.child.kill()?,
        }
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn emulator_binary() -> Result<String, BoxError> {
    if let Ok(path) = std::env::var("CBTEMULATOR") {
        return Ok(path);
    }
    let out = Command::new("gcloud").args(["info", "--format=value(installation.sdk_root)"]).output()?;
    let root = String::from_utf8(out.stdout)?;
    Ok(format!("{}/platform/bigtable-emulator/cbtemulator", root.trim()))
}

/// The CPU time (user and system) a process has used, from
/// `/proc/PID/stat` (in clock ticks, 100 a second on Linux).
fn cpu_of(pid: u32) -> Result<Duration, BoxError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command's name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')').ok_or("a malformed stat")?.1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    Ok(Duration::from_millis(ticks * 10))
}

/// The process's resident memory in bytes.
fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Samples a process's resident memory every 100 ms while the data grows.
struct RssSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(u64, u64)>>,
}

impl RssSampler {
    fn start(pid: u32, written: Arc<AtomicU64>, total: u64) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut samples: Vec<(u64, u64)> = Vec::new();
            let mut tenth = None;
            while !stopping.load(Ordering::Relaxed) {
                let cells = written.load(Ordering::Relaxed);
                if let Some(rss) = rss_of(pid) {
                    let now = Some(cells * 10 / total.max(1));
                    if now != tenth {
                        tenth = now;
                        samples.push((cells, rss));
                    } else if let Some(last) = samples.last_mut() {
                        last.1 = last.1.max(rss);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        });
        RssSampler { stop, thread }
    }

    fn stop(self) -> Vec<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// `--server-workers N`: cellardb's server runs on N worker threads rather
/// than one per core, to compare the two.
static SERVER_WORKERS: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();

/// The number after `flag` in `args`, if the flag is there.
fn flag_value(args: &[String], flag: &str) -> Result<Option<usize>, BoxError> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => Ok(Some(args.get(i + 1).ok_or(format!("{flag} needs a number"))?.parse()?)),
    }
}

/// `--serve-child DIR [--workers N]`: cellardb's server over a new
/// database at DIR, on a free loopback port it prints, until standard
/// input closes.
fn serve_child(dir: &Path, workers: Option<usize>) -> Result<(), BoxError> {
    let db = Options::default().open(dir)?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening {}", listener.local_addr()?);
        let stdin_closed = async {
            let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await;
        };
        serve(db.clone(), listener, ServeOptions::default(), stdin_closed).await?;
        Ok::<_, BoxError>(())
    })?;
    db.close()?;
    Ok(())
}

/// Median and range over rounds of each figure, and of each ratio of
/// cellardb's to the emulator's.
fn report(config: &Config, results: &BTreeMap<(&str, usize, ServerKind), Vec<Figures>>) {
    type Pick = fn(&Figures) -> f64;
    let figures: [(&str, Pick); 13] = [
        ("write cells/s", |f| f.cells_per_s),
        ("row writes/s", |f| f.row_writes_per_s),
        ("write p50 us", |f| f.write_p50_us),
        ("write p99 us", |f| f.write_p99_us),
        ("server CPU us per row write", |f| f.server_cpu_us_per_row),
        ("client CPU us per row write", |f| f.client_cpu_us_per_row),
        ("hour read p50 us", |f| f.hour_p50_us),
        ("hour read p99 us", |f| f.hour_p99_us),
        ("latest p50 us", |f| f.latest_p50_us),
        ("latest p99 us", |f| f.latest_p99_us),
        ("scan rows/s", |f| f.scan_rows_per_s),
        ("scan cells/s", |f| f.scan_cells_per_s),
        ("RSS growth bytes/cell", |f| f.rss_end.saturating_sub(f.rss_start) as f64),
    ];
    println!("\n## Summary (median, min-max over {} rounds)\n", config.rounds);
    println!("| pattern | clients | figure | cellardb | emulator | cellardb / emulator |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for &pattern in &config.patterns {
        let cells = (config.workload.events_count() * pattern.cells_per_event()) as f64;
        for &clients in &config.clients {
            let of = |kind| results.get(&(pattern.name(), clients, kind));
            for (name, pick) in figures {
                let per_cell = name.ends_with("bytes/cell");
                let values = |kind| -> Option<Vec<f64>> {
                    of(kind).map(|runs| runs.iter().map(|f| pick(f) / if per_cell { cells } else { 1.0 }).collect())
                };
                let compared = compared(
                    &values(ServerKind::Cellardb).unwrap_or_default(),
                    values(ServerKind::Emulator).as_deref(),
                );
                println!("| {} | {clients} | {name} | {compared} |", pattern.name());
            }
        }
    }
    println!("\n## Resident memory as the data grows (round 1; cells written: the most MiB until the next)\n");
    for ((pattern, clients, kind), runs) in results {
        let curve: Vec<String> =
            runs[0].rss_by_cells.iter().map(|(cells, rss)| format!("{}k: {}", cells / 1000, rss >> 20)).collect();
        println!("- {pattern}, {clients} clients, {}: {}", kind.name(), curve.join(", "));
    }
}

/// A figure's table cells: cellardb's rounds, the emulator's (if it ran)
/// and the ratio of each round's, each as its median and range.
fn compared(cellar: &[f64], emulator: Option<&[f64]>) -> String {
    let ratios = emulator.map(|e| cellar.iter().zip(e).map(|(c, e)| c / e).collect::<Vec<_>>());
    format!(
        "{} | {} | {}",
        spread(cellar, 0),
        emulator.map_or("-".into(), |e| spread(e, 0)),
        ratios.as_deref().map_or("-".into(), |r| spread(r, 2)),
    )
}

/// "median (min-max)" with `decimals` places.
fn spread(values: &[f64], decimals: usize) -> String {
    if values.is_empty() {
        return "-".into();
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    if v.len() == 1 {
        return format!("{median:.decimals$}");
    }
    format!("{median:.decimals$} ({:.decimals$}-{:.decimals$})", v[0], v[v.len() - 1])
}
