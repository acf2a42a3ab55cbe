//! `inspect::verify_database`: a whole database checked without opening
//! it, every fault named with its file and offset, every file checked.

mod common;

use cellardb::inspect::verify_database;
use cellardb::{Error, Mutation};
use common::*;

/// A closed database with flushed, compacted and unflushed rows: SSTables
/// in more than one level, and a log that holds records.
fn database() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(dir.path(), small_options());
    for i in 0..3000 {
        t.mutate_row(format!("k{i:05}"), [Mutation::set_cell("cf1", "q", 1000, "a value")]).unwrap();
    }
    db.compact_table("t").unwrap();
    for i in 0..50 {
        t.mutate_row(format!("other{i}"), [Mutation::set_cell("cf2", "q", 1000, "v")]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..50 {
        t.mutate_row(format!("late{i}"), [Mutation::set_cell("cf2", "q", 1000, "v")]).unwrap();
    }
    db.close().unwrap();
    dir
}

#[test]
fn a_healthy_database_has_no_fault_and_every_file_is_read() {
    let dir = database();
    let report = verify_database(dir.path(), true).unwrap();
    assert!(report.faults.is_empty(), "{:?}", report.faults);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    assert_eq!(report.ssts, files_ending(dir.path(), ".sst").len());
    assert!(report.blocks > 0 && report.entries >= 3000, "{report:?}");
    assert_eq!((report.logs, report.log_records), (1, 50));
}

#[test]
fn damage_is_named_with_its_file_and_every_other_file_is_still_checked() {
    let dir = database();
    let ssts = files_ending(dir.path(), ".sst");
    assert!(ssts.len() >= 2, "{ssts:?}");
    // A flipped byte in the first SSTable's first block, the second one
    // gone, the log deleted; an orphan SSTable and a stray file beside.
    let mut data = std::fs::read(&ssts[0]).unwrap();
    data[20] ^= 0x40;
    std::fs::write(&ssts[0], &data).unwrap();
    std::fs::remove_file(&ssts[1]).unwrap();
    let log = files_ending(dir.path(), ".log").pop().unwrap();
    std::fs::remove_file(&log).unwrap();
    std::fs::write(dir.path().join("999999.sst"), b"orphan").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();

    let report = verify_database(dir.path(), true).unwrap();
    let fault_files: Vec<&std::path::Path> = report
        .faults
        .iter()
        .map(|f| match f {
            Error::Corruption { file, .. } | Error::Io { path: file, .. } => file.as_path(),
            other => panic!("unexpected fault {other:?}"),
        })
        .collect();
    assert!(fault_files.contains(&ssts[0].as_path()), "{:?}", report.faults);
    assert!(fault_files.contains(&ssts[1].as_path()), "{:?}", report.faults);
    assert!(fault_files.contains(&log.as_path()), "{:?}", report.faults);
    assert_eq!(report.ssts, ssts.len() - 1, "the damaged file opened and was read; the gone one was not");
    assert_eq!(report.notes.len(), 2, "{:?}", report.notes);
    // Nothing was changed: the stray files are still there.
    assert!(dir.path().join("999999.sst").exists() && dir.path().join("notes.txt").exists());
}

#[test]
fn a_directory_without_a_manifest_or_with_a_damaged_one_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(verify_database(empty.path(), true), Err(Error::NoDatabase { .. })));
    let dir = database();
    let manifest = dir.path().join("MANIFEST");
    let mut data = std::fs::read(&manifest).unwrap();
    let last = data.len() - 1;
    data[last] ^= 1;
    std::fs::write(&manifest, &data).unwrap();
    assert!(matches!(verify_database(dir.path(), true), Err(Error::Corruption { .. })));
}

#[test]
fn rows_overlapping_across_the_files_of_a_level_are_a_fault_unless_level_1_holds_time_windows() {
    // The time-window strategy keeps one run of files per window in level
    // 1: cells of two windows in the same rows make two files whose rows
    // overlap, which the leveled strategy never leaves.
    let dir = tempfile::tempdir().unwrap();
    let window = 1_000_000;
    let opts = small_options().compaction_strategy(cellardb::CompactionStrategy::TimeWindow { window_micros: window });
    let (db, t) = open_with_table(dir.path(), opts);
    for ts in [0, 5 * window] {
        for i in 0..200 {
            t.mutate_row(format!("k{i:03}"), [Mutation::set_cell("cf1", "q", ts, "v")]).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_table("t").unwrap();
    db.close().unwrap();
    let as_windows = verify_database(dir.path(), false).unwrap();
    assert!(as_windows.faults.is_empty(), "{:?}", as_windows.faults);
    let as_leveled = verify_database(dir.path(), true).unwrap();
    assert!(!as_leveled.faults.is_empty(), "two windows' files overlap in level 1");
    assert!(as_leveled.faults.iter().all(|f| f.to_string().contains("overlap")), "{:?}", as_leveled.faults);
}

/// `inspect::check_listed_log` answers for one log what recovery would:
/// the closed log as written passes; cut short, or with bytes after its
/// recorded end, it is refused with the offset recovery names.
#[test]
fn check_listed_log_says_what_recovery_would_of_one_log() {
    use cellardb::inspect::{MANIFEST_FILE_NAME, check_listed_log, log_file_name, read_manifest};
    let dir = database();
    let manifest = dir.path().join(MANIFEST_FILE_NAME);
    let state = read_manifest(&manifest, &std::fs::read(&manifest).unwrap()).unwrap();
    let listed = *state.logs.last().expect("a live log");
    let closed = usize::try_from(listed.closed_size.expect("a clean close records it")).unwrap();
    let path = dir.path().join(log_file_name(listed.number));
    let data = std::fs::read(&path).unwrap();
    check_listed_log(&path, &data, &listed).unwrap();

    let mut grown = data.clone();
    grown.resize(closed + 8, 0);
    grown[closed + 3] = 1;
    let Err(Error::Corruption { offset, .. }) = check_listed_log(&path, &grown, &listed) else {
        panic!("a byte after a closed log's end is refused")
    };
    assert_eq!(offset, closed as u64 + 3);

    let Err(Error::Corruption { offset, .. }) = check_listed_log(&path, &data[..closed - 1], &listed) else {
        panic!("a closed log cut short is refused")
    };
    assert_eq!(offset, closed as u64 - 1);
}
