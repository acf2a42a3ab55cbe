//! Iterating an SSTable's entries within key bounds, forward or backward.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use super::block::{DecodedBlock, EntryAt};
use super::reader::{RowBlock, SstBlockCache, SstReader};
use crate::Result;
use crate::iter::EntrySource;
use crate::key::{EntryRef, InternalKey};

/// Entries of one SSTable between two key bounds, in key order or reversed.
pub struct SstIter {
    reader: Arc<SstReader>,
    cache: Option<Arc<SstBlockCache>>,
    lo: Bound<InternalKey>,
    hi: Bound<InternalKey>,
    reverse: bool,
    block_idx: usize,
    block: Option<Arc<DecodedBlock>>,
    /// Where `block` is only a part of block `block_idx` (a read of one
    /// row, or a reversed read's first block: [`RowBlock::Part`]): the
    /// whole block's index of the part's first entry, and the whole
    /// block's entry count. A move past the part, either way, decodes the
    /// block whole.
    part: Option<(usize, usize)>,
    pos: usize,
    /// Entry `pos` of `block`, located once: a merge reads the entry under
    /// an iterator several times before moving it on. Set by every public
    /// move ([`SstIter::settle`]).
    at: Option<EntryAt>,
    /// The key of the row under the iterator where the block does not
    /// hold it whole (a block of several rows keeps their shared prefix
    /// once), copied out once a row into one of two buffers in turn; which
    /// one holds it, and that row's index in the block. Taking turns keeps
    /// a promise the merge relies on (a reader's gather of a row): a
    /// source hands out all of a row's entries with the key at one place
    /// in memory, and the next row's at another.
    rows: [Vec<u8>; 2],
    row_buffer: usize,
    row_held: Option<usize>,
    /// The block before the current one, kept alive for the same promise:
    /// a block holding a row's key whole hands out a slice of its own
    /// memory, and were it freed as the next block loads, the allocator
    /// could put the next block's first row at the very same address, and
    /// two rows would look like one.
    previous_block: Option<Arc<DecodedBlock>>,
    /// Whether the far bound lies beyond the current block, so its entries
    /// need no bound check.
    block_inside: bool,
    /// A row of the current block (its index there) known to lie wholly
    /// inside the bounds, so its entries need no bound check either.
    row_inside: Option<usize>,
}

impl SstIter {
    /// An iterator over the entries of `reader` within `(lo, hi)`, positioned
    /// on the first (or, if `reverse`, the last) of them.
    pub fn new(
        reader: Arc<SstReader>,
        cache: Option<Arc<SstBlockCache>>,
        (lo, hi): (Bound<InternalKey>, Bound<InternalKey>),
        reverse: bool,
    ) -> Result<SstIter> {
        let mut it = SstIter {
            reader,
            cache,
            lo,
            hi,
            reverse,
            block_idx: 0,
            block: None,
            part: None,
            pos: 0,
            at: None,
            rows: [Vec::new(), Vec::new()],
            row_buffer: 0,
            row_held: None,
            previous_block: None,
            block_inside: false,
            row_inside: None,
        };
        if reverse {
            it.seek_last()?;
        } else {
            it.seek_first()?;
        }
        it.settle();
        Ok(it)
    }

    /// The entry under the iterator, or `None` once past the bounds.
    #[inline]
    pub fn current(&self) -> Option<EntryRef<'_>> {
        Some(self.block.as_ref()?.at(self.at.as_ref()?, &self.rows[self.row_buffer]))
    }

    /// Whether an entry is under the iterator: [`SstIter::current`] is
    /// `Some`, asked without building the entry.
    #[inline]
    pub fn has_entry(&self) -> bool {
        self.block.is_some() && self.at.is_some()
    }

    /// Locates the entry under the iterator once it has moved, and copies
    /// out its row's key if the block does not hold it whole and it is a
    /// new row.
    fn settle(&mut self) {
        let Some(block) = &self.block else {
            self.at = None;
            return;
        };
        self.at = block.locate(self.pos);
        let row = self.at.as_ref().and_then(EntryAt::needs_row);
        if row.is_some() && row != self.row_held {
            if let Some(r) = row {
                self.row_buffer ^= 1;
                block.row_key(r).copy_into(&mut self.rows[self.row_buffer]);
            }
            self.row_held = row;
        }
    }

    /// Moves forward to the first entry not less than `target` (nothing if
    /// the current entry is already there). Forward iterators only.
    pub fn seek(&mut self, target: &InternalKey) -> Result<()> {
        let sought = self.seek_from_here(target);
        self.settle();
        sought
    }

    fn seek_from_here(&mut self, target: &InternalKey) -> Result<()> {
        let Some(cur) = self.current() else { return Ok(()) };
        if self.reverse || cur.cmp_internal(target).is_ge() {
            return Ok(());
        }
        let past_end = match &self.hi {
            Bound::Unbounded => false,
            Bound::Included(k) => target > k,
            Bound::Excluded(k) => target >= k,
        };
        if past_end {
            // Nothing left in bounds: end without reading another block.
            self.block = None;
            return Ok(());
        }
        let in_block = self.block.as_ref().filter(|b| !b.is_empty());
        if in_block.is_some_and(|b| b.cmp_key(b.len() - 1, target).is_ge()) {
            if let Some(block) = &self.block {
                self.pos = block.seek(target, true).max(self.pos);
            }
            self.check_bounds();
            return Ok(());
        }
        // Past this block: seek from the index, as a new lower bound would,
        // searching from the next block on (a seek goes forward); past a
        // part, from its block, whose rest may hold the target.
        let from = if self.part_ends_early() { self.block_idx } else { self.block_idx + 1 };
        self.position_at(Bound::Included(target), from, false)
    }

    /// Whether the block under the iterator is a part that ends before its
    /// block does.
    fn part_ends_early(&self) -> bool {
        self.part.is_some_and(|(first, total)| first + self.block_len() < total)
    }

    /// Moves to the next entry in the iterator's direction.
    pub fn advance(&mut self) -> Result<()> {
        if self.block.is_none() {
            return Ok(());
        }
        let moved = if self.reverse {
            self.step_back()
        } else {
            self.pos += 1;
            self.skip_forward()
        };
        self.check_bounds();
        self.settle();
        moved
    }

    /// Moves a forward iterator on to new bounds, none of whose keys lies
    /// before where it stands, and onto its first entry within them: a
    /// read of many keys moves its sources from key to key rather than
    /// setting up new ones for each.
    ///
    /// # Errors
    /// What reading a block failed with.
    pub fn restart(&mut self, (lo, hi): (Bound<InternalKey>, Bound<InternalKey>)) -> Result<()> {
        debug_assert!(!self.reverse, "only forward reads move on from span to span");
        (self.lo, self.hi) = (lo, hi);
        // Every block before the one last read ends before the new bounds.
        let lo = std::mem::replace(&mut self.lo, Bound::Unbounded);
        let positioned = self.position_at(lo.as_ref(), self.block_idx, true);
        self.lo = lo;
        self.settle();
        positioned
    }

    /// The file read.
    pub(crate) fn reader(&self) -> &Arc<SstReader> {
        &self.reader
    }

    /// The block under the iterator, with its place in the file's index,
    /// if the iterator stands on its first entry.
    pub(crate) fn at_block_start(&self) -> Option<(usize, &Arc<DecodedBlock>)> {
        let block = self.block.as_ref()?;
        (self.pos == 0 && !block.is_empty() && self.part.is_none()).then_some((self.block_idx, block))
    }

    /// Moves to the first entry of the next block, past the rest of this
    /// one (a forward iteration without an upper bound: compaction's).
    pub(crate) fn skip_block(&mut self) -> Result<()> {
        debug_assert!(!self.reverse && matches!(self.hi, Bound::Unbounded));
        if self.block.is_some() {
            self.pos = self.block_len();
            self.skip_forward()?;
        }
        self.settle();
        Ok(())
    }

    fn load(&mut self, i: usize) -> Result<()> {
        let block = self.reader.block(i, self.cache.as_deref())?;
        self.install(i, block, None);
        Ok(())
    }

    /// Loads block `i` for a read of one row from `target` (`inclusive`):
    /// whole, or the part the read needs ([`SstReader::block_for_row`]).
    fn load_for_row(&mut self, i: usize, target: (&InternalKey, bool)) -> Result<()> {
        match self.reader.block_for_row(i, self.cache.as_deref(), target)? {
            RowBlock::Whole(block) => self.install(i, block, None),
            RowBlock::Part { block, first, total } => self.install(i, block, Some((first, total))),
        }
        Ok(())
    }

    /// Loads block `i` for a reversed read to start in, below the far
    /// bound if `bounded` (the bound may lie in the block), else from its
    /// end: whole, or the part the read needs first
    /// ([`SstReader::block_before`]).
    fn load_before(&mut self, i: usize, bounded: bool) -> Result<()> {
        let bound = match &self.hi {
            Bound::Included(k) if bounded => Some((k, false)),
            Bound::Excluded(k) if bounded => Some((k, true)),
            _ => None,
        };
        let loaded = self.reader.block_before(i, self.cache.as_deref(), bound)?;
        match loaded {
            RowBlock::Whole(block) => self.install(i, block, None),
            RowBlock::Part { block, first, total } => self.install(i, block, Some((first, total))),
        }
        Ok(())
    }

    /// Makes `block` (block `i`, or the part of it `part` says) the one
    /// under the iterator.
    fn install(&mut self, i: usize, block: Arc<DecodedBlock>, part: Option<(usize, usize)>) {
        self.block_idx = i;
        self.part = part;
        self.block_inside = self.far_edge_inside(&block);
        self.row_inside = None;
        self.row_held = None;
        // An empty block holds no key: the one kept stays the last that did.
        if self.block.as_ref().is_some_and(|b| !b.is_empty()) {
            self.previous_block = self.block.take();
        }
        self.block = Some(block);
    }

    /// Whether the iterator reads one row from `target` on: forward, up
    /// to the first key of the row after `target`'s (a read of one row's
    /// bounds) or to a key of `target`'s row, so that a block it loads may
    /// be decoded in part.
    fn reads_one_row_from(&self, target: &InternalKey) -> bool {
        !self.reverse
            && match &self.hi {
                // The first key of the row after `target`'s.
                Bound::Excluded(hi) => {
                    hi.is_first_of_row()
                        && hi.row.len() == target.row.len() + 1
                        && hi.row.starts_with(&target.row)
                        && hi.row.last() == Some(&0)
                }
                // A key of `target`'s row (its last entry).
                Bound::Included(hi) => hi.row == target.row,
                Bound::Unbounded => false,
            }
    }

    fn block_len(&self) -> usize {
        self.block.as_ref().map_or(0, |b| b.len())
    }

    fn seek_first(&mut self) -> Result<()> {
        let lo = std::mem::replace(&mut self.lo, Bound::Unbounded);
        let positioned = self.position_at(lo.as_ref(), 0, true);
        self.lo = lo;
        positioned
    }

    /// Moves to the first entry at or after `lo`, whose block is at index
    /// `from` or later. From a block already read, the index is searched a
    /// few blocks at a time and then by halves, since a seek mostly lands
    /// near; from the file's start (a new iterator, whose target may be
    /// anywhere), by halves alone. `starting`: the iterator starts on its
    /// bounds (new, or moved on to new ones), rather than seeking within
    /// them.
    fn position_at(&mut self, lo: Bound<&InternalKey>, from: usize, starting: bool) -> Result<()> {
        let index = self.reader.index();
        let i = match lo {
            Bound::Unbounded => 0,
            Bound::Included(k) => first_block_for(&self.reader, from, k, true),
            Bound::Excluded(k) => first_block_for(&self.reader, from, k, false),
        };
        // A read of one row, starting, does not ask whether the block
        // begins past its bounds: a read asks for a row by itself after
        // the file's bloom filter has let it through (`read::sources`), so
        // its block nearly always holds it, and where it does not, the
        // block read (whole or in part) ends the read as the question
        // would have. The block's first row, in a large index, is cache
        // misses away.
        let one_row = match lo {
            Bound::Included(k) | Bound::Excluded(k) => self.reads_one_row_from(k),
            Bound::Unbounded => false,
        };
        if i >= index.len() || (!(starting && one_row) && block_starts_past(&self.reader, i, &self.hi)) {
            // Nothing left in bounds: end without loading the block.
            self.block = None;
            return Ok(());
        }
        match self.block.take() {
            // The block is at hand (a read moving on to a near key): only
            // where the bounds fall against it is new. A part may lack
            // the new key's entries.
            Some(block) if self.block_idx == i && self.part.is_none() => {
                self.block_inside = self.far_edge_inside(&block);
                self.row_inside = None;
                self.block = Some(block);
            }
            other => {
                self.block = other; // kept alive by `install` as the previous block
                match lo {
                    Bound::Included(k) if one_row => self.load_for_row(i, (k, true))?,
                    Bound::Excluded(k) if one_row => self.load_for_row(i, (k, false))?,
                    _ => self.load(i)?,
                }
            }
        }
        let Some(block) = &self.block else { return Ok(()) };
        self.pos = match lo {
            Bound::Unbounded => 0,
            Bound::Included(k) => block.seek(k, true),
            Bound::Excluded(k) => block.seek(k, false),
        };
        self.skip_forward()?;
        self.check_bounds();
        Ok(())
    }

    /// Moves past the end of exhausted (or empty) blocks.
    fn skip_forward(&mut self) -> Result<()> {
        while self.block.is_some() && self.pos >= self.block_len() {
            if let Some((first, _)) = self.part.filter(|_| self.part_ends_early()) {
                // Past a part: the rest of its block, decoded whole.
                let past = first + self.block_len();
                self.load(self.block_idx)?;
                self.pos = past;
                continue;
            }
            let next = self.block_idx + 1;
            if next >= self.reader.index().len() || block_starts_past(&self.reader, next, &self.hi) {
                self.block = None;
                return Ok(());
            }
            self.load(next)?;
            self.pos = 0;
        }
        Ok(())
    }

    fn seek_last(&mut self) -> Result<()> {
        let index = self.reader.index();
        if index.is_empty() {
            return Ok(());
        }
        let i = match &self.hi {
            Bound::Unbounded => index.len(),
            Bound::Included(k) | Bound::Excluded(k) => first_block_for(&self.reader, 0, k, true),
        }
        .min(index.len() - 1);
        if block_starts_past(&self.reader, i, &self.hi) {
            // The far bound falls between two blocks: the read starts at
            // the end of the one before, wholly below it.
            if i == 0 {
                return Ok(());
            }
            self.load_before(i - 1, false)?;
        } else {
            self.load_before(i, true)?;
        }
        let Some(block) = &self.block else { return Ok(()) };
        let after = match &self.hi {
            Bound::Unbounded => block.len(),
            Bound::Included(k) => block.seek(k, false),
            Bound::Excluded(k) => block.seek(k, true),
        };
        // Position one past the candidate, then step back onto it.
        self.pos = after;
        self.step_back()?;
        self.check_bounds();
        Ok(())
    }

    /// Moves to the previous entry, across (and past empty) blocks.
    fn step_back(&mut self) -> Result<()> {
        while self.block.is_some() {
            if self.pos > 0 {
                self.pos -= 1;
                return Ok(());
            }
            match self.part {
                // Back past a part: the rest of its block, decoded whole.
                Some((first, _)) if first > 0 => {
                    self.load(self.block_idx)?;
                    self.pos = first;
                    continue;
                }
                _ if self.block_idx == 0 || block_ends_before(&self.reader, self.block_idx - 1, &self.lo) => {
                    self.block = None;
                    return Ok(());
                }
                // A part with nothing below the bound: the read has not
                // started, and starts with the last row of the block before.
                Some(_) if self.block_len() == 0 => self.load_before(self.block_idx - 1, false)?,
                _ => self.load(self.block_idx - 1)?,
            }
            self.pos = self.block_len();
        }
        Ok(())
    }

    /// Ends the iteration once the current entry is outside the far bound.
    fn check_bounds(&mut self) {
        if self.block_inside {
            return;
        }
        let Some(block) = &self.block else { return };
        let row = block.row_index(self.pos);
        if row.is_some() && row == self.row_inside {
            return;
        }
        if self.pos >= block.len() {
            return;
        }
        if self.beyond(|k| block.cmp_key(self.pos, k)) {
            self.block = None;
        } else if self.far_bound_is_a_row_start() {
            // A bound at a row's first key leaves every entry of a row on
            // one side: this row's others need no comparison.
            self.row_inside = row;
        }
    }

    /// Whether the far bound is the first key of a row, as a read's bounds
    /// are: then a row lies wholly inside or wholly outside.
    fn far_bound_is_a_row_start(&self) -> bool {
        let bound = if self.reverse { &self.lo } else { &self.hi };
        match bound {
            Bound::Included(k) | Bound::Excluded(k) => k.is_first_of_row(),
            Bound::Unbounded => true,
        }
    }

    /// Whether `block`'s last entry in the iteration's direction (its last,
    /// or its first if reversed) lies inside the far bound: then none of
    /// its entries needs a bound check.
    fn far_edge_inside(&self, block: &DecodedBlock) -> bool {
        let edge = if self.reverse { 0 } else { block.len().wrapping_sub(1) };
        edge < block.len() && !self.beyond(|k| block.cmp_key(edge, k))
    }

    /// Whether an entry lies beyond the far bound of the iteration's
    /// direction, given how it orders against a key.
    fn beyond(&self, cmp: impl Fn(&InternalKey) -> Ordering) -> bool {
        if self.reverse {
            match &self.lo {
                Bound::Unbounded => false,
                Bound::Included(k) => cmp(k).is_lt(),
                Bound::Excluded(k) => cmp(k).is_le(),
            }
        } else {
            match &self.hi {
                Bound::Unbounded => false,
                Bound::Included(k) => cmp(k).is_gt(),
                Bound::Excluded(k) => cmp(k).is_ge(),
            }
        }
    }
}

impl EntrySource for SstIter {
    fn current(&self) -> Option<EntryRef<'_>> {
        SstIter::current(self)
    }

    fn advance(&mut self) -> Result<()> {
        SstIter::advance(self)
    }

    fn seek(&mut self, target: &InternalKey) -> Result<()> {
        SstIter::seek(self, target)
    }
}

/// The first block of `reader` at or after `from` whose last key is not
/// below `key` (`inclusive`) or is above it: the block a seek to `key`
/// lands in, where every block before `from` ends below it
/// ([`IndexKeys::first_block`]).
fn first_block_for(reader: &SstReader, from: usize, key: &InternalKey, inclusive: bool) -> usize {
    reader.index_keys().first_block(reader.index(), from, key, inclusive)
}

/// Whether every key of block `i` lies past `hi`, as the row of its
/// first entry shows (where the index records it): then a read bounded by
/// `hi` need not load it.
fn block_starts_past(reader: &SstReader, i: usize, hi: &Bound<InternalKey>) -> bool {
    let Some(first) = reader.index_keys().first_row(i) else { return false };
    match hi {
        Bound::Unbounded => false,
        Bound::Included(k) => first > &k.row[..],
        // The bound, if a row's first key, lies before all of that row.
        Bound::Excluded(k) => first > &k.row[..] || (first == &k.row[..] && k.is_first_of_row()),
    }
}

/// Whether every key of block `i` lies before `lo`, as its last key shows.
fn block_ends_before(reader: &SstReader, i: usize, lo: &Bound<InternalKey>) -> bool {
    let last = &reader.index()[i].last_key;
    match lo {
        Bound::Unbounded => false,
        Bound::Included(k) => last < k,
        Bound::Excluded(k) => last <= k,
    }
}
