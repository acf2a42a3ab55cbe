//! The damage sweep: every kind of file the engine writes, damaged every way
//! a disk or a person can damage it — a flipped byte at many offsets, the
//! file cut short at many lengths, a zeroed page or sector, garbage or
//! zeros appended — then the database opened and read whole.
//!
//! Each case must end one of three ways, and the sweep counts them:
//!
//! - **detected**: `Error::Corruption` naming the damaged file (for a
//!   flipped byte, at an offset at or before it);
//! - **harmless**: the open and the read succeed with exactly the data;
//! - **cut and reported** (the log being written when the process died,
//!   only): its damaged tail is cut as a torn write or a hole is, the
//!   recovery report names the log, and the data is the acknowledged writes
//!   up to some point, whole row mutations only. A cut of that log is not
//!   among these: a log being written keeps its size in whole units, so a
//!   cut is detected.
//!
//! Anything else — a panic, another error, wrong data, data lost without a
//! report — fails. `docs/reliability.md` states the policy per file kind.
//!
//! By default (what `cargo test` runs) flips and cuts every 41st offset of
//! the larger files; `CELLARDB_DAMAGE_SWEEP=full` tries every offset, and
//! `CELLARDB_DAMAGE_TRACE=1` prints each case, its outcome and its time.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use cellardb::inspect::SstFile;
use cellardb::{Error, Filter, Mutation, Options, RowSet};
use common::*;

/// Rows written after the last flush: they live in the log only.
const LOG_ROWS: usize = 40;

/// Rows of each flush: enough for a compacted file to train a dictionary.
const ROWS: usize = 300;

/// The database the sweep damages, in two states: as a crash leaves it
/// (`live`: the log being written, not closed) and as a clean close does.
struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    live: PathBuf,
    closed: PathBuf,
    /// The table's cells with the first `j` log rows, for each `j`.
    with_log_rows: Vec<Vec<Flat>>,
}

fn build() -> Fixture {
    let closed = tempfile::tempdir().unwrap();
    let live = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(closed.path(), options());
    for flush in 0..3 {
        for i in 0..ROWS {
            let value = format!("v{flush}-{i}-{}", "x".repeat(i % 40));
            t.mutate_row(format!("row{i:03}"), [Mutation::set_cell("cf1", format!("q{}", i % 3), 1000 * flush, value)])
                .unwrap();
        }
        db.flush().unwrap();
        if flush == 1 {
            // The first two flushes compacted: a file with a dictionary.
            db.compact_table("t").unwrap();
        }
    }
    let mut with_log_rows = vec![scan_all(&t)];
    for i in 0..LOG_ROWS {
        t.mutate_row(format!("late{i:02}"), [Mutation::set_cell("cf2", "q", 5000, format!("late {i}"))]).unwrap();
        with_log_rows.push(scan_all(&t));
    }
    copy_dir(closed.path(), live.path());
    db.close().unwrap();
    Fixture {
        live: live.path().to_path_buf(),
        closed: closed.path().to_path_buf(),
        with_log_rows,
        _dirs: (closed, live),
    }
}

/// Small blocks, so a table has many; a small memtable, so the log being
/// written is preallocated to 1 MiB only; the smallest dictionary, so a
/// small compacted file has one.
fn options() -> Options {
    Options::default().block_size(512).memtable_size(256 << 10).compression_dictionary(256)
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// A way to damage a file.
#[derive(Debug, Clone)]
enum Damage {
    Flip(usize),
    CutTo(usize),
    ZeroRange(usize, usize),
    Append(Vec<u8>),
}

impl Damage {
    fn apply(&self, bytes: &mut Vec<u8>) {
        match self {
            Damage::Flip(at) => bytes[*at] ^= 0x5a,
            Damage::CutTo(len) => bytes.truncate(*len),
            Damage::ZeroRange(start, len) => {
                let end = (start + len).min(bytes.len());
                bytes[*start..end].fill(0);
            }
            Damage::Append(garbage) => bytes.extend_from_slice(garbage),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Damage::Flip(_) => "flipped byte",
            Damage::CutTo(_) => "cut short",
            Damage::ZeroRange(_, 512) => "zeroed sector",
            Damage::ZeroRange(..) => "zeroed page",
            Damage::Append(_) => "appended bytes",
        }
    }

    /// The furthest offset a report of this damage may name.
    fn latest_offset(&self) -> u64 {
        match self {
            Damage::Flip(at) => *at as u64,
            _ => u64::MAX,
        }
    }
}

/// Every damage the sweep tries on a file whose bytes that matter end at
/// `len` (a log being written goes on in preallocated zeros: the sweep
/// damages its first page of them).
fn damages(len: usize, full: bool) -> Vec<Damage> {
    let step = if full || len <= 600 { 1 } else { 41 };
    let mut all: Vec<Damage> = (0..len).step_by(step).chain(len.checked_sub(1)).map(Damage::Flip).collect();
    all.extend((0..len).step_by(step).map(Damage::CutTo));
    for unit in [512, 4096] {
        all.extend((0..len).step_by(unit).map(|start| Damage::ZeroRange(start, unit)));
    }
    let noise: Vec<u8> = (1..=4096u32).map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();
    for n in [1, 7, 100, 4096] {
        all.push(Damage::Append(noise[..n].to_vec()));
    }
    all.push(Damage::Append(vec![0; 4096]));
    all
}

/// Opens `dir` and reads the table whole, with the recovery report.
fn open_and_read(dir: &Path) -> Result<(Vec<Flat>, cellardb::RecoveryReport), Error> {
    let db = options().open(dir)?;
    let t = db.table("t")?;
    let rows = t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows()?;
    let report = db.stats()?.recovery;
    Ok((flatten(&rows), report))
}

/// How a case ended.
fn judge(fixture: &Fixture, file: &Path, live_log: bool, damage: &Damage, dir: &Path) -> &'static str {
    let case = || format!("{} of {}: {damage:?}", damage.kind(), file.display());
    let damaged = dir.join(file.file_name().unwrap());
    match open_and_read(dir) {
        Err(Error::Corruption { file: named, offset, what }) => {
            assert_eq!(named, damaged, "{}: the error names the damaged file ({what})", case());
            assert!(offset <= damage.latest_offset(), "{}: offset {offset} is past the damage ({what})", case());
            "detected"
        }
        Err(other) => panic!("{}: {other}, not Error::Corruption", case()),
        // Neither a crash nor the engine shortens a log being written: its
        // size stays a whole number of units until it is closed.
        Ok(_) if live_log && matches!(damage, Damage::CutTo(_)) => {
            panic!("{}: a log being written was cut, and the open took it", case())
        }
        Ok((cells, _)) if cells == fixture.with_log_rows[LOG_ROWS] => "harmless",
        Ok((cells, report)) => {
            assert!(live_log, "{}: the open succeeded with the wrong data", case());
            assert!(
                fixture.with_log_rows.contains(&cells),
                "{}: the data is not the acknowledged writes up to some point",
                case()
            );
            if report.torn_tails.iter().any(|t| t.file == damaged) {
                "cut and reported"
            } else {
                assert!(
                    looks_like_a_shorter_log(&damaged_bytes(file, damage)),
                    "{}: writes were cut and the recovery report does not say so",
                    case()
                );
                "a shorter log, as a crash leaves one"
            }
        }
    }
}

fn damaged_bytes(file: &Path, damage: &Damage) -> Vec<u8> {
    let mut bytes = std::fs::read(file).unwrap();
    damage.apply(&mut bytes);
    bytes
}

/// Whether a damaged log reads as an intact log that simply ends earlier:
/// whole records, then zeros. That is what power loss leaves of writes that
/// were not yet synced (the preallocated room), so recovery cannot tell it
/// from one (nor can RocksDB: the manifest records how far a log reaches
/// only once it is closed).
fn looks_like_a_shorter_log(bytes: &[u8]) -> bool {
    let stats = cellardb::inspect::LogReader::new(Path::new("log"), bytes).read(|_, _| Ok(())).unwrap();
    stats.torn_tail.is_none() && bytes[usize::try_from(stats.end_offset).unwrap()..].iter().all(|&b| b == 0)
}

/// Damages `file` (in `source`) every way, each time in a fresh copy of
/// the directory, and counts how each kind of damage ended.
fn sweep_file(fixture: &Fixture, source: &Path, file: &Path, live_log: bool, full: bool, tally: &mut Tally) -> usize {
    let original = std::fs::read(file).unwrap();
    let kind = file_kind(file, live_log);
    let records_end = original.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let all = damages(if live_log { (records_end + 4096).min(original.len()) } else { original.len() }, full);
    for damage in &all {
        let scratch = tempfile::tempdir().unwrap();
        copy_dir(source, scratch.path());
        let mut bytes = original.clone();
        damage.apply(&mut bytes);
        std::fs::write(scratch.path().join(file.file_name().unwrap()), &bytes).unwrap();
        let started = std::time::Instant::now();
        if std::env::var("CELLARDB_DAMAGE_TRACE").is_ok() {
            eprintln!("case {} {damage:?}", file.display());
        }
        let outcome = judge(fixture, file, live_log, damage, scratch.path());
        if std::env::var("CELLARDB_DAMAGE_TRACE").is_ok() {
            eprintln!("  {outcome} in {:?}", started.elapsed());
        }
        let region = region_of(file, &original, damage);
        *tally.entry((kind, region, damage.kind(), outcome)).or_default() += 1;
    }
    all.len()
}

type Tally = BTreeMap<(&'static str, &'static str, &'static str, &'static str), u64>;

fn file_kind(file: &Path, live_log: bool) -> &'static str {
    let name = file.file_name().unwrap().to_string_lossy();
    match file.extension().and_then(|e| e.to_str()) {
        Some("sst") => "sstable",
        Some("log") if live_log => "log being written",
        Some("log") => "log closed cleanly",
        _ if name == "MANIFEST" => "manifest",
        _ if name == "LOCK" => "lock file",
        _ => "other",
    }
}

/// The part of an SSTable a damage strikes first, from its footer.
fn region_of(file: &Path, original: &[u8], damage: &Damage) -> &'static str {
    if file.extension().is_none_or(|e| e != "sst") {
        return "-";
    }
    let at = match damage {
        Damage::Flip(at) | Damage::CutTo(at) | Damage::ZeroRange(at, _) => *at as u64,
        Damage::Append(_) => return "after the footer",
    };
    let sst = SstFile::open(file, Bytes::copy_from_slice(original)).unwrap();
    let footer = sst.layout().spans;
    let footer_start = (original.len() - sst.footer_len()) as u64;
    if at >= footer_start {
        "footer"
    } else if at >= footer.properties.offset {
        "properties block"
    } else if at >= footer.bloom.offset {
        "bloom block"
    } else if at >= footer.index.offset {
        "index block"
    } else if footer.dictionary.is_some_and(|d| at >= d.offset) {
        "dictionary block"
    } else {
        "data blocks"
    }
}

#[test]
fn every_damaged_file_is_detected_harmless_or_a_reported_cut() {
    let full = std::env::var("CELLARDB_DAMAGE_SWEEP").is_ok_and(|v| v == "full");
    let fixture = build();
    let mut tally = Tally::new();
    let mut cases = 0;
    for file in files_ending(&fixture.closed, "") {
        cases += sweep_file(&fixture, &fixture.closed, &file, false, full, &mut tally);
    }
    let live_log = files_ending(&fixture.live, ".log").pop().unwrap();
    cases += sweep_file(&fixture, &fixture.live, &live_log, true, full, &mut tally);
    let kinds: std::collections::BTreeSet<_> = tally.keys().map(|k| k.0).collect();
    for kind in ["sstable", "log being written", "log closed cleanly", "manifest", "lock file"] {
        assert!(kinds.contains(kind), "the sweep damaged no {kind}");
    }
    let regions: std::collections::BTreeSet<_> = tally.keys().map(|k| k.1).collect();
    for region in ["data blocks", "dictionary block", "index block", "bloom block", "properties block", "footer"] {
        assert!(regions.contains(region), "the sweep damaged no SSTable's {region}");
    }
    println!("damage sweep: {cases} cases");
    for ((kind, region, damage, outcome), n) in &tally {
        println!("  {kind} | {region} | {damage} | {outcome} | {n}");
    }
}
