//! The schema-pattern lab: every pattern's queries against the generator,
//! and the report's CSV at a tiny scale.

use std::collections::HashMap;

mod common;

use cellardb::{GcRule, Options};
use cellardb_lab::Form;
use cellardb_lab::workload::{METRICS, SchemaPattern, Workload};
use cellardb_lab::{self as lab, LabConfig, Query};
use common::{WORKLOAD, queries_and_forms};

#[test]
fn every_patterns_queries_return_exactly_what_the_generator_says() {
    for pattern in SchemaPattern::ALL {
        let dir = tempfile::tempdir().unwrap();
        // A small memtable: the data ends up in SSTables and the memtable both.
        let db = Options::default().memtable_size(1 << 20).open(dir.path()).unwrap();
        let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).unwrap();
        for e in WORKLOAD.events() {
            for r in t.mutate_rows(pattern.mutations(&e)) {
                r.unwrap();
            }
        }
        for (q, form) in queries_and_forms() {
            let answer = q.run(pattern, &WORKLOAD, form, &t).unwrap();
            let expected = q.expected(&WORKLOAD);
            assert_eq!(answer.measurements, expected, "{} {form:?} {q:?}", pattern.name());
            assert!(answer.cells_read > 0, "{} {form:?} {q:?}", pattern.name());
        }
        // The sizes the generator gives, so that `expected` is checked too.
        let count = |q: Query| q.expected(&WORKLOAD).len();
        assert_eq!(count(Query::BalloonWeek { balloon: 0, week: 0 }), 7 * 1440 * 4);
        assert_eq!(count(Query::BalloonWeek { balloon: 0, week: 1 }), 1440 * 4);
        assert_eq!(count(Query::MetricHour { balloon: 0, metric: 2, hour: 5 }), 60);
        assert_eq!(count(Query::Latest { balloon: 1 }), METRICS.len());
        assert_eq!(count(Query::FleetMinute { minute: 3 }), 2 * METRICS.len());
        assert_eq!(count(Query::FleetScan { minute: 3 }), 2 * METRICS.len());
    }
}

#[test]
fn queries_read_what_the_key_design_implies() {
    // The guide's claims in miniature: a metric-hour on bucket-new-cell
    // reads one hour of one column; on single-ts-serialized it must read
    // (and decode) every event of the hour.
    let cells = |pattern: SchemaPattern, q: Query, form: Form| {
        let dir = tempfile::tempdir().unwrap();
        let db = Options::default().open(dir.path()).unwrap();
        let t = db.create_table("balloons", [(pattern.family(), GcRule::none())]).unwrap();
        for e in Workload::new(2, 1).events() {
            for r in t.mutate_rows(pattern.mutations(&e)) {
                r.unwrap();
            }
        }
        q.run(pattern, &Workload::new(2, 1), form, &t).unwrap().cells_read
    };
    let hour = Query::MetricHour { balloon: 0, metric: 1, hour: 3 };
    assert_eq!(cells(SchemaPattern::BucketNewCell, hour, Form::Tuned), 60);
    assert_eq!(cells(SchemaPattern::SingleTsUnserialized, hour, Form::Tuned), 60);
    assert_eq!(cells(SchemaPattern::SingleTsSerialized, hour, Form::Tuned), 60);
    assert_eq!(cells(SchemaPattern::BucketSerialized, hour, Form::Tuned), 60);
    let latest = Query::Latest { balloon: 1 };
    assert_eq!(cells(SchemaPattern::BucketNewCell, latest, Form::Tuned), 4, "one cell per column");
    assert_eq!(cells(SchemaPattern::SingleTsUnserialized, latest, Form::Tuned), 4, "one row");
    assert_eq!(cells(SchemaPattern::BucketSerialized, latest, Form::Tuned), 60, "the newest hour's row");
    // Written first, `latest` is a reversed read of the balloon's prefix
    // with a limit of one row and the newest cell of each column.
    assert_eq!(cells(SchemaPattern::BucketNewCell, latest, Form::Natural), 4);
    assert_eq!(cells(SchemaPattern::BucketSerialized, latest, Form::Natural), 60, "a column per minute");
    let minute = Query::FleetMinute { minute: 70 };
    for pattern in SchemaPattern::ALL {
        // Each balloon's event at that minute: its cells, twice.
        let expect = 2 * pattern.cells_per_event();
        for form in [Form::Natural, Form::Tuned] {
            assert_eq!(cells(pattern, minute, form), expect, "{} {form:?}", pattern.name());
        }
    }
}

/// The CSV's lines as maps from column to field.
fn parse_csv(text: &str) -> Vec<HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_owned).collect();
    assert_eq!(header, lab::report::csv_columns());
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header.iter().cloned().zip(fields.iter().map(ToString::to_string)).collect()
        })
        .collect()
}

fn number(row: &HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} = {:?}", row[column]))
}

fn count(row: &HashMap<String, String>, column: &str) -> u64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} = {:?}: not a count", row[column]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 * a.abs().max(b.abs()) + 1e-3
}

#[test]
fn the_report_runs_at_a_tiny_scale_and_its_csv_is_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let config = LabConfig {
        workload: Workload::new(2, 1),
        options: Options::default(),
        dir: dir.path().to_path_buf(),
        samples: 3,
        fleet_samples: None,
        seed: 1,
        rounds: 2,
    };
    let mut stages = Vec::new();
    let reports =
        lab::run_rounds(&config, &SchemaPattern::ALL, &[lab::Engine::Cellardb], lab::Processes::This, &mut |s| {
            stages.push(s.stage.to_owned());
        })
        .unwrap();
    assert!(stages.iter().any(|s| s == "ingest") && stages.iter().any(|s| s == "fleet-scan"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the databases are removed");

    let rows = parse_csv(&lab::report::csv(&reports));
    assert_eq!(rows.len(), 2 * SchemaPattern::ALL.len(), "a line per round and pattern");
    let patterns = SchemaPattern::ALL.iter().chain(&SchemaPattern::ALL);
    for (i, (row, pattern)) in rows.iter().zip(patterns).enumerate() {
        assert_eq!((row["pattern"].as_str(), row["engine"].as_str()), (pattern.name(), "cellardb"));
        assert_eq!(count(row, "round"), (i / SchemaPattern::ALL.len()) as u64);
        let n = |c: &str| number(row, c);
        assert_eq!(count(row, "events"), 2880);
        assert_eq!(count(row, "cells"), 2880 * pattern.cells_per_event());
        assert_eq!(count(row, "measurements"), 4 * 2880);
        assert!(n("bytes_after_flush") > 0.0 && n("bytes_after_compaction") > 0.0);
        assert!(n("logical_bytes") > n("bytes_after_compaction"), "{row:?}");
        assert!(close(n("bytes_per_measurement"), n("bytes_after_compaction") / n("measurements")), "{row:?}");
        assert!(close(n("compression_ratio"), n("logical_bytes") / n("bytes_after_compaction")), "{row:?}");
        // cells/s is rounded to a whole number, and the seconds it is checked
        // against to the nanosecond: a rate from them may be off by up to
        // half a cell per second plus the seconds' rounding, relative.
        let (secs, rate) = (n("ingest_seconds"), n("cells") / n("ingest_seconds"));
        let tolerance = 0.5 + rate * (0.5e-9 / secs) + 1e-9 * rate;
        assert!((n("cells_per_sec") - rate).abs() <= tolerance, "{row:?}");
        // The log alone can be under 1: it writes a row key once per event,
        // logical bytes count it once per cell.
        assert!(n("write_amplification") > 0.1, "{row:?}");
        for (kind, form) in lab::report::measured() {
            let name = format!("{}_{}", kind.name().replace('-', "_"), form.name());
            let (p50, p99) = (n(&format!("{name}_p50_us")), n(&format!("{name}_p99_us")));
            assert!(p50 > 0.0 && p99 >= p50, "{name}: {row:?}");
            assert!(n(&format!("{name}_cells_read")) >= 1.0, "{name}: {row:?}");
        }
    }
    let page = lab::report::markdown(&reports, &config, &lab::machine::describe(dir.path()));
    assert!(SchemaPattern::ALL.iter().all(|p| page.contains(p.name())));
    for (name, svg) in lab::report::charts(&reports) {
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{name}");
    }
}
