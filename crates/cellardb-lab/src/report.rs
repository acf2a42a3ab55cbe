//! The lab's report: a markdown page, a CSV file and SVG charts, from the
//! figures of each pattern (and engine).

use std::fmt::Write as _;

use crate::machine::Machine;
use crate::queries::QueryKind;
use crate::run::{LabConfig, PatternReport};
use crate::svg::{Series, grouped_bars};

/// The CSV's columns, in order: the pattern's figures, then for each query
/// (`balloon_week`, `metric_hour`, `latest`, `fleet_minute`) its median and
/// p99 latency in µs and the cells it read per run.
pub fn csv_columns() -> Vec<String> {
    let mut columns: Vec<String> = [
        "pattern",
        "engine",
        "events",
        "cells",
        "measurements",
        "logical_bytes",
        "bytes_after_flush",
        "bytes_after_compaction",
        "bytes_per_measurement",
        "compression_ratio",
        "ingest_seconds",
        "events_per_sec",
        "cells_per_sec",
        "write_amplification",
    ]
    .map(String::from)
    .into();
    for q in QueryKind::ALL {
        let name = q.name().replace('-', "_");
        columns.extend([format!("{name}_p50_us"), format!("{name}_p99_us"), format!("{name}_cells_read")]);
    }
    columns
}

/// The figures as CSV: a header of [`csv_columns`], then a line per pattern and engine.
pub fn csv(reports: &[PatternReport]) -> String {
    let mut out = csv_columns().join(",");
    out.push('\n');
    for r in reports {
        let mut fields = vec![
            r.pattern.name().to_owned(),
            r.engine.to_owned(),
            r.events.to_string(),
            r.cells.to_string(),
            r.measurements.to_string(),
            r.logical_bytes.to_string(),
            r.bytes_after_flush.to_string(),
            r.bytes_after_compaction.to_string(),
            format!("{:.4}", r.bytes_per_measurement()),
            format!("{:.3}", r.compression_ratio()),
            format!("{:.9}", r.ingest.as_secs_f64()),
            format!("{:.0}", r.events_per_sec()),
            format!("{:.0}", r.cells_per_sec()),
            format!("{:.3}", r.write_amplification),
        ];
        for kind in QueryKind::ALL {
            match r.query(kind) {
                Some(q) => fields.extend([
                    format!("{:.1}", micros(q.p50)),
                    format!("{:.1}", micros(q.p99)),
                    format!("{:.1}", q.cells_read),
                ]),
                None => fields.extend([String::new(), String::new(), String::new()]),
            }
        }
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

fn micros(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A latency in the unit that reads best.
fn latency(d: std::time::Duration) -> String {
    let us = micros(d);
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// The report as markdown: settings and machine, then a table of storage
/// and ingest figures and one of query figures, and, when RocksDB ran
/// beside cellardb, the ratios between them.
pub fn markdown(reports: &[PatternReport], config: &LabConfig, machine: &Machine) -> String {
    let mut out = String::new();
    let w = &config.workload;
    let o = &config.options;
    let _ = writeln!(out, "# Schema-pattern lab\n");
    let _ = writeln!(
        out,
        "Balloon workload of `workload.md`: {} balloons × {} days, seed {} ({} events, {} measurements).\n",
        w.balloons,
        w.days,
        w.seed,
        w.events_count(),
        w.events_count() * 4
    );
    let _ = writeln!(
        out,
        "Settings: durability {:?}, block size {} bytes, compression {:?}, {} runs per point query. \
         Bytes are allocated on disk, the write-ahead log excluded. Write amplification: bytes written \
         (log, flushes, compaction) per logical byte, over ingest, flush and full compaction.\n",
        o.get_durability(),
        o.get_block_size(),
        o.get_compression(),
        config.samples
    );
    let _ = writeln!(out, "{}", machine.markdown());
    let _ = writeln!(out, "## Storage and ingest\n");
    let _ = writeln!(
        out,
        "| pattern | engine | logical MB | MB after flush | MB after compaction | bytes/measurement | compression | events/s | cells/s | write amp. |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let mb = |b: u64| format!("{:.2}", b as f64 / 1e6);
    for r in reports {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} | {:.1}× | {:.0} | {:.0} | {:.2} |",
            r.pattern.name(),
            r.engine,
            mb(r.logical_bytes),
            mb(r.bytes_after_flush),
            mb(r.bytes_after_compaction),
            r.bytes_per_measurement(),
            r.compression_ratio(),
            r.events_per_sec(),
            r.cells_per_sec(),
            r.write_amplification
        );
    }
    let _ = writeln!(out, "\n## Queries (median / p99, cells read per query)\n");
    let names: Vec<&str> = QueryKind::ALL.iter().map(|q| q.name()).collect();
    let _ = writeln!(out, "| pattern | engine | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(names.len()));
    for r in reports {
        let cells: Vec<String> = QueryKind::ALL
            .iter()
            .map(|&k| {
                r.query(k).map_or_else(String::new, |q| {
                    format!("{} / {}, {:.0} cells", latency(q.p50), latency(q.p99), q.cells_read)
                })
            })
            .collect();
        let _ = writeln!(out, "| {} | {} | {} |", r.pattern.name(), r.engine, cells.join(" | "));
    }
    comparison(reports, &mut out);
    out
}

/// cellardb ÷ RocksDB for each pattern both ran, if any.
fn comparison(reports: &[PatternReport], out: &mut String) {
    let pairs: Vec<(&PatternReport, &PatternReport)> = reports
        .iter()
        .filter(|r| r.engine == "cellardb")
        .filter_map(|c| reports.iter().find(|r| r.engine == "rocksdb" && r.pattern == c.pattern).map(|r| (c, r)))
        .collect();
    if pairs.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## cellardb ÷ RocksDB, same run\n");
    let names: Vec<String> = QueryKind::ALL.iter().map(|q| format!("{} p50", q.name())).collect();
    let _ = writeln!(out, "| pattern | ingest cells/s | bytes after compaction | write amp. | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|---|---|---|{}", "---|".repeat(names.len()));
    for (c, r) in pairs {
        let ratio = |a: f64, b: f64| match a / b {
            r if !r.is_finite() => "-".into(),
            r if r < 0.1 => format!("{r:.3}×"),
            r => format!("{r:.2}×"),
        };
        let queries: Vec<String> = QueryKind::ALL
            .iter()
            .map(|&k| match (c.query(k), r.query(k)) {
                (Some(a), Some(b)) => ratio(a.p50.as_secs_f64(), b.p50.as_secs_f64()),
                _ => "-".into(),
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            c.pattern.name(),
            ratio(c.cells_per_sec(), r.cells_per_sec()),
            ratio(c.bytes_after_compaction as f64, r.bytes_after_compaction as f64),
            ratio(c.write_amplification, r.write_amplification),
            queries.join(" | ")
        );
    }
}

/// The charts: file name and SVG document of each.
pub fn charts(reports: &[PatternReport]) -> Vec<(&'static str, String)> {
    let mut patterns: Vec<String> = Vec::new();
    for r in reports {
        if !patterns.iter().any(|p| p == r.pattern.name()) {
            patterns.push(r.pattern.name().to_owned());
        }
    }
    let mut engines: Vec<&str> = Vec::new();
    for r in reports {
        if !engines.contains(&r.engine) {
            engines.push(r.engine);
        }
    }
    let per_engine = |f: &dyn Fn(&PatternReport) -> f64| -> Vec<Series> {
        engines
            .iter()
            .map(|&engine| Series {
                name: engine.to_owned(),
                values: patterns
                    .iter()
                    .map(|p| reports.iter().find(|r| r.engine == engine && r.pattern.name() == p).map_or(f64::NAN, f))
                    .collect(),
            })
            .collect()
    };
    let bytes = grouped_bars(
        "Bytes on disk per measurement after full compaction",
        "bytes per measurement",
        &patterns,
        &per_engine(&PatternReport::bytes_per_measurement),
        false,
    );
    let ingest =
        grouped_bars("Ingest rate", "cells per second", &patterns, &per_engine(&PatternReport::cells_per_sec), false);
    let latencies: Vec<Series> = engines
        .iter()
        .flat_map(|&engine| QueryKind::ALL.iter().map(move |&k| (engine, k)))
        .map(|(engine, k)| Series {
            name: if engines.len() > 1 { format!("{} ({engine})", k.name()) } else { k.name().to_owned() },
            values: patterns
                .iter()
                .map(|p| {
                    reports
                        .iter()
                        .find(|r| r.engine == engine && r.pattern.name() == p)
                        .and_then(|r| r.query(k))
                        .map_or(f64::NAN, |q| q.p50.as_secs_f64() * 1000.0)
                })
                .collect(),
        })
        .collect();
    let queries = grouped_bars("Query latency (median)", "milliseconds (log scale)", &patterns, &latencies, true);
    vec![("bytes_per_measurement.svg", bytes), ("ingest.svg", ingest), ("query_latency.svg", queries)]
}
