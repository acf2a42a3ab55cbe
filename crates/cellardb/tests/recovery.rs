//! Durability and recovery: reopen after drop, power loss with `Sync`,
//! torn log tails, the lock file, writes refused after an I/O failure.

mod common;

use std::io::Write;
use std::os::unix::fs::FileExt;

use cellardb::fs::MemFs;
use cellardb::{Db, Durability, Error, GcRule, Mutation, Options, RecoveryMode};
use common::*;

fn put(t: &cellardb::Table, key: &str, v: &str) {
    t.mutate_row(key, [Mutation::set_cell("cf1", "q", 1000, v)]).unwrap();
}

#[test]
fn reopen_after_a_drop_without_close_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for round in 0..3 {
        let (db, t) = open_with_table(dir.path(), small_options());
        assert_eq!(scan_all(&t), expected, "round {round}");
        for i in 0..400 {
            let key = format!("r{round}-{i:03}");
            put(&t, &key, "v");
            expected.push(flat(&key, "cf1", "q", 1000, "v"));
        }
        drop(t);
        drop(db);
    }
    let (_db, t) = open_with_table(dir.path(), small_options());
    assert_eq!(scan_all(&t), expected);
}

#[test]
fn sync_writes_survive_power_loss_wherever_it_strikes() {
    let path = std::path::Path::new("/db");
    let mut fs = MemFs::new();
    let mut acknowledged = Vec::new();
    // Power fails after a different number of writes each round (none in
    // the first: right after open, before the new log was ever synced), so
    // it strikes in the middle of memtable switches and flushes too.
    for round in 0..12 {
        let opts = mem_options(&fs).durability(Durability::Sync).memtable_size(4 << 10);
        let (db, t) = open_with_table(path, opts);
        assert_eq!(scan_all(&t), acknowledged, "round {round}: every acknowledged write is back");
        for i in 0..(round * 37) % 200 {
            let key = format!("r{round:02}-{i:03}");
            put(&t, &key, "v");
            acknowledged.push(flat(&key, "cf1", "q", 1000, "v"));
        }
        let after_power_loss = fs.crash_copy();
        drop(t);
        drop(db);
        fs = after_power_loss;
    }
}

#[test]
fn buffered_writes_may_be_lost_by_power_loss_but_the_database_opens() {
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = open_with_table(path, mem_options(&fs));
    db.flush().unwrap();
    put(&t, "a", "unsynced");
    let fs = fs.crash_copy();
    let (_db2, t) = open_with_table(path, mem_options(&fs));
    assert!(scan_all(&t).is_empty(), "unsynced writes are gone, and nothing else is");
}

fn log_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs
}

/// A copy of `dir` as a crash of the process leaves it, taken while the
/// database in it is open: its files as they are now, the log being written
/// and not closed, the records written into its mapping included.
fn crash_copy_of(dir: &std::path::Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
    }
    copy
}

/// A crash copy of a database holding row `a` in its log being written,
/// with the path of that log.
fn crashed_with_row_a() -> (tempfile::TempDir, std::path::PathBuf) {
    let live = tempfile::tempdir().unwrap();
    let (_db, t) = open_with_table(live.path(), Options::default());
    put(&t, "a", "v");
    let dir = crash_copy_of(live.path());
    let log = log_files(dir.path()).pop().unwrap();
    (dir, log)
}

/// Where the records of a log file end: after its last byte that is not
/// zero (a log being written goes on in preallocated zeros).
fn records_end(data: &[u8]) -> usize {
    data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

#[test]
fn a_torn_log_tail_is_cut_and_reported() {
    let live = tempfile::tempdir().unwrap();
    let (_db, t) = open_with_table(live.path(), Options::default());
    for i in 0..10 {
        put(&t, &format!("k{i}"), "v");
    }
    let dir = crash_copy_of(live.path());
    let log = log_files(dir.path()).pop().unwrap();
    // The last record's last bytes never reached the disk: zeros, as in
    // the preallocated room after them.
    let len = records_end(&std::fs::read(&log).unwrap()) as u64;
    let size = std::fs::metadata(&log).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().write_all_at(&[0; 3], len - 3).unwrap();
    let (db, t) = open_with_table(dir.path(), Options::default());
    let got: Vec<String> = scan_all(&t).into_iter().map(|c| c.0).collect();
    assert_eq!(got, (0..9).map(|i| format!("k{i}")).collect::<Vec<_>>());
    let report = db.stats().unwrap().recovery;
    assert_eq!(report.torn_tails.len(), 1);
    let torn = &report.torn_tails[0];
    assert_eq!(torn.file, log);
    assert!(torn.offset < len - 3 && torn.offset + torn.dropped_bytes == size);
    drop(t);
    drop(db);
    let (db, _t) = open_with_table(dir.path(), Options::default());
    assert!(db.stats().unwrap().recovery.torn_tails.is_empty(), "the cut is permanent and reported once");
}

#[test]
fn a_log_being_written_cut_short_or_grown_is_corruption_in_both_modes() {
    let live = tempfile::tempdir().unwrap();
    let small = || Options::default().memtable_size(256 << 10);
    let (_db, t) = open_with_table(live.path(), small().durability(Durability::Sync));
    for i in 0..10 {
        put(&t, &format!("k{i}"), "v");
    }
    let image = crash_copy_of(live.path());
    let log = log_files(image.path()).pop().unwrap();
    let records = std::fs::read(&log).unwrap();
    let end = records_end(&records);
    let mut damages: Vec<(&str, Vec<u8>)> = vec![
        // At the end of the ninth record: the log reads whole, one row short.
        ("cut at a record boundary", records[..end - (end - 12) / 10].to_vec()),
        ("cut after its last record", records[..end].to_vec()),
        ("cut in its zeros", records[..end + 100].to_vec()),
    ];
    let mut grown = records.clone();
    grown.extend_from_slice(&[0xab; 100]);
    damages.push(("grown by garbage", grown));
    for (damage, bytes) in damages {
        for mode in [RecoveryMode::TolerateCorruptTail, RecoveryMode::AbsoluteConsistency] {
            let dir = crash_copy_of(image.path());
            std::fs::write(dir.path().join(log.file_name().unwrap()), &bytes).unwrap();
            match small().recovery_mode(mode).open(dir.path()) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file, dir.path().join(log.file_name().unwrap()), "{damage}, {mode:?}");
                    assert_eq!(offset, bytes.len() as u64, "{damage}, {mode:?}: named at the file's end");
                }
                other => panic!("{damage}, {mode:?}: {:?}, not Error::Corruption", other.map(|_| ())),
            }
        }
    }
    let (_db, t) = open_with_table(image.path(), small());
    assert_eq!(scan_all(&t).len(), 10, "undamaged, the same image opens whole");
}

#[test]
fn a_log_of_format_version_1_is_replayed_as_found() {
    let (dir, log) = crashed_with_row_a();
    // Version 1 trimmed a log being written when its writer was dropped.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.truncate(records_end(&bytes));
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(&log, &bytes).unwrap();
    let (_db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")]);
}

#[test]
fn garbage_after_the_last_record_is_a_torn_tail_in_tolerant_mode_only() {
    let (dir, log) = crashed_with_row_a();
    let end = records_end(&std::fs::read(&log).unwrap()) as u64;
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().write_all_at(&[0xabu8; 100], end).unwrap();
    let strict = Options::default().recovery_mode(RecoveryMode::AbsoluteConsistency).open(dir.path());
    assert!(matches!(strict, Err(Error::Corruption { .. })), "strict mode refuses: {:?}", strict.err());
    let (_db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")]);
}

#[test]
fn the_zero_tail_a_crash_leaves_behind_a_mapped_log_is_a_clean_end() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, t) = open_with_table(dir.path(), Options::default());
        put(&t, "a", "v");
    }
    let log = log_files(dir.path()).pop().unwrap();
    std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(&vec![0u8; 1 << 20]).unwrap();
    let db = Options::default().recovery_mode(RecoveryMode::AbsoluteConsistency).open(dir.path()).unwrap();
    assert!(db.stats().unwrap().recovery.torn_tails.is_empty());
    assert_eq!(scan_all(&db.table("t").unwrap()), vec![flat("a", "cf1", "q", 1000, "v")]);
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert!(matches!(Db::open(dir.path()), Err(Error::Locked { .. })));
    db.close().unwrap();
    drop(db);
    Db::open(dir.path()).unwrap();
}

#[test]
fn writes_are_refused_after_a_log_write_fails_until_reopen() {
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = open_with_table(path, mem_options(&fs));
    put(&t, "a", "v");
    fs.set_fail_writes(true);
    let failed = t.mutate_row("b", [Mutation::set_cell("cf1", "q", 1000, "v")]);
    assert!(matches!(failed, Err(Error::Io { .. })), "{failed:?}");
    fs.set_fail_writes(false);
    let refused = t.mutate_row("c", [Mutation::set_cell("cf1", "q", 1000, "v")]);
    assert_poisoned_by_io(&refused);
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")], "reads go on");
    drop(t);
    drop(db);
    // Closed after a failed write, the log is not recorded as closed
    // cleanly: what the failure left at its end is for recovery to judge.
    assert_eq!(listed_logs(&fs, path).iter().map(|l| l.closed_size).collect::<Vec<_>>(), [None]);
    let (db, t) = open_with_table(path, mem_options(&fs));
    put(&t, "d", "v");
    db.close().unwrap();
    assert!(listed_logs(&fs, path).iter().all(|l| l.closed_size.is_some()), "a clean close records it");
    let (_db, t) = open_with_table(path, mem_options(&fs));
    let keys: Vec<String> = scan_all(&t).into_iter().map(|c| c.0).collect();
    assert_eq!(keys, ["a", "d"]);
}

#[test]
fn orphaned_files_of_an_interrupted_flush_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, t) = open_with_table(dir.path(), Options::default());
        put(&t, "a", "v");
    }
    std::fs::write(dir.path().join("999999.sst"), b"half-written table").unwrap();
    std::fs::write(dir.path().join("MANIFEST.tmp"), b"half-written manifest").unwrap();
    let (db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")]);
    let removed = db.stats().unwrap().recovery.removed_files;
    assert!(
        removed.contains(&"999999.sst".to_string()) && removed.contains(&"MANIFEST.tmp".to_string()),
        "{removed:?}"
    );
    assert!(!dir.path().join("999999.sst").exists());
}

#[test]
fn closed_databases_refuse_writes() {
    let (_d, db) = temp_db();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    db.close().unwrap();
    assert!(matches!(t.mutate_row("a", [Mutation::set_cell("cf1", "q", 1000, "v")]), Err(Error::Closed)));
    assert!(matches!(db.flush(), Err(Error::Closed)));
}

/// The child side of `a_killed_process_loses_no_acknowledged_write`: writes
/// `rows` row mutations (crossing several flushes) and aborts, so no
/// destructor runs, a flush may be half done and the log is left untrimmed.
fn crash_child(dir: &str, rows: usize) -> ! {
    let opts = Options::default().memtable_size(32 << 10);
    let (_db, t) = open_with_table(std::path::Path::new(dir), opts);
    for i in 0..rows {
        t.mutate_row(format!("row{i:05}"), [Mutation::set_cell("cf1", "q", 1000, format!("v{i}"))]).unwrap();
    }
    std::process::abort();
}

#[test]
fn a_killed_process_loses_no_acknowledged_write() {
    const ROWS: usize = 3000;
    if let Ok(dir) = std::env::var("CELLARDB_CRASH_CHILD") {
        crash_child(&dir, ROWS);
    }
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_killed_process_loses_no_acknowledged_write", "--test-threads", "1"])
            .env("CELLARDB_CRASH_CHILD", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child aborts");
        let (db, t) = open_with_table(dir.path(), Options::default());
        let cells = scan_all(&t);
        assert_eq!(cells.len(), ROWS, "round {round}: every acknowledged write is back");
        assert!(cells.iter().enumerate().all(|(i, c)| c.0 == format!("row{i:05}") && c.4 == format!("v{i}")));
        assert!(db.stats().unwrap().recovery.torn_tails.is_empty(), "a killed process tears nothing");
    }
}

#[test]
fn a_failed_log_sync_at_a_memtable_switch_refuses_later_writes() {
    let fs = MemFs::new();
    let (db, t) = open_with_table(std::path::Path::new("/db"), mem_options(&fs));
    put(&t, "a", "v");
    fs.fail_writes_to(Some(".log"));
    assert!(matches!(db.flush(), Err(Error::Io { .. })));
    fs.fail_writes_to(None);
    let refused = t.mutate_row("b", [Mutation::set_cell("cf1", "q", 1000, "v")]);
    assert_poisoned_by_io(&refused);
}

/// A database at `path` on `fs` holding row `a`, poisoned by a flush whose
/// SSTable write failed.
fn poisoned_by_a_failed_flush(path: &std::path::Path, fs: &MemFs) -> (Db, cellardb::Table) {
    let (db, t) = open_with_table(path, mem_options(fs));
    put(&t, "a", "v");
    fs.fail_writes_to(Some(".sst"));
    assert_poisoned_by_io(&db.flush());
    fs.fail_writes_to(None);
    (db, t)
}

#[test]
fn writes_are_refused_after_a_flush_fails_until_reopen() {
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = poisoned_by_a_failed_flush(path, &fs);
    let refused = t.mutate_row("b", [Mutation::set_cell("cf1", "q", 1000, "v")]);
    assert_poisoned_by_io(&refused);
    assert_poisoned_by_io(&db.flush());
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")], "reads go on");
    drop(t);
    drop(db);
    let (_db, t) = open_with_table(path, mem_options(&fs));
    put(&t, "c", "v");
    let keys: Vec<String> = scan_all(&t).into_iter().map(|c| c.0).collect();
    assert_eq!(keys, ["a", "c"]);
}

#[test]
fn the_cut_of_a_torn_tail_survives_an_open_that_fails_afterwards() {
    let live = MemFs::new();
    let path = std::path::Path::new("/db");
    // Power fails with the log open and its two records synced.
    let (_db, t) = open_with_table(path, mem_options(&live).durability(Durability::Sync));
    put(&t, "a", "v");
    put(&t, "b", "v");
    let fs = live.crash_copy();
    let log = fs_logs(&fs, path).pop().unwrap();
    let len = {
        use cellardb::fs::Fs;
        records_end(&fs.read(&log).unwrap())
    };
    fs.corrupt_byte(&log, len - 1).unwrap();
    // The open replays the log, cuts its tail, then fails writing its table.
    fs.fail_writes_to(Some(".sst"));
    assert!(Options::default().file_system(std::sync::Arc::new(fs.clone())).open(path).is_err());
    fs.fail_writes_to(None);
    {
        use cellardb::fs::Fs;
        let cut = fs.read(&log).unwrap();
        assert_eq!(cut.len() % cellardb::fs::LOG_SIZE_UNIT, 0, "cut by zeroing: the log keeps its size");
        assert!(records_end(&cut) < len, "the damaged record is zeros");
    }
    // A new, empty log may now follow the cut one: the cut one opens clean.
    let (db, t) = open_with_table(path, mem_options(&fs));
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")]);
    assert!(db.stats().unwrap().recovery.torn_tails.is_empty(), "the tail was cut, and reported, once");
}

/// `result` is the refusal of a poisoned database, which keeps as its
/// source the injected I/O failure that poisoned it.
fn assert_poisoned_by_io(result: &cellardb::Result<()>) {
    let Err(Error::Poisoned { source }) = result else { panic!("expected a refusal, got {result:?}") };
    assert!(matches!(**source, Error::Io { .. }), "the first failure is kept: {source:?}");
    assert!(source.to_string().contains("injected"), "{source}");
    let e = result.as_ref().unwrap_err();
    assert!(std::error::Error::source(e).is_some(), "the chain reaches the first failure");
}

/// The live logs the manifest in `dir` lists.
fn listed_logs(fs: &MemFs, dir: &std::path::Path) -> Vec<cellardb::inspect::LogInfo> {
    use cellardb::fs::Fs;
    let path = dir.join("MANIFEST");
    cellardb::inspect::read_manifest(&path, &fs.read(&path).unwrap()).unwrap().logs
}

fn fs_logs(fs: &MemFs, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    use cellardb::fs::Fs;
    let mut logs: Vec<_> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "log"))
        .map(|n| dir.join(n))
        .collect();
    logs.sort();
    logs
}

#[test]
fn close_releases_the_directory_while_handles_live_and_refuses_calls_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    put(&t, "a", "v");
    put(&t, "b", "v");
    let mut under_way = t.read_rows(cellardb::RowSet::all(), &cellardb::Filter::pass_all());
    assert!(under_way.next().is_some());
    db.close().unwrap();
    // The table handle and the read still live; the directory is free.
    let again = Db::open(dir.path()).unwrap();
    assert_eq!(again.table("t").unwrap().read_rows(cellardb::RowSet::all(), &cellardb::Filter::pass_all()).count(), 2);
    let closed = |r: cellardb::Result<()>| assert!(matches!(r, Err(Error::Closed)), "{r:?}");
    closed(t.mutate_row("c", [Mutation::set_cell("cf1", "q", 1000, "v")]));
    closed(t.read_row("a", &cellardb::Filter::pass_all()).map(drop));
    closed(db.table("t").map(drop));
    closed(db.list_tables().map(drop));
    closed(db.stats().map(drop));
    assert!(under_way.next().unwrap().is_ok(), "a read under way finishes from its snapshot");
    assert!(under_way.next().is_none());
    drop((t, db));
    again.close().unwrap();
}

#[test]
fn a_live_log_deleted_or_emptied_after_a_clean_close_is_corruption() {
    for damage in ["deleted", "emptied"] {
        let dir = tempfile::tempdir().unwrap();
        {
            let (db, t) = open_with_table(dir.path(), Options::default());
            put(&t, "r1", "v");
            db.close().unwrap();
        }
        let log = log_files(dir.path()).pop().unwrap();
        if damage == "deleted" {
            std::fs::remove_file(&log).unwrap();
        } else {
            std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(0).unwrap();
        }
        for mode in [RecoveryMode::TolerateCorruptTail, RecoveryMode::AbsoluteConsistency] {
            let opened = Options::default().recovery_mode(mode).open(dir.path());
            let Err(Error::Corruption { file, offset, .. }) = &opened else {
                panic!("{damage} log, {mode:?}: expected corruption, got {:?}", opened.map(|_| ()))
            };
            assert_eq!((file, *offset), (&log, 0), "{damage} log, {mode:?}");
        }
    }
}

#[test]
fn a_zeroed_page_inside_a_cleanly_closed_log_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, t) = open_with_table(dir.path(), Options::default());
        for i in 0..400 {
            put(&t, &format!("k{i:03}"), "some value");
        }
        db.close().unwrap();
    }
    let log = log_files(dir.path()).pop().unwrap();
    let original = std::fs::read(&log).unwrap();
    assert!(original.len() > 3 * 4096, "the log spans pages: {}", original.len());
    let mut data = original.clone();
    data[4096..8192].fill(0);
    std::fs::write(&log, &data).unwrap();
    let opened = Options::default().open(dir.path());
    let Err(Error::Corruption { file, offset, .. }) = &opened else {
        panic!("expected corruption, got {:?}", opened.map(|_| ()))
    };
    assert_eq!(file, &log);
    assert!((4096 - 100..8192).contains(offset), "the damaged record is named: {offset}");
    // The zeroed page at the very end of a closed log is damage too.
    let mut data = original;
    let len = data.len();
    data[len - 4096..].fill(0);
    std::fs::write(&log, &data).unwrap();
    assert!(matches!(Options::default().open(dir.path()), Err(Error::Corruption { .. })));
}

#[test]
fn a_closed_log_cut_short_or_with_bytes_after_its_end_is_corruption() {
    for damage in ["cut", "appended"] {
        let dir = tempfile::tempdir().unwrap();
        {
            let (db, t) = open_with_table(dir.path(), Options::default());
            put(&t, "r1", "v");
            put(&t, "r2", "v");
            db.close().unwrap();
        }
        let log = log_files(dir.path()).pop().unwrap();
        let len = std::fs::metadata(&log).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        let at = if damage == "cut" {
            file.set_len(len - 3).unwrap();
            len - 3
        } else {
            file.set_len(len + 10).unwrap();
            file.write_all_at(b"x", len + 4).unwrap();
            len + 4
        };
        let opened = Options::default().open(dir.path());
        let Err(Error::Corruption { file, offset, .. }) = &opened else {
            panic!("{damage}: expected corruption, got {:?}", opened.map(|_| ()))
        };
        assert_eq!((file, *offset), (&log, at), "{damage}");
    }
    // Zeros after the end are the preallocated rest a crash between the
    // close and the trim leaves: a clean end.
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, t) = open_with_table(dir.path(), Options::default());
        put(&t, "r1", "v");
        db.close().unwrap();
    }
    let log = log_files(dir.path()).pop().unwrap();
    let len = std::fs::metadata(&log).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(len + 4096).unwrap();
    let (_db, t) = open_with_table(dir.path(), Options::default());
    assert_eq!(scan_all(&t), vec![flat("r1", "cf1", "q", 1000, "v")]);
}

#[test]
fn a_log_the_manifest_never_listed_is_removed_not_replayed() {
    // A memtable switch whose new log's header write failed leaves a log
    // with half a header that the manifest never listed: it holds no
    // acknowledged write, and must not stop the next open.
    use cellardb::fs::{Fault, Fs, FsOp};
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = open_with_table(path, mem_options(&fs).durability(Durability::Sync));
    put(&t, "a", "kept");
    let writes = fs.operation_counts()[&FsOp::Write];
    fs.fail_operation(FsOp::Write, writes, Fault::ShortWrite); // the next log's header
    assert!(db.flush().is_err(), "the switch to a new log fails");
    let half_header = fs_logs(&fs, path).last().cloned().unwrap();
    assert!(!listed_logs(&fs, path).iter().any(|l| path.join(format!("{:06}.log", l.number)) == half_header));
    drop(t);
    drop(db);
    fs.sync_dir(path).unwrap(); // as any later sync of the directory would
    for fs in [fs.clone(), fs.crash_copy()] {
        let (db, t) = open_with_table(path, mem_options(&fs));
        assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "kept")]);
        let name = half_header.file_name().unwrap().to_string_lossy().into_owned();
        assert!(db.stats().unwrap().recovery.removed_files.contains(&name), "the report names the removed log");
        assert!(!fs_logs(&fs, path).contains(&half_header));
    }
}

#[test]
fn under_buffered_power_loss_keeps_a_prefix_across_range_drops_and_schema_changes() {
    // A range drop or schema change is durable in the manifest at once: the
    // writes acknowledged before it must be too, or power loss keeps the
    // change and loses what came first.
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = open_with_table(path, mem_options(&fs).durability(Durability::Buffered));
    put(&t, "a", "before the drop");
    t.drop_row_range(cellardb::RowRange::prefix("z")).unwrap();
    let after_drop = fs.crash_copy();
    put(&t, "b", "before the schema change");
    db.set_gc_rule("t", "cf2", GcRule::max_versions(1)).unwrap();
    let after_schema_change = fs.crash_copy();
    drop(t);
    drop(db);
    let (_db, t) = open_with_table(path, mem_options(&after_drop));
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "before the drop")]);
    let (_db, t) = open_with_table(path, mem_options(&after_schema_change));
    assert_eq!(scan_all(&t).len(), 2, "the write before the schema change survives it");
}

#[test]
fn a_compaction_whose_manifest_is_in_doubt_deletes_no_file_either_manifest_needs() {
    // Found by the fault sweep: when the directory sync after the
    // manifest's rename failed, the compaction deleted its outputs, which
    // the renamed manifest lists; a crash then left a manifest naming
    // deleted tables. In doubt, both sets of files must stay.
    use cellardb::fs::{Fault, FsOp};
    let path = std::path::Path::new("/db");
    let base = MemFs::new();
    let (db, t) = open_with_table(path, mem_options(&base));
    for round in 0..2 {
        for i in 0..20 {
            put(&t, &format!("r{round}-{i:02}"), "v");
        }
        db.flush().unwrap();
    }
    let expected = scan_all(&t);
    drop(t);
    db.close().unwrap();
    // A dry run counts the directory syncs up to the compaction's last,
    // the one after its manifest's rename.
    let dry = base.process_crash_copy();
    let (db, _t) = open_with_table(path, mem_options(&dry));
    db.compact_table("t").unwrap();
    let last_sync_dir = dry.operation_counts()[&FsOp::SyncDir] - 1;
    drop(db);
    let fs = base.process_crash_copy();
    let (db, t) = open_with_table(path, mem_options(&fs));
    fs.fail_operation(FsOp::SyncDir, last_sync_dir, Fault::Error);
    assert!(db.compact_table("t").is_err(), "the compaction reports the failure");
    assert!(fs.fault_struck().is_some());
    assert!(matches!(t.mutate_row("x", [Mutation::set_cell("cf1", "q", 1000, "v")]), Err(Error::Poisoned { .. })));
    let killed = fs.process_crash_copy(); // the renamed manifest survives
    let (_db, t) = open_with_table(path, mem_options(&killed));
    assert_eq!(scan_all(&t), expected, "whichever manifest survives, its files are there");
}

#[test]
fn after_a_background_failure_schema_changes_and_drops_are_refused_and_close_reports_it() {
    let fs = MemFs::new();
    let path = std::path::Path::new("/db");
    let (db, t) = poisoned_by_a_failed_flush(path, &fs);
    assert_poisoned_by_io(&db.create_family("t", "g", GcRule::none()));
    assert_poisoned_by_io(&t.drop_row_range(cellardb::RowRange::prefix("a")));
    assert_poisoned_by_io(&db.close());
    let (_db, t) = open_with_table(path, mem_options(&fs));
    assert_eq!(scan_all(&t), vec![flat("a", "cf1", "q", 1000, "v")], "nothing changed, nothing lost");
}
