//! The queries of `docs/workload.md`, written for each schema pattern in
//! two forms:
//!
//! - **natural**: what a Bigtable user writes first, knowing the row key
//!   design but not its tricks: the newest event as the balloon's prefix
//!   read backwards, one row, the newest cell of each column; the fleet at
//!   one minute as one read per balloon with a timestamp range;
//! - **tuned**: what Bigtable's time-series guide leads to: the row key, a
//!   key range or a list of keys first; a filter only where the key cannot
//!   serve; decoding on the client where the server cannot see inside a
//!   serialized event.
//!
//! The forms differ where the guide's advice changes the read (`latest`,
//! `fleet-minute`); elsewhere both are the one read the key design allows.
//! `fleet-scan`, the fleet at one minute as one scan of the whole table
//! with a timestamp filter, has one form, and so has `full-scan`, every
//! cell of the table in one scan with no filter: the rate at which an
//! engine hands out what it holds.
//!
//! A query is planned as one or more [`Plan`]s, each one read; an engine
//! hands the cells it returns to a sink ([`CellRef`]), and the cells give
//! [`Measurement`]s, checked against the generator ([`Query::expected`]).

use crate::workload::{Event, METRICS, START_MICROS, SchemaPattern, Workload, decode_blob, metric_text};
use cellardb::{Error, Filter, Result, RowSet, Table, TimeRange};

const MINUTE_MICROS: i64 = 60_000_000;
const MINUTES_PER_WEEK: u32 = 7 * 1440;

/// Which query, without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum QueryKind {
    /// Every measurement of one balloon over one ISO week.
    BalloonWeek,
    /// One metric of one balloon over one hour.
    MetricHour,
    /// The newest event of one balloon.
    Latest,
    /// All balloons' measurements for one minute, balloon by balloon.
    FleetMinute,
    /// All balloons' measurements for one minute, in one scan of the table.
    FleetScan,
    /// Every measurement of the table, in one scan without a filter.
    FullScan,
}

impl QueryKind {
    /// The six, in `workload.md`'s order.
    pub const ALL: [QueryKind; 6] = [
        QueryKind::BalloonWeek,
        QueryKind::MetricHour,
        QueryKind::Latest,
        QueryKind::FleetMinute,
        QueryKind::FleetScan,
        QueryKind::FullScan,
    ];

    /// The query's name in `workload.md`.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::BalloonWeek => "balloon-week",
            QueryKind::MetricHour => "metric-hour",
            QueryKind::Latest => "latest",
            QueryKind::FleetMinute => "fleet-minute",
            QueryKind::FleetScan => "fleet-scan",
            QueryKind::FullScan => "full-scan",
        }
    }

    /// The forms the query is measured in: both, or only `Natural` where
    /// there is one way to ask.
    pub fn forms(self) -> &'static [Form] {
        match self {
            QueryKind::FleetScan | QueryKind::FullScan => &[Form::Natural],
            _ => &[Form::Natural, Form::Tuned],
        }
    }

    /// Whether the query reads every balloon (and so runs a twentieth as often).
    pub fn is_fleet(self) -> bool {
        matches!(self, QueryKind::FleetMinute | QueryKind::FleetScan | QueryKind::FullScan)
    }

    /// Whether every run of the query reads the same cells (it has no
    /// parameter): then the lab checks the first run's answer against the
    /// generator, and the others' counts against the first's.
    pub fn is_fixed(self) -> bool {
        matches!(self, QueryKind::FullScan)
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
            QueryKind::FleetScan => Query::FleetScan { minute: pick(w.minutes()) },
            QueryKind::FullScan => Query::FullScan,
        }
    }
}

pub use crate::plan::Form;

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
    /// Every balloon's measurements at minute `minute`, balloon by balloon.
    FleetMinute {
        /// Minute since the start.
        minute: u32,
    },
    /// Every balloon's measurements at minute `minute`, in one scan.
    FleetScan {
        /// Minute since the start.
        minute: u32,
    },
    /// Every measurement of the table.
    FullScan,
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
            Query::FleetScan { .. } => QueryKind::FleetScan,
            Query::FullScan => QueryKind::FullScan,
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
            Query::FleetMinute { minute } | Query::FleetScan { minute } => (minute, minute + 1, all()),
            Query::FullScan => (0, end, all()),
        }
    }

    /// The balloons the query covers in workload `w`.
    fn balloons(&self, w: &Workload) -> std::ops::Range<u32> {
        match *self {
            Query::BalloonWeek { balloon, .. } | Query::MetricHour { balloon, .. } | Query::Latest { balloon } => {
                balloon..(balloon + 1).min(w.balloons)
            }
            Query::FleetMinute { .. } | Query::FleetScan { .. } | Query::FullScan => 0..w.balloons,
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

    /// Runs the query in `form` on `table`, which holds `pattern`'s rows of
    /// `w`, through cellardb's public read API.
    ///
    /// # Errors
    /// The read's errors; `Error::InvalidArgument` for rows that do not
    /// decode as `pattern`'s (the table holds another pattern).
    pub fn run(&self, pattern: SchemaPattern, w: &Workload, form: Form, table: &Table) -> Result<Answer> {
        let mut cells = CellCollector::default();
        for plan in self.plans(pattern, w, form) {
            read_cellardb(table, &plan, &mut |c| cells.push(c))?;
        }
        self.answer(pattern, w, form, &cells)
    }

    /// How `pattern`'s key design serves the query in `form` over workload
    /// `w`: one read per plan.
    pub fn plans(&self, pattern: SchemaPattern, w: &Workload, form: Form) -> Vec<Plan> {
        let (start, end, metrics) = self.span(w);
        Plan::of(self, pattern, form, start, end, &metrics, w.balloons)
    }

    /// The answer `cells` give, read with `self.plans(pattern, w, form)`.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for cells that do not decode as `pattern`'s.
    pub fn answer(&self, pattern: SchemaPattern, w: &Workload, form: Form, cells: &CellCollector) -> Result<Answer> {
        let (start, end, metrics) = self.span(w);
        let newest_only = self.plans(pattern, w, form).iter().any(|p| p.newest_only);
        let mut measurements = Vec::new();
        for (row, row_cells) in cells.rows() {
            decode_row(pattern, row, &row_cells, newest_only, &mut measurements)?;
        }
        measurements.retain(|m| (start..end).contains(&m.minute) && metrics.contains(&m.metric));
        measurements.sort();
        Ok(Answer { measurements, cells_read: cells.cells.len() as u64 })
    }
}

/// Reads `plan` on `table` with cellardb's public API, handing each cell
/// to `sink` in the order the rows come. Rows are borrowed from the read
/// (`ReadRows::next_borrowed`), as the RocksDB baseline hands out slices
/// borrowed from its iterator: neither copies a cell to hand it out.
///
/// # Errors
/// The read's errors.
pub fn read_cellardb(table: &Table, plan: &Plan, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<()> {
    let mut rows = table.read_rows(plan.row_set(), &plan.filter());
    if plan.last_row_only {
        rows = rows.reversed().limit(1);
    }
    while let Some(row) = rows.next_borrowed() {
        let row = row?;
        for cell in row.cells() {
            sink(CellRef {
                row: row.key(),
                qualifier: cell.qualifier,
                timestamp: cell.timestamp.micros(),
                value: cell.value,
            });
        }
    }
    Ok(())
}

/// One cell as an engine hands it to the lab, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct CellRef<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Column qualifier (every pattern has one family).
    pub qualifier: &'a [u8],
    /// Timestamp, µs.
    pub timestamp: i64,
    /// Value.
    pub value: &'a [u8],
}

/// Cells copied out of a read, to be checked once the timing is done.
#[derive(Debug, Default)]
pub struct CellCollector {
    bytes: Vec<u8>,
    /// Per cell: where its row, qualifier and value end in `bytes`, and its timestamp.
    cells: Vec<(usize, usize, usize, i64)>,
}

impl CellCollector {
    /// Copies `c`.
    pub fn push(&mut self, c: CellRef<'_>) {
        for part in [c.row, c.qualifier, c.value] {
            self.bytes.extend_from_slice(part);
        }
        let end = self.bytes.len();
        // The row key starts where the previous cell's value ends.
        self.cells.push((end - c.value.len() - c.qualifier.len(), end - c.value.len(), end, c.timestamp));
    }

    fn cell(&self, i: usize) -> CellRef<'_> {
        let start = if i == 0 { 0 } else { self.cells[i - 1].2 };
        let (row_end, qualifier_end, value_end, timestamp) = self.cells[i];
        CellRef {
            row: &self.bytes[start..row_end],
            qualifier: &self.bytes[row_end..qualifier_end],
            timestamp,
            value: &self.bytes[qualifier_end..value_end],
        }
    }

    /// The cells grouped into rows: runs of cells with the same row key.
    fn rows(&self) -> Vec<(&[u8], Vec<CellRef<'_>>)> {
        let mut rows: Vec<(&[u8], Vec<CellRef<'_>>)> = Vec::new();
        for i in 0..self.cells.len() {
            let c = self.cell(i);
            match rows.last_mut() {
                Some((row, cells)) if *row == c.row => cells.push(c),
                _ => rows.push((c.row, vec![c])),
            }
        }
        rows
    }
}

pub use crate::plan::Rows;

/// One read of a query, in terms any Bigtable-like store can serve: which
/// rows, which column and time range, whether only each column's newest
/// cell, or only the last row. What the client then does (keep only each
/// row's newest event, and the measurements asked for) is
/// [`Query::answer`]'s.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The rows.
    pub rows: Rows,
    /// The pattern's one family.
    pub family: &'static str,
    /// Only this qualifier.
    pub column: Option<&'static str>,
    /// Only cells with timestamps in `[start, end)`.
    pub time: Option<(i64, i64)>,
    /// Only each column's newest cell (`cells_per_column_limit(1)`).
    pub newest_per_column: bool,
    /// Only the last row of `rows` (a reversed read with a limit of 1).
    pub last_row_only: bool,
    /// Of each row, only the cells of its newest timestamp (client side).
    pub newest_only: bool,
}

impl Plan {
    fn of(
        q: &Query,
        pattern: SchemaPattern,
        form: Form,
        start: u32,
        end: u32,
        metrics: &[usize],
        balloons: u32,
    ) -> Vec<Plan> {
        use SchemaPattern as P;
        let metric = METRICS[metrics[0]];
        let plan = |rows| Plan {
            rows,
            family: pattern.family(),
            column: None,
            time: None,
            newest_per_column: false,
            last_row_only: false,
            newest_only: false,
        };
        let time = Some((minute_micros(start), minute_micros(end)));
        let week_keys =
            |b: u32| METRICS.iter().map(|m| format!("{}{m}#{}", prefix(b), week(start))).collect::<Vec<_>>();
        let bucket_key = |b: u32| format!("{}{}", prefix(b), week(start));
        let minutes = |b: u32| range(b, &minute_key(start), &minute_key(end));
        let one = |p: Plan| vec![p];
        match (*q, pattern, form) {
            // Every pattern keys rows by balloon first: the fleet in one
            // read is a scan of the whole table, with a filter.
            (Query::FleetScan { .. }, _, _) => one(Plan { time, ..plan(Rows::All) }),
            (Query::FullScan, _, _) => one(plan(Rows::All)),
            (Query::FleetMinute { .. }, _, Form::Natural) => {
                (0..balloons).map(|b| Plan { time, ..plan(Rows::Prefix(prefix(b))) }).collect()
            }
            // One read of every balloon's rows that hold the minute.
            (Query::FleetMinute { .. }, _, Form::Tuned) => {
                let keys = |b: u32| match pattern {
                    P::BucketNewColumn => week_keys(b),
                    P::BucketNewCell => vec![bucket_key(b)],
                    P::SingleTsSerialized | P::SingleTsUnserialized => {
                        vec![format!("{}{}", prefix(b), minute_key(start))]
                    }
                    P::BucketSerialized => vec![format!("{}{}", prefix(b), hour_key(start))],
                };
                let exact = matches!(pattern, P::SingleTsSerialized | P::SingleTsUnserialized);
                let rows = Rows::Keys((0..balloons).flat_map(keys).collect());
                one(Plan { time: if exact { None } else { time }, ..plan(rows) })
            }
            (Query::BalloonWeek { balloon, .. }, P::BucketNewColumn, _) => one(plan(Rows::Keys(week_keys(balloon)))),
            (Query::BalloonWeek { balloon, .. }, P::BucketNewCell, _) => {
                one(plan(Rows::Keys(vec![bucket_key(balloon)])))
            }
            (Query::BalloonWeek { balloon, .. }, P::SingleTsSerialized | P::SingleTsUnserialized, _) => {
                one(plan(minutes(balloon)))
            }
            (Query::BalloonWeek { balloon, .. }, P::BucketSerialized, _) => {
                one(plan(range(balloon, &hour_key(start), &hour_key(end))))
            }
            (Query::MetricHour { balloon, .. }, P::BucketNewColumn, _) => {
                one(Plan { time, ..plan(Rows::Keys(vec![format!("{}{metric}#{}", prefix(balloon), week(start))])) })
            }
            (Query::MetricHour { balloon, .. }, P::BucketNewCell, _) => {
                one(Plan { column: Some(metric), time, ..plan(Rows::Keys(vec![bucket_key(balloon)])) })
            }
            // The server cannot see inside a serialized event: every event
            // of the hour is read, and the client keeps one metric.
            (Query::MetricHour { balloon, .. }, P::SingleTsSerialized, _) => one(plan(minutes(balloon))),
            (Query::MetricHour { balloon, .. }, P::SingleTsUnserialized, _) => {
                one(Plan { column: Some(metric), ..plan(minutes(balloon)) })
            }
            (Query::MetricHour { balloon, .. }, P::BucketSerialized, _) => {
                one(plan(Rows::Keys(vec![format!("{}{}", prefix(balloon), hour_key(start))])))
            }
            // Each metric has its own rows: the last row of each metric's
            // prefix, whose newest column the client finds (the value is
            // the qualifier, so every column has one cell).
            (Query::Latest { balloon }, P::BucketNewColumn, Form::Natural) => METRICS
                .iter()
                .map(|m| Plan {
                    newest_per_column: true,
                    last_row_only: true,
                    newest_only: true,
                    ..plan(Rows::Prefix(format!("{}{m}#", prefix(balloon))))
                })
                .collect(),
            // The balloon's last row, the newest cell of each column.
            (Query::Latest { balloon }, _, Form::Natural) => one(Plan {
                newest_per_column: true,
                last_row_only: true,
                newest_only: true,
                ..plan(Rows::Prefix(prefix(balloon)))
            }),
            // The current week's four rows, known from the clock.
            (Query::Latest { balloon }, P::BucketNewColumn, Form::Tuned) => {
                one(Plan { newest_only: true, ..plan(Rows::Keys(week_keys(balloon))) })
            }
            // The current week's row; a column's newest cell is its first.
            (Query::Latest { balloon }, P::BucketNewCell, Form::Tuned) => {
                one(Plan { newest_per_column: true, ..plan(Rows::Keys(vec![bucket_key(balloon)])) })
            }
            // Rows sort by time within a balloon: the last row is the newest.
            (
                Query::Latest { balloon },
                P::SingleTsSerialized | P::SingleTsUnserialized | P::BucketSerialized,
                Form::Tuned,
            ) => one(Plan { last_row_only: true, newest_only: true, ..plan(Rows::Prefix(prefix(balloon))) }),
        }
    }

    /// The plan's rows as a [`RowSet`].
    pub fn row_set(&self) -> RowSet {
        self.rows.row_set()
    }

    /// The plan's column, time range and per-column limit as a [`Filter`].
    pub fn filter(&self) -> Filter {
        let column = self.column.map(Filter::column_qualifier_regex);
        let time = self.time.map(|(start, end)| Filter::timestamp_range(TimeRange::new(start, end)));
        let newest = self.newest_per_column.then(|| Filter::cells_per_column_limit(1));
        let filters: Vec<Filter> = column.into_iter().chain(time).chain(newest).collect();
        match filters.len() {
            0 => Filter::pass_all(),
            1 => filters.into_iter().next().unwrap_or_else(Filter::pass_all),
            _ => Filter::chain(filters),
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

fn range(balloon: u32, from: &str, to: &str) -> Rows {
    let p = prefix(balloon);
    Rows::Range(format!("{p}{from}"), format!("{p}{to}"))
}

/// The measurements row `key` of `pattern` holds in `cells`, appended to
/// `out` (only those of its newest timestamp if `newest_only`).
fn decode_row(
    pattern: SchemaPattern,
    key: &[u8],
    cells: &[CellRef<'_>],
    newest_only: bool,
    out: &mut Vec<Measurement>,
) -> Result<()> {
    let bad = |what: &str| {
        Error::InvalidArgument(format!("row {:?} is not {}: {what}", String::from_utf8_lossy(key), pattern.name()))
    };
    let key = std::str::from_utf8(key).map_err(|_| bad("key is not UTF-8"))?;
    let mut parts = key.split('#');
    let id: u32 = parts.nth(1).and_then(|id| id.parse().ok()).ok_or_else(|| bad("no balloon id"))?;
    let balloon = id.checked_sub(1000).ok_or_else(|| bad("balloon id below 1000"))?;
    let key_metric = parts.next().and_then(|m| METRICS.iter().position(|x| *x == m));
    let newest = cells.iter().map(|c| c.timestamp).max();
    for cell in cells {
        if newest_only && Some(cell.timestamp) != newest {
            continue;
        }
        let minute = u32::try_from((cell.timestamp - START_MICROS) / MINUTE_MICROS).map_err(|_| bad("timestamp"))?;
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| bad("value is not UTF-8"));
        let mut push = |metric: usize, value: String| out.push(Measurement { balloon, minute, metric, value });
        match pattern {
            SchemaPattern::BucketNewColumn => push(key_metric.ok_or_else(|| bad("no metric"))?, text(cell.qualifier)?),
            SchemaPattern::BucketNewCell | SchemaPattern::SingleTsUnserialized => {
                let metric =
                    METRICS.iter().position(|m| m.as_bytes() == cell.qualifier).ok_or_else(|| bad("column"))?;
                push(metric, text(cell.value)?);
            }
            SchemaPattern::SingleTsSerialized | SchemaPattern::BucketSerialized => {
                let values = decode_blob(cell.value).ok_or_else(|| bad("blob does not decode"))?;
                for (metric, v) in values.into_iter().enumerate() {
                    push(metric, metric_text(metric, v));
                }
            }
        }
    }
    Ok(())
}
