//! The few rules of Go's standard library that `cbt` output and arguments
//! follow, so that `cellar`'s `read`, `lookup` and `ls` parse and print as
//! `cbt` does: `strconv.ParseBool`, `ParseInt` (base 0) and `Atoi` with
//! their error texts, `strconv.Quote` (`%q`) for values, and `text/tabwriter`
//! as `cbt ls TABLE` configures it. Each is written from Go's documented
//! behaviour and checked against the real `cbt` (`docs/tools.md`).

use std::fmt::Write as _;

/// `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
///
/// # Errors
/// Go's message: `strconv.ParseBool: parsing "yes": invalid syntax`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("strconv.ParseBool: parsing {}: invalid syntax", quote(s.as_bytes()))),
    }
}

/// `strconv.ParseInt(s, 0, 64)`: a sign, then decimal, `0x` hex, `0o` or
/// `0` octal, or `0b` binary, with `_` between digits.
///
/// # Errors
/// Go's message, as `strconv.ParseInt: parsing "abc": invalid syntax`.
pub fn parse_int(s: &str) -> Result<i64, String> {
    parse_signed(s, true).map_err(|why| format!("strconv.ParseInt: parsing {}: {why}", quote(s.as_bytes())))
}

/// `strconv.Atoi`: a sign and decimal digits, within 64 bits.
///
/// # Errors
/// Go's message, as `strconv.Atoi: parsing "x": invalid syntax`.
pub fn atoi(s: &str) -> Result<i64, String> {
    parse_signed(s, false).map_err(|why| format!("strconv.Atoi: parsing {}: {why}", quote(s.as_bytes())))
}

const SYNTAX: &str = "invalid syntax";
const RANGE: &str = "value out of range";

fn parse_signed(s: &str, base0: bool) -> Result<i64, &'static str> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_unsigned(digits, base0)?;
    if base0 && digits.contains('_') && !underscores_ok(digits) {
        return Err(SYNTAX);
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude).ok_or(RANGE)
    } else {
        i64::try_from(magnitude).map_err(|_| RANGE)
    }
}

/// `ParseUint`'s digits: the base from the prefix when `base0`, else 10.
fn parse_unsigned(s: &str, base0: bool) -> Result<u64, &'static str> {
    let lower = |b: u8| b.to_ascii_lowercase();
    let b = s.as_bytes();
    let (base, digits) = match b {
        [] => return Err(SYNTAX),
        [b'0', p, _, ..] if base0 && lower(*p) == b'x' => (16, &b[2..]),
        [b'0', p, _, ..] if base0 && lower(*p) == b'o' => (8, &b[2..]),
        [b'0', p, _, ..] if base0 && lower(*p) == b'b' => (2, &b[2..]),
        [b'0', ..] if base0 => (8, &b[1..]),
        _ => (10, b),
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'_' if base0 => continue,
            b'0'..=b'9' => c - b'0',
            b'a'..=b'z' | b'A'..=b'Z' => lower(c) - b'a' + 10,
            _ => return Err(SYNTAX),
        };
        if u32::from(d) >= base {
            return Err(SYNTAX);
        }
        n = n.checked_mul(u64::from(base)).and_then(|n| n.checked_add(u64::from(d))).ok_or(RANGE)?;
    }
    Ok(n)
}

/// Go's `underscoreOK`: each `_` sits between digits (a base prefix counts
/// as one), and the number does not end in one.
fn underscores_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let lower = |i: usize| b[i].to_ascii_lowercase();
    let (mut i, mut saw, mut hex) = (0, b'^', false);
    if b.len() >= 2 && b[0] == b'0' && matches!(lower(1), b'b' | b'o' | b'x') {
        (i, saw, hex) = (2, b'0', lower(1) == b'x');
    }
    while i < b.len() {
        let c = lower(i);
        i += 1;
        if c.is_ascii_digit() || hex && (b'a'..=b'f').contains(&c) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `bytes` as Go's `%q` prints them (`strconv.Quote`): printable Unicode as
/// itself, `\"` and `\\`, `\a \b \f \n \r \t \v`, other control characters
/// as `\xNN`, a byte that is not UTF-8 as `\xNN`, and other unprintable
/// characters as `\uNNNN` or `\UNNNNNNNN`.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        chunk.valid().chars().for_each(|c| quote_char(c, &mut out));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

fn quote_char(c: char, out: &mut String) {
    match c {
        '"' | '\\' => {
            out.push('\\');
            out.push(c);
        }
        ' '..='~' => out.push(c),
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        '\0'..='\x1f' | '\x7f' => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        _ if is_print(c) => out.push(c),
        _ if u32::from(c) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
        _ => {
            let _ = write!(out, "\\U{:08x}", u32::from(c));
        }
    }
}

/// Go's `unicode.IsPrint` for a character beyond ASCII: a letter, mark,
/// number, punctuation or symbol. Rust's `escape_debug` leaves exactly
/// those unescaped when they do not begin the string (it escapes the
/// other categories: control, format, surrogate, private use, unassigned,
/// separators).
fn is_print(c: char) -> bool {
    let s: String = [' ', c].into_iter().collect();
    s.escape_debug().nth(1) == Some(c)
}

/// Lines of cells laid out as Go's `text/tabwriter` lays them out for
/// `cbt ls TABLE` (minimum width 10, tab width 8, padding 4, padded with
/// tabs): each cell but a line's last is followed by the tabs that bring it
/// to its column's width, rounded up to a tab stop. Every line has the same
/// number of cells.
pub fn tab_table(lines: &[Vec<String>]) -> String {
    const MIN_WIDTH: usize = 10;
    const TAB: usize = 8;
    const PADDING: usize = 4;
    let cells = lines.first().map_or(0, Vec::len);
    let width = |j: usize| {
        let widest = lines.iter().map(|l| l[j].chars().count() + PADDING).max().unwrap_or(0);
        widest.max(MIN_WIDTH).div_ceil(TAB) * TAB
    };
    let widths: Vec<usize> = (0..cells.saturating_sub(1)).map(width).collect();
    let mut out = String::new();
    for line in lines {
        for (cell, &w) in line.iter().zip(&widths) {
            out.push_str(cell);
            out.push_str(&"\t".repeat((w - cell.chars().count()).div_ceil(TAB)));
        }
        out.push_str(line.last().map_or("", String::as_str));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_go_s() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Ok(true));
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Ok(false));
        }
        assert_eq!(parse_bool("yes").unwrap_err(), "strconv.ParseBool: parsing \"yes\": invalid syntax");
        assert!(parse_bool("tRUE").is_err() && parse_bool("").is_err());
    }

    #[test]
    fn integers_take_go_s_base_prefixes_and_underscores() {
        let ok = |s: &str, n: i64| assert_eq!(parse_int(s), Ok(n), "{s}");
        for (s, n) in [("10", 10), ("-3", -3), ("+7", 7), ("0x1F", 31), ("0o17", 15), ("017", 15), ("0b101", 5)] {
            ok(s, n);
        }
        for (s, n) in [("0", 0), ("1_000", 1000), ("0x_ff", 255), ("-9223372036854775808", i64::MIN)] {
            ok(s, n);
        }
        let bad = |s: &str, why: &str| {
            assert_eq!(parse_int(s).unwrap_err(), format!("strconv.ParseInt: parsing {}: {why}", quote(s.as_bytes())));
        };
        for s in ["", "abc", "0x", "08", "1__0", "_1", "1_", "0b2", "1e3", " 1"] {
            bad(s, SYNTAX);
        }
        bad("9223372036854775808", RANGE);
        bad("99999999999999999999", RANGE);
        assert_eq!(atoi("+12"), Ok(12));
        assert_eq!(atoi("0x10").unwrap_err(), "strconv.Atoi: parsing \"0x10\": invalid syntax");
        assert!(atoi("1_0").is_err() && atoi("010") == Ok(10));
    }

    #[test]
    fn quoting_is_go_s_percent_q() {
        let q = |b: &[u8]| quote(b);
        assert_eq!(q(b"bin\x01\"q\\\xff\xe2\x82\xac"), "\"bin\\x01\\\"q\\\\\\xff\u{20ac}\"");
        assert_eq!(q(b"\x07\x08\x0c\n\r\t\x0b\x00\x7f"), "\"\\a\\b\\f\\n\\r\\t\\v\\x00\\x7f\"");
        assert_eq!(
            q("\u{a0}\u{200b}\u{301}é\u{1f600}\u{e000}".as_bytes()),
            "\"\\u00a0\\u200b\u{301}é\u{1f600}\\ue000\""
        );
        assert_eq!(q(b"\xe2\x82A\xed\xa0\x80"), "\"\\xe2\\x82A\\xed\\xa0\\x80\"");
        assert_eq!(q("\u{10ffff}".as_bytes()), "\"\\U0010ffff\"");
    }

    #[test]
    fn tables_pad_with_tabs_as_cbt_ls_does() {
        // `cbt ls` on the emulator, for families n (never), u and v.
        let lines = [
            ["Family Name", "GC Policy", "Value Type"],
            ["-----------", "---------", "----------"],
            ["n", "", "{}"],
            ["u", "(versions() > 1 || age() > 2h)", "{}"],
            ["v", "versions() > 3", "{}"],
        ];
        let lines: Vec<Vec<String>> = lines.iter().map(|l| l.iter().map(ToString::to_string).collect()).collect();
        let expected = "Family Name\tGC Policy\t\t\t\tValue Type\n-----------\t---------\t\t\t\t----------\n\
                        n\t\t\t\t\t\t\t{}\nu\t\t(versions() > 1 || age() > 2h)\t\t{}\nv\t\tversions() > 3\t\t\t\t{}\n";
        assert_eq!(tab_table(&lines), expected);
    }
}
