//! How a design answers a spec's queries: the reads a Bigtable user makes
//! ([`Plan`]s), in the form they write first and in the tuned form, what the
//! client does with the cells, and what the answer must be (from the
//! generator).
//!
//! The rules, for a row key made of the entity's part `P`, then perhaps the
//! series, then perhaps the time (of the row's bucket, or of its instant):
//!
//! - **entity-period, series-window** (one form): the rows of the entity
//!   (and series, when the key names it) whose time lies in the window: the
//!   keys themselves when the window is one row's time, else a key range
//!   when the key's time sorts, else the list of keys. A timestamp filter
//!   is added only where a row read can hold cells outside the window; a
//!   column filter only where the qualifier names the series (a serialized
//!   event cannot be filtered: the client decodes it and keeps the series).
//! - **latest**: natural, the last row of the entity's prefix (of each
//!   series' prefix, when the key names the series), read in reverse with a
//!   limit of one row and each column's newest cell; tuned, where rows hold
//!   many instants, the row of the last bucket, known from the clock (and,
//!   should it hold nothing, the natural read), else the last row with no
//!   filter. Keys whose time is reversed read their first row instead.
//! - **slice**: natural, one read per entity of its prefix with a timestamp
//!   filter; tuned, one read of every entity's rows that hold the instant.
//! - **scan**: one scan of the whole table with a timestamp filter.
//!
//! The client then keeps what the query asks: the entity, series and times
//! it names (a read may bring more: that is its cost), the newest instant
//! for `latest`, the top entities for a ranked slice.

use std::collections::HashSet;

use cellardb::{Filter, Result, RowRange, RowSet, Table, TimeRange};

use crate::design::{CellReader, Measurement, measurements, write_template};
use crate::generator::{instants_count, walk_entity};
use crate::spec::template::{Field, Part};
use crate::spec::time::{self, bucket_start};
use crate::spec::{Cells, Data, Design, EntityField, QueryShape, QuerySpec, Spec};

/// How a query is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Form {
    /// What a Bigtable user writes first.
    Natural,
    /// What Bigtable's time-series guide leads to.
    Tuned,
}

impl Form {
    /// `natural` or `tuned`.
    pub fn name(self) -> &'static str {
        match self {
            Form::Natural => "natural",
            Form::Tuned => "tuned",
        }
    }

    /// The forms a query is measured in: both where the guide's advice
    /// changes the read, else the one read the design allows.
    pub fn of(shape: &QueryShape) -> &'static [Form] {
        match shape {
            QueryShape::Latest | QueryShape::Slice { .. } => &[Form::Natural, Form::Tuned],
            _ => &[Form::Natural],
        }
    }
}

/// One run of a query: its parameters, drawn from a random number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// The entity (for the queries of one entity).
    pub entity: u32,
    /// The series (for series-window).
    pub series: usize,
    /// The window `[from, to)`, µs; for a slice or scan, its instant and the next tick.
    pub from: i64,
    /// End of the window, exclusive.
    pub to: i64,
}

impl Params {
    /// The parameters of a run of `q` drawn from `random`, a uniform 64-bit
    /// number (drawn as the balloon lab has always drawn them: the entity
    /// from the low bits, the window from bits 20 up, the series from 50 up).
    pub fn draw(spec: &Spec, q: &QuerySpec, random: u64) -> Params {
        let data = &spec.data;
        let below = |r: u64, n: u64| r % n.max(1);
        let entity = u32::try_from(below(random, u64::from(data.entities.count))).unwrap_or(0);
        let pick = |n: u64| below(random >> 20, n);
        let aligned = |size: i64| {
            let first = bucket_start(data.start, size);
            let n = (data.end - first + size - 1) / size;
            let from = first + size * i64::try_from(pick(n.unsigned_abs())).unwrap_or(0);
            (from.max(data.start), (from + size).min(data.end))
        };
        let instant = |at: Option<i64>| match at {
            None => data.start + data.tick * i64::try_from(pick(instants_count(data))).unwrap_or(0),
            Some(at) => {
                let first_day = bucket_start(data.start, time::DAY);
                let day_count = (data.end - first_day) / time::DAY + 1;
                let days: Vec<i64> = (0..day_count)
                    .map(|d| first_day + d * time::DAY + at)
                    .filter(|t| *t >= data.start && *t < data.end)
                    .collect();
                days.get(usize::try_from(pick(days.len() as u64)).unwrap_or(0)).copied().unwrap_or(data.start)
            }
        };
        let (from, to, series) = match q.kind {
            QueryShape::EntityPeriod { period } => {
                let (f, t) = aligned(period);
                (f, t, 0)
            }
            QueryShape::SeriesWindow { window, series } => {
                let (f, t) = aligned(window);
                let s =
                    series.unwrap_or_else(|| usize::try_from((random >> 50) % data.series.len() as u64).unwrap_or(0));
                (f, t, s)
            }
            QueryShape::Latest => (data.start, data.end, 0),
            QueryShape::Slice { at, .. } => {
                let t = instant(at);
                (t, t + data.tick, 0)
            }
            QueryShape::Scan => {
                let t = instant(None);
                (t, t + data.tick, 0)
            }
        };
        Params { entity, series, from, to }
    }
}

/// The rows a plan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rows {
    /// These keys.
    Keys(Vec<String>),
    /// Keys in `[from, to)`.
    Range(String, String),
    /// Keys starting with this.
    Prefix(String),
    /// The whole table.
    All,
}

impl Rows {
    /// The rows as a [`RowSet`].
    pub fn row_set(&self) -> RowSet {
        match self {
            Rows::Keys(keys) => RowSet::new().keys(keys),
            Rows::Range(from, to) => RowSet::from(RowRange::closed_open(from, to)),
            Rows::Prefix(p) => RowSet::from(RowRange::prefix(p)),
            Rows::All => RowSet::all(),
        }
    }
}

/// One read, in terms any Bigtable-like store serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The rows.
    pub rows: Rows,
    /// Only this family (`family_name_regex`).
    pub family: Option<String>,
    /// Only qualifiers matching this regex (`column_qualifier_regex`).
    pub column: Option<String>,
    /// Only cells with timestamps in `[start, end)`.
    pub time: Option<(i64, i64)>,
    /// Only each column's newest cell (`cells_per_column_limit(1)`).
    pub newest_per_column: bool,
    /// Only the last row (a reversed read, limit 1) or the first (limit 1).
    pub one_row: Option<End>,
    /// Read only if the plans before it returned no cell.
    pub only_if_empty: bool,
}

/// Which end of a key range a one-row read takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The first row.
    First,
    /// The last row (a reversed read).
    Last,
}

impl Plan {
    fn new(rows: Rows) -> Plan {
        Plan {
            rows,
            family: None,
            column: None,
            time: None,
            newest_per_column: false,
            one_row: None,
            only_if_empty: false,
        }
    }

    /// The plan's rows as a [`RowSet`].
    pub fn row_set(&self) -> RowSet {
        self.rows.row_set()
    }

    /// The plan's family, column, time range and per-column limit as a [`Filter`].
    pub fn filter(&self) -> Filter {
        let family = self.family.as_deref().map(|f| Filter::family_name_regex(regex::escape(f)));
        let column = self.column.as_deref().map(Filter::column_qualifier_regex);
        let time = self.time.map(|(start, end)| Filter::timestamp_range(TimeRange::new(start, end)));
        let newest = self.newest_per_column.then(|| Filter::cells_per_column_limit(1));
        let mut filters: Vec<Filter> = family.into_iter().chain(column).chain(time).chain(newest).collect();
        match filters.len() {
            0 => Filter::pass_all(),
            1 => filters.pop().unwrap_or_else(Filter::pass_all),
            _ => Filter::chain(filters),
        }
    }
}

/// One cell as an engine hands it to the lab, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Cell<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Family.
    pub family: &'a str,
    /// Qualifier.
    pub qualifier: &'a [u8],
    /// Timestamp, µs.
    pub timestamp: i64,
    /// Value.
    pub value: &'a [u8],
}

/// Reads `plan` on `table` with cellardb's public API, each row borrowed
/// from the read, handing each cell to `sink`.
///
/// # Errors
/// The read's errors.
pub fn read_cellardb(table: &Table, plan: &Plan, sink: &mut dyn FnMut(Cell<'_>)) -> Result<()> {
    let mut rows = table.read_rows(plan.row_set(), &plan.filter());
    match plan.one_row {
        Some(End::Last) => rows = rows.reversed().limit(1),
        Some(End::First) => rows = rows.limit(1),
        None => {}
    }
    while let Some(row) = rows.next_borrowed() {
        let row = row?;
        for cell in row.cells() {
            sink(Cell {
                row: row.key(),
                family: cell.family,
                qualifier: cell.qualifier,
                timestamp: cell.timestamp.micros(),
                value: cell.value,
            });
        }
    }
    Ok(())
}

/// How a design's row key is made, as the planner sees it.
#[derive(Debug, Clone)]
struct KeyShape {
    /// `parts[..entity_end]` is the entity's prefix.
    entity_end: usize,
    /// Where the series and the time are, if the key has them.
    series_at: Option<usize>,
    time_at: Option<usize>,
    /// How rows sort by the key's time.
    order: Order,
    /// The time one row holds: its bucket, the data's tick (a row per
    /// instant), or all of it (no time in the key).
    unit: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Ascending,
    Descending,
    Unsorted,
}

impl KeyShape {
    fn of(design: &Design, data: &Data) -> KeyShape {
        let parts = &design.row_key.parts;
        let find = |f: &dyn Fn(&Field) -> bool| parts.iter().position(|p| matches!(p, Part::Field(x) if f(x)));
        let series_at = find(&|f| matches!(f, Field::Series));
        let time_at = find(&|f| matches!(f, Field::Time(_)));
        let entity_end = [series_at, time_at].into_iter().flatten().min().unwrap_or(parts.len());
        let unit = design.bucket.or_else(|| time_at.map(|_| data.tick));
        let order = match (design.row_key.time_format(), unit) {
            (Some(format), Some(unit)) => time_order(format, unit, data),
            _ => Order::Unsorted,
        };
        KeyShape { entity_end, series_at, time_at, order, unit }
    }

    /// Whether a row holds exactly the instants of `[from, to)` that it
    /// holds at all: the window is made of whole rows.
    fn rows_fit(&self, from: i64, to: i64, data: &Data) -> bool {
        match self.unit {
            Some(unit) => {
                (from == data.start || bucket_start(from, unit) == from)
                    && (to == data.end || bucket_start(to, unit) == to)
            }
            None => from <= data.start && to >= data.end,
        }
    }
}

/// How the texts `format` writes for consecutive rows of `unit` sort over
/// the data: every text of the same length and each after (or each
/// before) the one before.
fn time_order(format: &crate::spec::time::TimeFormat, unit: i64, data: &Data) -> Order {
    let first = bucket_start(data.start, unit);
    let n = (data.end - first + unit - 1) / unit;
    let step = (n / 100_000).max(1);
    let texts: Vec<String> =
        (0..n).step_by(usize::try_from(step).unwrap_or(1)).map(|k| format.show(first + k * unit)).collect();
    let same_width = texts.windows(2).all(|w| w[0].len() == w[1].len());
    if same_width && texts.windows(2).all(|w| w[0] < w[1]) {
        Order::Ascending
    } else if same_width && texts.windows(2).all(|w| w[0] > w[1]) {
        Order::Descending
    } else {
        Order::Unsorted
    }
}

/// Whether `design` can answer a query of `shape` over `data`, and why not.
///
/// # Errors
/// Why not, in a sentence.
pub fn can_answer(design: &Design, shape: &QueryShape, data: &Data) -> std::result::Result<(), String> {
    let k = KeyShape::of(design, data);
    let parts = &design.row_key.parts;
    let entity = &parts[..k.entity_end];
    let unique = entity.iter().any(|p| match p {
        Part::Field(Field::EntityNumber) => true,
        Part::Field(Field::Entity(i)) => {
            matches!(data.entities.fields[*i].1, EntityField::Number { .. } | EntityField::Hex(_))
        }
        _ => false,
    });
    if !unique {
        return Err(
            "its row key does not start with a field that tells entities apart ({entity}, a number or a hex field)"
                .into(),
        );
    }
    let fixed_end = match entity.last() {
        Some(Part::Literal(_)) => true,
        Some(Part::Field(Field::Entity(i))) => match &data.entities.fields[*i].1 {
            EntityField::Hex(_) => true,
            EntityField::Number { offset, width } => {
                let digits = |n: u64| n.to_string().len();
                digits(*offset) == digits(offset + u64::from(data.entities.count) - 1)
                    || *width >= digits(offset + u64::from(data.entities.count) - 1)
            }
            _ => false,
        },
        _ => false,
    };
    if !fixed_end && k.entity_end < parts.len() {
        return Err("the entity's part of the row key does not end in a separator (such as `#`), so one entity's prefix would match another's keys".into());
    }
    if matches!(shape, QueryShape::Latest) {
        if k.time_at.is_some() && k.order == Order::Unsorted {
            return Err("the time in its row key does not sort, so the newest row cannot be found".into());
        }
        if let (Some(s), Some(t)) = (k.series_at, k.time_at)
            && s > t
        {
            return Err("its row key has the series after the time, so the newest event is not one row".into());
        }
    }
    Ok(())
}

/// The reads `design` makes for query `q` with parameters `p` in `form`.
pub fn plans(spec: &Spec, design: &Design, q: &QuerySpec, p: &Params, form: Form) -> Vec<Plan> {
    let data = &spec.data;
    let k = KeyShape::of(design, data);
    let key_for = |entity: u32, series: Option<usize>, time: i64, upto: usize| {
        let template =
            crate::spec::template::Template { parts: design.row_key.parts[..upto].to_vec(), text: String::new() };
        let mut out = String::new();
        write_template(spec, &template, entity, series, None, time, &mut out);
        out
    };
    let all = design.row_key.parts.len();
    let prefix = |e: u32| key_for(e, None, 0, k.entity_end);
    let per_series = k.series_at.is_some();
    let series_list: Vec<Option<usize>> =
        if per_series { (0..data.series.len()).map(Some).collect() } else { vec![None] };
    // The rows of entity `e` (series `s`) whose time lies in [from, to).
    let rows_in = |e: u32, s: Option<usize>, from: i64, to: i64| -> Rows {
        let Some(unit) = k.unit else { return Rows::Keys(vec![key_for(e, s, 0, all)]) };
        let first = bucket_start(from, unit);
        let units = (to - first + unit - 1) / unit;
        let upto = k.time_at.map_or(all, |t| t + 1);
        let last = bucket_start(to - 1, unit);
        if units > 1 && k.order == Order::Ascending {
            return Rows::Range(key_for(e, s, first, upto), key_for(e, s, last + unit, upto));
        }
        // Newest first: the window's keys run from its last row's down to
        // (not including) the key of the row before its first.
        if units > 1 && k.order == Order::Descending {
            return Rows::Range(key_for(e, s, last, upto), key_for(e, s, first - unit, upto));
        }
        Rows::Keys((0..units).map(|u| key_for(e, s, first + u * unit, all)).collect())
    };
    let time_filter = |from: i64, to: i64| (!k.rows_fit(from, to, data)).then_some((from, to));
    let per_value = matches!(design.cells, Cells::PerValue(_));
    match (&q.kind, form) {
        (QueryShape::EntityPeriod { .. } | QueryShape::SeriesWindow { .. }, _) => {
            let window = matches!(q.kind, QueryShape::SeriesWindow { .. });
            let series: Vec<Option<usize>> =
                if window && per_series { vec![Some(p.series)] } else { series_list.clone() };
            let column = if window && !per_series && per_value { series_filter(spec, design, p.series) } else { None };
            merge_keys(
                series
                    .into_iter()
                    .map(|s| {
                        let mut plan = Plan::new(rows_in(p.entity, s, p.from, p.to));
                        plan.time = time_filter(p.from, p.to);
                        if let Some((family, col)) = &column {
                            plan.family.clone_from(family);
                            plan.column.clone_from(col);
                        }
                        plan
                    })
                    .collect(),
            )
        }
        (QueryShape::Latest, Form::Natural) => {
            latest_natural(&k, &series_list, |s| key_for(p.entity, s, 0, k.time_at.unwrap_or(all)))
        }
        (QueryShape::Latest, Form::Tuned) => {
            let bucketed = k.unit.is_none_or(|u| u > data.tick);
            if !bucketed {
                let mut plans = latest_natural(&k, &series_list, |s| key_for(p.entity, s, 0, k.time_at.unwrap_or(all)));
                for plan in &mut plans {
                    plan.newest_per_column = false;
                }
                return plans;
            }
            let last = data.start + (data.end - data.start - 1) / data.tick * data.tick;
            let row_time = k.unit.map_or(0, |u| bucket_start(last, u));
            let keys = series_list.iter().map(|&s| key_for(p.entity, s, row_time, all)).collect();
            let mut clock = Plan::new(Rows::Keys(keys));
            clock.newest_per_column =
                per_value && !design.qualifier.has(|f| matches!(f, Field::Value | Field::Time(_)));
            let mut fallback = latest_natural(&k, &series_list, |s| key_for(p.entity, s, 0, k.time_at.unwrap_or(all)));
            for plan in &mut fallback {
                plan.only_if_empty = true;
            }
            std::iter::once(clock).chain(fallback).collect()
        }
        (QueryShape::Slice { .. }, Form::Natural) => (0..data.entities.count)
            .map(|e| {
                let rows = if k.entity_end == all { Rows::Keys(vec![prefix(e)]) } else { Rows::Prefix(prefix(e)) };
                Plan { time: Some((p.from, p.to)), ..Plan::new(rows) }
            })
            .collect(),
        (QueryShape::Slice { .. }, Form::Tuned) => {
            let row_time = k.unit.map_or(0, |u| bucket_start(p.from, u));
            let keys = (0..data.entities.count)
                .flat_map(|e| series_list.iter().map(move |&s| (e, s)))
                .map(|(e, s)| key_for(e, s, row_time, all))
                .collect();
            let exact = k.unit == Some(data.tick);
            vec![Plan { time: (!exact).then_some((p.from, p.to)), ..Plan::new(Rows::Keys(keys)) }]
        }
        (QueryShape::Scan, _) => vec![Plan { time: Some((p.from, p.to)), ..Plan::new(Rows::All) }],
    }
}

/// The natural read of an entity's newest event: the last row of its
/// prefix (of each series' prefix), each column's newest cell; the first
/// row where the key's time is reversed.
fn latest_natural(k: &KeyShape, series: &[Option<usize>], prefix: impl Fn(Option<usize>) -> String) -> Vec<Plan> {
    let end = if k.order == Order::Descending { End::First } else { End::Last };
    series
        .iter()
        .map(|&s| Plan { newest_per_column: true, one_row: Some(end), ..Plan::new(Rows::Prefix(prefix(s))) })
        .collect()
}

/// Plans of one key each, whose filters are the same, as one plan of all
/// their keys (one read, as a user lists keys).
fn merge_keys(plans: Vec<Plan>) -> Vec<Plan> {
    let mut out: Vec<Plan> = Vec::new();
    for plan in plans {
        if let (Some(last), Rows::Keys(keys)) = (out.last_mut(), &plan.rows) {
            let same_filters = (Plan { rows: Rows::All, ..last.clone() }) == (Plan { rows: Rows::All, ..plan.clone() });
            if let (true, Rows::Keys(into)) = (same_filters, &mut last.rows) {
                into.extend(keys.iter().cloned());
                continue;
            }
        }
        out.push(plan);
    }
    out
}

/// The filter that keeps one series' cells of a per-value design whose key
/// does not name the series: its family's, if the series has one of its
/// own, else a qualifier regex.
fn series_filter(spec: &Spec, design: &Design, series: usize) -> Option<(Option<String>, Option<String>)> {
    let family = design.families.iter().find(|f| f.series.contains(&series))?;
    if family.series.len() == 1 {
        return Some((Some(family.name.clone()), None));
    }
    if !design.qualifier.has(|f| matches!(f, Field::Series)) {
        return None;
    }
    let mut regex = String::new();
    for part in &design.qualifier.parts {
        match part {
            Part::Literal(t) => regex.push_str(&regex::escape(t)),
            Part::Field(Field::Series) => regex.push_str(&regex::escape(&spec.data.series[series].name)),
            Part::Field(_) => regex.push_str(".*"),
        }
    }
    Some((None, Some(regex)))
}

/// A cell copied out of a read: row key, family, qualifier, timestamp, value.
type OwnedCell = (Vec<u8>, String, Vec<u8>, i64, Vec<u8>);

/// Cells copied out of a read, to be checked once the timing is done.
#[derive(Debug, Default)]
pub struct Copied {
    cells: Vec<OwnedCell>,
}

impl Copied {
    /// Copies `c`.
    pub fn push(&mut self, c: Cell<'_>) {
        self.cells.push((c.row.to_vec(), c.family.to_owned(), c.qualifier.to_vec(), c.timestamp, c.value.to_vec()));
    }

    /// Cells copied.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// What the client makes of the cells its reads returned (read back by
/// `reader`, the design's): the measurements the query asks for, sorted.
///
/// # Errors
/// A message if a cell is not one the design writes.
pub fn answer(
    reader: &CellReader<'_>,
    q: &QuerySpec,
    p: &Params,
    cells: &Copied,
) -> std::result::Result<Vec<Measurement>, String> {
    let mut got = Vec::new();
    for (row, family, qualifier, timestamp, value) in &cells.cells {
        reader.read(row, family, qualifier, *timestamp, value, &mut got)?;
    }
    Ok(keep(q, p, got))
}

/// What query `q` with parameters `p` must return, from the generator.
pub fn expected(spec: &Spec, q: &QuerySpec, p: &Params) -> Vec<Measurement> {
    let mut all = Vec::new();
    let one_entity = !q.kind.is_cross_entity();
    let entities = if one_entity { p.entity..p.entity + 1 } else { 0..spec.data.entities.count };
    for e in entities {
        let mut newest = Vec::new();
        walk_entity(spec, e, p.to, &mut |event| {
            if matches!(q.kind, QueryShape::Latest) {
                newest.clear();
                measurements(spec, event, &mut newest);
            } else if event.time >= p.from {
                measurements(spec, event, &mut all);
            }
        });
        all.append(&mut newest);
    }
    keep(q, p, all)
}

/// Of `got`, what the query keeps, sorted and without repeats.
fn keep(q: &QuerySpec, p: &Params, mut got: Vec<Measurement>) -> Vec<Measurement> {
    let in_window = |m: &Measurement| m.time >= p.from && m.time < p.to;
    match q.kind {
        QueryShape::EntityPeriod { .. } => got.retain(|m| m.entity == p.entity && in_window(m)),
        QueryShape::SeriesWindow { .. } => got.retain(|m| m.entity == p.entity && m.series == p.series && in_window(m)),
        QueryShape::Latest => {
            got.retain(|m| m.entity == p.entity);
            let newest = got.iter().map(|m| m.time).max();
            got.retain(|m| Some(m.time) == newest);
        }
        QueryShape::Slice { top, .. } => {
            got.retain(in_window);
            if let Some((series, n)) = top {
                let mut ranked: Vec<(i64, u32)> =
                    got.iter().filter(|m| m.series == series).map(|m| (scaled(&m.value), m.entity)).collect();
                ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                let winners: HashSet<u32> = ranked.into_iter().take(n).map(|(_, e)| e).collect();
                got.retain(|m| winners.contains(&m.entity));
            }
        }
        QueryShape::Scan => got.retain(in_window),
    }
    got.sort();
    got.dedup();
    got
}

/// A decimal's text as an integer of its smallest unit, for ranking.
fn scaled(text: &str) -> i64 {
    text.replace('.', "").parse().unwrap_or(i64::MIN)
}
