//! Regular expressions as Bigtable applies them: RE2 syntax, matched against
//! raw bytes, the whole string.
//!
//! Bigtable's filters take RE2 patterns over bytes that need not be UTF-8,
//! and match them byte by byte, as Latin-1 (the emulator's
//! `rsc.io/binaryregexp` does the same): `.` is any byte but `\n`, `\C` is
//! any byte, `\xff` is the byte 0xff. The `regex` crate in its byte mode
//! (Unicode off) matches that way but spells some of RE2 differently, so a
//! pattern is first translated:
//!
//! - `\C` (any byte) becomes `(?s-u:.)`;
//! - `\Q...\E` (a literal; to the end of the pattern without `\E`) becomes
//!   the literal, escaped;
//! - `\pN`, `\PN`, `\p{Greek}`, `\P{Greek}`, `\p{^Greek}` (Unicode classes)
//!   become the bytes 0x00–0xff whose Latin-1 character is (or is not) in
//!   the class, inside or outside a bracketed class;
//! - octal escapes `\0`, `\12`, `\141` are read as RE2 reads them (one to
//!   three octal digits, the first not `1`–`7` alone, which RE2 refuses as
//!   a backreference).
//!
//! - a pattern byte from 0x80 up (any byte: a pattern need not be UTF-8)
//!   is the Latin-1 character of that byte, so it becomes `\xNN`, the byte
//!   itself (and a backslash before it is refused, as RE2 refuses it).
//!
//! Everything else is passed through, escapes included, to the `regex`
//! crate, whose syntax is RE2's for the rest.

use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};

/// A regular expression as Bigtable applies it: RE2 syntax over raw bytes,
/// matching the whole string.
///
/// It compiles when first used, or when the filter holding it is
/// validated, which gives each of the filter's patterns its share of one
/// budget: a filter of a thousand patterns cannot take a thousand times one
/// pattern's memory.
#[derive(Debug, Clone)]
pub struct BytesRegex {
    source: Vec<u8>,
    compiled: OnceLock<std::result::Result<Matcher, String>>,
}

/// The memory a compiled pattern may take: its program, and the cache its
/// matcher fills as it runs (per thread that matches it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegexLimits {
    program: usize,
    cache: usize,
}

impl RegexLimits {
    /// One pattern's limits: the `regex` crate's defaults, close to RE2's
    /// own budget of 8 MiB per pattern.
    pub(crate) const ONE: RegexLimits = RegexLimits { program: 10 << 20, cache: 2 << 20 };

    /// What all of a filter's compiled patterns may take together.
    pub(crate) const FILTER: RegexLimits = RegexLimits { program: 64 << 20, cache: 16 << 20 };

    /// Each pattern's share when `n` patterns compile in one filter: the
    /// filter's budget divided among them, at most [`RegexLimits::ONE`].
    pub(crate) fn shared(n: usize) -> RegexLimits {
        let n = n.max(1);
        RegexLimits {
            program: (Self::FILTER.program / n).min(Self::ONE.program),
            cache: (Self::FILTER.cache / n).min(Self::ONE.cache),
        }
    }
}

/// How a valid pattern is matched.
#[derive(Debug, Clone)]
enum Matcher {
    /// A pattern with no metacharacter matches itself only: compared as
    /// bytes, it costs no compilation (a filter naming one column, the
    /// commonest, is built on every read).
    Literal,
    /// Anything else, compiled and anchored.
    Regex(Regex),
}

impl BytesRegex {
    pub(crate) fn new(source: &[u8]) -> Self {
        BytesRegex { source: source.to_vec(), compiled: OnceLock::new() }
    }

    /// Compiles the pattern within `limits`, unless it has compiled
    /// already. Whether it compiles is then settled.
    pub(crate) fn compile_within(&self, limits: RegexLimits) {
        self.compiled.get_or_init(|| compile(&self.source, limits));
    }

    /// The pattern compiled, within one pattern's limits if nothing
    /// compiled it before.
    fn compiled(&self) -> &std::result::Result<Matcher, String> {
        self.compiled.get_or_init(|| compile(&self.source, RegexLimits::ONE))
    }

    /// Whether the pattern matches the whole of `haystack` (never, for a
    /// pattern that does not compile: filters are validated first).
    pub(crate) fn is_match(&self, haystack: &[u8]) -> bool {
        match self.compiled() {
            Ok(Matcher::Literal) => haystack == self.source.as_slice(),
            Ok(Matcher::Regex(r)) => r.is_match(haystack),
            Err(_) => false,
        }
    }

    /// Why the pattern does not compile, if it does not.
    pub(crate) fn error(&self) -> Option<&str> {
        self.compiled().as_ref().err().map(String::as_str)
    }

    /// Whether the pattern is compiled to a program (it is not a plain
    /// literal, which is compared as bytes).
    pub(crate) fn needs_program(&self) -> bool {
        !is_literal(&self.source)
    }

    /// The pattern as given.
    pub fn as_bytes(&self) -> &[u8] {
        &self.source
    }

    /// The one string the pattern matches, if it is a plain literal (no
    /// metacharacter at all).
    pub(crate) fn literal(&self) -> Option<&[u8]> {
        is_literal(&self.source).then_some(self.source.as_slice())
    }
}

/// `source` compiled within `limits`: a literal as itself, anything else
/// translated, checked alone, then anchored.
fn compile(source: &[u8], limits: RegexLimits) -> std::result::Result<Matcher, String> {
    if is_literal(source) {
        return Ok(Matcher::Literal);
    }
    let build = |pattern: &str| {
        RegexBuilder::new(pattern)
            .unicode(false)
            .octal(true)
            .size_limit(limits.program)
            .dfa_size_limit(limits.cache)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) if limits != RegexLimits::ONE => {
                    format!(
                        "{e} (this pattern's share of the {} MiB a filter's patterns share)",
                        RegexLimits::FILTER.program >> 20
                    )
                }
                e => e.to_string(),
            })
    };
    // The pattern must be valid on its own: wrapping an invalid one such
    // as `a)|(b` in the anchors could make it valid, and wrong.
    translate(source)
        .and_then(|translated| build(&translated).and_then(|_| build(&format!("^(?:{translated})$"))))
        .map(Matcher::Regex)
}

/// Whether `pattern` holds no metacharacter, so matches itself only.
fn is_literal(pattern: &[u8]) -> bool {
    const META: &[u8] = b"\\.+*?()|[]{}^$";
    !pattern.iter().any(|b| META.contains(b))
}

impl PartialEq for BytesRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// `pattern` in the `regex` crate's byte-mode syntax (see the module).
///
/// # Errors
/// A message for RE2 syntax that is invalid: an unknown Unicode class, a
/// backreference.
fn translate(pattern: &[u8]) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    // Each byte as its Latin-1 character.
    let latin1: String = pattern.iter().map(|&b| char::from(b)).collect();
    let mut chars = latin1.chars().peekable();
    // Inside a bracketed class, and how many characters of it were read
    // (a `]` first in a class, or right after `[^`, is a literal).
    let mut class: Option<usize> = None;
    while let Some(c) = chars.next() {
        match (c, class) {
            ('\\', _) => escape(&mut chars, class.is_some(), &mut out)?,
            ('[', None) => {
                out.push('[');
                class = Some(0);
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap_or('^'));
                }
                continue;
            }
            ('[', Some(_)) if chars.peek() == Some(&':') => {
                // A POSIX class `[:digit:]`, copied whole.
                out.push('[');
                for p in chars.by_ref() {
                    push_char(p, &mut out);
                    if p == ']' {
                        break;
                    }
                }
            }
            (']', Some(n)) if n > 0 => {
                out.push(']');
                class = None;
                continue;
            }
            _ => push_char(c, &mut out),
        }
        class = class.map(|n| n + 1);
    }
    Ok(out)
}

/// Translates the escape after a backslash.
fn escape(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    in_class: bool,
    out: &mut String,
) -> Result<(), String> {
    let Some(e) = chars.next() else {
        out.push('\\');
        return Ok(());
    };
    match e {
        'C' if !in_class => out.push_str("(?s-u:.)"),
        'Q' => {
            let mut literal = String::new();
            while let Some(c) = chars.next() {
                if c == '\\' && chars.peek() == Some(&'E') {
                    chars.next();
                    break;
                }
                literal.push(c);
            }
            for c in literal.chars() {
                if c.is_ascii() {
                    out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
                } else {
                    push_char(c, out);
                }
            }
        }
        'p' | 'P' => {
            let name = class_name(chars)?;
            let (name, negated) = match name.strip_prefix('^') {
                Some(rest) => (rest.to_owned(), e == 'p'),
                None => (name, e == 'P'),
            };
            let class = latin1_class(&name, negated)?;
            if in_class {
                out.push_str(&class);
            } else {
                out.push_str("(?-u:");
                out.push_str(&class);
                out.push(')');
            }
        }
        'x' if chars.peek() == Some(&'{') => {
            // `\x{hh}` is the Latin-1 character hh, the byte hh. The `regex`
            // crate reads a braced escape as a code point, whose UTF-8 bytes
            // differ from 0x80 up; its `\xhh` is the byte.
            let mut lookahead = chars.clone();
            lookahead.next();
            let (mut digits, mut closed) = (String::new(), false);
            for c in lookahead.by_ref() {
                if c == '}' {
                    closed = true;
                    break;
                }
                if digits.len() == 8 {
                    break;
                }
                digits.push(c);
            }
            match u32::from_str_radix(&digits, 16) {
                Ok(v) if closed && v <= 0xff => {
                    *chars = lookahead;
                    let _ = write!(out, "\\x{v:02x}");
                }
                _ => out.push_str("\\x"),
            }
        }
        '1'..='7' if !chars.peek().is_some_and(|d| ('0'..='7').contains(d)) => {
            return Err(format!("invalid escape \\{e}: backreferences are not supported (RE2)"));
        }
        _ if !e.is_ascii() => {
            return Err(format!("invalid escape: a backslash before the byte 0x{:02x}", u32::from(e)));
        }
        _ => {
            out.push('\\');
            out.push(e);
        }
    }
    Ok(())
}

/// Appends Latin-1 character `c` (a pattern's byte) as the `regex` crate
/// reads the byte in its byte mode: itself below 0x80, else `\xNN`.
fn push_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{:02x}", u32::from(c));
    }
}

/// The name of a Unicode class after `\p`: one letter, or `{...}`.
fn class_name(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    match chars.next() {
        Some('{') => {
            let mut name = String::new();
            for c in chars.by_ref() {
                if c == '}' {
                    return Ok(name);
                }
                name.push(c);
            }
            Err("missing } after \\p{".into())
        }
        Some(c) => Ok(c.to_string()),
        None => Err("missing class name after \\p".into()),
    }
}

/// The bytes whose Latin-1 characters are in Unicode class `name` (or not,
/// if `negated`), as a byte class of `\xNN` ranges. A class no Latin-1
/// character belongs to (`\p{Greek}`) is valid RE2 and matches no byte.
fn latin1_class(name: &str, negated: bool) -> Result<String, String> {
    let class =
        regex::Regex::new(&format!(r"\A\p{{{name}}}\z")).map_err(|_| format!("invalid Unicode class \\p{{{name}}}"))?;
    let member = |b: u8| class.is_match(char::from(b).encode_utf8(&mut [0; 4])) != negated;
    let mut body = String::new();
    let mut bytes = (0..=u8::MAX).peekable();
    while let Some(start) = bytes.next() {
        if !member(start) {
            continue;
        }
        let mut end = start;
        while let Some(next) = bytes.next_if(|b| member(*b)) {
            end = next;
        }
        let _ = write!(body, "\\x{start:02x}");
        if end > start {
            let _ = write!(body, "-\\x{end:02x}");
        }
    }
    // An empty class, nested so that it is also valid inside brackets.
    Ok(if body.is_empty() { r"[^\x00-\xff]".to_owned() } else { format!("[{body}]") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, haystack: &[u8]) -> bool {
        let re = BytesRegex::new(pattern.as_bytes());
        assert!(re.error().is_none(), "{pattern}: {:?}", re.error());
        re.is_match(haystack)
    }

    #[test]
    fn a_literal_pattern_matches_as_its_compiled_form_would() {
        let compiled =
            |pattern: &str| RegexBuilder::new(&format!("^(?:{pattern})$")).unicode(false).build().expect("compiles");
        let haystacks: [&[u8]; 7] = [b"pressure", b"pressures", b"", b"a-b", "été".as_bytes(), b"x y", b"\xe9t\xe9"];
        for pattern in ["pressure", "", "a-b", "été", "x y", "A"] {
            assert!(BytesRegex::new(pattern.as_bytes()).literal().is_some(), "{pattern}");
            for h in haystacks {
                assert_eq!(matches(pattern, h), compiled(pattern).is_match(h), "{pattern} on {h:?}");
            }
        }
    }

    #[test]
    fn every_byte_of_a_pattern_is_that_byte_wherever_it_stands() {
        let only = |pattern: &[u8], b: u8, context: &str| {
            let re = BytesRegex::new(pattern);
            assert!(re.error().is_none(), "{context} of 0x{b:02x}: {:?}", re.error());
            for h in 0..=u8::MAX {
                assert_eq!(re.is_match(&[h]), h == b, "{context} of 0x{b:02x} on 0x{h:02x}");
            }
            re
        };
        for b in 0..=u8::MAX {
            let escaped = |specials: &[u8]| if specials.contains(&b) { vec![b'\\', b] } else { vec![b] };
            // The raw byte (escaped where it is a metacharacter): the byte,
            // and a quantifier after it applies to that byte alone.
            let mut pattern = escaped(b"\\.+*?()|[]{}^$");
            only(&pattern, b, "the byte");
            pattern.push(b'+');
            let re = BytesRegex::new(&pattern);
            assert!(re.is_match(&[b, b, b]) && !re.is_match(&[b, b ^ 1]), "the byte repeated, 0x{b:02x}");
            // In a class, as an escape, and quoted.
            only(&[b"[".as_slice(), &escaped(b"\\]^-["), b"]"].concat(), b, "a class");
            only(format!(r"\x{b:02x}").as_bytes(), b, "\\xNN");
            if b != b'\\' {
                only(&[br"\Q".as_slice(), &[b], br"\E"].concat(), b, "\\Q...\\E");
            }
            // `.` is any byte but a newline; `\C` any byte.
            assert_eq!(BytesRegex::new(b".").is_match(&[b]), b != b'\n');
            assert!(BytesRegex::new(br"\C").is_match(&[b]));
        }
    }

    #[test]
    fn a_pattern_need_not_be_utf8() {
        // As a client sends an integer's big-endian bytes.
        let re = BytesRegex::new(b"\x00\x00\x00\x00\x00\x00\x00\x80.*");
        assert!(re.error().is_none(), "{:?}", re.error());
        assert!(re.is_match(b"\0\0\0\0\0\0\0\x80") && re.is_match(b"\0\0\0\0\0\0\0\x80tail"));
        assert!(!re.is_match(b"\0\0\0\0\0\0\0\x81"));
        assert!(
            BytesRegex::new(b"[\xe0-\xff]+").is_match(b"\xe9\xff") && !BytesRegex::new(b"[\xe0-\xff]").is_match(b"a")
        );
        assert!(BytesRegex::new(b"\\\xe9").error().is_some(), "RE2 refuses a backslash before a byte from 0x80");
    }

    #[test]
    fn any_byte_and_dot_follow_re2_on_bytes() {
        assert!(matches(r"a\C*", b"a\nb\xff"));
        assert!(!matches(r"a.b", b"a\nb"), "`.` stops at a newline");
        assert!(matches(r"a.b", b"a\xffb"), "`.` is one byte, any but a newline");
        assert!(matches(r"\\C", b"\\C"), "an escaped backslash, then C");
    }

    #[test]
    fn quoted_literals_match_their_text() {
        assert!(matches(r"\Qa.b\E", b"a.b") && !matches(r"\Qa.b\E", b"axb"));
        assert!(matches(r"x\Q(+)\Ey+", b"x(+)yy"));
        assert!(matches(r"\Qa.b", b"a.b"), "to the end of the pattern without \\E");
        assert!(matches(r"[\Q]\E]", b"]"));
    }

    #[test]
    fn octal_escapes_are_bytes_and_backreferences_are_refused() {
        assert!(matches(r"\141\142", b"ab"));
        assert!(matches(r"\0", b"\0") && matches(r"\12", b"\n"));
        assert!(BytesRegex::new(br"(a)\1").error().is_some(), "RE2 has no backreferences");
    }

    #[test]
    fn a_braced_hex_escape_is_the_latin1_byte() {
        // Found by the stress test: `\x{80}` and up matched the code
        // point's UTF-8 bytes, not the byte, so a value regex built from
        // bytes never matched a value holding one.
        for b in [0x00u8, 0x7f, 0x80, 0xe9, 0xff] {
            assert!(matches(&format!("\\x{{{b:02x}}}"), &[b]), "\\x{{{b:02x}}}");
            assert!(matches(&format!("[\\x{{{b:02x}}}]"), &[b]), "in a class");
        }
        assert!(matches(r"\x{0}\x{e9}t\x{E9}", b"\0\xe9t\xe9"), "one or two digits, either case");
        assert!(matches(r"[\x{80}-\x{ff}]+", b"\x80\xc3\xff"), "a range of bytes");
        assert!(!matches(r"\x{e9}", "\u{e9}".as_bytes()), "not the character's UTF-8 bytes");
    }

    #[test]
    fn unicode_classes_hold_the_latin1_bytes_of_their_characters() {
        assert!(matches(r"\pN", b"5") && matches(r"\pN", b"\xb2"), "a digit, and superscript two");
        assert!(!matches(r"\pN", b"a") && matches(r"\PN", b"a"));
        assert!(matches(r"\p{N}+", b"12\xbd") && matches(r"[\pN]", b"7") && !matches(r"[^\pN]", b"7"));
        assert!(matches(r"\p{Lu}", b"\xc0") && !matches(r"\p{Lu}", b"\xe0"), "À is upper case, à is not");
        assert!(matches(r"\p{^L}", b"1") && !matches(r"\p{^L}", b"x"));
        assert!(BytesRegex::new(br"\p{Nope}").error().is_some());
        assert!(!matches(r"\p{Greek}", b"a") && !matches(r"[\p{Greek}]", b"a"), "no Latin-1 character is Greek");
        assert!(matches(r"[a\p{Greek}]", b"a") && matches(r"\P{Greek}", b"a"));
    }

    #[test]
    fn posix_classes_and_a_leading_bracket_stay_as_they_are() {
        assert!(matches(r"[[:digit:]]+", b"123"));
        assert!(matches(r"[]a]+", b"]a]"));
        assert!(matches(r"[^]a]", b"b"));
    }
}
