//! A key design at work: an event written as rows of cells, and a cell read
//! back as the values it holds.
//!
//! [`RowWriter`] turns an [`Event`] into the row mutations a design
//! prescribes: per value, the row its row-key template names and a cell
//! whose qualifier and value its templates make; per event, one cell
//! holding the event serialized ([`Encoding`]). [`CellReader`] undoes that
//! for a client: which entity, series and value a cell of the design holds.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Mutex;

use bytes::Bytes;
use cellardb::Mutation;
use regex::bytes::Regex;

use crate::generator::{Event, Value, entity_field};
use crate::spec::template::{Field, Part, Template};
use crate::spec::time::{bucket_start, push_digits};
use crate::spec::{Cells, Design, Encoding, EntityField, Series, Shape, Spec};

/// Writes events as a design's rows.
///
/// The lab must cost little beside the store it measures, so the writer
/// keeps what repeats: each entity's part of the row key (the parts before
/// the series or time), the text of the last instant of each time field,
/// the series' names as bytes kept for the process; a row key without the series is made
/// once an event, and values are moved into their cells, not copied.
pub struct RowWriter<'a> {
    spec: &'a Spec,
    design: &'a Design,
    /// The family of each series.
    family_of: Vec<&'a str>,
    /// The name of each series, for qualifiers that are the name alone.
    names: Vec<Bytes>,
    /// The row key's parts before its first series or time field.
    entity_end: usize,
    /// Each entity's text of those parts, once made (up to a million entities).
    entity_keys: Vec<String>,
    /// The qualifier, if it is literal text.
    literal_qualifier: Option<Bytes>,
    /// Per part of the row key, the last instant written and its text.
    times: Vec<(i64, String)>,
    /// Where a value or qualifier is written before it is copied to its
    /// cell.
    scratch: String,
}

/// Entities whose key parts the writer keeps, at most.
const KEPT_ENTITY_KEYS: u32 = 1 << 20;

impl<'a> RowWriter<'a> {
    /// A writer of `design`'s rows for `spec`'s events.
    pub fn new(spec: &'a Spec, design: &'a Design) -> RowWriter<'a> {
        let family_of = (0..spec.data.series.len())
            .map(|s| design.families.iter().find(|f| f.series.contains(&s)).map_or("", |f| f.name.as_str()))
            .collect();
        let names = spec.data.series.iter().map(|s| interned(&s.name)).collect();
        let parts = &design.row_key.parts;
        let entity_end = parts
            .iter()
            .position(|p| matches!(p, Part::Field(Field::Series | Field::Time(_) | Field::Value)))
            .unwrap_or(parts.len());
        let literal_qualifier = match design.qualifier.parts.as_slice() {
            [] => Some(Bytes::new()),
            [Part::Literal(t)] => Some(interned(t)),
            _ => None,
        };
        RowWriter {
            spec,
            design,
            family_of,
            names,
            entity_end,
            entity_keys: Vec::new(),
            literal_qualifier,
            times: vec![(i64::MIN, String::new()); parts.len()],
            scratch: String::new(),
        }
    }

    /// The rows that record `e`, each with its mutations, in the order of
    /// the series (a row's first series places it).
    pub fn rows(&mut self, e: &Event) -> Vec<(String, Vec<Mutation>)> {
        let design = self.design;
        let row_time = design.bucket.map_or(e.time, |b| bucket_start(e.time, b));
        let timestamp = cellardb::Timestamp::from(e.time);
        match &design.cells {
            Cells::PerEvent(encoding) => {
                let key = self.key(e, None, row_time);
                let qualifier = self.qualifier(e, None);
                let value = Bytes::from(encode(self.spec, *encoding, e).into_boxed_slice());
                let family = design.families[0].name.clone();
                vec![(key, vec![Mutation::SetCell { family, qualifier, timestamp, value }])]
            }
            Cells::PerValue(value_template) => {
                let series_in_key = design.row_key.has(|f| matches!(f, Field::Series));
                let mut shared_key = (!series_in_key).then(|| self.key(e, None, row_time));
                // A qualifier of the time alone is the same for every value of the event.
                let shared_qualifier = (!design.qualifier.has(|f| matches!(f, Field::Series | Field::Value)))
                    .then(|| self.qualifier(e, None));
                let mut rows: Vec<(String, Vec<Mutation>)> =
                    Vec::with_capacity(if series_in_key { e.values.len() } else { 1 });
                for (s, v) in e.values.iter().enumerate() {
                    if *v == Value::Absent {
                        continue;
                    }
                    let qualifier = match &shared_qualifier {
                        Some(q) => q.clone(),
                        None => self.qualifier(e, Some(s)),
                    };
                    let text = &mut self.scratch;
                    text.clear();
                    match value_template.parts.as_slice() {
                        [] => {}
                        [Part::Field(Field::Value)] => value_text(&self.spec.data.series[s], v, text),
                        _ => write_template(self.spec, value_template, e.entity, Some(s), Some(e), e.time, text),
                    }
                    let value = exact(text);
                    let family = self.family_of[s].to_owned();
                    let cell = Mutation::SetCell { family, qualifier, timestamp, value };
                    if series_in_key {
                        let key = self.key(e, Some(s), row_time);
                        if let Some((_, cells)) = rows.iter_mut().find(|(k, _)| *k == key) {
                            cells.push(cell);
                        } else {
                            let mut cells = Vec::with_capacity(e.values.len());
                            cells.push(cell);
                            rows.push((key, cells));
                        }
                    } else if let Some((_, cells)) = rows.first_mut() {
                        cells.push(cell);
                    } else {
                        let mut cells = Vec::with_capacity(e.values.len());
                        cells.push(cell);
                        rows.push((shared_key.take().unwrap_or_default(), cells));
                    }
                }
                rows
            }
        }
    }

    /// The row key of `e` (for series `series`), its time `time`.
    fn key(&mut self, e: &Event, series: Option<usize>, time: i64) -> String {
        let spec = self.spec;
        let parts = &self.design.row_key.parts;
        let mut out = String::with_capacity(48);
        if e.entity < KEPT_ENTITY_KEYS {
            let i = e.entity as usize;
            if self.entity_keys.len() <= i {
                self.entity_keys.resize(i + 1, String::new());
            }
            if self.entity_keys[i].is_empty() && self.entity_end > 0 {
                let mut text = String::new();
                write_parts(spec, &parts[..self.entity_end], e.entity, series, Some(e), time, &mut text);
                self.entity_keys[i] = text;
            }
            out.push_str(&self.entity_keys[i]);
        } else {
            write_parts(spec, &parts[..self.entity_end], e.entity, series, Some(e), time, &mut out);
        }
        for (i, part) in parts.iter().enumerate().skip(self.entity_end) {
            if let Part::Field(Field::Time(format)) = part {
                let (last, text) = &mut self.times[i];
                if *last != time {
                    text.clear();
                    format.write(time, text);
                    *last = time;
                }
                out.push_str(text);
            } else {
                write_parts(spec, std::slice::from_ref(part), e.entity, series, Some(e), time, &mut out);
            }
        }
        out
    }

    /// The qualifier of `e`'s cell (of series `series`).
    fn qualifier(&mut self, e: &Event, series: Option<usize>) -> Bytes {
        if let Some(q) = &self.literal_qualifier {
            return q.clone();
        }
        if let (Some(s), [Part::Field(Field::Series)]) = (series, self.design.qualifier.parts.as_slice()) {
            return self.names[s].clone();
        }
        let text = &mut self.scratch;
        text.clear();
        write_template(self.spec, &self.design.qualifier, e.entity, series, Some(e), e.time, text);
        exact(text)
    }
}

/// `text` as bytes that live as long as the process, so that cloning and
/// dropping them cost nothing (shared bytes count their references, and
/// a series' name is cloned into the qualifier of each of its cells).
/// Each distinct text is kept once: what stays is the names of the series
/// and the literal qualifiers of the specs a process has loaded.
fn interned(text: &str) -> Bytes {
    static KEPT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut kept = KEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = if let Some(name) = kept.get(text) {
        *name
    } else {
        let name: &'static str = Box::leak(text.into());
        kept.insert(name);
        name
    };
    Bytes::from_static(name.as_bytes())
}

/// `text` as bytes of their own, allocated to their length: a buffer with
/// room to spare would become a shared one, which costs an allocation and
/// atomic counts more.
fn exact(text: &str) -> Bytes {
    if text.is_empty() { Bytes::new() } else { Bytes::copy_from_slice(text.as_bytes()) }
}

/// Appends `template` to `out`, for entity `entity`, series `series`, the
/// values of `event` and instant `time`. A field with nothing to fill it
/// (no series, no event) writes nothing.
pub fn write_template(
    spec: &Spec,
    template: &Template,
    entity: u32,
    series: Option<usize>,
    event: Option<&Event>,
    time: i64,
    out: &mut String,
) {
    write_parts(spec, &template.parts, entity, series, event, time, out);
}

fn write_parts(
    spec: &Spec,
    parts: &[Part],
    entity: u32,
    series: Option<usize>,
    event: Option<&Event>,
    time: i64,
    out: &mut String,
) {
    for part in parts {
        match part {
            Part::Literal(t) => out.push_str(t),
            Part::Field(Field::Entity(i)) => entity_field(spec, &spec.data.entities.fields[*i].1, entity, out),
            Part::Field(Field::EntityNumber) => {
                let _ = write!(out, "{entity}");
            }
            Part::Field(Field::Series) => {
                if let Some(s) = series {
                    out.push_str(&spec.data.series[s].name);
                }
            }
            Part::Field(Field::Value) => {
                if let (Some(s), Some(e)) = (series, event) {
                    value_text(&spec.data.series[s], &e.values[s], out);
                }
            }
            Part::Field(Field::Time(f)) => f.write(time, out),
        }
    }
}

/// A value as text: integers in decimal with the series' decimals (`11.1`,
/// `-0.3`), categories by name, text as it is, blobs in hex.
pub fn value_text(series: &Series, v: &Value, out: &mut String) {
    match v {
        Value::Absent => {}
        Value::Int(i) => write_decimal(*i, series.decimals, out),
        Value::Category(c) => {
            if let Shape::Categorical { values, .. } = &series.shape {
                out.push_str(&values[*c as usize]);
            }
        }
        Value::Bytes(b) => {
            if matches!(series.shape, Shape::Text(_)) {
                out.push_str(&String::from_utf8_lossy(b));
            } else {
                for byte in b {
                    let _ = write!(out, "{byte:02x}");
                }
            }
        }
    }
}

fn write_decimal(v: i64, decimals: u32, out: &mut String) {
    if v < 0 {
        out.push('-');
    }
    let a = v.unsigned_abs();
    if decimals == 0 {
        push_digits(a, 1, out);
        return;
    }
    let scale = 10u64.pow(decimals);
    push_digits(a / scale, 1, out);
    out.push('.');
    push_digits(a % scale, decimals as usize, out);
}

/// Event `e` serialized in `encoding`.
pub fn encode(spec: &Spec, encoding: Encoding, e: &Event) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    match encoding {
        Encoding::Protobuf => {
            for (i, (s, v)) in spec.data.series.iter().zip(&e.values).enumerate() {
                let field = (i as u64 + 1) << 3;
                match v {
                    Value::Absent => {}
                    Value::Int(x) if s.decimals > 0 => {
                        put_varint(&mut out, field | 5);
                        #[allow(
                            clippy::cast_possible_truncation,
                            reason = "a float field holds a value of a few digits"
                        )]
                        let f = *x as f32 / 10u32.pow(s.decimals) as f32;
                        out.extend_from_slice(&f.to_le_bytes());
                    }
                    Value::Int(x) => {
                        put_varint(&mut out, field);
                        put_varint(&mut out, x.cast_unsigned());
                    }
                    Value::Bytes(bytes) => put_bytes(&mut out, field, bytes),
                    Value::Category(_) => {
                        let mut text = String::new();
                        value_text(s, v, &mut text);
                        put_bytes(&mut out, field, text.as_bytes());
                    }
                }
            }
        }
        Encoding::Json => {
            let mut text = String::from("{");
            for (s, v) in spec.data.series.iter().zip(&e.values) {
                if *v == Value::Absent {
                    continue;
                }
                if text.len() > 1 {
                    text.push(',');
                }
                // Series names hold no quote, backslash or control character.
                text.push('"');
                text.push_str(&s.name);
                text.push_str("\":");
                let mut shown = String::new();
                value_text(s, v, &mut shown);
                if s.shape.is_numeric() {
                    text.push_str(&shown);
                } else {
                    text.push_str(&serde_json::to_string(&shown).unwrap_or_default());
                }
            }
            text.push('}');
            out = text.into_bytes();
        }
    }
    out
}

/// A length-delimited field: its tag, length and bytes.
fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, field | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends `v` as a protocol-buffer varint (LEB128).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push((v & 0x7f) as u8);
}

/// A protocol-buffer varint at the start of `bytes`, and the bytes after it.
pub(crate) fn read_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, &bytes[i + 1..]));
        }
    }
    None
}

/// One value a cell holds, as a client reads it back: whose, when, which
/// series, and the value's text ([`value_text`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Measurement {
    /// The entity's number.
    pub entity: u32,
    /// The instant, µs.
    pub time: i64,
    /// The series' index.
    pub series: usize,
    /// The value as text.
    pub value: String,
}

/// Reads a design's cells back into measurements, as a client would.
pub struct CellReader<'a> {
    spec: &'a Spec,
    design: &'a Design,
    key: Regex,
    qualifier: Regex,
    value: Option<Regex>,
    /// For hex entity fields: the text of each entity's field, to look up.
    hex_entities: Option<std::collections::HashMap<String, u32>>,
}

impl<'a> CellReader<'a> {
    /// A reader of `design`'s cells.
    ///
    /// # Panics
    /// Never: the patterns are built from escaped text.
    pub fn new(spec: &'a Spec, design: &'a Design) -> CellReader<'a> {
        let regex = |t: &Template| Regex::new(&pattern(spec, t)).expect("a pattern of escaped parts");
        let value = match &design.cells {
            Cells::PerValue(t) => Some(regex(t)),
            Cells::PerEvent(_) => None,
        };
        let hex = design.row_key.parts.iter().find_map(|p| match p {
            Part::Field(Field::Entity(i)) if matches!(spec.data.entities.fields[*i].1, EntityField::Hex(_)) => Some(*i),
            _ => None,
        });
        let hex_entities = hex.map(|i| {
            (0..spec.data.entities.count)
                .map(|e| {
                    let mut t = String::new();
                    entity_field(spec, &spec.data.entities.fields[i].1, e, &mut t);
                    (t, e)
                })
                .collect()
        });
        CellReader {
            spec,
            design,
            key: regex(&design.row_key),
            qualifier: regex(&design.qualifier),
            value,
            hex_entities,
        }
    }

    /// The measurements of one cell: row `key`, `family`, `qualifier`,
    /// `timestamp` and `value`, appended to `out`.
    ///
    /// # Errors
    /// A message when the cell is not one the design writes.
    pub fn read(
        &self,
        key: &[u8],
        family: &str,
        qualifier: &[u8],
        timestamp: i64,
        value: &[u8],
        out: &mut Vec<Measurement>,
    ) -> Result<(), String> {
        let bad =
            |what: &str| format!("{:?} is not a row of {}: {what}", String::from_utf8_lossy(key), self.design.name);
        let k = self.key.captures(key).ok_or_else(|| bad("the key does not match its template"))?;
        let entity = self.entity(&k).ok_or_else(|| bad("no entity in the key"))?;
        let q = self.qualifier.captures(qualifier).ok_or_else(|| bad("the qualifier does not match its template"))?;
        let series_of = |c: &regex::bytes::Captures<'_>| {
            c.name("series").and_then(|m| self.spec.data.series.iter().position(|s| s.name.as_bytes() == m.as_bytes()))
        };
        match &self.design.cells {
            Cells::PerEvent(encoding) => {
                let values = decode(self.spec, *encoding, value).ok_or_else(|| bad("the cell does not decode"))?;
                for (series, v) in values.into_iter().enumerate() {
                    if let Some(value) = v {
                        out.push(Measurement { entity, time: timestamp, series, value });
                    }
                }
            }
            Cells::PerValue(_) => {
                let family_series =
                    self.design.families.iter().find(|f| f.name == family).and_then(|f| match f.series[..] {
                        [only] => Some(only),
                        _ => None,
                    });
                let series =
                    series_of(&k).or_else(|| series_of(&q)).or(family_series).ok_or_else(|| bad("no series"))?;
                let v = self.value.as_ref().and_then(|r| r.captures(value));
                let text = q
                    .name("value")
                    .or_else(|| v.as_ref().and_then(|v| v.name("value")))
                    .ok_or_else(|| bad("no value"))?;
                let value = String::from_utf8(text.as_bytes().to_vec()).map_err(|_| bad("the value is not text"))?;
                out.push(Measurement { entity, time: timestamp, series, value });
            }
        }
        Ok(())
    }

    fn entity(&self, k: &regex::bytes::Captures<'_>) -> Option<u32> {
        let text = |name: &str| k.name(name).and_then(|m| std::str::from_utf8(m.as_bytes()).ok());
        if let Some(n) = text("entity") {
            return n.parse().ok();
        }
        for (i, (_, field)) in self.spec.data.entities.fields.iter().enumerate() {
            let Some(t) = text(&format!("e{i}")) else { continue };
            match field {
                EntityField::Number { offset, .. } => {
                    return t.parse::<u64>().ok()?.checked_sub(*offset).and_then(|n| u32::try_from(n).ok());
                }
                EntityField::Hex(_) => return self.hex_entities.as_ref()?.get(t).copied(),
                EntityField::Cycle(_) | EntityField::Pick(_) => {}
            }
        }
        None
    }
}

/// A regex matching every text `template` writes, with groups named
/// `entity`, `e{i}` (entity field `i`), `series` and `value`.
fn pattern(spec: &Spec, template: &Template) -> String {
    let mut out = String::from("^(?s-u:");
    let mut seen = std::collections::HashSet::new();
    for part in &template.parts {
        let (name, body) = match part {
            Part::Literal(t) => {
                out.push_str(&regex::escape(t));
                continue;
            }
            Part::Field(Field::Time(_)) => {
                out.push_str(".*?");
                continue;
            }
            Part::Field(Field::EntityNumber) => ("entity".to_owned(), "[0-9]+".to_owned()),
            Part::Field(Field::Series) => {
                let names: Vec<String> = spec.data.series.iter().map(|s| regex::escape(&s.name)).collect();
                ("series".to_owned(), names.join("|"))
            }
            Part::Field(Field::Value) => ("value".to_owned(), ".*?".to_owned()),
            Part::Field(Field::Entity(i)) => (
                format!("e{i}"),
                match &spec.data.entities.fields[*i].1 {
                    EntityField::Number { .. } => "[0-9]+".to_owned(),
                    EntityField::Hex(n) => format!("[0-9a-f]{{{n}}}"),
                    EntityField::Cycle(v) | EntityField::Pick(v) => {
                        v.iter().map(|x| regex::escape(x)).collect::<Vec<_>>().join("|")
                    }
                },
            ),
        };
        // A field written twice is matched the second time without a name.
        if seen.insert(name.clone()) {
            let _ = write!(out, "(?P<{name}>{body})");
        } else {
            let _ = write!(out, "(?:{body})");
        }
    }
    out.push_str(")$");
    out
}

/// The values of a serialized event, as text per series (`None` where
/// absent); `None` if the bytes are not such an event.
pub fn decode(spec: &Spec, encoding: Encoding, bytes: &[u8]) -> Option<Vec<Option<String>>> {
    let series = &spec.data.series;
    let mut values = vec![None; series.len()];
    match encoding {
        Encoding::Protobuf => {
            let mut rest = bytes;
            while !rest.is_empty() {
                let (tag, tail) = read_varint(rest)?;
                let i = usize::try_from(tag >> 3).ok()?.checked_sub(1)?;
                let s = series.get(i)?;
                let mut text = String::new();
                rest = match tag & 7 {
                    0 => {
                        let (v, tail) = read_varint(tail)?;
                        value_text(s, &Value::Int(v.cast_signed()), &mut text);
                        tail
                    }
                    5 => {
                        let (b, tail) = tail.split_first_chunk::<4>()?;
                        #[allow(clippy::cast_possible_truncation, reason = "a float of a few digits, rounded")]
                        let v =
                            (f64::from(f32::from_le_bytes(*b)) * 10f64.powi(s.decimals.cast_signed())).round() as i64;
                        value_text(s, &Value::Int(v), &mut text);
                        tail
                    }
                    2 => {
                        let (n, tail) = read_varint(tail)?;
                        let n = usize::try_from(n).ok()?;
                        if tail.len() < n {
                            return None;
                        }
                        let (b, tail) = tail.split_at(n);
                        match s.shape {
                            Shape::Blob(_) => value_text(s, &Value::Bytes(b.to_vec()), &mut text),
                            _ => text = String::from_utf8(b.to_vec()).ok()?,
                        }
                        tail
                    }
                    _ => return None,
                };
                values[i] = Some(text);
            }
        }
        Encoding::Json => {
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(bytes).ok()?;
            for (name, v) in object {
                let i = series.iter().position(|s| s.name == name)?;
                let s = &series[i];
                values[i] = Some(match v {
                    serde_json::Value::String(t) if !s.shape.is_numeric() => t,
                    serde_json::Value::Number(n) if s.shape.is_numeric() => {
                        #[allow(clippy::cast_possible_truncation, reason = "a decimal of a few digits, rounded")]
                        let v = match n.as_i64() {
                            Some(v) if s.decimals == 0 => v,
                            _ => (n.as_f64()? * 10f64.powi(s.decimals.cast_signed())).round() as i64,
                        };
                        let mut text = String::new();
                        value_text(s, &Value::Int(v), &mut text);
                        text
                    }
                    _ => return None,
                });
            }
        }
    }
    Some(values)
}

/// What `e` holds, as measurements.
pub fn measurements(spec: &Spec, e: &Event, out: &mut Vec<Measurement>) {
    for (series, v) in e.values.iter().enumerate() {
        if *v != Value::Absent {
            let mut value = String::new();
            value_text(&spec.data.series[series], v, &mut value);
            out.push(Measurement { entity: e.entity, time: e.time, series, value });
        }
    }
}

/// Logical bytes of `rows`, as `docs/workload.md` defines them: per cell,
/// row key + family + qualifier + value + 8.
pub fn logical_size(rows: &[(String, Vec<Mutation>)]) -> u64 {
    let mut total = 0;
    for (row, mutations) in rows {
        for m in mutations {
            if let Mutation::SetCell { family, qualifier, value, .. } = m {
                total += (row.len() + family.len() + qualifier.len() + value.len() + 8) as u64;
            }
        }
    }
    total
}
