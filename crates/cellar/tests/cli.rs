//! The `cellar` binary, run on databases of the balloon workload built here:
//! what it prints, that `--json` parses, and its exit codes on bad input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cellardb::{Aggregate, Db, GcRule, Mutation, Options};
use cellardb_lab::workload::{SchemaPattern, Workload};

/// Exit codes, as `cellar --help` documents them.
const USAGE: i32 = 2;
const NOT_FOUND: i32 = 3;
const CORRUPT: i32 = 4;

fn cellar(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cellar")).args(args).env_remove("CELLAR_DB").output().expect("run cellar")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `cellar args` and returns its output, failing unless it exits 0.
fn ok(args: &[&str]) -> String {
    let o = cellar(args);
    assert!(o.status.success(), "cellar {args:?} failed: {}\n{}", stderr(&o), stdout(&o));
    stdout(&o)
}

/// Runs `cellar args`, expecting exit code `code`; returns stderr.
fn fails(args: &[&str], code: i32) -> String {
    let o = cellar(args);
    assert_eq!(o.status.code(), Some(code), "cellar {args:?}: {}\n{}", stderr(&o), stdout(&o));
    assert!(!stderr(&o).contains("panicked"), "cellar {args:?} panicked: {}", stderr(&o));
    stderr(&o)
}

/// Every line of `--json` output parsed.
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

const WORKLOAD: Workload = Workload { balloons: 3, days: 1, seed: 42 };

/// A database holding `pattern`'s rows of a small workload in table
/// `balloons`, all flushed, with the SSTables' paths.
fn pattern_db(pattern: SchemaPattern) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().block_size(4 << 10).open(dir.path()).unwrap();
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).unwrap();
    for e in WORKLOAD.events() {
        for r in t.mutate_rows(pattern.mutations(&e)) {
            r.unwrap();
        }
    }
    db.flush().unwrap();
    db.close().unwrap();
    let ssts = files_ending(dir.path(), ".sst");
    assert!(!ssts.is_empty());
    (dir, ssts)
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// The cells `pattern` writes for the workload, as the scan prints them.
fn expected_lines(pattern: SchemaPattern) -> BTreeSet<String> {
    let mut lines = BTreeSet::new();
    for e in WORKLOAD.events() {
        for (row, mutations) in pattern.mutations(&e) {
            for m in mutations {
                let Mutation::SetCell { family, qualifier, timestamp, value } = m else { panic!("{m:?}") };
                lines.insert(format!(
                    "{row} {family}:{} @{} = {}",
                    escape(&qualifier),
                    iso(timestamp.micros()),
                    escape(&value)
                ));
            }
        }
    }
    lines
}

/// The dumps' escaping, written out again so that the test checks it.
fn escape(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'\\' => "\\\\".to_owned(),
            b'"' => "\\\"".to_owned(),
            0x20..=0x7e => (b as char).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

/// A workload timestamp (whole minutes of March 2021) in ISO form.
fn iso(micros: i64) -> String {
    let minutes = (micros - cellardb_lab::workload::START_MICROS) / 60_000_000;
    let (day, minute) = (1 + minutes / 1440, minutes % 1440);
    assert!(day <= 31, "outside March 2021");
    format!("2021-03-{day:02}T{:02}:{:02}:00.000Z", minute / 60, minute % 60)
}

#[test]
fn scan_prints_exactly_the_cells_written_for_every_pattern() {
    for pattern in SchemaPattern::ALL {
        let (_dir, ssts) = pattern_db(pattern);
        let mut printed = Vec::new();
        for sst in &ssts {
            printed.extend(ok(&["dump", "sst", sst.to_str().unwrap(), "--scan"]).lines().map(str::to_owned));
        }
        let unique: BTreeSet<String> = printed.iter().cloned().collect();
        assert_eq!(unique.len(), printed.len(), "{}: a cell printed twice", pattern.name());
        assert_eq!(unique, expected_lines(pattern), "{}", pattern.name());
    }
}

#[test]
fn scan_bounds_and_limit_select_rows() {
    let (_dir, ssts) = pattern_db(SchemaPattern::SingleTsUnserialized);
    let sst = ssts[0].to_str().unwrap();
    let rows = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["dump", "sst", sst, "--scan"];
        a.extend(args);
        ok(&a).lines().map(|l| l.split(' ').next().unwrap().to_owned()).collect()
    };
    let prefixed = rows(&["--prefix", "asia-south2#1001#2021-03-01-00"]);
    assert_eq!(prefixed.len(), 60 * 4, "an hour of one balloon, four metrics");
    assert!(prefixed.iter().all(|r| r.starts_with("asia-south2#1001#2021-03-01-00")));
    let ranged = rows(&["--from", "us-west2#1000#2021-03-01-0010", "--to", "us-west2#1000#2021-03-01-0012"]);
    assert_eq!(ranged.len(), 8);
    assert_eq!(ranged[0], "us-west2#1000#2021-03-01-0010");
    assert_eq!(rows(&["--limit", "5"]).len(), 5);
}

#[test]
fn json_output_parses_and_agrees_with_the_text() {
    let (dir, ssts) = pattern_db(SchemaPattern::SingleTsSerialized);
    let sst = ssts[0].to_str().unwrap();
    let summary = json_lines(&ok(&["dump", "sst", sst, "--json"]));
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0]["family"], "measurements");
    let cells: u64 = summary[0]["cells"].as_u64().unwrap();
    let scanned = json_lines(&ok(&["dump", "sst", sst, "--scan", "--json"]));
    assert_eq!(scanned.len() as u64, cells);
    assert!(scanned.iter().all(|c| c["record"] == "entry" && c["kind"] == "put" && c["qualifier"] == "blob"));
    let blocks = json_lines(&ok(&["dump", "sst", sst, "--blocks", "--json"]));
    assert_eq!(blocks.len() as u64, summary[0]["data_blocks"].as_u64().unwrap());
    let entries: u64 = blocks.iter().map(|b| b["entries"].as_u64().unwrap()).sum();
    assert_eq!(entries, cells);
    let per_block = &summary[0]["entries_per_block"];
    let most = blocks.iter().map(|b| b["entries"].as_u64().unwrap()).max().unwrap();
    assert_eq!(per_block["max"].as_u64().unwrap(), most);
    let mean = per_block["mean"].as_u64().unwrap();
    assert!(
        mean.abs_diff(entries / blocks.len() as u64) <= 1,
        "mean {mean} of {entries} entries in {} blocks",
        blocks.len()
    );
    let verified = json_lines(&ok(&["dump", "sst", sst, "--verify", "--json"]));
    assert_eq!(verified.last().unwrap()["faults"], 0);

    let manifest = json_lines(&ok(&["dump", "manifest", dir.path().to_str().unwrap(), "--json"]));
    let listed: Vec<_> = manifest.iter().filter(|r| r["record"] == "sst").collect();
    assert_eq!(listed.len(), ssts.len());
    assert_eq!(manifest.last().unwrap()["record"], "end");

    let db = dir.path().to_str().unwrap();
    let rows = json_lines(&ok(&["--db", db, "read", "balloons", "count=3", "--json"]));
    assert_eq!(rows.len(), 3);
    let stats = json_lines(&ok(&["--db", db, "stats", "--json"]));
    let bytes: u64 = stats.iter().filter_map(|s| s["bytes"].as_u64()).sum();
    let on_disk: u64 = ssts.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    assert_eq!(bytes, on_disk);
}

/// A flush writes no dictionary; a file a compaction wrote with one:
/// `dump sst` names the dictionary and the version-2 footer, and reads and
/// verifies every cell.
#[test]
fn dump_sst_shows_a_compacted_file_s_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = SchemaPattern::SingleTsUnserialized;
    let db = Options::default().block_entries(64).compression_dictionary(1024).open(dir.path()).unwrap();
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).unwrap();
    for e in WORKLOAD.events() {
        for r in t.mutate_rows(pattern.mutations(&e)) {
            r.unwrap();
        }
    }
    db.flush().unwrap();
    for flushed in files_ending(dir.path(), ".sst") {
        let summary = &json_lines(&ok(&["dump", "sst", flushed.to_str().unwrap(), "--json"]))[0];
        assert_eq!((summary["format_version"].as_u64(), summary["dictionary"].is_null()), (Some(1), true));
    }
    db.compact_table("balloons").unwrap();
    db.close().unwrap();
    let ssts = files_ending(dir.path(), ".sst");
    assert_eq!(ssts.len(), 1);
    let sst = ssts[0].to_str().unwrap();
    let summary = &json_lines(&ok(&["dump", "sst", sst, "--json"]))[0];
    assert_eq!(summary["format_version"], 2);
    let dictionary = summary["dictionary"]["bytes"].as_u64().expect("a dictionary");
    assert!((256..=1024).contains(&dictionary), "{dictionary} bytes");
    let text = ok(&["dump", "sst", sst]);
    let offset = summary["dictionary"]["offset"].as_u64().unwrap();
    assert!(text.contains(&format!("dictionary  {dictionary} bytes at offset {offset}\n")), "{text}");
    let size = std::fs::metadata(&ssts[0]).unwrap().len();
    assert!(text.contains(&format!("footer      80 bytes at offset {}\n", size - 80)), "{text}");
    let scanned = json_lines(&ok(&["dump", "sst", sst, "--scan", "--json"]));
    assert_eq!(scanned.len() as u64, summary["cells"].as_u64().unwrap());
    assert_eq!(json_lines(&ok(&["dump", "sst", sst, "--verify", "--json"])).last().unwrap()["faults"], 0);
}

#[test]
fn verify_names_the_offset_of_a_flipped_byte() {
    let (_dir, ssts) = pattern_db(SchemaPattern::BucketNewCell);
    let path = &ssts[0];
    let sst = path.to_str().unwrap();
    assert!(ok(&["dump", "sst", sst, "--verify"]).starts_with("verified "));
    let blocks = json_lines(&ok(&["dump", "sst", sst, "--blocks", "--json"]));
    assert!(blocks.len() >= 4, "the test needs a file of several blocks");
    let offset = |block: &serde_json::Value| usize::try_from(block["offset"].as_u64().unwrap()).unwrap();
    let (second, fourth) = (offset(&blocks[1]), offset(&blocks[3]));
    let mut bytes = std::fs::read(path).unwrap();
    bytes[second + 10] ^= 0x01;
    bytes[fourth + 3] ^= 0x80;
    std::fs::write(path, &bytes).unwrap();

    let o = cellar(&["dump", "sst", sst, "--verify"]);
    assert_eq!(o.status.code(), Some(CORRUPT), "{}", stderr(&o));
    let report = stdout(&o);
    let faults: Vec<&str> = report.lines().filter(|l| l.starts_with("fault at offset ")).collect();
    assert_eq!(faults.len(), 2, "every fault is reported, not just the first: {report}");
    assert!(faults[0].starts_with(&format!("fault at offset {second}:")), "{report}");
    assert!(faults[1].starts_with(&format!("fault at offset {fourth}:")), "{report}");
    assert!(stderr(&o).contains(sst), "stderr names the file: {}", stderr(&o));
    // Scanning the damaged block is a corruption error, never wrong cells.
    fails(&["dump", "sst", sst, "--scan"], CORRUPT);
}

#[test]
fn garbage_truncated_and_missing_files_give_clear_errors_and_exit_codes() {
    let (dir, ssts) = pattern_db(SchemaPattern::BucketNewColumn);
    let scratch = tempfile::tempdir().unwrap();
    let garbage = scratch.path().join("garbage.sst");
    std::fs::write(&garbage, (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect::<Vec<u8>>()).unwrap();
    let good = std::fs::read(&ssts[0]).unwrap();
    let truncated = scratch.path().join("truncated.sst");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let empty = scratch.path().join("empty.sst");
    std::fs::write(&empty, b"").unwrap();
    for file in [&garbage, &truncated, &empty] {
        let f = file.to_str().unwrap();
        for flag in ["--summary", "--scan", "--verify", "--blocks"] {
            let err = fails(&["dump", "sst", f, flag], CORRUPT);
            assert!(err.contains(f), "{flag} on {f}: {err}");
        }
        assert!(fails(&["dump", "manifest", f], CORRUPT).contains("manifest"));
        if file != &empty {
            // (An empty log is a log created just before a crash: valid.)
            assert!(fails(&["dump", "wal", f], CORRUPT).contains("not a cellardb log"));
        }
    }
    let missing = scratch.path().join("000999.sst");
    assert!(fails(&["dump", "sst", missing.to_str().unwrap()], NOT_FOUND).contains("000999.sst"));
    fails(&["dump", "manifest", scratch.path().to_str().unwrap()], NOT_FOUND);
    fails(&["--db", scratch.path().join("nowhere").to_str().unwrap(), "ls"], NOT_FOUND);
    let db = dir.path().to_str().unwrap();
    assert!(fails(&["--db", db, "ls", "no-such-table"], NOT_FOUND).contains("no-such-table"));
    fails(&["--db", db, "lookup", "balloons", "no-such-row"], NOT_FOUND);
    fails(&["dump", "sst"], USAGE);
    fails(&["ls"], USAGE);
    fails(&["--db", db, "read", "balloons", "bogus=1"], USAGE);
    fails(&["--db", db, "read", "balloons", "columns=m:("], USAGE);
}

/// Every byte of an SSTable is under a checksum or the footer's magic: a
/// flip anywhere is a fault `--verify` reports, and the summary and scan
/// either succeed on the bytes they do not read or report corruption —
/// never a panic or another exit code.
#[test]
fn a_flip_anywhere_in_an_sstable_is_a_fault_never_a_panic() {
    let (_dir, ssts) = pattern_db(SchemaPattern::BucketNewColumn);
    let good = std::fs::read(&ssts[0]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("000001.sst");
    let f = path.to_str().unwrap();
    let spread = (0..good.len()).step_by(good.len() / 24);
    let footer = (good.len() - 64..good.len()).step_by(4);
    for (i, at) in spread.chain(footer).enumerate() {
        let mut bad = good.clone();
        bad[at] ^= 1 << (i % 8);
        std::fs::write(&path, &bad).unwrap();
        let o = cellar(&["dump", "sst", f, "--verify"]);
        assert_eq!(o.status.code(), Some(CORRUPT), "flip at {at}: {}{}", stdout(&o), stderr(&o));
        for flag in ["--summary", "--scan"] {
            let o = cellar(&["dump", "sst", f, flag]);
            assert!(matches!(o.status.code(), Some(0 | CORRUPT)), "{flag}, flip at {at}: {}", stderr(&o));
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        }
    }
}

#[test]
fn wal_dump_shows_every_record_and_reports_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        let t = db.create_table("balloons", [("measurements", GcRule::none())]).unwrap();
        for e in WORKLOAD.balloon_events(0).take(10) {
            for (row, m) in SchemaPattern::SingleTsUnserialized.mutations(&e) {
                t.mutate_row(row, m).unwrap();
            }
        }
        t.mutate_row("us-west2#1000#2021-03-01-0000", [Mutation::delete_from_row()]).unwrap();
        db.close().unwrap();
    }
    let log = files_ending(dir.path(), ".log").pop().unwrap();
    let path = log.to_str().unwrap();
    let text = ok(&["dump", "wal", path]);
    assert_eq!(text.lines().filter(|l| l.starts_with('@')).count(), 11, "{text}");
    assert!(text.contains("us-west2#1000#2021-03-01-0009 measurements:altitude @2021-03-01T00:09:00.000Z = "));
    assert!(text.contains("us-west2#1000#2021-03-01-0000 measurements: DELETE family"), "{text}");
    assert!(text.lines().last().unwrap().starts_with("end at offset"), "{text}");

    let records = json_lines(&ok(&["dump", "wal", path, "--json"]));
    let last = records.last().unwrap();
    assert_eq!((last["record"].as_str(), last["records"].as_u64()), (Some("end"), Some(11)));
    let end = usize::try_from(last["offset"].as_u64().unwrap()).unwrap();

    // Cut the last record short: a torn tail, reported, not an error.
    let bytes = std::fs::read(&log).unwrap();
    let last_record = records[records.len() - 2]["offset"].as_u64().unwrap();
    std::fs::write(&log, &bytes[..end - 3]).unwrap();
    let o = cellar(&["dump", "wal", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tail = stdout(&o).lines().last().unwrap().to_owned();
    assert!(tail.starts_with(&format!("torn tail at offset {last_record}:")), "{tail}");
    assert!(stderr(&o).contains("torn tail"));
    assert!(!stderr(&o).contains("units"), "a closed log may have any size: {}", stderr(&o));

    // Damage in the middle, with intact records after it, is corruption.
    let mut bytes = bytes;
    bytes[usize::try_from(records[2]["offset"].as_u64().unwrap()).unwrap() + 20] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();
    let err = fails(&["dump", "wal", path], CORRUPT);
    assert!(err.contains(path), "{err}");
}

#[test]
fn dump_wal_names_a_log_being_written_whose_size_was_changed() {
    let live = tempfile::tempdir().unwrap();
    let db = Db::open(live.path()).unwrap();
    let t = db.create_table("t", [("cf", GcRule::none())]).unwrap();
    t.mutate_row("r", [Mutation::set_cell("cf", "q", 1000, "v")]).unwrap();
    // What the directory holds while the database runs: its log listed as
    // being written, a whole number of units long.
    let copy = tempfile::tempdir().unwrap();
    for file in files_ending(live.path(), "") {
        std::fs::copy(&file, copy.path().join(file.file_name().unwrap())).unwrap();
    }
    let log = files_ending(copy.path(), ".log").pop().unwrap();
    let path = log.to_str().unwrap();
    let o = cellar(&["dump", "wal", path]);
    assert!(o.status.success() && !stderr(&o).contains("units"), "{}", stderr(&o));
    let bytes = std::fs::read(&log).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    std::fs::write(&log, &bytes[..end]).unwrap();
    let o = cellar(&["dump", "wal", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().last().unwrap().contains("1 records, intact"), "{}", stdout(&o));
    assert!(stderr(&o).contains("being written") && stderr(&o).contains("recovery refuses it"), "{}", stderr(&o));
}

#[test]
fn cbt_commands_read_a_live_database_without_disturbing_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t =
        db.create_table("balloons", [("measurements", GcRule::max_versions(1)), ("notes", GcRule::none())]).unwrap();
    for e in WORKLOAD.events().take(30) {
        for (row, m) in SchemaPattern::BucketNewCell.mutations(&e) {
            t.mutate_row(row, m).unwrap();
        }
    }
    db.create_aggregate_family("balloons", "launches", Aggregate::Sum, GcRule::none()).unwrap();
    db.flush().unwrap();
    t.mutate_row("us-west2#1000#week09", [Mutation::set_cell("notes", "who\x00", 1000, "bin\x01ary")]).unwrap();
    let path = dir.path().to_str().unwrap();
    let cli = |args: &[&str]| -> String {
        let mut a = vec!["--db", path];
        a.extend(args);
        ok(&a)
    };
    assert_eq!(cli(&["ls"]), "balloons\n");
    let families = cli(&["ls", "balloons"]);
    assert!(families.contains("measurements") && families.contains("versions() > 1"), "{families}");
    assert!(families.contains("launches\t") && families.contains("\"sum\":{}"), "{families}");
    let manifest = json_lines(&ok(&["dump", "manifest", path, "--json"]));
    let aggregates: Vec<_> = manifest.iter().filter(|r| r["record"] == "family").map(|r| &r["aggregate"]).collect();
    assert_eq!(aggregates, [&serde_json::Value::from("sum"), &serde_json::Value::Null, &serde_json::Value::Null]);
    assert_eq!(cli(&["count", "balloons"]), "3\n");

    let row = cli(&["lookup", "balloons", "us-west2#1000#week09"]);
    assert!(row.starts_with(&format!("{}\nus-west2#1000#week09\n", "-".repeat(40))), "{row}");
    assert!(row.contains("  notes:who\\x00 "), "the unflushed cell, escaped: {row}");
    assert!(row.contains("    \"bin\\x01ary\""), "{row}");
    // A key given escaped, as shown.
    let notes = cli(&["lookup", "balloons", "us-west2#1000#week09", "columns=notes:who\\x00"]);
    assert_eq!(notes.lines().count(), 5, "rule, key, column, value, empty line: {notes}");

    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let mut a = vec!["read", "balloons", "--json"];
        a.extend(args);
        json_lines(&cli(&a))
    };
    assert_eq!(rows(&[]).len(), 3);
    assert_eq!(rows(&["prefix=asia"]).len(), 2);
    assert_eq!(rows(&["start=asia-south2", "end=europe"]).len(), 2);
    assert_eq!(rows(&["count=1"]).len(), 1);
    let pressure = rows(&["columns=measurements:pressure"]);
    assert!(pressure.iter().all(|r| r["cells"].as_array().unwrap().iter().all(|c| c["qualifier"] == "pressure")));
    let two = rows(&["columns=measurements:pressure,notes:"]);
    let columns: BTreeSet<&str> =
        two.iter().flat_map(|r| r["cells"].as_array().unwrap()).map(|c| c["qualifier"].as_str().unwrap()).collect();
    assert_eq!(columns, BTreeSet::from(["pressure", "who\\x00"]));
    let minutes_of_first = rows(&["columns=measurements:pressure"])[0]["cells"].as_array().unwrap().len();
    assert_eq!(minutes_of_first, 1, "max_versions(1) applies to what the tool reads");

    let stats = cli(&["stats"]);
    assert!(stats.contains("balloons") && stats.contains("L0"), "{stats}");
    assert!(stats.contains("not yet in SSTables: 1 records"), "{stats}");

    // The writer goes on as if nothing happened.
    t.mutate_row("z", [Mutation::set_cell("notes", "q", 1000, "v")]).unwrap();
    db.flush().unwrap();
    assert_eq!(cli(&["count", "balloons"]), "4\n");
}

/// A database of two tables: `t`, family `cf`, rows `a1`, `a2` and `b1`,
/// each with columns `x` and `y` written at minutes 0, 1 and 2 of March
/// 2021 (value `ROW.COLUMN.MINUTE`), and in `b1` a column `note` whose
/// value needs quoting; `u`, a plain family `plain` keeping 2 versions and
/// an aggregate family `sum`.
fn cbt_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf", GcRule::none())]).unwrap();
    for row in ["a1", "a2", "b1"] {
        for minute in 0..3 {
            let at = cellardb_lab::workload::START_MICROS + minute * 60_000_000;
            let cell = |col: &str| Mutation::set_cell("cf", col, at, format!("{row}.{col}.{minute}"));
            t.mutate_row(row, [cell("x"), cell("y")]).unwrap();
        }
    }
    let note = "two\nlines\t\u{e9}".bytes().chain([0xff]).collect::<Vec<u8>>();
    t.mutate_row("b1", [Mutation::set_cell("cf", "note", cellardb_lab::workload::START_MICROS, note)]).unwrap();
    db.create_table("u", [("plain", GcRule::max_versions(2))]).unwrap();
    db.create_aggregate_family("u", "sum", Aggregate::Sum, GcRule::none()).unwrap();
    db.close().unwrap();
    dir
}

/// `cellar --db DB args...`, which must succeed.
fn on(db: &tempfile::TempDir, args: &[&str]) -> String {
    let mut a = vec!["--db", db.path().to_str().unwrap()];
    a.extend(args);
    ok(&a)
}

/// The rows `read t args... --json` gives.
fn read_json(db: &tempfile::TempDir, args: &[&str]) -> Vec<serde_json::Value> {
    let mut a = vec!["read", "t", "--json"];
    a.extend(args);
    json_lines(&on(db, &a))
}

fn keys(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter().map(|r| r["row"].as_str().unwrap()).collect()
}

fn cells(row: &serde_json::Value) -> &Vec<serde_json::Value> {
    row["cells"].as_array().unwrap()
}

#[test]
fn read_selects_rows_by_regex_and_reverses_them_as_cbt_does() {
    let db = cbt_db();
    assert_eq!(keys(&read_json(&db, &[])), ["a1", "a2", "b1"]);
    assert_eq!(keys(&read_json(&db, &["regex=a.*"])), ["a1", "a2"]);
    assert_eq!(keys(&read_json(&db, &["regex=a"])), Vec::<&str>::new(), "a regex matches the whole key");
    assert_eq!(keys(&read_json(&db, &["regex=.*1"])), ["a1", "b1"]);
    assert_eq!(keys(&read_json(&db, &["reversed=true"])), ["b1", "a2", "a1"]);
    assert_eq!(keys(&read_json(&db, &["reversed=1", "count=2", "regex=a.*"])), ["a2", "a1"]);
    assert_eq!(keys(&read_json(&db, &["reversed=T", "start=a2"])), ["b1", "a2"]);
    assert_eq!(keys(&read_json(&db, &["reversed=False"])), ["a1", "a2", "b1"]);
    assert_eq!(keys(&read_json(&db, &["count=0"])), Vec::<&str>::new(), "count=0 reads no row, as in cbt");
    assert_eq!(keys(&read_json(&db, &["count=0x2"])), ["a1", "a2"], "Go's base prefixes");
}

#[test]
fn cells_per_column_keeps_the_newest_and_keys_only_strips_values() {
    let db = cbt_db();
    assert_eq!(cells(&read_json(&db, &["prefix=a1"])[0]).len(), 6);
    let newest = read_json(&db, &["prefix=a1", "cells-per-column=1"]);
    let values: Vec<&str> = cells(&newest[0]).iter().map(|c| c["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["a1.x.2", "a1.y.2"]);
    for row in read_json(&db, &["cells-per-column=2", "columns=x"]) {
        assert_eq!(cells(&row).len(), 2, "{row}");
        assert!(cells(&row).iter().all(|c| c["qualifier"] == "x"), "a bare column is a qualifier, as in cbt");
    }
    // As cbt: keys-only strips the values, and keeps the cells.
    let stripped = read_json(&db, &["keys-only=true"]);
    assert_eq!(stripped.iter().map(|r| cells(r).len()).collect::<Vec<_>>(), [6, 6, 7]);
    assert!(stripped.iter().flat_map(cells).all(|c| c["value"] == ""));
    assert!(read_json(&db, &["keys-only=f"]).iter().flat_map(cells).all(|c| c["value"] != ""));
    let looked_up = json_lines(&on(&db, &["lookup", "t", "a2", "cells-per-column=1", "keys-only=TRUE", "--json"]));
    assert_eq!(cells(&looked_up[0]).iter().map(|c| c["value"].as_str().unwrap()).collect::<Vec<_>>(), ["", ""]);
}

#[test]
fn rows_print_as_cbt_prints_them() {
    let db = cbt_db();
    let rule = "-".repeat(40);
    let row = on(&db, &["lookup", "t", "b1", "columns=note,y", "cells-per-column=1"]);
    let expected = format!(
        "{rule}\nb1\n  {:<40} @ 2021/03/01-00:00:00.000000\n    \"two\\nlines\\t\u{e9}\\xff\"\n  {:<40} @ 2021/03/01-00:02:00.000000\n    \"b1.y.2\"\n\n",
        "cf:note", "cf:y"
    );
    assert_eq!(row, expected, "Go's time layout and %q, and an empty line after the row");
    let read = on(&db, &["read", "t", "regex=a.*", "columns=x", "cells-per-column=1", "keys-only=true"]);
    let cell = |key: &str| format!("{rule}\n{key}\n  {:<40} @ 2021/03/01-00:02:00.000000\n    \"\"\n\n", "cf:x");
    assert_eq!(read, cell("a1") + &cell("a2"));
}

#[test]
fn bad_read_arguments_are_usage_errors_in_cbt_s_words() {
    let db = cbt_db();
    let path = db.path().to_str().unwrap();
    let usage = |args: &[&str]| {
        let mut a = vec!["--db", path];
        a.extend(args);
        fails(&a, USAGE)
    };
    for (args, message) in [
        (&["read", "t", "keys-only=yes"][..], "strconv.ParseBool: parsing \"yes\": invalid syntax"),
        (&["read", "t", "reversed=maybe"], "strconv.ParseBool: parsing \"maybe\": invalid syntax"),
        (&["lookup", "t", "a1", "keys-only=2"], "strconv.ParseBool: parsing \"2\": invalid syntax"),
        (&["read", "t", "count=ten"], "Bad count \"ten\": strconv.ParseInt: parsing \"ten\": invalid syntax"),
        (
            &["read", "t", "cells-per-column=x"],
            "Bad number of cells per column \"x\": strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (&["read", "t", "columns=a:b:c"], "bad format for column \"a:b:c\""),
        (&["read", "t", "bogus=1"], "unknown arg key \"bogus\""),
        (&["lookup", "t", "a1", "regex=a.*"], "unknown arg key \"regex\""),
        (&["count", "t", "start=a"], "unknown arg key \"start\""),
        (&["read", "t", "prefix=a", "end=b"], "\"start\"/\"end\" may not be mixed with \"prefix\""),
    ] {
        let err = usage(args);
        assert_eq!(err, format!("cellar: {message}\n"), "{args:?}");
    }
    assert!(usage(&["read", "t", "regex=("]).contains("invalid regex \"(\""));
    assert!(usage(&["read", "t", "cells-per-column=0"]).contains("must be > 0"));
}

#[test]
fn ls_and_count_print_as_cbt_and_give_json_lines() {
    let db = cbt_db();
    assert_eq!(on(&db, &["ls"]), "t\nu\n");
    assert_eq!(
        json_lines(&on(&db, &["ls", "--json"])),
        [serde_json::json!({"table": "t"}), serde_json::json!({"table": "u"})]
    );
    let sum = r#"{"aggregateType":{"inputType":{"int64Type":{"encoding":{"bigEndianBytes":{}}}},"sum":{}}}"#;
    let expected = format!(
        "Family Name\tGC Policy\t\tValue Type\n-----------\t---------\t\t----------\nplain\t\tversions() > 2\t\t{{}}\nsum\t\t<never>\t\t\t{sum}\n"
    );
    assert_eq!(on(&db, &["ls", "u"]), expected, "Go's tabwriter, as cbt ls");
    let families = json_lines(&on(&db, &["ls", "u", "--json"]));
    assert_eq!(families[0], serde_json::json!({"family": "plain", "gc_policy": "versions() > 2", "aggregate": null}));
    assert_eq!(families[1], serde_json::json!({"family": "sum", "gc_policy": "<never>", "aggregate": "sum"}));
    assert_eq!(on(&db, &["count", "t"]), "3\n");
    assert_eq!(on(&db, &["count", "t", "prefix=a"]), "2\n");
    assert_eq!(json_lines(&on(&db, &["count", "t", "--json"])), [serde_json::json!({"table": "t", "rows": 3})]);
    assert_eq!(json_lines(&on(&db, &["count", "u", "--json"])), [serde_json::json!({"table": "u", "rows": 0})]);
}

#[test]
fn a_directory_that_is_not_a_database_says_so() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("notes.txt"), "not a database").unwrap();
    let dir = scratch.path().to_str().unwrap();
    for command in [&["ls"][..], &["count", "t"], &["read", "t"], &["lookup", "t", "r"], &["stats"]] {
        let mut args = vec!["--db", dir];
        args.extend(command);
        let err = fails(&args, NOT_FOUND);
        assert_eq!(err, format!("cellar: {dir} is not a cellardb database (no MANIFEST)\n"), "{command:?}");
    }
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 1, "nothing was created");
}

#[test]
fn verify_checks_a_whole_database_and_exits_4_on_damage() {
    let (dir, ssts) = pattern_db(SchemaPattern::SingleTsSerialized);
    let db = dir.path().to_str().unwrap();
    let healthy = ok(&["--db", db, "verify"]);
    assert!(healthy.trim_end().ends_with(": 0 faults"), "{healthy}");
    let mut data = std::fs::read(&ssts[0]).unwrap();
    data[20] ^= 0x40;
    std::fs::write(&ssts[0], &data).unwrap();
    let o = cellar(&["--db", db, "verify"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.starts_with("fault: ") && l.contains(&*ssts[0].to_string_lossy())), "{out}");
    let empty = tempfile::tempdir().unwrap();
    fails(&["--db", empty.path().to_str().unwrap(), "verify"], 3);
}
