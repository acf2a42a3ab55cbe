//! Which rows a read covers: keys, ranges and prefixes.

use std::ops::Bound;

use bytes::Bytes;

/// A range of row keys, each end open, closed or unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRange {
    start: Bound<Bytes>,
    end: Bound<Bytes>,
}

fn bytes(b: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(b.as_ref())
}

impl RowRange {
    /// A range with explicit bounds (both of the same type, so an
    /// unbounded side needs no annotation).
    pub fn new<B: AsRef<[u8]>>(start: Bound<B>, end: Bound<B>) -> Self {
        RowRange { start: start.map(bytes), end: end.map(bytes) }
    }

    /// Every row.
    pub fn all() -> Self {
        RowRange { start: Bound::Unbounded, end: Bound::Unbounded }
    }

    /// Rows whose key starts with `prefix`.
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        let p = prefix.as_ref();
        let end = match prefix_successor(p) {
            Some(s) => Bound::Excluded(Bytes::from(s)),
            None => Bound::Unbounded,
        };
        RowRange { start: Bound::Included(bytes(p)), end }
    }

    /// `[start, end)`.
    pub fn closed_open(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Included(bytes(start)), end: Bound::Excluded(bytes(end)) }
    }

    /// `[start, end]`.
    pub fn closed(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Included(bytes(start)), end: Bound::Included(bytes(end)) }
    }

    /// `(start, end)`.
    pub fn open(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Excluded(bytes(start)), end: Bound::Excluded(bytes(end)) }
    }

    /// `(start, end]`.
    pub fn open_closed(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Excluded(bytes(start)), end: Bound::Included(bytes(end)) }
    }

    /// `[start, ∞)`.
    pub fn starting_at(start: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Included(bytes(start)), end: Bound::Unbounded }
    }

    /// `(-∞, end)`.
    pub fn until(end: impl AsRef<[u8]>) -> Self {
        RowRange { start: Bound::Unbounded, end: Bound::Excluded(bytes(end)) }
    }

    /// The range as `[lo, hi)`: `lo` empty means from the first row, `hi`
    /// `None` to the last. The next key after `k` is `k ‖ 0x00`, which turns
    /// an exclusive start or inclusive end into this form exactly.
    pub(crate) fn half_open(&self) -> KeySpan {
        let lo = match &self.start {
            Bound::Unbounded => Bytes::new(),
            Bound::Included(k) => k.clone(),
            Bound::Excluded(k) => successor(k),
        };
        let hi = match &self.end {
            Bound::Unbounded => None,
            Bound::Excluded(k) => Some(k.clone()),
            Bound::Included(k) => Some(successor(k)),
        };
        KeySpan { lo, hi }
    }
}

/// The smallest key greater than `k`.
fn successor(k: &[u8]) -> Bytes {
    let mut s = Vec::with_capacity(k.len() + 1);
    s.extend_from_slice(k);
    s.push(0);
    s.into()
}

/// The smallest key greater than every key starting with `p`, if any: `p`
/// without its trailing 0xFF bytes, last byte incremented. `None` when `p`
/// is empty or all 0xFF, since then no key is greater.
pub(crate) fn prefix_successor(p: &[u8]) -> Option<Vec<u8>> {
    let keep = p.iter().rposition(|&b| b != 0xff)?;
    let mut s = p[..=keep].to_vec();
    s[keep] += 1;
    Some(s)
}

/// A normalized, non-empty span of row keys `[lo, hi)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeySpan {
    /// First key (empty: from the first row).
    pub lo: Bytes,
    /// First key past the span (`None`: to the last row).
    pub hi: Option<Bytes>,
}

impl KeySpan {
    pub fn is_empty(&self) -> bool {
        self.hi.as_ref().is_some_and(|hi| *hi <= self.lo)
    }

    /// The single row this span covers, if it is exactly one key.
    pub fn single_row(&self) -> Option<&Bytes> {
        let hi = self.hi.as_ref()?;
        let one = hi.len() == self.lo.len() + 1 && hi.starts_with(&self.lo) && hi.last() == Some(&0);
        one.then_some(&self.lo)
    }

    /// Whether the span may hold rows between `first` and `last` inclusive.
    pub fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        last >= &self.lo[..] && self.hi.as_ref().is_none_or(|hi| first < &hi[..])
    }
}

/// Rows to read: any mix of keys and ranges. Overlaps are read once, in key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "a row set does nothing until read"]
pub struct RowSet {
    keys: Vec<Bytes>,
    ranges: Vec<RowRange>,
}

impl RowSet {
    /// No rows; add keys and ranges to it.
    pub fn new() -> Self {
        RowSet::default()
    }

    /// Every row of the table.
    pub fn all() -> Self {
        RowSet::from(RowRange::all())
    }

    /// Adds one row key.
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.keys.push(bytes(key));
        self
    }

    /// Adds many row keys.
    ///
    /// They are copied back to back into one buffer, of which each key is
    /// a slice: a set of a hundred keys then costs a few allocations rather
    /// than one per key, and its drop as few frees.
    pub fn keys<K: AsRef<[u8]>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        let mut buffer = Vec::new();
        let ends: Vec<usize> = keys
            .into_iter()
            .map(|k| {
                buffer.extend_from_slice(k.as_ref());
                buffer.len()
            })
            .collect();
        let buffer = Bytes::from(buffer);
        let mut start = 0;
        self.keys.extend(ends.into_iter().map(|end| buffer.slice(std::mem::replace(&mut start, end)..end)));
        self
    }

    /// Adds a range.
    pub fn range(mut self, range: RowRange) -> Self {
        self.ranges.push(range);
        self
    }

    /// The set as sorted, disjoint, non-empty spans.
    pub(crate) fn spans(&self) -> Vec<KeySpan> {
        let mut spans: Vec<KeySpan> =
            self.key_spans().chain(self.ranges.iter().map(RowRange::half_open)).filter(|s| !s.is_empty()).collect();
        spans.sort_by(|a, b| a.lo.cmp(&b.lo));
        // Merged in place: a read of one key allocates no second list.
        spans.dedup_by(|next, kept| {
            let joins = kept.hi.as_ref().is_none_or(|hi| next.lo <= *hi);
            if joins {
                kept.hi = match (&kept.hi, &next.hi) {
                    (Some(a), Some(b)) => Some(a.max(b).clone()),
                    _ => None,
                };
            }
            joins
        });
        spans
    }

    /// Each key's span, from the key to its successor (the key and a 0).
    /// The keys are copied back to back into one buffer, each followed by
    /// a 0, and both bounds of a span are slices of it: a read of many keys
    /// starts with two allocations, not two per key.
    fn key_spans(&self) -> impl Iterator<Item = KeySpan> + use<'_> {
        let mut buffer = Vec::with_capacity(self.keys.iter().map(|k| k.len() + 1).sum());
        for k in &self.keys {
            buffer.extend_from_slice(k);
            buffer.push(0);
        }
        let buffer = Bytes::from(buffer);
        let mut start = 0;
        self.keys.iter().map(move |k| {
            let end = start + k.len();
            let span = KeySpan { lo: buffer.slice(start..end), hi: Some(buffer.slice(start..=end)) };
            start = end + 1;
            span
        })
    }
}

impl From<RowRange> for RowSet {
    fn from(range: RowRange) -> Self {
        RowSet::new().range(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(lo: &[u8], hi: Option<&[u8]>) -> KeySpan {
        KeySpan { lo: bytes(lo), hi: hi.map(bytes) }
    }

    #[test]
    fn prefixes_end_at_their_successor_even_past_0xff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
        assert_eq!(RowSet::from(RowRange::prefix(b"\xff")).spans(), vec![span(b"\xff", None)]);
    }

    #[test]
    fn overlapping_and_duplicate_parts_merge_in_key_order() {
        let set = RowSet::new()
            .key("m")
            .range(RowRange::closed_open("c", "f"))
            .key("d")
            .range(RowRange::closed("e", "g"))
            .key("m");
        assert_eq!(set.spans(), vec![span(b"c", Some(b"g\0")), span(b"m", Some(b"m\0"))]);
        assert_eq!(set.spans()[1].single_row(), Some(&bytes("m")));
    }

    /// Keys given together ([`RowSet::keys`], sharing one buffer) cover
    /// what the same keys given one by one cover: each its own row, keys
    /// that extend one another ("a", "a\0") joined, duplicates once, the
    /// empty key the table's first row.
    #[test]
    fn keys_given_together_span_what_keys_given_one_by_one_span() {
        let keys: [&[u8]; 7] = [b"b", b"a\0", b"", b"a", b"b", b"\xff\xff", b"a\0\0"];
        let one_by_one = keys.iter().fold(RowSet::new(), RowSet::key);
        let together = RowSet::new().keys(keys);
        assert_eq!(together, one_by_one);
        let spans = together.spans();
        assert_eq!(spans, one_by_one.spans());
        assert_eq!(
            spans,
            vec![
                span(b"", Some(b"\0")),
                span(b"a", Some(b"a\0\0\0")),
                span(b"b", Some(b"b\0")),
                span(b"\xff\xff", Some(b"\xff\xff\0"))
            ]
        );
        assert_eq!(spans[2].single_row(), Some(&bytes("b")));
        // Mixed with ranges and single keys, in any order of adding.
        let mixed = RowSet::new().key("m").keys(["c", "n", "d"]).range(RowRange::closed_open("c", "d"));
        assert_eq!(mixed.spans(), vec![span(b"c", Some(b"d\0")), span(b"m", Some(b"m\0")), span(b"n", Some(b"n\0"))]);
    }

    #[test]
    fn empty_and_inverted_ranges_cover_nothing() {
        let set = RowSet::new().range(RowRange::closed_open("b", "a")).range(RowRange::open("a", "a\0"));
        assert!(set.spans().is_empty());
    }
}
