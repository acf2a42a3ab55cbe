//! The compact columnar integers a [`DecodedBlock`](super::DecodedBlock)
//! keeps its per-entry fields in.

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
pub(super) fn stride(mut offsets: impl Iterator<Item = u64>) -> Option<u64> {
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
pub(super) struct Divisor {
    value: u64,
    shift: u32,
    inverse: u64,
    /// The largest quotient: `u64::MAX` divided by the odd part.
    limit: u64,
}

impl Divisor {
    const ONE: Divisor = Divisor { value: 1, shift: 0, inverse: 1, limit: u64::MAX };

    /// `value` must not be 0.
    pub(super) fn new(value: u64) -> Divisor {
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

    pub(super) fn divides(&self, x: u64) -> bool {
        x.trailing_zeros() >= self.shift && (x >> self.shift).wrapping_mul(self.inverse) <= self.limit
    }

    /// `x` divided by the divisor, which divides it.
    pub(super) fn quotient(&self, x: u64) -> u64 {
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
pub(super) struct Field {
    base: u64,
    unit: u64,
    offsets: Ints,
}

impl Field {
    /// Packs `values`.
    pub(super) fn pack(values: &[u64]) -> Field {
        let (min, max) = min_max(values);
        Field::pack_in(values, min, max)
    }

    /// Packs `values`, none below `min` or above `max`.
    pub(super) fn pack_in(values: &[u64], min: u64, max: u64) -> Field {
        Field { base: min, unit: 1, offsets: Ints::pack(values, min, max, &Divisor::ONE) }
    }

    /// Packs `values`, none below `min` or above `max`, in the largest unit
    /// that divides their differences.
    pub(super) fn pack_in_units(values: &[u64], min: u64, max: u64) -> Field {
        if min >= max {
            return Field::pack_in(values, min, max);
        }
        let unit = common_unit(values, min);
        Field { base: min, unit: unit.value, offsets: Ints::pack(values, min, max, &unit) }
    }

    /// The field of `n` entries all equal to `value`.
    pub(super) fn same(value: u64) -> Field {
        Field { base: value, unit: 1, offsets: Ints::Zero }
    }

    /// The `n` signed values `first`, `first + step`, ... order-mapped
    /// ([`SIGN`]), with no per-entry pass, and the smallest and largest;
    /// `None` if there are none or the last overflows. A column of
    /// minutes, or of sequence numbers all 0, decodes so.
    #[allow(clippy::cast_possible_wrap, reason = "a block holds at most 2^23 entries")]
    pub(super) fn arithmetic(first: i64, step: i64, n: usize) -> Option<(Field, u64, u64)> {
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
    pub(super) fn get(&self, i: usize) -> u64 {
        self.base + self.offsets.get(i) * self.unit
    }

    /// Calls `f` with the value of each of `n` entries, in order.
    pub(super) fn for_each(&self, n: usize, mut f: impl FnMut(u64)) {
        self.offsets.for_each(n, |v| f(self.base + v * self.unit));
    }

    /// The value the offsets are from: the smallest.
    pub(super) fn base(&self) -> u64 {
        self.base
    }

    /// Whether every value is `value`.
    pub(super) fn is_all(&self, value: u64) -> bool {
        matches!(self.offsets, Ints::Zero) && self.base == value
    }

    /// Bytes of memory held.
    pub(super) fn memory_bytes(&self) -> usize {
        self.offsets.bytes()
    }
}

/// The smallest and largest of `values` (`(u64::MAX, 0)` if none).
pub(super) fn min_max(values: &[u64]) -> (u64, u64) {
    values.iter().fold((u64::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// Maps an `i64` onto a `u64` of the same order, and back.
pub(super) const SIGN: u64 = 1 << 63;
