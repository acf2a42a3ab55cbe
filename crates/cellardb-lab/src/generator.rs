//! The generator: a spec's data, deterministic from its seed and streamed,
//! never held whole.
//!
//! Each entity has its own SplitMix64 generator, started at `seed + entity`
//! (wrapping). When the entity is created it draws each series' first value
//! (in series order); at each instant it draws, in series order, the next
//! value of every series due then. So an entity's values depend on nothing
//! but the seed and its number, in whatever order events are written, and
//! the balloon spec draws exactly what `docs/workload.md` defines.
//!
//! Gaps and late arrivals never consume an entity's draws: whether a value
//! is missing, or an event late and by how much, is a hash of the seed, the
//! entity, the series and the instant.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::spec::{Data, EntityField, Shape, Size, Spec};
use crate::workload::SplitMix64;

/// One value of a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// No value (the series is not due, or has a gap).
    Absent,
    /// A random walk's or counter's value, in units of 10^-decimals.
    Int(i64),
    /// A categorical value: an index into the series' values.
    Category(u32),
    /// Text or a blob.
    Bytes(Vec<u8>),
}

/// What one entity reports at one instant: a value (or [`Value::Absent`])
/// per series, in series order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The entity's number.
    pub entity: u32,
    /// The instant, µs since the epoch.
    pub time: i64,
    /// A value per series.
    pub values: Vec<Value>,
}

impl Event {
    /// Whether the event holds no value.
    pub fn is_empty(&self) -> bool {
        self.values.iter().all(|v| *v == Value::Absent)
    }
}

/// One entity's generator and the current value of each series.
#[derive(Debug, Clone)]
struct EntityState {
    random: SplitMix64,
    /// Random walks' and counters' values; categorical series' indexes.
    current: Vec<i64>,
}

impl EntityState {
    fn new(spec: &Spec, entity: u32) -> EntityState {
        let mut random = SplitMix64(spec.seed.wrapping_add(u64::from(entity)));
        let current = spec
            .data
            .series
            .iter()
            .map(|s| match &s.shape {
                Shape::RandomWalk { initial, .. } | Shape::Counter { initial, .. } => {
                    initial.0 + draw(&mut random, initial.1 - initial.0 + 1)
                }
                Shape::Categorical { values, .. } => draw(&mut random, i64::try_from(values.len()).unwrap_or(1)),
                Shape::Text(_) | Shape::Blob(_) => 0,
            })
            .collect();
        EntityState { random, current }
    }

    /// Draws the values due at `time` into `event.values`.
    fn step(&mut self, spec: &Spec, entity: u32, time: i64, values: &mut [Value]) {
        for (i, s) in spec.data.series.iter().enumerate() {
            if !is_due(s, time) {
                values[i] = Value::Absent;
                continue;
            }
            let r = &mut self.random;
            let value = match &s.shape {
                Shape::RandomWalk { step, min, max, .. } => {
                    let v = (self.current[i] + draw(r, 2 * step + 1) - step).clamp(*min, *max);
                    self.current[i] = v;
                    Value::Int(v)
                }
                Shape::Counter { step, .. } => {
                    self.current[i] += draw(r, step + 1);
                    Value::Int(self.current[i])
                }
                Shape::Categorical { values: names, change } => {
                    let u = r.next_u64();
                    if unit_interval(u) < *change {
                        self.current[i] = i64::try_from(u % names.len() as u64).unwrap_or(0);
                    }
                    Value::Category(u32::try_from(self.current[i]).unwrap_or(0))
                }
                Shape::Text(size) => Value::Bytes(text(r, *size, reuse(&mut values[i]))),
                Shape::Blob(size) => Value::Bytes(blob(r, *size, reuse(&mut values[i]))),
            };
            values[i] = if s.gaps > 0.0 && unit_interval(hash(spec.seed, entity, i as u64, time, 1)) < s.gaps {
                Value::Absent
            } else {
                value
            };
        }
    }
}

/// The buffer of a bytes value, emptied, to be filled again.
fn reuse(v: &mut Value) -> Vec<u8> {
    match std::mem::replace(v, Value::Absent) {
        Value::Bytes(mut b) => {
            b.clear();
            b
        }
        _ => Vec::new(),
    }
}

fn is_due(s: &crate::spec::Series, time: i64) -> bool {
    time >= s.start && time < s.end && (time - s.start) % s.cadence == 0
}

/// `next() % n` as `docs/workload.md` defines a draw (`n` ≥ 1).
fn draw(r: &mut SplitMix64, n: i64) -> i64 {
    i64::try_from(r.next_u64() % n.max(1).unsigned_abs()).unwrap_or(0)
}

/// A number in `[0, 1)` from the top 53 bits of `u`.
fn unit_interval(u: u64) -> f64 {
    (u >> 11) as f64 / (1u64 << 53) as f64
}

/// A hash of where a value or event is, for the choices that must not use
/// the entity's draws (gaps, late arrivals, picked entity fields).
fn hash(seed: u64, entity: u32, series: u64, time: i64, purpose: u64) -> u64 {
    let mut h = SplitMix64(seed ^ purpose.wrapping_mul(0xA076_1D64_78BD_642F));
    h.0 ^= u64::from(entity).wrapping_mul(0xE703_7ED1_A0B4_28DB);
    let a = h.next_u64();
    let mut h = SplitMix64(a ^ series.wrapping_mul(0x8EBC_6AF0_9C88_C6E3) ^ time.cast_unsigned());
    h.next_u64()
}

fn length(r: &mut SplitMix64, size: Size) -> usize {
    let (min, max) = (i64::from(size.min), i64::from(size.max));
    let n = if size.log_uniform {
        let (lo, hi) = ((min as f64).ln(), ((max + 1) as f64).ln());
        #[allow(clippy::cast_possible_truncation, reason = "a length within [min, max]")]
        let n = (lo + unit_interval(r.next_u64()) * (hi - lo)).exp().floor() as i64;
        n.clamp(min, max)
    } else {
        min + draw(r, max - min + 1)
    };
    usize::try_from(n).unwrap_or(0)
}

/// Lowercase words: letters and spaces, 8 a draw.
fn text(r: &mut SplitMix64, size: Size, mut out: Vec<u8>) -> Vec<u8> {
    let n = length(r, size);
    while out.len() < n {
        for b in r.next_u64().to_le_bytes() {
            let c = b % 32;
            out.push(if c < 26 { b'a' + c } else { b' ' });
        }
    }
    out.truncate(n);
    out
}

fn blob(r: &mut SplitMix64, size: Size, mut out: Vec<u8>) -> Vec<u8> {
    let n = length(r, size);
    while out.len() < n {
        out.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    out.truncate(n);
    out
}

/// The instants of the data's clock: `start`, `start + tick`, … before `end`.
fn instants(data: &Data) -> impl Iterator<Item = i64> + use<> {
    let (start, tick) = (data.start, data.tick);
    let n = (data.end - data.start + tick - 1) / tick;
    (0..n).map(move |k| start + k * tick)
}

/// Hands `f` each of an entity's events before `until`, in time order
/// (late arrivals at their own time), borrowed: nothing is allocated an
/// event, so checking an answer disturbs little of what the reads use.
pub fn walk_entity(spec: &Spec, entity: u32, until: i64, f: &mut dyn FnMut(&Event)) {
    let mut state = EntityState::new(spec, entity);
    let mut e = Event { entity, time: 0, values: vec![Value::Absent; spec.data.series.len()] };
    for time in instants(&spec.data).take_while(|t| *t < until) {
        state.step(spec, entity, time, &mut e.values);
        e.time = time;
        if !e.is_empty() {
            f(&e);
        }
    }
}

/// Every event in arrival order: instant by instant, entities in order;
/// a late event arrives among the events of the first instant at or after
/// its time plus its delay, before them.
pub struct Arrivals<'a> {
    spec: &'a Spec,
    states: Vec<EntityState>,
    instants: Box<dyn Iterator<Item = i64> + 'a>,
    time: i64,
    next_entity: u32,
    /// Late events waiting: (arrival, entity, their time) → slot in `waiting`.
    late: BinaryHeap<Reverse<(i64, u32, i64, usize)>>,
    waiting: Vec<Option<Event>>,
    free: Vec<usize>,
    current: Event,
    done: bool,
}

impl<'a> Arrivals<'a> {
    /// The events of `spec`, from the start.
    pub fn new(spec: &'a Spec) -> Arrivals<'a> {
        let count = spec.data.entities.count;
        Arrivals {
            spec,
            states: Vec::with_capacity(count.min(1 << 16) as usize),
            instants: Box::new(instants(&spec.data)),
            time: i64::MIN,
            next_entity: count,
            late: BinaryHeap::new(),
            waiting: Vec::new(),
            free: Vec::new(),
            current: Event { entity: 0, time: 0, values: vec![Value::Absent; spec.data.series.len()] },
            done: false,
        }
    }

    /// The next event, or `None` after the last.
    #[allow(clippy::should_implement_trait, reason = "a lending iterator: the event is borrowed until the next call")]
    pub fn next(&mut self) -> Option<&Event> {
        loop {
            // Late events due by now go first.
            if let Some(&Reverse((arrival, _, _, slot))) = self.late.peek()
                && (arrival <= self.time || self.done)
            {
                self.late.pop();
                let e = self.waiting[slot].take()?;
                self.free.push(slot);
                self.current = e;
                return Some(&self.current);
            }
            if self.done {
                return None;
            }
            if self.next_entity == self.spec.data.entities.count {
                if let Some(t) = self.instants.next() {
                    (self.time, self.next_entity) = (t, 0);
                } else {
                    self.done = true;
                }
                continue;
            }
            let entity = self.next_entity;
            self.next_entity += 1;
            if self.states.len() <= entity as usize {
                self.states.push(EntityState::new(self.spec, entity));
            }
            let (time, spec) = (self.time, self.spec);
            self.states[entity as usize].step(spec, entity, time, &mut self.current.values);
            self.current.entity = entity;
            self.current.time = time;
            if self.current.is_empty() {
                continue;
            }
            if let Some(delay) = self.delay(entity, time) {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.waiting.push(None);
                    self.waiting.len() - 1
                });
                self.waiting[slot] = Some(self.current.clone());
                self.late.push(Reverse((time + delay, entity, time, slot)));
                continue;
            }
            return Some(&self.current);
        }
    }

    /// How late the event of `entity` at `time` arrives, if it is late: a
    /// whole number of ticks, at least one, at most the spec's `by`.
    fn delay(&self, entity: u32, time: i64) -> Option<i64> {
        let late = self.spec.data.late?;
        let h = hash(self.spec.seed, entity, u64::MAX, time, 2);
        if unit_interval(h) >= late.fraction {
            return None;
        }
        let tick = self.spec.data.tick;
        let ticks = (late.by / tick).max(1);
        Some(tick * (1 + i64::try_from((h >> 7) % ticks.unsigned_abs()).unwrap_or(0)))
    }
}

/// The text of entity `entity`'s field.
pub fn entity_field(spec: &Spec, field: &EntityField, entity: u32, out: &mut String) {
    use std::fmt::Write as _;
    match field {
        EntityField::Cycle(values) => out.push_str(&values[entity as usize % values.len()]),
        EntityField::Number { offset, width } => {
            let _ = write!(out, "{:0width$}", offset + u64::from(entity));
        }
        EntityField::Pick(values) => {
            let h = hash(spec.seed, entity, values.len() as u64, 0, 3);
            out.push_str(&values[usize::try_from(h % values.len() as u64).unwrap_or(0)]);
        }
        EntityField::Hex(digits) => {
            let h = hash(spec.seed, entity, 0, 0, 4);
            let h2 = hash(spec.seed, entity, 1, 0, 4);
            let _ = write!(out, "{:0>32}", format!("{h:016x}{h2:016x}"));
            out.truncate(out.len() - (32 - digits));
        }
    }
}

/// How many events the data holds at most (every series of every entity
/// due at every instant, no gap): for estimates.
pub fn instants_count(data: &Data) -> u64 {
    ((data.end - data.start + data.tick - 1) / data.tick).unsigned_abs()
}
