//! Rows as reads return them: families in name order, columns in qualifier
//! order, cells newest first.
//!
//! A row holds its cells in one flat list in that order, and its families
//! and columns are runs of the list ([`Family`], [`Column`]): a row costs
//! one allocation for its cells whatever its shape, where a tree of
//! families, columns and cells would cost one per node. Reads of narrow
//! rows (one cell each, as the single-timestamp patterns store them)
//! spend most of their time building and dropping rows.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use super::Timestamp;

/// A row: its key and its cells grouped by family and column.
#[derive(Clone)]
pub struct Row {
    /// Row key.
    pub key: Bytes,
    /// Family names by rank; the runs say which ranks the row has.
    names: Arc<Vec<String>>,
    /// The row's families: each one's rank in `names` and where its cells end.
    runs: Runs,
    /// Every cell, in model order.
    cells: Vec<Cell>,
}

/// The family runs of a row: most rows have cells in one family, and then
/// no list is allocated for them.
#[derive(Debug, Clone)]
enum Runs {
    /// Every cell is in this family.
    One(u16),
    /// Each family's rank and the end of its cells, in name order.
    Many(Vec<(u16, u32)>),
}

/// One timestamped value, with the column it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Column qualifier.
    pub qualifier: Bytes,
    /// When the cell was written (its place in its column's history).
    pub timestamp: Timestamp,
    /// The value.
    pub value: Bytes,
    /// Labels added by `apply_label` filters.
    pub labels: Vec<String>,
}

/// The cells of one column family within a row, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family<'r> {
    /// Family name.
    pub name: &'r str,
    /// Its cells: columns in qualifier order, each newest first.
    pub cells: &'r [Cell],
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
    /// The columns with at least one cell, in qualifier order.
    pub fn columns(&self) -> impl Iterator<Item = Column<'r>> + 'r {
        let cells = self.cells;
        runs(cells, |a, b| a.qualifier == b.qualifier)
            .map(move |run| Column { qualifier: &cells[run.start].qualifier, cells: &cells[run] })
    }

    /// The column `qualifier`, if it has cells.
    pub fn column(&self, qualifier: impl AsRef<[u8]>) -> Option<Column<'r>> {
        let q = qualifier.as_ref();
        // Columns sort by qualifier bytes: find the run by bisection.
        let start = self.cells.partition_point(|c| c.qualifier.as_ref() < q);
        let len = self.cells[start..].iter().take_while(|c| c.qualifier == q).count();
        (len > 0).then(|| Column { qualifier: &self.cells[start].qualifier, cells: &self.cells[start..start + len] })
    }
}

/// The index ranges of the runs of `cells` in which `same` holds between
/// neighbours.
fn runs<'c>(
    cells: &'c [Cell],
    same: impl Fn(&Cell, &Cell) -> bool + 'c,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'c {
    let mut start = 0;
    std::iter::from_fn(move || {
        let first = cells.get(start)?;
        let len = 1 + cells[start + 1..].iter().take_while(|c| same(first, c)).count();
        start += len;
        Some(start - len..start)
    })
}

impl Row {
    /// A row of `cells` in model order, grouped into families by
    /// `families`: each family's rank in `names` and the end of its cells
    /// in `cells`, in name order, none of them empty.
    pub(crate) fn new(key: Bytes, names: Arc<Vec<String>>, families: &[(u16, u32)], cells: Vec<Cell>) -> Row {
        let runs = match families {
            [(rank, _)] => Runs::One(*rank),
            _ => Runs::Many(families.to_vec()),
        };
        Row { key, names, runs, cells }
    }

    /// Families with at least one cell, in name order.
    pub fn families(&self) -> impl Iterator<Item = Family<'_>> {
        let runs: &[(u16, u32)] = match &self.runs {
            Runs::One(_) => &[],
            Runs::Many(runs) => runs,
        };
        let one = match self.runs {
            Runs::One(rank) if !self.cells.is_empty() => Some(self.family_at(rank, 0..self.cells.len())),
            _ => None,
        };
        let mut start = 0;
        one.into_iter().chain(runs.iter().map(move |&(rank, end)| {
            let end = end as usize;
            let family = self.family_at(rank, start..end);
            start = end;
            family
        }))
    }

    fn family_at(&self, rank: u16, cells: std::ops::Range<usize>) -> Family<'_> {
        let name = self.names.get(usize::from(rank)).map_or("", String::as_str);
        Family { name, cells: &self.cells[cells] }
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
        self.families().flat_map(|f| f.cells.iter().map(move |c| (f.name, &c.qualifier, c)))
    }

    /// Number of cells in the row.
    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }
}

/// Rows are equal when their keys and their cells, family by family, are.
impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        self.key == other.key && self.cells.len() == other.cells.len() && self.families().eq(other.families())
    }
}

impl Eq for Row {}

/// Shows what [`Row::families`] gives: the row's families, each with its
/// name and cells.
#[allow(clippy::missing_fields_in_debug, reason = "names and runs are how the families are found")]
impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Row").field("key", &self.key).field("families", &self.families().collect::<Vec<_>>()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(qualifier: &str, micros: i64, value: &str) -> Cell {
        Cell {
            qualifier: Bytes::copy_from_slice(qualifier.as_bytes()),
            timestamp: Timestamp::from_micros(micros),
            value: Bytes::copy_from_slice(value.as_bytes()),
            labels: Vec::new(),
        }
    }

    /// Families "a" (rank 0, absent), "b" (rank 1) and "c" (rank 2).
    fn two_families() -> Row {
        let names = Arc::new(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]);
        let cells = vec![cell("x", 2, "bx2"), cell("x", 1, "bx1"), cell("y", 5, "by5"), cell("x", 9, "cx9")];
        Row::new(Bytes::from_static(b"r"), names, &[(1, 3), (2, 4)], cells)
    }

    #[test]
    fn families_and_columns_are_the_runs_of_the_cells() {
        type Shape<'r> = Vec<(&'r str, Vec<(&'r [u8], usize)>)>;
        let row = two_families();
        let shape: Shape<'_> = row
            .families()
            .map(|f| (f.name, f.columns().map(|c| (&c.qualifier[..], c.cells.len())).collect()))
            .collect();
        assert_eq!(shape, [("b", vec![(&b"x"[..], 2), (b"y", 1)]), ("c", vec![(&b"x"[..], 1)])]);
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
        assert_eq!(row.family("c").map(|f| f.cells.len()), Some(1));
        assert_eq!(row.column("b", "x").map(|c| c.cells.len()), Some(2));
        assert_eq!(row.latest("b", "x").map(|c| &c.value[..]), Some(&b"bx2"[..]));
        assert_eq!(row.latest("c", "x").map(|c| &c.value[..]), Some(&b"cx9"[..]));
        assert!(row.column("b", "w").is_none() && row.column("b", "z").is_none() && row.column("z", "x").is_none());
    }

    #[test]
    fn a_row_in_one_family_needs_no_run_list() {
        let names = Arc::new(vec!["m".to_owned()]);
        let row = Row::new(Bytes::from_static(b"k"), names, &[(0, 2)], vec![cell("p", 1, "1"), cell("t", 1, "2")]);
        assert!(matches!(row.runs, Runs::One(0)));
        assert_eq!(row.families().map(|f| f.name).collect::<Vec<_>>(), ["m"]);
        assert_eq!(row.family("m").map(|f| f.columns().count()), Some(2));
    }

    #[test]
    fn rows_compare_by_key_and_cells_not_by_the_table_they_came_from() {
        let row = two_families();
        // The same cells read from a table that declares the families in other ranks.
        let names = Arc::new(vec!["b".to_owned(), "c".to_owned()]);
        let same = Row::new(row.key.clone(), names.clone(), &[(0, 3), (1, 4)], row.cells.clone());
        assert_eq!(row, same);
        let moved = Row::new(row.key.clone(), names, &[(0, 2), (1, 4)], row.cells.clone());
        assert_ne!(row, moved, "a cell in another family");
        let debug = format!("{row:?}");
        assert!(debug.contains("\"b\"") && debug.contains("\"c\"") && !debug.contains("\"a\""), "{debug}");
    }
}
