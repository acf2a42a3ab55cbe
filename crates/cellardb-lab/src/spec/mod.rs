//! A schema spec: a user's data, the key designs to compare, and the queries
//! they will run, as a TOML file (`docs/lab.md` documents every field).
//!
//! [`Spec::parse`] reads the file into the raw form serde derives
//! ([`SpecFile`], which writes back out as TOML), then checks and resolves
//! it into a [`Spec`]: durations in microseconds, templates parsed, every
//! name looked up. Any mistake is one [`SpecError`] naming the file, line
//! and field; nothing is run before a spec has passed.

mod raw;
pub mod template;
pub mod time;

use std::path::Path;

pub use raw::SpecFile;
use raw::{RawDesign, RawEntityField, RawQuery, RawSeries, RawSize};
use template::{Field, Template};
use time::{SECOND, TimeFormat};
use toml::Spanned;

/// The balloon workload of `docs/workload.md` as a spec.
pub const BALLOONS: &str = include_str!("../../../../specs/balloons.toml");
/// The server-metrics example.
pub const SERVER_METRICS: &str = include_str!("../../../../specs/server-metrics.toml");

/// A mistake in a spec: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The file, as the user named it.
    pub file: String,
    /// Line, from 1 (0 if the mistake has no place, such as a missing file).
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// The field, as a path: `designs[2].row_key`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else if self.field.is_empty() {
            write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
        } else {
            write!(f, "{}:{}:{}: {}: {}", self.file, self.line, self.column, self.field, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

/// A checked spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The spec's name, used in reports and table names.
    pub name: String,
    /// What the data is, in a sentence.
    pub description: String,
    /// Seed of the data's generator.
    pub seed: u64,
    /// The data.
    pub data: Data,
    /// The key designs to compare.
    pub designs: Vec<Design>,
    /// The queries.
    pub queries: Vec<QuerySpec>,
}

/// The data set: entities, each reporting its series.
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    /// First instant, µs since the epoch.
    pub start: i64,
    /// End, exclusive.
    pub end: i64,
    /// The step of the generator's clock: the greatest common divisor of
    /// every series' cadence and start.
    pub tick: i64,
    /// The entities.
    pub entities: Entities,
    /// The series each entity reports, in the order values are drawn.
    pub series: Vec<Series>,
    /// Events that arrive late, if any do.
    pub late: Option<Late>,
}

/// The entities: how many, and the fields their keys are made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Entities {
    /// How many.
    pub count: u32,
    /// What one is called (`balloon`, `host`), for reports.
    pub noun: String,
    /// Fields, by name, in the order written.
    pub fields: Vec<(String, EntityField)>,
}

/// How an entity field's text is made from the entity's number `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityField {
    /// `values[i % len]`.
    Cycle(Vec<String>),
    /// `offset + i` in decimal, zero-padded to `width` digits.
    Number {
        /// Added to `i`.
        offset: u64,
        /// Digits at least.
        width: usize,
    },
    /// One of `values`, drawn for each entity from the seed.
    Pick(Vec<String>),
    /// `digits` hexadecimal digits drawn for each entity from the seed.
    Hex(usize),
}

/// One series of values that each entity reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Name (a qualifier, a protobuf field, a JSON key).
    pub name: String,
    /// How the values move.
    pub shape: Shape,
    /// Decimal places: an integer series' values are in units of 10^-decimals.
    pub decimals: u32,
    /// Time between values, µs.
    pub cadence: i64,
    /// First instant, µs since the epoch.
    pub start: i64,
    /// End, exclusive.
    pub end: i64,
    /// Fraction of values missing.
    pub gaps: f64,
}

/// How a series' values are made.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Starts uniformly in `initial`, steps uniformly in `[-step, step]`,
    /// held within `[min, max]`.
    RandomWalk {
        /// The first value's range, inclusive.
        initial: (i64, i64),
        /// Largest step.
        step: i64,
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// Starts uniformly in `initial`, grows by `[0, step]` each value.
    Counter {
        /// The first value's range, inclusive.
        initial: (i64, i64),
        /// Largest increment.
        step: i64,
    },
    /// One of `values`; at each value it changes with chance `change`.
    Categorical {
        /// The values.
        values: Vec<String>,
        /// Chance of a change at each value.
        change: f64,
    },
    /// Lowercase words of a length drawn from `size`.
    Text(Size),
    /// Random bytes of a length drawn from `size`.
    Blob(Size),
}

/// A distribution of lengths in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    /// Shortest.
    pub min: u32,
    /// Longest.
    pub max: u32,
    /// Uniform over `[min, max]`, or uniform in the logarithm (many short,
    /// few long).
    pub log_uniform: bool,
}

impl Shape {
    /// Whether values are integers (random walks and counters).
    pub fn is_numeric(&self) -> bool {
        matches!(self, Shape::RandomWalk { .. } | Shape::Counter { .. })
    }
}

/// Events arriving after their time: a fraction of them, each up to `by` late.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Late {
    /// Fraction of events late.
    pub fraction: f64,
    /// Most they are late by, µs.
    pub by: i64,
}

/// One key design: how events become rows, families and cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// Name.
    pub name: String,
    /// What it is, in a sentence.
    pub description: String,
    /// The row key.
    pub row_key: Template,
    /// Rows hold this much time (µs), if the key is bucketed.
    pub bucket: Option<i64>,
    /// Column families: name, GC rule, and which series go to each.
    pub families: Vec<Family>,
    /// One cell per value, or one serialized cell per event.
    pub cells: Cells,
    /// The qualifier.
    pub qualifier: Template,
}

/// A column family of a design.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Name.
    pub name: String,
    /// GC rule, in `cbt`'s words (`never`, `maxversions=1`, `maxage=7d`, `... or ...`).
    pub gc: String,
    /// The GC rule.
    pub rule: cellardb::GcRule,
    /// Indexes of the series written to it.
    pub series: Vec<usize>,
}

/// How a design lays out an event's values in cells.
#[derive(Debug, Clone, PartialEq)]
pub enum Cells {
    /// A cell per value, its value made from the template.
    PerValue(Template),
    /// A cell per event holding every value, serialized.
    PerEvent(Encoding),
}

/// How a serialized event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// A protocol-buffer message: field `n` is series `n` (from 1);
    /// integers as `int64` varints (sign-extended), decimals as `float`
    /// (fixed32), text and blobs as length-delimited bytes; a missing
    /// value's field is absent.
    Protobuf,
    /// A JSON object: series name → number or string (blobs in hex).
    Json,
}

impl Encoding {
    /// The encoding's name in a spec.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "json",
        }
    }
}

/// One query of a spec.
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySpec {
    /// Name.
    pub name: String,
    /// What it asks, in a sentence.
    pub description: String,
    /// What it reads.
    pub kind: QueryShape,
}

/// What a query asks.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryShape {
    /// Every value of one entity over a period (aligned as buckets are).
    EntityPeriod {
        /// The period, µs.
        period: i64,
    },
    /// One series of one entity over a window (aligned as buckets are).
    SeriesWindow {
        /// The window, µs.
        window: i64,
        /// The series, or `None` for one drawn at random each run.
        series: Option<usize>,
    },
    /// One entity's newest event.
    Latest,
    /// Every entity's values at one instant, one read per entity
    /// (natural) or one read of every entity's rows (tuned).
    Slice {
        /// Only instants at this time of day (µs after midnight UTC).
        at: Option<i64>,
        /// Only the `n` entities with the largest value of a series.
        top: Option<(usize, usize)>,
    },
    /// Every entity's values at one instant, in one scan of the table.
    Scan,
}

impl QueryShape {
    /// The kind's name in a spec.
    pub fn name(&self) -> &'static str {
        match self {
            QueryShape::EntityPeriod { .. } => "entity-period",
            QueryShape::SeriesWindow { .. } => "series-window",
            QueryShape::Latest => "latest",
            QueryShape::Slice { .. } => "slice",
            QueryShape::Scan => "scan",
        }
    }

    /// Whether the query reads every entity (and so runs a twentieth as
    /// often, or `SpecConfig::fleet_samples` times).
    pub fn is_cross_entity(&self) -> bool {
        matches!(self, QueryShape::Slice { .. } | QueryShape::Scan)
    }
}

/// Where a mistake is: the field's path and its byte span in the file.
struct At {
    field: String,
    span: std::ops::Range<usize>,
}

type Checked<T> = Result<T, (At, String)>;

fn at<T>(field: impl Into<String>, spanned: &Spanned<T>) -> At {
    At { field: field.into(), span: spanned.span() }
}

impl Spec {
    /// Reads and checks the spec in `path`.
    ///
    /// # Errors
    /// A [`SpecError`] naming the file, line and field of the first mistake.
    pub fn from_file(path: &Path) -> Result<Spec, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read it: {e}"),
        })?;
        Spec::parse(&text, &path.display().to_string())
    }

    /// Checks the spec `text`, read from `file` (named in errors).
    ///
    /// # Errors
    /// A [`SpecError`] naming `file`, the line and the field of the first
    /// mistake: TOML that does not parse, an unknown field, a value out of
    /// range, a template field that does not exist, a query a design cannot
    /// answer.
    pub fn parse(text: &str, file: &str) -> Result<Spec, SpecError> {
        let raw: SpecFile = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let (line, column) = line_column(text, span.start);
            SpecError {
                file: file.to_owned(),
                line,
                column,
                field: String::new(),
                message: e.message().trim().to_owned(),
            }
        })?;
        let spec = resolve(&raw).map_err(|(place, message)| {
            let (line, column) = line_column(text, place.span.start);
            SpecError { file: file.to_owned(), line, column, field: place.field, message }
        })?;
        spec.check_size().map_err(|message| {
            let (line, column) = line_column(text, raw.data.entities.count.span().start);
            SpecError { file: file.to_owned(), line, column, field: "data.entities".into(), message }
        })?;
        Ok(spec)
    }

    /// The balloon workload's spec.
    ///
    /// # Panics
    /// Never: the shipped spec is checked by the tests.
    pub fn balloons() -> Spec {
        Spec::parse(BALLOONS, "specs/balloons.toml").expect("the shipped balloon spec is valid")
    }

    /// The spec with `entities` entities and data lasting `duration` µs from
    /// its start (a series that ends before the data's end keeps its end,
    /// cut at the new one). Check the result with [`Spec::check_size`].
    #[must_use]
    pub fn resized(mut self, entities: Option<u32>, duration: Option<i64>) -> Spec {
        if let Some(n) = entities {
            self.data.entities.count = n;
        }
        if let Some(d) = duration {
            let new_end = self.data.start + d;
            for s in &mut self.data.series {
                s.end = if s.end == self.data.end { new_end } else { s.end.min(new_end) };
            }
            self.data.end = new_end;
        }
        self
    }

    /// Whether every design still tells its rows apart, and answers every
    /// query, at this spec's size (after [`Spec::resized`]: a week's number
    /// repeats after a year, a bucket's format may not tell every bucket of
    /// a longer run apart).
    ///
    /// # Errors
    /// What no longer holds, naming the design.
    pub fn check_size(&self) -> Result<(), String> {
        for (name, field) in &self.data.entities.fields {
            if let EntityField::Hex(digits) = field {
                self.check_hex_unique(name, *digits)?;
            }
        }
        for d in &self.designs {
            if let Some(format) = d.row_key.time_format()
                && let Some(t) = first_collision(format, d.bucket.unwrap_or(self.data.tick), &self.data)
            {
                return Err(format!(
                    "design {:?}: its time format {:?} writes {:?} for two rows of this run (at {}): run it shorter",
                    d.name,
                    format.as_str(),
                    format.show(t),
                    time::show_instant(t)
                ));
            }
            for q in &self.queries {
                crate::plan::can_answer(d, &q.kind, &self.data)
                    .map_err(|why| format!("design {:?} cannot answer query {:?}: {why}", d.name, q.name))?;
            }
        }
        Ok(())
    }

    /// Whether the hex field `name` of `digits` digits gives every entity
    /// its own text (drawn at random, a few digits repeat): every entity's
    /// up to two million, else 16 digits at least.
    fn check_hex_unique(&self, name: &str, digits: usize) -> Result<(), String> {
        let count = self.data.entities.count;
        let field = EntityField::Hex(digits);
        if count > 2_000_000 {
            return if digits >= 16 {
                Ok(())
            } else {
                Err(format!("field {name:?}: {count} entities need hex = 16 or more digits to tell apart"))
            };
        }
        let mut seen = std::collections::HashSet::new();
        for e in 0..count {
            let mut text = String::new();
            crate::generator::entity_field(self, &field, e, &mut text);
            if !seen.insert(text) {
                return Err(format!(
                    "field {name:?}: {digits} hex digits give two of the {count} entities the same id; use more"
                ));
            }
        }
        Ok(())
    }

    /// The design named `name`.
    pub fn design(&self, name: &str) -> Option<&Design> {
        self.designs.iter().find(|d| d.name == name)
    }

    /// The index of the series named `name`.
    pub fn series_index(&self, name: &str) -> Option<usize> {
        self.data.series.iter().position(|s| s.name == name)
    }
}

/// (line, column), from 1, of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn resolve(raw: &SpecFile) -> Checked<Spec> {
    let data = resolve_data(raw)?;
    let fields: Vec<String> = data.entities.fields.iter().map(|(n, _)| n.clone()).collect();
    let mut designs = Vec::new();
    for (i, d) in raw.designs.iter().enumerate() {
        let design = resolve_design(&format!("designs[{i}]"), d, &data, &fields)?;
        if designs.iter().any(|x: &Design| x.name == design.name) {
            return Err((at(format!("designs[{i}].name"), d), format!("a second design named {:?}", design.name)));
        }
        designs.push(design);
    }
    if designs.is_empty() {
        return Err((
            At { field: "designs".into(), span: 0..0 },
            "the spec has no design: add a [[designs]] table".into(),
        ));
    }
    let mut queries = Vec::new();
    for (i, q) in raw.queries.iter().enumerate() {
        let query = resolve_query(&format!("queries[{i}]"), q, &data)?;
        if queries.iter().any(|x: &QuerySpec| x.name == query.name) {
            return Err((at(format!("queries[{i}].name"), q), format!("a second query named {:?}", query.name)));
        }
        for d in &designs {
            if let Err(why) = crate::plan::can_answer(d, &query.kind, &data) {
                return Err((
                    at(format!("queries[{i}].kind"), &q.get_ref().kind),
                    format!("design {:?} cannot answer query {:?}: {why}", d.name, query.name),
                ));
            }
        }
        queries.push(query);
    }
    Ok(Spec {
        name: raw.name.get_ref().clone(),
        description: raw.description.clone().unwrap_or_default(),
        seed: raw.seed.unwrap_or(42),
        data,
        designs,
        queries,
    })
    .and_then(|spec| {
        if spec.name.get(..1).is_none() || !spec.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            Err((at("name", &raw.name), "a name is letters, digits, `-` and `_`".into()))
        } else {
            Ok(spec)
        }
    })
}

fn duration(field: &str, text: &Spanned<String>) -> Checked<i64> {
    let d = time::parse_duration(text.get_ref()).map_err(|e| (at(field, text), e))?;
    if d <= 0 {
        return Err((at(field, text), format!("{:?} must be longer than zero", text.get_ref())));
    }
    Ok(d)
}

fn fraction(field: &str, value: Option<&Spanned<f64>>) -> Checked<f64> {
    match value {
        None => Ok(0.0),
        Some(v) if (0.0..1.0).contains(v.get_ref()) => Ok(*v.get_ref()),
        Some(v) => Err((at(field, v), format!("{} is not a fraction in [0, 1)", v.get_ref()))),
    }
}

fn resolve_data(raw: &SpecFile) -> Checked<Data> {
    let d = &raw.data;
    let start = time::parse_instant(d.start.get_ref()).map_err(|e| (at("data.start", &d.start), e))?;
    let end = start + duration("data.duration", &d.duration)?;
    let cadence = duration("data.cadence", &d.cadence)?;
    let entities = resolve_entities(&d.entities)?;
    let mut series = Vec::new();
    for (i, s) in d.series.iter().enumerate() {
        let one = resolve_series(&format!("data.series[{i}]"), s, start, end, cadence)?;
        if series.iter().any(|x: &Series| x.name == one.name) {
            return Err((at(format!("data.series[{i}].name"), s), format!("a second series named {:?}", one.name)));
        }
        series.push(one);
    }
    if series.is_empty() {
        return Err((at("data", &d.start), "the data has no series: add a [[data.series]] table".into()));
    }
    let tick = series.iter().fold(0, |g, s| gcd(gcd(g, s.cadence), s.start - start));
    let late = match &d.late {
        None => None,
        Some(l) => {
            let fraction = fraction("data.late.fraction", Some(&l.get_ref().fraction))?;
            let by = duration("data.late.by", &l.get_ref().by)?;
            Some(Late { fraction, by })
        }
    };
    Ok(Data { start, end, tick, entities, series, late })
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

fn resolve_entities(raw: &raw::RawEntities) -> Checked<Entities> {
    let count = u32::try_from(*raw.count.get_ref())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| (at("data.entities.count", &raw.count), "there must be 1 to 4294967295 entities".into()))?;
    let mut fields = Vec::new();
    for (name, f) in &raw.fields {
        let place = || at(format!("data.entities.fields.{name}"), f);
        if ["entity", "series", "value", "time"].contains(&name.as_str()) {
            return Err((place(), format!("{name:?} is a field every template has; name this one otherwise")));
        }
        let RawEntityField { cycle, number, width, pick, hex } = f.get_ref();
        let field = match (cycle, number, pick, hex) {
            (Some(v), None, None, None) if !v.is_empty() => EntityField::Cycle(v.clone()),
            (None, Some(n), None, None) => EntityField::Number { offset: *n, width: width.unwrap_or(0) },
            (None, None, Some(v), None) if !v.is_empty() => EntityField::Pick(v.clone()),
            (None, None, None, Some(h)) if (1..=32).contains(h) => EntityField::Hex(*h),
            _ => {
                return Err((
                    place(),
                    "a field is exactly one of cycle = [..] (non-empty), number = N (with width = W), pick = [..] \
                     (non-empty) or hex = DIGITS (1 to 32)"
                        .into(),
                ));
            }
        };
        if width.is_some() && !matches!(field, EntityField::Number { .. }) {
            return Err((place(), "width is for number fields".into()));
        }
        fields.push((name.clone(), field));
    }
    Ok(Entities { count, noun: raw.noun.clone().unwrap_or_else(|| "entity".into()), fields })
}

fn resolve_series(field: &str, raw: &Spanned<RawSeries>, start: i64, end: i64, cadence: i64) -> Checked<Series> {
    let s = raw.get_ref();
    let place = |what: &str| at(format!("{field}.{what}"), raw);
    let cadence = match &s.cadence {
        Some(c) => duration(&format!("{field}.cadence"), c)?,
        None => cadence,
    };
    if cadence % SECOND != 0 && SECOND % cadence != 0 {
        return Err((place("cadence"), "a cadence is a whole number of seconds, or divides a second".into()));
    }
    let s_start = match &s.start {
        Some(t) => time::parse_instant(t.get_ref()).map_err(|e| (at(format!("{field}.start"), t), e))?,
        None => start,
    };
    let s_end = match &s.duration {
        Some(d) => s_start + duration(&format!("{field}.duration"), d)?,
        None => end,
    };
    if s_start < start || s_end > end || s_start >= s_end {
        return Err((place("start"), "a series lies within the data's start and duration".into()));
    }
    let shape = resolve_shape(field, raw)?;
    let decimals = s.decimals.unwrap_or(0);
    if decimals > 6 || (decimals > 0 && !shape.is_numeric()) {
        return Err((place("decimals"), "decimals (0 to 6) are for random walks and counters".into()));
    }
    let name = s.name.clone();
    if name.is_empty() || name.contains(['{', '}', '"', '\\']) || name.chars().any(char::is_control) {
        return Err((
            place("name"),
            "a series name is not empty and has no braces, quotes, backslashes or control characters".into(),
        ));
    }
    Ok(Series {
        name,
        shape,
        decimals,
        cadence,
        start: s_start,
        end: s_end,
        gaps: fraction(&format!("{field}.gaps"), s.gaps.as_ref())?,
    })
}

fn resolve_shape(field: &str, raw: &Spanned<RawSeries>) -> Checked<Shape> {
    let s = raw.get_ref();
    let kind = s.shape.get_ref().as_str();
    let place = |what: &str| at(format!("{field}.{what}"), raw);
    let numeric = [("initial", s.initial.is_some()), ("step", s.step.is_some())];
    let walk = [("min", s.min.is_some()), ("max", s.max.is_some())];
    let category = [("values", s.values.is_some()), ("change", s.change.is_some())];
    let sized = [("size", s.size.is_some())];
    let allowed: &[&str] = match kind {
        "random-walk" => &["initial", "step", "min", "max"],
        "counter" => &["initial", "step"],
        "categorical" => &["values", "change"],
        "text" | "blob" => &["size"],
        _ => {
            return Err((
                at(format!("{field}.shape"), &s.shape),
                format!("unknown shape {kind:?}: random-walk, counter, categorical, text or blob"),
            ));
        }
    };
    for (name, given) in numeric.iter().chain(&walk).chain(&category).chain(&sized) {
        if *given && !allowed.contains(name) {
            return Err((place(name), format!("{name} is not a setting of a {kind} series")));
        }
    }
    let initial = |default: (i64, i64)| -> Checked<(i64, i64)> {
        let (lo, hi) = s.initial.map_or(default, |[lo, hi]| (lo, hi));
        if lo > hi { Err((place("initial"), "initial = [low, high] with low ≤ high".into())) } else { Ok((lo, hi)) }
    };
    let step = s.step.unwrap_or(1);
    if !(0..=1 << 40).contains(&step) {
        return Err((place("step"), "a step is 0 to 2^40".into()));
    }
    Ok(match kind {
        "random-walk" => {
            let (min, max) = (s.min.unwrap_or(i64::MIN / 4), s.max.unwrap_or(i64::MAX / 4));
            let initial = initial((0, 0))?;
            if min > max || initial.0 < min || initial.1 > max {
                return Err((place("min"), "min ≤ initial ≤ max".into()));
            }
            Shape::RandomWalk { initial, step, min, max }
        }
        "counter" => Shape::Counter { initial: initial((0, 0))?, step },
        "categorical" => {
            let values = s.values.clone().unwrap_or_default();
            if values.is_empty() {
                return Err((place("values"), "a categorical series needs values = [..]".into()));
            }
            let change = fraction(&format!("{field}.change"), s.change.as_ref())?;
            Shape::Categorical { values, change }
        }
        _ => {
            let size = match s.size.as_ref().map(Spanned::get_ref) {
                None => return Err((place("size"), format!("a {kind} series needs a size"))),
                Some(RawSize::Fixed(n)) => Size { min: *n, max: *n, log_uniform: false },
                Some(RawSize::Range { min, max, distribution }) => {
                    let log_uniform = match distribution.as_deref() {
                        None | Some("uniform") => false,
                        Some("log-uniform") => true,
                        Some(other) => {
                            return Err((
                                place("size"),
                                format!("unknown distribution {other:?}: uniform or log-uniform"),
                            ));
                        }
                    };
                    Size { min: *min, max: *max, log_uniform }
                }
            };
            if size.min > size.max || size.max > 1 << 20 || (size.log_uniform && size.min == 0) {
                return Err((place("size"), "a size is 0 to 1 MiB, min ≤ max (and min ≥ 1 when log-uniform)".into()));
            }
            if kind == "text" { Shape::Text(size) } else { Shape::Blob(size) }
        }
    })
}

fn resolve_design(field: &str, raw: &Spanned<RawDesign>, data: &Data, fields: &[String]) -> Checked<Design> {
    let d = raw.get_ref();
    let template = |name: &str, t: &Spanned<String>| {
        Template::parse(t.get_ref(), fields).map_err(|e| (at(format!("{field}.{name}"), t), e))
    };
    let row_key = template("row_key", &d.row_key)?;
    let qualifier = template("qualifier", &d.qualifier)?;
    let per_event = match d.cells.get_ref().as_str() {
        "per-value" => false,
        "per-event" => true,
        other => {
            return Err((
                at(format!("{field}.cells"), &d.cells),
                format!("unknown cells {other:?}: per-value or per-event"),
            ));
        }
    };
    let cells = if per_event {
        if let Some(v) = &d.value {
            return Err((at(format!("{field}.value"), v), "a per-event design's value is its encoding".into()));
        }
        let encoding = match d.encoding.as_ref().map(|e| (e, e.get_ref().as_str())) {
            Some((_, "protobuf")) => Encoding::Protobuf,
            Some((_, "json")) => Encoding::Json,
            Some((e, other)) => {
                return Err((
                    at(format!("{field}.encoding"), e),
                    format!("unknown encoding {other:?}: protobuf or json"),
                ));
            }
            None => {
                return Err((at(format!("{field}.cells"), &d.cells), "a per-event design needs an encoding".into()));
            }
        };
        Cells::PerEvent(encoding)
    } else {
        if let Some(e) = &d.encoding {
            return Err((at(format!("{field}.encoding"), e), "an encoding is for per-event designs".into()));
        }
        let default = Spanned::new(0..0, "{value}".to_owned());
        Cells::PerValue(template("value", d.value.as_ref().unwrap_or(&default))?)
    };
    let bucket = match &d.bucket {
        Some(b) => {
            let size = duration(&format!("{field}.bucket"), b)?;
            if !time::is_bucket(size) {
                return Err((
                    at(format!("{field}.bucket"), b),
                    format!("a bucket of {} does not divide the day: use a divisor of 24h, 1d or 1w", b.get_ref()),
                ));
            }
            Some(size)
        }
        None => None,
    };
    let design = Design {
        name: d.name.clone(),
        description: d.description.clone().unwrap_or_default(),
        row_key,
        bucket,
        families: resolve_families(field, raw, data)?,
        cells,
        qualifier,
    };
    check_layout(field, raw, &design, data)?;
    Ok(design)
}

fn resolve_families(field: &str, raw: &Spanned<RawDesign>, data: &Data) -> Checked<Vec<Family>> {
    let d = raw.get_ref();
    if d.families.is_empty() {
        return Err((at(format!("{field}.families"), raw), "a design needs at least one family".into()));
    }
    let mut families: Vec<Family> = Vec::new();
    for (i, f) in d.families.iter().enumerate() {
        let place = || at(format!("{field}.families[{i}]"), raw);
        let gc = f.gc.clone().unwrap_or_else(|| "never".into());
        let rule = parse_gc(&gc).map_err(|e| (place(), e))?;
        if f.name.is_empty() || !f.name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
            return Err((place(), format!("{:?} is not a family name: letters, digits, `_`, `-` and `.`", f.name)));
        }
        if families.iter().any(|x| x.name == f.name) {
            return Err((place(), format!("a second family named {:?}", f.name)));
        }
        let mut series = Vec::new();
        for name in f.series.iter().flatten() {
            let s = data
                .series
                .iter()
                .position(|s| &s.name == name)
                .ok_or_else(|| (place(), format!("no series is named {name:?}")))?;
            if families.iter().any(|x| x.series.contains(&s)) {
                return Err((place(), format!("series {name:?} is in two families")));
            }
            series.push(s);
        }
        families.push(Family { name: f.name.clone(), gc, rule, series });
    }
    // Series no family names go to the first.
    for s in 0..data.series.len() {
        if !families.iter().any(|f| f.series.contains(&s)) {
            families[0].series.push(s);
        }
    }
    for f in &mut families {
        f.series.sort_unstable();
    }
    Ok(families)
}

/// A GC rule in `cbt`'s words: `never`, `maxversions=N`, `maxage=DURATION`,
/// or such rules joined by ` or ` (a union) or by ` and ` (an intersection).
///
/// # Errors
/// A message saying what is not understood.
pub fn parse_gc(text: &str) -> Result<cellardb::GcRule, String> {
    use cellardb::GcRule;
    let one = |t: &str| -> Result<GcRule, String> {
        match t.trim().split_once('=') {
            None if t.trim() == "never" => Ok(GcRule::none()),
            Some(("maxversions", n)) => n
                .trim()
                .parse()
                .ok()
                .filter(|&n: &u32| n > 0)
                .map(GcRule::max_versions)
                .ok_or_else(|| format!("maxversions={n}: a count of at least 1")),
            Some(("maxage", d)) => {
                let micros = time::parse_duration(d)?;
                Ok(GcRule::max_age(std::time::Duration::from_micros(micros.unsigned_abs())))
            }
            _ => Err(format!("{t:?} is not a GC rule: never, maxversions=N, maxage=DURATION, joined by `or` or `and`")),
        }
    };
    if text.contains(" or ") && text.contains(" and ") {
        return Err(format!("{text:?} mixes `or` and `and`: write one kind"));
    }
    if text.contains(" or ") {
        Ok(GcRule::union(text.split(" or ").map(one).collect::<Result<Vec<_>, _>>()?))
    } else if text.contains(" and ") {
        Ok(GcRule::intersection(text.split(" and ").map(one).collect::<Result<Vec<_>, _>>()?))
    } else {
        one(text)
    }
}

/// Checks that a design writes each value to one place its reader can find:
/// a per-value design names the series in its row key, qualifier or
/// family; no cell of an event lands on another's; its time format tells
/// apart the rows it must.
fn check_layout(field: &str, raw: &Spanned<RawDesign>, d: &Design, data: &Data) -> Checked<()> {
    let r = raw.get_ref();
    let err = |what: &str, span: &Spanned<String>, message: String| Err((at(format!("{field}.{what}"), span), message));
    if d.row_key.has(|f| matches!(f, Field::Value)) {
        return err("row_key", &r.row_key, "a row key cannot hold a value: values go in qualifiers or cells".into());
    }
    if !d.row_key.has(|f| matches!(f, Field::Entity(_) | Field::EntityNumber)) {
        return err("row_key", &r.row_key, "a row key must name the entity (one of its fields, or {entity})".into());
    }
    let per_event = matches!(d.cells, Cells::PerEvent(_));
    let series_in = |t: &Template| t.has(|f| matches!(f, Field::Series));
    if per_event && (series_in(&d.row_key) || series_in(&d.qualifier) || d.qualifier.has(|f| matches!(f, Field::Value)))
    {
        return err(
            "qualifier",
            &r.qualifier,
            "a per-event design writes one cell per event: its row key and qualifier cannot hold {series} or {value}"
                .into(),
        );
    }
    if !per_event {
        let one_series_family = d.families.iter().all(|f| f.series.len() <= 1);
        if !series_in(&d.row_key) && !series_in(&d.qualifier) && !one_series_family && data.series.len() > 1 {
            return err(
                "qualifier",
                &r.qualifier,
                "the values of different series would share a column: put {series} in the row key or the \
                 qualifier, or each series in a family of its own"
                    .into(),
            );
        }
        if let Cells::PerValue(v) = &d.cells
            && d.qualifier.has(|f| matches!(f, Field::Value))
            && v.has(|f| matches!(f, Field::Value))
        {
            return err("qualifier", &r.qualifier, "the value is in the qualifier: set value = \"\"".into());
        }
    }
    if per_event && d.families.len() > 1 {
        return Err((at(format!("{field}.families"), raw), "a per-event design writes one family".into()));
    }
    // The key's time must tell apart the rows the bucket (or the clock) cuts.
    let unit = d.bucket.unwrap_or(data.tick);
    match d.row_key.time_format() {
        Some(format) => {
            if let Some(t) = first_collision(format, unit, data) {
                return err(
                    "row_key",
                    &r.row_key,
                    format!(
                        "its time format {:?} writes {:?} for two rows (the {} from {} and a later one): it must tell apart every {} of the data",
                        format.as_str(),
                        format.show(t),
                        if d.bucket.is_some() { "bucket" } else { "instant" },
                        time::show_instant(t),
                        if d.bucket.is_some() { "bucket" } else { "instant" }
                    ),
                );
            }
        }
        // No time in the key: a row per entity (and series) holds every
        // instant, its cells told apart by timestamp; a bucket needs a time.
        None if d.bucket.is_some() => {
            return err("row_key", &r.row_key, "a bucketed design needs {time:FORMAT} in its row key".into());
        }
        None => {}
    }
    Ok(())
}

/// A bucket start (of the buckets of `unit` in the data) whose text in
/// `format` another bucket's text repeats: every bucket is compared with
/// every other up to two million of them; past that, each with the next
/// at two million places spread evenly.
fn first_collision(format: &TimeFormat, unit: i64, data: &Data) -> Option<i64> {
    let first = time::bucket_start(data.start, unit);
    let buckets = (data.end - first + unit - 1) / unit;
    if buckets <= 2_000_000 {
        let mut seen = std::collections::HashMap::new();
        return (0..buckets).map(|k| first + k * unit).find_map(|t| seen.insert(format.show(t), t));
    }
    let stride = usize::try_from(buckets / 2_000_000).unwrap_or(1).max(1);
    (0..buckets - 1).step_by(stride).map(|k| first + k * unit).find(|&t| format.show(t) == format.show(t + unit))
}

fn resolve_query(field: &str, raw: &Spanned<RawQuery>, data: &Data) -> Checked<QuerySpec> {
    let q = raw.get_ref();
    let place = |what: &str| at(format!("{field}.{what}"), raw);
    let given = [
        ("period", q.period.is_some()),
        ("window", q.window.is_some()),
        ("series", q.series.is_some()),
        ("at", q.at.is_some()),
        ("top", q.top.is_some()),
    ];
    let kind = q.kind.get_ref().as_str();
    let allowed: &[&str] = match kind {
        "entity-period" => &["period"],
        "series-window" => &["window", "series"],
        "slice" => &["at", "top"],
        "latest" | "scan" => &[],
        _ => {
            return Err((
                at(format!("{field}.kind"), &q.kind),
                format!("unknown kind {kind:?}: entity-period, series-window, latest, slice or scan"),
            ));
        }
    };
    for (name, is_given) in given {
        if is_given && !allowed.contains(&name) {
            return Err((place(name), format!("{name} is not a setting of a {kind} query")));
        }
    }
    let series = |name: &str| {
        data.series
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| (place("series"), format!("no series is named {name:?}")))
    };
    let aligned = |what: &str, text: &Option<Spanned<String>>| -> Checked<i64> {
        let text = text.as_ref().ok_or_else(|| (place(what), format!("a {kind} query needs a {what}")))?;
        let d = duration(&format!("{field}.{what}"), text)?;
        if !time::is_bucket(d) {
            return Err((at(format!("{field}.{what}"), text), format!("a {what} divides the day, or is 1d or 1w")));
        }
        Ok(d)
    };
    let shape = match kind {
        "entity-period" => QueryShape::EntityPeriod { period: aligned("period", &q.period)? },
        "series-window" => QueryShape::SeriesWindow {
            window: aligned("window", &q.window)?,
            series: q.series.as_deref().map(series).transpose()?,
        },
        "latest" => QueryShape::Latest,
        "scan" => QueryShape::Scan,
        _ => {
            let at = match &q.at {
                None => None,
                Some(t) => Some(time_of_day(t.get_ref()).map_err(|e| (place("at"), e))?),
            };
            let top = match &q.top {
                None => None,
                Some(t) => {
                    let s = series(&t.series)?;
                    if !data.series[s].shape.is_numeric() || t.n == 0 {
                        return Err((
                            place("top"),
                            "top = { series = NAME, n = N } ranks a numeric series, n ≥ 1".into(),
                        ));
                    }
                    Some((s, t.n))
                }
            };
            QueryShape::Slice { at, top }
        }
    };
    Ok(QuerySpec { name: q.name.clone(), description: q.description.clone().unwrap_or_default(), kind: shape })
}

/// `HH:MM` or `HH:MM:SS` as µs after midnight.
fn time_of_day(text: &str) -> Result<i64, String> {
    let parts: Vec<Option<i64>> = text.split(':').map(|p| p.parse().ok()).collect();
    let bad = || format!("{text:?} is not a time of day: write HH:MM or HH:MM:SS");
    match parts.as_slice() {
        [Some(h), Some(m)] if (0..24).contains(h) && (0..60).contains(m) => Ok((h * 3600 + m * 60) * SECOND),
        [Some(h), Some(m), Some(s)] if (0..24).contains(h) && (0..60).contains(m) && (0..60).contains(s) => {
            Ok((h * 3600 + m * 60 + s) * SECOND)
        }
        _ => Err(bad()),
    }
}
