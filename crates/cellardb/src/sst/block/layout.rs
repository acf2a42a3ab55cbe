//! The layout of a data block as the decoders read it, written by
//! [`crate::sst::block_builder`]: the flags, stream encodings and bounds
//! the writer shares, the header, the row records, the qualifier
//! dictionary, the per-entry streams, and the values that end the block.

use std::ops::Range;

use super::ints::{Field, SIGN};
use crate::coding::{Cursor, DecodeError, unzigzag};
use crate::key::MAX_ROW_KEY;

/// Block flag: timestamps are stored divided by 1000 (all were whole milliseconds).
pub(in crate::sst) const FLAG_MILLIS: u8 = 1;

/// Block flag: the per-entry streams (kinds included) are each stored in
/// one of the [`Stream`] encodings, named by a tag; the timestamp and
/// sequence streams keep each qualifier's first delta apart, as a varint.
/// Without it (blocks written before the flag existed), kinds are bytes
/// and the other streams varints.
pub(in crate::sst) const FLAG_PACKED_STREAMS: u8 = 2;

/// How the integers of one per-entry stream are stored in a block with
/// [`FLAG_PACKED_STREAMS`]. Written to disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(in crate::sst) enum Stream {
    /// A varint each.
    Varints = 0,
    /// One varint: the value of every one.
    Same = 1,
    /// A varint base, then `n` offsets from it, each one byte.
    Offsets8 = 2,
    /// A varint base, then `n` offsets from it, each two bytes (little-endian).
    Offsets16 = 3,
    /// A varint base, then `n` offsets from it, each four bytes (little-endian).
    Offsets32 = 4,
}

impl Stream {
    /// The encoding with tag `b`, if any.
    fn from_tag(b: u8) -> Option<Stream> {
        [Stream::Varints, Stream::Same, Stream::Offsets8, Stream::Offsets16, Stream::Offsets32]
            .into_iter()
            .find(|s| *s as u8 == b)
    }

    /// Bytes per entry of an offsets encoding (0 for the others).
    pub(in crate::sst) fn width(self) -> usize {
        match self {
            Stream::Varints | Stream::Same => 0,
            Stream::Offsets8 => 1,
            Stream::Offsets16 => 2,
            Stream::Offsets32 => 4,
        }
    }
}

/// Most entries a block holds. The writer's estimate
/// ([`crate::sst::block_builder::estimate`]) charges every entry
/// `ENTRY_ESTIMATE` bytes, blocks are cut at the block size (at most
/// 16 MiB) and a compaction fills one to 1.5 times that, so no block it
/// writes comes near; a reader refuses a count above it before allocating
/// for the entries (an entry may take no byte of the raw block: a column
/// of empty values at regular times packs to a few bytes however long).
pub(super) const MAX_BLOCK_ENTRIES: usize = 1 << 23;

/// What a raw block's first bytes say.
pub(super) struct Header {
    /// Timestamps are stored divided by this (1000 or 1).
    pub(super) scale: i64,
    /// Whether the streams are packed ([`FLAG_PACKED_STREAMS`]).
    pub(super) packed: bool,
    /// Entries, distinct rows and distinct qualifiers.
    pub(super) n: usize,
    pub(super) row_count: usize,
    pub(super) qual_count: usize,
}

impl Header {
    /// The header of the raw block `raw`, and a cursor past it.
    pub(super) fn read(raw: &[u8]) -> Result<(Cursor<'_>, Header), DecodeError> {
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

/// A row record: the bytes the row's key shares with the key of the row
/// before, the rest of the key (`suffix`, which starts `suffix_at` bytes
/// into the block) and the row's number of entries.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowRecord<'a> {
    pub(super) shared: usize,
    pub(super) suffix: &'a [u8],
    pub(super) suffix_at: usize,
    pub(super) run: usize,
}

impl<'a> RowRecord<'a> {
    /// Reads the next row record, after a row whose key is `prev_len`
    /// bytes long, with `left` of the block's entries in no row before it:
    /// checked to make a key of at most [`MAX_ROW_KEY`] bytes, and to hold
    /// at least one entry.
    #[inline]
    pub(super) fn read(c: &mut Cursor<'a>, prev_len: usize, left: usize) -> Result<RowRecord<'a>, DecodeError> {
        let shared = c.len(prev_len, "row shared prefix")?;
        let suffix = c.length_prefixed("row suffix")?;
        let suffix_at = c.position() - suffix.len();
        if shared + suffix.len() > MAX_ROW_KEY {
            return Err(c.error("row key longer than the 4 KiB limit"));
        }
        let run = c.len(left, "row run")?;
        if run == 0 {
            return Err(c.error("row with no entries"));
        }
        Ok(RowRecord { shared, suffix, suffix_at, run })
    }
}

/// Reads the qualifier dictionary of `quals` qualifiers of a block of `n`
/// entries (which has one if it has an entry), handing `each` every
/// qualifier and the offset in the block where it ends.
pub(super) fn read_dictionary<'a>(
    c: &mut Cursor<'a>,
    quals: usize,
    n: usize,
    mut each: impl FnMut(&'a [u8], usize),
) -> Result<(), DecodeError> {
    for _ in 0..quals {
        let qualifier = c.length_prefixed("qualifier")?;
        each(qualifier, c.position());
    }
    if quals == 0 && n > 0 {
        return Err(c.error("qualifier dictionary is empty"));
    }
    Ok(())
}

/// Where a stream starts in the block, and how its entries are laid out:
/// what an error about one entry names as its offset.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamAt {
    /// The first byte of its integers (the varints, the single value or
    /// the base).
    data: usize,
    /// The first byte of its fixed-width values, if it has them.
    values: usize,
    encoding: Stream,
}

impl StreamAt {
    /// Offset in the block of integer `i` of the stream.
    pub(super) fn offset_of(&self, c: &Cursor<'_>, i: usize) -> usize {
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
pub(super) fn read_stream(
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
pub(super) fn read_stream_unless_same(
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
pub(super) enum Deltas {
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
    pub(super) fn even(heads: &[u64], step: u64) -> Option<Deltas> {
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
pub(super) fn read_delta_stream(
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
pub(super) fn undelta_field(
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

/// Deltas against the previous value of the same qualifier, or against the
/// previous value of any qualifier for a qualifier's first entry.
pub(in crate::sst) struct DeltaByQualifier {
    prev: Vec<Option<i64>>,
    last: i64,
}

impl DeltaByQualifier {
    pub(in crate::sst) fn new(qualifiers: usize) -> Self {
        DeltaByQualifier { prev: vec![None; qualifiers], last: 0 }
    }

    /// The base a value of qualifier `qid` is stored relative to.
    fn base(&self, qid: usize) -> i64 {
        self.prev.get(qid).copied().flatten().unwrap_or(self.last)
    }

    /// Records `value` for `qid`.
    fn record(&mut self, qid: usize, value: i64) {
        if let Some(slot) = self.prev.get_mut(qid) {
            *slot = Some(value);
        }
        self.last = value;
    }

    pub(in crate::sst) fn delta(&mut self, qid: usize, value: i64) -> i64 {
        let d = value.wrapping_sub(self.base(qid));
        self.record(qid, value);
        d
    }
}

/// Each entry's qualifier id, below `quals`.
#[allow(clippy::cast_possible_truncation, reason = "qualifier ids are checked to be under the entry count")]
pub(super) fn decode_qualifier_ids(
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
pub(super) fn read_qualifier_ids<'o>(
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

/// A qualifier's id in the block's dictionary, as a decoder keeps it: the
/// whole decode as `u32`, the part decode as `u64`.
pub(super) trait QualifierId: Copy {
    /// The id as an index into the dictionary.
    fn index(self) -> usize;
}

impl QualifierId for u32 {
    fn index(self) -> usize {
        self as usize
    }
}

impl QualifierId for u64 {
    #[allow(clippy::cast_possible_truncation, reason = "qualifier ids were checked to be below the count")]
    fn index(self) -> usize {
        self as usize
    }
}

/// The block's last streams: the value lengths, then the values, grouped
/// by qualifier in id order. Reads the lengths (one per entry of `qids`)
/// into `lens` and where each qualifier's values start into `groups`;
/// checks that every length fits the bytes left and that the values end
/// the block. Returns where the values begin, and the values.
pub(super) fn read_value_streams<'a, Q: QualifierId>(
    c: &mut Cursor<'a>,
    (qids, quals): (&[Q], usize),
    packed: bool,
    lens: &mut Vec<u64>,
    groups: &mut Vec<u64>,
) -> Result<(usize, &'a [u8]), DecodeError> {
    let at = read_stream(c, qids.len(), packed.then_some("value length"), "value length", lens)?;
    let left = c.remaining() as u64;
    if let Some(i) = lens.iter().position(|&len| len > left) {
        return Err(c.error_at(at.offset_of(c, i), "value length"));
    }
    // Each length is at most the bytes left, under 4 GiB, and there are
    // fewer entries than bytes: the sums cannot overflow.
    groups.clear();
    groups.resize(quals, 0);
    if quals == 1 {
        groups[0] = lens.iter().sum();
    } else {
        for (&q, &len) in qids.iter().zip(lens.iter()) {
            groups[q.index()] += len;
        }
    }
    let mut total = 0;
    for group in groups.iter_mut() {
        (*group, total) = (total, total + *group);
    }
    let values_at = c.position();
    let values = c.bytes(usize::try_from(total).map_err(|_| c.error("values"))?, "values")?;
    if !c.is_empty() {
        return Err(c.error("end of block"));
    }
    Ok((values_at, values))
}

/// Where the values of entries `range` start in the block's values, into
/// `out`: their qualifier's start (`groups`, from [`read_value_streams`])
/// plus the lengths of its entries before. May overwrite `groups`.
pub(super) fn value_starts<Q: QualifierId>(
    (qids, lens): (&[Q], &[u64]),
    groups: &mut [u64],
    range: Range<usize>,
    out: &mut Vec<u64>,
) {
    out.clear();
    if let [start] = groups {
        // One qualifier: the values lie in entry order.
        let mut at = *start + lens[..range.start].iter().sum::<u64>();
        out.extend(lens[range].iter().map(|&len| {
            let start = at;
            at += len;
            start
        }));
        return;
    }
    for (&q, &len) in qids[..range.start].iter().zip(lens) {
        groups[q.index()] += len;
    }
    for (&q, &len) in qids[range.clone()].iter().zip(&lens[range]) {
        let at = &mut groups[q.index()];
        out.push(*at);
        *at += len;
    }
}
