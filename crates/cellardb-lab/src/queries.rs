//! The four queries of `workload.md`, written for each schema pattern the
//! way Bigtable's time-series guide recommends: the row key, a prefix or a
//! range first; a filter only where the key cannot serve; and decoding on
//! the client where the server cannot see inside a serialized event.
//!
//! Every query answers in one currency, [`Measurement`]s, so that its
//! result can be checked against the generator ([`Query::expected`]) and
//! compared across patterns.

use crate::workload::{Event, METRICS, START_MICROS, SchemaPattern, Workload, decode_blob, metric_text};
use cellardb::{Error, Filter, Result, Row, RowRange, RowSet, Table, TimeRange};

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
        // A remainder of a division by a u32 always fits one.
        let below = |r: u64, n: u32| u32::try_from(r % u64::from(n.max(1))).unwrap_or_default();
        let balloon = below(random, w.balloons);
        let pick = |n: u32| below(random >> 20, n);
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
    /// The read's errors; `Error::InvalidArgument` for rows that do not
    /// decode as `pattern`'s (the table holds another pattern).
    pub fn run(&self, pattern: SchemaPattern, w: &Workload, table: &Table) -> Result<Answer> {
        let plan = self.plan(pattern, w);
        let mut rows = table.read_rows(plan.row_set(), &plan.filter());
        if plan.last_row_only {
            rows = rows.reversed().limit(1);
        }
        let rows = rows.collect_rows()?;
        plan.answer(pattern, &rows)
    }

    /// How `pattern`'s key design serves the query over workload `w`.
    pub(crate) fn plan(&self, pattern: SchemaPattern, w: &Workload) -> Plan {
        let (start, end, metrics) = self.span(w);
        Plan::of(self, pattern, start, end, &metrics)
    }
}

/// The rows a plan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rows {
    /// These keys.
    Keys(Vec<String>),
    /// Keys in `[from, to)`.
    Range(String, String),
    /// Keys starting with this.
    Prefix(String),
    /// The whole table.
    All,
}

/// How a query reads one pattern, in terms any Bigtable-like store can
/// serve: which rows, which column and time range, whether only each
/// column's newest cell, or only the last row. Then what the client does:
/// keep only each row's newest event, and only the measurements asked for.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub rows: Rows,
    /// Only this qualifier.
    pub column: Option<&'static str>,
    /// Only cells with timestamps in `[start, end)`.
    pub time: Option<(i64, i64)>,
    /// Only each column's newest cell (`cells_per_column_limit(1)`).
    pub newest_per_column: bool,
    /// Only the last row of `rows` (a reversed read of one row).
    pub last_row_only: bool,
    /// Of each row, only the cells of its newest timestamp (client side).
    pub newest_only: bool,
    /// The minutes `[start, end)` the query wants (client side).
    pub minutes: (u32, u32),
    /// The metrics the query wants (client side).
    pub metrics: Vec<usize>,
}

impl Plan {
    fn of(q: &Query, pattern: SchemaPattern, start: u32, end: u32, metrics: &[usize]) -> Plan {
        use SchemaPattern as P;
        let metric = METRICS[metrics[0]];
        let plan = |rows| Plan {
            rows,
            column: None,
            time: None,
            newest_per_column: false,
            last_row_only: false,
            newest_only: false,
            minutes: (start, end),
            metrics: metrics.to_vec(),
        };
        let time = Some((minute_micros(start), minute_micros(end)));
        let week_rows =
            |b: u32| Rows::Keys(METRICS.iter().map(|m| format!("{}{m}#{}", prefix(b), week(start))).collect());
        let bucket = |b: u32| Rows::Keys(vec![format!("{}{}", prefix(b), week(start))]);
        let minutes = |b: u32| range(b, &minute_key(start), &minute_key(end));
        match (*q, pattern) {
            // Every pattern keys rows by balloon first: the fleet at one
            // minute is a scan of the whole table, with a filter.
            (Query::FleetMinute { .. }, _) => Plan { time, ..plan(Rows::All) },
            (Query::BalloonWeek { balloon, .. }, P::BucketNewColumn) => plan(week_rows(balloon)),
            (Query::BalloonWeek { balloon, .. }, P::BucketNewCell) => plan(bucket(balloon)),
            (Query::BalloonWeek { balloon, .. }, P::SingleTsSerialized | P::SingleTsUnserialized) => {
                plan(minutes(balloon))
            }
            (Query::BalloonWeek { balloon, .. }, P::BucketSerialized) => {
                plan(range(balloon, &hour_key(start), &hour_key(end)))
            }
            (Query::MetricHour { balloon, .. }, P::BucketNewColumn) => {
                Plan { time, ..plan(Rows::Keys(vec![format!("{}{metric}#{}", prefix(balloon), week(start))])) }
            }
            (Query::MetricHour { balloon, .. }, P::BucketNewCell) => {
                Plan { column: Some(metric), time, ..plan(bucket(balloon)) }
            }
            // The server cannot see inside a serialized event: every event
            // of the hour is read, and the client keeps one metric.
            (Query::MetricHour { balloon, .. }, P::SingleTsSerialized) => plan(minutes(balloon)),
            (Query::MetricHour { balloon, .. }, P::SingleTsUnserialized) => {
                Plan { column: Some(metric), ..plan(minutes(balloon)) }
            }
            (Query::MetricHour { balloon, .. }, P::BucketSerialized) => {
                plan(Rows::Keys(vec![format!("{}{}", prefix(balloon), hour_key(start))]))
            }
            // In bucket-new-column the value is the qualifier, so the
            // newest cell of a row is only known once every column is read.
            (Query::Latest { balloon }, P::BucketNewColumn) => Plan { newest_only: true, ..plan(week_rows(balloon)) },
            // A column's newest cell is its first.
            (Query::Latest { balloon }, P::BucketNewCell) => Plan { newest_per_column: true, ..plan(bucket(balloon)) },
            // Rows sort by time within a balloon: the last row is the newest.
            (Query::Latest { balloon }, P::SingleTsSerialized | P::SingleTsUnserialized | P::BucketSerialized) => {
                Plan { last_row_only: true, newest_only: true, ..plan(Rows::Prefix(prefix(balloon))) }
            }
        }
    }

    /// The plan's rows as a [`RowSet`].
    fn row_set(&self) -> RowSet {
        match &self.rows {
            Rows::Keys(keys) => RowSet::new().keys(keys),
            Rows::Range(from, to) => RowSet::from(RowRange::closed_open(from, to)),
            Rows::Prefix(p) => RowSet::from(RowRange::prefix(p)),
            Rows::All => RowSet::all(),
        }
    }

    /// The plan's column, time range and per-column limit as a [`Filter`].
    fn filter(&self) -> Filter {
        let column = self.column.map(Filter::column_qualifier_regex);
        let time = self.time.map(|(start, end)| Filter::timestamp_range(TimeRange::new(start, end)));
        let newest = self.newest_per_column.then(|| Filter::cells_per_column_limit(1));
        let filters: Vec<Filter> = column.into_iter().chain(time).chain(newest).collect();
        if filters.is_empty() { Filter::pass_all() } else { Filter::chain(filters) }
    }

    /// The answer given by `rows`, read as the plan says.
    pub(crate) fn answer(&self, pattern: SchemaPattern, rows: &[Row]) -> Result<Answer> {
        let mut answer = Answer { measurements: Vec::new(), cells_read: 0 };
        for row in rows {
            answer.cells_read += row.cell_count() as u64;
            decode_row(pattern, row, self.newest_only, &mut answer.measurements)?;
        }
        let (start, end) = self.minutes;
        answer.measurements.retain(|m| (start..end).contains(&m.minute) && self.metrics.contains(&m.metric));
        answer.measurements.sort();
        Ok(answer)
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

fn range(balloon: u32, from: &str, to: &str) -> Rows {
    let p = prefix(balloon);
    Rows::Range(format!("{p}{from}"), format!("{p}{to}"))
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
        let minute =
            u32::try_from((cell.timestamp.micros() - START_MICROS) / MINUTE_MICROS).map_err(|_| bad("timestamp"))?;
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
