//! `Db::checkpoint`: a consistent copy, openable on its own, taken while
//! a writer runs.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cellardb::{Error, Mutation, Options};
use common::*;

fn key(i: usize) -> String {
    format!("k{i:06}")
}

/// The rows of table `t` of the database at `dir`, as numbers.
fn row_numbers(dir: &std::path::Path) -> Vec<usize> {
    let (_db, t) = open_with_table(dir, small_options());
    keys(&t.read_rows(cellardb::RowSet::all(), &cellardb::Filter::pass_all()).collect_rows().unwrap())
        .iter()
        .map(|k| k[1..].parse().unwrap())
        .collect()
}

#[test]
fn a_checkpoint_taken_while_a_writer_runs_holds_a_prefix_of_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    // Small memtables: the writer switches logs and flushes while the
    // checkpoints are taken.
    let (db, t) = open_with_table(dir.path(), small_options());
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (t, acknowledged, stop) = (t.clone(), acknowledged.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                t.mutate_row(key(i), [Mutation::set_cell("cf1", "q", 1000, "value of some length")]).unwrap();
                i += 1;
                acknowledged.store(i, Ordering::Release);
            }
        })
    };
    let copies = tempfile::tempdir().unwrap();
    let mut taken = Vec::new();
    for round in 0..5 {
        while acknowledged.load(Ordering::Acquire) < (round + 1) * 3000 {
            std::thread::yield_now();
        }
        let before = acknowledged.load(Ordering::Acquire);
        let dest = copies.path().join(format!("copy{round}"));
        db.checkpoint(&dest).unwrap();
        taken.push((dest, before));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let total = acknowledged.load(Ordering::Acquire);
    for (dest, before) in &taken {
        let rows = row_numbers(dest);
        assert!(rows.len() >= *before, "{}: {} rows, {before} acknowledged before", dest.display(), rows.len());
        assert_eq!(rows, (0..rows.len()).collect::<Vec<_>>(), "{}: a prefix of the writes", dest.display());
    }
    // The database goes on, every write kept, and the copies are its own.
    assert_eq!(
        keys(&t.read_rows(cellardb::RowSet::all(), &cellardb::Filter::pass_all()).collect_rows().unwrap()).len(),
        total
    );
    drop(t);
    db.close().unwrap();
    assert_eq!(row_numbers(dir.path()).len(), total);
}

#[test]
fn a_checkpoint_is_independent_of_the_database_it_copies() {
    let dir = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    let dest = copy.path().join("copy");
    {
        let (db, t) = open_with_table(dir.path(), small_options());
        for i in 0..2000 {
            t.mutate_row(key(i), [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
        }
        db.flush().unwrap();
        t.mutate_row(key(2000), [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
        db.checkpoint(&dest).unwrap();
        // The original changes after the copy: its files are compacted away.
        t.mutate_row(key(0), [Mutation::DeleteFromRow]).unwrap();
        db.flush().unwrap();
        db.compact_table("t").unwrap();
    }
    assert_eq!(row_numbers(&dest), (0..=2000).collect::<Vec<_>>());
    // Written and compacted on its own, the copy leaves the original be.
    {
        let (db, t) = open_with_table(&dest, small_options());
        t.mutate_row(key(1), [Mutation::DeleteFromRow]).unwrap();
        db.flush().unwrap();
        db.compact_table("t").unwrap();
    }
    assert_eq!(row_numbers(dir.path()), (1..=2000).collect::<Vec<_>>());
    assert_eq!(row_numbers(&dest), [0].into_iter().chain(2..=2000).collect::<Vec<_>>());
}

#[test]
fn a_checkpoint_needs_an_empty_destination_and_a_writable_database() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(dir.path(), small_options());
    t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
    let busy = tempfile::tempdir().unwrap();
    std::fs::write(busy.path().join("something"), b"x").unwrap();
    let refused = db.checkpoint(busy.path());
    assert!(matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains("not empty")), "{refused:?}");
    assert_eq!(std::fs::read(busy.path().join("something")).unwrap(), b"x", "nothing written there");
    let empty = tempfile::tempdir().unwrap();
    db.checkpoint(empty.path()).unwrap();
    let (_copy, copied) = open_with_table(empty.path(), small_options());
    assert_eq!(scan_all(&copied), vec![flat("r", "cf1", "q", 1000, "v")]);
    drop(t);
    db.close().unwrap();
    let reader = Options::default().open_read_only(dir.path()).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(matches!(reader.checkpoint(elsewhere.path().join("c")), Err(Error::ReadOnly { .. })));
}
