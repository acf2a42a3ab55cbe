//! Concurrent writers and readers: each row mutation is seen whole or not at
//! all, while memtables switch and flush underneath.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cellardb::{Durability, Filter, GcRule, Mutation, Options, RowSet};

#[test]
fn reads_never_see_half_a_row_mutation() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().memtable_size(8 << 10).block_size(512).open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::max_versions(1)), ("cf2", GcRule::max_versions(1))]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..3000u64 {
                    let v = format!("{w}-{i}");
                    let mut muts = vec![
                        Mutation::set_cell("cf1", "a", 1000, &v),
                        Mutation::set_cell("cf1", "b", 1000, &v),
                        Mutation::set_cell("cf2", "c", 1000, &v),
                    ];
                    if i % 7 == 0 {
                        muts.insert(0, Mutation::delete_from_row());
                    }
                    t.mutate_row(format!("row{}", i % 16), muts).unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, stop) = (t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rows_seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    for row in t.read_rows(RowSet::all(), &Filter::pass_all()) {
                        let row = row.unwrap();
                        let values: Vec<_> = row.cells().map(|(_, _, c)| c.value.clone()).collect();
                        assert_eq!(values.len(), 3, "row {:?} is whole", row.key);
                        assert!(
                            values.iter().all(|v| *v == values[0]),
                            "row {:?} mixes mutations: {values:?}",
                            row.key
                        );
                        rows_seen += 1;
                    }
                }
                rows_seen
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(t.stats().unwrap().families.iter().all(|f| f.sst_files > 0), "flushes happened during the test");
}

#[test]
fn concurrent_sync_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().durability(Durability::Sync).memtable_size(64 << 10).open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..250 {
                    t.mutate_row(format!("w{w}-{i:03}"), [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    drop(t);
    drop(db);
    let db = Options::default().open(dir.path()).unwrap();
    let rows = db.table("t").unwrap().read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
    assert_eq!(rows.len(), 1000);
}

/// Many writers hammering group commit: every write completes (a lost
/// wake-up in the leader hand-off would leave a writer asleep: the watchdog
/// turns that into a failure instead of a hang) and every write is there.
#[test]
fn group_commit_never_strands_a_writer() {
    const THREADS: usize = 8;
    const WRITES: usize = 1500;
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().memtable_size(64 << 10).open(dir.path()).unwrap();
    let t = db.create_table("t", [("cf1", GcRule::none())]).unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for w in 0..THREADS {
        let (t, done_tx) = (t.clone(), done_tx.clone());
        std::thread::spawn(move || {
            for i in 0..WRITES {
                t.mutate_row(format!("w{w}-{i:04}"), [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
            }
            done_tx.send(w).unwrap();
        });
    }
    for _ in 0..THREADS {
        let finished = done_rx.recv_timeout(std::time::Duration::from_secs(120));
        assert!(finished.is_ok(), "a writer is stuck in group commit");
    }
    let rows = t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
    assert_eq!(rows.len(), THREADS * WRITES);
}
