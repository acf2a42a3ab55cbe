//! Each shortcut against the rules it skips: the cells a read keeps, or
//! the entries a compaction writes, are the same with the shortcut taken
//! as without it, on random histories of one family of one row.

use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::key::Entry;
use crate::model::assemble::{Assembler, FamilyRules};
use crate::model::retain::{Keeper, Kept, RowContext};

/// One mutation of a row's history, applied in order (sequence = place + 1).
#[derive(Debug, Clone)]
enum Op {
    Put { column: u8, ts: i64, value: i64 },
    DeleteColumn { column: u8, start: i64, end: Option<i64> },
    DeleteFamily,
}

fn qualifier(column: u8) -> Bytes {
    Bytes::from(vec![b'a' + column])
}

fn put_op() -> impl Strategy<Value = Op> {
    (0..3u8, 0..8i64, -3..3i64).prop_map(|(column, ts, value)| Op::Put { column, ts: ts * 1000, value })
}

fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => put_op(),
        2 => (0..3u8, 0..8i64, proptest::option::of(1..9i64))
            .prop_map(|(column, start, len)| Op::DeleteColumn { column, start: start * 1000, end: len.map(|l| (start + l) * 1000) }),
        1 => Just(Op::DeleteFamily),
    ]
}

/// Rules whose cells stand alone: none, or ages alone and combined.
fn standalone_rule() -> impl Strategy<Value = GcRule> {
    let age = (1..12u64).prop_map(|ms| GcRule::max_age(Duration::from_millis(ms)));
    prop_oneof![
        Just(GcRule::none()),
        age.clone(),
        (age.clone(), age.clone()).prop_map(|(a, b)| GcRule::union([a, b])),
        (age.clone(), age).prop_map(|(a, b)| GcRule::intersection([a, b])),
    ]
}

/// Any valid rule, `max_versions` included.
fn any_rule() -> impl Strategy<Value = GcRule> {
    prop_oneof![standalone_rule(), (1..4u32).prop_map(GcRule::max_versions)]
}

/// The entries a history writes, in key order, each with the history's
/// sequence numbers.
fn entries_of(ops: &[Op], first_seq: u64) -> Vec<Entry> {
    let row = Bytes::from_static(b"r");
    let mut entries: Vec<Entry> = ops
        .iter()
        .zip(first_seq..)
        .map(|(op, seq)| match *op {
            Op::Put { column, ts, value } => {
                Entry::put(row.clone(), qualifier(column), ts, seq, Bytes::copy_from_slice(&value.to_be_bytes()))
            }
            Op::DeleteColumn { column, start, end } => {
                Entry::delete_column(row.clone(), qualifier(column), (start, end), seq)
            }
            Op::DeleteFamily => Entry::delete_family(row.clone(), seq),
        })
        .collect();
    sort(&mut entries);
    entries
}

fn sort(entries: &mut [Entry]) {
    entries.sort_by(|a, b| a.as_ref().cmp_key(&b.as_ref()));
}

/// A live cell as a read returns it: column, timestamp, the entry that
/// stands for it, and its merged value in an aggregate family.
type Cell = (Bytes, i64, u64, Option<i64>);

/// The live cells of `entries` (one family of one row, key order).
fn live(entries: &[Entry], rule: &GcRule, snapshot: u64, aggregate: Option<Aggregate>) -> Vec<Cell> {
    let rules = FamilyRules { gc_rule: rule, snapshot, now: 10_000, dropped_below: 0, aggregate };
    let mut cells = Vec::new();
    Assembler::default().family(entries.iter().map(Entry::as_ref).enumerate(), &rules, &mut cells);
    cells
        .iter()
        .map(|c| {
            let e = &entries[c.index];
            (e.key.qualifier.clone(), e.key.timestamp, e.key.seq, c.merged)
        })
        .collect()
}

fn aggregate_or_not() -> impl Strategy<Value = Option<Aggregate>> {
    prop_oneof![Just(None), Just(Some(Aggregate::Sum))]
}

proptest! {
    /// A read of a time range skips the newer cells (`read/seek.rs`'s jump
    /// to the range's end, `RowStart` for one column): where the cells
    /// stand alone, the cells it keeps are the same.
    #[test]
    fn skipping_newer_cells_keeps_the_same_cells_where_cells_stand_alone(
        ops in proptest::collection::vec(any_op(), 0..24),
        rule in standalone_rule(),
        aggregate in aggregate_or_not(),
        end in 0..9i64,
        snapshot in 0..26u64,
    ) {
        prop_assert!(cells_stand_alone(&rule));
        let end = end * 1000;
        let entries = entries_of(&ops, 1);
        let whole: Vec<Cell> = live(&entries, &rule, snapshot, aggregate).into_iter().filter(|c| c.1 < end).collect();
        let skipped: Vec<Entry> = entries.into_iter().filter(|e| !e.key.kind.is_cell() || e.key.timestamp < end).collect();
        prop_assert_eq!(live(&skipped, &rule, snapshot, aggregate), whole);
    }

    /// A read that keeps a column's newest `n` cells skips the rest of the
    /// column after `n` distinct visible timestamps, where
    /// `column_rest_skippable` allows: the newest `n` live cells are the same.
    #[test]
    fn skipping_a_columns_rest_keeps_its_newest_cells(
        ops in proptest::collection::vec(put_op(), 0..24),
        rule in standalone_rule(),
        aggregate in aggregate_or_not(),
        n in 1..4usize,
        snapshot in 0..26u64,
    ) {
        let so_far = ColumnSoFar { cells_stand_alone: cells_stand_alone(&rule), deletes_apply: false };
        prop_assert!(column_rest_skippable(so_far));
        let entries = entries_of(&ops, 1);
        let mut skipped = Vec::new();
        let (mut column, mut distinct, mut last_ts, mut done) = (None, 0, None, false);
        for e in &entries {
            if column.as_ref() != Some(&e.key.qualifier) {
                (column, distinct, last_ts, done) = (Some(e.key.qualifier.clone()), 0, None, false);
            }
            if !done && e.key.seq <= snapshot && last_ts != Some(e.key.timestamp) {
                (last_ts, distinct) = (Some(e.key.timestamp), distinct + 1);
                done = distinct > n;
            }
            if !done {
                skipped.push(e.clone());
            }
        }
        prop_assert_eq!(newest(live(&skipped, &rule, snapshot, aggregate), n), newest(live(&entries, &rule, snapshot, aggregate), n));
    }

    /// A forward read of one row starts a source without tombstones at a
    /// later column (and, for one column whose cells stand alone, at its
    /// first cell before the time range's end): the cells it keeps there
    /// are the same, whatever the other sources hold.
    #[test]
    fn starting_a_source_without_tombstones_inside_the_row_keeps_the_same_cells(
        others in proptest::collection::vec(any_op(), 0..16),
        source in proptest::collection::vec(put_op(), 0..16),
        rule in any_rule(),
        start_column in 0..3u8,
        end in 0..9i64,
        snapshot in 0..34u64,
    ) {
        let (start, end) = (qualifier(start_column), end * 1000);
        let skippable = entries_of(&source, 1);
        prop_assert!(may_start_inside_row(skippable.iter().filter(|e| !e.key.kind.is_cell()).count() as u64));
        let older = entries_of(&others, 17);
        let mut all: Vec<Entry> = older.iter().chain(&skippable).cloned().collect();
        sort(&mut all);
        let kept = |cells: Vec<Cell>| -> Vec<Cell> { cells.into_iter().filter(|c| c.0 >= start).collect() };
        // At a later column.
        let mut started: Vec<Entry> = older.iter().chain(skippable.iter().filter(|e| e.key.qualifier >= start)).cloned().collect();
        sort(&mut started);
        prop_assert_eq!(kept(live(&started, &rule, snapshot, None)), kept(live(&all, &rule, snapshot, None)));
        // At one column's first cell before `end`, where cells stand alone.
        if cells_stand_alone(&rule) {
            let one = |cells: Vec<Cell>| -> Vec<Cell> { cells.into_iter().filter(|c| c.0 == start && c.1 < end).collect() };
            let inside = skippable.iter().filter(|e| e.key.qualifier > start || (e.key.qualifier == start && e.key.timestamp < end));
            let mut started: Vec<Entry> = older.iter().chain(inside).cloned().collect();
            sort(&mut started);
            prop_assert_eq!(one(live(&started, &rule, snapshot, None)), one(live(&all, &rule, snapshot, None)));
        }
    }

    /// Compaction passes entries of a settled file through unassembled
    /// where `entry_passes_compaction` says: those are exactly the entries
    /// `retain` writes for the row, unchanged.
    #[test]
    fn entries_that_pass_compaction_are_what_retain_writes(
        cells in proptest::collection::btree_set((0..3u8, 0..8i64), 0..16),
        rule in standalone_rule(),
        now in 0..20i64,
    ) {
        prop_assert!(family_may_pass(&rule, None));
        let now = now * 1000;
        let row = Bytes::from_static(b"r");
        let mut entries: Vec<Entry> = cells
            .iter()
            .map(|&(column, ts)| Entry::put(row.clone(), qualifier(column), ts * 1000, 0, Bytes::from_static(b"v")))
            .collect();
        sort(&mut entries);
        let max_seq = entries.iter().map(|e| e.key.seq).max().unwrap_or(0);
        prop_assert!(file_settled(max_seq, 0));
        let refs: Vec<_> = entries.iter().map(Entry::as_ref).collect();
        let ctx = RowContext { complete: true, tombstones_outside: false, gc_rule: &rule, now, dropped_below: 0, aggregate: None };
        let mut written = Vec::new();
        Keeper::default().keep_row(&refs, &ctx, &mut written);
        let passing: Vec<Kept> = refs
            .iter()
            .enumerate()
            .filter(|(_, e)| entry_passes_compaction(PassCandidate {
                kind: e.kind, seq: e.seq, timestamp: e.timestamp, gc_rule: &rule, now, row_complete: true, row_dropped: false,
            }))
            .map(|(index, e)| Kept { index, seq: 0, kind: e.kind, merged: None })
            .collect();
        prop_assert_eq!(written, passing);
    }
}

/// The newest `n` cells of each column.
fn newest(cells: Vec<Cell>, n: usize) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for cell in cells {
        let taken = out.iter().filter(|c| c.0 == cell.0).count();
        if taken < n {
            out.push(cell);
        }
    }
    out
}

/// Why `cells_stand_alone` excludes `max_versions`: skipping a newer
/// version changes which older one is live.
#[test]
fn a_version_limit_is_why_newer_cells_cannot_be_skipped() {
    let rule = GcRule::max_versions(1);
    assert!(!cells_stand_alone(&rule));
    let ops = [Op::Put { column: 0, ts: 3000, value: 1 }, Op::Put { column: 0, ts: 5000, value: 2 }];
    let entries = entries_of(&ops, 1);
    let whole: Vec<Cell> = live(&entries, &rule, 10, None).into_iter().filter(|c| c.1 < 4000).collect();
    let skipped: Vec<Entry> = entries.into_iter().filter(|e| e.key.timestamp < 4000).collect();
    assert!(whole.is_empty(), "the newest version alone is kept, and it is outside the range");
    assert_eq!(live(&skipped, &rule, 10, None).len(), 1, "skipping it would bring the older one back");
}

/// Why a tombstone in a source forbids starting it inside a row: the
/// tombstone would be skipped with the cells before the start.
#[test]
fn a_tombstone_is_why_a_source_must_start_at_the_rows_first_entry() {
    assert!(!may_start_inside_row(1));
    let ops = [Op::Put { column: 1, ts: 1000, value: 1 }, Op::DeleteFamily];
    let entries = entries_of(&ops, 1);
    assert!(live(&entries, &GcRule::none(), 10, None).is_empty());
    let started: Vec<Entry> = entries.into_iter().filter(|e| e.key.qualifier >= qualifier(1)).collect();
    assert_eq!(live(&started, &GcRule::none(), 10, None).len(), 1, "the family tombstone sorts before the column");
}
