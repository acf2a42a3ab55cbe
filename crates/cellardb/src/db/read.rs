//! Reads: one snapshot, a merge per span of row keys, rows out.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::Table;
use super::version::{SstHandle, SuperVersion};
use crate::iter::MergingIter;
use crate::key::InternalKey;
use crate::memtable::MemIter;
use crate::model::cell::now_micros;
use crate::model::mutation::validate_row_key;
use crate::model::row_set::KeySpan;
use crate::model::{Filter, Row, RowRef, RowSet};
use crate::read::{FamilyView, ReadFamilies, RowScanner, RowStart, Scanned};
use crate::sst::SstIter;
use crate::{Error, Result};

impl Table {
    /// Row `key` as `filter` sees it, or `None` if it has no cell (after
    /// deletes, GC and the filter).
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad key or filter, `Error::NotFound` if
    /// the table was deleted, `Error::Corruption` if a file it reads is damaged.
    pub fn read_row(&self, key: impl AsRef<[u8]>, filter: &Filter) -> Result<Option<Row>> {
        validate_row_key(key.as_ref())?;
        self.read_rows(RowSet::new().key(key), filter).next().transpose()
    }

    /// The rows of `rows` that have cells `filter` keeps, in key order, as
    /// an iterator of `Result<Row>`; add `.limit(n)` and `.reversed()`
    /// before the first row is read. The read sees one snapshot, taken
    /// when the first row is read, and streams rows from it (it never
    /// holds the whole answer in memory). After an error it yields nothing
    /// more.
    pub fn read_rows(&self, rows: RowSet, filter: &Filter) -> ReadRows {
        ReadRows {
            table: self.clone(),
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
}

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
/// snapshot ([`Table::read_rows`]).
#[must_use = "a read does nothing until iterated"]
pub struct ReadRows {
    table: Table,
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
    sv: Arc<SuperVersion>,
    snapshot: u64,
    now: i64,
    families: ReadFamilies,
    /// Where a forward read of one row may start in a file without
    /// tombstones.
    row_start: Option<RowStart>,
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
    /// For a forward read of several spans, what `scanner`'s merge holds,
    /// source by source: it was set up once for them all and moves from
    /// span to span.
    sources: Option<Vec<Source>>,
}

/// One source of a merge that serves every span of a read.
struct Source {
    /// The family's index among the read's.
    family: usize,
    /// The file, or `None` for a memtable.
    file: Option<Arc<SstHandle>>,
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
        let reverse = self.reverse;
        let filter = &self.filter;
        let report_scanned = self.report_scanned;
        let Some(s) = self.started.as_mut() else { return Ok(Found::End) };
        s.in_forward = false;
        loop {
            if s.span.is_none() {
                let Some(span) = s.spans.pop_front() else { return Ok(Found::End) };
                if s.sources.is_some() {
                    move_on(s, &span)?;
                } else if !reverse && !s.spans.is_empty() {
                    // The first of many spans read forward: one merge of
                    // every source any of them needs, moved from span to span.
                    let (merge, sources) = merge_read(&s.sv, &s.families.views, &span, s.spans.back(), &self.table)?;
                    let mut scanner = RowScanner::new(merge, &s.families, filter.clone(), s.snapshot, s.now, reverse);
                    scanner.report_dropped(report_scanned);
                    s.scanner = Some(scanner);
                    s.sources = Some(sources);
                    move_on(s, &span)?;
                } else {
                    let start = if reverse { None } else { s.row_start.as_ref() };
                    let merge = merge_span(&s.sv, &s.families.views, &span, start, reverse, &self.table)?;
                    if let Some(scanner) = &mut s.scanner {
                        scanner.restart(merge);
                    } else {
                        let mut scanner =
                            RowScanner::new(merge, &s.families, filter.clone(), s.snapshot, s.now, reverse);
                        scanner.report_dropped(report_scanned);
                        s.scanner = Some(scanner);
                    }
                }
                s.span = Some(span);
            }
            let Some(scanner) = s.scanner.as_mut() else { return Ok(Found::End) };
            match scanner.next_row()? {
                Scanned::Row => return Ok(Found::Row),
                Scanned::Dropped => return Ok(Found::Scanned),
                Scanned::End => s.span = None,
                Scanned::Wide(key) => {
                    // What is left of the span lies below the wide row: a
                    // new reversed merge starts there, from the files'
                    // indexes, instead of stepping through the row.
                    if let Some(span) = s.span.take() {
                        s.spans.push_front(KeySpan { lo: span.lo, hi: Some(key.clone()) });
                    }
                    if read_forward(s, &self.table, key, filter)? {
                        s.in_forward = true;
                        return Ok(Found::Row);
                    }
                }
            }
        }
    }

    fn start(&self) -> Result<Started> {
        self.filter.validate()?;
        let core = self.table.db.core();
        core.check_open()?;
        let (snapshot, sv) = core.snapshot();
        let table = sv.schema.table_by_id(self.table.id).ok_or_else(|| Error::table_not_found(&self.table.name))?;
        let families = sv.read_families(table, |name| self.filter.may_select_family(name));
        let mut spans: VecDeque<KeySpan> = self.rows.spans().into();
        if self.reverse {
            spans = spans.into_iter().rev().collect();
        }
        Ok(Started {
            sv,
            snapshot,
            now: now_micros(),
            families,
            row_start: RowStart::of(&self.filter),
            spans,
            span: None,
            scanner: None,
            forward: None,
            in_forward: false,
            sources: None,
        })
    }
}

/// Row `key` of `table` read forward from read `s`'s snapshot, so that the
/// filter can seek within it, into `s.forward`; false if it has no cell the
/// filter keeps.
fn read_forward(s: &mut Started, table: &Table, key: Bytes, filter: &Arc<Filter>) -> Result<bool> {
    let mut hi = key.to_vec();
    hi.push(0);
    let span = KeySpan { lo: key, hi: Some(Bytes::from(hi)) };
    let merge = merge_span(&s.sv, &s.families.views, &span, s.row_start.as_ref(), false, table)?;
    let scanner = s.forward.insert(RowScanner::new(merge, &s.families, filter.clone(), s.snapshot, s.now, false));
    Ok(matches!(scanner.next_row()?, Scanned::Row))
}

/// The sources every span from `first` to `last` (forward) may need, for
/// every family read, merged; and what each is. [`move_on`] puts them on a
/// span.
fn merge_read(
    sv: &SuperVersion,
    families: &[FamilyView],
    first: &KeySpan,
    last: Option<&KeySpan>,
    table: &Table,
) -> Result<(MergingIter, Vec<Source>)> {
    let whole = KeySpan { lo: first.lo.clone(), hi: last.map_or(first.hi.clone(), |l| l.hi.clone()) };
    let bounds = key_bounds(&whole);
    let cache = Some(table.db.core().cache.clone());
    let mut merge: MergingIter = MergingIter::new(false);
    let mut sources = Vec::new();
    for (index, family) in families.iter().enumerate() {
        let rank = u16::try_from(index).unwrap_or(u16::MAX);
        for mem in sv.memtables().filter(|m| !m.is_empty()) {
            merge.add(Box::new(MemIter::new(mem.clone(), family.store, bounds.clone(), false)), rank);
            sources.push(Source { family: index, file: None });
        }
        for file in sv.files_of(family.store) {
            if !whole.overlaps(&file.meta.first_row, &file.meta.last_row) {
                continue;
            }
            let it = SstIter::new(file.reader.clone(), cache.clone(), bounds.clone(), false)?;
            merge.add(Box::new(it), rank);
            sources.push(Source { family: index, file: Some(file.clone()) });
        }
    }
    Ok((merge, sources))
}

/// Moves the merge of read `s`, set up by [`merge_read`], on to `span`:
/// each file that may hold rows of it to its first entry there (where the
/// filter's head allows, for one row in a file without tombstones), the
/// others out of the merge until a later span.
fn move_on(s: &mut Started, span: &KeySpan) -> Result<()> {
    let (Some(sources), Some(scanner)) = (s.sources.as_ref(), s.scanner.as_mut()) else { return Ok(()) };
    let bounds = key_bounds(span);
    let single_row = span.single_row();
    let (families, row_start) = (&s.families.views, s.row_start.as_ref());
    scanner.merge_mut().restart_each(|i, source| {
        let Some(what) = sources.get(i) else { return source.restart(bounds.clone(), false) };
        let Some(file) = &what.file else { return source.restart(bounds.clone(), true) };
        let active = span.overlaps(&file.meta.first_row, &file.meta.last_row)
            && single_row.is_none_or(|row| file.reader.may_contain_row(row));
        let start = single_row.zip(row_start).filter(|_| file.reader.props().tombstones == 0);
        let lo = match (start, families.get(what.family)) {
            (Some((row, start)), Some(family)) => Bound::Included(start.key(row, family)),
            _ => bounds.0.clone(),
        };
        source.restart((lo, bounds.1.clone()), active)
    })
}

/// Every source of `span` for every family read, merged. A forward read
/// of one row starts each file that holds no tombstone at `row_start`.
fn merge_span(
    sv: &SuperVersion,
    families: &[FamilyView],
    span: &KeySpan,
    row_start: Option<&RowStart>,
    reverse: bool,
    table: &Table,
) -> Result<MergingIter> {
    let bounds = key_bounds(span);
    let single_row = span.single_row();
    let cache = Some(table.db.core().cache.clone());
    let mut merge: MergingIter = MergingIter::new(reverse);
    for (rank, family) in families.iter().enumerate() {
        let rank = u16::try_from(rank).unwrap_or(u16::MAX);
        let start = single_row.zip(row_start).map(|(row, start)| Bound::Included(start.key(row, family)));
        // A memtable empty now holds nothing this snapshot sees: what a
        // writer adds later has a later sequence number.
        for mem in sv.memtables().filter(|m| !m.is_empty()) {
            merge.add(Box::new(MemIter::new(mem.clone(), family.store, bounds.clone(), reverse)), rank);
        }
        for file in sv.files_of(family.store) {
            if !span.overlaps(&file.meta.first_row, &file.meta.last_row) {
                continue;
            }
            if single_row.is_some_and(|row| !file.reader.may_contain_row(row)) {
                continue;
            }
            let lo = match &start {
                Some(start) if file.reader.props().tombstones == 0 => start.clone(),
                _ => bounds.0.clone(),
            };
            let it = SstIter::new(file.reader.clone(), cache.clone(), (lo, bounds.1.clone()), reverse)?;
            merge.add(Box::new(it), rank);
        }
    }
    Ok(merge)
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
