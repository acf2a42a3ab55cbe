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

use bytes::Bytes;

use super::filter::RowCell;
use crate::key::{Entry, EntryKind};
use crate::model::{GcRule, TimeRange};

/// What assembly needs to know about a family.
#[derive(Debug, Clone)]
pub(crate) struct FamilyRules<'a> {
    pub rank: u16,
    pub gc_rule: &'a GcRule,
    /// The read's snapshot: highest sequence number visible.
    pub snapshot: u64,
    /// Wall-clock time of the read, µs, for age-based GC.
    pub now: i64,
}

/// Appends the live cells of one family's entries (one row, key order) to `out`.
pub(crate) fn assemble_family<'e>(
    entries: impl IntoIterator<Item = &'e Entry>,
    rules: &FamilyRules<'_>,
    out: &mut Vec<RowCell>,
) {
    let mut family_deleted_below = 0u64;
    let mut column: Option<Bytes> = None;
    let mut column_tombstones: Vec<(u64, TimeRange)> = Vec::new();
    let mut last_ts: Option<i64> = None;
    let mut version = 0usize;
    for e in entries {
        let k = &e.key;
        if k.seq > rules.snapshot {
            continue; // (S)
        }
        if k.kind == EntryKind::DeleteFamily {
            family_deleted_below = family_deleted_below.max(k.seq);
            continue;
        }
        if column.as_ref() != Some(&k.qualifier) {
            column = Some(k.qualifier.clone());
            column_tombstones.clear();
            last_ts = None;
            version = 0;
        }
        if k.kind == EntryKind::DeleteColumn {
            if let Some(range) = e.delete_range() {
                column_tombstones.push((k.seq, range));
            }
            continue;
        }
        if last_ts == Some(k.timestamp) {
            continue; // (D)
        }
        last_ts = Some(k.timestamp);
        let deleted = k.seq < family_deleted_below // (F)
            || column_tombstones.iter().any(|(s, r)| k.seq < *s && r.contains(k.timestamp)); // (C)
        if deleted {
            continue;
        }
        let collected = rules.gc_rule.collects(version, k.timestamp, rules.now); // (G)
        version += 1;
        if !collected {
            out.push(RowCell {
                family: rules.rank,
                qualifier: k.qualifier.clone(),
                timestamp: k.timestamp,
                value: e.value.clone(),
                labels: Vec::new(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(gc: &GcRule, snapshot: u64) -> FamilyRules<'_> {
        FamilyRules { rank: 0, gc_rule: gc, snapshot, now: 0 }
    }

    fn assemble(mut entries: Vec<Entry>, gc: &GcRule, snapshot: u64) -> Vec<(String, i64, String)> {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Vec::new();
        assemble_family(&entries, &rules(gc, snapshot), &mut out);
        out.iter()
            .map(|c| {
                let s = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
                (s(&c.qualifier), c.timestamp, s(&c.value))
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
