//! What compaction keeps of a row: pure, and the reason results never
//! depend on compaction history.
//!
//! Compaction sees the entries of one row of one store from its input files.
//! Two cases, decided by the caller from the files the compaction leaves out:
//!
//! - **Complete** — no file outside the input may hold the row, so the input
//!   is the row's whole stored history (the memtables only hold newer
//!   entries, which can neither un-collect a cell nor need an older one back).
//!   Then the read rules ([`crate::read::assemble_family`]) decide, with the
//!   clock of the compaction:
//!   (K1) live cells are kept, with sequence number 0, since every later
//!   entry outranks them and they have no order left to keep among
//!   themselves;
//!   (K2) everything else goes: cells deleted, overwritten, or collected by
//!   the GC rule, and the tombstones, which have nothing older to delete.
//!   Collection is an event never undone (see `docs/data-model.md`), and the
//!   clock only moves on, so every later read would drop these too.
//! - **Partial** — older entries of the row may live in files left out.
//!   (P1) A cell overwritten at the same timestamp by a newer one in the
//!   input goes: whatever happens later to the newer one happens to it.
//!   (P2) Everything else stays as it is, tombstones and sequence numbers
//!   included: a tombstone may still have older cells to delete elsewhere,
//!   and deleted cells still count in the version history of older ones.

use crate::key::{EntryKind, EntryRef};
use crate::model::GcRule;
use crate::read::{FamilyRules, assemble_family};

/// What compaction knows of the row it decides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowContext<'a> {
    /// Whether the input holds the row's whole stored history.
    pub complete: bool,
    /// The family's GC rule.
    pub gc_rule: &'a GcRule,
    /// The compaction's clock, µs.
    pub now: i64,
}

/// The entries of one row (key order) to write out, by index, each with the
/// sequence number to write it with.
pub(crate) fn keep_row(entries: &[EntryRef<'_>], ctx: &RowContext<'_>, keep: &mut Vec<(usize, u64)>) {
    if ctx.complete {
        let rules = FamilyRules { gc_rule: ctx.gc_rule, snapshot: u64::MAX, now: ctx.now };
        let mut live = Vec::new();
        assemble_family(entries.iter().copied().enumerate(), &rules, &mut live);
        keep.extend(live.into_iter().map(|i| (i, 0))); // (K1), (K2)
        return;
    }
    for (i, e) in entries.iter().enumerate() {
        let overwritten = i > 0 && {
            let prev = &entries[i - 1];
            e.kind == EntryKind::Put
                && prev.kind == EntryKind::Put
                && prev.qualifier == e.qualifier
                && prev.timestamp == e.timestamp
        };
        if !overwritten {
            keep.push((i, e.seq)); // (P1), (P2)
        }
    }
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
            Entry::delete_column("r".into(), "b".into(), TimeRange::all(), 6),
            Entry::put("r".into(), "b".into(), 1000, 3, "deleted".into()),
        ];
        entries.sort_by(|x, y| x.key.cmp(&y.key));
        entries
    }

    fn kept(entries: &[Entry], complete: bool, gc: &GcRule) -> Vec<(String, u64)> {
        let refs: Vec<EntryRef<'_>> = entries.iter().map(Entry::as_ref).collect();
        let mut keep = Vec::new();
        keep_row(&refs, &RowContext { complete, gc_rule: gc, now: 0 }, &mut keep);
        keep.iter()
            .map(|&(i, seq)| {
                let e = &entries[i];
                let what = if e.key.kind == EntryKind::Put {
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
}
