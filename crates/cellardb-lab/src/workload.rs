//! The weather-balloon workload of `docs/workload.md`, exact to the byte,
//! and the five schema patterns that write it: the four of Bigtable's
//! time-series guide, and the combination the guide suggests.
//!
//! Balloons report four measurements once a minute; each balloon's values
//! are random walks driven by its own SplitMix64 generator. [`Workload`]
//! yields the events in arrival order (minute by minute, balloons in order)
//! or balloon by balloon; [`SchemaPattern`] turns an event into row mutations.

use std::fmt::Write as _;

use cellardb::Mutation;

use crate::design::{put_varint, read_varint};

/// `2021-03-01T00:00:00Z` in microseconds since the epoch.
pub const START_MICROS: i64 = 1_614_556_800_000_000;
const MINUTE_MICROS: i64 = 60_000_000;
const MINUTES_PER_DAY: u32 = 1440;
/// Where balloon `b` flies: `LOCATIONS[b % 8]`.
pub const LOCATIONS: [&str; 8] = [
    "us-west2",
    "asia-south2",
    "asia-southeast1",
    "europe-west1",
    "us-central1",
    "southamerica-east1",
    "australia-southeast1",
    "europe-north1",
];
/// The four metrics, in the order they are drawn and written.
pub const METRICS: [&str; 4] = ["pressure", "temperature", "humidity", "altitude"];

/// The size of a run: balloons × days, and the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Number of balloons (at most 9000).
    pub balloons: u32,
    /// Days of one-minute events.
    pub days: u32,
    /// The generator's seed.
    pub seed: u64,
}

impl Default for Workload {
    fn default() -> Self {
        Workload { balloons: 100, days: 7, seed: 42 }
    }
}

/// One balloon's report for one minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Balloon number, `0..balloons`.
    pub balloon: u32,
    /// Minute since the start, `0..days*1440`.
    pub minute: u32,
    /// Pascals.
    pub pressure: i32,
    /// Tenths of a degree Celsius.
    pub temperature: i32,
    /// Percent.
    pub humidity: i32,
    /// Metres.
    pub altitude: i32,
}

/// SplitMix64: the workload's generator, also used for anything else that
/// must draw the same numbers on every machine.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A balloon's generator and current values.
#[derive(Debug, Clone)]
struct Balloon {
    b: u32,
    state: SplitMix64,
    values: [i32; 4],
    minute: u32,
}

impl Balloon {
    fn new(seed: u64, b: u32) -> Self {
        let mut g = Balloon { b, state: SplitMix64(seed.wrapping_add(u64::from(b))), values: [0; 4], minute: 0 };
        g.values = [94000 + g.draw(2000), g.draw(50) + 70, 40 + g.draw(40), 500 + g.draw(300)];
        g
    }

    /// `next() % n`, which is below `n` ≤ 2001 and so fits an i32.
    fn draw(&mut self, n: u64) -> i32 {
        i32::try_from(self.state.next_u64() % n).expect("a draw below 2001")
    }

    fn step(&mut self) -> Event {
        const STEPS: [(u64, i32, i32, i32); 4] =
            [(201, 100, 90_000, 100_000), (5, 2, -600, 500), (3, 1, 0, 100), (11, 5, 0, 40_000)];
        for (i, (n, offset, lo, hi)) in STEPS.into_iter().enumerate() {
            let step = self.draw(n) - offset;
            self.values[i] = (self.values[i] + step).clamp(lo, hi);
        }
        let [pressure, temperature, humidity, altitude] = self.values;
        let e = Event { balloon: self.b, minute: self.minute, pressure, temperature, humidity, altitude };
        self.minute += 1;
        e
    }
}

impl Workload {
    /// A run of `balloons` × `days` with seed 42.
    pub fn new(balloons: u32, days: u32) -> Self {
        Workload { balloons, days, seed: 42 }
    }

    /// Minutes in the run.
    pub fn minutes(&self) -> u32 {
        self.days * MINUTES_PER_DAY
    }

    /// Events in the run.
    pub fn events_count(&self) -> u64 {
        u64::from(self.balloons) * u64::from(self.minutes())
    }

    /// Every event in arrival order: for each minute, balloons in order.
    pub fn events(&self) -> impl Iterator<Item = Event> + use<> {
        let mut balloons: Vec<Balloon> = (0..self.balloons).map(|b| Balloon::new(self.seed, b)).collect();
        let n = balloons.len();
        (0..self.minutes()).flat_map(move |_| (0..n).map(|i| balloons[i].step()).collect::<Vec<_>>())
    }

    /// Balloon `b`'s events, minute by minute.
    pub fn balloon_events(&self, b: u32) -> impl Iterator<Item = Event> + use<> {
        let mut g = Balloon::new(self.seed, b);
        (0..self.minutes()).map(move |_| g.step())
    }
}

impl Event {
    /// Cell timestamp: the minute's instant in µs since the epoch.
    pub fn timestamp(&self) -> i64 {
        START_MICROS + i64::from(self.minute) * MINUTE_MICROS
    }

    /// The balloon's id, `1000 + b`.
    pub fn id(&self) -> u32 {
        1000 + self.balloon
    }

    /// The balloon's location.
    pub fn location(&self) -> &'static str {
        LOCATIONS[self.balloon as usize % LOCATIONS.len()]
    }

    /// `YYYY-MM-DD-HHMM` in UTC.
    pub fn minute_string(&self) -> String {
        let (y, m, d) = civil_from_days(self.day_number());
        let minute_of_day = self.minute % MINUTES_PER_DAY;
        format!("{y:04}-{m:02}-{d:02}-{:02}{:02}", minute_of_day / 60, minute_of_day % 60)
    }

    /// `week` and the two-digit ISO week number, e.g. `week09`.
    pub fn week_string(&self) -> String {
        format!("week{:02}", iso_week(self.day_number()))
    }

    fn day_number(&self) -> i64 {
        self.timestamp().div_euclid(86_400_000_000)
    }

    /// The value of `metric` (one of [`METRICS`]) as ASCII: integers, and
    /// temperature in degrees with exactly one decimal.
    pub fn metric_text(&self, metric: usize) -> String {
        metric_text(metric, self.values()[metric])
    }

    /// Pressure, temperature (tenths of a degree), humidity, altitude.
    pub fn values(&self) -> [i32; 4] {
        [self.pressure, self.temperature, self.humidity, self.altitude]
    }

    /// An event of balloon `b` at `minute` with every value zero: for its
    /// keys and time, without generating the walk.
    pub fn at(balloon: u32, minute: u32) -> Event {
        Event { balloon, minute, pressure: 0, temperature: 0, humidity: 0, altitude: 0 }
    }

    /// The serialized event: a protocol-buffer message with fields 1
    /// pressure (varint), 2 temperature (fixed32 f32 degrees), 3 humidity
    /// (varint), 4 altitude (varint), all present.
    pub fn blob(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        // An int32 field: a negative value is sign-extended to 64 bits.
        let varint = |out: &mut Vec<u8>, v: i32| put_varint(out, i64::from(v).cast_unsigned());
        out.push(0x08);
        varint(&mut out, self.pressure);
        out.push(0x15);
        out.extend_from_slice(&(self.temperature as f32 / 10.0).to_le_bytes());
        out.push(0x18);
        varint(&mut out, self.humidity);
        out.push(0x20);
        varint(&mut out, self.altitude);
        out
    }

    /// The line `workload.md` checks: single-ts row key, week, timestamp,
    /// the four values and the blob in hex.
    pub fn golden_line(&self) -> String {
        let mut blob = String::new();
        for b in self.blob() {
            let _ = write!(blob, "{b:02x}");
        }
        format!(
            "{}#{}#{} {} {} {} {} {} {} {blob}",
            self.location(),
            self.id(),
            self.minute_string(),
            self.week_string(),
            self.timestamp(),
            self.metric_text(0),
            self.metric_text(1),
            self.metric_text(2),
            self.metric_text(3),
        )
    }
}

/// `value` of `metric` as ASCII, as [`Event::metric_text`] writes it
/// (temperature is in tenths of a degree).
pub fn metric_text(metric: usize, value: i32) -> String {
    if metric == 1 {
        let sign = if value < 0 { "-" } else { "" };
        format!("{sign}{}.{}", value.unsigned_abs() / 10, value.unsigned_abs() % 10)
    } else {
        value.to_string()
    }
}

/// The four values of a serialized event ([`Event::blob`]): pressure,
/// temperature in tenths, humidity, altitude. `None` if the bytes are not
/// such a message.
#[allow(clippy::cast_possible_truncation, reason = "a temperature in degrees, rounded to tenths")]
pub fn decode_blob(blob: &[u8]) -> Option<[i32; 4]> {
    let mut values = [0i32; 4];
    let mut rest = blob;
    for (i, tag) in [0x08u8, 0x15, 0x18, 0x20].into_iter().enumerate() {
        let (&t, tail) = rest.split_first()?;
        if t != tag {
            return None;
        }
        rest = tail;
        values[i] = if tag == 0x15 {
            let (bytes, tail) = rest.split_first_chunk::<4>()?;
            rest = tail;
            (f32::from_le_bytes(*bytes) * 10.0).round() as i32
        } else {
            let (v, tail) = read_varint(rest)?;
            rest = tail;
            i32::try_from(v.cast_signed()).ok()?
        };
    }
    rest.is_empty().then_some(values)
}

/// (year, month, day) of day `z` since 1970-01-01, proleptic Gregorian
/// (Howard Hinnant's algorithm): the calendar of the workload's keys, and
/// of the times `cellar` prints.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a day of 1..=31, a month of 1..=12")]
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Day number of `year`-01-01.
fn days_from_civil_jan1(year: i64) -> i64 {
    let y = year - 1;
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = 306; // March 1 .. January 1 of the next year
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// ISO 8601 week number of day `z` since the epoch.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a week of 1..=53")]
fn iso_week(z: i64) -> u32 {
    let weekday = (z + 3).rem_euclid(7) + 1; // Monday = 1; 1970-01-01 was a Thursday
    let thursday = z - weekday + 4; // the Thursday of this ISO week decides its year
    let (year, _, _) = civil_from_days(thursday);
    ((thursday - days_from_civil_jan1(year)) / 7 + 1) as u32
}

/// One of the time-series schema patterns of `workload.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SchemaPattern {
    /// A row per balloon, metric and week; a column per distinct value.
    BucketNewColumn,
    /// A row per balloon and week; a column per metric, a cell per minute.
    BucketNewCell,
    /// A row per balloon and minute holding the serialized event.
    SingleTsSerialized,
    /// A row per balloon and minute; a column per metric.
    SingleTsUnserialized,
    /// The combination the guide suggests, beyond its four patterns: a
    /// row per balloon and hour, a column per minute (`00`..`59`) holding
    /// the serialized event.
    BucketSerialized,
}

impl SchemaPattern {
    /// Every pattern: the guide's four in the order of `docs/workload.md`,
    /// then its combination.
    pub const ALL: [SchemaPattern; 5] = [
        SchemaPattern::BucketNewColumn,
        SchemaPattern::BucketNewCell,
        SchemaPattern::SingleTsSerialized,
        SchemaPattern::SingleTsUnserialized,
        SchemaPattern::BucketSerialized,
    ];

    /// The pattern's name in `workload.md`.
    pub fn name(self) -> &'static str {
        match self {
            SchemaPattern::BucketNewColumn => "bucket-new-column",
            SchemaPattern::BucketNewCell => "bucket-new-cell",
            SchemaPattern::SingleTsSerialized => "single-ts-serialized",
            SchemaPattern::SingleTsUnserialized => "single-ts-unserialized",
            SchemaPattern::BucketSerialized => "bucket-serialized",
        }
    }

    /// The pattern named `name`.
    pub fn from_name(name: &str) -> Option<SchemaPattern> {
        SchemaPattern::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The one column family the pattern writes.
    pub fn family(self) -> &'static str {
        match self {
            SchemaPattern::BucketNewColumn => "m",
            _ => "measurements",
        }
    }

    /// Cells one event writes.
    pub fn cells_per_event(self) -> u64 {
        match self {
            SchemaPattern::SingleTsSerialized | SchemaPattern::BucketSerialized => 1,
            _ => 4,
        }
    }

    /// Whether the pattern stores each event as one serialized blob.
    pub fn is_serialized(self) -> bool {
        matches!(self, SchemaPattern::SingleTsSerialized | SchemaPattern::BucketSerialized)
    }

    /// The row mutations that record `e`: one row, or four for
    /// `bucket-new-column` (a row per metric).
    pub fn mutations(self, e: &Event) -> Vec<(String, Vec<Mutation>)> {
        let ts = e.timestamp();
        let family = self.family();
        let prefix = format!("{}#{}#", e.location(), e.id());
        match self {
            SchemaPattern::BucketNewColumn => (0..4)
                .map(|i| {
                    let key = format!("{prefix}{}#{}", METRICS[i], e.week_string());
                    (key, vec![Mutation::set_cell(family, e.metric_text(i), ts, "")])
                })
                .collect(),
            SchemaPattern::BucketNewCell | SchemaPattern::SingleTsUnserialized => {
                let suffix = if self == SchemaPattern::BucketNewCell { e.week_string() } else { e.minute_string() };
                let cells = (0..4).map(|i| Mutation::set_cell(family, METRICS[i], ts, e.metric_text(i))).collect();
                vec![(format!("{prefix}{suffix}"), cells)]
            }
            SchemaPattern::SingleTsSerialized => {
                vec![(format!("{prefix}{}", e.minute_string()), vec![Mutation::set_cell(family, "blob", ts, e.blob())])]
            }
            SchemaPattern::BucketSerialized => {
                let minute_string = e.minute_string();
                let (hour, minute) = minute_string.split_at(13);
                vec![(format!("{prefix}{hour}"), vec![Mutation::set_cell(family, minute, ts, e.blob())])]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_helpers_agree_with_known_dates() {
        assert_eq!(civil_from_days(START_MICROS / 86_400_000_000), (2021, 3, 1));
        assert_eq!(iso_week(START_MICROS / 86_400_000_000), 9);
        // 2021-01-03 (Sunday) is in ISO week 53 of 2020; 2021-01-04 starts week 1.
        assert_eq!(iso_week(18_630), 53);
        assert_eq!(iso_week(18_631), 1);
        assert_eq!(days_from_civil_jan1(1970), 0);
        assert_eq!(days_from_civil_jan1(2021), 18_628);
    }
}
