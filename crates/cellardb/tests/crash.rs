//! The crash test: a child process writing with `Sync`, deleting, dropping
//! row ranges, flushing and compacting — in the foreground and in the
//! background — is killed (SIGKILL) at seeded random moments. After each
//! kill the database must open holding exactly the effect of the operations
//! the child acknowledged (and perhaps the one in flight): every
//! acknowledged write is there, nothing deleted or collected comes back, and
//! no file a crashed flush or compaction left behind survives the open.
//!
//! `CELLARDB_CRASH_SEED=N` replays a seed; `CELLARDB_CRASH_ROUNDS` sets the
//! number of kills (default 8).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use cellardb::{Db, Durability, Filter, GcRule, Mutation, Options, RowRange, RowSet, Table, TimeRange};
use common::model::{Model, ModelCell, ModelGc, cells_of};

const CHILD_DIR: &str = "CELLARDB_CRASH_CHILD";
const CHILD_SEED: &str = "CELLARDB_CRASH_CHILD_SEED";
const CHILD_START: &str = "CELLARDB_CRASH_CHILD_START";
/// Operations a child runs at most before exiting on its own.
const CHILD_OPS: u64 = 3000;

/// SplitMix64 of `seed` and `n`: operation `n` is the same in parent and child.
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One step of the workload.
#[derive(Debug)]
enum Op {
    Mutate(String, Vec<Mutation>),
    DropPrefix(String),
    Flush,
    Compact,
}

fn op(seed: u64, n: u64) -> Op {
    let r = mix(seed, n);
    let row = format!("r{:02}", (r >> 8) % 60);
    let family = if (r >> 16).is_multiple_of(2) { "cf1" } else { "cf2" };
    let qualifier = format!("q{}", (r >> 20) % 3);
    let ts = 1000 * ((r >> 24) % 40).cast_signed();
    match r % 100 {
        0..=79 => {
            let value = format!("{n:06}-{}", "x".repeat(((r >> 32) % 200) as usize));
            Op::Mutate(row, vec![Mutation::set_cell(family, qualifier, ts, value)])
        }
        80..=85 => {
            Op::Mutate(row, vec![Mutation::delete_from_column(family, qualifier, TimeRange::new(ts, ts + 8000))])
        }
        86..=88 => Op::Mutate(row, vec![Mutation::delete_from_family(family)]),
        89..=90 => Op::Mutate(row, vec![Mutation::delete_from_row()]),
        91 => Op::DropPrefix(row[..2].to_owned()),
        92..=95 => Op::Flush,
        _ => Op::Compact,
    }
}

fn options() -> Options {
    Options::default().durability(Durability::Sync).memtable_size(16 << 10).block_size(1 << 10)
}

fn open(dir: &Path) -> (Db, Table) {
    let db = options().open(dir).expect("open");
    let t = match db.table("t") {
        Ok(t) => t,
        Err(_) => db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::max_versions(2))]).expect("create"),
    };
    (db, t)
}

fn apply_to_db(db: &Db, t: &Table, op: &Op) {
    match op {
        Op::Mutate(row, m) => t.mutate_row(row.as_str(), m.clone()).expect("mutate"),
        Op::DropPrefix(p) => t.drop_row_range(RowRange::prefix(p.as_str())).expect("drop"),
        Op::Flush => db.flush().expect("flush"),
        Op::Compact => db.compact_table("t").expect("compact"),
    }
}

fn apply_to_model(model: &mut Model, op: &Op) {
    match op {
        Op::Mutate(row, m) => model.apply(row.as_bytes(), m),
        Op::DropPrefix(p) => model.drop_rows(|k| k.starts_with(p.as_bytes())),
        Op::Flush | Op::Compact => {}
    }
}

/// The child: runs operations from `start` on, printing each one's number
/// once it is acknowledged, until killed.
fn child(dir: &str, seed: u64, start: u64) -> ! {
    let (db, t) = open(Path::new(dir));
    let mut out = std::io::stdout().lock();
    for n in start..start + CHILD_OPS {
        writeln!(out, "begin {n}").and_then(|()| out.flush()).expect("stdout");
        apply_to_db(&db, &t, &op(seed, n));
        writeln!(out, "ack {n}").and_then(|()| out.flush()).expect("stdout");
    }
    std::process::exit(0);
}

fn model_rows(model: &Model) -> Vec<Vec<ModelCell>> {
    model.read(|_| true, &common::model::ModelFilter::PassAll, false, None)
}

fn engine_rows(t: &Table) -> Vec<Vec<ModelCell>> {
    cells_of(&t.read_rows(RowSet::from(RowRange::all()), &Filter::pass_all()).collect_rows().expect("read"))
}

fn sst_files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("list")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sst")))
        .count()
}

#[test]
fn a_process_killed_while_writing_and_compacting_loses_nothing_acknowledged() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        let var = |name| std::env::var(name).ok().and_then(|v| v.parse().ok()).expect("child settings");
        child(&dir, var(CHILD_SEED), var(CHILD_START));
    }
    let seed = std::env::var("CELLARDB_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_C0DE);
    let rounds: u64 = std::env::var("CELLARDB_CRASH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::default();
    model.gc.insert("cf1".into(), ModelGc::None);
    model.gc.insert("cf2".into(), ModelGc::Versions(2));
    let mut done = 0u64; // operations applied to the model
    let mut killed_in = std::collections::BTreeMap::<&str, u32>::new();
    for round in 0..rounds {
        let kill_after = 1 + mix(seed ^ 0xC4A54, round) % 400;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_process_killed_while_writing_and_compacting_loses_nothing_acknowledged"])
            .args(["--test-threads", "1", "--nocapture"])
            .env(CHILD_DIR, dir.path())
            .env(CHILD_SEED, seed.to_string())
            .env(CHILD_START, done.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut acked = done;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut killed = false;
        let mut begun = None;
        // Even rounds strike anywhere; odd rounds inside a flush or a full
        // compaction. Either way a seeded delay after the operation began.
        let delay = std::time::Duration::from_micros(
            mix(seed ^ 0xDE1A, round) % if round.is_multiple_of(2) { 500 } else { 5000 },
        );
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            // The harness may print on the same line before the first one.
            if let Some(Ok(n)) = line.split("begin ").nth(1).map(str::parse::<u64>) {
                begun = Some(n);
                let target = round.is_multiple_of(2) || matches!(op(seed, n), Op::Compact | Op::Flush);
                if !killed && n - done >= kill_after && target {
                    std::thread::sleep(delay);
                    child.kill().unwrap();
                    killed = true;
                }
            }
            if let Some(Ok(n)) = line.split("ack ").nth(1).map(str::parse::<u64>) {
                assert_eq!(n, acked, "seed {seed} round {round}: acknowledgements in order");
                acked += 1;
            }
        }
        child.wait().unwrap();
        let in_flight = match begun.filter(|&n| n == acked).map(|n| op(seed, n)) {
            Some(Op::Compact) => "compact_table",
            Some(Op::Flush) => "flush",
            Some(Op::DropPrefix(_)) => "drop_row_range",
            Some(Op::Mutate(..)) => "mutate_row",
            None => "between operations",
        };
        *killed_in.entry(in_flight).or_default() += 1;

        let (db, t) = open(dir.path());
        while done < acked {
            apply_to_model(&mut model, &op(seed, done));
            done += 1;
        }
        let found = engine_rows(&t);
        if found != model_rows(&model) {
            // The operation in flight may have reached the log.
            let in_flight = op(seed, done);
            let mut with_it = model.clone();
            apply_to_model(&mut with_it, &in_flight);
            assert_eq!(
                found,
                model_rows(&with_it),
                "seed {seed} round {round}: the database after {acked} acknowledged operations (next: {in_flight:?})"
            );
            model = with_it;
            done += 1;
        }
        // Background compaction may be writing a file as we look: wait for
        // a moment when the directory holds exactly the live files.
        let live = || -> usize { t.stats().unwrap().families.iter().map(|f| f.sst_files).sum() };
        let settled = (0..500).any(|_| {
            let (a, files, b) = (live(), sst_files_in(dir.path()), live());
            std::thread::sleep(std::time::Duration::from_millis(10));
            a == b && files == a
        });
        assert!(settled, "seed {seed} round {round}: files not in the manifest remain after open");
        drop(t);
        drop(db);
    }
    println!("crash test: seed {seed}, {done} operations, kills during: {killed_in:?}");
}
