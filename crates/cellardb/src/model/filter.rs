//! Bigtable's row filters, evaluated on a row's cells in model order.
//!
//! A filter is a pure function from a row's cells (families by name,
//! qualifiers ascending, timestamps descending) to a subset of them, as
//! Bigtable defines `RowFilter`. Reads assemble each row, then apply the
//! filter; [`Filter::may_select_family`] lets a read skip a family's files
//! entirely when the filter can never keep its cells.

use std::ops::Bound;

use bytes::Bytes;

use super::re2::{BytesRegex, RegexLimits};
use crate::model::TimeRange;
use crate::{Error, Result};

/// A Bigtable row filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every cell.
    PassAll,
    /// No cell.
    BlockAll,
    /// Each filter applied to the output of the one before.
    Chain(Vec<Filter>),
    /// Cells whose family name matches the pattern.
    FamilyNameRegex(BytesRegex),
    /// Cells whose qualifier matches the pattern.
    ColumnQualifierRegex(BytesRegex),
    /// Cells of `family` whose qualifier lies between the bounds.
    ColumnRange {
        /// The family.
        family: String,
        /// Lower qualifier bound.
        start: Bound<Bytes>,
        /// Upper qualifier bound.
        end: Bound<Bytes>,
    },
    /// Cells whose timestamp lies in the range.
    TimestampRange(TimeRange),
    /// The newest `n` cells of each column.
    CellsPerColumnLimit(u32),
    /// The union of each filter's output on the same input, in model order;
    /// a cell two filters output appears twice.
    Interleave(Vec<Filter>),
    /// `true_filter`'s output if `predicate` outputs any cell of the row,
    /// else `false_filter`'s (`None`: no cell). The predicate's own output
    /// is not returned.
    Condition {
        /// Decides, per row.
        predicate: Box<Filter>,
        /// Applied when the predicate outputs a cell.
        true_filter: Option<Box<Filter>>,
        /// Applied otherwise.
        false_filter: Option<Box<Filter>>,
    },
    /// Sends its input straight to the read's output, past every parent
    /// filter; its parent sees no cell.
    Sink,
    /// Every cell of rows whose whole key matches the pattern.
    RowKeyRegex(BytesRegex),
    /// Every cell of a row chosen with this probability, row by row.
    RowSample(f64),
    /// Cells whose whole value matches the pattern.
    ValueRegex(BytesRegex),
    /// Cells whose value lies between the bounds.
    ValueRange {
        /// Lower bound.
        start: Bound<Bytes>,
        /// Upper bound.
        end: Bound<Bytes>,
    },
    /// Every cell of the row but the first `n`.
    CellsPerRowOffset(u32),
    /// The first `n` cells of the row.
    CellsPerRowLimit(u32),
    /// Cells with empty values.
    StripValue,
    /// Cells labelled `label`; labels are returned with the cells.
    ApplyLabel(String),
}

impl Filter {
    /// Every cell.
    pub fn pass_all() -> Self {
        Filter::PassAll
    }

    /// No cell.
    pub fn block_all() -> Self {
        Filter::BlockAll
    }

    /// Applies `filters` in sequence.
    pub fn chain(filters: impl IntoIterator<Item = Filter>) -> Self {
        Filter::Chain(filters.into_iter().collect())
    }

    /// Cells of families whose whole name matches `pattern` (RE2 syntax).
    pub fn family_name_regex(pattern: impl AsRef<[u8]>) -> Self {
        Filter::FamilyNameRegex(BytesRegex::new(pattern.as_ref()))
    }

    /// Cells whose whole qualifier matches `pattern` (RE2 syntax over raw
    /// bytes; the pattern itself is bytes, each a Latin-1 character, so it
    /// need not be UTF-8).
    pub fn column_qualifier_regex(pattern: impl AsRef<[u8]>) -> Self {
        Filter::ColumnQualifierRegex(BytesRegex::new(pattern.as_ref()))
    }

    /// Cells of `family` with qualifiers between `start` and `end`. Both
    /// bounds take the same type, so an unbounded end needs no annotation:
    ///
    /// ```
    /// use std::ops::Bound;
    /// use cellardb::Filter;
    ///
    /// let from_b = Filter::column_range("measurements", Bound::Included("b"), Bound::Unbounded);
    /// let a_to_c = Filter::column_range("measurements", Bound::Included("a"), Bound::Excluded("c"));
    /// ```
    pub fn column_range<B: AsRef<[u8]>>(family: impl Into<String>, start: Bound<B>, end: Bound<B>) -> Self {
        let start = start.map(|q| Bytes::copy_from_slice(q.as_ref()));
        let end = end.map(|q| Bytes::copy_from_slice(q.as_ref()));
        Filter::ColumnRange { family: family.into(), start, end }
    }

    /// Cells with timestamps in `[start, end)` (µs).
    pub fn timestamp_range(range: TimeRange) -> Self {
        Filter::TimestampRange(range)
    }

    /// The newest `n` cells of each column.
    pub fn cells_per_column_limit(n: u32) -> Self {
        Filter::CellsPerColumnLimit(n)
    }

    /// The union of `filters`' outputs on the same input.
    pub fn interleave(filters: impl IntoIterator<Item = Filter>) -> Self {
        Filter::Interleave(filters.into_iter().collect())
    }

    /// `true_filter` where `predicate` outputs a cell of the row, else
    /// `false_filter` (`None`: no cell).
    pub fn condition(predicate: Filter, true_filter: Option<Filter>, false_filter: Option<Filter>) -> Self {
        Filter::Condition {
            predicate: Box::new(predicate),
            true_filter: true_filter.map(Box::new),
            false_filter: false_filter.map(Box::new),
        }
    }

    /// Its input, straight to the read's output.
    pub fn sink() -> Self {
        Filter::Sink
    }

    /// Every cell of rows whose whole key matches `pattern` (RE2 syntax
    /// over raw bytes, as [`Filter::column_qualifier_regex`]).
    pub fn row_key_regex(pattern: impl AsRef<[u8]>) -> Self {
        Filter::RowKeyRegex(BytesRegex::new(pattern.as_ref()))
    }

    /// Every cell of each row with probability `p` (0 < p < 1).
    pub fn row_sample(p: f64) -> Self {
        Filter::RowSample(p)
    }

    /// Cells whose whole value matches `pattern` (RE2 syntax over raw
    /// bytes, as [`Filter::column_qualifier_regex`]).
    pub fn value_regex(pattern: impl AsRef<[u8]>) -> Self {
        Filter::ValueRegex(BytesRegex::new(pattern.as_ref()))
    }

    /// Cells whose value lies between `start` and `end` (bytes, compared
    /// lexicographically). Both bounds take the same type.
    pub fn value_range<B: AsRef<[u8]>>(start: Bound<B>, end: Bound<B>) -> Self {
        let start = start.map(|v| Bytes::copy_from_slice(v.as_ref()));
        let end = end.map(|v| Bytes::copy_from_slice(v.as_ref()));
        Filter::ValueRange { start, end }
    }

    /// Every cell of a row but the first `n`.
    pub fn cells_per_row_offset(n: u32) -> Self {
        Filter::CellsPerRowOffset(n)
    }

    /// The first `n` cells of each row.
    pub fn cells_per_row_limit(n: u32) -> Self {
        Filter::CellsPerRowLimit(n)
    }

    /// Every cell, with an empty value.
    pub fn strip_value() -> Self {
        Filter::StripValue
    }

    /// Every cell, labelled `label`.
    pub fn apply_label(label: impl Into<String>) -> Self {
        Filter::ApplyLabel(label.into())
    }

    /// Checks the filter as a read does before it starts, as Bigtable
    /// does: patterns compile, limits are positive, a sample's probability
    /// lies strictly between 0 and 1, a chain labels a cell at most once,
    /// and filters nest at most [`Filter::MAX_DEPTH`] deep. A caller may
    /// check a filter this way before it reads.
    ///
    /// # Errors
    /// `Error::InvalidArgument` naming the rule broken.
    pub fn validate(&self) -> Result<()> {
        let depth = self.depth();
        if depth > Filter::MAX_DEPTH {
            return Err(Error::InvalidArgument(format!(
                "the filter nests {depth} deep: at most {} is allowed",
                Filter::MAX_DEPTH
            )));
        }
        self.compile_regexes();
        self.validate_rules()
    }

    /// Compiles the filter's patterns, each within its share of the
    /// filter's budget ([`RegexLimits::shared`]), so that a filter's
    /// patterns take a bounded memory however many there are.
    fn compile_regexes(&self) {
        if !matches!(self, Filter::Chain(_) | Filter::Interleave(_) | Filter::Condition { .. }) {
            // A leaf, on every read: no walk to allocate.
            if let Some(p) = self.regex() {
                p.compile_within(RegexLimits::shared(1));
            }
            return;
        }
        let mut regexes = Vec::new();
        self.visit(&mut |f| regexes.extend(f.regex()));
        let limits = RegexLimits::shared(regexes.iter().filter(|p| p.needs_program()).count());
        for p in regexes {
            p.compile_within(limits);
        }
    }

    /// The pattern of a regex filter.
    fn regex(&self) -> Option<&BytesRegex> {
        match self {
            Filter::FamilyNameRegex(p)
            | Filter::ColumnQualifierRegex(p)
            | Filter::RowKeyRegex(p)
            | Filter::ValueRegex(p) => Some(p),
            _ => None,
        }
    }

    /// Calls `f` on this filter and every filter inside it, without
    /// recursion.
    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Filter)) {
        let mut stack = vec![self];
        while let Some(filter) = stack.pop() {
            f(filter);
            match filter {
                Filter::Chain(fs) | Filter::Interleave(fs) => stack.extend(fs.iter()),
                Filter::Condition { predicate, true_filter, false_filter } => {
                    stack.extend(
                        std::iter::once(&**predicate).chain(true_filter.as_deref()).chain(false_filter.as_deref()),
                    );
                }
                _ => {}
            }
        }
    }

    /// How deep filters may nest in chains, interleaves and conditions: as
    /// deep as Bigtable's protobuf decoders take a filter (their recursion
    /// limit is 100), and shallow enough that reading through one cannot
    /// exhaust a thread's stack.
    pub const MAX_DEPTH: usize = 100;

    /// How deep the filter nests, counted without recursion (a filter
    /// nested too deep for recursion is what this guards against).
    fn depth(&self) -> usize {
        if !matches!(self, Filter::Chain(_) | Filter::Interleave(_) | Filter::Condition { .. }) {
            return 1; // a leaf: no stack to allocate, on every read
        }
        let mut deepest = 0;
        let mut stack = vec![(self, 1)];
        while let Some((filter, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            match filter {
                Filter::Chain(fs) | Filter::Interleave(fs) => stack.extend(fs.iter().map(|f| (f, depth + 1))),
                Filter::Condition { predicate, true_filter, false_filter } => {
                    let inner =
                        std::iter::once(&**predicate).chain(true_filter.as_deref()).chain(false_filter.as_deref());
                    stack.extend(inner.map(|f| (f, depth + 1)));
                }
                _ => {}
            }
        }
        deepest
    }

    /// `validate`'s rules, once the depth is known to be bounded.
    fn validate_rules(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        match self {
            Filter::FamilyNameRegex(p)
            | Filter::ColumnQualifierRegex(p)
            | Filter::RowKeyRegex(p)
            | Filter::ValueRegex(p) => match p.error() {
                None => Ok(()),
                Some(e) => bad(format!("invalid regex {:?}: {e}", p.as_bytes().escape_ascii().to_string())),
            },
            Filter::ApplyLabel(label) => validate_label(label),
            Filter::TimestampRange(r) if r.end.is_some_and(|end| end < r.start) => {
                let (start, end) = r.span();
                bad(format!("timestamp_range ends ({end:?}) before it starts ({start})"))
            }
            Filter::CellsPerColumnLimit(0) => bad("cells_per_column_limit must be > 0".into()),
            Filter::CellsPerRowLimit(0) => bad("cells_per_row_limit must be > 0".into()),
            Filter::RowSample(p) if !(*p > 0.0 && *p < 1.0) => {
                bad(format!("row_sample probability must lie strictly between 0 and 1, not {p}"))
            }
            Filter::Chain(fs) => {
                if fs.iter().filter(|f| f.labels()).count() > 1 {
                    return bad("a chain may apply a label at most once to a cell (Bigtable allows one label \
                                per cell): more than one of its filters applies a label"
                        .into());
                }
                fs.iter().try_for_each(Filter::validate_rules)
            }
            Filter::Interleave(fs) => fs.iter().try_for_each(Filter::validate_rules),
            Filter::Condition { predicate, true_filter, false_filter } => {
                predicate.validate_rules()?;
                true_filter.iter().chain(false_filter).try_for_each(|f| f.validate_rules())
            }
            _ => Ok(()),
        }
    }

    /// Whether the filter, or one inside it, applies a label.
    fn labels(&self) -> bool {
        match self {
            Filter::ApplyLabel(_) => true,
            Filter::Chain(fs) | Filter::Interleave(fs) => fs.iter().any(Filter::labels),
            Filter::Condition { true_filter, false_filter, .. } => {
                true_filter.iter().chain(false_filter).any(|f| f.labels())
            }
            _ => false,
        }
    }

    /// Whether what the filter outputs of one family can depend on the
    /// row's other families (a count over the row, a condition), or cells
    /// leave it for the output directly (a sink): then the filters after it
    /// in a chain cannot prune families from the read.
    fn sees_whole_row(&self) -> bool {
        match self {
            Filter::Sink | Filter::CellsPerRowOffset(_) | Filter::CellsPerRowLimit(_) | Filter::Condition { .. } => {
                true
            }
            Filter::Chain(fs) | Filter::Interleave(fs) => fs.iter().any(Filter::sees_whole_row),
            _ => false,
        }
    }

    /// Whether the filter can keep any cell of family `name`. A `false`
    /// lets reads skip the family's memtable entries and files.
    pub(crate) fn may_select_family(&self, name: &str) -> bool {
        match self {
            Filter::BlockAll => false,
            Filter::FamilyNameRegex(p) => p.is_match(name.as_bytes()),
            Filter::ColumnRange { family, .. } => family == name,
            // A family dropped by any filter of a chain is never output,
            // unless a filter before it needs the family's cells to decide
            // about others (a count over the row, a condition) or sends
            // cells out past it (a sink).
            Filter::Chain(fs) => {
                for f in fs {
                    if !f.may_select_family(name) {
                        return false;
                    }
                    if f.sees_whole_row() {
                        return true;
                    }
                }
                true
            }
            Filter::Interleave(fs) => fs.iter().any(|f| f.may_select_family(name)),
            // The predicate reads the row too.
            Filter::Condition { predicate, true_filter, false_filter } => {
                predicate.may_select_family(name)
                    || true_filter.iter().chain(false_filter).any(|f| f.may_select_family(name))
            }
            _ => true,
        }
    }

    /// The cells of one row that the filter keeps, in model order, sunk
    /// cells included.
    pub(crate) fn apply(&self, row: &RowView<'_>, cells: Vec<RowCell>) -> Vec<RowCell> {
        let mut sunk = Vec::new();
        let out = self.eval(row, cells, &mut sunk);
        if sunk.is_empty() {
            return out;
        }
        sunk.extend(out);
        sort_model_order(row, &mut sunk);
        sunk
    }

    /// The filter's output on `cells`; cells reaching a sink go to `sunk`.
    fn eval(&self, row: &RowView<'_>, cells: Vec<RowCell>, sunk: &mut Vec<RowCell>) -> Vec<RowCell> {
        match self {
            Filter::PassAll => cells,
            Filter::BlockAll => Vec::new(),
            Filter::Chain(fs) => fs.iter().fold(cells, |cells, f| f.eval(row, cells, sunk)),
            Filter::Interleave(fs) => {
                let mut out: Vec<RowCell> = fs.iter().flat_map(|f| f.eval(row, cells.clone(), sunk)).collect();
                sort_model_order(row, &mut out);
                out
            }
            Filter::Condition { predicate, true_filter, false_filter } => {
                // The predicate's output, sinks included, is only a test.
                let matched = !predicate.eval(row, cells.clone(), &mut Vec::new()).is_empty();
                let branch = if matched { true_filter } else { false_filter };
                branch.as_ref().map_or_else(Vec::new, |f| f.eval(row, cells, sunk))
            }
            Filter::Sink => {
                sunk.extend(cells);
                Vec::new()
            }
            Filter::RowKeyRegex(p) => {
                if p.is_match(row.key) {
                    cells
                } else {
                    Vec::new()
                }
            }
            Filter::RowSample(p) => {
                if sample(*p) {
                    cells
                } else {
                    Vec::new()
                }
            }
            Filter::FamilyNameRegex(p) => retain(cells, |c| p.is_match(row.family(c).as_bytes())),
            Filter::ColumnQualifierRegex(p) => retain(cells, |c| p.is_match(row.qualifier(c))),
            Filter::ColumnRange { family: f, start, end } => {
                retain(cells, |c| row.family(c) == f && in_bounds(row.qualifier(c), start, end))
            }
            Filter::TimestampRange(r) => retain(cells, |c| r.contains_micros(c.timestamp)),
            Filter::ValueRegex(p) => retain(cells, |c| p.is_match(row.value(c))),
            Filter::ValueRange { start, end } => retain(cells, |c| in_bounds(row.value(c), start, end)),
            Filter::CellsPerColumnLimit(n) => limit_per_column(row, cells, *n as usize),
            Filter::CellsPerRowOffset(n) => cells.into_iter().skip(*n as usize).collect(),
            Filter::CellsPerRowLimit(n) => cells.into_iter().take(*n as usize).collect(),
            Filter::StripValue => cells.into_iter().map(|c| RowCell { value: 0..0, ..c }).collect(),
            Filter::ApplyLabel(label) => cells
                .into_iter()
                .map(|mut c| {
                    c.labels.push(label.clone());
                    c
                })
                .collect(),
        }
    }
}

/// Bigtable's rule for a label: 1 to 15 characters of `[a-z0-9-]`.
fn validate_label(label: &str) -> Result<()> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if label.is_empty() || label.len() > MAX_LABEL || !label.bytes().all(allowed) {
        return Err(Error::InvalidArgument(format!(
            "label {label:?}: a label is 1 to {MAX_LABEL} characters of [a-z0-9-] (Bigtable's rule)"
        )));
    }
    Ok(())
}

/// Longest label, in characters.
const MAX_LABEL: usize = 15;

/// Sorts cells into model order: family rank, qualifier, newest first. The
/// sort is stable, so copies of a cell keep the order they came in.
fn sort_model_order(row: &RowView<'_>, cells: &mut [RowCell]) {
    cells.sort_by(|a, b| {
        a.family
            .cmp(&b.family)
            .then_with(|| row.qualifier(a).cmp(row.qualifier(b)))
            .then_with(|| b.timestamp.cmp(&a.timestamp))
    });
}

/// True with probability `p`: a row sample's draw, from a per-thread
/// SplitMix64 generator seeded from the standard library's per-process
/// random hash keys, so two processes draw different samples (a sample
/// needs no cryptographic quality).
fn sample(p: f64) -> bool {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(0x2545_F491_4F6C_DD1Du64));
    }
    let draw = STATE.with(|s| {
        let state = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(state);
        let z = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    });
    (draw >> 11) as f64 / (1u64 << 53) as f64 <= p
}

/// What a forward read may skip without changing what a filter returns
/// (`read::seek` does the skipping): the cell-local predicates at the head
/// of the filter (a chain's leading family, qualifier, column-range and
/// timestamp filters) decide per column and per timestamp, and a
/// `cells_per_column_limit` right after them bounds how many cells of a
/// column can pass. Cells these reject are dropped by the filter anyway.
impl Filter {
    /// The filters a chain applies first, in order (the filter itself if
    /// it is not a chain).
    fn head(&self) -> impl Iterator<Item = &Filter> {
        let list = match self {
            Filter::Chain(fs) => fs.as_slice(),
            other => std::slice::from_ref(other),
        };
        list.iter().filter(|f| **f != Filter::PassAll)
    }

    /// The cell-local predicates at the head of the filter.
    fn head_predicates(&self) -> impl Iterator<Item = &Filter> {
        self.head().take_while(|f| {
            matches!(
                f,
                Filter::FamilyNameRegex(_)
                    | Filter::ColumnQualifierRegex(_)
                    | Filter::ColumnRange { .. }
                    | Filter::TimestampRange(_)
            )
        })
    }

    /// Whether cells of column `family:qualifier` can pass the head's predicates.
    pub(crate) fn head_keeps_column(&self, family: &str, qualifier: &[u8]) -> bool {
        self.head_predicates().all(|f| match f {
            Filter::FamilyNameRegex(p) => p.is_match(family.as_bytes()),
            Filter::ColumnQualifierRegex(p) => p.is_match(qualifier),
            Filter::ColumnRange { family: f, start, end } => f == family && in_bounds(qualifier, start, end),
            _ => true,
        })
    }

    /// The timestamps a cell must have to pass the head's predicates:
    /// `[start, end)`, `end` `None` for unbounded.
    pub(crate) fn head_time(&self) -> (i64, Option<i64>) {
        let mut range = (i64::MIN, None::<i64>);
        for f in self.head_predicates() {
            if let Filter::TimestampRange(r) = f {
                let (start, end) = r.span();
                range.0 = range.0.max(start);
                range.1 = match (range.1, end) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        range
    }

    /// Bounds on the qualifiers the head's predicates keep, for a read to
    /// seek to the first kept column and past the last: the smallest kept
    /// qualifier, and the largest (inclusive), where the predicates say.
    pub(crate) fn head_qualifier_bounds(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let (mut lo, mut hi): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
        let mut raise = |q: Vec<u8>| lo = Some(lo.take().map_or(q.clone(), |l| l.max(q)));
        let mut cut = |q: Vec<u8>| hi = Some(hi.take().map_or(q.clone(), |h| h.min(q)));
        for f in self.head_predicates() {
            match f {
                Filter::ColumnQualifierRegex(p) => {
                    if let Some(l) = p.literal() {
                        raise(l.to_vec());
                        cut(l.to_vec());
                    }
                }
                Filter::ColumnRange { start, end, .. } => {
                    match start {
                        Bound::Included(s) => raise(s.to_vec()),
                        Bound::Excluded(s) => raise([&s[..], &[0]].concat()),
                        Bound::Unbounded => {}
                    }
                    if let Bound::Included(e) = end {
                        cut(e.to_vec());
                    }
                }
                _ => {}
            }
        }
        (lo, hi)
    }

    /// The `cells_per_column_limit` that directly follows the head's
    /// predicates, if one does.
    pub(crate) fn head_column_limit(&self) -> Option<u32> {
        let predicates = self.head_predicates().count();
        match self.head().nth(predicates) {
            Some(Filter::CellsPerColumnLimit(n)) => Some(*n),
            _ => None,
        }
    }

    /// Whether a read can skip anything for this filter.
    pub(crate) fn has_head(&self) -> bool {
        self.head_predicates().next().is_some() || self.head_column_limit().is_some()
    }
}

/// What filters see of the row besides its cells: the read's family names
/// (by rank) and the bytes the cells' ranges point into.
pub(crate) struct RowView<'a> {
    pub key: &'a [u8],
    pub families: &'a [String],
    pub bytes: &'a [u8],
}

impl RowView<'_> {
    fn family(&self, c: &RowCell) -> &str {
        self.families.get(usize::from(c.family)).map_or("", String::as_str)
    }

    fn qualifier(&self, c: &RowCell) -> &[u8] {
        self.bytes.get(c.qualifier.clone()).unwrap_or_default()
    }

    fn value(&self, c: &RowCell) -> &[u8] {
        self.bytes.get(c.value.clone()).unwrap_or_default()
    }
}

/// One cell of a row being filtered, in model order; qualifier and value
/// are ranges of the row's buffer ([`RowView::bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowCell {
    /// Rank of the family in name order (index into the read's family list).
    pub family: u16,
    pub qualifier: std::ops::Range<usize>,
    pub timestamp: i64,
    pub value: std::ops::Range<usize>,
    pub labels: Vec<String>,
}

fn retain(mut cells: Vec<RowCell>, keep: impl Fn(&RowCell) -> bool) -> Vec<RowCell> {
    cells.retain(keep);
    cells
}

fn in_bounds(q: &[u8], start: &Bound<Bytes>, end: &Bound<Bytes>) -> bool {
    let after_start = match start {
        Bound::Unbounded => true,
        Bound::Included(s) => q >= &s[..],
        Bound::Excluded(s) => q > &s[..],
    };
    let before_end = match end {
        Bound::Unbounded => true,
        Bound::Included(e) => q <= &e[..],
        Bound::Excluded(e) => q < &e[..],
    };
    after_start && before_end
}

fn limit_per_column(row: &RowView<'_>, cells: Vec<RowCell>, n: usize) -> Vec<RowCell> {
    let mut seen = 0;
    let mut prev: Option<(u16, &[u8])> = None;
    let mut out = Vec::with_capacity(cells.len());
    for c in cells {
        let q = row.qualifier(&c);
        let same = prev.is_some_and(|(f, pq)| f == c.family && pq == q);
        seen = if same { seen + 1 } else { 0 };
        if !same {
            prev = Some((c.family, q));
        }
        if seen < n {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of cells (family rank, qualifier, timestamp) over a buffer
    /// holding the qualifiers.
    struct TestRow {
        families: Vec<String>,
        bytes: Vec<u8>,
        cells: Vec<RowCell>,
    }

    impl TestRow {
        fn new(cells: &[(u16, &str, i64)]) -> TestRow {
            let mut bytes = Vec::new();
            let cells = cells
                .iter()
                .map(|&(family, q, ts)| {
                    let start = bytes.len();
                    bytes.extend_from_slice(q.as_bytes());
                    RowCell { family, qualifier: start..bytes.len(), timestamp: ts, value: 0..0, labels: vec![] }
                })
                .collect();
            TestRow { families: vec!["cf1".into(), "m".into()], bytes, cells }
        }

        fn apply(&self, f: &Filter) -> Vec<(u16, String, i64)> {
            let view = RowView { key: b"r", families: &self.families, bytes: &self.bytes };
            f.apply(&view, self.cells.clone())
                .iter()
                .map(|c| (c.family, String::from_utf8_lossy(view.qualifier(c)).into_owned(), c.timestamp))
                .collect()
        }
    }

    fn row() -> TestRow {
        TestRow::new(&[(0, "a", 3000), (0, "a", 2000), (0, "a", 1000), (0, "b", 1000), (1, "", 5000)])
    }

    fn cell(family: u16, q: &str, ts: i64) -> (u16, String, i64) {
        (family, q.to_owned(), ts)
    }

    #[test]
    fn regexes_match_whole_names_only() {
        assert!(row().apply(&Filter::family_name_regex("c")).is_empty());
        assert_eq!(row().apply(&Filter::family_name_regex("cf.")).len(), 4);
        assert_eq!(row().apply(&Filter::column_qualifier_regex("")), vec![cell(1, "", 5000)]);
    }

    #[test]
    fn chain_order_matters_as_in_bigtable() {
        let ts = Filter::timestamp_range(TimeRange::new(1000, 3000));
        let limit = Filter::cells_per_column_limit(1);
        let a = row().apply(&Filter::chain([ts.clone(), limit.clone()]));
        assert_eq!(a, vec![cell(0, "a", 2000), cell(0, "b", 1000)]);
        let b = row().apply(&Filter::chain([limit, ts]));
        assert_eq!(b, vec![cell(0, "b", 1000)]);
    }

    #[test]
    fn column_range_names_one_family() {
        let f = Filter::column_range("cf1", Bound::Excluded("a"), Bound::<&str>::Unbounded);
        assert_eq!(row().apply(&f), vec![cell(0, "b", 1000)]);
        assert!(f.may_select_family("cf1") && !f.may_select_family("m"));
    }

    #[test]
    fn regexes_are_anchored_and_must_be_valid_alone() {
        let row = TestRow::new(&[(0, "a\nb", 1), (0, "axyz", 2)]);
        assert_eq!(row.apply(&Filter::column_qualifier_regex(r"a\C*")).len(), 2);
        assert_eq!(row.apply(&Filter::column_qualifier_regex(r"x")).len(), 0, "the whole qualifier");
        assert!(Filter::column_qualifier_regex("a)|(?:b").validate().is_err(), "invalid alone, invalid anchored");
    }

    #[test]
    fn a_filters_patterns_share_one_memory_budget() {
        // A pattern of a few MiB compiles alone, and twice; a hundred of
        // them in one filter would take hundreds of MiB, and are refused.
        let big = r"(?:[a-z]{40}\d){300}";
        assert!(Filter::value_regex(big).validate().is_ok());
        assert!(Filter::interleave([Filter::value_regex(big), Filter::row_key_regex(big)]).validate().is_ok());
        let many = Filter::interleave((0..100).map(|_| Filter::value_regex(big)));
        let refused = many.validate().unwrap_err().to_string();
        assert!(refused.contains("share"), "{refused}");
        // A thousand small patterns and any number of literals still fit.
        assert!(
            Filter::interleave((0..1000).map(|i| Filter::column_qualifier_regex(format!("q{i}.*")))).validate().is_ok()
        );
        assert!(
            Filter::interleave((0..1000).map(|i| Filter::column_qualifier_regex(format!("q{i}")))).validate().is_ok()
        );
        // A filter used without validation compiles each pattern alone.
        let row = TestRow::new(&[(0, "qa", 1)]);
        assert_eq!(row.apply(&Filter::column_qualifier_regex("q.")).len(), 1);
    }

    #[test]
    fn labels_follow_bigtables_rule() {
        for ok in ["a", "ok-label", "x1", "fifteen-chars-x"] {
            assert!(Filter::apply_label(ok).validate().is_ok(), "{ok}");
        }
        for bad in ["", "UPPER", "has_underscore", "sixteen-chars-xx", "a b", "é"] {
            assert!(Filter::apply_label(bad).validate().is_err(), "{bad}");
        }
        assert!(Filter::chain([Filter::pass_all(), Filter::apply_label("Bad")]).validate().is_err(), "nested too");
    }

    #[test]
    fn invalid_filters_are_rejected_before_reading() {
        assert!(Filter::family_name_regex("(").validate().is_err());
        assert!(Filter::chain([Filter::cells_per_column_limit(0)]).validate().is_err());
    }

    #[test]
    fn a_filter_nested_past_the_limit_is_refused_not_a_stack_overflow() {
        // Found by the bad-input tests: a chain nested 100 000 deep
        // overflowed the stack in `validate`.
        let nest = |depth: usize, inner: fn(Filter) -> Filter| (1..depth).fold(Filter::pass_all(), |f, _| inner(f));
        let chain: fn(Filter) -> Filter = |f| Filter::chain([f]);
        let condition: fn(Filter) -> Filter = |f| Filter::condition(Filter::pass_all(), None, Some(f));
        for inner in [chain, condition] {
            assert!(nest(Filter::MAX_DEPTH, inner).validate().is_ok(), "the limit itself is allowed");
            let err = nest(Filter::MAX_DEPTH + 1, inner).validate().unwrap_err();
            assert!(err.to_string().contains("at most 100"), "{err}");
        }
        assert!(nest(1000, chain).validate().is_err());
    }
}
