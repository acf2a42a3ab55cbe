//! Row assembly: from one row's entries in key order to the cells a read
//! returns, with deletes, duplicates, the snapshot and the GC rule applied.
//!
//! Pure: the same entries give the same cells wherever they were read from.
//! The rules, for the entries of one family of one row:
//!
//! - (S) an entry with a sequence number above the snapshot is not seen;
//! - (F) a family tombstone deletes every cell with a smaller sequence;
//! - (C) a column tombstone deletes the column's cells with a smaller
//!   sequence and a timestamp in its range;
//! - (D) of several cells at one timestamp the highest sequence (met first)
//!   is the cell; the others were overwritten;
//! - (G) the family's GC rule sees each live cell with its position among
//!   the column's live cells, and collects or keeps it.
//!
//! Tombstones precede what they delete in key order (see [`crate::key`]),
//! so one pass suffices.

use crate::key::{EntryKind, EntryRef};
use crate::model::{GcRule, TimeRange};

/// What assembly needs to know about a family.
#[derive(Debug, Clone)]
pub(crate) struct FamilyRules<'a> {
    pub gc_rule: &'a GcRule,
    /// The read's snapshot: highest sequence number visible.
    pub snapshot: u64,
    /// Wall-clock time of the read, µs, for age-based GC.
    pub now: i64,
}

/// Appends to `live` the indices of the live cells among one family's
/// entries (one row, key order, each with its index).
pub(crate) fn assemble_family<'e>(
    entries: impl IntoIterator<Item = (usize, EntryRef<'e>)>,
    rules: &FamilyRules<'_>,
    live: &mut Vec<usize>,
) {
    let mut family_deleted_below = 0u64;
    let mut column: Option<&[u8]> = None;
    let mut column_tombstones: Vec<(u64, TimeRange)> = Vec::new();
    let mut last_ts: Option<i64> = None;
    let mut version = 0usize;
    for (index, e) in entries {
        if e.seq > rules.snapshot {
            continue; // (S)
        }
        if e.kind == EntryKind::DeleteFamily {
            family_deleted_below = family_deleted_below.max(e.seq);
            continue;
        }
        if column != Some(e.qualifier) {
            column = Some(e.qualifier);
            column_tombstones.clear();
            last_ts = None;
            version = 0;
        }
        if e.kind == EntryKind::DeleteColumn {
            if let Some(range) = e.delete_range() {
                column_tombstones.push((e.seq, range));
            }
            continue;
        }
        if last_ts == Some(e.timestamp) {
            continue; // (D)
        }
        last_ts = Some(e.timestamp);
        let deleted = e.seq < family_deleted_below // (F)
            || column_tombstones.iter().any(|(s, r)| e.seq < *s && r.contains(e.timestamp)); // (C)
        if deleted {
            continue;
        }
        let collected = rules.gc_rule.collects(version, e.timestamp, rules.now); // (G)
        version += 1;
        if !collected {
            live.push(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Entry;

    fn rules(gc: &GcRule, snapshot: u64) -> FamilyRules<'_> {
        FamilyRules { gc_rule: gc, snapshot, now: 0 }
    }

    fn assemble(mut entries: Vec<Entry>, gc: &GcRule, snapshot: u64) -> Vec<(String, i64, String)> {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let mut live = Vec::new();
        assemble_family(entries.iter().map(Entry::as_ref).enumerate(), &rules(gc, snapshot), &mut live);
        live.iter()
            .map(|&i| {
                let e = &entries[i];
                let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                (s(&e.key.qualifier), e.key.timestamp, s(&e.value))
            })
            .collect()
    }

    fn put(q: &'static str, ts: i64, seq: u64, v: &'static str) -> Entry {
        Entry::put("r".into(), q.into(), ts, seq, v.into())
    }

    #[test]
    fn deletes_act_on_older_sequences_only() {
        let entries = vec![
            put("a", 1000, 1, "old"),
            Entry::delete_family("r".into(), 2),
            put("a", 500, 3, "rewritten older timestamp"),
            put("b", 2000, 4, "b"),
            Entry::delete_column("r".into(), "b".into(), TimeRange::new(0, 3000), 5),
            put("b", 1000, 6, "after column delete"),
        ];
        let got = assemble(entries, &GcRule::None, u64::MAX);
        assert_eq!(
            got,
            vec![
                ("a".into(), 500, "rewritten older timestamp".into()),
                ("b".into(), 1000, "after column delete".into())
            ]
        );
    }

    #[test]
    fn newest_write_at_a_timestamp_wins_and_snapshot_hides_later_ones() {
        let entries = vec![put("a", 1000, 1, "first"), put("a", 1000, 2, "second")];
        assert_eq!(assemble(entries.clone(), &GcRule::None, 2), vec![("a".into(), 1000, "second".into())]);
        assert_eq!(assemble(entries, &GcRule::None, 1), vec![("a".into(), 1000, "first".into())]);
    }

    #[test]
    fn gc_counts_versions_after_deletes() {
        let entries = vec![
            put("a", 1000, 1, "v1"),
            put("a", 2000, 2, "v2"),
            put("a", 3000, 3, "v3"),
            Entry::delete_column("r".into(), "a".into(), TimeRange::new(3000, 4000), 4),
        ];
        let got = assemble(entries, &GcRule::max_versions(1), u64::MAX);
        assert_eq!(got, vec![("a".into(), 2000, "v2".into())]);
    }
}
