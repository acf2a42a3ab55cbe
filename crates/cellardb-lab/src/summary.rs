//! What a spec run found, for a person who reads it once: for each query,
//! the designs side by side with a verdict; then bytes, ingest, write
//! amplification and memory; a recommendation for the spec's queries as a
//! whole; the machine and settings. As markdown, as a self-contained HTML
//! page with its charts, and as CSV (one line per round and design).
//!
//! Every figure is the median over the rounds, with the smallest and
//! largest beside it when they differ; a ratio between two designs is taken
//! round by round, and said to hold only if it holds in every round.

use std::fmt::Write as _;

use crate::chart::{Series, grouped_bars};
use crate::machine::Machine;
use crate::measure::{DesignReport, QueryFigures, SpecConfig};
use crate::plan::Form;
use crate::report::Spread;
use crate::run::fleet_runs;
use crate::spec::time::{show_duration, show_instant};
use crate::spec::{Cells, QuerySpec, Spec};

/// The designs of `reports`, in the order they ran.
fn designs(reports: &[DesignReport]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in reports {
        if !out.contains(&r.design.as_str()) {
            out.push(&r.design);
        }
    }
    out
}

fn rounds_of<'a>(reports: &'a [DesignReport], design: &'a str) -> impl Iterator<Item = &'a DesignReport> + 'a {
    reports.iter().filter(move |r| r.design == design)
}

/// `f` over the rounds of `design`.
fn spread(reports: &[DesignReport], design: &str, f: impl Fn(&DesignReport) -> Option<f64>) -> Option<Spread> {
    Spread::of(rounds_of(reports, design).map(|r| f(r).unwrap_or(f64::NAN)))
}

/// The form of `q` in which `design` answers fastest (by median p50), and that p50 spread.
fn best_form(reports: &[DesignReport], design: &str, q: &QuerySpec) -> Option<(Form, Spread)> {
    Form::of(&q.kind)
        .iter()
        .filter_map(|&form| Some((form, p50(reports, design, &q.name, form)?)))
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
}

fn figures<'a>(r: &'a DesignReport, query: &str, form: Form) -> Option<&'a QueryFigures> {
    r.query(query, form)
}

fn p50(reports: &[DesignReport], design: &str, query: &str, form: Form) -> Option<Spread> {
    spread(reports, design, |r| figures(r, query, form).map(|f| f.p50.as_secs_f64()))
}

/// A figure of a design's round.
type Figure<'a> = &'a dyn Fn(&DesignReport) -> Option<f64>;

/// `fa(a's round) / fb(b's round)`, round by round.
fn ratio(reports: &[DesignReport], (a, fa): (&str, Figure<'_>), (b, fb): (&str, Figure<'_>)) -> Option<Spread> {
    let values: Vec<f64> = rounds_of(reports, a)
        .filter_map(|ra| {
            let rb = reports.iter().find(|r| r.design == b && r.round == ra.round)?;
            Some(fa(ra)? / fb(rb)?)
        })
        .collect();
    Spread::of(values)
}

/// A latency of `seconds` in the unit that reads best.
fn latency(seconds: f64) -> String {
    crate::report::latency(std::time::Duration::from_secs_f64(seconds))
}

fn times(x: f64) -> String {
    if x >= 10.0 { format!("{x:.0}×") } else { format!("{x:.1}×") }
}

fn bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

fn show(s: Option<Spread>, f: impl Fn(f64) -> String) -> String {
    s.map_or_else(|| "-".to_owned(), |s| s.show(f))
}

/// One line per query: the fastest design, how much faster than the next
/// and the slowest, at what bytes, and whether that held in every round.
pub fn verdict(reports: &[DesignReport], q: &QuerySpec) -> String {
    let mut ranked: Vec<(&str, Form, Spread)> =
        designs(reports).into_iter().filter_map(|d| best_form(reports, d, q).map(|(f, s)| (d, f, s))).collect();
    ranked.sort_by(|a, b| a.2.median.total_cmp(&b.2.median));
    let Some(&(best, form, fastest)) = ranked.first() else { return "not measured".into() };
    let mut line = format!("**{best}** answers it fastest ({}, {})", latency(fastest.median), form.name());
    let bytes_of = |d: &str| spread(reports, d, DesignReport::bytes_per_value).map(|s| s.median);
    for (label, other) in [("the next", ranked.get(1)), ("the slowest", ranked.last().filter(|_| ranked.len() > 2))] {
        let Some(&(name, other_form, _)) = other else { continue };
        let p50_in = |form: Form| move |r: &DesignReport| figures(r, &q.name, form).map(|f| f.p50.as_secs_f64());
        let faster = ratio(reports, (name, &p50_in(other_form)), (best, &p50_in(form)));
        let Some(faster) = faster else { continue };
        let held = if faster.min >= 1.0 { "" } else { " (not in every round)" };
        let bytes = match (bytes_of(best), bytes_of(name)) {
            (Some(a), Some(b)) if b > 0.0 => format!(", at {:.2}× the bytes", a / b),
            _ => String::new(),
        };
        let _ = write!(line, "; {} faster than {label}, {name}{bytes}{held}", faster.show(times));
    }
    line.push('.');
    line
}

/// The design to pick for the spec's queries as a whole, and why, in a
/// sentence: the lowest geometric mean, over the queries, of its latency
/// over the fastest design's.
pub fn recommendation(spec: &Spec, reports: &[DesignReport]) -> String {
    let names = designs(reports);
    let mut scores: Vec<(&str, f64, f64)> = Vec::new();
    for &d in &names {
        let mut log_sum = 0.0;
        let mut worst: f64 = 1.0;
        let mut n = 0;
        for q in &spec.queries {
            let fastest =
                names.iter().filter_map(|o| best_form(reports, o, q)).map(|(_, s)| s.median).fold(f64::MAX, f64::min);
            let Some((_, mine)) = best_form(reports, d, q) else { continue };
            let r = mine.median / fastest.max(1e-12);
            log_sum += r.ln();
            worst = worst.max(r);
            n += 1;
        }
        if n > 0 {
            scores.push((d, (log_sum / f64::from(n)).exp(), worst));
        }
    }
    scores.sort_by(|a, b| a.1.total_cmp(&b.1));
    let Some(&(best, score, worst)) = scores.first() else { return "Nothing was measured.".into() };
    let scanned = |d: &str| {
        let (mut cells, mut values) = (0.0, 0.0);
        for q in &spec.queries {
            if let Some((form, _)) = best_form(reports, d, q) {
                for r in rounds_of(reports, d) {
                    if let Some(f) = figures(r, &q.name, form) {
                        cells += f.cells_read;
                        values += f.values_returned;
                    }
                }
            }
        }
        cells / values.max(1e-9)
    };
    let blocks = |d: &str| {
        let v: Vec<f64> = spec
            .queries
            .iter()
            .filter_map(|q| {
                let (form, _) = best_form(reports, d, q)?;
                spread(reports, d, |r| figures(r, &q.name, form).and_then(|f| f.blocks_read)).map(|s| s.median)
            })
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let bytes = spread(reports, best, DesignReport::bytes_per_value).map(|s| s.median);
    let mut line = format!(
        "**{best}**: its latency is {:.2}× the fastest design's per query (geometric mean; {} at worst)",
        score,
        times(worst)
    );
    if let Some(b) = bytes {
        let _ = write!(line, ", at {b:.2} bytes per value");
    }
    let _ = write!(line, ". Why: it reads {:.2} cells per value returned", scanned(best));
    if let Some(b) = blocks(best) {
        let _ = write!(line, " and {b:.1} blocks per query");
    }
    if let Some(&(next, next_score, _)) = scores.get(1) {
        let _ = write!(line, "; the runner-up, {next} ({next_score:.2}×), reads {:.2}", scanned(next));
        if let Some(b) = blocks(next) {
            let _ = write!(line, " and {b:.1}");
        }
    }
    line.push('.');
    line
}

/// What the data is, in a paragraph.
fn about(spec: &Spec, reports: &[DesignReport]) -> String {
    let d = &spec.data;
    let events = reports.first().map_or(0, |r| r.events);
    let values = reports.first().map_or(0, |r| r.values);
    let series: Vec<String> = d
        .series
        .iter()
        .map(|s| format!("`{}` ({}, every {})", s.name, shape_name(s), show_duration(s.cadence)))
        .collect();
    format!(
        "{} {} {}s from {} for {}: {events} events, {values} values. Series: {}.",
        spec.description,
        d.entities.count,
        d.entities.noun,
        show_instant(d.start),
        show_duration(d.end - d.start),
        series.join(", ")
    )
}

fn shape_name(s: &crate::spec::Series) -> &'static str {
    use crate::spec::Shape;
    match s.shape {
        Shape::RandomWalk { .. } => "random walk",
        Shape::Counter { .. } => "counter",
        Shape::Categorical { .. } => "categorical",
        Shape::Text(_) => "text",
        Shape::Blob(_) => "blob",
    }
}

/// A table: a header and rows of cells, each a shown text and, for the
/// HTML page, the figure it shows with its CSV column (checked against the
/// CSV by the tests).
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<TableCell>>,
}

/// A cell's text, and the figure it shows with its CSV column.
type TableCell = (String, Option<(String, f64)>);

impl Table {
    fn markdown(&self, out: &mut String) {
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(self.header.len()));
        for row in &self.rows {
            let cells: Vec<&str> = row.iter().map(|(t, _)| t.as_str()).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
    }

    fn html(&self, out: &mut String) {
        out.push_str("<table>\n<thead><tr>");
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", html_text(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, (text, figure)) in row.iter().enumerate() {
                let tag = if i == 0 { "th" } else { "td" };
                match figure {
                    Some((column, value)) => {
                        let _ = write!(
                            out,
                            "<{tag} data-column=\"{}\" data-value=\"{value}\">{}</{tag}>",
                            html_text(column),
                            inline(text)
                        );
                    }
                    None => {
                        let _ = write!(out, "<{tag}>{}</{tag}>", inline(text));
                    }
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
    }
}

fn html_text(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Markdown's `**bold**` and `` `code` `` as HTML.
fn inline(t: &str) -> String {
    let mut out = String::new();
    for (i, part) in html_text(t).split("**").enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<strong>{part}</strong>");
        } else {
            for (j, p) in part.split('`').enumerate() {
                if j % 2 == 1 {
                    let _ = write!(out, "<code>{p}</code>");
                } else {
                    out.push_str(p);
                }
            }
        }
    }
    out
}

/// The CSV column stem of `query` in `form`.
pub fn stem(query: &str, form: Form) -> String {
    format!("{}_{}", query.replace('-', "_"), form.name())
}

/// The report's sections, in order: a title and text, and its tables.
struct Section {
    title: String,
    text: Vec<String>,
    tables: Vec<Table>,
}

fn sections(spec: &Spec, reports: &[DesignReport], config: &SpecConfig, machine: &Machine) -> Vec<Section> {
    let mut out = vec![what_was_measured(spec, reports, config)];
    out.push(Section {
        title: "Recommendation".into(),
        text: vec![recommendation(spec, reports)],
        tables: vec![Table {
            header: vec!["query".into(), "verdict".into()],
            rows: spec
                .queries
                .iter()
                .map(|q| vec![(format!("`{}`", q.name), None), (verdict(reports, q), None)])
                .collect(),
        }],
    });
    out.extend(spec.queries.iter().map(|q| query_section(reports, q)));
    out.push(storage(reports));
    let o = &config.options;
    out.push(Section {
        title: "Machine and settings".into(),
        text: vec![
            machine.markdown(),
            format!(
                "Durability {:?}, block size {} bytes{}, compression {}, block cache {} MiB, memtables of {} MiB \
                 with up to {} frozen (the engine's memory bound: {} MiB); query seed {}.",
                o.get_durability(),
                o.get_block_size(),
                o.get_block_entries().map(|n| format!(" (at most {n} entries)")).unwrap_or_default(),
                crate::report::compression_text(o),
                o.get_block_cache_size() >> 20,
                o.get_memtable_size() >> 20,
                o.get_max_immutable_memtables(),
                o.memory_bound() >> 20,
                config.seed
            ),
        ],
        tables: Vec::new(),
    });
    out
}

fn what_was_measured(spec: &Spec, reports: &[DesignReport], config: &SpecConfig) -> Section {
    let rounds = reports.iter().map(|r| r.round + 1).max().unwrap_or(0);
    let target = reports.first().map_or("cellardb", |r| r.target.as_str());
    Section {
        title: "What was measured".into(),
        text: vec![
            about(spec, reports),
            format!(
                "Each design was loaded into {target} (events in arrival order, each event's rows written as one call), \
                 flushed and fully compacted, then each query was run {} times per form ({} for the queries that read \
                 every {}), each run with parameters of its own, the same for every design; every answer was checked \
                 against the generator. {rounds} round(s), the designs in turn within each. Figures are medians over \
                 the rounds, the smallest and largest in brackets where they differ; a ratio between designs is taken \
                 round by round.",
                config.samples,
                fleet_runs(config.samples, config.fleet_samples),
                spec.data.entities.noun
            ),
        ],
        tables: vec![Table {
            header: vec!["design".into(), "row key".into(), "cells".into(), "families".into()],
            rows: spec
                .designs
                .iter()
                .map(|d| {
                    let cells = match &d.cells {
                        Cells::PerValue(v) => format!("a cell per value: `{}` → `{}`", d.qualifier.text, v.text),
                        Cells::PerEvent(e) => {
                            format!("a cell per event: `{}` → the event in {}", d.qualifier.text, e.name())
                        }
                    };
                    let families: Vec<String> = d.families.iter().map(|f| format!("`{}` ({})", f.name, f.gc)).collect();
                    let key = match d.bucket {
                        Some(b) => format!("`{}`, {} buckets", d.row_key.text, show_duration(b)),
                        None => format!("`{}`", d.row_key.text),
                    };
                    vec![
                        (format!("**{}**: {}", d.name, d.description), None),
                        (key, None),
                        (cells, None),
                        (families.join(", "), None),
                    ]
                })
                .collect(),
        }],
    }
}

fn query_section(reports: &[DesignReport], q: &QuerySpec) -> Section {
    let mut rows = Vec::new();
    {
        for d in designs(reports) {
            for &form in Form::of(&q.kind) {
                let s = stem(&q.name, form);
                let median = |f: &dyn Fn(&QueryFigures) -> Option<f64>| {
                    spread(reports, d, |r| figures(r, &q.name, form).and_then(f))
                };
                let p50 = median(&|f| Some(f.p50.as_secs_f64()));
                let p99 = median(&|f| Some(f.p99.as_secs_f64()));
                let cells = median(&|f| Some(f.cells_read / f.values_returned.max(1e-9)));
                let blocks = median(&|f| f.blocks_read);
                let fig = |col: &str, s: Option<Spread>, scale: f64| s.map(|s| (col.to_owned(), s.median * scale));
                rows.push(vec![
                    (d.to_owned(), None),
                    (form.name().to_owned(), None),
                    (show(p50, latency), fig(&format!("{s}_p50_us"), p50, 1e6)),
                    (show(p99, latency), fig(&format!("{s}_p99_us"), p99, 1e6)),
                    (show(cells, |x| format!("{x:.2}")), None),
                    (show(blocks, |x| format!("{x:.1}")), None),
                ]);
            }
        }
        Section {
            title: format!("Query `{}`", q.name),
            text: vec![format!("{} ({}). {}", q.description, q.kind.name(), verdict(reports, q))],
            tables: vec![Table {
                header: [
                    "design",
                    "form",
                    "p50 (lower is better)",
                    "p99 (lower is better)",
                    "cells read per value returned",
                    "blocks read per run",
                ]
                .map(String::from)
                .into(),
                rows,
            }],
        }
    }
}

fn storage(reports: &[DesignReport]) -> Section {
    let storage_rows = designs(reports)
        .into_iter()
        .map(|d| {
            let f = |col: &str, s: Option<Spread>, show_it: &dyn Fn(f64) -> String| {
                (s.map_or_else(|| "unknown".to_owned(), |s| s.show(show_it)), s.map(|s| (col.to_owned(), s.median)))
            };
            vec![
                (d.to_owned(), None),
                f("bytes_per_value", spread(reports, d, DesignReport::bytes_per_value), &|x| format!("{x:.2}")),
                f("bytes", spread(reports, d, |r| r.bytes.map(|b| b as f64)), &bytes),
                f("events_per_sec", spread(reports, d, |r| Some(r.events_per_sec())), &|x| format!("{:.0}k", x / 1e3)),
                f("generation_share", spread(reports, d, |r| Some(r.generation_share())), &|x| {
                    format!("{:.0}%", x * 100.0)
                }),
                f("write_amplification", spread(reports, d, |r| r.write_amplification), &|x| format!("{x:.2}")),
                f("peak_memory_bytes", spread(reports, d, |r| r.peak_memory.map(|m| m as f64)), &bytes),
            ]
        })
        .collect();
    Section {
        title: "Storage and ingest".into(),
        text: vec![
            "Bytes: allocated on disk after a full compaction and close, the write-ahead log excluded (unknown where \
             the store cannot tell). Ingest: events written per second. Generation: the share of the ingest's time the \
             same events took to generate and turn into rows on their own. Write amplification: bytes written (log, \
             flushes, compactions) per logical byte (row key + family + qualifier + value + 8 per cell). Peak memory: \
             the process's peak heap over the design's load and queries (anonymous resident memory, sampled every \
             few milliseconds; pages of mapped files, the OS's cache, are in the CSV's peak_resident_bytes)."
                .into(),
        ],
        tables: vec![Table {
            header: [
                "design",
                "bytes per value (lower is better)",
                "bytes",
                "events/s (higher is better)",
                "generation",
                "write amp.",
                "peak heap",
            ]
            .map(String::from)
            .into(),
            rows: storage_rows,
        }],
    }
}

/// The report as markdown.
pub fn markdown(spec: &Spec, reports: &[DesignReport], config: &SpecConfig, machine: &Machine) -> String {
    let mut out = format!("# `{}`: which key design?\n\n", spec.name);
    for s in sections(spec, reports, config, machine) {
        let _ = writeln!(out, "## {}\n", s.title);
        for t in &s.text {
            let _ = writeln!(out, "{t}\n");
        }
        for t in &s.tables {
            t.markdown(&mut out);
        }
    }
    out
}

/// The report as one HTML page, its charts inline.
pub fn html(spec: &Spec, reports: &[DesignReport], config: &SpecConfig, machine: &Machine) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}: which key design?</title>\n\
         <style>body{{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}th,td{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}\
         thead th{{background:#f3f3f3}}td[data-value]{{text-align:right;font-variant-numeric:tabular-nums}}\
         code{{background:#f3f3f3;padding:0 .2em}}figure{{margin:1em 0}}figure svg{{max-width:100%;height:auto}}</style>\n</head>\n<body>\n<h1><code>{0}</code>: which key design?</h1>\n",
        html_text(&spec.name)
    );
    for s in sections(spec, reports, config, machine) {
        let _ = writeln!(out, "<h2>{}</h2>", inline(&s.title));
        for t in &s.text {
            for para in t.split("\n\n") {
                if para.starts_with("- ") {
                    out.push_str("<ul>");
                    for item in para.lines() {
                        let _ = write!(out, "<li>{}</li>", inline(item.trim_start_matches("- ")));
                    }
                    out.push_str("</ul>\n");
                } else {
                    let _ = writeln!(out, "<p>{}</p>", inline(para));
                }
            }
        }
        for t in &s.tables {
            t.html(&mut out);
        }
        if s.title == "Recommendation" {
            for (name, svg) in charts(spec, reports) {
                let _ = writeln!(out, "<figure id=\"{}\">{svg}</figure>", name.trim_end_matches(".svg"));
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The charts: each query's p50 per design (log scale), bytes per value,
/// ingest events per second; file name and SVG of each.
pub fn charts(spec: &Spec, reports: &[DesignReport]) -> Vec<(&'static str, String)> {
    let names: Vec<String> = designs(reports).into_iter().map(String::from).collect();
    let per_design =
        |f: &dyn Fn(&str) -> Option<Spread>| names.iter().map(|d| f(d).map_or(f64::NAN, |s| s.median)).collect();
    let queries: Vec<Series> = spec
        .queries
        .iter()
        .map(|q| Series {
            name: q.name.clone(),
            values: per_design(&|d| {
                best_form(reports, d, q).map(|(_, s)| Spread {
                    median: s.median * 1e3,
                    min: s.min * 1e3,
                    max: s.max * 1e3,
                })
            }),
        })
        .collect();
    let latency = grouped_bars(
        "Query latency, p50 of each design's best form",
        "milliseconds (log scale)",
        &names,
        &queries,
        true,
    );
    let bytes = grouped_bars(
        "Bytes on disk per value",
        "bytes per value",
        &names,
        &[Series {
            name: "bytes per value".into(),
            values: per_design(&|d| spread(reports, d, DesignReport::bytes_per_value)),
        }],
        false,
    );
    let ingest = grouped_bars(
        "Ingest",
        "events per second",
        &names,
        &[Series {
            name: "events/s".into(),
            values: per_design(&|d| spread(reports, d, |r| Some(r.events_per_sec()))),
        }],
        false,
    );
    vec![("query_latency.svg", latency), ("bytes_per_value.svg", bytes), ("ingest.svg", ingest)]
}

/// The CSV's columns: the design's figures, then for each query and form
/// its p50 and p99 in µs, cells read, values returned and blocks read per run.
pub fn csv_columns(spec: &Spec) -> Vec<String> {
    let mut columns: Vec<String> = [
        "design",
        "target",
        "round",
        "events",
        "values",
        "cells",
        "logical_bytes",
        "bytes",
        "bytes_per_value",
        "ingest_seconds",
        "events_per_sec",
        "generation_share",
        "write_amplification",
        "stall_seconds",
        "peak_memory_bytes",
        "peak_resident_bytes",
    ]
    .map(String::from)
    .into();
    for q in &spec.queries {
        for &form in Form::of(&q.kind) {
            let s = stem(&q.name, form);
            columns.extend(
                ["p50_us", "p99_us", "cells_read", "values_returned", "blocks_read"].map(|c| format!("{s}_{c}")),
            );
        }
    }
    columns
}

/// The figures as CSV: a line per round and design.
///
/// # Errors
/// Never in practice (the CSV is written to memory).
pub fn csv(spec: &Spec, reports: &[DesignReport]) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(csv_columns(spec))?;
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    for r in reports {
        let mut record = vec![
            r.design.clone(),
            r.target.clone(),
            r.round.to_string(),
            r.events.to_string(),
            r.values.to_string(),
            r.cells.to_string(),
            r.logical_bytes.to_string(),
            r.bytes.map_or_else(String::new, |b| b.to_string()),
            opt(r.bytes_per_value()),
            r.ingest.as_secs_f64().to_string(),
            r.events_per_sec().to_string(),
            r.generation_share().to_string(),
            opt(r.write_amplification),
            opt(r.stall.map(|d| d.as_secs_f64())),
            r.peak_memory.map_or_else(String::new, |m| m.to_string()),
            r.peak_resident.map_or_else(String::new, |m| m.to_string()),
        ];
        for q in &spec.queries {
            for &form in Form::of(&q.kind) {
                match r.query(&q.name, form) {
                    Some(f) => record.extend([
                        (f.p50.as_secs_f64() * 1e6).to_string(),
                        (f.p99.as_secs_f64() * 1e6).to_string(),
                        f.cells_read.to_string(),
                        f.values_returned.to_string(),
                        opt(f.blocks_read),
                    ]),
                    None => record.extend(std::iter::repeat_n(String::new(), 5)),
                }
            }
        }
        w.write_record(record)?;
    }
    let bytes = w.into_inner().map_err(csv::IntoInnerError::into_error)?;
    Ok(String::from_utf8(bytes).unwrap_or_default())
}
