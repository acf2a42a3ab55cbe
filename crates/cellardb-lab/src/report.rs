//! The lab's report: a markdown page, a CSV file and SVG charts, from the
//! figures of each pattern (and engine).

use std::fmt::Write as _;

use crate::chart::{Series, grouped_bars};
use crate::machine::Machine;
use crate::queries::{Form, QueryKind};
use crate::run::{LabConfig, PatternReport, runs_of};
use crate::workload::SchemaPattern;

/// Every query and form measured, in report order.
pub fn measured() -> Vec<(QueryKind, Form)> {
    QueryKind::ALL.iter().flat_map(|&k| k.forms().iter().map(move |&f| (k, f))).collect()
}

/// The column-name stem of query `kind` in `form`, e.g. `latest_natural`.
fn stem(kind: QueryKind, form: Form) -> String {
    format!("{}_{}", kind.name().replace('-', "_"), form.name())
}

/// The CSV's columns, in order: the pattern's figures, then for each query
/// and form of [`measured`] (`balloon_week_natural`, `balloon_week_tuned`,
/// …) its median and p99 latency in µs and the cells it read per run.
pub fn csv_columns() -> Vec<String> {
    let mut columns: Vec<String> = [
        "pattern",
        "engine",
        "round",
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
        "first_tenth_events_per_sec",
        "last_tenth_events_per_sec",
        "stall_seconds",
    ]
    .map(String::from)
    .into();
    for (kind, form) in measured() {
        let name = stem(kind, form);
        columns.extend([format!("{name}_p50_us"), format!("{name}_p99_us"), format!("{name}_cells_read")]);
    }
    columns
}

/// The figures as CSV: a header of [`csv_columns`], then a line per round,
/// pattern and engine.
pub fn csv(reports: &[PatternReport]) -> String {
    let mut out = csv_columns().join(",");
    out.push('\n');
    for r in reports {
        let mut fields = vec![
            r.pattern.name().to_owned(),
            r.engine.to_owned(),
            r.round.to_string(),
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
            format!("{:.0}", r.tenth_events_per_sec().0),
            format!("{:.0}", r.tenth_events_per_sec().1),
            r.stall.map_or_else(String::new, |d| format!("{:.3}", d.as_secs_f64())),
        ];
        for (kind, form) in measured() {
            match r.query(kind, form) {
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

/// The columns of `pace.csv` ([`pace_csv`]).
pub const PACE_COLUMNS: [&str; 11] = [
    "pattern",
    "engine",
    "round",
    "query",
    "form",
    "p50_us",
    "wall_ms",
    "on_cpu",
    "waited",
    "core_yardstick_us",
    "memory_yardstick_us",
];

/// How the machine ran over each form ([`crate::pace`]) as CSV: a header
/// of [`PACE_COLUMNS`], then a line per round, pattern, engine, query and
/// form, in `report.csv`'s order of lines and then the queries' order. A
/// share the OS did not give is left empty.
pub fn pace_csv(reports: &[PatternReport]) -> String {
    let mut out = PACE_COLUMNS.join(",");
    out.push('\n');
    let share = |s: Option<f64>| s.map_or_else(String::new, |s| format!("{s:.3}"));
    for r in reports {
        for q in &r.queries {
            let Some(pace) = q.pace else { continue };
            let fields = [
                r.pattern.name().to_owned(),
                r.engine.to_owned(),
                r.round.to_string(),
                q.kind.name().to_owned(),
                q.form.name().to_owned(),
                format!("{:.1}", micros(q.p50)),
                format!("{:.3}", pace.wall.as_secs_f64() * 1e3),
                share(Some(pace.on_cpu)),
                share(pace.waited),
                format!("{:.1}", micros(pace.core_yardstick)),
                format!("{:.1}", micros(pace.memory_yardstick)),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

/// The compression settings as the reports state them: the block
/// compression, and the dictionary of compacted files if there is one.
pub(crate) fn compression_text(o: &cellardb::Options) -> String {
    let dictionary = o.get_compression_dictionary().map(|n| format!(" with a {n}-byte dictionary per compacted file"));
    format!("{:?}{}", o.get_compression(), dictionary.unwrap_or_default())
}

/// How many times each query ran, as the reports state it. A p99 is the
/// run at rank ⌈runs × 99 / 100⌉, so over fewer than 100 runs (the fleet
/// queries' and the full scan's, at the usual `--samples`) it is the
/// slowest run, and the report says so.
fn runs_text(samples: usize, fleet_samples: Option<usize>) -> String {
    let [point, fleet, scan] = [QueryKind::BalloonWeek, QueryKind::FleetMinute, QueryKind::FullScan]
        .map(|k| runs_of(k, samples, fleet_samples));
    let slowest =
        if scan.min(fleet).min(point) < 100 { "; over fewer than 100 runs a p99 is the slowest run" } else { "" };
    format!(
        "{point} runs per point query and form, {fleet} per fleet query and form and {scan} of the full scan \
         (the engines taking each form's runs in turn, in batches of at least 10, each batch after a tenth as \
         many untimed runs{slowest})"
    )
}

fn micros(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A figure over rounds: its median and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` if there are none (or one is not a number).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() || v.iter().any(|x| x.is_nan()) {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { f64::midpoint(v[n / 2 - 1], v[n / 2]) };
        Some(Spread { median, min: v[0], max: v[n - 1] })
    }

    /// `median (min–max)` with `show` formatting each, or the median alone
    /// if every round shows the same.
    pub(crate) fn show(self, show: impl Fn(f64) -> String) -> String {
        let (min, max) = (show(self.min), show(self.max));
        if min == max { min } else { format!("{} ({min}–{max})", show(self.median)) }
    }
}

/// The (pattern, engine) pairs of `reports`, in first-seen order.
fn groups(reports: &[PatternReport]) -> Vec<(SchemaPattern, &'static str)> {
    let mut out = Vec::new();
    for r in reports {
        if !out.contains(&(r.pattern, r.engine)) {
            out.push((r.pattern, r.engine));
        }
    }
    out
}

/// `f` of every round of `pattern` on `engine`.
fn over_rounds(
    reports: &[PatternReport],
    (pattern, engine): (SchemaPattern, &str),
    f: impl Fn(&PatternReport) -> Option<f64>,
) -> Option<Spread> {
    Spread::of(reports.iter().filter(|r| r.pattern == pattern && r.engine == engine).map(|r| f(r).unwrap_or(f64::NAN)))
}

/// `f(cellardb) ÷ f(rocksdb)` of every round both ran `pattern` in.
fn ratio_over_rounds(
    reports: &[PatternReport],
    pattern: SchemaPattern,
    f: impl Fn(&PatternReport) -> Option<f64>,
) -> Option<Spread> {
    let of = |engine: &str, round: usize| {
        reports.iter().find(|r| r.pattern == pattern && r.engine == engine && r.round == round).and_then(&f)
    };
    let rounds = reports.iter().filter(|r| r.pattern == pattern && r.engine == "cellardb").map(|r| r.round);
    let ratios: Vec<f64> = rounds.filter_map(|round| Some(of("cellardb", round)? / of("rocksdb", round)?)).collect();
    Spread::of(ratios)
}

/// A latency in the unit that reads best.
pub(crate) fn latency(d: std::time::Duration) -> String {
    let us = micros(d);
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn latency_ms(ms: f64) -> String {
    latency(std::time::Duration::from_secs_f64(ms / 1000.0))
}

fn ratio(r: f64) -> String {
    if r < 0.1 { format!("{r:.3}×") } else { format!("{r:.2}×") }
}

fn thousands(x: f64) -> String {
    format!("{:.0}k", x / 1000.0)
}

/// The report as markdown: settings and machine, then a table of storage
/// and ingest figures and one of query figures, each the median over the
/// rounds with its range, and, when RocksDB ran beside cellardb, the ratios
/// between them, round by round.
pub fn markdown(reports: &[PatternReport], config: &LabConfig, machine: &Machine) -> String {
    let mut out = String::new();
    let w = &config.workload;
    let o = &config.options;
    let rounds = reports.iter().map(|r| r.round + 1).max().unwrap_or(0);
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
        "Settings: durability {:?}, block size {} bytes{}, compression {}, block cache {} MiB, {}, {rounds} \
         round(s). Each figure is the median over the rounds, with the \
         smallest and largest in brackets when they differ. Bytes are allocated on disk, the write-ahead \
         log excluded. Ingest: wall time of an engine's writes, the engines taking the events in up to 100 \
         turns (a worker process stopped outside its turns). Write amplification: bytes written (log, \
         flushes, compaction) per logical byte, over ingest, flush and full compaction. Last ÷ first \
         tenth: the ingest rate over the last tenth of the events divided by the rate over the first tenth \
         (1.00: the rate holds as the data grows). Stall: seconds writers waited for flushes or compactions \
         during ingest.\n",
        o.get_durability(),
        o.get_block_size(),
        o.get_block_entries().map(|n| format!(" (at most {n} entries)")).unwrap_or_default(),
        compression_text(o),
        o.get_block_cache_size() >> 20,
        runs_text(config.samples, config.fleet_samples)
    );
    let _ = writeln!(out, "{}", machine.markdown());
    let _ = writeln!(out, "## Storage and ingest\n");
    let _ = writeln!(
        out,
        "| pattern | engine | logical MB | MB after flush | MB after compaction | bytes/measurement | compression | cells/s | last ÷ first tenth | stall s | write amp. |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|");
    let mb = |b: f64| format!("{:.2}", b / 1e6);
    let two = |x: f64| format!("{x:.2}");
    for g in groups(reports) {
        let figure = |f: &dyn Fn(&PatternReport) -> f64, show: &dyn Fn(f64) -> String| {
            over_rounds(reports, g, |r| Some(f(r))).map_or_else(String::new, |s| s.show(show))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            g.0.name(),
            g.1,
            figure(&|r| r.logical_bytes as f64, &mb),
            figure(&|r| r.bytes_after_flush as f64, &mb),
            figure(&|r| r.bytes_after_compaction as f64, &mb),
            figure(&PatternReport::bytes_per_measurement, &two),
            figure(&PatternReport::compression_ratio, &|x| format!("{x:.1}×")),
            figure(&PatternReport::cells_per_sec, &thousands),
            figure(&PatternReport::ingest_decay, &two),
            over_rounds(reports, g, |r| r.stall.map(|d| d.as_secs_f64()))
                .map_or_else(|| "-".to_owned(), |s| s.show(|x| format!("{x:.1}"))),
            figure(&|r| r.write_amplification, &two),
        );
    }
    let _ = writeln!(out, "\n## Queries\n");
    let _ = writeln!(out, "| pattern | engine | query | form | p50 | p99 | cells read |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for g in groups(reports) {
        for (kind, form) in measured() {
            let q = |f: &dyn Fn(&crate::QueryReport) -> f64| over_rounds(reports, g, |r| r.query(kind, form).map(f));
            let (Some(p50), Some(p99), Some(cells)) =
                (q(&|q| q.p50.as_secs_f64() * 1e3), q(&|q| q.p99.as_secs_f64() * 1e3), q(&|q| q.cells_read))
            else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {:.0} |",
                g.0.name(),
                g.1,
                kind.name(),
                form.name(),
                p50.show(latency_ms),
                p99.show(latency_ms),
                cells.median
            );
        }
    }
    comparison(reports, &mut out);
    machine_during_queries(reports, &mut out);
    out
}

/// cellardb ÷ RocksDB for each pattern both ran, if any: the median ratio
/// over the rounds, its range, and whether it holds in every round.
fn comparison(reports: &[PatternReport], out: &mut String) {
    let patterns: Vec<SchemaPattern> = groups(reports)
        .into_iter()
        .filter(|(p, e)| *e == "rocksdb" && reports.iter().any(|r| r.pattern == *p && r.engine == "cellardb"))
        .map(|(p, _)| p)
        .collect();
    if patterns.is_empty() {
        return;
    }
    let shown = |s: Option<Spread>| s.map_or_else(|| "-".to_owned(), |s| s.show(ratio));
    let _ = writeln!(out, "\n## cellardb ÷ RocksDB, round by round\n");
    let _ = writeln!(
        out,
        "Ingest: higher is better. Bytes, write amplification and latencies: lower is better. \
         \"every round\" says whether the ratio is on the right side of 1 in each round.\n"
    );
    let _ = writeln!(out, "| pattern | ingest cells/s | bytes after compaction | write amp. |");
    let _ = writeln!(out, "|---|---|---|---|");
    for &p in &patterns {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            p.name(),
            shown(ratio_over_rounds(reports, p, |r| Some(r.cells_per_sec()))),
            shown(ratio_over_rounds(reports, p, |r| Some(r.bytes_after_compaction as f64))),
            shown(ratio_over_rounds(reports, p, |r| Some(r.write_amplification))),
        );
    }
    let _ = writeln!(out, "\n| pattern | query | form | p50 | p99 | ≤ 1.0× every round |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for &p in &patterns {
        for (kind, form) in measured() {
            let of =
                |f: fn(&crate::QueryReport) -> f64| ratio_over_rounds(reports, p, move |r| r.query(kind, form).map(f));
            let (p50, p99) = (of(|q| q.p50.as_secs_f64()), of(|q| q.p99.as_secs_f64()));
            let holds = match (p50, p99) {
                (Some(a), Some(b)) if a.max <= 1.0 && b.max <= 1.0 => "yes",
                (Some(a), _) if a.max <= 1.0 => "p50 only",
                _ => "no",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {holds} |",
                p.name(),
                kind.name(),
                form.name(),
                shown(p50),
                shown(p99)
            );
        }
    }
}

/// A form's yardstick above this many times the run's median of that
/// yardstick ran on a slower machine.
const SLOW_YARDSTICK: f64 = 1.25;

/// A timing thread on a CPU for less than this share of a form's time
/// waited for a CPU, the disk or the host.
const ON_CPU_FLOOR: f64 = 0.9;

/// The section on how the machine ran during the queries ([`crate::pace`]):
/// each yardstick's median and range over every form, and the forms where
/// the machine ran slow or took the timing thread off its CPU.
fn machine_during_queries(reports: &[PatternReport], out: &mut String) {
    let forms: Vec<(&PatternReport, &crate::QueryReport, crate::pace::Pace)> =
        reports.iter().flat_map(|r| r.queries.iter().filter_map(move |q| Some((r, q, q.pace?)))).collect();
    let spread = |f: fn(&crate::pace::Pace) -> std::time::Duration| {
        Spread::of(forms.iter().map(|(_, _, p)| f(p).as_secs_f64() * 1e3))
    };
    let (Some(core), Some(memory)) = (spread(|p| p.core_yardstick), spread(|p| p.memory_yardstick)) else {
        return;
    };
    let _ = writeln!(out, "\n## The machine during the queries\n");
    let _ = writeln!(
        out,
        "Just before and just after each form on each engine, the lab timed two yardsticks (fixed work: a \
         walk of dependent loads within a core's private cache, and one through an 8 MiB buffer; the slower \
         of the two runs counts), and it asked the OS how long the timing thread ran on a CPU over the form's \
         batches on that engine. \
         `pace.csv` has every form. The core's yardstick took {} over the forms, the memory's {}. A form \
         whose yardstick took more than {SLOW_YARDSTICK}× its median ran on a slower machine; a thread on a \
         CPU for less than {:.0}% of a form's time waited for a CPU (\"waiting\": another task had it), \
         for the disk or for the host.\n",
        core.show(latency_ms),
        memory.show(latency_ms),
        ON_CPU_FLOOR * 100.0
    );
    let slow = |d: std::time::Duration, of: Spread| d.as_secs_f64() * 1e3 > SLOW_YARDSTICK * of.median;
    let unusual: Vec<_> = forms
        .iter()
        .filter(|(_, _, p)| slow(p.core_yardstick, core) || slow(p.memory_yardstick, memory) || p.on_cpu < ON_CPU_FLOOR)
        .collect();
    if unusual.is_empty() {
        let _ = writeln!(out, "No form ran on a slower machine or off its CPU by that measure.");
        return;
    }
    let _ = writeln!(out, "| pattern | engine | round | query | form | p50 | core | memory | on a CPU | waiting |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let percent = |s: Option<f64>| s.map_or_else(|| "-".to_owned(), |s| format!("{:.0}%", s * 100.0));
    for (r, q, p) in unusual {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.pattern.name(),
            r.engine,
            r.round,
            q.kind.name(),
            q.form.name(),
            latency(q.p50),
            latency(p.core_yardstick),
            latency(p.memory_yardstick),
            percent(Some(p.on_cpu)),
            percent(p.waited)
        );
    }
}

/// The charts, from the medians over the rounds: file name and SVG
/// document of each. Query latency is charted in the natural form.
pub fn charts(reports: &[PatternReport]) -> Vec<(&'static str, String)> {
    let mut patterns: Vec<SchemaPattern> = Vec::new();
    let mut engines: Vec<&str> = Vec::new();
    for (p, e) in groups(reports) {
        if !patterns.contains(&p) {
            patterns.push(p);
        }
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let names: Vec<String> = patterns.iter().map(|p| p.name().to_owned()).collect();
    let median = |p: SchemaPattern, engine: &'static str, f: &dyn Fn(&PatternReport) -> Option<f64>| {
        over_rounds(reports, (p, engine), f).map_or(f64::NAN, |s| s.median)
    };
    let per_engine = |f: &dyn Fn(&PatternReport) -> f64| -> Vec<Series> {
        engines
            .iter()
            .map(|&engine| Series {
                name: engine.to_owned(),
                values: patterns.iter().map(|&p| median(p, engine, &|r| Some(f(r)))).collect(),
            })
            .collect()
    };
    let bytes = grouped_bars(
        "Bytes on disk per measurement after full compaction",
        "bytes per measurement",
        &names,
        &per_engine(&PatternReport::bytes_per_measurement),
        false,
    );
    let ingest =
        grouped_bars("Ingest rate", "cells per second", &names, &per_engine(&PatternReport::cells_per_sec), false);
    let latencies: Vec<Series> = engines
        .iter()
        .flat_map(|&engine| QueryKind::ALL.iter().map(move |&k| (engine, k)))
        .map(|(engine, k)| Series {
            name: if engines.len() > 1 { format!("{} ({engine})", k.name()) } else { k.name().to_owned() },
            values: patterns
                .iter()
                .map(|&p| median(p, engine, &|r| r.query(k, Form::Natural).map(|q| q.p50.as_secs_f64() * 1000.0)))
                .collect(),
        })
        .collect();
    let queries =
        grouped_bars("Query latency (median, natural form)", "milliseconds (log scale)", &names, &latencies, true);
    vec![("bytes_per_measurement.svg", bytes), ("ingest.svg", ingest), ("query_latency.svg", queries)]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::QueryReport;

    #[test]
    fn a_spread_is_the_median_and_the_range() {
        assert_eq!(Spread::of([3.0, 1.0, 2.0]), Some(Spread { median: 2.0, min: 1.0, max: 3.0 }));
        assert_eq!(Spread::of([4.0, 1.0]).map(|s| s.median), Some(2.5));
        assert_eq!(Spread::of([]), None);
        assert_eq!(Spread::of([1.0, f64::NAN]), None, "a round without the figure");
    }

    fn report(engine: &'static str, round: usize, latest_ms: u64) -> PatternReport {
        let latency = Duration::from_millis(latest_ms);
        PatternReport {
            pattern: SchemaPattern::BucketNewCell,
            engine,
            round,
            events: 10,
            cells: 40,
            measurements: 40,
            logical_bytes: 1000,
            bytes_after_flush: 500,
            bytes_after_compaction: 400,
            ingest: Duration::from_millis(10),
            ingest_tenths: (Duration::from_millis(1), Duration::from_millis(1)),
            stall: None,
            write_amplification: 1.0,
            queries: vec![QueryReport {
                kind: QueryKind::Latest,
                form: Form::Natural,
                runs: 1,
                p50: latency,
                p99: latency,
                cells_read: 4.0,
                measurements: 4.0,
                pace: None,
            }],
        }
    }

    fn latest_line(rounds: &[(u64, u64)]) -> String {
        let reports: Vec<PatternReport> = rounds
            .iter()
            .enumerate()
            .flat_map(|(round, &(ours, theirs))| [report("cellardb", round, ours), report("rocksdb", round, theirs)])
            .collect();
        let mut out = String::new();
        comparison(&reports, &mut out);
        out.lines().find(|l| l.contains("| latest | natural |")).unwrap_or_default().to_owned()
    }

    #[test]
    fn the_ingest_decay_is_the_last_tenths_rate_over_the_firsts() {
        // 10 events: a tenth is one event, written in 1 ms first and 4 ms last.
        let mut r = report("cellardb", 0, 1);
        r.ingest_tenths = (Duration::from_millis(1), Duration::from_millis(4));
        r.stall = Some(Duration::from_millis(1500));
        assert_eq!(r.tenth_events_per_sec(), (1000.0, 250.0));
        assert!((r.ingest_decay() - 0.25).abs() < 1e-12);
        let csv = csv(&[r]);
        let (header, line) = csv.trim_end().split_once('\n').unwrap();
        let field = |name: &str| {
            let i = header.split(',').position(|c| c == name).unwrap();
            line.split(',').nth(i).unwrap().to_owned()
        };
        assert_eq!(header.split(',').count(), line.split(',').count());
        assert_eq!(
            (field("first_tenth_events_per_sec"), field("last_tenth_events_per_sec")),
            ("1000".into(), "250".into())
        );
        assert_eq!(field("stall_seconds"), "1.500");
    }

    #[test]
    fn the_settings_say_how_often_each_query_ran_and_what_a_p99_of_few_runs_is() {
        let text = runs_text(200, None);
        assert!(
            text.starts_with("200 runs per point query and form, 10 per fleet query and form and 3 of the full scan"),
            "{text}"
        );
        assert!(text.contains("a p99 is the slowest run"), "{text}");
        assert!(!runs_text(10_000, None).contains("slowest"), "every query ran at least 100 times");
        let apart = runs_text(1000, Some(10));
        assert!(
            apart.starts_with("1000 runs per point query and form, 10 per fleet query and form and 10 of"),
            "{apart}"
        );
        assert!(apart.contains("a p99 is the slowest run"), "{apart}");
    }

    #[test]
    fn a_ratio_holds_only_if_it_holds_in_every_round() {
        assert_eq!(
            latest_line(&[(5, 10), (9, 10), (8, 10)]),
            "| bucket-new-cell | latest | natural | 0.80× (0.50×–0.90×) | 0.80× (0.50×–0.90×) | yes |"
        );
        assert!(latest_line(&[(5, 10), (12, 10), (8, 10)]).ends_with("| 0.80× (0.50×–1.20×) | no |"));
    }

    fn paced(round: usize, core_us: u64, on_cpu: f64) -> PatternReport {
        let mut r = report("cellardb", round, 2);
        r.queries[0].pace = Some(crate::pace::Pace {
            wall: Duration::from_millis(40),
            on_cpu,
            waited: Some(0.01),
            core_yardstick: Duration::from_micros(core_us),
            memory_yardstick: Duration::from_millis(4),
        });
        r
    }

    #[test]
    fn pace_csv_has_a_line_per_form_that_was_paced() {
        let reports = [paced(0, 1500, 0.98), report("rocksdb", 0, 3)];
        let csv = pace_csv(&reports);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], PACE_COLUMNS.join(","));
        assert_eq!(lines[1..], ["bucket-new-cell,cellardb,0,latest,natural,2000.0,40.000,0.980,0.010,1500.0,4000.0"]);
    }

    #[test]
    fn the_report_names_the_forms_that_ran_on_a_slow_machine_or_off_their_cpu() {
        let reports = [paced(0, 1500, 0.98), paced(1, 3100, 0.97), paced(2, 1500, 0.5), paced(3, 1600, 0.99)];
        let mut out = String::new();
        machine_during_queries(&reports, &mut out);
        let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| bucket-new-cell")).collect();
        assert_eq!(
            rows,
            [
                "| bucket-new-cell | cellardb | 1 | latest | natural | 2.00 ms | 3.10 ms | 4.00 ms | 97% | 1% |",
                "| bucket-new-cell | cellardb | 2 | latest | natural | 2.00 ms | 1.50 ms | 4.00 ms | 50% | 1% |",
            ]
        );
        let mut memory_slow = paced(1, 1500, 0.98);
        if let Some(pace) = &mut memory_slow.queries[0].pace {
            pace.memory_yardstick = Duration::from_millis(9);
        }
        let mut out = String::new();
        machine_during_queries(&[paced(0, 1500, 0.98), memory_slow, paced(2, 1500, 0.98)], &mut out);
        assert!(out.contains("| cellardb | 1 | latest | natural | 2.00 ms | 1.50 ms | 9.00 ms | 98% | 1% |"), "{out}");
        let mut calm = String::new();
        machine_during_queries(&[paced(0, 1500, 0.98), paced(1, 1600, 0.95)], &mut calm);
        assert!(calm.contains("No form ran on a slower machine"), "{calm}");
        let mut none = String::new();
        machine_during_queries(&[report("cellardb", 0, 1)], &mut none);
        assert!(none.is_empty(), "no pace, no section: {none}");
    }
}
