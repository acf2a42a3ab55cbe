//! A compaction's output files: one run, or one run per time window, each
//! file cut at a row boundary once it reaches its target size or row count.

use std::collections::BTreeMap;

use super::picker::{OutputLayout, TOMBSTONE_WINDOW};
use crate::Result;
use crate::key::EntryRef;
use crate::sst::{SstSummary, SstWriter};

/// A file the job wrote.
pub(crate) struct Output {
    /// Its number, as the writer factory gave it.
    pub number: u64,
    /// What it holds.
    pub summary: SstSummary,
    /// The level it belongs to.
    pub level: u8,
}

/// Makes the writer of the next output file, and says its number.
pub(crate) type NewWriter<'a> = dyn FnMut() -> Result<(u64, SstWriter)> + 'a;

/// The output files being written: one run, or one run per time window.
pub(crate) struct Sink {
    layout: OutputLayout,
    target_file_size: u64,
    target_file_rows: u64,
    /// Open writers by window (a single one, window 0, for a level).
    open: BTreeMap<i64, (u64, SstWriter)>,
    done: Vec<Output>,
}

impl Sink {
    pub(super) fn new(layout: OutputLayout, target_file_size: u64, target_file_rows: u64) -> Self {
        Sink { layout, target_file_size, target_file_rows, open: BTreeMap::new(), done: Vec::new() }
    }

    fn level(&self) -> u8 {
        match self.layout {
            OutputLayout::Level(l) => l,
            OutputLayout::Windows(_) => 1,
        }
    }

    /// The writer of a one-run output, opened if none is.
    pub fn level_writer(&mut self, new_writer: &mut NewWriter<'_>) -> Result<&mut SstWriter> {
        debug_assert!(matches!(self.layout, OutputLayout::Level(_)));
        self.writer(0, new_writer)
    }

    /// The open writer of `window`, opened if none is.
    fn writer(&mut self, window: i64, new_writer: &mut NewWriter<'_>) -> Result<&mut SstWriter> {
        let (_, writer) = match self.open.entry(window) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(new_writer()?),
        };
        Ok(writer)
    }

    /// The row last written to a one-run output's open file.
    pub fn last_row(&self) -> Option<&[u8]> {
        self.open.get(&0).and_then(|(_, w)| w.last_row())
    }

    pub(super) fn add(&mut self, e: EntryRef<'_>, new_writer: &mut NewWriter<'_>) -> Result<()> {
        let window = match self.layout {
            OutputLayout::Level(_) => 0,
            OutputLayout::Windows(_) if !e.kind.is_cell() => TOMBSTONE_WINDOW,
            OutputLayout::Windows(width) => e.timestamp.div_euclid(width),
        };
        self.writer(window, new_writer)?.add(e)
    }

    /// At a row boundary: finishes the files that reached their target size
    /// or row count.
    pub fn end_row(&mut self) -> Result<()> {
        let is_full = |w: &SstWriter| w.file_size() >= self.target_file_size || w.rows() >= self.target_file_rows;
        let full: Vec<i64> = self.open.iter().filter(|(_, (_, w))| is_full(w)).map(|(k, _)| *k).collect();
        for window in full {
            if let Some((number, writer)) = self.open.remove(&window) {
                self.close(number, writer)?;
            }
        }
        Ok(())
    }

    fn close(&mut self, number: u64, writer: SstWriter) -> Result<()> {
        let summary = writer.finish()?;
        self.done.push(Output { number, summary, level: self.level() });
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<Vec<Output>> {
        for (_, (number, writer)) in std::mem::take(&mut self.open) {
            self.close(number, writer)?;
        }
        Ok(self.done)
    }
}
