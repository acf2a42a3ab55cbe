//! The concurrency stress test: writers, scanning readers, conditional
//! writers and read-modify-write incrementers run at once, while another
//! thread flushes and compacts, for a bounded time. It checks:
//!
//! - **row atomicity**: a row's five columns, always written together by
//!   one mutation, are read with one generation;
//! - **snapshot consistency**: a writer sweeps its rows in key order with
//!   a new generation each sweep, so any snapshot sees them as a prefix of
//!   the sweep — generation `g` up to some row, `g - 1` after it, never an
//!   older row after a newer one or a gap of two;
//! - **no lost update**: increments by `read_modify_write_row` and by
//!   compare-and-set through `check_and_mutate_row` add up to exactly the
//!   calls that succeeded, before and after a reopen.
//!
//! `CELLARDB_STRESS_SECS` sets the duration (default 3, what `cargo test`
//! runs); `docs/reliability.md` gives the long run.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cellardb::{Db, Filter, GcRule, Mutation, Options, ReadModifyWrite, Row, RowRange, RowSet, Table};

const ROWS: usize = 40;
const COLUMNS: usize = 5;
const WRITERS: usize = 2;

fn options() -> Options {
    Options::default().memtable_size(32 << 10).block_size(1 << 10)
}

fn open(dir: &std::path::Path) -> (Db, Table) {
    let db = options().open(dir).expect("open");
    let t = match db.table("t") {
        Ok(t) => t,
        Err(_) => db.create_table("t", [("m", GcRule::max_versions(1)), ("n", GcRule::max_versions(1))]).expect("t"),
    };
    (db, t)
}

fn row_key(writer: usize, i: usize) -> String {
    format!("w{writer}-{i:03}")
}

/// One sweep of writer `writer`: every row, in key order, all its columns
/// set to `generation` by one mutation.
fn sweep(t: &Table, writer: usize, generation: u64) {
    let ts = i64::try_from(generation).expect("small") * 1000;
    for i in 0..ROWS {
        let cells = (0..COLUMNS).map(|c| Mutation::set_cell("m", format!("c{c}"), ts, generation.to_string()));
        t.mutate_row(row_key(writer, i), cells).expect("write");
    }
}

/// The generation of each of writer `writer`'s rows in `rows` (0 for a row
/// not written yet), checking each row's columns agree.
fn generations(rows: &[Row], writer: usize) -> Vec<u64> {
    let prefix = format!("w{writer}-");
    let mut found = vec![0; ROWS];
    for row in rows.iter().filter(|r| r.key.starts_with(prefix.as_bytes())) {
        let values: Vec<u64> = row
            .cells()
            .map(|(_, _, c)| std::str::from_utf8(&c.value).expect("utf8").parse().expect("number"))
            .collect();
        assert_eq!(values.len(), COLUMNS, "row {:?}: half a row mutation", String::from_utf8_lossy(&row.key));
        assert!(values.iter().all(|&v| v == values[0]), "row {:?}: columns of two mutations: {values:?}", row.key);
        let i: usize = std::str::from_utf8(&row.key[prefix.len()..]).expect("utf8").parse().expect("index");
        found[i] = values[0];
    }
    found
}

/// A snapshot of a sweeping writer: generation `g` up to some row, `g - 1`
/// after it, and no older than the sweep it had finished when the read
/// began (`finished`).
fn assert_prefix_of_a_sweep(found: &[u64], writer: usize, finished: u64) {
    let newest = found[0];
    assert!(newest >= finished, "writer {writer}: a snapshot older than its last finished sweep {finished}: {found:?}");
    let cut = found.iter().position(|&g| g != newest).unwrap_or(found.len());
    assert!(
        found[cut..].iter().all(|&g| g + 1 == newest),
        "writer {writer}: a snapshot that is no prefix of a sweep: {found:?}"
    );
}

fn be(bytes: &[u8]) -> i64 {
    i64::from_be_bytes(bytes.try_into().expect("8 bytes"))
}

/// One compare-and-set increment of `cas:count`: true if it won.
fn cas_increment(t: &Table) -> bool {
    let row = t.read_row("cas", &Filter::cells_per_column_limit(1)).expect("read");
    let current = row.as_ref().and_then(|r| r.cells().next().map(|(_, _, c)| be(&c.value))).unwrap_or(0);
    let predicate = if current == 0 {
        // No cell yet: the condition is that there is none.
        Filter::chain([Filter::family_name_regex("n"), Filter::column_qualifier_regex("count")])
    } else {
        Filter::chain([
            Filter::family_name_regex("n"),
            Filter::column_qualifier_regex("count"),
            Filter::cells_per_column_limit(1),
            Filter::value_regex(regex_of(&current.to_be_bytes())),
        ])
    };
    let next = Mutation::set_cell("n", "count", 0, (current + 1).to_be_bytes());
    let matched = t
        .check_and_mutate_row(
            "cas",
            &predicate,
            if current == 0 { vec![] } else { vec![next.clone()] },
            if current == 0 { vec![next] } else { vec![] },
        )
        .expect("check and mutate");
    matched == (current != 0)
}

/// An RE2 pattern matching exactly `bytes`.
fn regex_of(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "\\x{{{b:02x}}}");
        out
    })
}

#[derive(Default)]
struct Counts {
    writes: AtomicU64,
    scans: AtomicU64,
    increments: AtomicU64,
    cas_won: AtomicU64,
    cas_lost: AtomicU64,
    flushes: AtomicU64,
    compactions: AtomicU64,
}

#[test]
fn concurrent_writers_readers_and_atomic_updates_keep_every_promise() {
    let secs: f64 = std::env::var("CELLARDB_STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let generations_written: Vec<Arc<AtomicU64>> = (0..WRITERS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    std::thread::scope(|s| {
        for (writer, written) in generations_written.iter().enumerate() {
            let (t, stop, counts) = (t.clone(), stop.clone(), counts.clone());
            s.spawn(move || {
                let mut generation = 0;
                while !stop.load(Ordering::Relaxed) {
                    generation += 1;
                    sweep(&t, writer, generation);
                    written.store(generation, Ordering::Release);
                    counts.writes.fetch_add(ROWS as u64, Ordering::Relaxed);
                }
            });
        }
        for reversed in [false, true] {
            let (t, stop, counts) = (t.clone(), stop.clone(), counts.clone());
            let written = &generations_written;
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let finished: Vec<u64> = written.iter().map(|w| w.load(Ordering::Acquire)).collect();
                    let read = t.read_rows(RowSet::from(RowRange::prefix("w")), &Filter::pass_all());
                    let mut rows = if reversed { read.reversed() } else { read }.collect_rows().expect("scan");
                    if reversed {
                        rows.reverse();
                    }
                    for (writer, &finished) in finished.iter().enumerate() {
                        assert_prefix_of_a_sweep(&generations(&rows, writer), writer, finished);
                    }
                    counts.scans.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for _ in 0..2 {
            let (t, stop, counts) = (t.clone(), stop.clone(), counts.clone());
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    t.read_modify_write_row("counter", [ReadModifyWrite::increment("n", "count", 1)]).expect("rmw");
                    counts.increments.fetch_add(1, Ordering::Relaxed);
                    let won = if cas_increment(&t) { &counts.cas_won } else { &counts.cas_lost };
                    won.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        {
            let (db, stop, counts) = (&db, stop.clone(), counts.clone());
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    db.flush().expect("flush");
                    counts.flushes.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                    db.compact_table("t").expect("compact");
                    counts.compactions.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs_f64(secs) {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let check = |t: &Table, when: &str| {
        let counter = t.read_row("counter", &Filter::pass_all()).expect("read").expect("counter row");
        let (_, _, cell) = counter.cells().next().expect("a cell");
        assert_eq!(be(&cell.value), counts.increments.load(Ordering::Relaxed).cast_signed(), "{when}: increments");
        let cas = t.read_row("cas", &Filter::pass_all()).expect("read").expect("cas row");
        let (_, _, cell) = cas.cells().next().expect("a cell");
        assert_eq!(be(&cell.value), counts.cas_won.load(Ordering::Relaxed).cast_signed(), "{when}: compare-and-set");
        let rows = t.read_rows(RowSet::from(RowRange::prefix("w")), &Filter::pass_all()).collect_rows().expect("scan");
        for (writer, written) in generations_written.iter().enumerate() {
            let last = written.load(Ordering::Acquire);
            assert!(generations(&rows, writer).iter().all(|&g| g == last), "{when}: writer {writer}'s last sweep");
        }
    };
    check(&t, "after the run");
    drop(t);
    db.close().expect("close");
    let (_db, t) = open(dir.path());
    check(&t, "after reopening");
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "stress: {secs} s, {} row writes, {} scans, {} increments, {} compare-and-set won and {} lost, {} flushes, \
         {} compactions",
        load(&counts.writes),
        load(&counts.scans),
        load(&counts.increments),
        load(&counts.cas_won),
        load(&counts.cas_lost),
        load(&counts.flushes),
        load(&counts.compactions)
    );
}
