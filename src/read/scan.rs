//! Turning a merged entry stream into rows: gather a row's entries, assemble
//! each family, apply the filter, group into a [`Row`].

use std::sync::Arc;

use bytes::Bytes;

use super::filter::{Filter, RowCell};
use super::{FamilyRules, assemble_family};
use crate::Result;
use crate::iter::MergingIter;
use crate::key::Entry;
use crate::model::{Cell, Column, Family, GcRule, Row};

/// A family as one read sees it; its index in the read's list is its rank.
#[derive(Debug, Clone)]
pub(crate) struct FamilyView {
    pub name: String,
    pub store: u32,
    pub gc_rule: GcRule,
}

/// Rows out of a merge of every source of one span of keys.
pub(crate) struct RowScanner {
    merge: MergingIter,
    families: Arc<Vec<FamilyView>>,
    names: Arc<Vec<String>>,
    filter: Arc<Filter>,
    snapshot: u64,
    now: i64,
    reverse: bool,
    entries: Vec<(u16, Entry)>,
}

impl RowScanner {
    pub fn new(
        merge: MergingIter,
        families: Arc<Vec<FamilyView>>,
        filter: Arc<Filter>,
        snapshot: u64,
        now: i64,
        reverse: bool,
    ) -> Self {
        let names = Arc::new(families.iter().map(|f| f.name.clone()).collect());
        RowScanner { merge, families, names, filter, snapshot, now, reverse, entries: Vec::new() }
    }

    /// The next row with at least one cell after deletes, GC and the filter.
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            let Some(key) = self.gather_row()? else {
                return Ok(None);
            };
            let cells = self.live_cells();
            if cells.is_empty() {
                continue;
            }
            let cells = self.filter.apply(&self.names, cells);
            if !cells.is_empty() {
                return Ok(Some(group(key, cells, &self.names)));
            }
        }
    }

    /// Collects the next row's entries (in key order) into `self.entries`.
    fn gather_row(&mut self) -> Result<Option<Bytes>> {
        self.entries.clear();
        let Some((_, first)) = self.merge.current() else {
            return Ok(None);
        };
        let key = first.key.row.clone();
        while let Some((rank, e)) = self.merge.current() {
            if e.key.row != key {
                break;
            }
            self.entries.push((rank, e.clone()));
            self.merge.advance()?;
        }
        if self.reverse {
            self.entries.reverse();
        }
        Ok(Some(key))
    }

    fn live_cells(&self) -> Vec<RowCell> {
        let mut cells = Vec::new();
        let mut rest = &self.entries[..];
        while let Some(&(rank, _)) = rest.first() {
            let n = rest.iter().take_while(|(r, _)| *r == rank).count();
            let (family, tail) = rest.split_at(n);
            rest = tail;
            let Some(view) = self.families.get(usize::from(rank)) else { continue };
            let rules = FamilyRules { rank, gc_rule: &view.gc_rule, snapshot: self.snapshot, now: self.now };
            assemble_family(family.iter().map(|(_, e)| e), &rules, &mut cells);
        }
        cells
    }
}

/// Groups cells in model order into a row.
fn group(key: Bytes, cells: Vec<RowCell>, names: &[String]) -> Row {
    let mut families: Vec<Family> = Vec::new();
    let mut ranks: Vec<u16> = Vec::new();
    for c in cells {
        if ranks.last() != Some(&c.family) {
            ranks.push(c.family);
            let name = names.get(usize::from(c.family)).cloned().unwrap_or_default();
            families.push(Family { name, columns: Vec::new() });
        }
        let Some(family) = families.last_mut() else { continue };
        if family.columns.last().is_none_or(|col| col.qualifier != c.qualifier) {
            family.columns.push(Column { qualifier: c.qualifier.clone(), cells: Vec::new() });
        }
        if let Some(col) = family.columns.last_mut() {
            col.cells.push(Cell { timestamp: c.timestamp, value: c.value, labels: c.labels });
        }
    }
    Row { key, families }
}
