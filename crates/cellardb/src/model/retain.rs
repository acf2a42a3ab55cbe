//! What compaction keeps of a row: pure, and the reason results never
//! depend on compaction history.
//!
//! Compaction sees the entries of one row of one store from its input files.
//! Two cases, decided by the caller from the files the compaction leaves out:
//!
//! - **Complete** — no file outside the input may hold the row, but files
//!   wholly newer than the input, so the input is the row's whole stored
//!   history (those files and the memtables only hold newer entries, which
//!   can neither un-collect a cell nor need an older one back).
//!   Then the read rules ([`Assembler::family`]) decide, with the
//!   clock of the compaction:
//!   (K1) live cells are kept, with sequence number 0, since every later
//!   entry outranks them and they have no order left to keep among
//!   themselves — unless a dropped row range still recorded covers the
//!   row: the drop deletes by sequence number, so they keep theirs; a
//!   live cell that `max_versions` counted out (kept by an
//!   intersection with `max_age` while young) is written as
//!   `PutCountedOut`, since the history that showed it is gone;
//!   (K2) everything else goes: cells deleted, overwritten, or collected by
//!   the GC rule, and the tombstones, which have nothing older to delete.
//!   Collection is an event never undone (see `docs/data-model.md`), and the
//!   clock only moves on, so every later read would drop these too.
//! - **Partial** — older entries of the row may live in files left out.
//!   (P0) An entry a dropped row range deletes goes: the drop deletes every
//!   older entry of the row in every file, so none of them has history left
//!   to tell.
//!   (P1) A cell overwritten at the same timestamp by a newer one in the
//!   input goes, if no tombstone of its column or family came in between:
//!   it then lived exactly as long as its timestamp did, and whatever
//!   happens later to the newer one happens to it. (Had it been deleted
//!   and the timestamp written again, the gap would be part of the
//!   column's version history: seed 45 of the model test. A tombstone in
//!   between that deletes other timestamps of the column counts too: it
//!   may have made room among the newest versions that the overwritten
//!   cell took first.) Such a tombstone is in the input unless a file left
//!   out may hold a tombstone of the row with a sequence number inside the
//!   input's span (a time-window store keeps its tombstones in a file of
//!   their own): then (P1) and (P3) do not apply to the row.
//!   (P3) In an aggregate family, where every cell entry is an input, an
//!   input is merged into the newer input at its timestamp on the same
//!   terms as (P1), and the merge takes the newer one's sequence number.
//!   (P2) Everything else stays as it is, tombstones and sequence numbers
//!   included: a tombstone may still have older cells to delete elsewhere,
//!   and deleted cells still count in the version history of older ones.

use crate::key::{EntryKind, EntryRef};
use crate::model::aggregate::decode_i64;
use crate::model::assemble::{Assembler, FamilyRules, LiveCell};
use crate::model::{Aggregate, GcRule};

/// What compaction knows of the row it decides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowContext<'a> {
    /// Whether the input holds the row's whole stored history.
    pub complete: bool,
    /// Whether a file left out may hold a tombstone of the row newer than
    /// some of its input entries and older than others: then (P1) and (P3)
    /// cannot see whether one came between two cells, and do not apply.
    pub tombstones_outside: bool,
    /// The family's GC rule.
    pub gc_rule: &'a GcRule,
    /// The compaction's clock, µs.
    pub now: i64,
    /// A dropped range covering the row deletes its entries below this
    /// sequence number (0: none).
    pub dropped_below: u64,
    /// The family's aggregate, if it is an aggregate family.
    pub aggregate: Option<Aggregate>,
}

/// An entry to write out: which one, and with what sequence number, kind
/// and, for inputs merged in an aggregate family, value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kept {
    pub index: usize,
    pub seq: u64,
    pub kind: EntryKind,
    pub merged: Option<i64>,
}

/// Decides which entries of each row compaction writes out, keeping its
/// buffers from row to row.
#[derive(Debug, Default)]
pub(crate) struct Keeper {
    assembler: Assembler,
    live: Vec<LiveCell>,
}

impl Keeper {
    /// The entries of one row (key order) to write out.
    pub fn keep_row(&mut self, entries: &[EntryRef<'_>], ctx: &RowContext<'_>, keep: &mut Vec<Kept>) {
        if ctx.complete {
            let rules = FamilyRules {
                gc_rule: ctx.gc_rule,
                snapshot: u64::MAX,
                now: ctx.now,
                dropped_below: ctx.dropped_below,
                aggregate: ctx.aggregate,
            };
            self.live.clear();
            self.assembler.family(entries.iter().copied().enumerate(), &rules, &mut self.live);
            keep.extend(self.live.iter().map(|c| {
                let kind = if c.counted_out { EntryKind::PutCountedOut } else { EntryKind::Put };
                // A drop still recorded deletes by sequence number, so the row keeps them.
                let seq = if ctx.dropped_below > 0 { entries[c.index].seq } else { 0 };
                Kept { index: c.index, seq, kind, merged: c.merged }
            })); // (K1), (K2)
            return;
        }
        for (i, e) in entries.iter().enumerate() {
            if e.seq < ctx.dropped_below {
                continue; // (P0)
            }
            if let Some(newer) = keep.last_mut()
                && !ctx.tombstones_outside
                && shadowed(entries, e, newer, ctx.aggregate)
            {
                if let Some(agg) = ctx.aggregate {
                    let value = newer.merged.or_else(|| decode_i64(entries[newer.index].value));
                    newer.merged = value.zip(decode_i64(e.value)).map(|(v, input)| agg.merge(v, input)); // (P3)
                }
                continue; // (P1)
            }
            keep.push(Kept { index: i, seq: e.seq, kind: e.kind, merged: None }); // (P2)
        }
    }
}

/// Whether cell `e` is overwritten by (plain family) or merges into
/// (aggregate family) the entry kept just before it, by (P1) and (P3).
fn shadowed(entries: &[EntryRef<'_>], e: &EntryRef<'_>, newer: &Kept, aggregate: Option<Aggregate>) -> bool {
    let n = &entries[newer.index];
    let same_cell = e.kind.is_cell() && n.kind.is_cell() && n.qualifier == e.qualifier && n.timestamp == e.timestamp;
    let mergeable = match aggregate {
        None => true,
        Some(_) => {
            e.kind == EntryKind::Put
                && n.kind == EntryKind::Put
                && decode_i64(e.value).is_some()
                && (newer.merged.is_some() || decode_i64(n.value).is_some())
        }
    };
    same_cell && mergeable && !tombstone_between(entries, e, n.seq)
}

/// Whether a tombstone of `put`'s column or family in `entries` came after
/// `put` and before sequence `until`.
fn tombstone_between(entries: &[EntryRef<'_>], put: &EntryRef<'_>, until: u64) -> bool {
    entries.iter().any(|t| {
        let between = put.seq < t.seq && t.seq < until;
        match t.kind {
            EntryKind::DeleteFamily => between,
            EntryKind::DeleteColumn => between && t.qualifier == put.qualifier,
            EntryKind::Put | EntryKind::PutCountedOut => false,
        }
    })
}

/// Whether a whole file can be deleted without reading it: the GC rule
/// collects by age the file's newest cell (`newest_cell`, µs) even as the
/// newest version of its column, and so every cell in it (F1); and it
/// holds no tombstone (F2), which might still be deleting older cells of
/// other files. A file of tombstones alone (`cells` 0) is left to merging.
pub(crate) fn file_expired(rule: &GcRule, newest_cell: i64, cells: u64, tombstones: u64, now: i64) -> bool {
    cells > 0 && tombstones == 0 && rule.collects(0, newest_cell, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Entry;
    use crate::model::TimeRange;

    fn row() -> Vec<Entry> {
        let mut entries = vec![
            Entry::put("r".into(), "a".into(), 3000, 5, "newest".into()),
            Entry::put("r".into(), "a".into(), 2000, 4, "rewritten".into()),
            Entry::put("r".into(), "a".into(), 2000, 2, "overwritten".into()),
            Entry::put("r".into(), "a".into(), 1000, 1, "oldest".into()),
            Entry::delete_column("r".into(), "b".into(), TimeRange::all().span(), 6),
            Entry::put("r".into(), "b".into(), 1000, 3, "deleted".into()),
        ];
        entries.sort_by(|x, y| x.key.cmp(&y.key));
        entries
    }

    fn kept(entries: &[Entry], complete: bool, gc: &GcRule) -> Vec<(String, u64)> {
        let refs: Vec<EntryRef<'_>> = entries.iter().map(Entry::as_ref).collect();
        let mut keep = Vec::new();
        Keeper::default().keep_row(
            &refs,
            &RowContext { complete, tombstones_outside: false, gc_rule: gc, now: 0, dropped_below: 0, aggregate: None },
            &mut keep,
        );
        keep.iter()
            .map(|k| {
                let (e, seq) = (&entries[k.index], k.seq);
                let what = if e.key.kind.is_cell() {
                    String::from_utf8_lossy(&e.value).into_owned()
                } else {
                    "tombstone".into()
                };
                (what, seq)
            })
            .collect()
    }

    #[test]
    fn complete_history_keeps_live_cells_only_without_sequence_numbers() {
        let got = kept(&row(), true, &GcRule::max_versions(2));
        assert_eq!(got, vec![("newest".into(), 0), ("rewritten".into(), 0)]);
    }

    /// Seed 45 of the model test: a cell deleted, then its timestamp written
    /// again, must stay, or the older cell it once outnumbered comes back.
    #[test]
    fn partial_history_keeps_an_overwritten_cell_deleted_in_between() {
        let mut entries = vec![
            Entry::put("r".into(), "q".into(), 5000, 1, "first".into()),
            Entry::delete_family("r".into(), 2),
            Entry::put("r".into(), "q".into(), 5000, 3, "again".into()),
        ];
        entries.sort_by(|x, y| x.key.cmp(&y.key));
        let got = kept(&entries, false, &GcRule::max_versions(1));
        assert_eq!(got, vec![("tombstone".into(), 2), ("again".into(), 3), ("first".into(), 1)]);
    }

    #[test]
    fn partial_history_drops_only_overwritten_cells() {
        let got = kept(&row(), false, &GcRule::max_versions(1));
        assert_eq!(
            got,
            vec![
                ("newest".into(), 5),
                ("rewritten".into(), 4),
                ("oldest".into(), 1),
                ("tombstone".into(), 6),
                ("deleted".into(), 3)
            ]
        );
    }

    /// A tombstone between an overwritten cell and its overwrite that
    /// deletes another timestamp of the column keeps the overwritten cell:
    /// it counted an older cell out before the tombstone made room.
    #[test]
    fn partial_history_keeps_an_overwritten_cell_that_counted_before_a_delete() {
        let mut entries = vec![
            Entry::put("r".into(), "q".into(), 2000, 5, "first".into()),
            Entry::delete_column("r".into(), "q".into(), TimeRange::new(3000, 4000).span(), 6),
            Entry::put("r".into(), "q".into(), 2000, 7, "again".into()),
        ];
        entries.sort_by(|x, y| x.key.cmp(&y.key));
        let got = kept(&entries, false, &GcRule::max_versions(2));
        assert_eq!(got, vec![("tombstone".into(), 6), ("again".into(), 7), ("first".into(), 5)]);
    }

    fn input(ts: i64, seq: u64, n: i64) -> Entry {
        Entry::put("r".into(), "q".into(), ts, seq, n.to_be_bytes().to_vec().into())
    }

    fn kept_inputs(entries: &mut [Entry], complete: bool) -> Vec<(i64, u64, i64)> {
        kept_inputs_beside(entries, complete, false)
    }

    fn kept_inputs_beside(entries: &mut [Entry], complete: bool, tombstones_outside: bool) -> Vec<(i64, u64, i64)> {
        entries.sort_by(|x, y| x.key.cmp(&y.key));
        let refs: Vec<EntryRef<'_>> = entries.iter().map(Entry::as_ref).collect();
        let mut keep = Vec::new();
        let ctx = RowContext {
            complete,
            tombstones_outside,
            gc_rule: &GcRule::None,
            now: 0,
            dropped_below: 0,
            aggregate: Some(Aggregate::Sum),
        };
        Keeper::default().keep_row(&refs, &ctx, &mut keep);
        keep.iter()
            .filter(|k| k.kind.is_cell())
            .map(|k| {
                let e = &entries[k.index];
                let value = k.merged.unwrap_or_else(|| decode_i64(&e.value).unwrap());
                (e.key.timestamp, k.seq, value)
            })
            .collect()
    }

    #[test]
    fn aggregate_inputs_merge_into_the_newest_unless_a_delete_came_between() {
        let mut entries = vec![input(1000, 1, 5), input(1000, 2, 3), input(2000, 3, 7), input(1000, 4, 10)];
        assert_eq!(kept_inputs(&mut entries, false), vec![(2000, 3, 7), (1000, 4, 18)]);
        assert_eq!(kept_inputs(&mut entries, true), vec![(2000, 0, 7), (1000, 0, 18)]);
        entries.push(Entry::delete_column("r".into(), "q".into(), TimeRange::new(5000, 6000).span(), 3));
        entries.retain(|e| e.key.seq != 3 || !e.key.kind.is_cell());
        // The delete (of other timestamps) at 3 parts the inputs before it from those after.
        assert_eq!(kept_inputs(&mut entries, false), vec![(1000, 4, 10), (1000, 2, 8)]);
        assert_eq!(kept_inputs(&mut entries, true), vec![(1000, 0, 18)]);
    }

    #[test]
    fn nothing_merges_where_a_file_left_out_may_hold_a_tombstone_between() {
        let mut entries = vec![input(1000, 1, 5), input(1000, 4, 10)];
        assert_eq!(kept_inputs(&mut entries, false), vec![(1000, 4, 15)]);
        assert_eq!(kept_inputs_beside(&mut entries, false, true), vec![(1000, 4, 10), (1000, 1, 5)]);
        let mut cells = [
            Entry::put("r".into(), "q".into(), 1000, 4, "new".into()),
            Entry::put("r".into(), "q".into(), 1000, 1, "old".into()),
        ];
        cells.sort_by(|x, y| x.key.cmp(&y.key));
        let refs: Vec<EntryRef<'_>> = cells.iter().map(Entry::as_ref).collect();
        let mut keep = Vec::new();
        let ctx = RowContext {
            complete: false,
            tombstones_outside: true,
            gc_rule: &GcRule::None,
            now: 0,
            dropped_below: 0,
            aggregate: None,
        };
        Keeper::default().keep_row(&refs, &ctx, &mut keep);
        assert_eq!(keep.len(), 2, "the overwritten cell stays: a delete may have come between");
    }

    #[test]
    fn a_file_expires_whole_only_with_cells_all_collected_by_age_and_no_tombstone() {
        let hour = 3_600_000_000;
        let rule = GcRule::max_age(std::time::Duration::from_secs(3600));
        let now = 10 * hour;
        assert!(file_expired(&rule, now - 2 * hour, 5, 0, now));
        assert!(!file_expired(&rule, now - hour / 2, 5, 0, now), "its newest cell is young");
        assert!(!file_expired(&rule, now - 2 * hour, 5, 1, now), "a tombstone may delete elsewhere");
        assert!(!file_expired(&rule, now - 2 * hour, 0, 0, now), "no cell");
        let versions = GcRule::intersection([GcRule::max_versions(1), rule]);
        assert!(!file_expired(&versions, now - 2 * hour, 5, 0, now), "the newest version is kept");
    }
}
