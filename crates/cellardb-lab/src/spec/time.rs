//! Time in a spec: durations (`10s`, `1h`, `1w`), instants (RFC 3339, UTC),
//! the time formats of row keys and qualifiers (a subset of `strftime`),
//! and the buckets rows are cut into.
//!
//! Every instant is microseconds since the Unix epoch, as a Bigtable cell
//! timestamp is.

use crate::workload::civil_from_days;

/// Microseconds in a second, minute, hour, day and week.
pub const SECOND: i64 = 1_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
/// Microseconds in a day.
pub const DAY: i64 = 24 * HOUR;
/// Microseconds in a week.
pub const WEEK: i64 = 7 * DAY;

/// A duration as a spec writes it: a whole number and a unit (`us`, `ms`,
/// `s`, `m`, `h`, `d`, `w`), e.g. `10s`, `1h`, `7d`; in microseconds.
///
/// # Errors
/// A message saying what is wrong, for the caller to place in the file.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit_micros = match unit {
        "us" => 1,
        "ms" => 1000,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        "d" => DAY,
        "w" => WEEK,
        _ => {
            return Err(format!(
                "{text:?} is not a duration: write a whole number and a unit (us, ms, s, m, h, d, w), e.g. 10s"
            ));
        }
    };
    let n: i64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: it must start with a whole number, e.g. 10s"))?;
    n.checked_mul(unit_micros).ok_or_else(|| format!("{text:?} is too long a duration"))
}

/// `micros` written as a spec would write it: the largest unit that
/// divides it, e.g. `1h`, `90s`.
pub fn show_duration(micros: i64) -> String {
    for (unit, size) in [("w", WEEK), ("d", DAY), ("h", HOUR), ("m", MINUTE), ("s", SECOND), ("ms", 1000)] {
        if micros != 0 && micros % size == 0 {
            return format!("{}{unit}", micros / size);
        }
    }
    format!("{micros}us")
}

/// An RFC 3339 instant in UTC (`2021-03-01T00:00:00Z`, or just the date
/// `2021-03-01`), in microseconds since the epoch.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_instant(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?} is not an instant: write it as 2021-03-01T00:00:00Z (UTC) or 2021-03-01");
    let (date, clock) = match text.split_once('T') {
        Some((d, c)) => (d, Some(c.strip_suffix('Z').ok_or_else(bad)?)),
        None => (text, None),
    };
    let mut fields = date.splitn(3, '-').map(str::parse::<i64>);
    let (Some(Ok(year)), Some(Ok(month)), Some(Ok(day))) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad());
    };
    let (Ok(month), Ok(day)) = (u32::try_from(month), u32::try_from(day)) else { return Err(bad()) };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(bad());
    }
    let days = days_from_civil(year, month, day);
    if civil_from_days(days) != (year, month, day) {
        return Err(bad());
    }
    let mut micros = days * DAY;
    if let Some(clock) = clock {
        let mut fields = clock.splitn(3, ':').map(str::parse::<i64>);
        let (Some(Ok(hour)), Some(Ok(minute)), Some(Ok(second))) = (fields.next(), fields.next(), fields.next()) else {
            return Err(bad());
        };
        if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0..60).contains(&second) {
            return Err(bad());
        }
        micros += hour * HOUR + minute * MINUTE + second * SECOND;
    }
    Ok(micros)
}

/// `micros` as RFC 3339 in UTC, to the second.
pub fn show_instant(micros: i64) -> String {
    let (y, m, d) = civil_from_days(micros.div_euclid(DAY));
    let s = micros.rem_euclid(DAY) / SECOND;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

/// Day number (since 1970-01-01) of a proleptic Gregorian date (Howard
/// Hinnant's algorithm, the inverse of [`civil_from_days`]).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The start of the bucket of `size` holding `micros`: buckets of a day or
/// less are aligned on midnight UTC, weeks on Monday midnight (ISO weeks).
pub fn bucket_start(micros: i64, size: i64) -> i64 {
    // 1970-01-01 was a Thursday: Mondays are 4 days after the epoch's week start.
    let origin = if size == WEEK { 4 * DAY } else { 0 };
    micros - (micros - origin).rem_euclid(size)
}

/// Whether `size` is a bucket a spec may use: a whole number of seconds
/// that divides a day, or a day, or a week.
pub fn is_bucket(size: i64) -> bool {
    size == WEEK || (size > 0 && size % SECOND == 0 && DAY % size == 0)
}

/// One piece of a time format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// `%Y`: the year, four digits.
    Year,
    /// `%m`, `%d`, `%H`, `%M`, `%S`: two digits.
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// `%j`: day of the year, three digits.
    DayOfYear,
    /// `%V`, `%G`: the ISO 8601 week number (two digits) and its year.
    IsoWeek,
    IsoYear,
    /// `%s`: seconds since the epoch.
    EpochSeconds,
    /// `reversed`: `i64::MAX` − µs since the epoch, as 19 digits, so that
    /// newer instants sort first.
    Reversed,
}

/// A time format of a template (`{time:%Y-%m-%d-%H%M}`): `strftime`'s
/// `%Y %m %d %H %M %S %j %V %G %s %%`, or `reversed` for a reversed
/// timestamp (19 digits, newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeFormat {
    pieces: Vec<Piece>,
    text: String,
}

impl TimeFormat {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message naming the unknown `%` directive.
    pub fn parse(text: &str) -> Result<TimeFormat, String> {
        if text == "reversed" {
            return Ok(TimeFormat { pieces: vec![Piece::Reversed], text: text.to_owned() });
        }
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            let piece = match chars.next() {
                Some('%') => {
                    literal.push('%');
                    continue;
                }
                Some('Y') => Piece::Year,
                Some('m') => Piece::Month,
                Some('d') => Piece::Day,
                Some('H') => Piece::Hour,
                Some('M') => Piece::Minute,
                Some('S') => Piece::Second,
                Some('j') => Piece::DayOfYear,
                Some('V') => Piece::IsoWeek,
                Some('G') => Piece::IsoYear,
                Some('s') => Piece::EpochSeconds,
                other => {
                    return Err(format!(
                        "time format {text:?} has %{}: the formats known are %Y %m %d %H %M %S %j %V %G %s %% and `reversed`",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            };
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(TimeFormat { pieces, text: text.to_owned() })
    }

    /// The format as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Appends `micros` in this format to `out`.
    ///
    /// Every row key with a time passes here, so digits are written by
    /// hand (`write!` costs several times as much) and the date is worked
    /// out once.
    pub fn write(&self, micros: i64, out: &mut String) {
        let days = micros.div_euclid(DAY);
        let second_of_day = micros.rem_euclid(DAY) / SECOND;
        let mut civil = None;
        let mut date = || *civil.get_or_insert_with(|| civil_from_days(days));
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Year => push_signed(date().0, 4, out),
                Piece::Month => push_digits(u64::from(date().1), 2, out),
                Piece::Day => push_digits(u64::from(date().2), 2, out),
                Piece::Hour => push_signed(second_of_day / 3600, 2, out),
                Piece::Minute => push_signed(second_of_day / 60 % 60, 2, out),
                Piece::Second => push_signed(second_of_day % 60, 2, out),
                Piece::DayOfYear => push_signed(days - days_from_civil(date().0, 1, 1) + 1, 3, out),
                Piece::IsoWeek => push_digits(u64::from(iso_week(days).1), 2, out),
                Piece::IsoYear => push_signed(iso_week(days).0, 4, out),
                Piece::EpochSeconds => push_signed(micros.div_euclid(SECOND), 1, out),
                Piece::Reversed => push_signed(i64::MAX - micros, 19, out),
            }
        }
    }

    /// `micros` in this format.
    pub fn show(&self, micros: i64) -> String {
        let mut out = String::new();
        self.write(micros, &mut out);
        out
    }
}

/// Appends `n` in decimal, zero-padded to `width` digits, as `{:0width$}`
/// writes it.
pub fn push_digits(n: u64, width: usize, out: &mut String) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(n);
    for _ in text.len()..width {
        out.push('0');
    }
    out.push_str(text);
}

/// Appends `n` as [`push_digits`] does, a minus sign first if it is
/// negative (and counted in `width`, as `{:0width$}` counts it).
fn push_signed(n: i64, width: usize, out: &mut String) {
    if n < 0 {
        out.push('-');
    }
    push_digits(n.unsigned_abs(), width.saturating_sub(usize::from(n < 0)), out);
}

/// The ISO 8601 (year, week) of day `days` since the epoch.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a week of 1..=53")]
pub fn iso_week(days: i64) -> (i64, u32) {
    let weekday = (days + 3).rem_euclid(7) + 1; // Monday = 1; 1970-01-01 was a Thursday
    let thursday = days - weekday + 4; // the Thursday of this ISO week decides its year
    let (year, _, _) = civil_from_days(thursday);
    (year, ((thursday - days_from_civil(year, 1, 1)) / 7 + 1) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: i64 = 1_614_556_800_000_000; // 2021-03-01T00:00:00Z, a Monday

    #[test]
    fn every_piece_is_written_as_write_would_write_it() {
        use std::fmt::Write as _;
        let format = TimeFormat::parse("%Y|%m|%d|%H|%M|%S|%j|%V|%G|%s").expect("a format");
        let mut instants = vec![0, -1, START, -START, -62_135_596_800_000_000 - 1];
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            #[allow(clippy::cast_possible_wrap, reason = "any instant, negative ones too")]
            instants.push((x as i64) >> 8);
        }
        for micros in instants {
            let days = micros.div_euclid(DAY);
            let second = micros.rem_euclid(DAY) / SECOND;
            let (y, m, d) = civil_from_days(days);
            let (iso_year, week) = iso_week(days);
            let mut want = String::new();
            let _ = write!(
                want,
                "{y:04}|{m:02}|{d:02}|{:02}|{:02}|{:02}|{:03}|{week:02}|{iso_year:04}|{}",
                second / 3600,
                second / 60 % 60,
                second % 60,
                days - days_from_civil(y, 1, 1) + 1,
                micros.div_euclid(SECOND)
            );
            assert_eq!(format.show(micros), want, "{micros}");
            if micros >= 0 {
                let reversed = TimeFormat::parse("reversed").expect("a format").show(micros);
                assert_eq!(reversed, format!("{:019}", i64::MAX - micros));
            }
        }
    }

    #[test]
    fn durations_and_instants_parse_and_show() {
        assert_eq!(parse_duration("10s"), Ok(10 * SECOND));
        assert_eq!(parse_duration("1w"), Ok(WEEK));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1 fortnight").is_err());
        assert!(parse_duration("s").is_err());
        assert_eq!(show_duration(90 * SECOND), "90s");
        assert_eq!(show_duration(DAY), "1d");
        assert_eq!(parse_instant("2021-03-01T00:00:00Z"), Ok(START));
        assert_eq!(parse_instant("2021-03-01"), Ok(START));
        assert_eq!(parse_instant("2021-03-01T12:04:05Z"), Ok(START + 12 * HOUR + 4 * MINUTE + 5 * SECOND));
        assert!(parse_instant("2021-02-30").is_err());
        assert!(parse_instant("2021-03-01T00:00:00+01:00").is_err());
        assert_eq!(show_instant(START + HOUR), "2021-03-01T01:00:00Z");
    }

    #[test]
    fn formats_write_the_keys_of_the_balloon_workload() {
        let f = |s: &str| TimeFormat::parse(s).unwrap();
        assert_eq!(f("%Y-%m-%d-%H%M").show(START + 4 * DAY + 12 * HOUR + 4 * MINUTE), "2021-03-05-1204");
        assert_eq!(f("week%V").show(START), "week09");
        assert_eq!(f("%G-W%V %j %s%%").show(START), "2021-W09 060 1614556800%");
        assert_eq!(f("reversed").show(0), i64::MAX.to_string());
        assert!(f("reversed").show(START) > f("reversed").show(START + 1));
        assert!(TimeFormat::parse("%Q").is_err());
        // 2021-01-03 (Sunday) is in ISO week 53 of 2020; 2021-01-04 starts week 1.
        assert_eq!(iso_week(18_630), (2020, 53));
        assert_eq!(iso_week(18_631), (2021, 1));
    }

    #[test]
    fn buckets_align_on_midnight_and_weeks_on_monday() {
        assert_eq!(bucket_start(START + 3 * DAY + 5 * HOUR, WEEK), START);
        assert_eq!(bucket_start(START + 5 * HOUR + 7, HOUR), START + 5 * HOUR);
        assert!(is_bucket(HOUR) && is_bucket(WEEK) && is_bucket(DAY) && is_bucket(10 * SECOND));
        assert!(!is_bucket(7 * HOUR) && !is_bucket(2 * DAY) && !is_bucket(0) && !is_bucket(1500));
    }
}
