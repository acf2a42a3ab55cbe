//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod model;

use std::path::Path;
use std::sync::Arc;

use cellardb::fs::MemFs;
use cellardb::{Db, Filter, GcRule, Options, Row, RowSet, Table};

/// A database in a fresh temporary directory (kept alive by the returned guard).
pub fn temp_db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    (dir, db)
}

/// Options with a small memtable so tests cross flushes often.
pub fn small_options() -> Options {
    Options::default().memtable_size(16 << 10).block_size(1 << 10)
}

/// An in-memory database directory whose power can be cut.
pub fn mem_options(fs: &MemFs) -> Options {
    Options::default().file_system(Arc::new(fs.clone()))
}

/// Opens `path` with `opts`, creating table `t` with families `cf1`, `cf2` if missing.
pub fn open_with_table(path: &Path, opts: Options) -> (Db, Table) {
    let db = opts.open(path).expect("open");
    let t = match db.table("t") {
        Ok(t) => t,
        Err(_) => db.create_table("t", [("cf1", GcRule::none()), ("cf2", GcRule::none())]).expect("create"),
    };
    (db, t)
}

/// A cell as a flat tuple: (row, family, qualifier, timestamp, value).
pub type Flat = (String, String, String, i64, String);

/// Every cell of `rows` as flat tuples, in the order returned.
pub fn flatten(rows: &[Row]) -> Vec<Flat> {
    rows.iter()
        .flat_map(|r| {
            let key = String::from_utf8_lossy(&r.key).into_owned();
            r.cells()
                .map(|(f, q, c)| {
                    (
                        key.clone(),
                        f.to_owned(),
                        String::from_utf8_lossy(q).into_owned(),
                        c.timestamp.micros(),
                        String::from_utf8_lossy(&c.value).into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every cell of the table.
pub fn scan_all(t: &Table) -> Vec<Flat> {
    flatten(&t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows().expect("scan"))
}

/// The keys of `rows`, as strings.
pub fn keys(rows: &[Row]) -> Vec<String> {
    rows.iter().map(|r| String::from_utf8_lossy(&r.key).into_owned()).collect()
}

/// A flat tuple from string parts.
pub fn flat(row: &str, family: &str, q: &str, ts: i64, v: &str) -> Flat {
    (row.into(), family.into(), q.into(), ts, v.into())
}

/// SplitMix64 of `seed` and `n`: draw `n` of a seeded run, the same in
/// every process that replays it.
pub fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seeded source of draws (SplitMix64), so a seed means the same run
/// everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw below `n` (0 if `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `len` (0 if `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The files of `dir` whose names end with `suffix` (`""`: all), sorted.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}
