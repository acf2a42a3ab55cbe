//! The fault sweep: a workload of every mutation kind, schema changes,
//! flushes and compactions runs once on [`MemFs`] to count its file
//! operations, then once for each operation of each kind with that
//! operation failed, by each fault it can meet (an I/O error, a full disk,
//! a short write). After each run:
//!
//! - the call that met the fault got an error, or the fault was absorbed
//!   and the database is exact (a fault of a background flush or
//!   compaction reaches the next write, or `close`);
//! - after an error, the database either keeps working (a probe write
//!   succeeds and is kept) or refuses writes with `Error::Poisoned`;
//! - every read before the fault returned exactly what the acknowledged
//!   writes make;
//! - reopening the directory as the process left it, as power loss at the
//!   fault left it (only synced bytes, a failed sync's bytes lost for good,
//!   as Linux loses them), and as a torn power loss left it (part of the
//!   unsynced bytes, the last page garbage) gives exactly the acknowledged
//!   state, with the failed call's effect or without it.
//!
//! `CELLARDB_FAULT_SWEEP=full` fails every operation; by default (the form
//! `cargo test` runs) every seventh of each kind, starting at a different
//! one for each fault. `CELLARDB_FAULT_ONLY=KIND:N` runs one operation.
//!
//! A second sweep fails each operation of recovery itself: the open of a
//! directory power loss left mid-workload, with logs to replay.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "step numbers and the generator's draws are small numbers"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cellardb::fs::{Fault, FsOp, MemFs};
use cellardb::{
    Aggregate, Db, Durability, Error, FamilySchema, Filter, GcRule, Mutation, Options, ReadModifyWrite, RowRange,
    RowSet, Table, TimeRange,
};
use common::mix;
use common::model::{ModelCell, cells_of};

const DIR: &str = "/db";
const STEPS: u64 = 160;
const SEED: u64 = 0xFA_0175;

/// One step of the workload.
#[derive(Debug, Clone)]
enum Step {
    CreateTables,
    Mutate(String, Vec<Mutation>),
    Batch(Vec<(String, Vec<Mutation>)>),
    CheckAndMutate(String, u64),
    ReadModifyWrite(String),
    DropPrefix(String),
    CreateFamily,
    SetGcRule,
    Flush,
    Compact,
    Read,
}

fn set_cell(r: u64, n: u64) -> Mutation {
    let family = if (r >> 16).is_multiple_of(2) { "cf1" } else { "cf2" };
    let ts = 1000 * ((r >> 24) % 30).cast_signed();
    Mutation::set_cell(
        family,
        format!("q{}", (r >> 20) % 3),
        ts,
        format!("{n:04}-{}", "x".repeat(((r >> 32) % 300) as usize)),
    )
}

fn step(n: u64) -> Step {
    match n {
        0 => return Step::CreateTables,
        70 => return Step::CreateFamily,
        110 => return Step::SetGcRule,
        _ => {}
    }
    let r = mix(SEED, n);
    let row = format!("r{:02}", (r >> 8) % 40);
    let family = if (r >> 16).is_multiple_of(2) { "cf1" } else { "cf2" };
    let qualifier = format!("q{}", (r >> 20) % 3);
    let ts = 1000 * ((r >> 24) % 30).cast_signed();
    match r % 100 {
        0..=49 => Step::Mutate(row, vec![set_cell(r, n)]),
        50..=54 => Step::Mutate(row, vec![Mutation::add_to_cell("ag", "sum", ts, (r >> 40) as i64 % 100)]),
        55..=59 => {
            Step::Batch((0..3).map(|i| (format!("r{:02}", (r >> (8 + i)) % 40), vec![set_cell(r >> i, n)])).collect())
        }
        60..=63 => {
            Step::Mutate(row, vec![Mutation::delete_from_column(family, qualifier, TimeRange::new(ts, ts + 6000))])
        }
        64..=65 => Step::Mutate(row, vec![Mutation::delete_from_family(family)]),
        66 => Step::Mutate(row, vec![Mutation::delete_from_row()]),
        67..=70 => Step::CheckAndMutate(row, r),
        71..=74 => Step::ReadModifyWrite(row),
        75 => Step::DropPrefix(row[..2].to_owned()),
        76..=83 => Step::Read,
        84..=91 => Step::Flush,
        _ => Step::Compact,
    }
}

fn options(fs: &MemFs, durability: Durability) -> Options {
    Options::default()
        .durability(durability)
        .memtable_size(8 << 10)
        .block_size(1 << 10)
        .file_system(Arc::new(fs.clone()))
}

/// The table's cells, with the timestamps of family `rw` masked: a
/// read-modify-write stamps its cell with the time of the write.
type Dump = Vec<Vec<ModelCell>>;

fn dump(t: &Table) -> Result<Dump, Error> {
    let rows = t.read_rows(RowSet::from(RowRange::all()), &Filter::pass_all()).collect_rows()?;
    let mut cells = cells_of(&rows);
    for cell in cells.iter_mut().flatten() {
        if cell.1 == "rw" {
            cell.3 = 0;
        }
    }
    Ok(cells)
}

fn table(db: &Db, name: &str) -> Option<Table> {
    db.table(name).ok()
}

/// Applies step `n` through the public API.
fn apply(db: &Db, n: u64) -> Result<(), Error> {
    let t = || db.table("t");
    match step(n) {
        Step::CreateTables => {
            let plain = |name: &str, gc_rule| FamilySchema { name: name.into(), gc_rule, aggregate: None };
            db.create_table_with_families(
                "t",
                [
                    plain("cf1", GcRule::none()),
                    plain("cf2", GcRule::max_versions(2)),
                    plain("rw", GcRule::max_versions(1)),
                    FamilySchema { name: "ag".into(), gc_rule: GcRule::none(), aggregate: Some(Aggregate::Sum) },
                ],
            )?;
            db.create_table("probe", [("p", GcRule::none())]).map(drop)
        }
        Step::Mutate(row, m) => t()?.mutate_row(row, m),
        Step::Batch(rows) => t()?.mutate_rows(rows).into_iter().collect(),
        Step::CheckAndMutate(row, r) => {
            let predicate = Filter::chain([Filter::family_name_regex("cf1"), Filter::column_qualifier_regex("q0")]);
            let ts = 1000 * ((r >> 24) % 30).cast_signed();
            let on_true = vec![Mutation::set_cell("cf2", "matched", ts, format!("{n}"))];
            let on_false = vec![Mutation::set_cell("cf1", "q0", ts, format!("first {n}"))];
            t()?.check_and_mutate_row(row, &predicate, on_true, on_false).map(drop)
        }
        Step::ReadModifyWrite(row) => t()?
            .read_modify_write_row(
                row,
                [ReadModifyWrite::append("rw", "log", format!("{n},")), ReadModifyWrite::increment("rw", "count", 1)],
            )
            .map(drop),
        Step::DropPrefix(prefix) => t()?.drop_row_range(RowRange::prefix(prefix)),
        Step::CreateFamily => db.create_family("t", "late", GcRule::none()),
        Step::SetGcRule => db.set_gc_rule("t", "cf1", GcRule::max_versions(3)),
        Step::Flush => db.flush(),
        Step::Compact => db.compact_table("t"),
        Step::Read => t()?.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().map(drop),
    }
}

/// The table's states a run may leave, from a run with no fault.
struct Reference {
    /// `after[k]`: the state once steps `0..k` are applied.
    after: Vec<Dump>,
    /// For a batch, the states with a prefix of its entries applied: each
    /// entry is acknowledged on its own, so a failed batch may leave some.
    partial: BTreeMap<u64, Vec<Dump>>,
}

impl Reference {
    fn new() -> Reference {
        let fs = MemFs::new();
        let db = options(&fs, Durability::Sync).open(DIR).expect("open");
        let mut reference = Reference { after: vec![Vec::new()], partial: BTreeMap::new() };
        for n in 0..STEPS {
            if let Step::Batch(rows) = step(n) {
                let t = db.table("t").expect("table");
                for (row, m) in rows {
                    t.mutate_row(row, m).expect("batch entry");
                    reference.partial.entry(n).or_default().push(dump(&t).expect("read"));
                }
            } else {
                apply(&db, n).unwrap_or_else(|e| panic!("step {n} ({:?}) with no fault: {e}", step(n)));
            }
            reference.after.push(dump(&db.table("t").expect("table")).expect("read"));
        }
        db.close().expect("close");
        reference
    }

    /// The states a run whose step `k` failed may leave (`k == STEPS`: none
    /// failed), if everything before step `floor` is durable.
    fn possible(&self, floor: u64, k: u64) -> Vec<&Dump> {
        let mut states: Vec<&Dump> = self.after[floor as usize..=k as usize].iter().collect();
        // A batch's entries are logged as records of their own, so power
        // loss may keep some of an earlier batch's as well.
        states.extend(self.partial.range(floor..(k + 1).min(STEPS)).flat_map(|(_, partial)| partial));
        if k < STEPS {
            states.push(&self.after[k as usize + 1]);
        }
        states
    }
}

/// What a faulted run did.
#[derive(Debug)]
struct Run {
    durability: Durability,
    /// The steps before this one are durable: all acknowledged ones under
    /// `Sync`, those before the last acknowledged flush under `Buffered`.
    durable_floor: u64,
    /// The first step that failed (`STEPS` if none did; 0 with `open_failed`).
    failed_at: u64,
    open_failed: bool,
    error: Option<Error>,
    /// Whether a write after the failure was acknowledged.
    probe_acked: bool,
    close_error: Option<Error>,
    /// The directory as a crash of the process at the failure would leave
    /// it, and as power loss would, plain and torn.
    killed: MemFs,
    crashed: MemFs,
    torn: MemFs,
}

fn probe(db: &Db) -> Result<(), Error> {
    db.table("probe")?.mutate_row("probe", [Mutation::set_cell("p", "q", 0, "acked")])
}

/// Runs the workload on `fs`, stopping at the first step that fails, then
/// probes whether the database still takes writes.
fn run(fs: &MemFs, reference: &Reference, durability: Durability) -> Run {
    let db = match options(fs, durability).open(DIR) {
        Ok(db) => db,
        Err(e) => {
            let (killed, crashed, torn) = (fs.process_crash_copy(), fs.crash_copy(), fs.torn_crash_copy(SEED));
            return Run {
                durability,
                durable_floor: 0,
                failed_at: 0,
                open_failed: true,
                error: Some(e),
                probe_acked: false,
                close_error: None,
                killed,
                crashed,
                torn,
            };
        }
    };
    let mut failed_at = STEPS;
    let mut error = None;
    for n in 0..STEPS {
        if let Err(e) = apply(&db, n) {
            failed_at = n;
            error = Some(e);
            break;
        }
        if matches!(step(n), Step::Read) {
            // A read that succeeds returns exactly the acknowledged state.
            if let Some(t) = table(&db, "t") {
                match dump(&t) {
                    Ok(found) => {
                        assert_eq!(found, reference.after[n as usize + 1], "{}: a read after step {n}", struck(fs));
                    }
                    Err(e) => {
                        failed_at = n;
                        error = Some(e);
                        break;
                    }
                }
            }
        }
    }
    let probe_acked = if failed_at < STEPS && table(&db, "probe").is_some() {
        match probe(&db) {
            Ok(()) => true,
            Err(Error::Poisoned { .. }) => false,
            Err(e) => panic!("{}: after {:?}, a write gets {e}, not Ok or Error::Poisoned", struck(fs), error),
        }
    } else {
        false
    };
    let (killed, crashed, torn) = (fs.process_crash_copy(), fs.crash_copy(), fs.torn_crash_copy(SEED ^ failed_at));
    let close_error = db.close().err();
    drop(db);
    let durable_floor = match durability {
        // A flush makes what came before durable; so do a range drop and a
        // schema change, which sync the log before the manifest.
        Durability::Buffered => (0..failed_at)
            .filter(|&n| {
                matches!(
                    step(n),
                    Step::Flush | Step::DropPrefix(_) | Step::CreateTables | Step::CreateFamily | Step::SetGcRule
                )
            })
            .map(|n| n + 1)
            .max()
            .unwrap_or(0),
        Durability::Sync => failed_at,
    };
    Run {
        durability,
        durable_floor,
        failed_at,
        open_failed: false,
        error,
        probe_acked,
        close_error,
        killed,
        crashed,
        torn,
    }
}

fn struck(fs: &MemFs) -> String {
    fs.fault_struck().unwrap_or_else(|| "no fault".into())
}

/// Opens `fs` and checks it holds the acknowledged state: the state before
/// the failed step or one it may have left (`Reference::possible`), and
/// the probe if it was acknowledged. After power loss (`crashed`) under
/// `Buffered`, the state of any step from the durable floor on.
fn check_reopened(fs: &MemFs, reference: &Reference, run: &Run, crashed: bool, what: &str, fault: &str) {
    let db = options(fs, run.durability).open(DIR).unwrap_or_else(|e| panic!("{fault}: reopening {what}: {e}"));
    let floor = if crashed { run.durable_floor } else { run.failed_at };
    let k = run.failed_at as usize;
    let found = match table(&db, "t") {
        Some(t) => dump(&t).unwrap_or_else(|e| panic!("{fault}: reading {what}: {e}")),
        None => Vec::new(),
    };
    if !reference.possible(floor, run.failed_at).contains(&&found) {
        let matching: Vec<usize> = (0..reference.after.len()).filter(|&i| reference.after[i] == found).collect();
        panic!(
            "{fault}: {what} after step {k} failed with {:?}: not the acknowledged state \
             (it is the state after steps {matching:?}; {} rows against {})",
            run.error,
            found.len(),
            reference.after[k].len()
        );
    }
    let probe_found = table(&db, "probe").is_some_and(|p| {
        p.read_row("probe", &Filter::pass_all()).unwrap_or_else(|e| panic!("{fault}: {what}: {e}")).is_some()
    });
    if run.probe_acked && (!crashed || run.durability == Durability::Sync) {
        assert!(probe_found, "{fault}: {what}: a write acknowledged after the failure is lost");
    }
    db.close().unwrap_or_else(|e| panic!("{fault}: closing {what}: {e}"));
}

/// How a faulted run ended, for the sweep's summary.
fn outcome(run: &Run, fs: &MemFs) -> &'static str {
    match (&run.error, &run.close_error, fs.fault_struck()) {
        (_, _, None) => "did not strike",
        _ if run.open_failed => "open failed",
        (Some(_), _, _) if run.probe_acked => "call failed, database kept working",
        (Some(_), _, _) => "call failed, writes refused until reopened",
        (None, Some(_), _) => "close failed",
        (None, None, Some(_)) => "absorbed",
    }
}

/// Faults that may be absorbed without an error: listing the directory
/// for obsolete files and removing them (the next open removes what the
/// manifest does not list), and trimming a log recorded closed (recovery
/// reads the zeros after its length as the room it was given).
fn may_be_absorbed(op: FsOp) -> bool {
    matches!(op, FsOp::Remove | FsOp::List | FsOp::Trim)
}

/// Faults operation `n` of kind `op` with `fault` and checks what follows;
/// the outcome is counted in `tally`.
fn sweep_one(reference: &Reference, durability: Durability, (op, n, fault): (FsOp, u64, Fault), tally: &mut Tally) {
    let fs = MemFs::new();
    fs.fail_operation(op, n, fault);
    let run = run(&fs, reference, durability);
    let what = outcome(&run, &fs);
    let name = format!("{op:?} #{n} {fault:?} (struck: {})", struck(&fs));
    if what == "absorbed" {
        assert!(may_be_absorbed(op), "{name}: the fault reached no caller");
    }
    if what == "did not strike" {
        assert!(run.error.is_none() && run.close_error.is_none(), "{name}: no fault, and yet {run:?}");
    }
    fs.disarm();
    let closed_then_crashed = fs.crash_copy();
    check_reopened(&fs, reference, &run, false, "the directory as the process left it", &name);
    check_reopened(&closed_then_crashed, reference, &run, true, "the directory after power loss once closed", &name);
    check_reopened(&run.killed, reference, &run, false, "the directory after the process died at the failure", &name);
    check_reopened(&run.crashed, reference, &run, true, "the directory after power loss at the failure", &name);
    check_reopened(&run.torn, reference, &run, true, "the directory after a torn power loss at the failure", &name);
    *tally.entry((op, what)).or_default() += 1;
}

type Tally = BTreeMap<(FsOp, &'static str), u64>;

/// Counts the workload's operations, then fails each chosen one in turn.
fn sweep(durability: Durability) {
    let reference = Reference::new();
    let counting = MemFs::new();
    let run = run(&counting, &reference, durability);
    assert_eq!(run.failed_at, STEPS, "the workload runs with no fault");
    let counts = counting.operation_counts();
    let mut tally = Tally::new();
    for fault in chosen_faults(&counts) {
        sweep_one(&reference, durability, fault, &mut tally);
    }
    report(&format!("fault sweep ({durability:?}): {STEPS} steps, operations {counts:?}"), &tally);
}

/// Every (operation, number, fault) the sweep fails, of the operations a
/// counting run did.
fn chosen_faults(counts: &BTreeMap<FsOp, u64>) -> Vec<(FsOp, u64, Fault)> {
    let mut chosen_faults = Vec::new();
    for op in FsOp::ALL {
        for (i, &fault) in op.faults().iter().enumerate() {
            let count = counts.get(&op).copied().unwrap_or(0);
            chosen_faults.extend((0..count).filter(|&n| chosen(op, i, n)).map(|n| (op, n, fault)));
        }
    }
    chosen_faults
}

/// Prints how the faulted runs ended, and checks there were some.
fn report(title: &str, tally: &Tally) {
    let runs: u64 = tally.values().sum();
    println!("{title}, {runs} faulted runs");
    for ((op, what), count) in tally {
        println!("  {op:?}: {what}: {count}");
    }
    assert!(runs > 0, "the sweep ran no faulted run");
}

#[test]
fn every_failed_file_operation_leaves_the_acknowledged_state_under_sync() {
    sweep(Durability::Sync);
}

#[test]
fn every_failed_file_operation_leaves_a_durable_prefix_under_buffered() {
    sweep(Durability::Buffered);
}

/// Whether the sweep fails operation `n` of the `i`th fault of its kind:
/// every one with `CELLARDB_FAULT_SWEEP=full`, else every seventh.
fn chosen(op: FsOp, i: usize, n: u64) -> bool {
    let full = std::env::var("CELLARDB_FAULT_SWEEP").is_ok_and(|v| v == "full");
    match std::env::var("CELLARDB_FAULT_ONLY") {
        Ok(only) => only == format!("{op:?}:{n}"),
        Err(_) => full || n % 7 == i as u64 % 7,
    }
}

/// Opens `fs` and reads table `t`, closing it after.
fn open_and_dump(fs: &MemFs) -> Result<Dump, Error> {
    let db = options(fs, Durability::Sync).open(DIR)?;
    let found = match table(&db, "t") {
        Some(t) => dump(&t),
        None => Ok(Vec::new()),
    };
    let closed = db.close();
    let found = found?;
    closed.map(|()| found)
}

/// Steps run before power loss in the recovery sweeps.
const CUT: u64 = 120;

/// The directory after `CUT` steps under `durability`, and the file system
/// that ran them (not yet closed: its database is returned too).
fn run_to_cut(durability: Durability) -> (MemFs, Db) {
    let fs = MemFs::new();
    let db = options(&fs, durability).open(DIR).expect("open");
    for n in 0..CUT {
        apply(&db, n).expect("step");
    }
    (fs, db)
}

#[test]
fn every_failed_file_operation_during_recovery_leaves_the_acknowledged_state() {
    // A directory as power loss left it after `CUT` acknowledged steps:
    // logs to replay, perhaps a flush's or a compaction's orphaned file.
    let reference = Reference::new();
    let (fs, db) = run_to_cut(Durability::Sync);
    let base = fs.crash_copy();
    drop(db);
    sweep_recovery("power loss under Sync", &base, &reference.after[CUT as usize]);
}

#[test]
fn every_failed_file_operation_during_recovery_of_a_torn_log_leaves_one_state() {
    // Under `Buffered`, a torn power loss leaves the log with a damaged
    // tail for recovery to cut (and the cut to make durable): a state the
    // first open decides, which every later open must keep.
    let reference = Reference::new();
    let (fs, db) = run_to_cut(Durability::Buffered);
    let torn_tail = |copy: &MemFs| {
        let db = options(copy, Durability::Buffered).open(DIR).expect("open");
        !db.stats().expect("stats").recovery.torn_tails.is_empty()
    };
    let base = (0..64).map(|seed| fs.torn_crash_copy(seed)).find(|b| torn_tail(&b.crash_copy())).expect("a torn tail");
    drop(db);
    let expected = open_and_dump(&base.crash_copy()).expect("recovery with no fault");
    assert!(reference.possible(0, CUT).contains(&&expected), "recovery keeps a prefix of what was acknowledged");
    sweep_recovery("torn power loss under Buffered", &base, &expected);
}

/// Fails each operation of opening `base` in turn: the open fails or gives
/// `expected`, and so does every open after it, as the process left the
/// directory and after power loss.
fn sweep_recovery(label: &str, base: &MemFs, expected: &Dump) {
    let counting = base.crash_copy();
    assert_eq!(&open_and_dump(&counting).expect("recovery with no fault"), expected);
    let counts = counting.operation_counts();
    let mut tally = Tally::new();
    for (op, n, fault) in chosen_faults(&counts) {
        let fs = base.crash_copy();
        fs.fail_operation(op, n, fault);
        let name = format!("recovery after {label}, {op:?} #{n} {fault:?}");
        let outcome = match open_and_dump(&fs) {
            Ok(found) => {
                assert_eq!(&found, expected, "{name}: the open succeeded with the wrong data");
                if may_be_absorbed(op) || fs.fault_struck().is_none() { "absorbed" } else { "opened" }
            }
            Err(_) => "open, read or close failed",
        };
        assert!(outcome != "opened", "{name}: the fault reached no caller");
        fs.disarm();
        for (what, copy) in [("as the process left it", fs.clone()), ("after power loss", fs.crash_copy())] {
            let found = open_and_dump(&copy).unwrap_or_else(|e| panic!("{name}: reopening {what}: {e}"));
            assert_eq!(&found, expected, "{name}: reopened {what}");
        }
        let torn = fs.torn_crash_copy(n);
        let found = open_and_dump(&torn).unwrap_or_else(|e| panic!("{name}: reopening after torn power loss: {e}"));
        assert_eq!(&found, expected, "{name}: reopened after torn power loss");
        *tally.entry((op, outcome)).or_default() += 1;
    }
    report(&format!("recovery fault sweep ({label}): operations {counts:?}"), &tally);
}

#[test]
fn a_failed_sync_loses_its_bytes_for_good_on_mem_fs() {
    // The sweep relies on this model of Linux's write-back errors.
    let fs = MemFs::new();
    let path = Path::new("/f");
    let mut file = cellardb::fs::Fs::create(&fs, path).expect("create");
    file.write_all(b"aaaa").expect("write");
    file.sync_data().expect("sync");
    fs.fail_operation(FsOp::Sync, 1, Fault::Error);
    file.write_all(b"bbbb").expect("write");
    assert!(file.sync_data().is_err(), "the armed sync fails");
    file.write_all(b"cccc").expect("write");
    file.sync_data().expect("a later sync succeeds");
    cellardb::fs::Fs::sync_dir(&fs, Path::new("/")).expect("sync dir");
    let after = cellardb::fs::Fs::read(&fs.crash_copy(), path).expect("read");
    assert_eq!(after, b"aaaa\0\0\0\0cccc", "the failed sync's bytes are zeros after power loss");
    assert_eq!(cellardb::fs::Fs::read(&fs, path).expect("read"), b"aaaabbbbcccc", "the page cache still has them");
}

#[test]
fn a_log_on_mem_fs_is_sized_in_whole_units_and_a_trim_is_undone_by_power_loss() {
    use cellardb::fs::{Fs, LOG_SIZE_UNIT};
    let fs = MemFs::new();
    let path = Path::new("/000001.log");
    let mut log = fs.create_log(path, 100).expect("create");
    log.append(b"records").expect("append");
    log.sync().expect("sync");
    fs.sync_dir(Path::new("/")).expect("sync dir");
    let mut reserved = b"records".to_vec();
    reserved.resize(LOG_SIZE_UNIT, 0);
    assert_eq!(fs.read(path).expect("read"), reserved, "one unit reserved");
    log.append(&vec![7; LOG_SIZE_UNIT]).expect("append past the unit");
    assert_eq!(fs.read(path).expect("read").len(), 2 * LOG_SIZE_UNIT, "grown by whole units");
    log.sync().expect("sync");
    log.trim().expect("trim");
    assert_eq!(fs.read(path).expect("read").len(), 7 + LOG_SIZE_UNIT, "trimmed to its records");
    assert_eq!(fs.process_crash_copy().read(path).expect("read").len(), 7 + LOG_SIZE_UNIT);
    assert_eq!(fs.crash_copy().read(path).expect("read").len(), 2 * LOG_SIZE_UNIT, "the trim was not synced");
    let other = Path::new("/000002.log");
    let mut dropped = fs.create_log(other, 0).expect("create");
    dropped.append(b"records").expect("append");
    drop(dropped);
    assert_eq!(fs.read(other).expect("read").len(), LOG_SIZE_UNIT, "dropping a log leaves its size");
}
