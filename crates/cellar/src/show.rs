//! How `cellar` shows bytes, times and entries, in text and in JSON.
//!
//! Keys and values are arbitrary bytes. They are shown escaped: printable
//! ASCII as itself, a backslash as `\\`, a double quote as `\"`, and every
//! other byte as `\xNN`. The escaping is lossless, so an escaped key can be
//! given back on the command line (`--from`, `start=`, ...) as shown.

use std::fmt::Write as _;

use cellardb::inspect::{Entry, EntryKind};
use serde_json::{Value, json};

/// `bytes` escaped as the module says.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

/// The bytes an escaped string stands for: the inverse of [`escape`].
/// Unescaped non-ASCII characters stand for their UTF-8 bytes.
///
/// # Errors
/// A message naming the bad escape.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match rest {
            [b'\\' | b'"', tail @ ..] => {
                out.push(rest[0]);
                rest = tail;
            }
            [b'x', h, l, tail @ ..] => {
                let hex = std::str::from_utf8(&[*h, *l]).ok().and_then(|s| u8::from_str_radix(s, 16).ok());
                out.push(hex.ok_or_else(|| format!("bad escape in {text:?}: \\x needs two hex digits"))?);
                rest = tail;
            }
            _ => return Err(format!("bad escape in {text:?}: use \\\\, \\\" or \\xNN")),
        }
    }
    Ok(out)
}

/// A timestamp in µs since the epoch as ISO 8601 UTC: milliseconds, or
/// microseconds when it has any.
pub fn iso_time(micros: i64) -> String {
    let Civil { date: (year, month, day), hour, minute, second, micros } = Civil::of(micros);
    let time = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    if micros % 1000 == 0 { format!("{time}.{:03}Z", micros / 1000) } else { format!("{time}.{micros:06}Z") }
}

/// A timestamp in µs since the epoch as `cbt read` prints it (Go's layout
/// `2006/01/02-15:04:05.000000`), in UTC where `cbt` uses the local zone.
pub fn cbt_time(micros: i64) -> String {
    let Civil { date: (year, month, day), hour, minute, second, micros } = Civil::of(micros);
    format!("{year:04}/{month:02}/{day:02}-{hour:02}:{minute:02}:{second:02}.{micros:06}")
}

/// An instant in UTC, by the calendar.
struct Civil {
    /// Year, month (1–12), day (1–31).
    date: (i64, u32, u32),
    hour: i64,
    minute: i64,
    second: i64,
    /// Microseconds into the second.
    micros: i64,
}

impl Civil {
    /// The instant `micros` µs after the epoch.
    fn of(micros: i64) -> Civil {
        let days = micros.div_euclid(86_400_000_000);
        let of_day = micros.rem_euclid(86_400_000_000);
        let date = cellardb_lab::workload::civil_from_days(days);
        let secs = of_day / 1_000_000;
        Civil { date, hour: secs / 3600, minute: secs / 60 % 60, second: secs % 60, micros: of_day % 1_000_000 }
    }
}

/// The name of an entry kind, as `--json` gives it.
pub fn kind_name(kind: EntryKind) -> &'static str {
    kind.name()
}

/// One entry as a line: `row family:qualifier @time = value` for a cell,
/// and the range or family a tombstone deletes.
pub fn entry_line(family: &str, e: &Entry) -> String {
    let k = &e.key;
    let (row, qualifier, time) = (escape(&k.row), escape(&k.qualifier), iso_time(k.timestamp));
    match k.kind {
        EntryKind::Put => format!("{row} {family}:{qualifier} @{time} = {}", escape(&e.value)),
        EntryKind::PutCountedOut => format!("{row} {family}:{qualifier} @{time} = {} (counted out)", escape(&e.value)),
        EntryKind::DeleteColumn => {
            let end = e.deleted_until().flatten().map_or("the end of time".to_owned(), iso_time);
            format!("{row} {family}:{qualifier} DELETE cells @{time} until {end}")
        }
        EntryKind::DeleteFamily => format!("{row} {family}: DELETE family"),
        // A kind of a later format version than this tool knows.
        kind => format!("{row} {family}:{qualifier} {} @{time}", kind.name()),
    }
}

/// One entry as a JSON object.
pub fn entry_json(family: &str, e: &Entry) -> Value {
    let k = &e.key;
    let mut v = json!({
        "row": escape(&k.row),
        "family": family,
        "qualifier": escape(&k.qualifier),
        "kind": kind_name(k.kind),
        "timestamp": k.timestamp,
        "time": iso_time(k.timestamp),
        "seq": k.seq,
    });
    if k.kind.is_cell() {
        v["value"] = escape(&e.value).into();
    } else if k.kind == EntryKind::DeleteColumn {
        v["delete_until"] = e.deleted_until().flatten().into();
    }
    v
}

/// `part / whole` with two decimals, or `-` when `whole` is zero.
pub fn ratio(part: u64, whole: u64) -> String {
    if whole == 0 { "-".into() } else { format!("{:.2}", part as f64 / whole as f64) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let shown = escape(&all);
        assert!(shown.is_ascii());
        assert_eq!(unescape(&shown).unwrap(), all);
        assert_eq!(escape(b"us-west2#1000\x00\"\\"), "us-west2#1000\\x00\\\"\\\\");
        assert!(unescape("\\q").is_err() && unescape("\\x4").is_err() && unescape("\\xzz").is_err());
    }

    #[test]
    fn iso_times_are_utc_with_milliseconds_or_microseconds() {
        assert_eq!(iso_time(1_614_556_800_000_000), "2021-03-01T00:00:00.000Z");
        assert_eq!(iso_time(1_614_643_199_999_000), "2021-03-01T23:59:59.999Z");
        assert_eq!(iso_time(951_782_400_000_001), "2000-02-29T00:00:00.000001Z");
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(-1000), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn cbt_times_always_have_microseconds() {
        // As `cbt read` printed these on the emulator, with TZ=UTC.
        assert_eq!(cbt_time(1_614_556_800_000_000), "2021/03/01-00:00:00.000000");
        assert_eq!(cbt_time(1_614_643_199_999_000), "2021/03/01-23:59:59.999000");
        assert_eq!(cbt_time(1000), "1970/01/01-00:00:00.001000");
        assert_eq!(cbt_time(951_782_400_000_001), "2000/02/29-00:00:00.000001");
        assert_eq!(cbt_time(-1), "1969/12/31-23:59:59.999999");
    }
}
