//! Decoding a data block (see [`super::block_builder`] for the layout).
//!
//! A block decodes whole, once, into the compact columnar form the block
//! cache keeps. Each per-entry integer (row, qualifier, kind, timestamp,
//! sequence number, value position and length) is stored as an offset from
//! the block's smallest, in the narrowest width that holds the block's
//! largest; a field equal in every entry (sequence numbers after a full
//! compaction, kinds where every entry is a cell) takes no space at all, nor
//! does one that grows or shrinks by a fixed step (each entry its own row,
//! values of one length, a column's minutes), and timestamps count in the
//! largest unit dividing their differences (minutes, in a series of
//! minutes). Where a stored stream says by its tag that its values step
//! evenly (one delta after the first in a block of one column, as in a
//! compacted column of regular measurements; or, in a block of several,
//! every value equal, as sequence numbers after a compaction), the field
//! is made from the tag, without a pass over the entries. Beside them:
//! the rebuilt row keys (the prefix all of them share once, then the rest
//! of each), the qualifier dictionary and the values, copied out of the
//! decompressed block, whose encoded streams are then dropped. A block of
//! one column of a wide row of small measurements costs little more than
//! its values (3 bytes an entry for three-digit measurements), where fixed
//! 40-byte slots over the kept raw block cost 55; a block of a
//! single-timestamp table's minutes keeps a few bytes of each 34-byte key.
//!
//! An entry is handed out as a borrowed [`EntryRef`], without reference
//! counting; iteration forward and backward is indexing. Its row key is
//! the block's own bytes where the block holds it whole (a block of one
//! row, or of rows that share no prefix); otherwise the reader copies it
//! out once a row ([`DecodedBlock::entry_in`], [`super::SstIter`]).

use super::block_builder::{DeltaByQualifier, FLAG_MILLIS, FLAG_PACKED_STREAMS, MAX_BLOCK_ENTRIES, Stream};
use crate::cache::Charge;
use crate::coding::{Cursor, DecodeError, unzigzag};
use std::cell::RefCell;
use std::cmp::Ordering;

use crate::key::{Entry, EntryKind, EntryRef, InternalKey, MAX_ROW_KEY, is_range_end};

mod part;
pub(crate) use part::BlockPart;

/// Per-entry unsigned integers in the narrowest width that holds the largest.
#[derive(Debug)]
enum Ints {
    /// Every value is zero.
    Zero,
    /// Value `i` is `i` times the step: each entry its own row, or values
    /// of one length back to back. Costs nothing per entry.
    Stride(u64),
    /// Value `i` is the given top minus `i`: a column's timestamps, newest
    /// first at a fixed interval (in the field's unit). Costs nothing per
    /// entry.
    Countdown(u64),
    U8(Box<[u8]>),
    U16(Box<[u16]>),
    U32(Box<[u32]>),
    U64(Box<[u64]>),
}

impl Ints {
    /// `values` minus `min` in units of `unit`, where no value is below
    /// `min` or above `max` and `unit` divides every difference.
    fn pack(values: &[u64], min: u64, max: u64, unit: &Divisor) -> Ints {
        // No values at all: `min` is above `max`.
        let largest = unit.quotient(max.saturating_sub(min));
        if largest == 0 {
            return Ints::Zero;
        }
        // In units of 1 (most fields) an offset is a subtraction, which
        // the compiler can run several values at a time.
        if unit.value == 1 {
            Ints::pack_offsets(values, largest, |v| v - min)
        } else {
            Ints::pack_offsets(values, largest, |v| unit.quotient(v - min))
        }
    }

    /// `values` as offsets (`offset` of each), none above `largest`.
    #[allow(clippy::cast_possible_truncation, reason = "each width is chosen to hold the largest offset")]
    #[inline]
    fn pack_offsets(values: &[u64], largest: u64, offset: impl Fn(u64) -> u64) -> Ints {
        if let Some(step) = stride(values.iter().map(|&v| offset(v))) {
            return Ints::Stride(step);
        }
        match largest {
            1..=0xff => Ints::U8(values.iter().map(|&v| offset(v) as u8).collect()),
            0x100..=0xffff => Ints::U16(values.iter().map(|&v| offset(v) as u16).collect()),
            0x1_0000..=0xffff_ffff => Ints::U32(values.iter().map(|&v| offset(v) as u32).collect()),
            _ => Ints::U64(values.iter().map(|&v| offset(v)).collect()),
        }
    }

    /// Value `i`; callers index below the entry count.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        match self {
            Ints::Zero => 0,
            Ints::Stride(step) => i as u64 * step,
            Ints::Countdown(top) => top - i as u64,
            Ints::U8(v) => u64::from(v[i]),
            Ints::U16(v) => u64::from(v[i]),
            Ints::U32(v) => u64::from(v[i]),
            Ints::U64(v) => v[i],
        }
    }

    /// Calls `f` with each of the first `n` values, in order.
    fn for_each(&self, n: usize, mut f: impl FnMut(u64)) {
        match self {
            Ints::Zero => (0..n).for_each(|_| f(0)),
            Ints::Stride(step) => (0..n as u64).for_each(|i| f(i * step)),
            Ints::Countdown(top) => (0..n as u64).for_each(|i| f(top - i)),
            Ints::U8(v) => v.iter().for_each(|&x| f(u64::from(x))),
            Ints::U16(v) => v.iter().for_each(|&x| f(u64::from(x))),
            Ints::U32(v) => v.iter().for_each(|&x| f(u64::from(x))),
            Ints::U64(v) => v.iter().for_each(|&x| f(x)),
        }
    }

    /// Bytes of memory held.
    fn bytes(&self) -> usize {
        match self {
            Ints::Zero | Ints::Stride(_) | Ints::Countdown(_) => 0,
            Ints::U8(v) => v.len(),
            Ints::U16(v) => v.len() * 2,
            Ints::U32(v) => v.len() * 4,
            Ints::U64(v) => v.len() * 8,
        }
    }
}

/// The first step of `offsets` if every offset is its index times it
/// (and there are at least two).
fn stride(mut offsets: impl Iterator<Item = u64>) -> Option<u64> {
    let (first, second) = (offsets.next()?, offsets.next()?);
    if first != 0 || second == 0 {
        return None;
    }
    let mut expected = second;
    offsets
        .all(|v| {
            expected = expected.wrapping_add(second);
            v == expected && expected >= second
        })
        .then_some(second)
}

/// Exact division by a fixed divisor, and the test whether it divides:
/// a shift for its power of two and a multiplication by the inverse of
/// its odd part (Granlund and Montgomery), where a division would cost
/// tens of cycles an entry.
#[derive(Debug, Clone, Copy)]
struct Divisor {
    value: u64,
    shift: u32,
    inverse: u64,
    /// The largest quotient: `u64::MAX` divided by the odd part.
    limit: u64,
}

impl Divisor {
    const ONE: Divisor = Divisor { value: 1, shift: 0, inverse: 1, limit: u64::MAX };

    /// `value` must not be 0.
    fn new(value: u64) -> Divisor {
        let shift = value.trailing_zeros();
        let odd = value >> shift;
        // Newton's iteration doubles the correct low bits of the inverse
        // each step: 3 bits from `odd` itself, then 6, 12, 24, 48, 96.
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        Divisor { value, shift, inverse, limit: u64::MAX / odd }
    }

    fn divides(&self, x: u64) -> bool {
        x.trailing_zeros() >= self.shift && (x >> self.shift).wrapping_mul(self.inverse) <= self.limit
    }

    /// `x` divided by the divisor, which divides it.
    fn quotient(&self, x: u64) -> u64 {
        (x >> self.shift).wrapping_mul(self.inverse)
    }
}

/// The greatest common divisor of every value's difference from `min`
/// (1 if they are all equal): timestamps of minutes in microseconds or
/// milliseconds share a large one, and stored in its units they take one
/// or two bytes an entry instead of four.
fn common_unit(values: &[u64], min: u64) -> Divisor {
    let mut unit: Option<Divisor> = None;
    for &v in values {
        let x = v - min;
        match unit {
            _ if x == 0 => {}
            None => unit = Some(Divisor::new(x)),
            Some(d) if d.divides(x) => {}
            Some(d) => {
                let g = gcd(d.value, x);
                if g == 1 {
                    return Divisor::ONE;
                }
                unit = Some(Divisor::new(g));
            }
        }
    }
    unit.unwrap_or(Divisor::ONE)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One per-entry field: offsets from the block's smallest value, in units
/// of `unit`.
#[derive(Debug)]
struct Field {
    base: u64,
    unit: u64,
    offsets: Ints,
}

impl Field {
    /// Packs `values`.
    fn pack(values: &[u64]) -> Field {
        let (min, max) = min_max(values);
        Field::pack_in(values, min, max)
    }

    /// Packs `values`, none below `min` or above `max`.
    fn pack_in(values: &[u64], min: u64, max: u64) -> Field {
        Field { base: min, unit: 1, offsets: Ints::pack(values, min, max, &Divisor::ONE) }
    }

    /// Packs `values`, none below `min` or above `max`, in the largest unit
    /// that divides their differences.
    fn pack_in_units(values: &[u64], min: u64, max: u64) -> Field {
        if min >= max {
            return Field::pack_in(values, min, max);
        }
        let unit = common_unit(values, min);
        Field { base: min, unit: unit.value, offsets: Ints::pack(values, min, max, &unit) }
    }

    /// The field of `n` entries all equal to `value`.
    fn same(value: u64) -> Field {
        Field { base: value, unit: 1, offsets: Ints::Zero }
    }

    /// The `n` signed values `first`, `first + step`, ... order-mapped
    /// ([`SIGN`]), with no per-entry pass, and the smallest and largest;
    /// `None` if there are none or the last overflows. A column of
    /// minutes, or of sequence numbers all 0, decodes so.
    #[allow(clippy::cast_possible_wrap, reason = "a block holds at most 2^23 entries")]
    fn arithmetic(first: i64, step: i64, n: usize) -> Option<(Field, u64, u64)> {
        let last = step.checked_mul(n.checked_sub(1)? as i64)?.checked_add(first)?;
        let (lo, hi) = (first.min(last).cast_unsigned() ^ SIGN, first.max(last).cast_unsigned() ^ SIGN);
        let field = match step.signum() {
            _ if lo == hi => Field::same(lo),
            1 => Field { base: lo, unit: step.unsigned_abs(), offsets: Ints::Stride(1) },
            _ => Field { base: lo, unit: step.unsigned_abs(), offsets: Ints::Countdown(n as u64 - 1) },
        };
        Some((field, lo, hi))
    }

    #[inline]
    fn get(&self, i: usize) -> u64 {
        self.base + self.offsets.get(i) * self.unit
    }

    /// Calls `f` with the value of each of `n` entries, in order.
    fn for_each(&self, n: usize, mut f: impl FnMut(u64)) {
        self.offsets.for_each(n, |v| f(self.base + v * self.unit));
    }
}

/// What a block of cells adds to its file's properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellTotals {
    /// Cells.
    pub cells: u64,
    /// Oldest and newest timestamps.
    pub oldest: i64,
    /// See `oldest`.
    pub newest: i64,
    /// Row, qualifier and value bytes and 8 a cell (the family's name
    /// apart: the caller knows it).
    pub logical_bytes: u64,
}

/// The smallest and largest of `values` (`(u64::MAX, 0)` if none).
fn min_max(values: &[u64]) -> (u64, u64) {
    values.iter().fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// Maps an `i64` onto a `u64` of the same order, and back.
const SIGN: u64 = 1 << 63;

/// A decoded data block.
#[derive(Debug)]
pub struct DecodedBlock {
    len: usize,
    /// The prefix every row key of the block shares (its first
    /// `row_prefix` bytes), then the rest of each distinct row's key, back
    /// to back.
    row_bytes: Box<[u8]>,
    row_prefix: u32,
    /// Where the rest of each distinct row's key ends in `row_bytes`.
    row_ends: RowEnds,
    /// Each entry's row, an index into `row_ends`.
    row_of: Field,
    qualifier_bytes: Box<[u8]>,
    /// End offset of each dictionary qualifier in `qualifier_bytes`.
    qualifier_ends: Box<[u32]>,
    qualifier_of: Field,
    /// Each entry's kind tag (checked at decode).
    kinds: Field,
    /// Timestamps divided by `scale`; like sequence numbers, order-mapped
    /// from `i64` to `u64` ([`SIGN`]).
    timestamps: Field,
    scale: i64,
    seqs: Field,
    values: Box<[u8]>,
    value_starts: Field,
    value_lens: Field,
}

/// Where the rest of each of a block's distinct row keys ends in its row
/// bytes (the first row's starts after the prefix they all share).
#[derive(Debug)]
enum RowEnds {
    /// Every rest is `width` bytes long, so row `r`'s lies at
    /// `prefix + r × width`. A tall table whose keys are of one width (an
    /// entity and a timestamp) decodes to this: the search of a block for
    /// a row then reads only the rows' bytes, one cache line a step, where
    /// a list of ends costs each step a read of the list and then, once
    /// that is known, of the bytes; and the list's 4 bytes a row are not
    /// kept.
    Even { rows: u32, width: u32 },
    /// The end of each row's rest.
    Listed(Box<[u32]>),
}

impl RowEnds {
    /// `ends` as kept: even if every rest (the first starting at `prefix`)
    /// has one length.
    #[allow(clippy::cast_possible_truncation, reason = "row counts within a block are under its 4 GiB length")]
    fn of(ends: Vec<u32>, prefix: u32) -> RowEnds {
        let width = ends.first().map_or(0, |&end| end - prefix);
        let mut start = prefix;
        let even = ends.iter().all(|&end| end - std::mem::replace(&mut start, end) == width);
        if even { RowEnds::Even { rows: ends.len() as u32, width } } else { RowEnds::Listed(ends.into()) }
    }

    /// The number of rows.
    fn len(&self) -> usize {
        match self {
            RowEnds::Even { rows, .. } => *rows as usize,
            RowEnds::Listed(ends) => ends.len(),
        }
    }

    /// Where row `r`'s rest lies (`r` below the row count), given the
    /// prefix's length.
    #[inline]
    fn rest(&self, r: usize, prefix: u32) -> (u32, u32) {
        match self {
            #[allow(clippy::cast_possible_truncation, reason = "offsets within a block are under its 4 GiB length")]
            RowEnds::Even { width, .. } => {
                let start = prefix + r as u32 * width;
                (start, start + width)
            }
            RowEnds::Listed(ends) => (if r == 0 { prefix } else { ends[r - 1] }, ends[r]),
        }
    }

    /// Bytes of memory the list takes.
    fn memory_bytes(&self) -> usize {
        match self {
            RowEnds::Even { .. } => 0,
            RowEnds::Listed(ends) => ends.len() * 4,
        }
    }
}

/// The first index of `lo..hi` where `below` turns false (`below` true
/// then false along the range).
pub(crate) fn partition_point(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// An entry against `key`, whose row is the entry's: the entry's kind
/// tag (checked at decode), qualifier, timestamp (asked for only if the
/// rest ties) and sequence number.
#[allow(clippy::cast_possible_truncation, reason = "kind tags are checked at decode")]
#[inline]
fn cmp_in_row(kind: u64, qualifier: &[u8], timestamp: impl FnOnce() -> i64, seq: u64, key: &InternalKey) -> Ordering {
    let kind = EntryKind::from_tag(kind as u8).unwrap_or(EntryKind::Put);
    let (group, sub) = kind.rank();
    let (key_group, key_sub) = key.kind.rank();
    group
        .cmp(&key_group)
        .then_with(|| qualifier.cmp(&key.qualifier[..]))
        .then(sub.cmp(&key_sub))
        .then_with(|| key.timestamp.cmp(&timestamp()))
        .then_with(|| key.seq.cmp(&seq))
}

/// `bytes[ends[i - 1]..ends[i]]`, the `i`th of back-to-back strings.
#[inline]
fn nth<'a>(bytes: &'a [u8], ends: &[u32], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &bytes[start..ends[i] as usize]
}

/// The bytes of a span [`span`] found.
#[inline]
fn part(bytes: &[u8], (start, end): (u32, u32)) -> &[u8] {
    &bytes[start as usize..end as usize]
}

/// Where the `i`th of the strings ending at `ends` lies.
#[inline]
fn span(ends: &[u32], i: usize) -> (u32, u32) {
    (if i == 0 { 0 } else { ends[i - 1] }, ends[i])
}

/// A row key of a [`DecodedBlock`]: the prefix the block's rows share,
/// then the rest. Rows of many narrow rows (a single-timestamp table's
/// minutes of one balloon) share most of their bytes, and kept whole they
/// would be nearly half of what the block costs the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowKey<'a> {
    prefix: &'a [u8],
    rest: &'a [u8],
}

impl<'a> RowKey<'a> {
    /// The key as one slice, where it is one in the block: a block's only
    /// row (all prefix), or a row whose rest is empty.
    #[inline]
    pub(crate) fn whole(&self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            Some(self.prefix)
        } else if self.prefix.is_empty() {
            Some(self.rest)
        } else {
            None
        }
    }

    /// The key as one slice: the block's, or a copy in `buf`.
    pub(crate) fn bytes<'b>(&self, buf: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if let Some(key) = self.whole() {
            key
        } else {
            self.copy_into(buf);
            buf
        }
    }

    /// The key, as `buf` now holds it.
    pub(crate) fn copy_into(&self, buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(self.prefix);
        buf.extend_from_slice(self.rest);
    }

    /// Bytes in the key.
    pub(crate) fn len(&self) -> usize {
        self.prefix.len() + self.rest.len()
    }

    /// Orders the key against `key`, as byte strings.
    #[inline]
    pub(crate) fn cmp_bytes(&self, key: &[u8]) -> Ordering {
        let p = self.prefix.len();
        match key.get(..p) {
            Some(head) => self.prefix.cmp(head).then_with(|| self.rest.cmp(&key[p..])),
            // `key` is shorter than the prefix: it decides, or is a prefix
            // of this key, which is then the greater.
            None => self.prefix[..key.len()].cmp(key).then(Ordering::Greater),
        }
    }

    /// Whether the key is `key`.
    #[inline]
    pub(crate) fn is(&self, key: &[u8]) -> bool {
        key.len() == self.len() && key.starts_with(self.prefix) && &key[self.prefix.len()..] == self.rest
    }
}

/// An entry's place in a [`DecodedBlock`] ([`DecodedBlock::locate`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryAt {
    /// The row's index among the block's rows.
    row: usize,
    /// The row key's bytes, where they lie together in the block.
    row_whole: Option<(u32, u32)>,
    qualifier: (u32, u32),
    value: (u32, u32),
    timestamp: i64,
    seq: u64,
    kind: EntryKind,
}

impl EntryAt {
    /// The row's index among the block's rows, if the block does not hold
    /// its key whole: then [`DecodedBlock::at`] takes the key from the
    /// caller, who copies it out once a row ([`RowKey::copy_into`]).
    #[inline]
    pub(crate) fn needs_row(&self) -> Option<usize> {
        self.row_whole.is_none().then_some(self.row)
    }
}

impl DecodedBlock {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index among the block's distinct rows of entry `i`'s row.
    #[allow(clippy::cast_possible_truncation, reason = "row indexes were decoded below the row count")]
    #[inline]
    pub(crate) fn row_index(&self, i: usize) -> Option<usize> {
        (i < self.len).then(|| self.row_of.get(i) as usize)
    }

    /// Row `r`'s key.
    #[inline]
    pub(crate) fn row_key(&self, r: usize) -> RowKey<'_> {
        let (start, end) = self.row_rest(r);
        RowKey {
            prefix: &self.row_bytes[..self.row_prefix as usize],
            rest: &self.row_bytes[start as usize..end as usize],
        }
    }

    /// Where the rest of row `r`'s key lies in `row_bytes`.
    #[inline]
    fn row_rest(&self, r: usize) -> (u32, u32) {
        self.row_ends.rest(r, self.row_prefix)
    }

    /// Entry `i` against `key` (`i` below the entry count).
    #[allow(clippy::cast_possible_truncation, reason = "row indexes were decoded below the row count")]
    pub(crate) fn cmp_key(&self, i: usize, key: &InternalKey) -> Ordering {
        self.row_key(self.row_of.get(i) as usize).cmp_bytes(&key.row).then_with(|| self.cmp_in_row(i, key))
    }

    /// Entry `i`, copied out (inspection and tests; reads borrow entries
    /// through an SSTable iterator).
    pub fn entry(&self, i: usize) -> Option<Entry> {
        let mut row = Vec::new();
        self.entry_in(i, &mut row).map(EntryRef::to_entry)
    }

    /// Every entry in order, copied out (inspection and tests).
    pub fn entries(&self) -> impl Iterator<Item = Entry> + use<'_> {
        let mut entries = Vec::with_capacity(self.len);
        self.for_each_entry(|e| entries.push(e.to_entry()));
        entries.into_iter()
    }

    /// Entry `i`, borrowed, with its row key put in `row` where the block
    /// does not hold it whole.
    #[inline]
    pub(crate) fn entry_in<'a>(&'a self, i: usize, row: &'a mut Vec<u8>) -> Option<EntryRef<'a>> {
        let at = self.locate(i)?;
        if at.row_whole.is_none() {
            self.row_key(at.row).copy_into(row);
        }
        Some(self.at(&at, row))
    }

    /// Calls `f` with each entry in order, borrowed.
    pub(crate) fn for_each_entry(&self, mut f: impl FnMut(EntryRef<'_>)) {
        let done: Result<(), std::convert::Infallible> = self.try_for_each_entry(|e| {
            f(e);
            Ok(())
        });
        let Ok(()) = done;
    }

    /// Calls `f` with each entry in order, borrowed, until it fails.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub(crate) fn try_for_each_entry<E>(&self, mut f: impl FnMut(EntryRef<'_>) -> Result<(), E>) -> Result<(), E> {
        let mut row = Vec::new();
        let mut row_held = None;
        for at in (0..self.len).filter_map(|i| self.locate(i)) {
            if at.row_whole.is_none() && row_held != Some(at.row) {
                self.row_key(at.row).copy_into(&mut row);
                row_held = Some(at.row);
            }
            f(self.at(&at, &row))?;
        }
        Ok(())
    }

    /// Where entry `i`'s parts lie in the block: everything
    /// [`DecodedBlock::at`] decodes, kept by an iterator standing on the
    /// entry so that it is decoded once, however often it is read.
    #[allow(clippy::cast_possible_truncation, reason = "indexes and offsets were decoded from 32-bit ranges")]
    #[inline]
    pub(crate) fn locate(&self, i: usize) -> Option<EntryAt> {
        if i >= self.len {
            return None;
        }
        let kind = EntryKind::from_tag(self.kinds.get(i) as u8)?;
        let v0 = self.value_starts.get(i) as u32;
        let row = self.row_of.get(i) as usize;
        let (start, end) = self.row_rest(row);
        let row_whole = if start == end {
            Some((0, self.row_prefix))
        } else if self.row_prefix == 0 {
            Some((start, end))
        } else {
            None
        };
        Some(EntryAt {
            row,
            row_whole,
            qualifier: span(&self.qualifier_ends, self.qualifier_of.get(i) as usize),
            value: (v0, v0 + self.value_lens.get(i) as u32),
            timestamp: (self.timestamps.get(i) ^ SIGN).cast_signed() * self.scale,
            seq: self.seqs.get(i) ^ SIGN,
            kind,
        })
    }

    /// The entry `at` locates ([`DecodedBlock::locate`] on this block),
    /// whose row key is `row` where the block does not hold it whole
    /// ([`EntryAt::needs_row`]).
    #[inline]
    pub(crate) fn at<'a>(&'a self, at: &EntryAt, row: &'a [u8]) -> EntryRef<'a> {
        EntryRef {
            row: at.row_whole.map_or(row, |whole| part(&self.row_bytes, whole)),
            qualifier: part(&self.qualifier_bytes, at.qualifier),
            timestamp: at.timestamp,
            seq: at.seq,
            kind: at.kind,
            value: part(&self.values, at.value),
        }
    }

    /// The distinct row keys of the block, in order.
    pub(crate) fn rows(&self) -> impl Iterator<Item = RowKey<'_>> {
        (0..self.row_ends.len()).map(|r| self.row_key(r))
    }

    /// Whether every entry is a plain cell (`EntryKind::Put`) with sequence
    /// number 0, as a compaction writes the rows it sees whole.
    pub(crate) fn all_settled_puts(&self) -> bool {
        let same = |f: &Field, value: u64| matches!(f.offsets, Ints::Zero) && f.base == value;
        self.len == 0 || (same(&self.kinds, u64::from(EntryKind::Put as u8)) && same(&self.seqs, SIGN))
    }

    /// The totals of a block whose entries are all cells
    /// ([`DecodedBlock::all_settled_puts`]), summed column by column
    /// rather than entry by entry; `None` if it is empty.
    #[allow(clippy::cast_possible_truncation, reason = "row and qualifier indexes were decoded below their counts")]
    pub(crate) fn cell_totals(&self) -> Option<CellTotals> {
        if self.len == 0 {
            return None;
        }
        let n = self.len;
        let lengths = |ends: &[u32]| -> Vec<u64> {
            ends.iter().scan(0, |start, &end| Some(u64::from(end - std::mem::replace(start, end)))).collect()
        };
        let row_lens: Vec<u64> = self.rows().map(|row| row.len() as u64).collect();
        let qualifier_lens = lengths(&self.qualifier_ends);
        let mut bytes = 8 * n as u64;
        self.row_of.for_each(n, |r| bytes += row_lens[r as usize]);
        self.qualifier_of.for_each(n, |q| bytes += qualifier_lens[q as usize]);
        self.value_lens.for_each(n, |len| bytes += len);
        let mut newest = 0;
        self.timestamps.for_each(n, |t| newest = newest.max(t));
        let timestamp = |v: u64| (v ^ SIGN).cast_signed() * self.scale;
        Some(CellTotals {
            cells: n as u64,
            oldest: timestamp(self.timestamps.base),
            newest: timestamp(newest),
            logical_bytes: bytes,
        })
    }

    /// What the block's entries add to the size estimate of a block being
    /// built ([`super::block_builder::estimate`]): how big it is in the
    /// units blocks are cut by.
    pub(crate) fn estimated_size(&self) -> usize {
        super::block_builder::estimate(
            self.len,
            (self.row_ends.len(), self.rows().map(|row| row.len()).sum()),
            (self.qualifier_ends.len(), self.qualifier_bytes.len()),
            self.values.len(),
        )
    }

    /// The oldest timestamp in the block (`None` if it is empty).
    pub(crate) fn oldest_timestamp(&self) -> Option<i64> {
        (self.len > 0).then(|| (self.timestamps.base ^ SIGN).cast_signed() * self.scale)
    }

    /// Index of the first entry not less than `key` (`inclusive`) or greater
    /// than `key` (`!inclusive`). The block's rows are distinct and in
    /// order, so the search finds the row among them first, comparing row
    /// keys only, and then the entry within the row's run, comparing the
    /// rest of the key field by field without locating whole entries.
    pub(crate) fn seek(&self, key: &InternalKey, inclusive: bool) -> usize {
        let rows = self.row_ends.len();
        let row = self.first_row_not_below(&key.row);
        let (start, end) = if rows == 1 {
            // A block inside one wide row (the common case of a seek): its
            // entries are all the row's.
            if row == 1 { (self.len, self.len) } else { (0, self.len) }
        } else if rows == self.len {
            // A row per entry (a tall table's block): entry `row` is the
            // row's, with no search of the packed row numbers, whose
            // memory a read of rows far apart would fetch for nothing else.
            (row, (row + 1).min(self.len))
        } else {
            let row_id = row as u64;
            let start = partition_point(0, self.len, |i| self.row_of.get(i) < row_id);
            (start, partition_point(start, self.len, |i| self.row_of.get(i) == row_id))
        };
        if row == rows || !self.row_key(row).is(&key.row) {
            return start;
        }
        let below = |i: usize| {
            let ord = self.cmp_in_row(i, key);
            if inclusive { ord.is_lt() } else { ord.is_le() }
        };
        // A read starts at its row's first key: settled by one comparison.
        if !below(start) {
            return start;
        }
        partition_point(start + 1, end, below)
    }

    /// The index of the first row whose key is not below `key` (the row
    /// count if every row's is). The prefix all rows share is compared
    /// once; the search by halves then compares only the rest of each key.
    fn first_row_not_below(&self, key: &[u8]) -> usize {
        let rows = self.row_ends.len();
        let prefix = &self.row_bytes[..self.row_prefix as usize];
        let Some(head) = key.get(..prefix.len()) else {
            return partition_point(0, rows, |r| self.row_key(r).cmp_bytes(key).is_lt());
        };
        match prefix.cmp(head) {
            Ordering::Less => rows,
            Ordering::Greater => 0,
            Ordering::Equal => {
                let rest = &key[prefix.len()..];
                partition_point(0, rows, |r| self.row_key(r).rest < rest)
            }
        }
    }

    /// Entry `i` against `key`, whose row is entry `i`'s.
    #[allow(clippy::cast_possible_truncation, reason = "kind tags and qualifier ids were checked at decode")]
    fn cmp_in_row(&self, i: usize, key: &InternalKey) -> Ordering {
        let qualifier = nth(&self.qualifier_bytes, &self.qualifier_ends, self.qualifier_of.get(i) as usize);
        let timestamp = || (self.timestamps.get(i) ^ SIGN).cast_signed() * self.scale;
        cmp_in_row(self.kinds.get(i), qualifier, timestamp, self.seqs.get(i) ^ SIGN, key)
    }

    /// Decodes the raw (decompressed) block `raw`.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset in `raw` of the first byte that does
    /// not decode, or of the stream holding a value out of range.
    pub(crate) fn decode(raw: &[u8]) -> Result<DecodedBlock, DecodeError> {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let decoded = DecodedBlock::decode_with(raw, &mut scratch);
            scratch.release_if_large();
            decoded
        })
    }

    /// [`DecodedBlock::decode`], with the thread's working buffers.
    #[allow(clippy::cast_possible_truncation, reason = "offsets and counts within a block checked to be under 4 GiB")]
    fn decode_with(raw: &[u8], s: &mut Scratch) -> Result<DecodedBlock, DecodeError> {
        let (mut c, Header { scale, packed, n, row_count, qual_count }) = Header::read(raw)?;
        let Scratch { ints: scratch, kinds, qids, heads, rest, starts, row_records, rows, .. } = s;
        let (row_bytes, row_prefix, row_ends) = decode_rows((&mut c, raw), row_count, n, scratch, (row_records, rows))?;
        let row_of = Field::pack_in(scratch, 0, row_count.saturating_sub(1) as u64);
        let mut qualifier_bytes = Vec::new();
        let mut qualifier_ends = Vec::with_capacity(qual_count);
        for _ in 0..qual_count {
            qualifier_bytes.extend_from_slice(c.length_prefixed("qualifier")?);
            qualifier_ends.push(qualifier_bytes.len() as u32);
        }
        if qual_count == 0 && n > 0 {
            return Err(c.error("qualifier dictionary is empty"));
        }
        let (kinds_at, same_kind) = read_stream_unless_same(&mut c, n, packed.then_some("kinds"), "kinds", kinds)?;
        decode_qualifier_ids(&mut c, n, qual_count, packed, scratch, qids)?;
        let (timestamps_at, deltas) =
            read_delta_stream(&mut c, qids, qual_count, packed, "timestamp", scratch, (&mut *heads, &mut *rest))?;
        let (timestamps, min, max) = undelta_field(deltas, scratch, qids, qual_count, Field::pack_in_units);
        let in_range = |v: u64| (v ^ SIGN).cast_signed().checked_mul(scale).is_some();
        if n > 0 && !(in_range(min) && in_range(max)) {
            return Err(c.error_at(timestamps_at, "timestamp out of range"));
        }
        let (seqs_at, deltas) =
            read_delta_stream(&mut c, qids, qual_count, packed, "sequence", scratch, (heads, rest))?;
        let (seqs, min, _) = undelta_field(deltas, scratch, qids, qual_count, Field::pack_in);
        if n > 0 && min < SIGN {
            return Err(c.error_at(seqs_at, "negative sequence number"));
        }
        let (value_starts, value_lens, values) = decode_values(&mut c, qids, qual_count, packed, scratch, starts)?;
        if !c.is_empty() {
            return Err(c.error("end of block"));
        }
        let put = u64::from(EntryKind::Put as u8);
        if let Some(kind) = same_kind.filter(|&k| k != put) {
            kinds.clear();
            kinds.resize(n, kind);
        }
        let kinds = if same_kind == Some(put) || kinds.iter().all(|&k| k == put) {
            Field::same(put)
        } else {
            for (i, &tag) in kinds.iter().enumerate() {
                let kind = u8::try_from(tag).ok().and_then(EntryKind::from_tag);
                let kind = kind.ok_or_else(|| c.error_at(kinds_at.offset_of(&c, i), "entry kind"))?;
                if kind == EntryKind::DeleteColumn {
                    let v0 = value_starts.get(i) as usize;
                    if !is_range_end(&values[v0..v0 + value_lens.get(i) as usize]) {
                        return Err(c.error_at(kinds_at.offset_of(&c, i), "column tombstone's range end"));
                    }
                }
            }
            Field::pack(kinds)
        };
        let qualifier_of = if qual_count <= 1 {
            Field::same(0)
        } else {
            scratch.clear();
            scratch.extend(qids.iter().map(|&q| u64::from(q)));
            Field::pack_in(scratch, 0, qual_count as u64 - 1)
        };
        Ok(DecodedBlock {
            len: n,
            row_bytes,
            row_prefix,
            row_ends,
            row_of,
            qualifier_bytes: qualifier_bytes.into(),
            qualifier_ends: qualifier_ends.into(),
            qualifier_of,
            kinds,
            timestamps,
            scale,
            seqs,
            values,
            value_starts,
            value_lens,
        })
    }
}

/// What a raw block's first bytes say.
struct Header {
    /// Timestamps are stored divided by this (1000 or 1).
    scale: i64,
    /// Whether the streams are packed ([`FLAG_PACKED_STREAMS`]).
    packed: bool,
    /// Entries, distinct rows and distinct qualifiers.
    n: usize,
    row_count: usize,
    qual_count: usize,
}

impl Header {
    /// The header of the raw block `raw`, and a cursor past it.
    fn read(raw: &[u8]) -> Result<(Cursor<'_>, Header), DecodeError> {
        if u32::try_from(raw.len()).is_err() {
            return Err(DecodeError::new(0, "block larger than 4 GiB"));
        }
        let mut c = Cursor::new(raw);
        let flags = c.u8("block flags")?;
        if flags & !(FLAG_MILLIS | FLAG_PACKED_STREAMS) != 0 {
            return Err(c.error_at(0, "unknown block flags"));
        }
        let n = c.len(MAX_BLOCK_ENTRIES, "entry count")?;
        let row_count = c.len(n, "row count")?;
        let qual_count = c.len(n, "qualifier count")?;
        let scale = if flags & FLAG_MILLIS != 0 { 1000 } else { 1 };
        let header = Header { scale, packed: flags & FLAG_PACKED_STREAMS != 0, n, row_count, qual_count };
        Ok((c, header))
    }
}

/// A block decode's working buffers, kept per thread so that decoding a
/// block allocates only what the decoded block keeps: a cache miss on a
/// point read is mostly decode, and fresh buffers for every decode cost a
/// third of it in the allocator and in page faults.
#[derive(Default)]
struct Scratch {
    /// Per-entry integers on their way into a [`Field`].
    ints: Vec<u64>,
    kinds: Vec<u64>,
    qids: Vec<u32>,
    /// The first delta of each qualifier, and the others (packed blocks).
    heads: Vec<u64>,
    rest: Vec<u64>,
    starts: Vec<u64>,
    /// Each row's record: bytes shared, where its suffix lies and its length.
    row_records: Vec<[u32; 3]>,
    /// Row keys' rests, rebuilt before the block keeps an exact copy.
    rows: Vec<u8>,
    /// A part's ([`BlockPart`]): the sequence numbers and value lengths,
    /// the dictionary's qualifiers (where each lies in the block) and the
    /// keys of the rows around the one sought.
    seqs: Vec<u64>,
    lens: Vec<u64>,
    qualifiers: Vec<(u32, u32)>,
    window_keys: [Vec<u8>; 4],
    /// A part's: each qualifier's last value, and the fields of the
    /// entries it builds.
    prev: Vec<i64>,
    built: Vec<u64>,
}

/// Buffers above this many bytes are let go after a decode, so a thread
/// that once decoded an outsized block does not hold its buffers.
const SCRATCH_KEPT: usize = 1 << 20;

impl Scratch {
    fn release_if_large(&mut self) {
        let held = (self.ints.capacity()
            + self.kinds.capacity()
            + self.rest.capacity()
            + self.starts.capacity()
            + self.seqs.capacity()
            + self.lens.capacity()
            + self.qualifiers.capacity()
            + self.prev.capacity()
            + self.built.capacity())
            * 8
            + (self.qids.capacity() + 3 * self.row_records.capacity()) * 4
            + self.rows.capacity()
            + self.window_keys.iter().map(Vec::capacity).sum::<usize>();
        if held > SCRATCH_KEPT {
            *self = Scratch::default();
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The row keys as a [`DecodedBlock`] keeps them: the shared prefix and
/// each row's rest, back to back; the prefix's length; where each rest
/// ends.
type RowKeys = (Box<[u8]>, u32, RowEnds);

/// The block's row keys (see [`RowKeys`]); `row_of` gets each entry's row.
///
/// A first pass reads the row records and finds the prefix every key
/// shares: the fewest bytes any row shares with the row before it. The
/// second rebuilds each key's rest only, from the rest of the key before
/// it, so a block of many rows that differ in their last bytes copies few
/// bytes a row and keeps few.
#[allow(clippy::cast_possible_truncation, reason = "row indexes and offsets within a block are under its 4 GiB length")]
fn decode_rows(
    (c, raw): (&mut Cursor<'_>, &[u8]),
    count: usize,
    entries: usize,
    row_of: &mut Vec<u64>,
    (records, bytes): (&mut Vec<[u32; 3]>, &mut Vec<u8>),
) -> Result<RowKeys, DecodeError> {
    row_of.clear();
    records.clear();
    // A block of one row needs no per-entry row: every entry is row 0.
    let mut covered = 0;
    let (mut prev_len, mut prefix) = (0, usize::MAX);
    for r in 0..count {
        let shared = c.len(prev_len, "row shared prefix")?;
        let suffix = c.length_prefixed("row suffix")?;
        let suffix_at = c.position() - suffix.len();
        if shared + suffix.len() > MAX_ROW_KEY {
            return Err(c.error("row key longer than the 4 KiB limit"));
        }
        let run = c.len(entries - covered, "row run")?;
        if run == 0 {
            return Err(c.error("row with no entries"));
        }
        records.push([shared as u32, suffix_at as u32, suffix.len() as u32]);
        prev_len = shared + suffix.len();
        if r > 0 {
            prefix = prefix.min(shared);
        }
        covered += run;
        if run == 1 {
            row_of.push(r as u64);
        } else if count > 1 {
            row_of.extend(std::iter::repeat_n(r as u64, run));
        }
    }
    if covered != entries {
        return Err(c.error("row runs do not add up to the entry count"));
    }
    if count == 1 {
        row_of.clear();
    }
    // One row: its whole key is the prefix.
    let prefix = prefix.min(prev_len);
    bytes.clear();
    let mut row_ends: Vec<u32> = Vec::with_capacity(count);
    let mut rest_start = prefix;
    for &[shared, at, len] in records.iter() {
        let [shared, at, len] = [shared as usize, at as usize, len as usize];
        // The first row shares nothing, and its rest follows the prefix.
        if let Some(&prev_end) = row_ends.last() {
            let from = std::mem::replace(&mut rest_start, prev_end as usize);
            bytes.extend_from_within(from..from + (shared - prefix));
        }
        bytes.extend_from_slice(&raw[at..at + len]);
        row_ends.push(bytes.len() as u32);
    }
    Ok((Box::from(&bytes[..]), prefix as u32, RowEnds::of(row_ends, prefix as u32)))
}

/// Where a stream starts in the block, and how its entries are laid out:
/// what an error about one entry names as its offset.
#[derive(Debug, Clone, Copy)]
struct StreamAt {
    /// The first byte of its integers (the varints, the single value or
    /// the base).
    data: usize,
    /// The first byte of its fixed-width values, if it has them.
    values: usize,
    encoding: Stream,
}

impl StreamAt {
    /// Offset in the block of integer `i` of the stream.
    fn offset_of(&self, c: &Cursor<'_>, i: usize) -> usize {
        match self.encoding {
            Stream::Varints => c.varint_offset(self.data, i),
            Stream::Same => self.data,
            fixed => self.values + i * fixed.width(),
        }
    }
}

/// Reads one stream of `n` integers into `out`: in a packed block
/// (`packed` names the stream) in the encoding its tag gives; otherwise
/// kinds as bytes and the rest as varints.
fn read_stream(
    c: &mut Cursor<'_>,
    n: usize,
    packed: Option<&'static str>,
    what: &'static str,
    out: &mut Vec<u64>,
) -> Result<StreamAt, DecodeError> {
    let (at, same) = read_stream_unless_same(c, n, packed, what, out)?;
    if let Some(value) = same {
        out.clear();
        out.resize(n, value);
    }
    Ok(at)
}

/// [`read_stream`], except that a stream of one value (`Stream::Same`)
/// is not spread into `out`: its value is returned instead.
fn read_stream_unless_same(
    c: &mut Cursor<'_>,
    n: usize,
    packed: Option<&'static str>,
    what: &'static str,
    out: &mut Vec<u64>,
) -> Result<(StreamAt, Option<u64>), DecodeError> {
    let start = c.position();
    let Some(what) = packed else {
        if what == "kinds" {
            out.clear();
            out.extend(c.bytes(n, what)?.iter().map(|&k| u64::from(k)));
            return Ok((StreamAt { data: start, values: start, encoding: Stream::Offsets8 }, None));
        }
        c.varints(n, what, out)?;
        return Ok((StreamAt { data: start, values: start, encoding: Stream::Varints }, None));
    };
    let tag = c.u8(what)?;
    let encoding = Stream::from_tag(tag).ok_or_else(|| c.error_at(start, "unknown stream encoding"))?;
    let data = c.position();
    out.clear();
    if encoding == Stream::Varints {
        c.varints(n, what, out)?;
        return Ok((StreamAt { data, values: data, encoding }, None));
    }
    let base = c.varint(what)?;
    let values = c.position();
    match encoding {
        Stream::Same => return Ok((StreamAt { data, values, encoding }, Some(base))),
        Stream::Offsets8 => unpack::<1>(c, n, base, what, out)?,
        Stream::Offsets16 => unpack::<2>(c, n, base, what, out)?,
        _ => unpack::<4>(c, n, base, what, out)?,
    }
    Ok((StreamAt { data, values, encoding }, None))
}

/// A stream of per-qualifier deltas, read ([`read_delta_stream`]).
#[derive(Debug, Clone, Copy)]
enum Deltas {
    /// Spread into the caller's buffer, one an entry.
    Spread,
    /// Left unspread: the values step evenly from the first (a block of
    /// one qualifier whose deltas after the first are all equal, or of any
    /// number whose deltas after the first are all 0). Both zigzagged, as
    /// stored.
    Even { first: u64, step: u64 },
}

impl Deltas {
    /// The deltas of a packed stream whose heads are `heads` and whose
    /// other deltas are all `step`, if the values step evenly: one column
    /// stepping evenly, or several whose deltas are all 0 after the first
    /// entry's (sequence numbers after a compaction).
    fn even(heads: &[u64], step: u64) -> Option<Deltas> {
        let [first, others @ ..] = heads else { return None };
        (others.is_empty() || (step == 0 && others.iter().all(|&d| d == 0)))
            .then_some(Deltas::Even { first: *first, step })
    }

    /// The field of the `n` values the deltas give, without undoing them
    /// one by one; `None` if they are spread (or overflow, which the
    /// general path handles as it handles any block).
    fn even_field(self, n: usize) -> Option<(Field, u64, u64)> {
        match self {
            Deltas::Spread => None,
            Deltas::Even { first, step } => Field::arithmetic(unzigzag(first), unzigzag(step), n),
        }
    }

    /// Spreads unspread deltas into `out`.
    fn spread(self, n: usize, out: &mut Vec<u64>) {
        if let Deltas::Even { first, step } = self {
            out.clear();
            out.push(first);
            out.resize(n, step);
        }
    }
}

/// Reads a stream of per-qualifier deltas into `out`, one an entry of
/// qualifier ids `qids` (of `quals` qualifiers): in a packed block, each
/// qualifier's first delta as a varint, then the others as a stream;
/// otherwise varints.
fn read_delta_stream(
    c: &mut Cursor<'_>,
    qids: &[u32],
    quals: usize,
    packed: bool,
    what: &'static str,
    out: &mut Vec<u64>,
    (heads, rest): (&mut Vec<u64>, &mut Vec<u64>),
) -> Result<(usize, Deltas), DecodeError> {
    let start = c.position();
    if !packed {
        c.varints(qids.len(), what, out)?;
        return Ok((start, Deltas::Spread));
    }
    // Every qualifier of the dictionary has a first entry, in id order.
    heads.clear();
    for _ in 0..quals.min(qids.len()) {
        heads.push(c.varint(what)?);
    }
    let n_rest = qids.len() - heads.len();
    if let (_, Some(step)) = read_stream_unless_same(c, n_rest, Some(what), what, rest)? {
        if let Some(even) = Deltas::even(heads, step) {
            return Ok((start, even));
        }
        rest.clear();
        rest.resize(n_rest, step);
    }
    out.clear();
    out.reserve(qids.len());
    let (mut next_head, mut others) = (0, rest.iter().copied());
    for &qid in qids {
        if qid as usize == next_head {
            out.push(heads[next_head]);
            next_head += 1;
        } else {
            out.push(others.next().ok_or_else(|| c.error_at(start, what))?);
        }
    }
    Ok((start, Deltas::Spread))
}

/// `n` little-endian offsets of `W` bytes from `base` into `out`.
fn unpack<const W: usize>(
    c: &mut Cursor<'_>,
    n: usize,
    base: u64,
    what: &'static str,
    out: &mut Vec<u64>,
) -> Result<(), DecodeError> {
    let len = n.checked_mul(W).ok_or_else(|| c.error(what))?;
    let bytes = c.bytes(len, what)?;
    out.extend(bytes.chunks_exact(W).map(|chunk| {
        let mut le = [0u8; 8];
        le[..W].copy_from_slice(chunk);
        base.wrapping_add(u64::from_le_bytes(le))
    }));
    Ok(())
}

/// The field of the values that per-qualifier `deltas` give (spread in
/// `out`, or not), packed by `pack` unless they step evenly; and the
/// smallest and largest value (`(u64::MAX, 0)` if none).
fn undelta_field(
    deltas: Deltas,
    out: &mut Vec<u64>,
    qids: &[u32],
    quals: usize,
    pack: fn(&[u64], u64, u64) -> Field,
) -> (Field, u64, u64) {
    if let Some(even) = deltas.even_field(qids.len()) {
        return even;
    }
    deltas.spread(qids.len(), out);
    let (min, max) = undelta(out, qids, quals);
    (pack(out, min, max), min, max)
}

/// Turns a stream of zigzag per-qualifier deltas in `out` into the values,
/// order-mapped to `u64`; returns the smallest and largest (`(u64::MAX,
/// 0)` if none).
fn undelta(out: &mut [u64], qids: &[u32], quals: usize) -> (u64, u64) {
    let (mut min, mut max) = (u64::MAX, 0);
    if quals == 1 {
        // One column: each value is a delta from the one before.
        let mut v = 0i64;
        for slot in out.iter_mut() {
            v = v.wrapping_add(unzigzag(*slot));
            *slot = v.cast_unsigned() ^ SIGN;
            (min, max) = (min.min(*slot), max.max(*slot));
        }
        return (min, max);
    }
    let mut base = DeltaByQualifier::new(quals);
    for (slot, &qid) in out.iter_mut().zip(qids) {
        let v = base.base(qid as usize).wrapping_add(unzigzag(*slot));
        base.record(qid as usize, v);
        *slot = v.cast_unsigned() ^ SIGN;
        (min, max) = (min.min(*slot), max.max(*slot));
    }
    (min, max)
}

/// Each entry's qualifier id, below `quals`.
#[allow(clippy::cast_possible_truncation, reason = "qualifier ids are checked to be under the entry count")]
fn decode_qualifier_ids(
    c: &mut Cursor<'_>,
    n: usize,
    quals: usize,
    packed: bool,
    raw: &mut Vec<u64>,
    qids: &mut Vec<u32>,
) -> Result<(), DecodeError> {
    let ids = read_qualifier_ids(c, n, quals, packed, raw)?;
    qids.clear();
    qids.extend(ids.iter().map(|&q| q as u32));
    Ok(())
}

/// Each entry's qualifier id, into `out`, checked: below `quals`, given in
/// order of first appearance, and every qualifier of the dictionary used
/// (the per-qualifier deltas rely on all three).
fn read_qualifier_ids<'o>(
    c: &mut Cursor<'_>,
    n: usize,
    quals: usize,
    packed: bool,
    out: &'o mut Vec<u64>,
) -> Result<&'o [u64], DecodeError> {
    let (at, same) = read_stream_unless_same(c, n, packed.then_some("qualifier id"), "qualifier id", out)?;
    if let Some(q) = same {
        // One id for every entry: the dictionary's only qualifier.
        if n > 0 && (q != 0 || quals != 1) {
            return Err(c.error_at(at.offset_of(c, 0), "qualifier id"));
        }
        out.clear();
        out.resize(n, 0);
        return Ok(out);
    }
    let mut next = 0;
    for (i, &q) in out.iter().enumerate() {
        if q > next || q >= quals as u64 {
            return Err(c.error_at(at.offset_of(c, i), "qualifier id"));
        }
        next += u64::from(q == next);
    }
    if next != quals as u64 {
        return Err(c.error_at(at.data, "qualifier id: a dictionary entry no entry uses"));
    }
    Ok(out)
}

/// Each entry's value start and length, and the values, which are grouped
/// by qualifier in the block and copied out as they are.
#[allow(clippy::cast_possible_truncation, reason = "lengths bounded by the block's size, under 4 GiB")]
fn decode_values(
    c: &mut Cursor<'_>,
    qids: &[u32],
    quals: usize,
    packed: bool,
    lens: &mut Vec<u64>,
    starts: &mut Vec<u64>,
) -> Result<(Field, Field, Box<[u8]>), DecodeError> {
    let at = read_stream(c, qids.len(), packed.then_some("value length"), "value length", lens)?;
    // Each length is at most the bytes left, under 4 GiB, and there are
    // fewer entries than bytes: their sums cannot overflow.
    let left = c.remaining() as u64;
    let (min_len, max_len) = min_max(lens);
    if max_len > left {
        let i = lens.iter().position(|&len| len > left).unwrap_or(0);
        return Err(c.error_at(at.offset_of(c, i), "value length"));
    }
    starts.clear();
    let total = if quals == 1 {
        let mut at = 0;
        starts.extend(lens.iter().map(|&len| {
            let start = at;
            at += len;
            start
        }));
        at
    } else {
        let mut cursor = vec![0u64; quals];
        for (&qid, &len) in qids.iter().zip(lens.iter()) {
            cursor[qid as usize] += len;
        }
        let mut total = 0;
        for group in &mut cursor {
            (*group, total) = (total, total + *group);
        }
        starts.extend(qids.iter().zip(lens.iter()).map(|(&qid, &len)| {
            let start = &mut cursor[qid as usize];
            let at = *start;
            *start += len;
            at
        }));
        total
    };
    let values: Box<[u8]> = c.bytes(usize::try_from(total).map_err(|_| c.error("values"))?, "values")?.into();
    let value_lens = Field::pack_in(lens, min_len, max_len);
    Ok((Field::pack_in(starts, 0, total), value_lens, values))
}

impl Charge for DecodedBlock {
    fn charge(&self) -> usize {
        self.memory_bytes()
    }
}

impl DecodedBlock {
    /// Bytes of memory the block holds: what it costs the block cache's budget.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<DecodedBlock>()
            + self.row_bytes.len()
            + self.row_ends.memory_bytes()
            + self.row_of.offsets.bytes()
            + self.qualifier_bytes.len()
            + self.qualifier_ends.len() * 4
            + self.qualifier_of.offsets.bytes()
            + self.kinds.offsets.bytes()
            + self.timestamps.offsets.bytes()
            + self.seqs.offsets.bytes()
            + self.values.len()
            + self.value_starts.offsets.bytes()
            + self.value_lens.offsets.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::block_builder::BlockBuilder;

    /// `entries` (in key order) encoded as one block.
    fn encode(entries: &[Entry]) -> Vec<u8> {
        let mut b = BlockBuilder::default();
        for e in entries {
            b.add(e.as_ref());
        }
        let mut raw = Vec::new();
        b.finish(&mut raw);
        raw
    }

    fn round_trip(entries: &[Entry]) -> Vec<Entry> {
        DecodedBlock::decode(&encode(entries)).unwrap().entries().collect()
    }

    #[test]
    fn a_timestamp_beyond_i64_once_scaled_is_an_error() {
        // One cell whose stored milliseconds overflow i64 as microseconds.
        let mut raw = vec![FLAG_MILLIS, 1, 1, 1, 0, 1, b'r', 1, 1, b'q', 0, 0];
        crate::coding::put_zigzag(&mut raw, i64::MAX / 1000 + 1);
        raw.extend_from_slice(&[0, 0]); // sequence 0, empty value
        let err = DecodedBlock::decode(&raw).unwrap_err();
        assert_eq!((err.offset, err.what.as_ref()), (12, "timestamp out of range"));
        // One millisecond less decodes.
        raw.truncate(12);
        crate::coding::put_zigzag(&mut raw, i64::MAX / 1000);
        raw.extend_from_slice(&[0, 0]);
        assert_eq!(DecodedBlock::decode(&raw).unwrap().entry(0).unwrap().key.timestamp, i64::MAX / 1000 * 1000);
    }

    /// Blocks to seek in: one of rows of one to four entries, one of a
    /// single wide row, and two of a row per entry, each sorted; and for
    /// each, targets on every entry, between entries and rows, before the
    /// first and after the last, and rows that are a part of the prefix
    /// the block's rows share ("row-r") or part from it.
    fn blocks_and_targets() -> Vec<(Vec<Entry>, Vec<InternalKey>)> {
        let mut many = Vec::new();
        for r in 0..20u32 {
            let row = format!("row-r{:02}", r * 2);
            for q in 0..=(r % 4) {
                many.push(Entry::put(row.clone().into(), format!("q{q}").into(), 1000 * i64::from(q), 5, "v".into()));
            }
            if r % 5 == 0 {
                many.push(Entry::delete_family(row.clone().into(), 9));
            }
        }
        let mut wide = vec![Entry::delete_family("row-r20".into(), 9)];
        for q in 0..4u32 {
            let column = format!("q{q}");
            wide.push(Entry::delete_column("row-r20".into(), column.clone().into(), (0, Some(500)), 8));
            for t in 0..30i64 {
                wide.push(Entry::put(
                    "row-r20".into(),
                    column.clone().into(),
                    1000 * t,
                    7 - (t % 3).cast_unsigned(),
                    "v".into(),
                ));
            }
        }
        // A row per entry, as a tall table's blocks hold; and such rows
        // whose keys differ in length, so that their ends are listed.
        let tall: Vec<Entry> = (0..20u32)
            .map(|r| Entry::put(format!("row-r{:02}", r * 2).into(), "q".into(), 1000, 5, "v".into()))
            .collect();
        let uneven: Vec<Entry> = (0..20u32)
            .map(|r| {
                Entry::put(
                    format!("row-r{}", "9".repeat(r as usize % 4) + &r.to_string()).into(),
                    "q".into(),
                    1000,
                    5,
                    "v".into(),
                )
            })
            .collect();
        let mut blocks = Vec::new();
        for mut entries in [many, wide, tall, uneven] {
            entries.sort_by(|a, b| a.key.cmp(&b.key));
            let mut targets: Vec<InternalKey> = entries.iter().map(|e| e.key.clone()).collect();
            for e in &entries {
                let mut between = e.key.clone();
                between.timestamp -= 1;
                targets.push(between);
            }
            for r in 0..=40u32 {
                targets.push(InternalKey::first_of_row(format!("row-r{r:02}").into()));
                targets.push(InternalKey::first_of_row(format!("row-r{r:02}~").into()));
            }
            for row in ["", "a", "r", "row", "row-", "row-r", "row-r0", "row-s", "rox", "roa", "s"] {
                targets.push(InternalKey::first_of_row(row.into()));
            }
            blocks.push((entries, targets));
        }
        blocks
    }

    #[test]
    fn a_seek_lands_where_a_scan_would() {
        for (entries, targets) in blocks_and_targets() {
            let block = DecodedBlock::decode(&encode(&entries)).unwrap();
            for t in &targets {
                for inclusive in [true, false] {
                    let scan = entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t });
                    let want = scan.unwrap_or(entries.len());
                    assert_eq!(block.seek(t, inclusive), want, "{t:?} inclusive {inclusive}");
                }
            }
        }
    }

    /// A reversed read that starts with a part of a block gets the entries
    /// a backward scan of the whole block gives it: from the last below its
    /// bound (or the block's end) back to the first of their row and one
    /// more, or as many as the cap allows.
    #[test]
    fn a_part_before_a_bound_holds_what_a_reversed_read_would_scan_first() {
        for (entries, targets) in blocks_and_targets() {
            let raw = encode(&entries);
            let bounds = targets.iter().flat_map(|t| [Some((t, true)), Some((t, false))]).chain([None]);
            for bound in bounds {
                for cap in [1, 3, 128] {
                    let at = match bound {
                        Some((t, inclusive)) => {
                            entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t })
                        }
                        None => None,
                    }
                    .unwrap_or(entries.len());
                    let row_start = match at {
                        0 => 0,
                        _ => entries[..at]
                            .iter()
                            .rposition(|e| e.key.row != entries[at - 1].key.row)
                            .map_or(0, |i| i + 1),
                    };
                    let first = row_start.saturating_sub(1).max(at.saturating_sub(cap));
                    let part = BlockPart::decode_before(&raw, bound, cap).unwrap();
                    let what = format!("{bound:?} cap {cap}");
                    assert_eq!((part.first, part.total), (first, entries.len()), "{what}");
                    let got: Vec<Entry> = part.block.entries().collect();
                    assert_eq!(got, entries[first..at], "{what}");
                    for (i, e) in got.iter().enumerate() {
                        assert_eq!(part.block.seek(&e.key, true), i, "{what}");
                    }
                }
            }
        }
    }

    /// A read of one row that decodes only a part of a block gets the
    /// entries a scan of the whole block gives it: from the first at or
    /// past the target, through the row's last in the block and the entry
    /// after it, or as many as the cap allows; and the part seeks, and
    /// answers for its keys, as the whole block would.
    #[test]
    fn a_part_holds_what_a_read_of_its_row_would_scan() {
        for (entries, targets) in blocks_and_targets() {
            let raw = encode(&entries);
            for t in &targets {
                for (inclusive, cap) in [(true, 1), (true, 3), (false, 3), (true, 128), (false, 128)] {
                    let scan = entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t });
                    let first = scan.unwrap_or(entries.len());
                    let row_ends = entries[first..].iter().position(|e| e.key.row != t.row).map(|i| first + i);
                    // One past the row's last entry (the next row's first
                    // if the block lacks the row), as far as the cap allows.
                    let end = row_ends.map_or(entries.len(), |past| past + 1).min(first + cap).min(entries.len());
                    let part = BlockPart::decode(&raw, t, inclusive, cap).unwrap();
                    let got: Vec<Entry> = part.block.entries().collect();
                    let what = format!("{t:?} inclusive {inclusive} cap {cap}");
                    assert_eq!((part.first, part.total), (first, entries.len()), "{what}");
                    assert_eq!(got, entries[first..end], "{what}");
                    assert_eq!(part.block.seek(t, inclusive), 0, "{what}");
                    for (i, e) in got.iter().enumerate() {
                        assert_eq!(part.block.cmp_key(i, &e.key), Ordering::Equal, "{what}");
                        assert_eq!(part.block.seek(&e.key, true), i, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn entries_survive_encoding_exactly() {
        let mut entries = vec![
            Entry::delete_family("a".into(), 9),
            Entry::delete_column("a".into(), "".into(), (0, Some(5000)), 8),
            Entry::put("a".into(), "".into(), 3000, 7, "".into()),
            Entry::put("a".into(), "x".into(), 2_000_000, 6, "v1".into()),
            Entry::put("a".into(), "x".into(), 1_000_000, 5, "v0".into()),
            Entry::put("ab".into(), "\0\u{ff}".into(), -5, 4, vec![0u8, 255].into()),
            Entry::put("b".into(), "x".into(), i64::MAX, u64::MAX >> 1, "w".into()),
        ];
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(round_trip(&entries), entries);
    }

    #[test]
    fn every_field_width_round_trips() {
        // 300 rows and qualifiers (16-bit ids), a 70 000-byte value (32-bit
        // value offsets), timestamps from i64::MIN to i64::MAX and sequence
        // numbers up to 2^63 - 1 (64-bit offsets), every kind.
        let mut entries = vec![Entry::put("a".into(), "big".into(), 7, 1, vec![7u8; 70_000].into())];
        for i in 0..300i64 {
            let (row, qualifier) = (format!("r{i:03}"), format!("q{i:03}"));
            entries.push(Entry::put(row.clone().into(), qualifier.clone().into(), i64::MIN + i, 2, "v".into()));
            entries.push(Entry::put(
                row.clone().into(),
                qualifier.into(),
                i64::MAX - i,
                (u64::MAX >> 1) - 3,
                "".into(),
            ));
            entries.push(Entry::delete_family(row.into(), 4));
        }
        entries.push(Entry::delete_column("z".into(), "q".into(), (-10, Some(10)), 5));
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(round_trip(&entries), entries);
    }

    #[test]
    fn a_block_of_no_entries_decodes_empty() {
        // flags, 0 entries, 0 rows, 0 qualifiers: nothing else.
        let block = DecodedBlock::decode(&[0, 0, 0, 0]).unwrap();
        assert!(block.is_empty());
        assert!(block.entry(0).is_none());
    }

    #[test]
    fn a_wide_row_of_small_measurements_costs_the_cache_little() {
        // A compacted wide row: one row, one column, minutes, sequence 0.
        let entries: Vec<Entry> = (0..1800i64)
            .map(|m| {
                let value = (700 + m % 50).to_string();
                Entry::put("balloon#week".into(), "altitude".into(), (10_000 - m) * 60_000_000, 0, value.into())
            })
            .collect();
        let raw = encode(&entries);
        let block = DecodedBlock::decode(&raw).unwrap();
        assert_eq!(block.entries().collect::<Vec<_>>(), entries);
        // The 3-byte values alone: row, qualifier, kind, sequence, the
        // timestamps (a minute apart, newest first) and the values'
        // lengths and offsets (a stride) cost nothing. Timestamps cost 2
        // bytes an entry before they were seen to step evenly; a fixed
        // 40-byte slot per entry beside the kept encoded block cost 50.
        assert!(block.memory_bytes() <= 3 * entries.len() + 512, "{} bytes", block.memory_bytes());
    }

    #[test]
    fn exact_division_agrees_with_the_operators() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let divisors = [1u64, 2, 3, 7, 60, 1000, 60_000, 60_000_000, 1 << 40, 3 << 61, u64::MAX - 1, u64::MAX];
        for d in divisors {
            let divisor = Divisor::new(d);
            for _ in 0..2000 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let multiples = [Some(seed / d * d), (seed % 4096).checked_mul(d)];
                for x in [Some(seed), Some(seed | 1), Some(seed >> 7)].into_iter().chain(multiples).flatten() {
                    assert_eq!(divisor.divides(x), x % d == 0, "{x} by {d}");
                    if x % d == 0 {
                        assert_eq!(divisor.quotient(x), x / d, "{x} by {d}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_stride_is_every_offset_its_index_times_the_first_step() {
        assert_eq!(stride([0, 14, 28, 42].into_iter()), Some(14));
        assert_eq!(stride([0, 1].into_iter()), Some(1));
        assert_eq!(stride([0, 14, 28, 43].into_iter()), None);
        assert_eq!(stride([1, 2, 3].into_iter()), None);
        assert_eq!(stride([0, 0, 0].into_iter()), None);
        assert_eq!(stride([0].into_iter()), None);
        // A step whose multiples pass u64::MAX is no stride.
        assert_eq!(stride([0, 1 << 63, 0].into_iter()), None);
    }

    #[test]
    fn evenly_stepping_columns_round_trip_at_every_step_and_sign() {
        let put = |row: String, t: i64, seq: u64| Entry::put(row.into(), "q".into(), t, seq, "v".into());
        for step in [1i64, 7, 1000, 60_000_000, i64::MAX / 4] {
            for seq_step in [0u64, 1, 5] {
                for n in [1i64, 2, 3, 500].into_iter().filter(|&n| step.checked_mul(n + 1).is_some()) {
                    // One column, newest first: the timestamps count down.
                    let column: Vec<Entry> =
                        (0..n).map(|i| put("r".into(), -step * i + 17_000, 3 + i.cast_unsigned() * seq_step)).collect();
                    assert_eq!(round_trip(&column), column, "step {step}, seq step {seq_step}, n {n}");
                    // A row each: the timestamps count up.
                    let rows: Vec<Entry> = (0..n)
                        .map(|i| put(format!("r{i:04}"), step * i - 40_000, 9_000 - i.cast_unsigned() * seq_step))
                        .collect();
                    assert_eq!(round_trip(&rows), rows, "step {step}, seq step {seq_step}, n {n}");
                }
            }
        }
        // Several columns a row, one timestamp and one sequence number for
        // all: constant fields, however many qualifiers; then the same with
        // one entry apart, taken the general way.
        let cell = |r: i64, q: &str, t: i64, seq: u64| {
            Entry::put(format!("r{r:04}").into(), q.as_bytes().to_vec().into(), t, seq, "v".into())
        };
        let mut same: Vec<Entry> = (0..300).flat_map(|r| ["a", "b", "c"].map(|q| cell(r, q, 5_000, 7))).collect();
        assert_eq!(round_trip(&same), same);
        same[400] = cell(133, "b", 4_000, 9);
        assert_eq!(round_trip(&same), same);
        // A step that would overflow i64 by the last entry is taken the
        // general way, whose wrapping deltas give the entries back.
        let far = [put("a".into(), i64::MAX, 0), put("b".into(), i64::MIN, 0), put("c".into(), i64::MIN + 1, 0)];
        assert_eq!(round_trip(&far), far);
    }

    #[test]
    fn timestamps_of_a_common_unit_and_without_one_round_trip() {
        let at = |row: &str, t: i64| Entry::put(row.to_owned().into(), "q".into(), t, 0, "v".into());
        // Minutes in microseconds (a unit of 60 000 000), around zero.
        let minutes: Vec<Entry> = (-5..300i64).rev().map(|m| at(&format!("r{m:+05}"), m * 60_000_000)).collect();
        let mut sorted = minutes.clone();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(round_trip(&sorted), sorted);
        // A unit of 7 microseconds, then one timestamp that breaks it.
        let mut sevens: Vec<Entry> = (0..100i64).map(|i| at("r", i * 7 - 350)).collect();
        sevens.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(round_trip(&sevens), sevens);
        sevens.push(at("s", 3));
        assert_eq!(round_trip(&sevens), sevens);
        // Two timestamps far apart: a unit as large as their distance.
        let ends = vec![at("a", i64::MAX), at("b", i64::MIN)];
        assert_eq!(round_trip(&ends), ends);
    }

    #[test]
    fn single_timestamp_rows_cost_the_cache_what_their_keys_do_not_share_and_their_values() {
        // A compacted single-timestamp table: a row per minute, one
        // 14-byte blob each, sequence 0.
        let entries: Vec<Entry> = (0..304i64)
            .map(|m| {
                let row = format!("asia-south2#1001#2021-03-01-{m:04}");
                Entry::put(row.into(), "blob".into(), m * 60_000_000, 0, vec![7u8; 14].into())
            })
            .collect();
        let block = DecodedBlock::decode(&encode(&entries)).unwrap();
        let decoded: Vec<Entry> = block.entries().collect();
        assert_eq!(decoded, entries);
        // The keys share their first 29 bytes, kept once. Each entry: the
        // 3 bytes of its key after them and its 14 bytes of value; the
        // rests are all 3 bytes long, so where each ends is not kept; rows,
        // value offsets and timestamps (a minute apart) step evenly and
        // cost nothing (they cost 2 bytes each, and the timestamp 4, then
        // 2 in minutes). Whole keys cost 29 more bytes an entry, a list of
        // their ends 4.
        let per_entry = 3 + 14;
        assert!(block.memory_bytes() <= 29 + per_entry * entries.len() + 512, "{} bytes", block.memory_bytes());
    }

    /// The worked example of `docs/format/sstable.md`, byte for byte.
    #[test]
    fn worked_example_of_the_format_doc() {
        let entries = [
            Entry::put("r1".into(), "a".into(), 2000, 5, "x".into()),
            Entry::put("r1".into(), "a".into(), 1000, 3, "y".into()),
            Entry::put("r2".into(), "b".into(), 1000, 4, "zz".into()),
        ];
        let raw = encode(&entries);
        let expected: Vec<u8> = vec![
            0x03, 0x03, 0x02, 0x02, // flags (ms, packed streams), entries, rows, qualifiers
            0x00, 0x02, b'r', b'1', 0x02, // row "r1": shares 0, suffix "r1", 2 entries
            0x01, 0x01, b'2', 0x01, // row "r2": shares 1, suffix "2", 1 entry
            0x01, b'a', 0x01, b'b', // qualifier dictionary
            0x01, 0x00, // kinds: one value, put
            0x00, 0x00, 0x00, 0x01, // qualifier ids as varints
            0x04, 0x00, 0x01, 0x01, // timestamps/1000, zigzag deltas: heads 2 (a's) and 1-1 (b's), then 1-2
            0x0a, 0x02, 0x01, 0x03, // sequences, zigzag deltas: heads 5 and 4-3, then 3-5
            0x00, 0x01, 0x01, 0x02, // value lengths as varints
            b'x', b'y', b'z', b'z', // values, grouped by qualifier
        ];
        assert_eq!(raw, expected);
        let decoded: Vec<Entry> = DecodedBlock::decode(&raw).unwrap().entries().collect();
        assert_eq!(decoded, entries);
        // The same block as written before packed streams: still read.
        let unpacked: Vec<u8> = vec![
            0x01, 0x03, 0x02, 0x02, 0x00, 0x02, b'r', b'1', 0x02, 0x01, 0x01, b'2', 0x01, 0x01, b'a', 0x01, b'b', 0x00,
            0x00, 0x00, // kinds as bytes
            0x00, 0x00, 0x01, 0x04, 0x01, 0x00, 0x0a, 0x03, 0x02, 0x01, 0x01, 0x02, // the rest as varints
            b'x', b'y', b'z', b'z',
        ];
        let decoded: Vec<Entry> = DecodedBlock::decode(&unpacked).unwrap().entries().collect();
        assert_eq!(decoded, entries);
    }

    #[test]
    fn qualifier_ids_out_of_first_appearance_order_are_an_error() {
        // The worked example's block, its qualifier ids (bytes 20..23, after
        // the tag at 19) changed.
        let block = |ids: [u8; 3]| {
            let mut raw = encode(&[
                Entry::put("r1".into(), "a".into(), 2000, 5, "x".into()),
                Entry::put("r1".into(), "a".into(), 1000, 3, "y".into()),
                Entry::put("r2".into(), "b".into(), 1000, 4, "zz".into()),
            ]);
            assert_eq!(raw[19..23], [0, 0, 0, 1]);
            raw[20..23].copy_from_slice(&ids);
            DecodedBlock::decode(&raw)
        };
        assert!(block([0, 0, 1]).is_ok());
        // `b` before `a`, and `b` never: both are refused where the ids are.
        for ids in [[1, 0, 0], [0, 0, 0]] {
            let err = block(ids).unwrap_err();
            assert!(err.what.starts_with("qualifier id"), "{ids:?}: {}", err.what);
            assert!((19..23).contains(&err.offset), "{ids:?}: at {}", err.offset);
        }
    }

    /// The doc's column of minutes: kinds, qualifier ids, sequences and
    /// timestamp deltas one value each, value lengths one byte each.
    #[test]
    fn a_column_of_minutes_packs_its_streams() {
        let entries: Vec<Entry> = (0..1817i64)
            .map(|m| {
                let value = if m % 3 == 0 { "1013" } else { "951" };
                Entry::put("asia#1001#week09".into(), "altitude".into(), (10_000 - m) * 60_000_000, 0, value.into())
            })
            .collect();
        let raw = encode(&entries);
        let dictionary = [&[0x08][..], b"altitude"].concat();
        let at = raw.windows(dictionary.len()).position(|w| w == dictionary).unwrap() + dictionary.len();
        // Kinds, qualifier ids: one value, 0. Timestamps: the head, the
        // first delta, from 0; then one value, zigzag(−60,000). Sequences:
        // a head of 0, then one value, 0. Value lengths: 1-byte offsets from 3.
        let mut streams = vec![0x01, 0x00, 0x01, 0x00];
        crate::coding::put_zigzag(&mut streams, 10_000 * 60_000);
        streams.extend_from_slice(&[0x01, 0xbf, 0xa9, 0x07, 0x00, 0x01, 0x00, 0x02, 0x03]);
        assert_eq!(raw[at..at + streams.len()], streams);
        let lengths = &raw[at + streams.len()..at + streams.len() + entries.len()];
        assert!(lengths.iter().all(|&b| b <= 1));
        let decoded: Vec<Entry> = DecodedBlock::decode(&raw).unwrap().entries().collect();
        assert_eq!(decoded, entries);
    }

    /// A column of empty values at regular times packs to a few bytes
    /// however many entries it holds: the count is bounded by a constant,
    /// not by the block's length, and a count past it is refused.
    #[test]
    fn more_entries_than_bytes_decode_and_too_many_are_refused() {
        let entries: Vec<Entry> = (0..5000i64)
            .map(|m| Entry::put("heartbeat".into(), "up".into(), (9000 - m) * 1000, 0, "".into()))
            .collect();
        let raw = encode(&entries);
        assert!(raw.len() < 100, "{} bytes", raw.len());
        assert_eq!(round_trip(&entries), entries);
        let mut huge = vec![FLAG_MILLIS | FLAG_PACKED_STREAMS];
        crate::coding::put_varint(&mut huge, MAX_BLOCK_ENTRIES as u64 + 1);
        huge.extend_from_slice(&raw[4..]);
        let err = DecodedBlock::decode(&huge).unwrap_err();
        assert_eq!((err.offset, err.what.as_ref()), (1, "entry count"));
    }

    /// Streams whose ranges need one, two and four bytes, or more (then
    /// varints), with tombstones among the kinds, decode to what was written.
    #[test]
    fn every_stream_encoding_round_trips() {
        for spread in [1u64, 200, 60_000, 3_000_000_000, u64::MAX >> 2] {
            let mut entries = Vec::new();
            for i in 0..300u64 {
                let ts = 5_000_000i64 + (i.wrapping_mul(7919) % spread.max(2)).cast_signed() * 1000;
                let value = vec![b'v'; (i % 4) as usize + if spread > 1000 { 300 } else { 0 }];
                entries.push(Entry::put(
                    format!("r{:03}", i / 3).into(),
                    format!("q{}", i % 3).into(),
                    ts,
                    i,
                    value.into(),
                ));
                if i % 50 == 0 {
                    entries.push(Entry::delete_column(
                        format!("r{:03}", i / 3).into(),
                        format!("q{}", i % 3).into(),
                        (0, Some(10)),
                        i + 1,
                    ));
                }
            }
            entries.sort_by(|a, b| a.key.cmp(&b.key));
            entries.dedup_by(|a, b| a.key == b.key);
            assert_eq!(round_trip(&entries), entries, "spread {spread}");
        }
    }

    #[test]
    fn truncated_or_garbled_blocks_are_errors_not_panics() {
        let entries: Vec<Entry> = (0..50u64)
            .map(|i| {
                let ts = 1000 * i.cast_signed();
                Entry::put(format!("row{:03}", i / 4).into(), format!("q{}", i % 4).into(), ts, i, "val".into())
            })
            .collect();
        let raw = encode(&entries);
        // Reads of one row decode parts: of a row at the start, in the
        // middle, at the end, and of one the block lacks.
        let targets: Vec<InternalKey> =
            ["row000", "row006", "row012", "row0065"].map(|r| InternalKey::first_of_row(r.into())).into();
        for cut in 0..raw.len() {
            assert!(DecodedBlock::decode(&raw[..cut]).is_err());
            for t in &targets {
                assert!(BlockPart::decode(&raw[..cut], t, true, 8).is_err(), "{t:?} cut at {cut}");
                assert!(BlockPart::decode_before(&raw[..cut], Some((t, true)), 8).is_err(), "{t:?} cut at {cut}");
            }
            assert!(BlockPart::decode_before(&raw[..cut], None, 8).is_err(), "cut at {cut}");
        }
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0xa5;
            let _ = DecodedBlock::decode(&bad);
            for t in &targets {
                let _ = BlockPart::decode(&bad, t, true, 8);
                let _ = BlockPart::decode_before(&bad, Some((t, false)), 8);
            }
            let _ = BlockPart::decode_before(&bad, None, 8);
        }
    }
}
