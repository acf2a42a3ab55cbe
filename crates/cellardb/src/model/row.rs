//! Rows as reads return them: families in name order, columns in qualifier
//! order, cells newest first.

use bytes::Bytes;

use super::Timestamp;

/// A row: its key and its cells grouped by family and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Row key.
    pub key: Bytes,
    /// Families with at least one cell, sorted by name.
    pub families: Vec<Family>,
}

/// The cells of one column family within a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// Family name.
    pub name: String,
    /// Columns with at least one cell, sorted by qualifier bytes.
    pub columns: Vec<Column>,
}

/// The cells of one column within a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Column qualifier.
    pub qualifier: Bytes,
    /// Cells, newest timestamp first.
    pub cells: Vec<Cell>,
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

impl Cell {
    /// The value as a 64-bit big-endian signed integer, as Bigtable stores
    /// counters (`ReadModifyWrite::increment`) and aggregate cells (sum,
    /// min, max); `None` if it is not 8 bytes long.
    pub fn as_i64(&self) -> Option<i64> {
        Some(i64::from_be_bytes(self.value.as_ref().try_into().ok()?))
    }
}

impl Row {
    /// The family called `name`, if the row has cells in it.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The column `family:qualifier`, if the row has cells in it.
    pub fn column(&self, family: &str, qualifier: impl AsRef<[u8]>) -> Option<&Column> {
        let q = qualifier.as_ref();
        self.family(family)?.columns.iter().find(|c| c.qualifier == q)
    }

    /// The newest cell of `family:qualifier`.
    pub fn latest(&self, family: &str, qualifier: impl AsRef<[u8]>) -> Option<&Cell> {
        self.column(family, qualifier)?.cells.first()
    }

    /// Every cell in model order, with its family name and qualifier.
    pub fn cells(&self) -> impl Iterator<Item = (&str, &Bytes, &Cell)> {
        self.families.iter().flat_map(|f| {
            f.columns.iter().flat_map(move |c| c.cells.iter().map(move |cell| (f.name.as_str(), &c.qualifier, cell)))
        })
    }

    /// Number of cells in the row.
    pub fn cell_count(&self) -> usize {
        self.families.iter().flat_map(|f| &f.columns).map(|c| c.cells.len()).sum()
    }
}
