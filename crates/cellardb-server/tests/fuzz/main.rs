//! Hostile requests: every RPC of both services fuzzed in-process, through
//! the same service a socket feeds (`cellardb_server::routes`: gRPC framing,
//! the services' codec, the handlers, the answer's encoding), against a
//! small database.
//!
//! Three families, a test each: reads (`ReadRows`, `SampleRowKeys`),
//! writes (`MutateRow`, `MutateRows`, `CheckAndMutateRow`,
//! `ReadModifyWriteRow`, `PingAndWarm`, and the calls not served), and
//! table admin. Inputs are well-formed requests drawn at random
//! (`requests.rs`) and the bytes of those requests mutated (bits flipped,
//! ranges deleted, duplicated, spliced from another request, bytes set to
//! edge values), so arbitrary protobuf reaches the decoder and what it
//! lets through reaches the handlers. Without coverage instrumentation,
//! the answer stands in for coverage: a request answered with a status not
//! seen before joins the pool that mutations draw from.
//!
//! Every call must:
//! - not panic, anywhere (a panic hook counts them, on the blocking pool
//!   too, where a panic would end a streamed read early and silently);
//! - finish within [`CALL_DEADLINE`], its answer read to the end;
//! - answer a status that tells the truth: OK, or a refusal Bigtable
//!   gives for bad input (`INVALID_ARGUMENT`, `NOT_FOUND`,
//!   `ALREADY_EXISTS`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`,
//!   `UNIMPLEMENTED`); never `INTERNAL`, `UNKNOWN`, `UNAVAILABLE` or
//!   `DATA_LOSS`, which say the server or its data failed;
//! - answer well-formed messages: each decodes as the call's response; a
//!   read's chunks merge into rows under every rule a client checks, no
//!   more rows than its limit; `MutateRows` answers each entry once, in
//!   order;
//! - raise the process's peak resident memory by at most
//!   [`MEMORY_PER_CALL`] plus [`MEMORY_PER_REQUEST_BYTE`] times its size.
//!
//! Every [`CALLS_PER_DATABASE`] calls the database is closed, checked
//! (`verify_database`) and replaced by a fresh one.
//!
//! `CELLARDB_FUZZ_SECS` sets each family's budget in CPU seconds of the
//! process (default 1, what `cargo test` runs); `CELLARDB_FUZZ_SEED` the
//! seed; `CELLARDB_FUZZ_SHOW=1` prints each answer told apart when it is
//! first seen. A failing request is saved in `target/fuzz-crashes/`. The long
//! form runs a family per process, so that each is charged its own CPU
//! (`docs/server.md`, "Hostile requests").

mod requests;
#[path = "../support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::{Buf, Bytes};
use cellardb::{Db, Durability, Options};
use cellardb_server::ServeOptions;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use http_body_util::{BodyExt, Full};
use prost::Message;
use requests::Rng;
use tonic::codegen::{Service, http};
use tonic::service::Routes;

/// A call that takes longer than this hangs.
const CALL_DEADLINE: Duration = Duration::from_secs(60);

/// What one call may add to the process's peak resident memory, beside
/// what its request's size accounts for: a request's decoded messages may
/// take 64 MiB (twice that while a list of them grows), its filter's
/// compiled patterns 64 MiB and their caches 16 MiB, and a read holds a
/// few responses of 256 KiB.
const MEMORY_PER_CALL: u64 = 256 << 20;
const MEMORY_PER_REQUEST_BYTE: u64 = 8;

/// Calls made against one database before it is checked and replaced.
const CALLS_PER_DATABASE: usize = 3000;

/// Well-formed requests each method's pool starts from.
const SEEDS_PER_METHOD: usize = 24;

/// An RPC: its route, its requests, and what its answer must be.
struct Method {
    path: &'static str,
    generate: fn(&mut Rng) -> Vec<u8>,
    check: fn(request: &[u8], messages: &[Bytes]) -> Result<(), String>,
}

const DATA: &str = "/google.bigtable.v2.Bigtable/";
const ADMIN: &str = "/google.bigtable.admin.v2.BigtableTableAdmin/";

/// Each message decodes as `T`.
fn decodes_as<T: Message + Default>(_request: &[u8], messages: &[Bytes]) -> Result<(), String> {
    messages
        .iter()
        .try_for_each(|m| T::decode(m.clone()).map(drop).map_err(|e| format!("an answer does not decode: {e}")))
}

/// A read's answer merges into rows, at most its limit of them.
fn read_answer(request: &[u8], messages: &[Bytes]) -> Result<(), String> {
    let request =
        pb::ReadRowsRequest::decode(request).map_err(|e| format!("answered a request that does not decode: {e}"))?;
    let mut chunks = Vec::new();
    for m in messages {
        let response =
            pb::ReadRowsResponse::decode(m.clone()).map_err(|e| format!("an answer does not decode: {e}"))?;
        chunks.extend(response.chunks);
    }
    let rows = support::merge_chunks(&chunks, request.reversed)?;
    let limit = usize::try_from(request.rows_limit).unwrap_or(0);
    if limit > 0 && rows.len() > limit {
        return Err(format!("{} rows answered with a limit of {limit}", rows.len()));
    }
    Ok(())
}

/// A `MutateRows` answer names each entry once, in order.
fn mutate_rows_answer(request: &[u8], messages: &[Bytes]) -> Result<(), String> {
    let request =
        pb::MutateRowsRequest::decode(request).map_err(|e| format!("answered a request that does not decode: {e}"))?;
    let mut indexes = Vec::new();
    for m in messages {
        let response =
            pb::MutateRowsResponse::decode(m.clone()).map_err(|e| format!("an answer does not decode: {e}"))?;
        indexes.extend(response.entries.iter().map(|e| e.index));
    }
    let expected: Vec<i64> = (0..i64::try_from(request.entries.len()).unwrap_or(0)).collect();
    if indexes != expected {
        return Err(format!("entries answered {indexes:?} for {} entries", request.entries.len()));
    }
    Ok(())
}

const READS: &[Method] = &[
    Method { path: "ReadRows", generate: requests::read_rows, check: read_answer },
    Method {
        path: "SampleRowKeys",
        generate: requests::sample_row_keys,
        check: decodes_as::<pb::SampleRowKeysResponse>,
    },
];

const WRITES: &[Method] = &[
    Method { path: "MutateRow", generate: requests::mutate_row, check: decodes_as::<pb::MutateRowResponse> },
    Method { path: "MutateRows", generate: requests::mutate_rows, check: mutate_rows_answer },
    Method {
        path: "CheckAndMutateRow",
        generate: requests::check_and_mutate_row,
        check: decodes_as::<pb::CheckAndMutateRowResponse>,
    },
    Method {
        path: "ReadModifyWriteRow",
        generate: requests::read_modify_write_row,
        check: decodes_as::<pb::ReadModifyWriteRowResponse>,
    },
    Method { path: "PingAndWarm", generate: requests::ping_and_warm, check: decodes_as::<pb::PingAndWarmResponse> },
    Method { path: "ExecuteQuery", generate: requests::unserved, check: decodes_as::<pb::ExecuteQueryResponse> },
    Method {
        path: "ReadChangeStream",
        generate: requests::unserved,
        check: decodes_as::<pb::ReadChangeStreamResponse>,
    },
];

const ADMINS: &[Method] = &[
    Method { path: "CreateTable", generate: requests::create_table, check: decodes_as::<admin::Table> },
    Method { path: "ListTables", generate: requests::list_tables, check: decodes_as::<admin::ListTablesResponse> },
    Method { path: "GetTable", generate: requests::get_table, check: decodes_as::<admin::Table> },
    Method { path: "DeleteTable", generate: requests::delete_table, check: decodes_as::<()> },
    Method {
        path: "ModifyColumnFamilies",
        generate: requests::modify_column_families,
        check: decodes_as::<admin::Table>,
    },
    Method { path: "DropRowRange", generate: requests::drop_row_range, check: decodes_as::<()> },
    Method {
        path: "GenerateConsistencyToken",
        generate: requests::generate_consistency_token,
        check: decodes_as::<admin::GenerateConsistencyTokenResponse>,
    },
    Method {
        path: "CheckConsistency",
        generate: requests::check_consistency,
        check: decodes_as::<admin::CheckConsistencyResponse>,
    },
    Method { path: "CreateBackup", generate: requests::unserved, check: decodes_as::<()> },
];

#[test]
fn reads_answer_any_request_truthfully_in_bounded_time_and_memory() {
    fuzz("reads", DATA, READS);
}

#[test]
fn writes_answer_any_request_truthfully_in_bounded_time_and_memory() {
    fuzz("writes", DATA, WRITES);
}

#[test]
fn admin_calls_answer_any_request_truthfully_in_bounded_time_and_memory() {
    fuzz("admin", ADMIN, ADMINS);
}

/// One family fuzzes at a time, so that the process's CPU time is its own.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Panics anywhere in the process since the hook went in.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A request in the pool: its method and bytes.
type Input = (usize, Vec<u8>);

fn fuzz(family: &str, service: &str, methods: &[Method]) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    count_panics();
    let budget = Duration::from_secs(env_u64("CELLARDB_FUZZ_SECS", 1));
    let mut rng = Rng::new(env_u64("CELLARDB_FUZZ_SEED", 0x5eed) ^ family.len() as u64);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut pool: Vec<Input> = (0..methods.len())
        .flat_map(|m| (0..SEEDS_PER_METHOD).map(move |_| m))
        .map(|m| (m, (methods[m].generate)(&mut rng)))
        .collect();
    let mut seen = HashSet::new();
    let mut database = runtime.block_on(Database::fresh());
    let (cpu_before, mut calls, mut most_memory) = (process_cpu(), 0usize, 0u64);
    let seeds = pool.len();
    while process_cpu().saturating_sub(cpu_before) < budget || calls < seeds {
        let (method, request) = next_input(&mut rng, &pool, methods, calls);
        let path = format!("{service}{}", methods[method].path);
        let reverse_header = rng.one_in(2);
        let answered = catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(checked_call(&mut database.routes, &path, &request, reverse_header, methods[method].check))
        }));
        let outcome = match answered {
            Ok(Ok((outcome, memory))) => {
                most_memory = most_memory.max(memory);
                outcome
            }
            Ok(Err(failure)) => fail(family, &path, &request, &failure),
            Err(_) => fail(family, &path, &request, "the call panicked"),
        };
        if std::env::var_os("CELLARDB_FUZZ_SHOW").is_some() && !seen.contains(&(method, outcome.clone())) {
            eprintln!("{} {:?}", methods[method].path, outcome);
        }
        if seen.insert((method, outcome)) {
            pool.push((method, request));
        }
        calls += 1;
        if calls.is_multiple_of(CALLS_PER_DATABASE) {
            database.check();
            database = runtime.block_on(Database::fresh());
        }
    }
    database.check();
    eprintln!(
        "fuzzed {family}: {calls} calls in {:.1} s of CPU, {} answers told apart, {} requests in the pool, \
         a call's peak resident memory at most {} KiB over its start",
        process_cpu().saturating_sub(cpu_before).as_secs_f64(),
        seen.len(),
        pool.len(),
        most_memory >> 10
    );
}

/// The pool's requests first, each as drawn; then a fresh request one time
/// in four, else a pool request mutated.
fn next_input(rng: &mut Rng, pool: &[Input], methods: &[Method], calls: usize) -> Input {
    if let Some(seed) = pool.get(calls).filter(|_| calls < methods.len() * SEEDS_PER_METHOD) {
        return seed.clone();
    }
    if rng.one_in(4) {
        let method = rng.below(methods.len());
        return (method, (methods[method].generate)(rng));
    }
    let (method, mut bytes) = pool[rng.below(pool.len())].clone();
    let other = &pool[rng.below(pool.len())].1;
    for _ in 0..=rng.below(4) {
        mutate(rng, &mut bytes, other);
    }
    (method, bytes)
}

/// One random change to `data`; `other` is a request to splice from.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    const EDGES: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x0a, 0x12];
    let len = data.len();
    let at = rng.below(len);
    let end = (at + 1 + rng.below(24)).min(len);
    match rng.below(6) {
        0 if len > 0 => data[at] ^= 1 << rng.below(8),
        1 if len > 0 => data[at] = rng.pick(&EDGES),
        2 if len > 0 => drop(data.drain(at..end)),
        3 if len > 0 => {
            let copy = data[at..end].to_vec();
            let to = rng.below(len + 1);
            data.splice(to..to, copy);
        }
        4 if !other.is_empty() => {
            let from = rng.below(other.len());
            let part = &other[from..(from + 1 + rng.below(64)).min(other.len())];
            let to = rng.below(len + 1);
            data.splice(to..to, part.iter().copied());
        }
        _ => data.truncate(at),
    }
}

fn fail(family: &str, path: &str, request: &[u8], failure: &str) -> ! {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../fuzz-crashes");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("server-{family}-{}.bin", path.rsplit('/').next().unwrap_or("call")));
    std::fs::write(&file, request).unwrap();
    panic!("{path}: {failure} (request saved in {})", file.display());
}

/// What tells two answers apart: the status code, the message's first
/// words (names and figures in it vary without meaning a new path), and
/// the answer's size to a power of two.
type Outcome = (i32, String, u32);

/// Calls `path` with `request` and checks everything the answer must be;
/// how its answer differs from others, and how far it raised the peak of
/// resident memory.
async fn checked_call(
    routes: &mut Routes,
    path: &str,
    request: &[u8],
    reverse_header: bool,
    check: fn(&[u8], &[Bytes]) -> Result<(), String>,
) -> Result<(Outcome, u64), String> {
    let panics_before = PANICS.load(Ordering::SeqCst);
    let resident_before = memory::start();
    let answer = tokio::time::timeout(CALL_DEADLINE, call(routes, path, request, reverse_header))
        .await
        .map_err(|_| format!("no answer within {CALL_DEADLINE:?}"))??;
    let grown = memory::peak_growth(resident_before);
    if PANICS.load(Ordering::SeqCst) != panics_before {
        return Err("a panic while the call ran".to_owned());
    }
    let allowed = MEMORY_PER_CALL + MEMORY_PER_REQUEST_BYTE * request.len() as u64;
    if grown > allowed {
        return Err(format!("peak resident memory grew by {grown} bytes, over {allowed}"));
    }
    let code = tonic::Code::from_i32(answer.code);
    match code {
        tonic::Code::Ok => check(request, &answer.messages)?,
        tonic::Code::InvalidArgument
        | tonic::Code::NotFound
        | tonic::Code::AlreadyExists
        | tonic::Code::FailedPrecondition
        | tonic::Code::OutOfRange
        | tonic::Code::Unimplemented => {}
        _ => return Err(format!("answered {code:?}: {}", answer.message)),
    }
    let size: usize = answer.messages.iter().map(Bytes::len).sum();
    Ok(((answer.code, shape_of(&answer.message), usize::BITS - size.leading_zeros()), grown))
}

/// A status message's first words, without what it quotes and with
/// figures blanked: what says which path refused a request, without the
/// names and numbers that vary with it.
fn shape_of(message: &str) -> String {
    let decoded = percent_decoded(message);
    let (mut unquoted, mut quoted, mut escaped) = (String::new(), false, false);
    for c in decoded.chars() {
        match (c, quoted, escaped) {
            (_, true, true) => escaped = false,
            ('\\', true, false) => escaped = true,
            ('"', _, _) => quoted = !quoted,
            (_, true, false) => {}
            (c, false, _) if c.is_ascii_digit() => {
                if !unquoted.ends_with('#') {
                    unquoted.push('#');
                }
            }
            (c, false, _) => unquoted.push(c),
        }
    }
    let words = unquoted.split([' ', ':']).filter(|w| !w.is_empty()).take(6);
    words.map(|w| if w.contains('/') { "/" } else { w }).collect::<Vec<_>>().join(" ")
}

/// `grpc-message` as sent: percent-encoded.
fn percent_decoded(message: &str) -> String {
    let bytes = message.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An answer as it came: its status and messages.
struct Answer {
    code: i32,
    message: String,
    messages: Vec<Bytes>,
}

/// One gRPC call through `routes`, its answer read to the end.
async fn call(routes: &mut Routes, path: &str, request: &[u8], reverse_header: bool) -> Result<Answer, String> {
    let mut framed = Vec::with_capacity(request.len() + 5);
    framed.push(0);
    framed.extend_from_slice(&u32::try_from(request.len()).unwrap().to_be_bytes());
    framed.extend_from_slice(request);
    let mut builder = http::Request::post(path).header("content-type", "application/grpc").header("te", "trailers");
    if reverse_header {
        let flags = pb::FeatureFlags { reverse_scans: true, ..pb::FeatureFlags::default() };
        builder = builder
            .header("bigtable-features", base64::engine::general_purpose::URL_SAFE.encode(flags.encode_to_vec()));
    }
    let http_request = builder.body(tonic::body::Body::new(Full::new(Bytes::from(framed)))).unwrap();
    std::future::poll_fn(|cx| Service::<http::Request<tonic::body::Body>>::poll_ready(routes, cx)).await.unwrap();
    let response = routes.call(http_request).await.unwrap();
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.map_err(|e| format!("the answer's body failed: {e}"))?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let status_of = |name: &str| {
        parts
            .headers
            .get(name)
            .or_else(|| trailers.get(name))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let code = status_of("grpc-status").ok_or("an answer without grpc-status")?;
    let code: i32 = code.parse().map_err(|_| format!("grpc-status {code:?}"))?;
    let message = status_of("grpc-message").unwrap_or_default();
    Ok(Answer { code, message, messages: frames(collected.to_bytes())? })
}

/// The messages of a gRPC body: each a flag byte (0, not compressed), a
/// 4-byte big-endian length and the message.
fn frames(mut body: Bytes) -> Result<Vec<Bytes>, String> {
    let mut messages = Vec::new();
    while body.has_remaining() {
        if body.remaining() < 5 {
            return Err(format!("a frame header cut at {} bytes", body.remaining()));
        }
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        if flag != 0 || len > body.remaining() {
            return Err(format!("a frame with flag {flag} and length {len}, {} bytes left", body.remaining()));
        }
        messages.push(body.split_to(len));
    }
    Ok(messages)
}

/// The small database a family is fuzzed against, and the services over it.
struct Database {
    db: Db,
    routes: Routes,
    dir: tempfile::TempDir,
}

impl Database {
    /// The table [`requests::TABLE`] with its three families and 400 rows,
    /// 300 of them in a file and 100 in the memtable; a small memtable, so
    /// that writes reach files.
    async fn fresh() -> Database {
        let dir = tempfile::tempdir().unwrap();
        let db = Options::default().durability(Durability::Buffered).memtable_size(256 << 10).open(dir.path()).unwrap();
        let options = ServeOptions { value_chunk: 64, instance: cellardb_server::DEFAULT_INSTANCE.to_owned() };
        let mut routes = cellardb_server::routes(db.clone(), &options).unwrap();
        let seeded = seed(&mut routes, 0..300).await.and_then(|()| db.flush().map_err(|e| e.to_string()));
        seeded.and(seed(&mut routes, 300..400).await).unwrap();
        Database { db, routes, dir }
    }

    /// Closes the database and checks its files; it must reopen.
    fn check(&self) {
        self.db.close().unwrap();
        let report = cellardb::inspect::verify_database(self.dir.path(), true).unwrap();
        assert!(report.faults.is_empty(), "the fuzzed database does not verify: {:?}", report.faults);
        Db::open(self.dir.path()).unwrap().close().unwrap();
    }
}

async fn seed(routes: &mut Routes, rows: std::ops::Range<u32>) -> Result<(), String> {
    use admin::gc_rule::Rule;
    use pb::mutation::{Mutation as M, SetCell};
    if rows.start == 0 {
        let family = |rule| admin::ColumnFamily { gc_rule: Some(admin::GcRule { rule: Some(rule) }), value_type: None };
        let families = [
            ("cf".to_owned(), family(Rule::MaxNumVersions(3))),
            ("old".to_owned(), family(Rule::MaxAge(prost_types::Duration { seconds: 86_400, nanos: 0 }))),
            ("sum".to_owned(), sum_family()),
        ];
        let create = admin::CreateTableRequest {
            parent: requests::INSTANCE.to_owned(),
            table_id: "t".to_owned(),
            table: Some(admin::Table { column_families: families.into_iter().collect(), ..admin::Table::default() }),
            initial_splits: Vec::new(),
        };
        expect_ok(&call(routes, &format!("{ADMIN}CreateTable"), &create.encode_to_vec(), false).await?)?;
    }
    let set = |family: &str, qualifier: &[u8], value: Vec<u8>| pb::Mutation {
        mutation: Some(M::SetCell(SetCell {
            family_name: family.to_owned(),
            column_qualifier: Bytes::copy_from_slice(qualifier),
            timestamp_micros: 1_000_000,
            value: value.into(),
        })),
    };
    let entries = rows
        .map(|i| pb::mutate_rows_request::Entry {
            row_key: Bytes::from(format!("r{i:03}")),
            mutations: vec![
                set("cf", b"a", vec![b'v'; 100]),
                set("cf", b"b", i.to_be_bytes().to_vec()),
                set("sum", b"n", 7i64.to_be_bytes().to_vec()),
            ],
            idempotency: None,
        })
        .collect();
    let write =
        pb::MutateRowsRequest { table_name: requests::TABLE.to_owned(), entries, ..pb::MutateRowsRequest::default() };
    expect_ok(&call(routes, &format!("{DATA}MutateRows"), &write.encode_to_vec(), false).await?)
}

fn sum_family() -> admin::ColumnFamily {
    use admin::r#type::aggregate::{Aggregator, Sum};
    use admin::r#type::{Aggregate, Int64, Kind};
    let int64 = Box::new(admin::Type { kind: Some(Kind::Int64Type(Int64 { encoding: None })) });
    let aggregate = Aggregate { input_type: Some(int64), state_type: None, aggregator: Some(Aggregator::Sum(Sum {})) };
    admin::ColumnFamily {
        gc_rule: None,
        value_type: Some(admin::Type { kind: Some(Kind::AggregateType(Box::new(aggregate))) }),
    }
}

fn expect_ok(answer: &Answer) -> Result<(), String> {
    if answer.code == 0 { Ok(()) } else { Err(format!("seeding answered {}: {}", answer.code, answer.message)) }
}

/// The process's CPU time, user and system (`/proc/self/stat`, in ticks of
/// 1/100 s, the value Linux gives user space).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after_name.split_whitespace().skip(11).take(2).filter_map(|t| t.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// The process's peak resident memory over a call (`VmHWM`, which Linux
/// lets a process reset): a peak, so a spike between samples is not
/// missed; resident, so memory the allocator kept from earlier calls and
/// reuses is not counted again.
mod memory {
    /// Resets the peak; the resident memory now.
    pub fn start() -> u64 {
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        status_bytes("VmRSS:")
    }

    /// How far the peak rose over `resident_before`.
    pub fn peak_growth(resident_before: u64) -> u64 {
        status_bytes("VmHWM:").saturating_sub(resident_before)
    }

    fn status_bytes(field: &str) -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = status.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().strip_suffix("kB"));
        kib.and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0) * 1024
    }
}
