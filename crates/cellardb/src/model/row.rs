//! Rows as reads return them: families in name order, columns in qualifier
//! order, cells newest first.
//!
//! A row holds its cells in one flat list in that order, and a list of its
//! columns, each with its family and where its cells end; families and
//! columns are borrowed runs of the cells ([`Family`], [`Column`]). A row
//! costs two allocations whatever its shape, and one if it has a single
//! column, where a tree of families, columns and cells would cost one per
//! node: reads of narrow rows (one cell each, as the single-timestamp
//! patterns store them) spend much of their time building and dropping
//! rows. A wide row's cells do not each repeat their qualifier.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::Timestamp;
use super::filter::RowCell;

/// A row: its key and its cells grouped by family and column.
#[derive(Clone)]
pub struct Row {
    /// Row key.
    pub key: Bytes,
    /// Family names by rank, as the read that made the row numbered them.
    names: Arc<Vec<String>>,
    /// The row's columns in model order, each with where its cells end.
    columns: Columns,
    /// Every cell, in model order.
    cells: Vec<Cell>,
}

/// One column of a row: its family's rank, its qualifier and the end of its
/// cells in the row's list.
#[derive(Debug, Clone)]
pub(crate) struct ColumnRun {
    pub family: u16,
    pub qualifier: Bytes,
    pub end: u32,
}

/// A row's columns. Rows of one column (as the single-timestamp patterns
/// store them) need no list.
#[derive(Debug, Clone)]
pub(crate) enum Columns {
    One(ColumnRun),
    Many(Vec<ColumnRun>),
}

impl Columns {
    fn as_slice(&self) -> &[ColumnRun] {
        match self {
            Columns::One(run) => std::slice::from_ref(run),
            Columns::Many(runs) => runs,
        }
    }

    /// Appends `run` to `columns`.
    pub fn push(columns: &mut Option<Columns>, run: ColumnRun) {
        *columns = Some(match columns.take() {
            None => Columns::One(run),
            Some(Columns::One(first)) => Columns::Many(vec![first, run]),
            Some(Columns::Many(mut runs)) => {
                runs.push(run);
                Columns::Many(runs)
            }
        });
    }

    /// The last column.
    pub fn last_mut(columns: &mut Option<Columns>) -> Option<&mut ColumnRun> {
        match columns.as_mut()? {
            Columns::One(run) => Some(run),
            Columns::Many(runs) => runs.last_mut(),
        }
    }
}

/// One timestamped value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// When the cell was written (its place in its column's history).
    pub timestamp: Timestamp,
    /// The value.
    pub value: Bytes,
    /// Labels added by `apply_label` filters.
    pub labels: Vec<String>,
}

/// The cells of one column family within a row, borrowed from it.
#[derive(Clone, Copy)]
pub struct Family<'r> {
    /// Family name.
    pub name: &'r str,
    /// The family's columns.
    runs: &'r [ColumnRun],
    /// The row's cells, and where the family's first cell is among them.
    all: &'r [Cell],
    start: usize,
}

/// The cells of one column within a row, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column<'r> {
    /// Column qualifier.
    pub qualifier: &'r Bytes,
    /// Cells, newest timestamp first.
    pub cells: &'r [Cell],
}

impl Cell {
    /// The value as a 64-bit big-endian signed integer, as Bigtable stores
    /// counters (`ReadModifyWrite::increment`) and aggregate cells (sum,
    /// min, max); `None` if it is not 8 bytes long.
    pub fn as_i64(&self) -> Option<i64> {
        Some(i64::from_be_bytes(self.value.as_ref().try_into().ok()?))
    }
}

impl<'r> Family<'r> {
    /// Every cell of the family: columns in qualifier order, each newest
    /// first.
    pub fn cells(&self) -> &'r [Cell] {
        let end = self.runs.last().map_or(self.start, |r| r.end as usize);
        &self.all[self.start..end]
    }

    /// The columns with at least one cell, in qualifier order.
    pub fn columns(&self) -> impl Iterator<Item = Column<'r>> + use<'r> {
        let (all, mut start) = (self.all, self.start);
        self.runs.iter().map(move |run| {
            let end = run.end as usize;
            let column = Column { qualifier: &run.qualifier, cells: &all[start..end] };
            start = end;
            column
        })
    }

    /// The column `qualifier`, if it has cells.
    pub fn column(&self, qualifier: impl AsRef<[u8]>) -> Option<Column<'r>> {
        // Columns sort by qualifier bytes: bisect.
        let q = qualifier.as_ref();
        let i = self.runs.partition_point(|r| r.qualifier.as_ref() < q);
        let run = self.runs.get(i).filter(|r| r.qualifier.as_ref() == q)?;
        let start = if i == 0 { self.start } else { self.runs[i - 1].end as usize };
        Some(Column { qualifier: &run.qualifier, cells: &self.all[start..run.end as usize] })
    }
}

/// Families are equal when their names and columns are.
impl PartialEq for Family<'_> {
    fn eq(&self, other: &Family<'_>) -> bool {
        self.name == other.name && self.runs.len() == other.runs.len() && self.columns().eq(other.columns())
    }
}

impl Eq for Family<'_> {}

impl fmt::Debug for Family<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family")
            .field("name", &self.name)
            .field("columns", &self.columns().collect::<Vec<_>>())
            .finish()
    }
}

impl Row {
    /// A row of `cells` in model order, grouped by `columns`, whose
    /// families are ranks in `names`.
    pub(crate) fn new(key: Bytes, names: Arc<Vec<String>>, columns: Columns, cells: Vec<Cell>) -> Row {
        Row { key, names, columns, cells }
    }

    /// The row of `cells`, in model order, whose key and byte ranges are
    /// in `buffer`: columns found where qualifiers change, values sliced
    /// out of the one buffer.
    pub(crate) fn from_cells(
        buffer: &Bytes,
        key: Range<usize>,
        names: Arc<Vec<String>>,
        cells: impl ExactSizeIterator<Item = RowCell>,
    ) -> Row {
        let mut columns: Option<Columns> = None;
        let mut row_cells = Vec::with_capacity(cells.len());
        let mut last_qualifier = 0..0;
        for c in cells {
            let end = u32::try_from(row_cells.len() + 1).unwrap_or(u32::MAX);
            match Columns::last_mut(&mut columns) {
                // A gather stores a column's qualifier once for its entries.
                Some(run)
                    if run.family == c.family
                        && (last_qualifier == c.qualifier
                            || buffer[last_qualifier.clone()] == buffer[c.qualifier.clone()]) =>
                {
                    run.end = end;
                }
                _ => {
                    let qualifier = buffer.slice(c.qualifier.clone());
                    Columns::push(&mut columns, ColumnRun { family: c.family, qualifier, end });
                    last_qualifier = c.qualifier;
                }
            }
            row_cells.push(Cell {
                timestamp: Timestamp::from_micros(c.timestamp),
                value: buffer.slice(c.value),
                labels: c.labels,
            });
        }
        let columns = columns.unwrap_or(Columns::Many(Vec::new()));
        Row::new(buffer.slice(key), names, columns, row_cells)
    }

    /// Families with at least one cell, in name order.
    pub fn families(&self) -> impl Iterator<Item = Family<'_>> {
        let runs = self.columns.as_slice();
        let mut at = 0;
        std::iter::from_fn(move || {
            let first = runs.get(at)?;
            let n = runs[at..].iter().take_while(|r| r.family == first.family).count();
            let start = if at == 0 { 0 } else { runs[at - 1].end as usize };
            let name = self.names.get(usize::from(first.family)).map_or("", String::as_str);
            let family = Family { name, runs: &runs[at..at + n], all: &self.cells, start };
            at += n;
            Some(family)
        })
    }

    /// The family called `name`, if the row has cells in it.
    pub fn family(&self, name: &str) -> Option<Family<'_>> {
        self.families().find(|f| f.name == name)
    }

    /// The column `family:qualifier`, if the row has cells in it.
    pub fn column(&self, family: &str, qualifier: impl AsRef<[u8]>) -> Option<Column<'_>> {
        self.family(family)?.column(qualifier)
    }

    /// The newest cell of `family:qualifier`.
    pub fn latest(&self, family: &str, qualifier: impl AsRef<[u8]>) -> Option<&Cell> {
        self.column(family, qualifier)?.cells.first()
    }

    /// Every cell in model order, with its family name and qualifier.
    pub fn cells(&self) -> impl Iterator<Item = (&str, &Bytes, &Cell)> {
        // One walk of the flat list, moving to the next column where the
        // current one's cells end: rows of one cell are read by the
        // million, and nested iterators over families and columns cost
        // more than the cell.
        let runs = self.columns.as_slice();
        let mut column = 0;
        self.cells.iter().enumerate().filter_map(move |(i, cell)| {
            while runs.get(column)?.end as usize <= i {
                column += 1;
            }
            let run = &runs[column];
            let family = self.names.get(usize::from(run.family)).map_or("", String::as_str);
            Some((family, &run.qualifier, cell))
        })
    }

    /// Number of cells in the row.
    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }
}

/// A row borrowed from a read ([`crate::ReadRows::next_borrowed`]), valid
/// until the read moves on: its key, and its cells in model order (families
/// by name, columns by qualifier, newest first), as slices of the read's
/// own buffers. It costs no allocation; [`RowRef::to_row`] copies it into
/// an owned [`Row`].
#[derive(Clone, Copy)]
pub struct RowRef<'r> {
    key: &'r [u8],
    names: &'r Arc<Vec<String>>,
    cells: &'r [RowCell],
    /// The bytes the cells' qualifier and value ranges point into.
    bytes: &'r [u8],
}

/// One cell of a [`RowRef`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellRef<'r> {
    /// Family name.
    pub family: &'r str,
    /// Column qualifier.
    pub qualifier: &'r [u8],
    /// When the cell was written.
    pub timestamp: Timestamp,
    /// The value.
    pub value: &'r [u8],
    /// Labels added by `apply_label` filters.
    pub labels: &'r [String],
}

impl<'r> RowRef<'r> {
    pub(crate) fn new(key: &'r [u8], names: &'r Arc<Vec<String>>, cells: &'r [RowCell], bytes: &'r [u8]) -> Self {
        RowRef { key, names, cells, bytes }
    }

    /// Row key.
    pub fn key(&self) -> &'r [u8] {
        self.key
    }

    /// Number of cells in the row.
    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }

    /// Every cell, in model order.
    pub fn cells(&self) -> impl Iterator<Item = CellRef<'r>> + use<'r> {
        let (names, bytes) = (self.names, self.bytes);
        self.cells.iter().map(move |c| CellRef {
            family: names.get(usize::from(c.family)).map_or("", String::as_str),
            qualifier: bytes.get(c.qualifier.clone()).unwrap_or_default(),
            timestamp: Timestamp::from_micros(c.timestamp),
            value: bytes.get(c.value.clone()).unwrap_or_default(),
            labels: &c.labels,
        })
    }

    /// The row, owned: its key and bytes copied into one buffer.
    pub fn to_row(&self) -> Row {
        let mut buffer = BytesMut::with_capacity(self.bytes.len() + self.key.len());
        buffer.extend_from_slice(self.bytes);
        buffer.extend_from_slice(self.key);
        let key = self.bytes.len()..buffer.len();
        Row::from_cells(&buffer.freeze(), key, Arc::clone(self.names), self.cells.iter().cloned())
    }
}

/// Shows the row as [`RowRef::to_row`] would.
impl fmt::Debug for RowRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_row(), f)
    }
}

/// Rows are equal when their keys and their cells, family by family and
/// column by column, are: how the reads that made them numbered the
/// table's families does not matter.
impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        self.key == other.key && self.cells.len() == other.cells.len() && self.families().eq(other.families())
    }
}

impl Eq for Row {}

/// Shows what [`Row::families`] gives: the row's families, each with its
/// name and columns.
#[allow(clippy::missing_fields_in_debug, reason = "names and columns are how the families are found")]
impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Row").field("key", &self.key).field("families", &self.families().collect::<Vec<_>>()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(micros: i64, value: &str) -> Cell {
        Cell {
            timestamp: Timestamp::from_micros(micros),
            value: Bytes::copy_from_slice(value.as_bytes()),
            labels: Vec::new(),
        }
    }

    fn run(family: u16, qualifier: &'static str, end: u32) -> ColumnRun {
        ColumnRun { family, qualifier: Bytes::from_static(qualifier.as_bytes()), end }
    }

    /// Families "a" (rank 0, no cells), "b" (rank 1) and "c" (rank 2).
    fn two_families() -> Row {
        let names = Arc::new(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]);
        let cells = vec![cell(2, "bx2"), cell(1, "bx1"), cell(5, "by5"), cell(9, "cx9")];
        Row::new(
            Bytes::from_static(b"r"),
            names,
            Columns::Many(vec![run(1, "x", 2), run(1, "y", 3), run(2, "x", 4)]),
            cells,
        )
    }

    #[test]
    fn families_and_columns_are_the_runs_of_the_cells() {
        type Shape<'r> = Vec<(&'r str, usize, Vec<(&'r [u8], usize)>)>;
        let row = two_families();
        let shape: Shape<'_> = row
            .families()
            .map(|f| (f.name, f.cells().len(), f.columns().map(|c| (&c.qualifier[..], c.cells.len())).collect()))
            .collect();
        assert_eq!(shape, [("b", 3, vec![(&b"x"[..], 2), (b"y", 1)]), ("c", 1, vec![(&b"x"[..], 1)])]);
        assert_eq!(row.cell_count(), 4);
        let cells: Vec<(&str, &[u8], &[u8])> = row.cells().map(|(f, q, c)| (f, &q[..], &c.value[..])).collect();
        assert_eq!(
            cells,
            [("b", &b"x"[..], &b"bx2"[..]), ("b", b"x", b"bx1"), ("b", b"y", b"by5"), ("c", b"x", b"cx9")]
        );
    }

    #[test]
    fn lookups_find_a_family_column_and_newest_cell_or_nothing() {
        let row = two_families();
        assert!(row.family("a").is_none(), "a family without cells is not in the row");
        assert_eq!(row.family("c").map(|f| f.cells().len()), Some(1));
        assert_eq!(row.column("b", "x").map(|c| c.cells.len()), Some(2));
        assert_eq!(row.column("b", "y").map(|c| &c.cells[0].value[..]), Some(&b"by5"[..]));
        assert_eq!(row.latest("b", "x").map(|c| &c.value[..]), Some(&b"bx2"[..]));
        assert_eq!(row.latest("c", "x").map(|c| &c.value[..]), Some(&b"cx9"[..]));
        assert!(row.column("b", "w").is_none() && row.column("b", "z").is_none() && row.column("z", "x").is_none());
    }

    #[test]
    fn a_row_of_one_column_grows_a_list_only_at_its_second() {
        let mut columns = None;
        Columns::push(&mut columns, run(0, "p", 1));
        assert!(matches!(columns, Some(Columns::One(_))));
        if let Some(last) = Columns::last_mut(&mut columns) {
            last.end = 2;
        }
        let names = Arc::new(vec!["m".to_owned()]);
        let one = Row::new(
            Bytes::from_static(b"k"),
            names.clone(),
            columns.clone().unwrap(),
            vec![cell(2, "1"), cell(1, "0")],
        );
        assert_eq!(one.latest("m", "p").map(|c| &c.value[..]), Some(&b"1"[..]));
        Columns::push(&mut columns, run(0, "t", 3));
        assert!(matches!(&columns, Some(Columns::Many(runs)) if runs.len() == 2));
        let two =
            Row::new(Bytes::from_static(b"k"), names, columns.unwrap(), vec![cell(2, "1"), cell(1, "0"), cell(1, "2")]);
        assert_eq!(two.family("m").map(|f| f.columns().count()), Some(2));
    }

    #[test]
    fn rows_compare_by_key_and_cells_not_by_the_table_they_came_from() {
        let row = two_families();
        // The same cells read from a table that declares the families in other ranks.
        let names = Arc::new(vec!["b".to_owned(), "c".to_owned()]);
        let same = Row::new(
            row.key.clone(),
            names.clone(),
            Columns::Many(vec![run(0, "x", 2), run(0, "y", 3), run(1, "x", 4)]),
            row.cells.clone(),
        );
        assert_eq!(row, same);
        let moved = Row::new(
            row.key.clone(),
            names,
            Columns::Many(vec![run(0, "x", 2), run(1, "y", 3), run(1, "x", 4)]),
            row.cells.clone(),
        );
        assert_ne!(row, moved, "a column in another family");
        let debug = format!("{row:?}");
        assert!(debug.contains("\"b\"") && debug.contains("\"c\"") && !debug.contains("\"a\""), "{debug}");
    }
}
