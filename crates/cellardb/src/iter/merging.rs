//! Merging many sorted sources into one stream ordered by
//! `(row, family rank, internal key)`.
//!
//! Each source belongs to one column family; its rank is the family's place
//! in name order. Merging every family's sources in one heap yields each row
//! whole, families in name order, which is what row assembly consumes. In
//! reverse the whole order is reversed. A binary heap of source indices,
//! compared through the sources' current entries.

use std::cmp::Ordering;

use super::EntrySource;
use crate::Result;
use crate::key::EntryRef;

/// A source and the rank of its family.
struct Ranked<S: ?Sized> {
    source: Box<S>,
    rank: u16,
}

/// The merge of many sources: of any kind (reads merge memtables and
/// runs of SSTables, `read::sources`), or of one kind that the merge's owner reaches into
/// (compaction, which copies whole blocks of the leading SSTable).
pub struct MergingIter<S: EntrySource + ?Sized = dyn EntrySource> {
    sources: Vec<Ranked<S>>,
    heap: Vec<usize>,
    /// The heap slot of the leader's runner-up (whichever of its two
    /// children comes first), kept while the heap below the leader does not
    /// change: a leader that stays ahead of it costs one comparison an
    /// entry, not three (each child with the leader, and the children with
    /// each other for `runner_up`), which matters when a compaction merges
    /// a level's files with the file that overlaps them.
    runner: Option<usize>,
    reverse: bool,
}

impl<S: EntrySource + ?Sized> MergingIter<S> {
    /// An empty merge, forward or reversed.
    pub fn new(reverse: bool) -> Self {
        MergingIter { sources: Vec::new(), heap: Vec::new(), runner: None, reverse }
    }

    /// Adds a source of family rank `rank`, positioned on its first entry.
    pub fn add(&mut self, source: Box<S>, rank: u16) {
        let has_entry = source.current().is_some();
        self.sources.push(Ranked { source, rank });
        if has_entry {
            self.heap.push(self.sources.len() - 1);
            self.sift_up(self.heap.len() - 1);
            self.note_runner();
        }
    }

    /// The next entry and its family rank.
    pub fn current(&self) -> Option<(u16, EntryRef<'_>)> {
        let s = &self.sources[*self.heap.first()?];
        Some((s.rank, s.source.current()?))
    }

    /// The next entry, without its rank ([`MergingIter::leader_rank`]):
    /// the source's answer handed on as it is, where building the pair
    /// copies the entry through memory again on every step of a read.
    #[inline]
    pub fn current_entry(&self) -> Option<EntryRef<'_>> {
        self.sources[*self.heap.first()?].source.current()
    }

    /// The family rank of the source under the current entry.
    #[inline]
    pub fn leader_rank(&self) -> u16 {
        self.heap.first().map_or(0, |&i| self.sources[i].rank)
    }

    /// Moves past the current entry.
    pub fn advance(&mut self) -> Result<()> {
        // One source (a compacted family read alone): no order to keep. An
        // exhausted source stays in the heap, where it yields nothing.
        if let [only] = self.sources.as_mut_slice() {
            return only.source.advance();
        }
        self.with_leader(EntrySource::advance).unwrap_or(Ok(()))
    }

    /// Moves every source of family rank `rank` forward to `target` (see
    /// [`EntrySource::seek`]), then restores the heap. Forward merges only.
    ///
    /// A merge of many files that share rows (level 0, time windows)
    /// seeks once a row on some reads, and all but the leading file may
    /// already be past the target: the heap is restored only where a
    /// source moved.
    pub fn seek_rank(&mut self, rank: u16, target: &crate::key::InternalKey) -> Result<()> {
        let mut moved = 0;
        let mut last_moved = 0;
        for (i, s) in self.sources.iter_mut().enumerate().filter(|(_, s)| s.rank == rank) {
            if s.source.current().is_some_and(|e| e.cmp_internal(target).is_lt()) {
                s.source.seek(target)?;
                moved += 1;
                last_moved = i;
            }
        }
        match moved {
            0 => {}
            1 if !self.reverse && self.heap.first() == Some(&last_moved) => {
                // The leader alone moved, forward: it sinks to its place,
                // or leaves the heap if it ended.
                if self.sources[last_moved].source.current().is_none() {
                    self.heap.swap_remove(0);
                }
                self.sift_down(0);
                self.note_runner();
            }
            _ => self.rebuild_heap(),
        }
        Ok(())
    }

    /// Lets `f` move each source on to new bounds, none of whose keys lies
    /// before where it stands, then rebuilds the heap: a read of many keys
    /// moves one merge from key to key (`read::sources`). Forward merges
    /// only.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn restart_each(&mut self, mut f: impl FnMut(&mut S) -> Result<()>) -> Result<()> {
        for s in &mut self.sources {
            f(&mut s.source)?;
        }
        self.rebuild_heap();
        Ok(())
    }

    fn rebuild_heap(&mut self) {
        let mut heap = std::mem::take(&mut self.heap);
        heap.clear();
        heap.extend((0..self.sources.len()).filter(|&i| self.sources[i].source.current().is_some()));
        self.heap = heap;
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
        self.note_runner();
    }

    /// Finds the leader's runner-up again, after the heap changed.
    fn note_runner(&mut self) {
        self.runner = match self.heap.len() {
            0 | 1 => None,
            2 => Some(1),
            _ if self.before(2, 1) => Some(2),
            _ => Some(1),
        };
    }

    /// The index (in the order added) of the source under the current entry.
    pub fn leader(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    /// The entry that comes next from any source but the leader: the
    /// leader's entries before it come out of the merge one after the
    /// other, from the leader alone.
    pub fn runner_up(&self) -> Option<EntryRef<'_>> {
        self.sources[self.heap[self.runner?]].source.current()
    }

    /// Lets `f` move the leading source on, in the merge's direction, then
    /// restores the heap. `None` if the merge is exhausted.
    pub fn with_leader<R>(&mut self, f: impl FnOnce(&mut S) -> R) -> Option<R> {
        let &top = self.heap.first()?;
        let result = f(&mut *self.sources[top].source);
        if self.sources[top].source.current().is_none() {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        } else if self.runner.is_none_or(|runner| self.before(0, runner)) {
            return Some(result); // still ahead of every other source
        }
        self.sift_down(0);
        self.note_runner();
        Some(result)
    }

    /// Whether the source at heap slot `a` comes before the one at `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        let (sa, sb) = (&self.sources[self.heap[a]], &self.sources[self.heap[b]]);
        let (Some(ea), Some(eb)) = (sa.source.current(), sb.source.current()) else {
            return false;
        };
        let ord = ea.row.cmp(eb.row).then(sa.rank.cmp(&sb.rank)).then_with(|| ea.cmp_key(&eb));
        let ord = if self.reverse { ord.reverse() } else { ord };
        ord == Ordering::Less || (ord == Ordering::Equal && self.heap[a] < self.heap[b])
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < self.heap.len() && self.before(l, best) {
                best = l;
            }
            if r < self.heap.len() && self.before(r, best) {
                best = r;
            }
            if best == i {
                return;
            }
            self.heap.swap(i, best);
            i = best;
        }
    }
}
