//! The part of a data block that a read of one row (or a reversed read's
//! first row) needs, decoded on its own.
//!
//! A read of one row whose block is not cached would decode the whole
//! block, a thousand entries or more, to return a few; and with the cache
//! full, caching it pushes out a block that may be read again. Instead the
//! block is walked once without being built: its row records to find the
//! row, its per-entry streams only as far as the entries read, its value
//! lengths to find where their values lie. Only those entries are built,
//! into a [`DecodedBlock`] of their own, which is not cached.
//!
//! The walk checks what it reads as [`DecodedBlock::decode`] does (the
//! row records, the qualifier ids, the value lengths, that the block ends
//! where its values do); of the entries' own fields, it checks those it
//! compares or returns.

use std::ops::Range;

use super::decode::{DecodedBlock, RowEnds, SCRATCH, Scratch};
use super::ints::{Field, SIGN, min_max};
use super::layout::{
    Deltas, Header, RowRecord, StreamAt, read_dictionary, read_qualifier_ids, read_stream_unless_same,
    read_value_streams, value_starts,
};
use super::search::{cmp_in_row, partition_point};
use crate::coding::{Cursor, DecodeError, unzigzag};
use crate::key::{EntryKind, InternalKey, is_range_end};

/// Entries `first..first + block.len()` of a data block of `total`
/// entries, decoded on their own ([`BlockPart::decode`]).
#[derive(Debug)]
pub(crate) struct BlockPart {
    pub(crate) block: DecodedBlock,
    pub(crate) first: usize,
    pub(crate) total: usize,
}

impl BlockPart {
    /// The part of the raw block `raw` that a forward read of `target`'s
    /// row from `target` reads: from the first entry not below `target`
    /// (`inclusive`) or above it, to the end of the row in the block and
    /// one entry more (the next row's first, which tells the read the row
    /// has ended), at most `cap` entries (at least one). If the block does
    /// not hold the row, the first entry of the next row in it, if any.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset in `raw` of the first byte the walk
    /// reads that does not decode, or of the stream holding a value out of
    /// range.
    pub(crate) fn decode(
        raw: &[u8],
        target: &InternalKey,
        inclusive: bool,
        cap: usize,
    ) -> Result<BlockPart, DecodeError> {
        BlockPart::decode_with(raw, Some((target, inclusive)), Direction::Forward, cap)
    }

    /// The part of the raw block `raw` that a reversed read reads first,
    /// from below `bound` (from the block's end if `None`): the entries
    /// before the first entry not below the bound's key (if `inclusive`)
    /// or above it, back to the first of the last row among them and one
    /// entry more (the last of the row before, which tells the read the
    /// row has ended), at most `cap` entries (at least one).
    ///
    /// # Errors
    /// As [`BlockPart::decode`].
    pub(crate) fn decode_before(
        raw: &[u8],
        bound: Option<(&InternalKey, bool)>,
        cap: usize,
    ) -> Result<BlockPart, DecodeError> {
        BlockPart::decode_with(raw, bound, Direction::Backward, cap)
    }

    fn decode_with(
        raw: &[u8],
        target: Option<(&InternalKey, bool)>,
        direction: Direction,
        cap: usize,
    ) -> Result<BlockPart, DecodeError> {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let part = decode_part(raw, target, (direction, cap.max(1)), &mut scratch);
            scratch.release_if_large();
            part
        })
    }
}

/// Which way a read that wants a part goes from its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// [`BlockPart::decode_with`], with the thread's working buffers.
fn decode_part(
    raw: &[u8],
    target: Option<(&InternalKey, bool)>,
    (direction, cap): (Direction, usize),
    s: &mut Scratch,
) -> Result<BlockPart, DecodeError> {
    let Scratch { ints, kinds, heads, rest, starts, seqs, lens, qualifiers, prev, built, window_keys: keys, .. } = s;
    let (walk, rows) = Walk::of(
        raw,
        target.map(|(key, _)| &key.row[..]),
        keys,
        (kinds, qualifiers, starts, ints, seqs, lens),
        (&mut *heads, &mut *rest, prev),
    )?;
    // The first entry not below the target (above it, if not inclusive).
    let at = match (target, rows.found()) {
        (Some((key, inclusive)), Some(row)) if rows.is_target => {
            // Wrapping arithmetic: an entry out of range errs only if built.
            partition_point(row.start, row.start + row.run, |i| {
                let ord = cmp_in_row(walk.kind(i), walk.qualifier(i), || walk.timestamp(i), walk.seq(i), key);
                if inclusive { ord.is_lt() } else { ord.is_le() }
            })
        }
        (_, Some(row)) => row.start,
        (_, None) => walk.n,
    };
    let part = match direction {
        Direction::Forward => at..rows.needed_end(walk.n).min(at.saturating_add(cap)).max(at),
        Direction::Backward => rows.start_before(at).max(at.saturating_sub(cap))..at,
    };
    walk.check_entries(part.clone())?;
    value_starts((walk.qids, walk.lens), heads, part.clone(), rest);
    walk.check_kinds(part.clone(), rest)?;
    let value_bytes = part.clone().map(|i| walk.lens[i]).sum::<u64>();
    let mut values = Vec::with_capacity(usize::try_from(value_bytes).unwrap_or(0));
    for i in part.clone() {
        values.extend_from_slice(walk.value(i, rest[i - part.start]));
    }
    let (row_bytes, row_prefix, row_ends, row_of) = part_rows(&rows.spans(part.clone()), keys, built);
    let (qualifier_bytes, qualifier_ends, qualifier_of) =
        part_qualifiers(part.clone(), |i| walk.qualifier(i), (walk.qids, walk.quals), (heads, built));
    let timestamps = walk.timestamps.even_field(part.clone()).unwrap_or_else(|| {
        let (min, max) = min_max(each(built, part.clone(), |i| walk.timestamps.get(i)));
        Field::pack_in_units(built, min, max)
    });
    let seqs = (walk.sequences.even_field(part.clone()))
        .unwrap_or_else(|| Field::pack(each(built, part.clone(), |i| walk.sequences.get(i))));
    let kinds = match walk.same_kind {
        Some(kind) => Field::same(kind),
        None => Field::pack(each(built, part.clone(), |i| walk.kind(i))),
    };
    let mut offset = 0;
    let value_starts = Field::pack(each(built, part.clone(), |i| {
        offset += walk.lens[i];
        offset - walk.lens[i]
    }));
    let block = DecodedBlock {
        len: part.len(),
        row_bytes,
        row_prefix,
        row_ends,
        row_of,
        qualifier_bytes,
        qualifier_ends,
        qualifier_of,
        kinds,
        timestamps,
        scale: walk.scale,
        seqs,
        value_starts,
        values: values.into(),
        value_lens: Field::pack(each(built, part.clone(), |i| walk.lens[i])),
    };
    Ok(BlockPart { block, first: part.start, total: walk.n })
}

/// A block walked through without being built: where its parts are, and
/// each entry's fields as far as a part needs them.
struct Walk<'a> {
    raw: &'a [u8],
    n: usize,
    quals: usize,
    scale: i64,
    /// Each entry's kind tag, unless every entry's is `same_kind`.
    kinds: &'a [u64],
    same_kind: Option<u64>,
    /// Where the stream of kinds starts, for errors.
    kinds_at: StreamAt,
    /// Where each dictionary qualifier lies in `raw`.
    qualifiers: &'a [(u32, u32)],
    qids: &'a [u64],
    timestamps: Values<'a>,
    /// Where the timestamps and sequence numbers start, for errors.
    timestamps_at: usize,
    sequences: Values<'a>,
    seqs_at: usize,
    lens: &'a [u64],
    /// Where the values start in `raw`.
    values_at: usize,
}

/// A walk's buffers for the streams it keeps: kinds, qualifiers, qualifier
/// ids, timestamps, sequence numbers, value lengths.
type WalkBuffers<'a> =
    (&'a mut Vec<u64>, &'a mut Vec<(u32, u32)>, &'a mut Vec<u64>, &'a mut Vec<u64>, &'a mut Vec<u64>, &'a mut Vec<u64>);

impl<'a> Walk<'a> {
    /// Walks the raw block `raw`, finding the first row not below `row`
    /// (none if `None`) and the rows around it ([`find_row`], whose keys
    /// go to `keys`); undoes the deltas of the entries up to that row's
    /// end and one more (of them all, if there is no such row). `work`
    /// holds working buffers.
    #[allow(clippy::cast_possible_truncation, reason = "offsets and counts within a block checked to be under 4 GiB")]
    fn of(
        raw: &'a [u8],
        row: Option<&[u8]>,
        keys: &mut [Vec<u8>; 4],
        (kinds, qualifiers, qids, timestamps, seqs, lens): WalkBuffers<'a>,
        work: (&mut Vec<u64>, &mut Vec<u64>, &mut Vec<i64>),
    ) -> Result<(Walk<'a>, RowWindow), DecodeError> {
        let (mut c, Header { scale, packed, n, row_count, qual_count: quals }) = Header::read(raw)?;
        let rows = find_row(&mut c, (row_count, n), row, keys)?;
        qualifiers.clear();
        read_dictionary(&mut c, quals, n, |qualifier, end| {
            qualifiers.push(((end - qualifier.len()) as u32, end as u32));
        })?;
        let (kinds_at, same_kind) = read_stream_unless_same(&mut c, n, packed.then_some("kinds"), "kinds", kinds)?;
        let qids = read_qualifier_ids(&mut c, n, quals, packed, qids)?;
        let end = rows.needed_end(n);
        let (heads, spill, prev) = work;
        let (timestamps_at, timestamps) =
            read_values(&mut c, (qids, quals), packed, ("timestamp", end), (heads, spill, prev), timestamps)?;
        let (seqs_at, sequences) =
            read_values(&mut c, (qids, quals), packed, ("sequence", end), (heads, spill, prev), seqs)?;
        let (values_at, _) = read_value_streams(&mut c, (qids, quals), packed, lens, heads)?;
        let walk = Walk {
            raw,
            n,
            quals,
            scale,
            kinds,
            same_kind,
            kinds_at,
            qualifiers,
            qids,
            timestamps,
            timestamps_at,
            sequences,
            seqs_at,
            lens,
            values_at,
        };
        Ok((walk, rows))
    }

    /// Checks the timestamps and sequence numbers of entries `range`
    /// (among those undone): in range once scaled, and not negative.
    fn check_entries(&self, range: Range<usize>) -> Result<(), DecodeError> {
        let c = Cursor::new(self.raw);
        for i in range {
            if (self.timestamps.get(i) ^ SIGN).cast_signed().checked_mul(self.scale).is_none() {
                return Err(c.error_at(self.timestamps_at, "timestamp out of range"));
            }
            if self.sequences.get(i) < SIGN {
                return Err(c.error_at(self.seqs_at, "negative sequence number"));
            }
        }
        Ok(())
    }

    /// Entry `i`'s kind tag.
    fn kind(&self, i: usize) -> u64 {
        self.same_kind.unwrap_or_else(|| self.kinds[i])
    }

    /// Entry `i`'s qualifier.
    #[allow(clippy::cast_possible_truncation, reason = "qualifier ids were checked to be below the count")]
    fn qualifier(&self, i: usize) -> &'a [u8] {
        let (start, end) = self.qualifiers[self.qids[i] as usize];
        &self.raw[start as usize..end as usize]
    }

    /// Entry `i`'s timestamp (`i` among the entries undone).
    fn timestamp(&self, i: usize) -> i64 {
        (self.timestamps.get(i) ^ SIGN).cast_signed().wrapping_mul(self.scale)
    }

    /// Entry `i`'s sequence number (`i` among the entries undone).
    fn seq(&self, i: usize) -> u64 {
        self.sequences.get(i) ^ SIGN
    }

    /// Entry `i`'s value, which starts `start` bytes into the values.
    #[allow(clippy::cast_possible_truncation, reason = "lengths within the block checked to be under 4 GiB")]
    fn value(&self, i: usize, start: u64) -> &'a [u8] {
        let start = self.values_at + start as usize;
        &self.raw[start..start + self.lens[i] as usize]
    }

    /// Checks the kinds of entries `range`, whose values start at `starts`:
    /// each a kind, and a column tombstone's value a range end.
    fn check_kinds(&self, range: Range<usize>, starts: &[u64]) -> Result<(), DecodeError> {
        let c = Cursor::new(self.raw);
        for (i, &start) in range.zip(starts) {
            let at = || c.error_at(self.kinds_at.offset_of(&c, i), "entry kind");
            let kind = u8::try_from(self.kind(i)).ok().and_then(EntryKind::from_tag).ok_or_else(at)?;
            if kind == EntryKind::DeleteColumn && !is_range_end(self.value(i, start)) {
                return Err(c.error_at(self.kinds_at.offset_of(&c, i), "column tombstone's range end"));
            }
        }
        Ok(())
    }
}

/// `f` of each index of `range`, in `buf`.
fn each(buf: &mut Vec<u64>, range: Range<usize>, f: impl FnMut(usize) -> u64) -> &[u64] {
    buf.clear();
    buf.extend(range.map(f));
    buf
}

/// A row of a block: its first entry and its number of entries.
#[derive(Debug, Clone, Copy, Default)]
struct RowAt {
    start: usize,
    run: usize,
}

/// The places in a [`RowWindow`] of the two rows before the row found,
/// of it, and of the row after; its keys are left in the same order.
const BEFORE: usize = 1;
const FOUND: usize = 2;
const AFTER: usize = 3;

/// The rows around the first row not below a target, found by
/// [`find_row`] (see [`FOUND`]): each `None` where the block has none.
struct RowWindow {
    rows: [Option<RowAt>; 4],
    /// Whether the row found is the target's.
    is_target: bool,
}

impl RowWindow {
    fn found(&self) -> Option<RowAt> {
        self.rows[FOUND]
    }

    /// One past the last entry whose fields a part may compare or build:
    /// past the target row and the next row's first; past the first of
    /// the row above; or every entry, if no row is above the target.
    fn needed_end(&self, n: usize) -> usize {
        match self.found() {
            Some(row) if self.is_target => (row.start + row.run + 1).min(n),
            Some(row) => (row.start + 1).min(n),
            None => n,
        }
    }

    /// Where a reversed read from just before entry `at` (the first entry
    /// at or past its bound, inside the found row or at its start) has
    /// read the last row before `at` and one entry more: the first entry
    /// of that row, less one unless it is the block's first.
    fn start_before(&self, at: usize) -> usize {
        let last = match self.found() {
            Some(row) if at > row.start => row,
            _ => self.rows[BEFORE].unwrap_or_default(),
        };
        last.start.saturating_sub(1)
    }

    /// The rows of entries `range` (within the window), in order, each as
    /// its place in the window and its number of entries in the range.
    fn spans(&self, range: Range<usize>) -> Vec<(usize, usize)> {
        self.rows
            .iter()
            .enumerate()
            .filter_map(|(place, row)| {
                let row = (*row)?;
                let overlap = range.end.min(row.start + row.run).saturating_sub(range.start.max(row.start));
                (overlap > 0).then_some((place, overlap))
            })
            .collect()
    }
}

/// Walks the block's `count` row records (of `entries` entries in all),
/// finding the first row whose key is not below `target` (none if
/// `None`): the rows of a [`RowWindow`] around it, their keys left in
/// `keys` in the window's order.
fn find_row(
    c: &mut Cursor<'_>,
    (count, entries): (usize, usize),
    target: Option<&[u8]>,
    keys: &mut [Vec<u8>; 4],
) -> Result<RowWindow, DecodeError> {
    // Until the row is found, row `j`'s key is built in `keys[j % 3]`
    // from the row before's, and its place kept in `ring[j % 3]`.
    let mut ring = [RowAt::default(); 3];
    let (mut covered, mut prev_len) = (0, 0);
    let mut found: Option<(usize, bool)> = None;
    let mut after = None;
    // Bytes the row before, below the target, shares with it.
    let mut matched = 0;
    for j in 0..count {
        let RowRecord { shared, suffix, run, .. } = RowRecord::read(c, prev_len, entries - covered)?;
        prev_len = shared + suffix.len();
        match found {
            None => {
                build_key(keys, ((j + 2) % 3, j % 3), shared, suffix);
                ring[j % 3] = RowAt { start: covered, run };
                let key = &keys[j % 3];
                // A row that shares more with the row before than it
                // shares with the target is below the target too: only a
                // row sharing no more is compared, and from where it parts
                // from the row before, not from its first byte.
                if let Some(target) = target
                    && shared <= matched
                {
                    let common = shared + common_prefix(&key[shared..], &target[shared..]);
                    let order = match (key.get(common), target.get(common)) {
                        (Some(a), Some(b)) => a.cmp(b),
                        (a, b) => a.is_some().cmp(&b.is_some()),
                    };
                    if order.is_ge() {
                        found = Some((j, order.is_eq()));
                    }
                    matched = common;
                }
            }
            Some((f, _)) if j == f + 1 => {
                build_key(keys, (f % 3, AFTER), shared, suffix);
                after = Some(RowAt { start: covered, run });
            }
            Some(_) => {}
        }
        covered += run;
    }
    if covered != entries {
        return Err(c.error("row runs do not add up to the entry count"));
    }
    let (f, is_target) = found.unwrap_or((count, false));
    // Into the window's order: the two rows before the found one, then it.
    ring.rotate_left((f + 1) % 3);
    keys[..3].rotate_left((f + 1) % 3);
    let row = |back: usize| (back <= f && f - back < count).then_some(ring[2 - back]);
    Ok(RowWindow { rows: [row(2), row(1), row(0), after], is_target })
}

/// Builds a key in `keys[to]`: the first `shared` bytes of `keys[from]`
/// (which holds the row before, as long as `shared` allows), then `suffix`.
fn build_key(keys: &mut [Vec<u8>; 4], (from, to): (usize, usize), shared: usize, suffix: &[u8]) {
    let (source, dest) = if from < to {
        let (low, high) = keys.split_at_mut(to);
        (&low[from], &mut high[0])
    } else {
        let (low, high) = keys.split_at_mut(from);
        (&high[0], &mut low[to])
    };
    dest.clear();
    dest.extend_from_slice(&source[..shared.min(source.len())]);
    dest.extend_from_slice(suffix);
}

/// The number of bytes `a` and `b` share at their start.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Per-entry values of a delta stream, as far as a part needs them.
enum Values<'a> {
    /// Stepping evenly, `first`, `first + step`, ... (checked not to
    /// overflow over the block): each value at hand without undoing any
    /// delta.
    Even { first: i64, step: i64 },
    /// Undone one by one, as far as the part needs.
    Spread(&'a [u64]),
}

impl Values<'_> {
    /// Value `i`, order-mapped ([`SIGN`]); `i` within the entries undone.
    #[inline]
    #[allow(clippy::cast_possible_wrap, reason = "a block holds at most 2^23 entries")]
    fn get(&self, i: usize) -> u64 {
        match self {
            Values::Even { first, step } => (first + i as i64 * step).cast_unsigned() ^ SIGN,
            Values::Spread(values) => values[i],
        }
    }

    /// The field of entries `range`, made without a pass over them if the
    /// values step evenly.
    #[allow(clippy::cast_possible_wrap, reason = "a block holds at most 2^23 entries")]
    fn even_field(&self, range: Range<usize>) -> Option<Field> {
        match *self {
            Values::Even { first, .. } if range.is_empty() => Some(Field::same(first.cast_unsigned() ^ SIGN)),
            Values::Even { first, step } => {
                Field::arithmetic(first + range.start as i64 * step, step, range.len()).map(|(field, _, _)| field)
            }
            Values::Spread(_) => None,
        }
    }
}

/// Reads a stream of per-qualifier deltas (as [`read_delta_stream`]) of
/// the entries whose qualifier ids are `qids` (of `quals` qualifiers), and
/// undoes them for the first `end` entries into `out`, unless they step
/// evenly. `heads`, `spill` and `prev` are working buffers. Returns where
/// the stream starts.
///
/// [`read_delta_stream`]: super::layout::read_delta_stream
fn read_values<'o>(
    c: &mut Cursor<'_>,
    (qids, quals): (&[u64], usize),
    packed: bool,
    (what, end): (&'static str, usize),
    (heads, spill, prev): (&mut Vec<u64>, &mut Vec<u64>, &mut Vec<i64>),
    out: &'o mut Vec<u64>,
) -> Result<(usize, Values<'o>), DecodeError> {
    let start = c.position();
    let n = qids.len();
    heads.clear();
    if packed {
        // Every qualifier of the dictionary has a first entry, in id order.
        for _ in 0..quals.min(n) {
            heads.push(c.varint(what)?);
        }
    }
    let (_, same) = read_stream_unless_same(c, n - heads.len(), packed.then_some(what), what, spill)?;
    if let Some(step) = same {
        if let Some(Deltas::Even { first, step }) = Deltas::even(heads, step)
            && Field::arithmetic(unzigzag(first), unzigzag(step), n).is_some()
        {
            return Ok((start, Values::Even { first: unzigzag(first), step: unzigzag(step) }));
        }
        spill.clear();
        spill.resize(n - heads.len(), step);
    }
    undo(heads, spill, (&qids[..end], quals), prev, out);
    Ok((start, Values::Spread(out)))
}

/// Undoes per-qualifier deltas for the entries whose qualifier ids are
/// `qids`, into `out` (order-mapped): each entry's from the entry before
/// of its qualifier, or, for a qualifier's first, from the entry before.
/// In a packed block a qualifier's first delta is in `heads` and the
/// others in `deltas`; in an older block (`heads` empty) every delta is in
/// `deltas`. The ids are checked ([`read_qualifier_ids`]), so the deltas
/// hold every one asked for.
#[allow(clippy::cast_possible_truncation, reason = "qualifier ids were checked to be below the count")]
fn undo(heads: &[u64], deltas: &[u64], (qids, quals): (&[u64], usize), prev: &mut Vec<i64>, out: &mut Vec<u64>) {
    prev.clear();
    prev.resize(quals, 0);
    out.clear();
    let (mut next_head, mut others, mut last) = (0, deltas.iter(), 0i64);
    for (i, &q) in qids.iter().enumerate() {
        let q = q as usize;
        let base = if q == next_head { last } else { prev[q] };
        let delta = if heads.is_empty() {
            deltas[i]
        } else if q == next_head {
            heads[q]
        } else {
            others.next().copied().unwrap_or(0)
        };
        next_head += usize::from(q == next_head);
        let v = base.wrapping_add(unzigzag(delta));
        (prev[q], last) = (v, v);
        out.push(v.cast_unsigned() ^ SIGN);
    }
}

/// The row keys of a part as a [`DecodedBlock`] keeps them, and each
/// entry's row: `spans` gives the part's rows in order, each as the place
/// of its key in `keys` and its number of entries. `rows` is a working
/// buffer.
#[allow(clippy::cast_possible_truncation, reason = "row keys are at most 4 KiB")]
fn part_rows(spans: &[(usize, usize)], keys: &[Vec<u8>; 4], rows: &mut Vec<u64>) -> (Box<[u8]>, u32, RowEnds, Field) {
    let prefix = match spans {
        [] => 0,
        [(only, _)] => keys[*only].len(),
        [(first, _), others @ ..] => {
            others.iter().map(|(k, _)| common_prefix(&keys[*first], &keys[*k])).min().unwrap_or(0)
        }
    };
    let rests = spans.iter().map(|(k, _)| keys[*k].len() - prefix).sum::<usize>();
    let mut bytes = Vec::with_capacity(prefix + rests);
    if let Some((k, _)) = spans.first() {
        bytes.extend_from_slice(&keys[*k][..prefix]);
    }
    let mut ends = Vec::with_capacity(spans.len());
    for (k, _) in spans {
        bytes.extend_from_slice(&keys[*k][prefix..]);
        ends.push(bytes.len() as u32);
    }
    let row_of = if spans.len() > 1 {
        rows.clear();
        for (r, (_, n)) in spans.iter().enumerate() {
            rows.extend(std::iter::repeat_n(r as u64, *n));
        }
        Field::pack(rows)
    } else {
        Field::same(0)
    };
    (bytes.into(), prefix as u32, RowEnds::of(ends, prefix as u32), row_of)
}

/// The qualifiers of entries `range` as a dictionary of their own, in
/// order of first appearance, and each entry's id in it; the block's ids
/// are `qids`, below `quals`. `ids` and `of` are working buffers.
#[allow(clippy::cast_possible_truncation, reason = "a part holds fewer qualifiers than its block's 4 GiB")]
fn part_qualifiers<'a>(
    range: Range<usize>,
    qualifier: impl Fn(usize) -> &'a [u8],
    (qids, quals): (&[u64], usize),
    (ids, of): (&mut Vec<u64>, &mut Vec<u64>),
) -> (Box<[u8]>, Box<[u32]>, Field) {
    let (mut bytes, mut ends) = (Vec::new(), Vec::new());
    of.clear();
    ids.clear();
    ids.resize(quals, u64::MAX);
    for i in range {
        let id = &mut ids[qids[i] as usize];
        if *id == u64::MAX {
            *id = ends.len() as u64;
            bytes.extend_from_slice(qualifier(i));
            ends.push(bytes.len() as u32);
        }
        of.push(*id);
    }
    let field = if ends.len() > 1 { Field::pack(of) } else { Field::same(0) };
    (bytes.into(), ends.into(), field)
}
