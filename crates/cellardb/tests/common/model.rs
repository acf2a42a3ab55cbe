//! A plain in-memory model of Bigtable's semantics, written without any of
//! cellardb's machinery, to compare the engine against.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;

use cellardb::{Aggregate, Mutation, TimeRange};

/// A cell's value, and whether `max_versions` counted it out: pushed out of
/// its column's newest `n` live cells after some mutation (for good).
#[derive(Debug, Clone)]
pub struct CellState {
    pub value: Vec<u8>,
    pub counted_out: bool,
}

/// Columns of a row: (family, qualifier) → timestamp (newest first) → cell.
type Columns = BTreeMap<(String, Vec<u8>), BTreeMap<Reverse<i64>, CellState>>;

/// A GC rule, mirrored by hand.
#[derive(Debug, Clone)]
pub enum ModelGc {
    None,
    Versions(usize),
    /// Maximum age in µs.
    Age(i64),
    Union(Vec<ModelGc>),
    Intersection(Vec<ModelGc>),
}

impl ModelGc {
    pub fn collects(&self, counted_out: bool, ts: i64, now: i64) -> bool {
        match self {
            ModelGc::None => false,
            ModelGc::Versions(_) => counted_out,
            ModelGc::Age(age) => ts < now - age,
            ModelGc::Union(rules) => rules.iter().any(|r| r.collects(counted_out, ts, now)),
            ModelGc::Intersection(rules) => rules.iter().all(|r| r.collects(counted_out, ts, now)),
        }
    }

    /// The rule's `max_versions` limit (the model uses one per rule).
    pub fn limit(&self) -> Option<usize> {
        match self {
            ModelGc::Versions(n) => Some(*n),
            ModelGc::None | ModelGc::Age(_) => None,
            ModelGc::Union(rules) | ModelGc::Intersection(rules) => rules.iter().find_map(ModelGc::limit),
        }
    }
}

/// A cell: (row, family, qualifier, timestamp, value).
pub type ModelCell = (Vec<u8>, String, Vec<u8>, i64, Vec<u8>);

/// Filters the model understands (a subset of Bigtable's, mirrored by hand).
#[derive(Debug, Clone)]
pub enum ModelFilter {
    PassAll,
    BlockAll,
    Family(String),
    Qualifier(Vec<u8>),
    ColumnRange(String, Bound<Vec<u8>>, Bound<Vec<u8>>),
    Timestamps(i64, Option<i64>),
    PerColumn(usize),
    Chain(Vec<ModelFilter>),
    Interleave(Vec<ModelFilter>),
    Condition(Box<ModelFilter>, Option<Box<ModelFilter>>, Option<Box<ModelFilter>>),
    ValueRange(Bound<Vec<u8>>, Bound<Vec<u8>>),
    RowOffset(usize),
    RowLimit(usize),
    StripValue,
}

/// The model database: rows of one table, each family's GC rule, and the
/// aggregate of each aggregate family.
#[derive(Debug, Default, Clone)]
pub struct Model {
    pub rows: BTreeMap<Vec<u8>, Columns>,
    pub gc: BTreeMap<String, ModelGc>,
    pub aggregates: BTreeMap<String, Aggregate>,
}

impl Model {
    /// Applies a row mutation in order, as Bigtable does; after each
    /// mutation, each column keeps its newest `n` cells not yet counted out
    /// (its family's `max_versions` limit) and counts out the rest, for good.
    pub fn apply(&mut self, key: &[u8], mutations: &[Mutation]) {
        let limits: BTreeMap<String, Option<usize>> = self.gc.iter().map(|(f, r)| (f.clone(), r.limit())).collect();
        let families: Vec<String> = self.gc.keys().cloned().collect();
        let aggregates = self.aggregates.clone();
        let row = self.rows.entry(key.to_vec()).or_default();
        for m in mutations {
            match m {
                Mutation::SetCell { family, qualifier, timestamp, value } => {
                    let col = row.entry((family.clone(), qualifier.to_vec())).or_default();
                    if let Some(agg) = aggregates.get(family) {
                        add(col, *agg, timestamp.micros(), i64::from_be_bytes(value[..].try_into().unwrap()));
                    } else {
                        let cell = CellState { value: value.to_vec(), counted_out: false };
                        col.insert(Reverse(timestamp.micros()), cell);
                    }
                }
                Mutation::AddToCell { family, qualifier, timestamp, input } => {
                    let col = row.entry((family.clone(), qualifier.to_vec())).or_default();
                    add(col, aggregates[family], timestamp.micros(), *input);
                }
                Mutation::DeleteFromColumn { family, qualifier, range } => {
                    if let Some(col) = row.get_mut(&(family.clone(), qualifier.to_vec())) {
                        col.retain(|Reverse(ts), _| !in_range(range, *ts));
                    }
                }
                Mutation::DeleteFromFamily { family } => row.retain(|(f, _), _| f != family),
                Mutation::DeleteFromRow => row.retain(|(f, _), _| !families.contains(f)),
            }
            for ((family, _), col) in row.iter_mut() {
                let Some(n) = limits.get(family).copied().flatten() else { continue };
                for (rank, cell) in col.values_mut().filter(|c| !c.counted_out).enumerate() {
                    cell.counted_out = rank >= n;
                }
            }
        }
        row.retain(|_, col| !col.is_empty());
        if row.is_empty() {
            self.rows.remove(key);
        }
    }

    /// Drops every row `wanted` says, in every family.
    pub fn drop_rows(&mut self, wanted: impl Fn(&[u8]) -> bool) {
        self.rows.retain(|k, _| !wanted(k));
    }

    /// The cells of `row` that its families' GC rules keep, in model order.
    fn live_cells(&self, key: &[u8], columns: &Columns, now: i64) -> Vec<ModelCell> {
        let mut out = Vec::new();
        for ((family, q), cells) in columns {
            let rule = self.gc.get(family).cloned().unwrap_or(ModelGc::None);
            for (Reverse(ts), c) in cells {
                if !rule.collects(c.counted_out, *ts, now) {
                    out.push((key.to_vec(), family.clone(), q.clone(), *ts, c.value.clone()));
                }
            }
        }
        out
    }

    /// Reads the rows whose keys are `wanted` through `filter`, in key order
    /// or reversed, at most `limit` rows.
    pub fn read(
        &self,
        wanted: impl Fn(&[u8]) -> bool,
        filter: &ModelFilter,
        reverse: bool,
        limit: Option<usize>,
    ) -> Vec<Vec<ModelCell>> {
        let now = cellardb::Timestamp::from(std::time::SystemTime::now()).micros();
        let mut rows: Vec<Vec<ModelCell>> = self
            .rows
            .iter()
            .filter(|(k, _)| wanted(k))
            .map(|(k, cols)| filter.apply(self.live_cells(k, cols, now)))
            .filter(|cells| !cells.is_empty())
            .collect();
        if reverse {
            rows.reverse();
        }
        rows.truncate(limit.unwrap_or(usize::MAX));
        rows
    }
}

/// Merges `input` into the cell at `ts`; a cell counted out was collected,
/// so the input starts a new one.
fn add(col: &mut BTreeMap<Reverse<i64>, CellState>, agg: Aggregate, ts: i64, input: i64) {
    let value = match col.get(&Reverse(ts)) {
        Some(c) if !c.counted_out => agg.merge(i64::from_be_bytes(c.value[..].try_into().unwrap()), input),
        _ => input,
    };
    col.insert(Reverse(ts), CellState { value: value.to_be_bytes().to_vec(), counted_out: false });
}

fn in_range(r: &TimeRange, ts: i64) -> bool {
    r.contains(ts)
}

impl ModelFilter {
    pub fn apply(&self, cells: Vec<ModelCell>) -> Vec<ModelCell> {
        match self {
            ModelFilter::PassAll => cells,
            ModelFilter::BlockAll => Vec::new(),
            ModelFilter::Family(f) => cells.into_iter().filter(|c| &c.1 == f).collect(),
            ModelFilter::Qualifier(q) => cells.into_iter().filter(|c| &c.2 == q).collect(),
            ModelFilter::ColumnRange(f, lo, hi) => {
                cells.into_iter().filter(|c| &c.1 == f && after(lo, &c.2) && before(hi, &c.2)).collect()
            }
            ModelFilter::Timestamps(start, end) => {
                cells.into_iter().filter(|c| c.3 >= *start && end.is_none_or(|e| c.3 < e)).collect()
            }
            ModelFilter::PerColumn(n) => {
                let mut out = Vec::new();
                let mut column: Option<(String, Vec<u8>)> = None;
                let mut run = 0;
                for c in cells {
                    let this = (c.1.clone(), c.2.clone());
                    if column.as_ref() == Some(&this) {
                        run += 1;
                    } else {
                        run = 0;
                        column = Some(this);
                    }
                    if run < *n {
                        out.push(c);
                    }
                }
                out
            }
            ModelFilter::Chain(fs) => fs.iter().fold(cells, |cells, f| f.apply(cells)),
            ModelFilter::Interleave(fs) => {
                let mut out: Vec<ModelCell> = fs.iter().flat_map(|f| f.apply(cells.clone())).collect();
                out.sort_by(|a, b| (&a.1, &a.2, std::cmp::Reverse(a.3)).cmp(&(&b.1, &b.2, std::cmp::Reverse(b.3))));
                out
            }
            ModelFilter::Condition(p, t, f) => {
                let branch = if p.apply(cells.clone()).is_empty() { f } else { t };
                branch.as_ref().map_or_else(Vec::new, |b| b.apply(cells))
            }
            ModelFilter::ValueRange(lo, hi) => {
                cells.into_iter().filter(|c| after(lo, &c.4) && before(hi, &c.4)).collect()
            }
            ModelFilter::RowOffset(n) => cells.into_iter().skip(*n).collect(),
            ModelFilter::RowLimit(n) => cells.into_iter().take(*n).collect(),
            ModelFilter::StripValue => cells.into_iter().map(|c| (c.0, c.1, c.2, c.3, Vec::new())).collect(),
        }
    }
}

fn after(lo: &Bound<Vec<u8>>, q: &[u8]) -> bool {
    match lo {
        Bound::Included(b) => q >= b.as_slice(),
        Bound::Excluded(b) => q > b.as_slice(),
        Bound::Unbounded => true,
    }
}

fn before(hi: &Bound<Vec<u8>>, q: &[u8]) -> bool {
    match hi {
        Bound::Included(b) => q <= b.as_slice(),
        Bound::Excluded(b) => q < b.as_slice(),
        Bound::Unbounded => true,
    }
}

/// Rows the engine read, as the model's cells.
pub fn cells_of(rows: &[cellardb::Row]) -> Vec<Vec<ModelCell>> {
    rows.iter()
        .map(|r| {
            r.cells()
                .map(|(f, q, c)| (r.key.to_vec(), f.to_owned(), q.to_vec(), c.timestamp.micros(), c.value.to_vec()))
                .collect()
        })
        .collect()
}
