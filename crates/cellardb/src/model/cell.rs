//! Timestamps and time ranges.
//!
//! Every timestamp of the API is a [`Timestamp`]: what a write gives, what
//! a cell holds, what a time range or a time-range filter bounds. It is
//! Bigtable's `int64` of microseconds since the epoch, as Google's Go
//! client types it (`bigtable.Timestamp`), and converts to and from
//! [`SystemTime`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{Error, Result};

/// A cell's timestamp: microseconds since the Unix epoch.
///
/// Bigtable keeps millisecond granularity, and so does cellardb: an explicit
/// timestamp in a write must be a multiple of 1000 and not negative.
/// [`Timestamp::SERVER`] asks for the time of the write, truncated to the
/// millisecond. An `i64` of microseconds converts with `From`, so writes
/// may pass either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    /// "Now, as the database sees it" (Bigtable's `-1`).
    pub const SERVER: Timestamp = Timestamp(-1);

    /// A timestamp of `micros` microseconds since the epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// A timestamp of `millis` milliseconds since the epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Timestamp(millis.saturating_mul(1000))
    }

    /// The current wall-clock time, truncated to the millisecond.
    pub fn now() -> Self {
        Timestamp::from(SystemTime::now()).truncate_to_millis()
    }

    /// Microseconds since the epoch (`-1` for [`Timestamp::SERVER`]).
    pub const fn micros(self) -> i64 {
        self.0
    }

    /// The timestamp rounded down to the millisecond, the granularity a
    /// table keeps.
    #[must_use]
    pub const fn truncate_to_millis(self) -> Self {
        Timestamp(self.0.div_euclid(1000) * 1000)
    }

    /// The instant as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        let magnitude = Duration::from_micros(self.0.unsigned_abs());
        if self.0 >= 0 { UNIX_EPOCH + magnitude } else { UNIX_EPOCH - magnitude }
    }

    /// The explicit timestamp this stands for at write time `now`, checked
    /// against the millisecond granularity.
    pub(crate) fn resolve(self, now: Timestamp) -> Result<i64> {
        match self.0 {
            -1 => Ok(now.0),
            t if t < 0 => Err(Error::InvalidArgument(format!(
                "timestamp {t} is negative (only -1, the server's time, is allowed)"
            ))),
            t if t % 1000 != 0 => Err(Error::InvalidArgument(format!(
                "timestamp {t} is not a multiple of 1000: the table keeps millisecond granularity"
            ))),
            t => Ok(t),
        }
    }
}

impl From<i64> for Timestamp {
    fn from(micros: i64) -> Self {
        Timestamp(micros)
    }
}

impl From<Timestamp> for i64 {
    fn from(ts: Timestamp) -> Self {
        ts.0
    }
}

/// A time to the microsecond (saturating far outside ±292,000 years).
impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Self {
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        match t.duration_since(UNIX_EPOCH) {
            Ok(after) => Timestamp(micros(after)),
            Err(before) => Timestamp(-micros(before.duration())),
        }
    }
}

/// Microseconds since the Unix epoch by the system clock.
pub(crate) fn now_micros() -> i64 {
    Timestamp::from(SystemTime::now()).0
}

/// A half-open range of timestamps `[start, end)`; `end` `None` means no
/// upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub start: Timestamp,
    /// Exclusive upper bound, or unbounded.
    pub end: Option<Timestamp>,
}

impl TimeRange {
    /// Every timestamp.
    pub const fn all() -> Self {
        TimeRange { start: Timestamp(0), end: None }
    }

    /// `[start, end)`.
    pub fn new(start: impl Into<Timestamp>, end: impl Into<Timestamp>) -> Self {
        TimeRange { start: start.into(), end: Some(end.into()) }
    }

    /// `[start, ∞)`.
    pub fn since(start: impl Into<Timestamp>) -> Self {
        TimeRange { start: start.into(), end: None }
    }

    /// `[0, end)`: everything before `end`.
    pub fn until(end: impl Into<Timestamp>) -> Self {
        TimeRange { start: Timestamp(0), end: Some(end.into()) }
    }

    /// Whether `ts` lies in the range.
    pub fn contains(&self, ts: impl Into<Timestamp>) -> bool {
        self.contains_micros(ts.into().0)
    }

    pub(crate) fn contains_micros(&self, ts: i64) -> bool {
        ts >= self.start.0 && self.end.is_none_or(|end| ts < end.0)
    }

    /// The range as `(start, end)` in µs, the form entries encode.
    pub(crate) fn span(self) -> (i64, Option<i64>) {
        (self.start.0, self.end.map(|e| e.0))
    }

    /// The range of an encoded `(start, end)`.
    pub(crate) fn from_span((start, end): (i64, Option<i64>)) -> Self {
        TimeRange { start: Timestamp(start), end: end.map(Timestamp) }
    }

    /// Checks the bounds as a delete's range: not negative, millisecond
    /// granularity, start before end.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        let (start, end) = self.span();
        for t in [Some(start), end].into_iter().flatten() {
            if t < 0 {
                return bad(format!("time range bound {t} is negative"));
            }
            if t % 1000 != 0 {
                return bad(format!(
                    "time range bound {t} is not a multiple of 1000: the table keeps millisecond granularity"
                ));
            }
        }
        match end {
            Some(end) if end <= start => bad(format!("time range start {start} is not before its end {end}")),
            _ => Ok(()),
        }
    }
}

impl Default for TimeRange {
    fn default() -> Self {
        TimeRange::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_timestamps_must_be_whole_milliseconds() {
        let now = Timestamp::from_millis(5);
        assert_eq!(Timestamp::from_micros(2000).resolve(now).unwrap(), 2000);
        assert_eq!(Timestamp::SERVER.resolve(now).unwrap(), 5000);
        assert!(Timestamp::from_micros(1500).resolve(now).is_err());
        assert!(Timestamp::from_micros(-2000).resolve(now).is_err());
    }

    #[test]
    fn ranges_are_half_open() {
        let r = TimeRange::new(1000, 3000);
        assert!(r.contains(1000) && r.contains(2000) && !r.contains(3000));
        assert!(TimeRange::all().contains(i64::MAX));
        assert!(TimeRange::new(3000, 3000).validate().is_err());
        assert!(TimeRange::until(3000).contains(0) && !TimeRange::until(3000).contains(3000));
    }

    #[test]
    fn timestamps_convert_to_and_from_system_time() {
        let t = Timestamp::from_micros(1_614_556_800_123_456);
        assert_eq!(Timestamp::from(t.to_system_time()), t);
        let before = Timestamp::from_micros(-1_500);
        assert_eq!(Timestamp::from(before.to_system_time()), before);
        assert_eq!(t.truncate_to_millis().micros(), 1_614_556_800_123_000);
        assert_eq!(before.truncate_to_millis().micros(), -2_000, "down, also before the epoch");
        assert_eq!(Timestamp::now().micros() % 1000, 0);
    }
}
