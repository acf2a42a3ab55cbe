//! One source of a read's merge over a run of files ([`FileRun`]): the
//! files that may hold rows of the span, each opened when the read reaches
//! it, as LevelDB's and Pebble's level iterators read a level.
//!
//! The run's files hold no row in common and are kept in row order, so
//! reading them one after another yields their entries in key order (or
//! reversed), and the merge compares keys only across runs.

use std::ops::Bound;
use std::sync::Arc;

use crate::Result;
use crate::iter::EntrySource;
use crate::key::{EntryRef, InternalKey};
use crate::sst::SstIter;
use crate::version::{FileRun, SstHandle};

/// The entries of a run's files between bounds, file after file.
pub(crate) struct RunIter {
    run: Arc<FileRun>,
    /// The index among the read's families of the family the run is of.
    family: usize,
    reverse: bool,
    /// The run's files that take part in the span, in the order read (by
    /// their index in the run), each with where it starts: its lower
    /// bound (a forward read of one row may start inside the row).
    taking_part: Vec<(usize, Bound<InternalKey>)>,
    /// The upper bound of every file's entries.
    hi: Bound<InternalKey>,
    /// The next of `taking_part` to open.
    next: usize,
    /// The file read now (its index in the run) and its iterator.
    current: Option<(usize, SstIter)>,
    /// The iterator of the file read before, kept alive: a source hands
    /// out a row's entries with its key at one place in memory and the
    /// next row's at another (`read::gather` relies on it), and were the
    /// finished file's blocks freed as the next file's first loads, the
    /// next row's key could land at the very same address.
    previous: Option<SstIter>,
}

impl RunIter {
    /// An iterator over the files of `run` for which `start` gives a lower
    /// bound (the others hold no row of the read), up to `hi`, positioned
    /// on the first entry (the last, if `reverse`).
    ///
    /// # Errors
    /// What opening a file's iterator failed with.
    pub fn new(
        run: Arc<FileRun>,
        family: usize,
        hi: Bound<InternalKey>,
        reverse: bool,
        start: impl FnMut(&SstHandle) -> Option<Bound<InternalKey>>,
    ) -> Result<RunIter> {
        let mut it =
            RunIter { run, family, reverse, taking_part: Vec::new(), hi, next: 0, current: None, previous: None };
        it.choose(start);
        it.open_next(None)?;
        Ok(it)
    }

    /// Whether any file of the run holds rows of the read.
    pub fn takes_part(&self) -> bool {
        !self.taking_part.is_empty()
    }

    /// The index among the read's families of the run's family.
    pub fn family(&self) -> usize {
        self.family
    }

    /// Moves a forward iterator on to a later span, as
    /// [`SstIter::restart`] does: the files for which `start` gives a
    /// lower bound, up to `hi`. The file read now, if the span starts in
    /// it, moves on from where it stands.
    ///
    /// # Errors
    /// What reading a file failed with.
    pub fn restart(
        &mut self,
        hi: Bound<InternalKey>,
        start: impl FnMut(&SstHandle) -> Option<Bound<InternalKey>>,
    ) -> Result<()> {
        debug_assert!(!self.reverse, "only forward reads move on from span to span");
        self.hi = hi;
        self.choose(start);
        let first = self.taking_part.first().map(|(file, lo)| (*file, lo.clone()));
        match (self.current.as_mut(), first) {
            (Some((file, it)), Some((first, lo))) if *file == first => {
                it.restart((lo, self.hi.clone()))?;
                self.next = 1;
                if !it.has_entry() {
                    self.open_next(None)?;
                }
                Ok(())
            }
            _ => {
                self.set_aside_current();
                self.open_next(None)
            }
        }
    }

    /// Lists the files taking part, in the order read.
    fn choose(&mut self, mut start: impl FnMut(&SstHandle) -> Option<Bound<InternalKey>>) {
        self.taking_part.clear();
        self.next = 0;
        let files = self.run.files().iter().enumerate();
        let chosen = files.filter_map(|(i, file)| start(file).map(|lo| (i, lo)));
        self.taking_part.extend(chosen);
        if self.reverse {
            self.taking_part.reverse();
        }
    }

    /// Opens the files taking part from `next` on, until one holds an
    /// entry in bounds; the first from `from`, if given, rather than from
    /// its lower bound.
    fn open_next(&mut self, mut from: Option<&InternalKey>) -> Result<()> {
        while let Some((file, lo)) = self.taking_part.get(self.next) {
            self.next += 1;
            let handle = &self.run.files()[*file];
            let lo = from.take().map_or_else(|| lo.clone(), |key| Bound::Included(key.clone()));
            let cache = Some(handle.cache().clone());
            let it = SstIter::new(handle.reader.clone(), cache, (lo, self.hi.clone()), self.reverse)?;
            if it.has_entry() {
                if let Some((_, done)) = self.current.replace((*file, it)) {
                    self.previous = Some(done);
                }
                return Ok(());
            }
        }
        Ok(())
    }

    /// Ends reading the current file, keeping its iterator alive as the
    /// one read before.
    fn set_aside_current(&mut self) {
        if let Some((_, done)) = self.current.take() {
            self.previous = Some(done);
        }
    }

    /// The last row of the run's file `file`.
    fn last_row_of(&self, file: usize) -> &[u8] {
        &self.run.files()[file].meta.last_row
    }
}

impl EntrySource for RunIter {
    #[inline]
    fn current(&self) -> Option<EntryRef<'_>> {
        self.current.as_ref()?.1.current()
    }

    #[inline]
    fn advance(&mut self) -> Result<()> {
        let Some((_, it)) = &mut self.current else { return Ok(()) };
        it.advance()?;
        if !it.has_entry() {
            return self.open_next(None);
        }
        Ok(())
    }

    fn seek(&mut self, target: &InternalKey) -> Result<()> {
        let Some((file, it)) = &self.current else { return Ok(()) };
        if self.reverse || it.current().is_none_or(|e| e.cmp_internal(target).is_ge()) {
            return Ok(());
        }
        if target.row[..] <= *self.last_row_of(*file) {
            if let Some((_, it)) = &mut self.current {
                it.seek(target)?;
                if !it.has_entry() {
                    return self.open_next(None);
                }
            }
            return Ok(());
        }
        // Past this file: the files taking part that end before the
        // target's row hold nothing at or after it.
        while self.taking_part.get(self.next).is_some_and(|(f, _)| *self.last_row_of(*f) < target.row[..]) {
            self.next += 1;
        }
        self.set_aside_current();
        self.open_next(Some(target))
    }
}
