//! Timestamps and time ranges.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Error, Result};

/// A cell's timestamp: microseconds since the Unix epoch.
///
/// Bigtable keeps millisecond granularity, and so does cellardb: an explicit
/// timestamp must be a multiple of 1000 and not negative.
/// [`Timestamp::SERVER`] asks for the time of the write, truncated to the
/// millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
        Timestamp(now_micros() / 1000 * 1000)
    }

    /// Microseconds since the epoch (`-1` for [`Timestamp::SERVER`]).
    pub const fn micros(self) -> i64 {
        self.0
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

/// Microseconds since the Unix epoch by the system clock.
pub(crate) fn now_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A half-open range of timestamps `[start, end)` in microseconds; `end`
/// `None` means no upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub start: i64,
    /// Exclusive upper bound, or unbounded.
    pub end: Option<i64>,
}

impl TimeRange {
    /// Every timestamp.
    pub const fn all() -> Self {
        TimeRange { start: 0, end: None }
    }

    /// `[start, end)`.
    pub const fn new(start: i64, end: i64) -> Self {
        TimeRange { start, end: Some(end) }
    }

    /// `[start, ∞)`.
    pub const fn since(start: i64) -> Self {
        TimeRange { start, end: None }
    }

    /// The range as `(start, end)`, the form entries encode.
    pub(crate) const fn span(self) -> (i64, Option<i64>) {
        (self.start, self.end)
    }

    /// Whether `ts` lies in the range.
    pub fn contains(&self, ts: i64) -> bool {
        ts >= self.start && self.end.is_none_or(|end| ts < end)
    }

    /// Checks the bounds as a delete's range: not negative, millisecond
    /// granularity, start before end.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        for t in [Some(self.start), self.end].into_iter().flatten() {
            if t < 0 {
                return bad(format!("time range bound {t} is negative"));
            }
            if t % 1000 != 0 {
                return bad(format!(
                    "time range bound {t} is not a multiple of 1000: the table keeps millisecond granularity"
                ));
            }
        }
        match self.end {
            Some(end) if end <= self.start => {
                bad(format!("time range start {} is not before its end {end}", self.start))
            }
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
    }
}
