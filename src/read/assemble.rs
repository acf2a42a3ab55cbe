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
//! - (G) the family's GC rule decides for each live cell, given its age and
//!   its *version count*: the largest number of newer versions of its
//!   column that were live at the same time, at any point since the cell
//!   was written (after any mutation).
//!
//! (G) makes garbage collection an event that cannot be undone: once a cell
//! has had `N` newer live versions, `max_versions(N)` collects it for good,
//! even if those versions are deleted later. So a compaction that drops a
//! collected cell never changes what a read returns, whatever it compacted
//! before or after — the anomaly HBase documents, where deleting the newest
//! version brings back one that a partial compaction may or may not have
//! removed, cannot happen. Without tombstones the count is simply the
//! cell's rank among the live versions; with them, it is the largest rank
//! just before any tombstone took effect.
//!
//! Tombstones precede what they delete in key order (see [`crate::key`]).

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
    let mut family_tombstones: Vec<u64> = Vec::new();
    let mut column = Column::default();
    for (index, e) in entries {
        if e.seq > rules.snapshot {
            continue; // (S)
        }
        match e.kind {
            EntryKind::DeleteFamily => family_tombstones.push(e.seq),
            EntryKind::DeleteColumn | EntryKind::Put => {
                if column.qualifier != Some(e.qualifier) {
                    column.finish(&family_tombstones, rules, live);
                    column.qualifier = Some(e.qualifier);
                }
                if e.kind == EntryKind::Put {
                    column.puts.push(Put { index, timestamp: e.timestamp, seq: e.seq });
                } else if let Some(range) = e.delete_range() {
                    column.tombstones.push((e.seq, range));
                }
            }
        }
    }
    column.finish(&family_tombstones, rules, live);
}

/// A put of the column being assembled.
#[derive(Debug, Clone, Copy)]
struct Put {
    index: usize,
    timestamp: i64,
    seq: u64,
}

/// The entries of one column, gathered until the column ends.
#[derive(Debug, Default)]
struct Column<'e> {
    qualifier: Option<&'e [u8]>,
    tombstones: Vec<(u64, TimeRange)>,
    /// In key order: timestamp descending, then sequence descending.
    puts: Vec<Put>,
}

impl Column<'_> {
    /// Decides the gathered column's cells and resets it.
    fn finish(&mut self, family_tombstones: &[u64], rules: &FamilyRules<'_>, live: &mut Vec<usize>) {
        let deleted_below = family_tombstones.iter().copied().max().unwrap_or(0);
        let mut cells: Vec<Put> = Vec::new();
        for (i, p) in self.puts.iter().enumerate() {
            if i > 0 && self.puts[i - 1].timestamp == p.timestamp {
                continue; // (D)
            }
            let deleted = p.seq < deleted_below // (F)
                || self.tombstones.iter().any(|(s, r)| p.seq < *s && r.contains(p.timestamp)); // (C)
            if !deleted {
                cells.push(*p);
            }
        }
        let counted = rules.gc_rule.counts_versions() && !(self.tombstones.is_empty() && family_tombstones.is_empty());
        let versions = if counted {
            versions_over_history(&self.puts, &cells, &self.tombstones, family_tombstones)
        } else {
            (0..cells.len()).collect()
        };
        for (cell, version) in cells.iter().zip(versions) {
            if !rules.gc_rule.collects(version, cell.timestamp, rules.now) {
                live.push(cell.index); // (G)
            }
        }
        self.qualifier = None;
        self.tombstones.clear();
        self.puts.clear();
    }
}

/// Each live cell's version count: the most newer versions live at once at
/// any point since it was written. Live versions only grow between
/// tombstones, so the count is the largest of the cell's rank now and its
/// rank just before each tombstone took effect.
fn versions_over_history(puts: &[Put], cells: &[Put], tombstones: &[(u64, TimeRange)], families: &[u64]) -> Vec<usize> {
    // When each put was deleted, if it was: the first tombstone covering it.
    let deleted_at: Vec<u64> = puts
        .iter()
        .map(|p| {
            let by_family = families.iter().copied().filter(|&s| s > p.seq);
            let by_column = tombstones.iter().filter(|(s, r)| *s > p.seq && r.contains(p.timestamp)).map(|(s, _)| *s);
            by_family.chain(by_column).min().unwrap_or(u64::MAX)
        })
        .collect();
    let mut moments: Vec<u64> = tombstones.iter().map(|(s, _)| *s).chain(families.iter().copied()).collect();
    moments.sort_unstable();
    moments.dedup();
    let mut best: Vec<usize> = (0..cells.len()).collect();
    let mut live_then: Vec<i64> = Vec::new();
    for &moment in &moments {
        // Live timestamps just before `moment`, newest first: at each
        // timestamp the newest put written before it, unless deleted by then.
        live_then.clear();
        let mut last_ts = None;
        for (p, &deleted) in puts.iter().zip(&deleted_at) {
            if p.seq >= moment || last_ts == Some(p.timestamp) {
                continue;
            }
            last_ts = Some(p.timestamp);
            if deleted >= moment {
                live_then.push(p.timestamp);
            }
        }
        for (cell, best) in cells.iter().zip(best.iter_mut()) {
            if cell.seq < moment {
                *best = (*best).max(live_then.partition_point(|&t| t > cell.timestamp));
            }
        }
    }
    best
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
    fn deleting_newer_versions_never_brings_a_collected_cell_back() {
        let entries = vec![
            put("a", 1000, 1, "v1"),
            put("a", 2000, 2, "v2"),
            put("a", 3000, 3, "v3"),
            Entry::delete_column("r".into(), "a".into(), TimeRange::new(3000, 4000), 4),
        ];
        // v1 had two newer live versions once (after v3): max_versions(2) collected it.
        let got = assemble(entries.clone(), &GcRule::max_versions(2), u64::MAX);
        assert_eq!(got, vec![("a".into(), 2000, "v2".into())]);
        // Before v3 was written (snapshot 2) it was still there.
        let got = assemble(entries, &GcRule::max_versions(2), 2);
        assert_eq!(got, vec![("a".into(), 2000, "v2".into()), ("a".into(), 1000, "v1".into())]);
    }

    #[test]
    fn a_cell_written_after_a_delete_counts_only_what_lived_beside_it() {
        let entries = vec![
            put("a", 3000, 1, "old newest"),
            put("a", 2000, 2, "old"),
            Entry::delete_family("r".into(), 3),
            put("a", 1000, 4, "after the delete"),
        ];
        let got = assemble(entries, &GcRule::max_versions(1), u64::MAX);
        assert_eq!(got, vec![("a".into(), 1000, "after the delete".into())]);
    }
}
