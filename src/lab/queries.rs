//! The four queries of `workload.md`, written for each schema pattern the
//! way Bigtable's time-series guide recommends: the row key, a prefix or a
//! range first; a filter only where the key cannot serve; and decoding on
//! the client where the server cannot see inside a serialized event.
//!
//! Every query answers in one currency, [`Measurement`]s, so that its
//! result can be checked against the generator ([`Query::expected`]) and
//! compared across patterns.

use crate::workload::{Event, METRICS, START_MICROS, SchemaPattern, Workload, decode_blob, metric_text};
use crate::{Error, Filter, Result, Row, RowRange, RowSet, Table, TimeRange};

const MINUTE_MICROS: i64 = 60_000_000;
const MINUTES_PER_WEEK: u32 = 7 * 1440;

/// Which query, without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryKind {
    /// Every measurement of one balloon over one ISO week.
    BalloonWeek,
    /// One metric of one balloon over one hour.
    MetricHour,
    /// The newest event of one balloon.
    Latest,
    /// All balloons' measurements for one minute.
    FleetMinute,
}

impl QueryKind {
    /// The four, in `workload.md`'s order.
    pub const ALL: [QueryKind; 4] =
        [QueryKind::BalloonWeek, QueryKind::MetricHour, QueryKind::Latest, QueryKind::FleetMinute];

    /// The query's name in `workload.md`.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::BalloonWeek => "balloon-week",
            QueryKind::MetricHour => "metric-hour",
            QueryKind::Latest => "latest",
            QueryKind::FleetMinute => "fleet-minute",
        }
    }

    /// The query of this kind drawn from `random`, a uniform 64-bit number,
    /// for workload `w`.
    pub fn sample(self, w: &Workload, random: u64) -> Query {
        let balloon = (random % u64::from(w.balloons.max(1))) as u32;
        let pick = |n: u32| ((random >> 20) % u64::from(n.max(1))) as u32;
        match self {
            QueryKind::BalloonWeek => {
                Query::BalloonWeek { balloon, week: pick(w.minutes().div_ceil(MINUTES_PER_WEEK)) }
            }
            QueryKind::MetricHour => {
                Query::MetricHour { balloon, metric: ((random >> 50) % 4) as usize, hour: pick(w.minutes() / 60) }
            }
            QueryKind::Latest => Query::Latest { balloon },
            QueryKind::FleetMinute => Query::FleetMinute { minute: pick(w.minutes()) },
        }
    }
}

/// One query with its parameters. Weeks, hours and minutes count from the
/// workload's start (a Monday, so week `k` is ISO week 9 + `k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// Balloon `balloon`'s measurements in week `week`.
    BalloonWeek {
        /// Balloon number.
        balloon: u32,
        /// Week since the start.
        week: u32,
    },
    /// Metric `metric` (an index into [`METRICS`]) of balloon `balloon` in hour `hour`.
    MetricHour {
        /// Balloon number.
        balloon: u32,
        /// Index into [`METRICS`].
        metric: usize,
        /// Hour since the start.
        hour: u32,
    },
    /// Balloon `balloon`'s newest event.
    Latest {
        /// Balloon number.
        balloon: u32,
    },
    /// Every balloon's measurements at minute `minute`.
    FleetMinute {
        /// Minute since the start.
        minute: u32,
    },
}

/// One measurement: what every query returns, whatever the pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Measurement {
    /// Balloon number.
    pub balloon: u32,
    /// Minute since the start.
    pub minute: u32,
    /// Index into [`METRICS`].
    pub metric: usize,
    /// The value as `workload.md` encodes it in ASCII.
    pub value: String,
}

/// A query's result and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The measurements, sorted.
    pub measurements: Vec<Measurement>,
    /// Cells the engine returned to answer it (a serialized event is one).
    pub cells_read: u64,
}

impl Query {
    /// Which query this is.
    pub fn kind(&self) -> QueryKind {
        match self {
            Query::BalloonWeek { .. } => QueryKind::BalloonWeek,
            Query::MetricHour { .. } => QueryKind::MetricHour,
            Query::Latest { .. } => QueryKind::Latest,
            Query::FleetMinute { .. } => QueryKind::FleetMinute,
        }
    }

    /// The minutes `[start, end)` the query covers in workload `w`, and the
    /// metrics it wants.
    fn span(&self, w: &Workload) -> (u32, u32, Vec<usize>) {
        let all = || (0..METRICS.len()).collect();
        let end = w.minutes();
        match *self {
            Query::BalloonWeek { week, .. } => {
                (week * MINUTES_PER_WEEK, ((week + 1) * MINUTES_PER_WEEK).min(end), all())
            }
            Query::MetricHour { metric, hour, .. } => (hour * 60, (hour * 60 + 60).min(end), vec![metric]),
            Query::Latest { .. } => (end.saturating_sub(1), end, all()),
            Query::FleetMinute { minute } => (minute, minute + 1, all()),
        }
    }

    /// The balloons the query covers in workload `w`.
    fn balloons(&self, w: &Workload) -> std::ops::Range<u32> {
        match *self {
            Query::BalloonWeek { balloon, .. } | Query::MetricHour { balloon, .. } | Query::Latest { balloon } => {
                balloon..(balloon + 1).min(w.balloons)
            }
            Query::FleetMinute { .. } => 0..w.balloons,
        }
    }

    /// What the query must return, from the generator.
    pub fn expected(&self, w: &Workload) -> Vec<Measurement> {
        let (start, end, metrics) = self.span(w);
        let mut out = Vec::new();
        for b in self.balloons(w) {
            for e in w.balloon_events(b).skip(start as usize).take((end - start) as usize) {
                out.extend(metrics.iter().map(|&m| Measurement {
                    balloon: b,
                    minute: e.minute,
                    metric: m,
                    value: e.metric_text(m),
                }));
            }
        }
        out.sort();
        out
    }

    /// Runs the query on `table`, which holds `pattern`'s rows of `w`.
    ///
    /// # Errors
    /// The read's errors; `Error::Corruption`-free data that does not
    /// decode as the pattern's (a wrong pattern) is `Error::InvalidArgument`.
    pub fn run(&self, pattern: SchemaPattern, w: &Workload, table: &Table) -> Result<Answer> {
        let (start, end, metrics) = self.span(w);
        let plan = Plan::of(self, pattern, start, end, &metrics);
        let mut rows = table.read_rows(plan.rows, &plan.filter);
        if plan.reversed {
            rows = rows.reversed();
        }
        if let Some(n) = plan.limit {
            rows = rows.limit(n);
        }
        let mut answer = Answer { measurements: Vec::new(), cells_read: 0 };
        for row in rows {
            let row = row?;
            answer.cells_read += row.cell_count() as u64;
            decode_row(pattern, &row, plan.newest_only, &mut answer.measurements)?;
        }
        answer.measurements.retain(|m| (start..end).contains(&m.minute) && metrics.contains(&m.metric));
        answer.measurements.sort();
        Ok(answer)
    }
}

/// How a query reads one pattern: which rows, which filter, in which
/// direction, and whether only each row's newest event counts.
struct Plan {
    rows: RowSet,
    filter: Filter,
    reversed: bool,
    limit: Option<usize>,
    newest_only: bool,
}

impl Plan {
    fn of(q: &Query, pattern: SchemaPattern, start: u32, end: u32, metrics: &[usize]) -> Plan {
        use SchemaPattern as P;
        let time = Filter::timestamp_range(TimeRange::new(minute_micros(start), minute_micros(end)));
        let plain =
            |rows: RowSet| Plan { rows, filter: Filter::pass_all(), reversed: false, limit: None, newest_only: false };
        let with = |rows: RowSet, filter: Filter| Plan { filter, ..plain(rows) };
        let metric_column = || Filter::column_qualifier_regex(METRICS[metrics[0]]);
        match (*q, pattern) {
            // Every pattern keys rows by balloon first: the fleet at one
            // minute is a scan of the whole table, with a filter.
            (Query::FleetMinute { .. }, _) => with(RowSet::all(), time),
            (Query::BalloonWeek { balloon, .. }, P::BucketNewColumn) => {
                plain(keys(METRICS.iter().map(|m| format!("{}{m}#{}", prefix(balloon), week(start)))))
            }
            (Query::BalloonWeek { balloon, .. }, P::BucketNewCell) => {
                plain(keys([format!("{}{}", prefix(balloon), week(start))]))
            }
            (Query::BalloonWeek { balloon, .. }, P::SingleTsSerialized | P::SingleTsUnserialized) => {
                plain(range(balloon, minute_key(start), minute_key(end)))
            }
            (Query::BalloonWeek { balloon, .. }, P::BucketSerialized) => {
                plain(range(balloon, hour_key(start), hour_key(end)))
            }
            (Query::MetricHour { balloon, metric, .. }, P::BucketNewColumn) => {
                with(keys([format!("{}{}#{}", prefix(balloon), METRICS[metric], week(start))]), time)
            }
            (Query::MetricHour { balloon, .. }, P::BucketNewCell) => {
                with(keys([format!("{}{}", prefix(balloon), week(start))]), Filter::chain([metric_column(), time]))
            }
            (Query::MetricHour { balloon, .. }, P::SingleTsSerialized) => {
                plain(range(balloon, minute_key(start), minute_key(end)))
            }
            (Query::MetricHour { balloon, .. }, P::SingleTsUnserialized) => {
                with(range(balloon, minute_key(start), minute_key(end)), metric_column())
            }
            (Query::MetricHour { balloon, .. }, P::BucketSerialized) => {
                plain(keys([format!("{}{}", prefix(balloon), hour_key(start))]))
            }
            // A column's newest cell is its first: the bucket of the newest
            // week, one cell per column. In bucket-new-column the value is
            // the qualifier, so the newest cell of the row is only known
            // once every column is read.
            (Query::Latest { balloon }, P::BucketNewColumn) => Plan {
                newest_only: true,
                ..plain(keys(METRICS.iter().map(|m| format!("{}{m}#{}", prefix(balloon), week(start)))))
            },
            (Query::Latest { balloon }, P::BucketNewCell) => {
                with(keys([format!("{}{}", prefix(balloon), week(start))]), Filter::cells_per_column_limit(1))
            }
            // Rows sort by time within a balloon: the last row is the newest.
            (Query::Latest { balloon }, P::SingleTsSerialized | P::SingleTsUnserialized | P::BucketSerialized) => {
                Plan {
                    reversed: true,
                    limit: Some(1),
                    newest_only: true,
                    ..plain(RowSet::from(RowRange::prefix(prefix(balloon))))
                }
            }
        }
    }
}

/// The row-key prefix of balloon `b` in every pattern: `{location}#{id}#`.
pub fn prefix(b: u32) -> String {
    let e = Event::at(b, 0);
    format!("{}#{}#", e.location(), e.id())
}

fn week(minute: u32) -> String {
    Event::at(0, minute).week_string()
}

fn minute_key(minute: u32) -> String {
    Event::at(0, minute).minute_string()
}

fn hour_key(minute: u32) -> String {
    minute_key(minute)[..13].to_owned()
}

fn minute_micros(minute: u32) -> i64 {
    START_MICROS + i64::from(minute) * MINUTE_MICROS
}

fn keys<S: AsRef<[u8]>>(keys: impl IntoIterator<Item = S>) -> RowSet {
    RowSet::new().keys(keys)
}

fn range(balloon: u32, from: String, to: String) -> RowSet {
    let p = prefix(balloon);
    RowSet::from(RowRange::closed_open(format!("{p}{from}"), format!("{p}{to}")))
}

/// The measurements `row` of `pattern` holds, appended to `out` (only those
/// of its newest timestamp if `newest_only`).
fn decode_row(pattern: SchemaPattern, row: &Row, newest_only: bool, out: &mut Vec<Measurement>) -> Result<()> {
    let bad = |what: &str| Error::InvalidArgument(format!("row {:?} is not {}: {what}", row.key, pattern.name()));
    let key = std::str::from_utf8(&row.key).map_err(|_| bad("key is not UTF-8"))?;
    let mut parts = key.split('#');
    let id: u32 = parts.nth(1).and_then(|id| id.parse().ok()).ok_or_else(|| bad("no balloon id"))?;
    let balloon = id.checked_sub(1000).ok_or_else(|| bad("balloon id below 1000"))?;
    let key_metric = parts.next().and_then(|m| METRICS.iter().position(|x| *x == m));
    let newest = row.cells().map(|(_, _, c)| c.timestamp).max();
    for (_, qualifier, cell) in row.cells() {
        if newest_only && Some(cell.timestamp) != newest {
            continue;
        }
        let minute = u32::try_from((cell.timestamp - START_MICROS) / MINUTE_MICROS).map_err(|_| bad("timestamp"))?;
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| bad("value is not UTF-8"));
        let mut push = |metric: usize, value: String| out.push(Measurement { balloon, minute, metric, value });
        match pattern {
            SchemaPattern::BucketNewColumn => push(key_metric.ok_or_else(|| bad("no metric"))?, text(qualifier)?),
            SchemaPattern::BucketNewCell | SchemaPattern::SingleTsUnserialized => {
                let metric =
                    METRICS.iter().position(|m| m.as_bytes() == &qualifier[..]).ok_or_else(|| bad("column"))?;
                push(metric, text(&cell.value)?);
            }
            SchemaPattern::SingleTsSerialized | SchemaPattern::BucketSerialized => {
                let values = decode_blob(&cell.value).ok_or_else(|| bad("blob does not decode"))?;
                for (metric, v) in values.into_iter().enumerate() {
                    push(metric, metric_text(metric, v));
                }
            }
        }
    }
    Ok(())
}
