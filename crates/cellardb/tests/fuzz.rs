//! Fuzzing every decoder, on stable Rust, through the engine's public
//! seam for tools (`cellardb::inspect`) and its API.
//!
//! cargo-fuzz needs a nightly toolchain; this is a mutation fuzzer of our
//! own, run as tests. Each target is a decoder the engine runs on bytes
//! from disk: an SSTable file and each of its block kinds, a log file and
//! a log record's payload, a log and a manifest file (as found, and with
//! their record checksums made right so mutations reach the decoders), and
//! filters with regexes from arbitrary text. Seeds are valid files the
//! engine writes, plus the corpus kept in `fuzz/corpus/<target>/`.
//!
//! An input is mutated (bits flipped, bytes set to edge values, ranges
//! deleted, duplicated or spliced from another input, integers overwritten
//! with boundary values) and decoded under `catch_unwind`. Without
//! coverage instrumentation, the outcome stands in for coverage: an input
//! that decodes, or fails with an error not seen before, joins the pool.
//! A panic fails the test and leaves the input in `target/fuzz-crashes/`;
//! each one found becomes a named regression test beside the decoder.
//!
//! `CELLARDB_FUZZ_SECS` sets the CPU time per target (default 1, what `cargo
//! test` runs); `CELLARDB_FUZZ_SEED` the seed; `CELLARDB_FUZZ_SAVE=1`
//! writes the generated seeds into the corpus. `docs/reliability.md` gives
//! the long form and its figures.

mod common;

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cellardb::fs::{Fs, MemFs};
use cellardb::inspect::{
    LogReader, SST_FOOTER_LEN, SstFile, decode_data_block, decode_index_block, decode_log_payload,
    decode_properties_block, decode_sst_footer, read_manifest,
};
use cellardb::{
    Aggregate, Compression, Db, Error, FamilySchema, Filter, GcRule, Mutation, Options, RowRange, RowSet, Table,
    TimeRange,
};
use common::Rng;

/// A decoder under test: bytes in, an outcome out (`"ok"` or the error's
/// kind), panicking only on a defect.
type Decode = fn(&[u8]) -> String;

/// Values at the edges of what fields hold.
const EDGES: [u64; 12] = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x7fff_ffff, 0xffff_ffff, 1 << 40, u64::MAX];

/// One random change to `data`; `other` is another input to splice from.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    let len = data.len();
    match rng.index(9) {
        0 if len > 0 => {
            let at = rng.index(len);
            data[at] ^= 1 << rng.index(8);
        }
        1 if len > 0 => {
            let at = rng.index(len);
            data[at] = EDGES[rng.index(EDGES.len())].to_le_bytes()[0];
        }
        2 if len > 0 => {
            let at = rng.index(len);
            let end = (at + 1 + rng.index(16)).min(len);
            data.drain(at..end);
        }
        3 if len > 0 => {
            let at = rng.index(len);
            let end = (at + 1 + rng.index(64)).min(len);
            let copy = data[at..end].to_vec();
            let to = rng.index(len);
            data.splice(to..to, copy);
        }
        4 if !other.is_empty() => {
            let at = rng.index(other.len());
            let end = (at + 1 + rng.index(256)).min(other.len());
            let to = rng.index(len + 1);
            let cut = (to + rng.index(64)).min(len);
            data.splice(to..cut, other[at..end].iter().copied());
        }
        5 if len >= 8 => {
            let at = rng.index(len - 7);
            let width = [1, 2, 4, 8][rng.index(4)];
            let value = EDGES[rng.index(EDGES.len())].wrapping_add(rng.index(3) as u64).wrapping_sub(1);
            data[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
        6 if len > 0 => data.truncate(rng.index(len)),
        7 => {
            let at = rng.index(len + 1);
            let bytes: Vec<u8> = (0..=rng.index(16)).map(|_| rng.next().to_le_bytes()[0]).collect();
            data.splice(at..at, bytes);
        }
        _ if len > 0 => {
            // A varint-sized run of 0xff: lengths and counts that overflow.
            let at = rng.index(len);
            let end = (at + 1 + rng.index(10)).min(len);
            data[at..end].fill(0xff);
        }
        _ => data.push(rng.next().to_le_bytes()[0]),
    }
}

/// The CPU time this thread has used, where Linux tells it
/// (`/proc/thread-self/schedstat`); else the time since `started`.
/// Fuzzing is budgeted in CPU time, so that targets sharing the cores with
/// other work still get what the budget says.
fn cpu_time(started: Instant) -> Duration {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok();
    let nanos = schedstat.and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    nanos.map_or_else(|| started.elapsed(), Duration::from_nanos)
}

/// What a fuzz run did.
struct Ran {
    executions: u64,
    outcomes: usize,
    cpu: Duration,
    wall: Duration,
}

/// Fuzzes `decode` from `seeds` for `budget` of CPU time; returns what it
/// did. Panics with the input's file if `decode` panics.
fn fuzz(name: &str, decode: Decode, seeds: Vec<Vec<u8>>, budget: Duration, seed: u64) -> Ran {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let mut rng = Rng(seed ^ name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
    let mut pool = seeds;
    let mut outcomes: HashSet<String> = HashSet::new();
    let started = Instant::now();
    let cpu_before = cpu_time(started);
    let mut execs = 0u64;
    while cpu_time(started).saturating_sub(cpu_before) < budget {
        for _ in 0..1024 {
            let mut input = pool[rng.index(pool.len())].clone();
            let other = pool[rng.index(pool.len())].clone();
            for _ in 0..=rng.index(4) {
                mutate(&mut rng, &mut input, &other);
            }
            input.truncate(1 << 20);
            execs += 1;
            let Ok(outcome) = catch_unwind(AssertUnwindSafe(|| decode(&input))) else {
                let path = save_crash(name, &input);
                panic!("fuzz target {name} panicked on the input saved in {}", path.display());
            };
            if outcomes.insert(outcome) && pool.len() < 4096 {
                pool.push(input);
            }
        }
    }
    let (cpu, wall) = (cpu_time(started).saturating_sub(cpu_before), started.elapsed());
    Ran { executions: execs, outcomes: outcomes.len(), cpu, wall }
}

fn save_crash(name: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-crashes").join(name);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{:016x}", crc32fast::hash(input)));
    let _ = std::fs::write(&path, input);
    path
}

/// The corpus of `target` kept in the repository.
fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target)
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(corpus_dir(target)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Valid files and parts of files, as the engine writes them.
struct Seeds {
    ssts: Vec<Vec<u8>>,
    blocks: Vec<Vec<u8>>,
    indexes: Vec<Vec<u8>>,
    props: Vec<Vec<u8>>,
    footers: Vec<Vec<u8>>,
    logs: Vec<Vec<u8>>,
    payloads: Vec<Vec<u8>>,
    manifests: Vec<Vec<u8>>,
}

/// Writes a database of every kind of content — plain and aggregate
/// families, versions, deletes, range drops, wide rows, large values —
/// and keeps its files, blocks uncompressed so that blocks can be taken
/// out whole.
fn seeds() -> Seeds {
    let fs = MemFs::new();
    let dir = Path::new("/seed");
    let opts = Options::default()
        .block_size(512)
        .compression(Compression::None)
        .memtable_size(1 << 20)
        .file_system(Arc::new(fs.clone()));
    let db = opts.open(dir).expect("open");
    let plain = |name: &str, gc_rule| FamilySchema { name: name.into(), gc_rule, aggregate: None };
    let families = [
        plain("cf", GcRule::max_versions(3)),
        plain("old", GcRule::union([GcRule::max_age(Duration::from_secs(60)), GcRule::max_versions(1)])),
        FamilySchema { name: "sum".into(), gc_rule: GcRule::none(), aggregate: Some(Aggregate::Sum) },
    ];
    db.create_table_with_families("t", families).expect("table");
    let t = db.table("t").expect("t");
    write_seed_rows(&t);
    db.flush().expect("flush");
    t.drop_row_range(RowRange::prefix("row1")).expect("drop");
    write_seed_rows(&t);
    // Closed, so no compaction removes a file while it is read.
    drop(t);
    db.close().expect("close");
    let mut seeds = Seeds {
        ssts: Vec::new(),
        blocks: Vec::new(),
        indexes: Vec::new(),
        props: Vec::new(),
        footers: Vec::new(),
        logs: Vec::new(),
        payloads: Vec::new(),
        manifests: vec![fs.read(&dir.join("MANIFEST")).expect("manifest")],
    };
    for name in fs.list(dir).expect("list") {
        let path = dir.join(&name);
        let data = fs.read(&path).expect("read");
        let extension = path.extension().and_then(|e| e.to_str());
        if extension == Some("sst") {
            take_sst_parts(&path, &data, &mut seeds);
        } else if extension == Some("log") {
            let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let log = data[..end].to_vec();
            seeds.payloads.extend(log_payloads(&log));
            seeds.logs.push(log);
        }
    }
    seeds
}

fn write_seed_rows(t: &Table) {
    for i in 0..120i64 {
        let row = format!("row{i:03}");
        let mut m = vec![
            Mutation::set_cell(
                "cf",
                format!("q{}", i % 4),
                1000 * i,
                format!("v{i}").repeat(usize::try_from(i % 9).unwrap_or(0)),
            ),
            Mutation::add_to_cell("sum", "n", 5000, i - 60),
        ];
        match i % 10 {
            0 => m.push(Mutation::delete_from_column("cf", "q0", TimeRange::new(0, 5000))),
            1 => m.push(Mutation::delete_from_family("old")),
            2 => m = vec![Mutation::delete_from_row()],
            3 => m.push(Mutation::set_cell("old", "big", 1000 * i, vec![b'z'; 900])),
            _ => m.push(Mutation::set_cell("cf", "wide", 1000 * i, "w")),
        }
        t.mutate_row(row, m).expect("mutate");
    }
}

/// The file, each data block's bytes (uncompressed), its index and
/// properties blocks (stored uncompressed, so taken as they lie) and its
/// footer.
fn take_sst_parts(path: &Path, data: &[u8], seeds: &mut Seeds) {
    let sst = SstFile::open(path, Bytes::copy_from_slice(data)).expect("sst");
    for i in 0..sst.block_count() {
        seeds.blocks.push(sst.block_bytes(i).expect("block"));
    }
    let slice = |span: cellardb::inspect::BlockSpan| {
        let start = usize::try_from(span.offset).unwrap_or(0);
        data[start..start + span.stored_bytes as usize].to_vec()
    };
    let spans = sst.layout().spans;
    seeds.indexes.push(slice(spans.index));
    seeds.props.push(slice(spans.properties));
    seeds.footers.push(data[data.len() - SST_FOOTER_LEN..].to_vec());
    seeds.ssts.push(data.to_vec());
}

/// The payloads of a log's records, by its framing (`docs/format/wal.md`):
/// a 12-byte file header, then records of a header checksum, a payload
/// length and a payload checksum (4 bytes each) before the payload.
fn log_payloads(log: &[u8]) -> Vec<Vec<u8>> {
    let mut payloads = Vec::new();
    let mut pos = 12;
    while pos + 12 <= log.len() {
        let len = u32::from_le_bytes(log[pos + 4..pos + 8].try_into().unwrap_or_default()) as usize;
        let Some(end) = (pos + 12).checked_add(len).filter(|&end| end <= log.len()) else { break };
        payloads.push(log[pos + 12..end].to_vec());
        pos = end;
    }
    payloads
}

fn outcome<T>(result: Result<T, Error>) -> String {
    match result {
        Ok(_) => "ok".into(),
        // The message's text up to its first digit or quote: the kind of
        // fault, not where it was or the input it quotes.
        Err(e) => {
            let text = match e {
                Error::Corruption { what, .. } => what,
                other => other.to_string(),
            };
            text.split(|c: char| c.is_ascii_digit() || c == '"').next().unwrap_or_default().to_owned()
        }
    }
}

/// A data block, each entry taken by its position as a read seeking into
/// the block takes it.
fn decode_block(data: &[u8]) -> String {
    match decode_data_block(data) {
        Ok(block) => format!("ok {}", block.entries.len().min(1) + block.rows.min(1)),
        Err(e) => outcome::<()>(Err(e)),
    }
}

fn decode_index(data: &[u8]) -> String {
    outcome(decode_index_block(data))
}

fn decode_props(data: &[u8]) -> String {
    outcome(decode_properties_block(data))
}

fn decode_footer(data: &[u8]) -> String {
    outcome(decode_sst_footer(data))
}

fn decode_sst(data: &[u8]) -> String {
    match SstFile::open(Path::new("fuzz.sst"), Bytes::copy_from_slice(data)) {
        Ok(sst) => {
            let report = sst.check();
            let _ = sst.may_contain_row(b"row001");
            format!("ok {}", report.faults.len().min(1))
        }
        Err(e) => outcome::<()>(Err(e)),
    }
}

fn decode_log(data: &[u8]) -> String {
    outcome(LogReader::new(Path::new("fuzz.log"), data).read(|_, _| Ok(())))
}

/// A log whose record checksums are made right after mutation, so that
/// mutated lengths and payloads reach the framing and the payload decoder.
fn decode_log_records(data: &[u8]) -> String {
    let mut data = data.to_vec();
    let mut pos = 12; // magic and version
    while pos + 12 <= data.len() {
        let len = u32::from_le_bytes(data[pos + 4..pos + 8].try_into().unwrap_or_default()) as usize;
        let Some(end) = (pos + 12).checked_add(len).filter(|&end| end <= data.len()) else { break };
        let payload_crc = crc32fast::hash(&data[pos + 12..end]);
        data[pos + 8..pos + 12].copy_from_slice(&payload_crc.to_le_bytes());
        let header_crc = crc32fast::hash(&data[pos + 4..pos + 12]);
        data[pos..pos + 4].copy_from_slice(&header_crc.to_le_bytes());
        pos = end;
    }
    decode_log(&data)
}

fn decode_payload(data: &[u8]) -> String {
    match decode_log_payload(data) {
        Ok(batch) => format!("ok {}", batch.entries.len().min(2)),
        Err(e) => outcome::<()>(Err(e)),
    }
}

fn decode_manifest(data: &[u8]) -> String {
    outcome(read_manifest(Path::new("fuzz-MANIFEST"), data))
}

/// A manifest whose record checksums are made right after mutation, so
/// that mutated payloads reach the record decoder.
fn decode_manifest_records(data: &[u8]) -> String {
    let mut data = data.to_vec();
    let mut pos = 12; // magic and version
    while pos + 8 <= data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap_or_default()) as usize;
        let Some(end) = (pos + 8).checked_add(len).filter(|&end| end <= data.len()) else { break };
        let crc = crc32fast::hash(&data[pos + 8..end]);
        data[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
    decode_manifest(&data)
}

thread_local! {
    /// A small table the filter target reads, one per test thread.
    static FILTER_DB: (Db, Table) = filter_db();
}

fn filter_db() -> (Db, Table) {
    let fs = MemFs::new();
    let db = Options::default().file_system(Arc::new(fs)).open("/filters").expect("open");
    let t = db.create_table("t", [("cf", GcRule::none()), ("cg", GcRule::max_versions(2))]).expect("table");
    for (i, key) in [&b"a"[..], b"ab\x00c", b"\xff\xfe", b"row\n7"].iter().enumerate() {
        let value = [b"v", &b"\x00\xff"[..], b"hello"][i % 3];
        t.mutate_row(key, [Mutation::set_cell("cf", *key, 1000, value), Mutation::set_cell("cg", "q", 2000, "x")])
            .expect("row");
    }
    (db, t)
}

/// A filter built from bytes: its patterns and labels are the bytes as
/// text, its numbers taken from them.
fn filter_of(data: &[u8], depth: usize) -> (Filter, usize) {
    let Some((&op, rest)) = data.split_first() else { return (Filter::pass_all(), 0) };
    let n = rest.first().copied().map_or(0, u32::from);
    let text_len = rest.first().map_or(0, |&b| usize::from(b % 24)).min(rest.len().saturating_sub(1));
    let text = String::from_utf8_lossy(rest.get(1..1 + text_len).unwrap_or_default()).into_owned();
    let used = 1 + if rest.is_empty() { 0 } else { 1 + text_len };
    let filter = match op % 16 {
        0 => Filter::row_key_regex(&text),
        1 => Filter::value_regex(&text),
        2 => Filter::family_name_regex(&text),
        3 => Filter::column_qualifier_regex(&text),
        4 => Filter::apply_label(text),
        5 => Filter::cells_per_column_limit(n),
        6 => Filter::cells_per_row_offset(n),
        7 => Filter::cells_per_row_limit(n),
        8 => Filter::timestamp_range(TimeRange::new(i64::from(n) * 1000 - 3000, i64::from(n) * 1500)),
        9 => Filter::value_range(std::ops::Bound::Included(text.as_bytes()), std::ops::Bound::Unbounded),
        10 => Filter::column_range("cf", std::ops::Bound::Excluded(text.as_bytes()), std::ops::Bound::Unbounded),
        11 => Filter::strip_value(),
        12 => Filter::row_sample(f64::from(n) / 128.0),
        _ if depth > 4 => Filter::sink(),
        13 | 14 => {
            let (a, used_a) = filter_of(&data[used..], depth + 1);
            let (b, used_b) = filter_of(&data[used + used_a..], depth + 1);
            let pair = [a, b];
            let f = if op % 16 == 13 { Filter::chain(pair) } else { Filter::interleave(pair) };
            return (f, used + used_a + used_b);
        }
        _ => {
            let (p, used_p) = filter_of(&data[used..], depth + 1);
            let (t, used_t) = filter_of(&data[used + used_p..], depth + 1);
            return (Filter::condition(p, Some(t), None), used + used_p + used_t);
        }
    };
    (filter, used)
}

fn evaluate_filter(data: &[u8]) -> String {
    let (filter, _) = filter_of(data, 0);
    if let Err(e) = filter.validate() {
        assert!(matches!(e, Error::InvalidArgument(_)), "a bad filter gives InvalidArgument, not {e}");
        return outcome::<()>(Err(e));
    }
    FILTER_DB.with(|(_, t)| {
        let forward = t.read_rows(RowSet::all(), &filter).collect_rows();
        let reversed = t.read_rows(RowSet::all(), &filter).reversed().collect_rows();
        match (&forward, &reversed) {
            (Ok(f), Ok(r)) => {
                let f_keys: Vec<_> = f.iter().map(|row| row.key.clone()).collect();
                let mut r_keys: Vec<_> = r.iter().map(|row| row.key.clone()).collect();
                r_keys.reverse();
                // Row sampling draws per read, so only its rows may differ.
                if !format!("{filter:?}").contains("RowSample") {
                    assert_eq!(f_keys, r_keys, "a filter selects the same rows read either way: {filter:?}");
                }
                format!("ok {}", f.len())
            }
            _ => outcome(forward.map(drop)),
        }
    })
}

fn budget() -> Duration {
    let secs = std::env::var("CELLARDB_FUZZ_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(1.0);
    Duration::from_secs_f64(secs)
}

fn fuzz_seed() -> u64 {
    std::env::var("CELLARDB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xF0_22ED)
}

/// Fuzzes one target from its generated seeds and its corpus.
fn run(target: &str, decode: Decode, generated: Vec<Vec<u8>>) {
    if std::env::var("CELLARDB_FUZZ_SAVE").is_ok_and(|v| v == "1") {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).expect("corpus dir");
        for seed in &generated {
            std::fs::write(dir.join(format!("seed-{:08x}", crc32fast::hash(seed))), seed).expect("write seed");
        }
    }
    let mut seeds = generated;
    seeds.extend(corpus(target));
    for seed in &seeds {
        decode(seed); // every seed decodes without a panic, to begin with
    }
    let ran = fuzz(target, decode, seeds, budget(), fuzz_seed());
    println!(
        "fuzz {target}: {} executions in {:.1?} of CPU ({:.1?} wall), {} distinct outcomes",
        ran.executions, ran.cpu, ran.wall, ran.outcomes
    );
}

#[test]
fn fuzz_sst_file() {
    run("sst-file", decode_sst, seeds().ssts);
}

#[test]
fn fuzz_sst_data_block() {
    run("sst-data-block", decode_block, seeds().blocks);
}

#[test]
fn fuzz_sst_index_block() {
    run("sst-index-block", decode_index, seeds().indexes);
}

#[test]
fn fuzz_sst_properties_block() {
    run("sst-properties-block", decode_props, seeds().props);
}

#[test]
fn fuzz_sst_footer() {
    run("sst-footer", decode_footer, seeds().footers);
}

#[test]
fn fuzz_log_file() {
    run("log-file", decode_log, seeds().logs);
}

#[test]
fn fuzz_log_records() {
    run("log-records", decode_log_records, seeds().logs);
}

#[test]
fn fuzz_log_record_payload() {
    run("log-record-payload", decode_payload, seeds().payloads);
}

#[test]
fn fuzz_manifest_file() {
    run("manifest-file", decode_manifest, seeds().manifests);
}

#[test]
fn fuzz_manifest_records() {
    run("manifest-records", decode_manifest_records, seeds().manifests);
}

#[test]
fn fuzz_filters() {
    let generated: Vec<Vec<u8>> = vec![
        b"\x00\x03a.*".to_vec(),
        b"\x0d\x00\x01\x02ab\x07\x02".to_vec(),
        b"\x0f\x03\x02cf\x05\x01".to_vec(),
        b"\x01\x05[a-z]+\x04\x03lbl".to_vec(),
        b"\x03\x06\\C\\x{ff}".to_vec(),
    ];
    run("filters", evaluate_filter, generated);
}
