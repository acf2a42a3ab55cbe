//! Decoding a whole data block into a [`DecodedBlock`], the form the block
//! cache keeps, and what a decoded block tells of itself as a whole.

use std::cell::RefCell;

use super::ints::{Field, SIGN, min_max};
use super::layout::{
    Header, RowRecord, decode_qualifier_ids, read_delta_stream, read_dictionary, read_stream_unless_same,
    read_value_streams, undelta_field, value_starts,
};
use crate::cache::Charge;
use crate::coding::{Cursor, DecodeError};
use crate::key::{EntryKind, is_range_end};

/// A decoded data block.
#[derive(Debug)]
pub struct DecodedBlock {
    pub(super) len: usize,
    /// The prefix every row key of the block shares (its first
    /// `row_prefix` bytes), then the rest of each distinct row's key, back
    /// to back.
    pub(super) row_bytes: Box<[u8]>,
    pub(super) row_prefix: u32,
    /// Where the rest of each distinct row's key ends in `row_bytes`.
    pub(super) row_ends: RowEnds,
    /// Each entry's row, an index into `row_ends`.
    pub(super) row_of: Field,
    pub(super) qualifier_bytes: Box<[u8]>,
    /// End offset of each dictionary qualifier in `qualifier_bytes`.
    pub(super) qualifier_ends: Box<[u32]>,
    pub(super) qualifier_of: Field,
    /// Each entry's kind tag (checked at decode).
    pub(super) kinds: Field,
    /// Timestamps divided by `scale`; like sequence numbers, order-mapped
    /// from `i64` to `u64` ([`SIGN`]).
    pub(super) timestamps: Field,
    pub(super) scale: i64,
    pub(super) seqs: Field,
    pub(super) values: Box<[u8]>,
    pub(super) value_starts: Field,
    pub(super) value_lens: Field,
}

/// Where the rest of each of a block's distinct row keys ends in its row
/// bytes (the first row's starts after the prefix they all share).
#[derive(Debug)]
pub(super) enum RowEnds {
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
    pub(super) fn of(ends: Vec<u32>, prefix: u32) -> RowEnds {
        let width = ends.first().map_or(0, |&end| end - prefix);
        let mut start = prefix;
        let even = ends.iter().all(|&end| end - std::mem::replace(&mut start, end) == width);
        if even { RowEnds::Even { rows: ends.len() as u32, width } } else { RowEnds::Listed(ends.into()) }
    }

    /// The number of rows.
    pub(super) fn len(&self) -> usize {
        match self {
            RowEnds::Even { rows, .. } => *rows as usize,
            RowEnds::Listed(ends) => ends.len(),
        }
    }

    /// Where row `r`'s rest lies (`r` below the row count), given the
    /// prefix's length.
    #[inline]
    pub(super) fn rest(&self, r: usize, prefix: u32) -> (u32, u32) {
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

impl DecodedBlock {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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
        read_dictionary(&mut c, qual_count, n, |qualifier, _| {
            qualifier_bytes.extend_from_slice(qualifier);
            qualifier_ends.push(qualifier_bytes.len() as u32);
        })?;
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
            read_delta_stream(&mut c, qids, qual_count, packed, "sequence", scratch, (&mut *heads, rest))?;
        let (seqs, min, _) = undelta_field(deltas, scratch, qids, qual_count, Field::pack_in);
        if n > 0 && min < SIGN {
            return Err(c.error_at(seqs_at, "negative sequence number"));
        }
        let (value_starts, value_lens, values) =
            decode_values(&mut c, (qids, qual_count), packed, (scratch, &mut *heads, starts))?;
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

/// A block decode's working buffers, kept per thread so that decoding a
/// block allocates only what the decoded block keeps: a cache miss on a
/// point read is mostly decode, and fresh buffers for every decode would
/// spend part of it in the allocator and in page faults.
#[derive(Default)]
pub(super) struct Scratch {
    /// Per-entry integers on their way into a [`Field`].
    pub(super) ints: Vec<u64>,
    pub(super) kinds: Vec<u64>,
    pub(super) qids: Vec<u32>,
    /// The first delta of each qualifier, and the others (packed blocks).
    pub(super) heads: Vec<u64>,
    pub(super) rest: Vec<u64>,
    pub(super) starts: Vec<u64>,
    /// Each row's record: bytes shared, where its suffix lies and its length.
    pub(super) row_records: Vec<[u32; 3]>,
    /// Row keys' rests, rebuilt before the block keeps an exact copy.
    pub(super) rows: Vec<u8>,
    /// A part's ([`BlockPart`]): the sequence numbers and value lengths,
    /// the dictionary's qualifiers (where each lies in the block) and the
    /// keys of the rows around the one sought.
    ///
    /// [`BlockPart`]: super::BlockPart
    pub(super) seqs: Vec<u64>,
    pub(super) lens: Vec<u64>,
    pub(super) qualifiers: Vec<(u32, u32)>,
    pub(super) window_keys: [Vec<u8>; 4],
    /// A part's: each qualifier's last value, and the fields of the
    /// entries it builds.
    pub(super) prev: Vec<i64>,
    pub(super) built: Vec<u64>,
}

/// Buffers above this many bytes are let go after a decode, so a thread
/// that once decoded an outsized block does not hold its buffers.
const SCRATCH_KEPT: usize = 1 << 20;

impl Scratch {
    pub(super) fn release_if_large(&mut self) {
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
    pub(super) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
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
        let RowRecord { shared, suffix, suffix_at, run } = RowRecord::read(c, prev_len, entries - covered)?;
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

/// Each entry's value start and length, and the values, which are grouped
/// by qualifier in the block and copied out as they are.
#[allow(clippy::cast_possible_truncation, reason = "lengths bounded by the block's size, under 4 GiB")]
fn decode_values(
    c: &mut Cursor<'_>,
    (qids, quals): (&[u32], usize),
    packed: bool,
    (lens, groups, starts): (&mut Vec<u64>, &mut Vec<u64>, &mut Vec<u64>),
) -> Result<(Field, Field, Box<[u8]>), DecodeError> {
    let (_, values) = read_value_streams(c, (qids, quals), packed, lens, groups)?;
    value_starts((qids, lens), groups, 0..qids.len(), starts);
    let (min_len, max_len) = min_max(lens);
    let value_lens = Field::pack_in(lens, min_len, max_len);
    Ok((Field::pack_in(starts, 0, values.len() as u64), value_lens, values.into()))
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

impl DecodedBlock {
    /// Whether every entry is a plain cell (`EntryKind::Put`) with sequence
    /// number 0, as a compaction writes the rows it sees whole.
    pub(crate) fn all_settled_puts(&self) -> bool {
        self.len == 0 || (self.kinds.is_all(u64::from(EntryKind::Put as u8)) && self.seqs.is_all(SIGN))
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
            oldest: timestamp(self.timestamps.base()),
            newest: timestamp(newest),
            logical_bytes: bytes,
        })
    }

    /// What the block's entries add to the size estimate of a block being
    /// built ([`crate::sst::block_builder::estimate`]): how big it is in
    /// the units blocks are cut by.
    pub(crate) fn estimated_size(&self) -> usize {
        crate::sst::block_builder::estimate(
            self.len,
            (self.row_ends.len(), self.rows().map(|row| row.len()).sum()),
            (self.qualifier_ends.len(), self.qualifier_bytes.len()),
            self.values.len(),
        )
    }

    /// The oldest timestamp in the block (`None` if it is empty).
    pub(crate) fn oldest_timestamp(&self) -> Option<i64> {
        (self.len > 0).then(|| (self.timestamps.base() ^ SIGN).cast_signed() * self.scale)
    }

    /// Bytes of memory the block holds: what it costs the block cache's budget.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<DecodedBlock>()
            + self.row_bytes.len()
            + self.row_ends.memory_bytes()
            + self.row_of.memory_bytes()
            + self.qualifier_bytes.len()
            + self.qualifier_ends.len() * 4
            + self.qualifier_of.memory_bytes()
            + self.kinds.memory_bytes()
            + self.timestamps.memory_bytes()
            + self.seqs.memory_bytes()
            + self.values.len()
            + self.value_starts.memory_bytes()
            + self.value_lens.memory_bytes()
    }
}

impl Charge for DecodedBlock {
    fn charge(&self) -> usize {
        self.memory_bytes()
    }
}
