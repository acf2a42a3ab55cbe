//! Bigtable's row filters, evaluated on a row's cells in model order.
//!
//! A filter is a pure function from a row's cells (families by name,
//! qualifiers ascending, timestamps descending) to a subset of them, as
//! Bigtable defines `RowFilter`. Reads assemble each row, then apply the
//! filter; [`Filter::may_select_family`] lets a read skip a family's files
//! entirely when the filter can never keep its cells.

use std::ops::Bound;

use bytes::Bytes;
use regex::bytes::{Regex, RegexBuilder};

use crate::model::TimeRange;
use crate::{Error, Result};

/// A regular expression as Bigtable applies it: RE2 syntax over raw bytes,
/// matching the whole string.
#[derive(Debug, Clone)]
pub struct BytesRegex {
    source: String,
    compiled: std::result::Result<Regex, String>,
}

impl BytesRegex {
    fn new(source: &str) -> Self {
        let anchored = format!("^(?:{source})$");
        let compiled = RegexBuilder::new(&anchored).unicode(false).build().map_err(|e| e.to_string());
        BytesRegex { source: source.to_owned(), compiled }
    }

    fn is_match(&self, haystack: &[u8]) -> bool {
        self.compiled.as_ref().is_ok_and(|r| r.is_match(haystack))
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for BytesRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

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
    pub fn family_name_regex(pattern: &str) -> Self {
        Filter::FamilyNameRegex(BytesRegex::new(pattern))
    }

    /// Cells whose whole qualifier matches `pattern` (RE2 syntax, raw bytes).
    pub fn column_qualifier_regex(pattern: &str) -> Self {
        Filter::ColumnQualifierRegex(BytesRegex::new(pattern))
    }

    /// Cells of `family` with qualifiers between `start` and `end`.
    pub fn column_range(
        family: impl Into<String>,
        start: Bound<impl AsRef<[u8]>>,
        end: Bound<impl AsRef<[u8]>>,
    ) -> Self {
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

    /// Checks the filter before a read, as Bigtable does: patterns compile,
    /// limits are positive, chains are not empty.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        match self {
            Filter::FamilyNameRegex(p) | Filter::ColumnQualifierRegex(p) => match &p.compiled {
                Ok(_) => Ok(()),
                Err(e) => bad(format!("invalid regex {:?}: {e}", p.source)),
            },
            Filter::CellsPerColumnLimit(0) => bad("cells_per_column_limit must be > 0".into()),
            Filter::Chain(fs) => fs.iter().try_for_each(Filter::validate),
            _ => Ok(()),
        }
    }

    /// Whether the filter can keep any cell of family `name`. A `false`
    /// lets reads skip the family's memtable entries and files.
    pub(crate) fn may_select_family(&self, name: &str) -> bool {
        match self {
            Filter::BlockAll => false,
            Filter::FamilyNameRegex(p) => p.is_match(name.as_bytes()),
            Filter::ColumnRange { family, .. } => family == name,
            Filter::Chain(fs) => fs.iter().all(|f| f.may_select_family(name)),
            _ => true,
        }
    }

    /// The cells of one row that the filter keeps.
    pub(crate) fn apply(&self, families: &[String], cells: Vec<RowCell>) -> Vec<RowCell> {
        let family = |c: &RowCell| families.get(usize::from(c.family)).map_or("", String::as_str);
        match self {
            Filter::PassAll => cells,
            Filter::BlockAll => Vec::new(),
            Filter::Chain(fs) => fs.iter().fold(cells, |cells, f| f.apply(families, cells)),
            Filter::FamilyNameRegex(p) => retain(cells, |c| p.is_match(family(c).as_bytes())),
            Filter::ColumnQualifierRegex(p) => retain(cells, |c| p.is_match(&c.qualifier)),
            Filter::ColumnRange { family: f, start, end } => {
                retain(cells, |c| family(c) == f && in_bounds(&c.qualifier, start, end))
            }
            Filter::TimestampRange(r) => retain(cells, |c| r.contains(c.timestamp)),
            Filter::CellsPerColumnLimit(n) => limit_per_column(cells, *n as usize),
        }
    }
}

/// One cell of a row being filtered, in model order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowCell {
    /// Rank of the family in name order (index into the read's family list).
    pub family: u16,
    pub qualifier: Bytes,
    pub timestamp: i64,
    pub value: Bytes,
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

fn limit_per_column(cells: Vec<RowCell>, n: usize) -> Vec<RowCell> {
    let mut seen = 0;
    let mut prev: Option<(u16, Bytes)> = None;
    let mut out = Vec::with_capacity(cells.len());
    for c in cells {
        let same = prev.as_ref().is_some_and(|(f, q)| *f == c.family && *q == c.qualifier);
        seen = if same { seen + 1 } else { 0 };
        if !same {
            prev = Some((c.family, c.qualifier.clone()));
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

    fn cell(family: u16, q: &'static str, ts: i64) -> RowCell {
        RowCell { family, qualifier: q.into(), timestamp: ts, value: Bytes::new(), labels: vec![] }
    }

    fn families() -> Vec<String> {
        vec!["cf1".into(), "m".into()]
    }

    fn row() -> Vec<RowCell> {
        vec![cell(0, "a", 3000), cell(0, "a", 2000), cell(0, "a", 1000), cell(0, "b", 1000), cell(1, "", 5000)]
    }

    fn keys(cells: &[RowCell]) -> Vec<(u16, &[u8], i64)> {
        cells.iter().map(|c| (c.family, &c.qualifier[..], c.timestamp)).collect()
    }

    #[test]
    fn regexes_match_whole_names_only() {
        let out = Filter::family_name_regex("c").apply(&families(), row());
        assert!(out.is_empty());
        let out = Filter::family_name_regex("cf.").apply(&families(), row());
        assert_eq!(out.len(), 4);
        let out = Filter::column_qualifier_regex("").apply(&families(), row());
        assert_eq!(keys(&out), vec![(1, &b""[..], 5000)]);
    }

    #[test]
    fn chain_order_matters_as_in_bigtable() {
        let ts = Filter::timestamp_range(TimeRange::new(1000, 3000));
        let limit = Filter::cells_per_column_limit(1);
        let a = Filter::chain([ts.clone(), limit.clone()]).apply(&families(), row());
        assert_eq!(keys(&a), vec![(0, &b"a"[..], 2000), (0, b"b", 1000)]);
        let b = Filter::chain([limit, ts]).apply(&families(), row());
        assert_eq!(keys(&b), vec![(0, &b"b"[..], 1000)]);
    }

    #[test]
    fn column_range_names_one_family() {
        let f = Filter::column_range("cf1", Bound::Excluded("a"), Bound::<&str>::Unbounded);
        assert_eq!(keys(&f.apply(&families(), row())), vec![(0, &b"b"[..], 1000)]);
        assert!(f.may_select_family("cf1") && !f.may_select_family("m"));
    }

    #[test]
    fn invalid_filters_are_rejected_before_reading() {
        assert!(Filter::family_name_regex("(").validate().is_err());
        assert!(Filter::chain([Filter::cells_per_column_limit(0)]).validate().is_err());
    }
}
