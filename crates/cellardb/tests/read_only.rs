//! Opening a database read-only beside a live writer: what the view holds,
//! what it refuses, and that the directory is left exactly as it was.

mod common;

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use cellardb::fs::{FileLock, Fs, LogFile, OsFs, WritableFile};
use cellardb::{Db, Error, Filter, GcRule, Mutation, Options, RowSet};
use common::*;

/// Every file of `dir` with its bytes.
fn directory(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn a_read_only_view_holds_flushed_and_unflushed_writes_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open_with_table(dir.path(), small_options());
    for i in 0..300 {
        t.mutate_row(format!("row{i:04}"), [Mutation::set_cell("cf1", "q", 1000, format!("v{i}"))]).unwrap();
    }
    db.flush().unwrap();
    t.mutate_row("unflushed", [Mutation::set_cell("cf2", "q", 2000, "in the log only")]).unwrap();
    assert!(!db.is_read_only());
    // Closed, so that no background compaction changes the directory while
    // it is compared; a read-only open beside a live writer is tested below.
    db.close().unwrap();
    drop((db, t));
    let before = directory(dir.path());

    let ro = Options::default().open_read_only(dir.path()).unwrap();
    assert!(ro.is_read_only());
    assert_eq!(ro.list_tables().unwrap(), ["t"]);
    let rt = ro.table("t").unwrap();
    let rows = rt.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
    assert_eq!(rows.len(), 301);
    assert_eq!(rows[7].latest("cf1", "q").unwrap().value, "v7");
    assert_eq!(rt.read_row("unflushed", &Filter::pass_all()).unwrap().unwrap().cell_count(), 1);

    let refused = |r: cellardb::Result<()>| assert!(matches!(r, Err(Error::ReadOnly { .. })), "{r:?}");
    refused(rt.mutate_row("x", [Mutation::set_cell("cf1", "q", 1000, "v")]));
    refused(ro.create_table("u", [("f", GcRule::none())]).map(drop));
    refused(ro.set_gc_rule("t", "cf1", GcRule::max_versions(1)));
    refused(rt.drop_all_rows());
    refused(ro.flush());
    refused(ro.compact_table("t"));
    ro.close().unwrap();
    drop(ro);
    assert_eq!(directory(dir.path()), before, "a read-only open wrote to the directory");
}

#[test]
fn a_read_only_open_of_a_directory_without_a_database_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    for path in [dir.path().join("missing"), dir.path().to_path_buf()] {
        match Db::open_read_only(&path) {
            Err(e @ Error::NoDatabase { .. }) => {
                assert_eq!(e.to_string(), format!("no cellardb database in {} (no MANIFEST)", path.display()));
            }
            Err(e) => panic!("expected not found, got {e}"),
            Ok(_) => panic!("opened {}", path.display()),
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was created");
}

/// A writer adds rows `0, 1, 2, ...` in order, flushing and compacting as
/// it goes; every read-only view opened meanwhile must hold exactly a
/// prefix of them, each row whole.
#[test]
fn views_opened_beside_a_flushing_compacting_writer_are_prefixes_of_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().memtable_size(8 << 10).block_size(1 << 10);
    let (db, t) = open_with_table(dir.path(), opts);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let value = format!("{i:0>40}");
                let ms =
                    [Mutation::set_cell("cf1", "a", 1000, value.clone()), Mutation::set_cell("cf2", "b", 1000, value)];
                t.mutate_row(format!("{i:08}"), ms).unwrap();
                i += 1;
                if i.is_multiple_of(500) {
                    db.compact_table("t").unwrap();
                }
            }
            i
        })
    };
    let (mut views, mut gave_up) = (0, 0);
    let mut largest = 0;
    while views < 30 {
        let ro = match Db::open_read_only(dir.path()) {
            Ok(ro) => ro,
            // A writer that flushes every 8 KiB can change the manifest,
            // or delete a file it lists, more often than a loaded machine
            // gathers a view, and the open then gives up (an I/O error
            // naming the manifest, whichever it met last): no view,
            // nothing to check; try again, but not forever.
            Err(cellardb::Error::Io { path, .. }) if path.ends_with("MANIFEST") && gave_up < 100 => {
                gave_up += 1;
                continue;
            }
            Err(e) => panic!("read-only open: {e}"),
        };
        let Ok(rt) = ro.table("t") else { continue };
        let rows = rt.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().unwrap();
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.key, format!("{i:08}"), "view {views} is not a prefix");
            assert_eq!(row.cell_count(), 2, "row {i} is not whole in view {views}");
        }
        largest = largest.max(rows.len());
        views += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(largest > 0 && largest <= written as usize, "views saw {largest} of {written} rows");
}

/// The local file system, on which every table is gone by the time it is
/// mapped: what a read-only open meets when a writer compacts during each
/// of its attempts.
#[derive(Debug)]
struct TablesVanish(OsFs);

impl Fs for TablesVanish {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.0.create(path)
    }
    fn create_log(&self, path: &Path, capacity: usize) -> io::Result<Box<dyn LogFile>> {
        self.0.create_log(path, capacity)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.read(path)
    }
    fn map(&self, path: &Path) -> io::Result<Bytes> {
        if path.extension().is_some_and(|e| e == "sst") {
            return Err(io::Error::new(io::ErrorKind::NotFound, "deleted by a compaction"));
        }
        self.0.map(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove(path)
    }
    fn zero_range(&self, path: &Path, range: Range<u64>) -> io::Result<()> {
        self.0.zero_range(path, range)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.0.file_size(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<FileLock>> {
        self.0.try_lock(path)
    }
}

/// A read-only open that finds a table gone at every attempt gives up with
/// an error that names the manifest and says a writer kept changing the
/// database, not one that blames the table it last missed.
#[test]
fn a_read_only_open_that_races_a_writer_every_time_says_so() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, t) = open_with_table(dir.path(), small_options());
        t.mutate_row("r", [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
        db.flush().unwrap();
    }
    let opts = Options::default().file_system(Arc::new(TablesVanish(OsFs)));
    let Err(e) = opts.open_read_only(dir.path()) else { panic!("opened a view without its tables") };
    let Error::Io { path, .. } = &e else { panic!("expected an I/O error naming the manifest, got {e}") };
    assert!(path.ends_with("MANIFEST"), "{e}");
    let text = e.to_string();
    assert!(text.contains("a writer changed the database 20 times"), "{text}");
    assert!(text.contains(".sst"), "the last file missed is named too: {text}");
}
