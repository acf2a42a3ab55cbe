//! The `key=value` arguments of `read`, `lookup` and `count`, parsed as
//! `cbt` parses them, with its error messages, so that a command line that
//! works with `cbt` works here and one `cbt` refuses is refused in the same
//! words. As in `cbt`: a key given twice takes its last value, an empty
//! value is no value, numbers and booleans are Go's (`crate::go`), and the
//! filters are chained in `cbt`'s order (cells per column, row key regex,
//! columns), then the value stripped for `keys-only=true`.
//!
//! Row keys (`start=`, `end=`, `prefix=`) are given escaped, as `cellar`
//! prints them (`crate::show`), where `cbt` takes raw bytes from the shell.

use std::collections::HashMap;

use cellardb::{Filter, RowRange, RowSet};

use crate::Failure;
use crate::go::{atoi, parse_bool, parse_int, quote};
use crate::show::unescape;

/// The keys each command takes.
pub const READ_KEYS: &[&str] =
    &["start", "end", "prefix", "regex", "columns", "count", "cells-per-column", "keys-only", "reversed", "limit"];
/// The keys of `lookup`.
pub const LOOKUP_KEYS: &[&str] = &["columns", "cells-per-column", "keys-only"];
/// The keys of `count`.
pub const COUNT_KEYS: &[&str] = &["prefix"];

/// What a read reads: rows, how many, in which order, and its filter.
pub struct ReadArgs {
    /// The rows: a prefix, a range or all.
    pub rows: RowSet,
    /// `count=`: at most this many rows (0: none, as in `cbt`).
    pub count: Option<usize>,
    /// `reversed=true`: in descending key order.
    pub reversed: bool,
    /// The chain of the filter arguments, checked.
    pub filter: Filter,
}

impl ReadArgs {
    /// Parses `args`, which may use the keys in `valid`.
    ///
    /// # Errors
    /// A usage failure with `cbt`'s message for a malformed argument, and
    /// the engine's for a filter it refuses (an invalid regex).
    pub fn parse(args: &[String], valid: &[&str]) -> Result<ReadArgs, Failure> {
        let kv = key_values(args, valid)?;
        if kv.contains_key("limit") {
            return Err(usage("Unknown arg key 'limit'; did you mean 'end'?"));
        }
        let parsed = ReadArgs {
            rows: row_set(&kv)?,
            count: kv.get("count").map(|c| row_count(c)).transpose()?,
            reversed: kv.get("reversed").map(|b| parse_bool(b)).transpose().map_err(Failure::Usage)?.unwrap_or(false),
            filter: filter(&kv)?,
        };
        parsed.filter.validate()?;
        Ok(parsed)
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure::Usage(message.into())
}

/// `cbt`'s `parseArgs`: `key=value` pairs with keys in `valid`, the last
/// of a key winning; then empty values dropped, as `cbt` ignores them.
fn key_values<'a>(args: &'a [String], valid: &[&str]) -> Result<HashMap<&'a str, &'a str>, Failure> {
    let mut kv = HashMap::new();
    for arg in args {
        let (key, value) = arg.split_once('=').ok_or_else(|| usage(format!("bad arg {}", quote(arg.as_bytes()))))?;
        if !valid.contains(&key) {
            return Err(usage(format!("unknown arg key {}", quote(key.as_bytes()))));
        }
        kv.insert(key, value);
    }
    kv.retain(|_, v| !v.is_empty());
    Ok(kv)
}

/// `prefix=`, or `start=` and `end=`, or every row.
fn row_set(kv: &HashMap<&str, &str>) -> Result<RowSet, Failure> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let key = |k: &str| kv.get(k).map(|v| unescape(v).map_err(Failure::Usage)).transpose();
    let (prefix, start, end) = (key("prefix")?, key("start")?, key("end")?);
    let range = match (prefix, start, end) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(usage("\"start\"/\"end\" may not be mixed with \"prefix\""));
        }
        (Some(p), None, None) => RowRange::prefix(p),
        (None, start, end) => RowRange::new(start.map_or(Unbounded, Included), end.map_or(Unbounded, Excluded)),
    };
    Ok(RowSet::from(range))
}

/// `count=`: Go's `ParseInt` (base 0), not negative.
fn row_count(value: &str) -> Result<usize, Failure> {
    let n = parse_int(value).map_err(|e| usage(format!("Bad count {}: {e}", quote(value.as_bytes()))))?;
    usize::try_from(n).map_err(|_| usage("Reading rows: bigtable: row limit cannot be negative"))
}

/// The chain of `cells-per-column=`, `regex=`, `columns=` and `keys-only=`.
fn filter(kv: &HashMap<&str, &str>) -> Result<Filter, Failure> {
    let mut chain = Vec::new();
    if let Some(n) = kv.get("cells-per-column") {
        chain.push(Filter::cells_per_column_limit(cells_per_column(n)?));
    }
    if let Some(regex) = kv.get("regex") {
        chain.push(Filter::row_key_regex(regex));
    }
    if let Some(columns) = kv.get("columns") {
        chain.push(columns_filter(columns)?);
    }
    if kv.get("keys-only").map(|b| parse_bool(b)).transpose().map_err(Failure::Usage)? == Some(true) {
        chain.push(Filter::strip_value());
    }
    Ok(match chain.len() {
        0 => Filter::pass_all(),
        1 => chain.remove(0),
        _ => Filter::chain(chain),
    })
}

/// `cells-per-column=`: Go's `Atoi`. Bigtable refuses a limit below 1
/// (0 here, which the filter's check reports); its limit is 32 bits.
fn cells_per_column(value: &str) -> Result<u32, Failure> {
    let bad = |e: String| usage(format!("Bad number of cells per column {}: {e}", quote(value.as_bytes())));
    let n = atoi(value).map_err(bad)?;
    if n > i64::from(i32::MAX) {
        return Err(bad("value out of range".into()));
    }
    Ok(u32::try_from(n).unwrap_or(0))
}

/// `columns=` as `cbt` builds it: comma-separated specs (empty ones
/// skipped), each `QUALIFIER`, `FAMILY:`, `:QUALIFIER` or
/// `FAMILY:QUALIFIER`, whole-string regexes; several are interleaved.
fn columns_filter(value: &str) -> Result<Filter, Failure> {
    let mut specs: Vec<Filter> =
        value.split(',').filter(|s| !s.is_empty()).map(column_filter).collect::<Result<_, _>>()?;
    Ok(match specs.len() {
        0 => Filter::pass_all(),
        1 => specs.remove(0),
        _ => Filter::interleave(specs),
    })
}

fn column_filter(spec: &str) -> Result<Filter, Failure> {
    let parts: Vec<&str> = spec.split(':').collect();
    match parts[..] {
        [family, _] if spec.ends_with(':') => Ok(Filter::family_name_regex(family)),
        [qualifier] | ["", qualifier] => Ok(Filter::column_qualifier_regex(qualifier)),
        [family, qualifier] => {
            Ok(Filter::chain([Filter::family_name_regex(family), Filter::column_qualifier_regex(qualifier)]))
        }
        _ => Err(usage(format!("bad format for column {}", quote(spec.as_bytes())))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ReadArgs, String> {
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        ReadArgs::parse(&args, READ_KEYS).map_err(|f| match f {
            Failure::Usage(m) => m,
            _ => panic!("not a usage failure"),
        })
    }

    #[test]
    fn malformed_arguments_get_cbt_s_messages() {
        // Each message as `cbt read` 1.23.2 printed it on the emulator.
        let err = |args: &[&str]| parse(args).err().unwrap();
        assert_eq!(err(&["noequals"]), "bad arg \"noequals\"");
        assert_eq!(err(&["bogus=1"]), "unknown arg key \"bogus\"");
        assert_eq!(err(&["limit=3"]), "Unknown arg key 'limit'; did you mean 'end'?");
        assert_eq!(err(&["prefix=r", "start=a"]), "\"start\"/\"end\" may not be mixed with \"prefix\"");
        assert_eq!(err(&["count=abc"]), "Bad count \"abc\": strconv.ParseInt: parsing \"abc\": invalid syntax");
        assert_eq!(err(&["count=-1"]), "Reading rows: bigtable: row limit cannot be negative");
        assert_eq!(
            err(&["cells-per-column=x"]),
            "Bad number of cells per column \"x\": strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(err(&["keys-only=yes"]), "strconv.ParseBool: parsing \"yes\": invalid syntax");
        assert_eq!(err(&["reversed=maybe"]), "strconv.ParseBool: parsing \"maybe\": invalid syntax");
        assert_eq!(err(&["columns=a:b:c"]), "bad format for column \"a:b:c\"");
        assert!(err(&["regex=("]).contains("invalid regex"));
        assert!(err(&["cells-per-column=0"]).contains("must be > 0"));
    }

    #[test]
    fn values_are_read_as_cbt_reads_them() {
        assert_eq!(parse(&["count=0x2"]).unwrap().count, Some(2));
        assert_eq!(parse(&["count=1", "count=1_0"]).unwrap().count, Some(10), "the last wins");
        assert_eq!(parse(&["count=0"]).unwrap().count, Some(0));
        assert!(parse(&["count=", "keys-only=", "reversed=", "prefix=", "start=a"]).is_ok(), "empty is absent");
        assert!(parse(&["reversed=T"]).unwrap().reversed);
        assert!(!parse(&["reversed=0"]).unwrap().reversed);
        assert!(matches!(parse(&["columns=,cf:,"]).unwrap().filter, Filter::FamilyNameRegex(_)));
        assert!(matches!(parse(&["columns=q"]).unwrap().filter, Filter::ColumnQualifierRegex(_)));
        assert!(matches!(parse(&["columns=a,b"]).unwrap().filter, Filter::Interleave(_)));
        assert!(matches!(parse(&["keys-only=true", "regex=r.*"]).unwrap().filter, Filter::Chain(f) if f.len() == 2));
    }
}
