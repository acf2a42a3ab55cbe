//! The lab's RocksDB engine: every pattern's query plans read with the
//! standard cell key return what the generator says, and read no more
//! cells than cellardb returns for the same plan.
#![cfg(feature = "rocksdb")]

mod common;

use cellardb::{Durability, GcRule, Options};
use cellardb_lab as lab;
use cellardb_lab::baseline::RocksBaseline;
use cellardb_lab::workload::{SchemaPattern, Workload};
use common::{WORKLOAD, queries_and_forms};

/// Cells cellardb returns for each of `queries()` on `pattern`.
fn cellardb_cells(pattern: SchemaPattern) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().open(dir.path()).unwrap();
    let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).unwrap();
    for e in WORKLOAD.events() {
        for r in t.mutate_rows(pattern.mutations(&e)) {
            r.unwrap();
        }
    }
    queries_and_forms().iter().map(|&(q, form)| q.run(pattern, &WORKLOAD, form, &t).unwrap().cells_read).collect()
}

#[test]
fn every_patterns_queries_on_rocksdb_return_what_the_generator_says() {
    for pattern in SchemaPattern::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = RocksBaseline::open(dir.path(), Durability::Buffered, 8 << 20).unwrap();
        for e in WORKLOAD.events() {
            db.write_rows(&pattern.mutations(&e)).unwrap();
        }
        let cellardb = cellardb_cells(pattern);
        // Read from the memtable, then from SSTables after a full compaction.
        for stage in ["memtable", "compacted"] {
            if stage == "compacted" {
                db.flush().unwrap();
                db.compact();
            }
            for ((q, form), cells) in queries_and_forms().iter().zip(&cellardb) {
                let what = format!("{} {stage} {form:?} {q:?}", pattern.name());
                let answer = lab::baseline::query(&db, pattern, &WORKLOAD, *form, q).unwrap();
                assert_eq!(answer.measurements, q.expected(&WORKLOAD), "{what}");
                // Same plan, same cells: newest-per-column and last-row
                // reads stop as early on RocksDB as on cellardb.
                assert_eq!(answer.cells_read, *cells, "{what}");
            }
        }
    }
}

#[test]
fn the_lab_runs_rocksdb_and_removes_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let config = lab::LabConfig {
        workload: Workload::new(2, 1),
        options: Options::default(),
        dir: dir.path().to_path_buf(),
        samples: 3,
        fleet_samples: None,
        seed: 1,
        rounds: 1,
    };
    for pattern in SchemaPattern::ALL {
        let report = lab::baseline::run_pattern(&config, pattern, &mut |_| {}).unwrap();
        assert_eq!((report.engine, report.events, report.measurements), ("rocksdb", 2880, 4 * 2880));
        assert!(report.bytes_after_compaction > 0 && report.write_amplification > 0.1, "{report:?}");
        assert_eq!(report.queries.len(), lab::report::measured().len());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the databases are removed");
}
