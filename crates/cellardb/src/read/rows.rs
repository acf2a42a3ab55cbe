//! A read of rows: its snapshot, and its one loop over the spans of its
//! row set.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use super::TableSnapshots;
use super::scan::{RowScanner, Scanned};
use super::seek::RowStart;
use super::sources::ReadMerge;
use super::sources::Sources;
use crate::key::InternalKey;
use crate::model::cell::now_micros;
use crate::model::row_set::KeySpan;
use crate::model::{Filter, Row, RowRef, RowSet};
use crate::version::ReadFamilies;
use crate::{Error, Result};

/// What [`ReadRows::next_step`] found.
#[derive(Debug)]
pub enum Step<'a> {
    /// The next row, borrowed as [`ReadRows::next_borrowed`] lends it.
    Row(RowRef<'a>),
    /// The key of a row the read went past without returning it (its
    /// cells all deleted, collected or filtered out): the read has scanned
    /// every key up to it (down to it, reversed). Reported every so many
    /// such rows in a row ([`ReadRows::report_scanned`]).
    Scanned(&'a [u8]),
}

/// A read of rows: an iterator of `Result<Row>`, streamed from one
/// snapshot ([`crate::Table::read_rows`]).
#[must_use = "a read does nothing until iterated"]
pub struct ReadRows {
    table: Box<dyn TableSnapshots>,
    rows: RowSet,
    filter: Arc<Filter>,
    limit: Option<usize>,
    reverse: bool,
    /// Report a passed-over row every this many in a row (0: never).
    report_scanned: usize,
    started: Option<Started>,
    done: bool,
    returned: usize,
}

impl ReadRows {
    /// A read of `rows` of `table` through `filter`; it does nothing until
    /// its first row is read.
    pub(crate) fn new(table: Box<dyn TableSnapshots>, rows: RowSet, filter: &Filter) -> ReadRows {
        ReadRows {
            table,
            rows,
            filter: Arc::new(filter.clone()),
            limit: None,
            reverse: false,
            report_scanned: 0,
            started: None,
            done: false,
            returned: 0,
        }
    }

    /// Returns at most `n` rows. As in Bigtable, a limit of 0 means no
    /// limit. Counts the rows already returned, if any.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = (n > 0).then_some(n);
        self
    }

    /// Returns rows in descending key order (cells within a row keep model
    /// order). Meant to be set before the first row is read: on a read
    /// under way, it starts the read over, reversed, from a new snapshot.
    pub fn reversed(mut self) -> Self {
        self.reverse = true;
        self.started = None;
        self.done = false;
        self.returned = 0;
        self
    }

    /// Has [`ReadRows::next_step`] report how far the read has got every
    /// `n` rows in a row that it passes over without returning: a read
    /// whose filter drops most rows would otherwise say nothing until the
    /// next row it keeps. A server answers Bigtable's
    /// `last_scanned_row_key` with it, so that a client retrying the read
    /// can start past the rows already scanned. 0 (the default): never.
    /// The rows returned, and the limit, are the same.
    pub fn report_scanned(mut self, n: usize) -> Self {
        self.report_scanned = n;
        self
    }

    /// The next row, or the key of a row the read passed over
    /// ([`ReadRows::report_scanned`]); `None` at the end. Without
    /// `report_scanned`, the same as [`ReadRows::next_borrowed`].
    ///
    /// # Errors
    /// As [`ReadRows::next_borrowed`]'s.
    pub fn next_step(&mut self) -> Option<Result<Step<'_>>> {
        match self.advance() {
            Ok(Found::Row) => self.holder().map(|scanner| Ok(Step::Row(scanner.row_ref()))),
            Ok(Found::Scanned) => self.holder().map(|scanner| Ok(Step::Scanned(scanner.row_key()))),
            Ok(Found::End) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// Reads every row into a vector.
    ///
    /// # Errors
    /// The first error the read meets.
    pub fn collect_rows(self) -> Result<Vec<Row>> {
        self.collect()
    }

    /// The next row, borrowed from the read until the next call: its key
    /// and cells are slices of the read's own buffers, so a row costs no
    /// allocation and no copy, where [`Iterator::next`] builds an owned
    /// [`Row`]. The same rows, in the same order, under the same limit;
    /// the two may be mixed. [`RowRef::to_row`] makes a row owned.
    ///
    /// ```no_run
    /// # fn f(t: &cellardb::Table) -> cellardb::Result<()> {
    /// use cellardb::{Filter, RowRange, RowSet};
    /// let mut rows = t.read_rows(RowSet::from(RowRange::prefix("us-west2#")), &Filter::pass_all());
    /// while let Some(row) = rows.next_borrowed() {
    ///     let row = row?;
    ///     for cell in row.cells() {
    ///         println!("{:?} {}:{:?} = {:?}", row.key(), cell.family, cell.qualifier, cell.value);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As the iterator's: the first error the read meets, after which it
    /// yields nothing more.
    pub fn next_borrowed(&mut self) -> Option<Result<RowRef<'_>>> {
        loop {
            match self.advance() {
                Ok(Found::Row) => return self.holder().map(|scanner| Ok(scanner.row_ref())),
                Ok(Found::Scanned) => {}
                Ok(Found::End) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Moves the read to its next row (or a row passed over, to report),
    /// which the scanner [`ReadRows::holder`] gives then holds.
    fn advance(&mut self) -> Result<Found> {
        if self.done || self.limit.is_some_and(|n| self.returned >= n) {
            return Ok(Found::End);
        }
        let found = self.find_row();
        match found {
            Ok(Found::Row) => self.returned += 1,
            Ok(Found::Scanned) => {}
            Ok(Found::End) | Err(_) => self.done = true,
        }
        found
    }

    /// The scanner holding the row the read last moved to.
    fn holder(&mut self) -> Option<&mut RowScanner> {
        let s = self.started.as_mut()?;
        if s.in_forward { s.forward.as_mut() } else { s.scanner.as_mut() }
    }
}

/// Where a read moved to.
enum Found {
    /// A row to return.
    Row,
    /// A row passed over, to report.
    Scanned,
    /// The end of the read.
    End,
}

/// A read's snapshot and progress.
struct Started {
    snapshot: u64,
    now: i64,
    families: ReadFamilies,
    sources: Sources,
    spans: VecDeque<KeySpan>,
    /// The span being read, if one is.
    span: Option<KeySpan>,
    /// Rows out of the span's merge; made for the first span and moved on
    /// from span to span.
    scanner: Option<RowScanner>,
    /// A row a reversed read found too wide to gather backwards, read
    /// forward ([`Scanned::Wide`]).
    forward: Option<RowScanner>,
    /// Whether `forward` holds the row last found, rather than `scanner`.
    in_forward: bool,
}

impl Iterator for ReadRows {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        loop {
            match self.advance() {
                Ok(Found::Row) => return self.holder().map(|scanner| Ok(scanner.take_row())),
                Ok(Found::Scanned) => {}
                Ok(Found::End) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl ReadRows {
    /// Finds the next row, or a row passed over to report; `End` once the
    /// spans are exhausted.
    fn find_row(&mut self) -> Result<Found> {
        if self.started.is_none() {
            self.started = Some(self.start()?);
        }
        let (reverse, filter, report_scanned) = (self.reverse, &self.filter, self.report_scanned);
        let Some(s) = self.started.as_mut() else { return Ok(Found::End) };
        s.in_forward = false;
        loop {
            if s.span.is_none() {
                let Some(span) = s.spans.pop_front() else { return Ok(Found::End) };
                s.enter(&span, reverse, filter, report_scanned)?;
                s.span = Some(span);
            }
            let Some(scanner) = s.scanner.as_mut() else { return Ok(Found::End) };
            match scanner.next_row()? {
                Scanned::Row => return Ok(Found::Row),
                Scanned::Dropped => return Ok(Found::Scanned),
                Scanned::End => s.span = None,
                Scanned::Wide(key, last) => {
                    // What is left of the span lies below the wide row: a
                    // new reversed merge starts there, from the files'
                    // indexes, instead of stepping through the row.
                    if let Some(span) = s.span.take() {
                        s.spans.push_front(KeySpan { lo: span.lo, hi: Some(key.clone()) });
                    }
                    if s.read_forward(key, last.as_ref(), filter)? {
                        s.in_forward = true;
                        return Ok(Found::Row);
                    }
                }
            }
        }
    }

    fn start(&self) -> Result<Started> {
        self.filter.validate()?;
        let (snapshot, sv) = self.table.snapshot()?;
        let table = sv
            .schema
            .table_by_id(self.table.table_id())
            .ok_or_else(|| Error::table_not_found(self.table.table_name()))?;
        let families = sv.read_families(table, |name| self.filter.may_select_family(name));
        let mut spans: VecDeque<KeySpan> = self.rows.spans().into();
        if self.reverse {
            spans = spans.into_iter().rev().collect();
        }
        let sources = Sources::new(sv.clone(), families.views.clone(), RowStart::of(&self.filter));
        Ok(Started {
            snapshot,
            now: now_micros(),
            families,
            sources,
            spans,
            span: None,
            scanner: None,
            forward: None,
            in_forward: false,
        })
    }
}

impl Started {
    /// Sets the read up on `span`, the next of its spans. A forward read
    /// of many spans merges its sources once and moves the merge from span
    /// to span; any other read merges the sources of each span afresh.
    fn enter(&mut self, span: &KeySpan, reverse: bool, filter: &Arc<Filter>, report_scanned: usize) -> Result<()> {
        let shared = self.sources.is_shared();
        if shared || (!reverse && !self.spans.is_empty()) {
            if !shared {
                let last = self.spans.back().unwrap_or(span);
                let merge = self.sources.merge_shared(span, last)?;
                self.scanner = Some(self.scanner_of(merge, filter, reverse, report_scanned));
            }
            let Some(scanner) = self.scanner.as_mut() else { return Ok(()) };
            return self.sources.move_to(scanner.merge_mut(), span);
        }
        let merge = self.sources.merge(span, reverse)?;
        match &mut self.scanner {
            Some(scanner) => scanner.restart(merge),
            None => self.scanner = Some(self.scanner_of(merge, filter, reverse, report_scanned)),
        }
        Ok(())
    }

    fn scanner_of(&self, merge: ReadMerge, filter: &Arc<Filter>, reverse: bool, report_scanned: usize) -> RowScanner {
        let mut scanner = RowScanner::new(merge, &self.families, filter.clone(), self.snapshot, self.now, reverse);
        scanner.report_dropped(report_scanned);
        scanner
    }

    /// Row `key` read forward from the read's snapshot, so that the filter
    /// can seek within it, into `forward`; false if it has no cell the
    /// filter keeps. `last`, where the reversed read saw it, is the row's
    /// last entry of one family: that family's sources end there, so a
    /// seek past the row's last column ends the read without loading the
    /// block after it.
    fn read_forward(&mut self, key: Bytes, last: Option<&(u16, InternalKey)>, filter: &Arc<Filter>) -> Result<bool> {
        let mut hi = key.to_vec();
        hi.push(0);
        let span = KeySpan { lo: key, hi: Some(Bytes::from(hi)) };
        let merge = self.sources.merge_row(&span, last)?;
        let scanner = self.scanner_of(merge, filter, false, 0);
        let scanner = self.forward.insert(scanner);
        Ok(matches!(scanner.next_row()?, Scanned::Row))
    }
}
