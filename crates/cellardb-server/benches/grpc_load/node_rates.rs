//! `--node-rates`: the rates Google states for one Cloud Bigtable SSD node,
//! measured the way it states them, with 1 KB rows: writes of one row a
//! call with four in flight, point reads of one row with four clients, and
//! a scan of the whole table in MB/s of values. Each figure is given per
//! second of the run and per second of the server's CPU, since the clients
//! share the machine's cores with the server.

use std::collections::BTreeMap;
use std::time::Instant;

use bytes::Bytes;
use pb::bigtable_client::BigtableClient;

use super::{BoxError, Server, ServerKind, SplitMix64, compared, cpu_of, create_table, pb};

const TABLE_ID: &str = "kv";
const FAMILY: &str = "f";
/// A row's value: 1 KB, as Google states its rates.
const VALUE_BYTES: usize = 1000;
/// Clients, each with one call in flight.
const CLIENTS: usize = 4;

/// What a run measures.
#[derive(Debug, Clone, Copy)]
pub struct NodeConfig {
    /// Rows written, then scanned.
    pub rows: u64,
    /// Point reads per client.
    pub reads: usize,
    pub rounds: usize,
    pub emulator: bool,
}

/// One server's figures in one round: each per second of the run, and per
/// second of the server's CPU.
#[derive(Debug, Clone, Copy, Default)]
struct NodeFigures {
    writes: f64,
    writes_per_cpu: f64,
    reads: f64,
    reads_per_cpu: f64,
    scan_mb: f64,
    scan_mb_per_cpu: f64,
}

type Pick = fn(&NodeFigures) -> f64;

fn table_name() -> String {
    format!("{}/tables/{TABLE_ID}", super::INSTANCE)
}

/// Row `i`'s key: a bijection of `i`, so rows arrive in no key order.
fn key(i: u64) -> Bytes {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    Bytes::from(format!("user{:016x}", z ^ (z >> 31)))
}

/// Row `i`'s value: 1 KB of pseudo-random bytes, which compress as little
/// as a user's data may.
fn value(i: u64) -> Bytes {
    let mut rng = SplitMix64(i);
    let mut v = Vec::with_capacity(VALUE_BYTES);
    while v.len() < VALUE_BYTES {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(VALUE_BYTES);
    Bytes::from(v)
}

fn write_request(i: u64) -> pb::MutateRowRequest {
    let set = pb::mutation::SetCell {
        family_name: FAMILY.into(),
        column_qualifier: Bytes::from_static(b"v"),
        timestamp_micros: 1_000,
        value: value(i),
    };
    pb::MutateRowRequest {
        table_name: table_name(),
        row_key: key(i),
        mutations: vec![pb::Mutation { mutation: Some(pb::mutation::Mutation::SetCell(set)) }],
        ..Default::default()
    }
}

/// Runs `phase`'s calls and returns (calls per second, calls per server
/// CPU second).
async fn timed<F, Fut>(server: &Server, calls: u64, phase: F) -> Result<(f64, f64), BoxError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let cpu = cpu_of(server.pid)?;
    let started = Instant::now();
    phase().await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = cpu_of(server.pid)?.saturating_sub(cpu).as_secs_f64().max(0.01);
    #[allow(clippy::cast_precision_loss, reason = "counts far under 2^52")]
    let calls = calls as f64;
    Ok((calls / secs, calls / cpu_secs))
}

async fn write_all(server: &Server, rows: u64) -> Result<(), BoxError> {
    let mut tasks = Vec::new();
    for client in 0..CLIENTS as u64 {
        let mut bt = BigtableClient::new(server.connect().await?);
        tasks.push(tokio::spawn(async move {
            for i in (client..rows).step_by(CLIENTS) {
                bt.mutate_row(write_request(i)).await?;
            }
            Ok::<_, BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

async fn read_points(server: &Server, rows: u64, reads: usize) -> Result<(), BoxError> {
    let mut tasks = Vec::new();
    for client in 0..CLIENTS as u64 {
        let mut bt = BigtableClient::new(server.connect().await?);
        tasks.push(tokio::spawn(async move {
            let mut rng = SplitMix64(0x5eed + client);
            for _ in 0..reads {
                let i = rng.next_u64() % rows;
                let request = pb::ReadRowsRequest {
                    table_name: table_name(),
                    rows: Some(pb::RowSet { row_keys: vec![key(i)], row_ranges: vec![] }),
                    ..Default::default()
                };
                let mut stream = bt.read_rows(request).await?.into_inner();
                let mut chunks = Vec::new();
                while let Some(response) = stream.message().await? {
                    chunks.extend(response.chunks);
                }
                let got = super::support::merge_chunks(&chunks, false)?;
                if got.len() != 1 || got[0].1.len() != 1 || got[0].1[0].3 != value(i) {
                    return Err(format!("row {i}: {} rows, not its one cell", got.len()).into());
                }
            }
            Ok::<_, BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Reads the whole table in one call; checks it holds every row.
async fn scan(server: &Server, rows: u64) -> Result<(), BoxError> {
    let mut bt = BigtableClient::new(server.connect().await?);
    let request = pb::ReadRowsRequest { table_name: table_name(), ..Default::default() };
    let mut stream = bt.read_rows(request).await?.into_inner();
    let (mut committed, mut bytes) = (0u64, 0usize);
    while let Some(response) = stream.message().await? {
        for chunk in &response.chunks {
            bytes += chunk.value.len();
            if matches!(chunk.row_status, Some(pb::read_rows_response::cell_chunk::RowStatus::CommitRow(true))) {
                committed += 1;
            }
        }
    }
    if committed != rows || bytes != VALUE_BYTES * usize::try_from(rows)? {
        return Err(format!("the scan read {committed} rows and {bytes} bytes of values, want {rows}").into());
    }
    Ok(())
}

async fn run_one(config: &NodeConfig, kind: ServerKind) -> Result<NodeFigures, BoxError> {
    let dir = tempfile::tempdir()?;
    let mut server = Server::start(kind, dir.path())?;
    create_table(server.connect().await?, TABLE_ID, FAMILY).await?;
    let mut f = NodeFigures::default();
    (f.writes, f.writes_per_cpu) = timed(&server, config.rows, || write_all(&server, config.rows)).await?;
    let reads = (CLIENTS * config.reads) as u64;
    (f.reads, f.reads_per_cpu) = timed(&server, reads, || read_points(&server, config.rows, config.reads)).await?;
    #[allow(clippy::cast_precision_loss, reason = "a table's bytes, far under 2^52")]
    let megabytes = (config.rows * VALUE_BYTES as u64) as f64 / 1e6;
    let (scans_per_s, scans_per_cpu_s) = timed(&server, 1, || scan(&server, config.rows)).await?;
    (f.scan_mb, f.scan_mb_per_cpu) = (scans_per_s * megabytes, scans_per_cpu_s * megabytes);
    server.stop()?;
    Ok(f)
}

/// Runs the rounds, the servers taking turns, and prints each round and
/// the summary.
pub async fn run(config: &NodeConfig) -> Result<(), BoxError> {
    let servers: Vec<ServerKind> =
        if config.emulator { vec![ServerKind::Cellardb, ServerKind::Emulator] } else { vec![ServerKind::Cellardb] };
    println!(
        "# grpc_load --node-rates: {} rows of {VALUE_BYTES} bytes, {CLIENTS} clients one call in flight each, \
         {} point reads a client, {} rounds",
        config.rows, config.reads, config.rounds
    );
    let mut results: BTreeMap<ServerKind, Vec<NodeFigures>> = BTreeMap::new();
    for round in 1..=config.rounds {
        for &kind in &servers {
            let f = run_one(config, kind).await?;
            println!(
                "round {round} {:<8} writes {:>7.0}/s ({:>7.0}/CPU s) | point reads {:>7.0}/s ({:>7.0}/CPU s) \
                 | scan {:>6.1} MB/s ({:>6.1}/CPU s)",
                kind.name(),
                f.writes,
                f.writes_per_cpu,
                f.reads,
                f.reads_per_cpu,
                f.scan_mb,
                f.scan_mb_per_cpu
            );
            results.entry(kind).or_default().push(f);
        }
    }
    let figures: [(&str, Pick); 6] = [
        ("row writes/s (1 a call, 4 in flight)", |f| f.writes),
        ("row writes per server CPU s", |f| f.writes_per_cpu),
        ("point reads/s (4 clients)", |f| f.reads),
        ("point reads per server CPU s", |f| f.reads_per_cpu),
        ("scan MB/s of values", |f| f.scan_mb),
        ("scan MB per server CPU s", |f| f.scan_mb_per_cpu),
    ];
    println!("\n## Summary (median, min-max over {} rounds)\n", config.rounds);
    println!("| figure | cellardb | emulator | cellardb / emulator |");
    println!("| --- | --- | --- | --- |");
    for (name, pick) in figures {
        let values = |kind| results.get(&kind).map(|runs| runs.iter().map(pick).collect::<Vec<f64>>());
        println!(
            "| {name} | {} |",
            compared(&values(ServerKind::Cellardb).unwrap_or_default(), values(ServerKind::Emulator).as_deref())
        );
    }
    Ok(())
}
