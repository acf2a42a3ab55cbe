//! Iterating one store's entries in a memtable.

use std::ops::Bound;
use std::sync::Arc;

use super::{KeyBounds, Memtable};
use crate::Result;
use crate::iter::EntrySource;
use crate::key::{Entry, EntryRef, InternalKey};

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
            let resume = Bound::Excluded(last.key.clone());
            if self.reverse {
                self.bounds.1 = resume;
            } else {
                self.bounds.0 = resume;
            }
        }
        self.chunk_size = (self.chunk_size * 4).min(MAX_CHUNK);
    }

    /// Moves a forward iterator on to new bounds, none of whose keys lies
    /// before where it stands, and onto its first entry within them: a
    /// read of many keys moves its sources from key to key rather than
    /// setting up new ones for each.
    pub fn restart(&mut self, bounds: KeyBounds) {
        self.bounds = bounds;
        self.exhausted = false;
        self.chunk_size = FIRST_CHUNK;
        self.refill();
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
        self.bounds.0 = Bound::Included(target.clone());
        self.exhausted = false;
        self.chunk_size = FIRST_CHUNK;
        self.refill();
        Ok(())
    }
}
