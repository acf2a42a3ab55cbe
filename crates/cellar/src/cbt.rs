//! The commands on a database directory, named, argued and printed as
//! `cbt`'s (`cbt` 1.23.2, checked on Bigtable's emulator): `ls`, `read`,
//! `lookup`, `count`, `stats`. Each opens the database read-only
//! (`Options::open_read_only`): it takes no lock and changes nothing, so it
//! runs beside a live writer and sees the data as of its start.
//!
//! Where `cellar` parts from `cbt`, it is to stay lossless and scriptable:
//! row keys and qualifiers are escaped (`crate::show`), times are UTC, a
//! missing row is exit code 3, and `--json` gives one object per line.

use std::io::Write;
use std::path::Path;

use cellardb::{Aggregate, Db, FamilySchema, Filter, GcRule, Row};
use serde_json::json;

use crate::cbt_args::{COUNT_KEYS, LOOKUP_KEYS, READ_KEYS, ReadArgs};
use crate::go::{quote, tab_table};
use crate::show::{cbt_time, escape, iso_time, ratio, unescape};
use crate::{Failure, Out, Outcome};

fn open(dir: &Path) -> Result<Db, Failure> {
    if !dir.is_dir() {
        return Err(Failure::NotFound(format!("no database directory {}", dir.display())));
    }
    Db::open_read_only(dir).map_err(|e| match e {
        // The engine's answer for a directory without a manifest.
        cellardb::Error::NoDatabase { .. } => {
            Failure::NotFound(format!("{} is not a cellardb database (no MANIFEST)", dir.display()))
        }
        e => Failure::from(e),
    })
}

/// `ls`: the tables; `ls TABLE`: its families, GC policies and value types.
pub fn ls(dir: &Path, table: Option<&str>, json: bool, out: &mut Out) -> Outcome {
    let db = open(dir)?;
    let Some(table) = table else {
        for name in db.list_tables()? {
            if json {
                writeln!(out, "{}", json!({"table": name}))?;
            } else {
                writeln!(out, "{name}")?;
            }
        }
        return Ok(());
    };
    let families = db.table_schema(table)?.families;
    if json {
        for f in &families {
            let v = json!({"family": f.name, "gc_policy": gc_policy(&f.gc_rule), "aggregate": f.aggregate.map(|a| a.to_string())});
            writeln!(out, "{v}")?;
        }
        return Ok(());
    }
    let header = [["Family Name", "GC Policy", "Value Type"], ["-----------", "---------", "----------"]];
    let mut lines: Vec<Vec<String>> = header.iter().map(|l| l.map(String::from).to_vec()).collect();
    lines.extend(
        families.iter().map(|f: &FamilySchema| vec![f.name.clone(), gc_policy(&f.gc_rule), value_type(f.aggregate)]),
    );
    write!(out, "{}", tab_table(&lines))?;
    Ok(())
}

/// A GC rule as `cbt ls` shows it (Go's `bigtable.GCRuleToString`): ages
/// in whole days, hours or minutes, else in µs; compound rules in
/// parentheses.
fn gc_policy(rule: &GcRule) -> String {
    let join = |rules: &[GcRule], op: &str| format!("({})", rules.iter().map(gc_policy).collect::<Vec<_>>().join(op));
    match rule {
        GcRule::None => "<never>".into(),
        GcRule::MaxVersions(n) => format!("versions() > {n}"),
        GcRule::MaxAge(age) => {
            let secs = age.as_secs();
            match [(86_400, "d"), (3_600, "h"), (60, "m")].iter().find(|(unit, _)| secs % unit == 0) {
                Some((unit, suffix)) => format!("age() > {}{suffix}", secs / unit),
                None => format!("age() > {}", u128::from(secs) * 1_000_000),
            }
        }
        GcRule::Union(rules) => join(rules, " || "),
        GcRule::Intersection(rules) => join(rules, " && "),
    }
}

/// A family's value type as `cbt ls` shows it: Bigtable's `Type` in
/// protobuf JSON, `{}` for plain bytes.
fn value_type(aggregate: Option<Aggregate>) -> String {
    match aggregate {
        None => "{}".into(),
        Some(a) => {
            let int64 = r#"{"int64Type":{"encoding":{"bigEndianBytes":{}}}}"#;
            format!(r#"{{"aggregateType":{{"inputType":{int64},"{a}":{{}}}}}}"#)
        }
    }
}

/// `read TABLE [start=] [end=] [prefix=] [regex=] [columns=] [count=]
/// [cells-per-column=] [keys-only=] [reversed=]`.
pub fn read(dir: &Path, table: &str, args: &[String], json: bool, out: &mut Out) -> Outcome {
    let args = ReadArgs::parse(args, READ_KEYS)?;
    let db = open(dir)?;
    let mut rows = db.table(table)?.read_rows(args.rows, &args.filter);
    if args.reversed {
        rows = rows.reversed();
    }
    for row in rows.take(args.count.unwrap_or(usize::MAX)) {
        print_row(&row?, json, out)?;
    }
    Ok(())
}

/// `lookup TABLE ROW [columns=] [cells-per-column=] [keys-only=]`.
pub fn lookup(dir: &Path, table: &str, row: &str, args: &[String], json: bool, out: &mut Out) -> Outcome {
    let args = ReadArgs::parse(args, LOOKUP_KEYS)?;
    let key = unescape(row).map_err(Failure::Usage)?;
    let db = open(dir)?;
    let found = db.table(table)?.read_row(&key, &args.filter)?;
    match found {
        Some(row) => print_row(&row, json, out),
        None => Err(Failure::NotFound(format!("row \"{}\" not found in table {table}", escape(&key)))),
    }
}

/// A row as `cbt` prints it (a rule, the key, per cell the column and time
/// and the Go-quoted value, then an empty line), or as one JSON object.
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
        writeln!(out, "  {column:<40} @ {}", cbt_time(cell.timestamp.micros()))?;
        writeln!(out, "    {}", quote(&cell.value))?;
    }
    writeln!(out)?;
    Ok(())
}

/// `count TABLE [prefix=]`: the number of rows.
pub fn count(dir: &Path, table: &str, args: &[String], json: bool, out: &mut Out) -> Outcome {
    let args = ReadArgs::parse(args, COUNT_KEYS)?;
    let db = open(dir)?;
    let t = db.table(table)?;
    let any_cell = Filter::chain([Filter::cells_per_row_limit(1), Filter::strip_value()]);
    let mut rows = 0u64;
    for row in t.read_rows(args.rows, &any_cell) {
        row?;
        rows += 1;
    }
    if json {
        writeln!(out, "{}", json!({"table": table, "rows": rows}))?;
    } else {
        writeln!(out, "{rows}")?;
    }
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
