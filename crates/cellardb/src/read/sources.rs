//! A read's sources, span by span: which memtables and files may hold the
//! rows of a span, where each starts, and their merge.
//!
//! One rule, [`Sources::start_in`], decides for every file and span
//! whether the file takes part and where it starts, whether the merge is
//! built for the span or moved onto it from the span before: a read of
//! many keys sets up one merge and moves it from key to key.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::run::RunIter;
use super::seek::RowStart;
use crate::Result;
use crate::iter::{EntrySource, MergingIter};
use crate::key::{EntryRef, InternalKey};
use crate::memtable::MemIter;
use crate::model::row_set::KeySpan;
use crate::model::shortcut;
use crate::version::{FamilyView, SstHandle, SuperVersion};

/// A read's merge of its sources.
pub(super) type ReadMerge = MergingIter<Source>;

/// One source of a read's merge: a memtable's entries of one family, or a
/// run of one family's files ([`crate::version::FileRun`]).
#[allow(clippy::large_enum_variant, reason = "the merge boxes each source; a read has few")]
pub(super) enum Source {
    Memtable(MemIter),
    Files(RunIter),
}

impl EntrySource for Source {
    #[inline]
    fn current(&self) -> Option<EntryRef<'_>> {
        match self {
            Source::Memtable(m) => m.current(),
            Source::Files(f) => f.current(),
        }
    }

    #[inline]
    fn advance(&mut self) -> Result<()> {
        match self {
            Source::Memtable(m) => m.advance(),
            Source::Files(f) => f.advance(),
        }
    }

    fn seek(&mut self, target: &InternalKey) -> Result<()> {
        match self {
            Source::Memtable(m) => m.seek(target),
            Source::Files(f) => f.seek(target),
        }
    }
}

/// What a read may merge: the memtables and files of the families it sees,
/// as of its snapshot.
pub(super) struct Sources {
    sv: Arc<SuperVersion>,
    families: Arc<Vec<FamilyView>>,
    /// Where a forward read of one row may start in a file, from the head
    /// of the filter.
    row_start: Option<RowStart>,
    /// Whether the read's merge is shared by its spans
    /// ([`Sources::merge_shared`]).
    shared: bool,
}

impl Sources {
    pub fn new(sv: Arc<SuperVersion>, families: Arc<Vec<FamilyView>>, row_start: Option<RowStart>) -> Sources {
        Sources { sv, families, row_start, shared: false }
    }

    /// Whether a merge is shared by the read's spans: set up for the first
    /// of them and moved from span to span ([`Sources::move_to`]).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Every source that may hold rows of `span`, each on its first entry
    /// there (its last, if `reverse`), merged.
    ///
    /// # Errors
    /// What opening a file's iterator failed with.
    pub fn merge(&self, span: &KeySpan, reverse: bool) -> Result<ReadMerge> {
        self.build(span, reverse, None)
    }

    /// A forward merge of one row's `span`, whose sources of the family
    /// ranked `row_end.0` end at `row_end.1`, the row's last entry of that
    /// family.
    ///
    /// # Errors
    /// What opening a file's iterator failed with.
    pub fn merge_row(&self, span: &KeySpan, row_end: Option<&(u16, InternalKey)>) -> Result<ReadMerge> {
        self.build(span, false, row_end)
    }

    /// One forward merge for every span from `first` to `last`, to be
    /// moved onto each in turn by [`Sources::move_to`].
    ///
    /// # Errors
    /// What opening a file's iterator failed with.
    pub fn merge_shared(&mut self, first: &KeySpan, last: &KeySpan) -> Result<ReadMerge> {
        let whole = KeySpan { lo: first.lo.clone(), hi: last.hi.clone() };
        self.shared = true;
        self.build(&whole, false, None)
    }

    /// Moves a merge of [`Sources::merge_shared`] on to `span`, a later
    /// span than the last: each source that may hold rows of it to its
    /// first entry there, the others out of the merge until a later span.
    ///
    /// # Errors
    /// What reading a source failed with.
    pub fn move_to(&self, merge: &mut ReadMerge, span: &KeySpan) -> Result<()> {
        if !self.shared {
            return Ok(());
        }
        let bounds = key_bounds(span);
        merge.restart_each(|source| match source {
            Source::Memtable(mem) => {
                mem.restart(bounds.clone());
                Ok(())
            }
            Source::Files(run) => {
                let family = self.families.get(run.family());
                run.restart(bounds.1.clone(), |file| {
                    family.and_then(|family| self.start_in(file, family, span, &bounds.0, false))
                })
            }
        })
    }

    /// The merge of every source of `span`; the sources of the family
    /// ranked `row_end.0`, if given, end at `row_end.1` (inclusive) rather
    /// than at the span's end.
    fn build(&self, span: &KeySpan, reverse: bool, row_end: Option<&(u16, InternalKey)>) -> Result<ReadMerge> {
        let (lo, span_hi) = key_bounds(span);
        let row_end = row_end.map(|(rank, key)| (*rank, Bound::Included(key.clone())));
        let mut merge = ReadMerge::new(reverse);
        for (index, family) in self.families.iter().enumerate() {
            let rank = u16::try_from(index).unwrap_or(u16::MAX);
            let hi = match &row_end {
                Some((r, hi)) if *r == rank => hi,
                _ => &span_hi,
            };
            // A memtable empty now holds nothing this snapshot sees: what a
            // writer adds later has a later sequence number.
            for mem in self.sv.memtables().filter(|m| !m.is_empty()) {
                let entries = MemIter::new(mem.clone(), family.store, (lo.clone(), hi.clone()), reverse);
                merge.add(Box::new(Source::Memtable(entries)), rank);
            }
            for run in self.sv.runs_of(family.store) {
                let start = |file: &SstHandle| self.start_in(file, family, span, &lo, reverse);
                let files = RunIter::new(run.clone(), index, hi.clone(), reverse, start)?;
                if files.takes_part() {
                    merge.add(Box::new(Source::Files(files)), rank);
                }
            }
        }
        Ok(merge)
    }

    /// Whether `file` of `family` takes part in reading `span`, and if so,
    /// where it starts: `None` if it holds no row of the span (its key
    /// range, or for one row its bloom filter, says so); else `lo`, the
    /// span's start, or for a forward read of one row, where the head of
    /// the filter lets a file start inside the row
    /// ([`shortcut::may_start_inside_row`]).
    fn start_in(
        &self,
        file: &SstHandle,
        family: &FamilyView,
        span: &KeySpan,
        lo: &Bound<InternalKey>,
        reverse: bool,
    ) -> Option<Bound<InternalKey>> {
        if !span.overlaps(&file.meta.first_row, &file.meta.last_row) {
            return None;
        }
        let row = span.single_row();
        if row.is_some_and(|row| !file.reader.may_contain_row(row)) {
            return None;
        }
        let inside = row.zip(self.row_start.as_ref()).filter(|_| !reverse);
        match inside {
            Some((row, start)) if shortcut::may_start_inside_row(file.reader.props().tombstones) => {
                Some(Bound::Included(start.key(row, family)))
            }
            _ => Some(lo.clone()),
        }
    }
}

/// A span of row keys as bounds on internal keys.
fn key_bounds(span: &KeySpan) -> (Bound<InternalKey>, Bound<InternalKey>) {
    let lo =
        if span.lo.is_empty() { Bound::Unbounded } else { Bound::Included(InternalKey::first_of_row(span.lo.clone())) };
    let hi = match &span.hi {
        Some(hi) => Bound::Excluded(InternalKey::first_of_row(Bytes::clone(hi))),
        None => Bound::Unbounded,
    };
    (lo, hi)
}
