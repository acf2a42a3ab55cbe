//! Internal iterators: one trait for every source of entries (memtables,
//! SSTables) and [`MergingIter`], which merges them into one ordered stream.

mod gather;
mod merging;

use std::sync::Arc;

pub(crate) use gather::{RowGather, Skipper, Step};
pub use merging::MergingIter;

use crate::Result;
use crate::key::{Entry, EntryRef, InternalKey};
use crate::memtable::{KeyBounds, Memtable};
use crate::sst::SstIter;

/// A positioned stream of entries in key order (or reversed).
pub trait EntrySource: Send {
    /// The entry under the source, `None` when exhausted.
    fn current(&self) -> Option<EntryRef<'_>>;
    /// Moves to the next entry.
    fn advance(&mut self) -> Result<()>;
    /// Moves forward to the first entry not less than `target`; nothing if
    /// the source is there already. Only sources read forward are sought.
    fn seek(&mut self, target: &InternalKey) -> Result<()>;
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

/// Smallest and largest chunk a [`MemIter`] copies out under the read lock.
const FIRST_CHUNK: usize = 64;
const MAX_CHUNK: usize = 4096;

/// A store's entries in a memtable within bounds, copied out in chunks so no
/// lock is held between calls.
pub struct MemIter {
    mem: Arc<Memtable>,
    store: u32,
    bounds: KeyBounds,
    reverse: bool,
    chunk: Vec<Entry>,
    pos: usize,
    chunk_size: usize,
    exhausted: bool,
}

impl MemIter {
    /// Entries of `store` in `mem` within `bounds`, positioned on the first.
    pub fn new(mem: Arc<Memtable>, store: u32, bounds: KeyBounds, reverse: bool) -> Self {
        let mut it = MemIter {
            mem,
            store,
            bounds,
            reverse,
            chunk: Vec::new(),
            pos: 0,
            chunk_size: FIRST_CHUNK,
            exhausted: false,
        };
        it.refill();
        it
    }

    fn refill(&mut self) {
        if self.exhausted {
            self.chunk.clear();
            self.pos = 0;
            return;
        }
        self.chunk = self.mem.chunk(self.store, &self.bounds, self.reverse, self.chunk_size);
        self.pos = 0;
        self.exhausted = self.chunk.len() < self.chunk_size;
        if let Some(last) = self.chunk.last() {
            let resume = std::ops::Bound::Excluded(last.key.clone());
            if self.reverse {
                self.bounds.1 = resume;
            } else {
                self.bounds.0 = resume;
            }
        }
        self.chunk_size = (self.chunk_size * 4).min(MAX_CHUNK);
    }
}

impl EntrySource for MemIter {
    fn current(&self) -> Option<EntryRef<'_>> {
        self.chunk.get(self.pos).map(Entry::as_ref)
    }

    fn advance(&mut self) -> Result<()> {
        self.pos += 1;
        if self.pos >= self.chunk.len() {
            self.refill();
        }
        Ok(())
    }

    fn seek(&mut self, target: &InternalKey) -> Result<()> {
        let Some(cur) = self.chunk.get(self.pos) else { return Ok(()) };
        if self.reverse || cur.key >= *target {
            return Ok(());
        }
        if self.chunk.last().is_some_and(|last| last.key >= *target) {
            self.pos += self.chunk[self.pos..].partition_point(|e| e.key < *target);
            return Ok(());
        }
        // Past the chunk: copy out a new one from the target.
        self.bounds.0 = std::ops::Bound::Included(target.clone());
        self.exhausted = false;
        self.chunk_size = FIRST_CHUNK;
        self.refill();
        Ok(())
    }
}
