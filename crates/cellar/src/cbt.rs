//! The commands on a database directory, named and shaped as `cbt`'s:
//! `ls`, `read`, `lookup`, `count`, `stats`. Each opens the database
//! read-only (`Options::open_read_only`): it takes no lock and changes
//! nothing, so it runs beside a live writer and sees the data as of its
//! start.

use std::io::Write;
use std::path::Path;

use cellardb::{Db, Filter, Row, RowRange, RowSet};
use serde_json::json;

use crate::show::{escape, iso_time, ratio, unescape};
use crate::{Failure, Out, Outcome};

fn open(dir: &Path) -> Result<Db, Failure> {
    if !dir.is_dir() {
        return Err(Failure::NotFound(format!("no database directory {}", dir.display())));
    }
    Ok(Db::open_read_only(dir)?)
}

/// `ls`: the tables; `ls TABLE`: its families and GC rules.
pub fn ls(dir: &Path, table: Option<&str>, out: &mut Out) -> Outcome {
    let db = open(dir)?;
    match table {
        None => {
            for name in db.list_tables()? {
                writeln!(out, "{name}")?;
            }
        }
        Some(table) => {
            let schema = db.table_schema(table)?;
            writeln!(out, "{:<24} GC Policy", "Family Name")?;
            writeln!(out, "{:<24} ---------", "-----------")?;
            for f in schema.families {
                match f.aggregate {
                    None => writeln!(out, "{:<24} {}", f.name, f.gc_rule)?,
                    Some(agg) => writeln!(out, "{:<24} {} (aggregate: int64 {agg})", f.name, f.gc_rule)?,
                }
            }
        }
    }
    Ok(())
}

/// The `key=value` arguments of `read` and `lookup`.
#[derive(Default)]
struct ReadArgs {
    prefix: Option<Vec<u8>>,
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    count: Option<usize>,
    columns: Vec<ColumnSpec>,
}

/// One `family:qualifier` of `columns=`: whole-string regexes, either may be
/// empty (any).
struct ColumnSpec {
    family: Option<String>,
    qualifier: Option<String>,
}

impl ReadArgs {
    fn parse(args: &[String], allowed: &[&str]) -> Result<ReadArgs, Failure> {
        let mut parsed = ReadArgs::default();
        for arg in args {
            let usage = |what: &str| {
                Failure::Usage(format!("{what} in {arg:?}: expected one of {}", allowed.join("=, ") + "="))
            };
            let (key, value) = arg.split_once('=').ok_or_else(|| usage("not key=value"))?;
            if !allowed.contains(&key) {
                return Err(usage("unknown argument"));
            }
            let bytes = || unescape(value).map_err(Failure::Usage);
            match key {
                "prefix" => parsed.prefix = Some(bytes()?),
                "start" => parsed.start = Some(bytes()?),
                "end" => parsed.end = Some(bytes()?),
                "count" => {
                    parsed.count =
                        Some(value.parse().map_err(|_| Failure::Usage(format!("count={value}: not a row count")))?);
                }
                _ => parsed.columns = parse_columns(value)?,
            }
        }
        if parsed.prefix.is_some() && (parsed.start.is_some() || parsed.end.is_some()) {
            return Err(Failure::Usage("prefix= cannot be combined with start= or end=".into()));
        }
        Ok(parsed)
    }

    fn row_set(&self) -> RowSet {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let range = match (&self.prefix, &self.start, &self.end) {
            (Some(p), _, _) => RowRange::prefix(p),
            (None, start, end) => {
                RowRange::new(start.as_ref().map_or(Unbounded, Included), end.as_ref().map_or(Unbounded, Excluded))
            }
        };
        RowSet::from(range)
    }
}

fn parse_columns(value: &str) -> Result<Vec<ColumnSpec>, Failure> {
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let specs: Vec<ColumnSpec> = value
        .split(',')
        .map(|spec| match spec.split_once(':') {
            Some((f, q)) => ColumnSpec { family: non_empty(f), qualifier: non_empty(q) },
            None => ColumnSpec { family: non_empty(spec), qualifier: None },
        })
        .collect();
    for spec in &specs {
        for pattern in spec.family.iter().chain(&spec.qualifier) {
            whole_match(pattern)?;
        }
    }
    Ok(specs)
}

/// Checks `pattern` before the read, for a usage error rather than a
/// failed read.
fn whole_match(pattern: &str) -> Result<(), Failure> {
    Filter::column_qualifier_regex(pattern).validate().map_err(Failure::from)
}

/// The filter of `columns=`: one spec is a chain of a family and a
/// qualifier regex; several are their interleave, as `cbt` builds them.
fn columns_filter(specs: &[ColumnSpec]) -> Filter {
    let one = |s: &ColumnSpec| {
        let f = s.family.as_deref().map(Filter::family_name_regex);
        let q = s.qualifier.as_deref().map(Filter::column_qualifier_regex);
        Filter::chain(f.into_iter().chain(q))
    };
    match specs {
        [] => Filter::pass_all(),
        [spec] => one(spec),
        _ => Filter::interleave(specs.iter().map(one)),
    }
}

/// `read TABLE [prefix=] [start=] [end=] [count=] [columns=]`.
pub fn read(dir: &Path, table: &str, args: &[String], json: bool, out: &mut Out) -> Outcome {
    let args = ReadArgs::parse(args, &["prefix", "start", "end", "count", "columns"])?;
    let db = open(dir)?;
    let t = db.table(table)?;
    let rows = t.read_rows(args.row_set(), &columns_filter(&args.columns));
    for row in rows.limit(args.count.unwrap_or(usize::MAX)) {
        print_row(&row?, json, out)?;
    }
    Ok(())
}

/// `lookup TABLE ROW [columns=]`.
pub fn lookup(dir: &Path, table: &str, row: &str, args: &[String], json: bool, out: &mut Out) -> Outcome {
    let args = ReadArgs::parse(args, &["columns"])?;
    let key = unescape(row).map_err(Failure::Usage)?;
    let db = open(dir)?;
    let found = db.table(table)?.read_row(&key, &columns_filter(&args.columns))?;
    match found {
        Some(row) => print_row(&row, json, out),
        None => Err(Failure::NotFound(format!("row \"{}\" not found in table {table}", escape(&key)))),
    }
}

/// A row as `cbt` prints it (a rule, the key, then per cell the column and
/// time, and the quoted value), or as one JSON object.
fn print_row(row: &Row, json: bool, out: &mut Out) -> Outcome {
    if json {
        let cells: Vec<_> = row
            .cells()
            .map(|(family, qualifier, c)| {
                json!({"family": family, "qualifier": escape(qualifier), "timestamp": c.timestamp.micros(),
                       "time": iso_time(c.timestamp.micros()), "value": escape(&c.value), "labels": c.labels})
            })
            .collect();
        writeln!(out, "{}", json!({"row": escape(&row.key), "cells": cells}))?;
        return Ok(());
    }
    writeln!(out, "{}", "-".repeat(40))?;
    writeln!(out, "{}", escape(&row.key))?;
    for (family, qualifier, cell) in row.cells() {
        let column = format!("{family}:{}", escape(qualifier));
        writeln!(out, "  {column:<40} @ {}", iso_time(cell.timestamp.micros()))?;
        writeln!(out, "    \"{}\"", escape(&cell.value))?;
    }
    Ok(())
}

/// `count TABLE`: the number of rows.
pub fn count(dir: &Path, table: &str, out: &mut Out) -> Outcome {
    let db = open(dir)?;
    let t = db.table(table)?;
    let mut rows = 0u64;
    for row in t.read_rows(RowSet::all(), &Filter::pass_all()) {
        row?;
        rows += 1;
    }
    writeln!(out, "{rows}")?;
    Ok(())
}

/// `stats`: per table, family and level, files, bytes, logical bytes and
/// compression; then what the logs hold that is not in SSTables yet.
pub fn stats(dir: &Path, json: bool, out: &mut Out) -> Outcome {
    let db = open(dir)?;
    let stats = db.stats()?;
    let rows: Vec<[String; 7]> = stats
        .tables
        .iter()
        .flat_map(|t| t.families.iter().map(move |f| (t, f)))
        .flat_map(|(t, f)| f.levels.iter().map(move |l| (t, f, l)))
        .map(|(t, f, l)| {
            [
                t.name.clone(),
                f.name.clone(),
                format!("L{}", l.level),
                l.files.to_string(),
                l.bytes.to_string(),
                l.logical_bytes.to_string(),
                ratio(l.logical_bytes, l.bytes),
            ]
        })
        .collect();
    if json {
        for r in &rows {
            let number = |i: usize| r[i].trim_start_matches('L').parse::<u64>().unwrap_or(0);
            let v = json!({"table": r[0], "family": r[1], "level": number(2), "files": number(3), "bytes": number(4),
                           "logical_bytes": number(5), "compression_ratio": number(5) as f64 / number(4).max(1) as f64});
            writeln!(out, "{v}")?;
        }
    } else {
        let header = ["table", "family", "level", "files", "bytes", "logical bytes", "logical/disk"].map(String::from);
        let width = |i: usize| rows.iter().chain([&header]).map(|r| r[i].len()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..7).map(width).collect();
        for r in std::iter::once(&header).chain(&rows) {
            let (t, f) = (&r[0], &r[1]);
            let numbers: Vec<String> = (2..7).map(|i| format!("{:>w$}", r[i], w = widths[i])).collect();
            writeln!(out, "{t:<tw$}  {f:<fw$}  {}", numbers.join("  "), tw = widths[0], fw = widths[1])?;
        }
    }
    let r = &stats.recovery;
    if json {
        let v = json!({"memtable_bytes": stats.memtable_bytes, "logs": r.logs_replayed, "log_records": r.records_replayed,
                       "last_sequence": stats.last_sequence});
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "not yet in SSTables: {} records in {} logs ({} bytes in memory); last sequence {}",
            r.records_replayed, r.logs_replayed, stats.memtable_bytes, stats.last_sequence
        )?;
    }
    Ok(())
}
