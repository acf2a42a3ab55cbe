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
//! - (A) in an aggregate family, every cell entry is an input instead, and
//!   the inputs at one timestamp that (F) and (C) leave are merged into one
//!   cell (the newest input stands for it);
//! - (V) `max_versions(n)` *counts out*, for good, a cell pushed out of its
//!   column's `n` newest cells not yet counted out, after any mutation;
//! - (G) the family's GC rule collects a cell by whether it was counted out
//!   and by its age at the read's clock.
//!
//! (V) makes collection by versions an event that is never undone, as if
//! garbage collection ran after every mutation: deleting the newest versions
//! later does not bring older ones back, and a counted-out cell no longer
//! counts against cells written after. Everything compaction removes is
//! then counted out already, or removed by age under a union, where every
//! cell it could count against is older and so past `max_age` too — which
//! is why reads never depend on what compaction removed (the anomaly HBase
//! documents, a partial compaction changing what `max_versions` keeps, cannot
//! happen). Without deletes, (V) is simply the cell's rank; with them, the
//! history is replayed in sequence order. A rule names at most one limit.
//!
//! Tombstones precede what they delete in key order (see `key.rs`).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::key::{EntryKind, EntryRef};
use crate::model::aggregate::decode_i64;
use crate::model::{Aggregate, GcRule, TimeRange};

/// What assembly needs to know about a family.
#[derive(Debug, Clone)]
pub(crate) struct FamilyRules<'a> {
    pub gc_rule: &'a GcRule,
    /// The read's snapshot: highest sequence number visible.
    pub snapshot: u64,
    /// Wall-clock time of the read, µs, for age-based GC.
    pub now: i64,
    /// A dropped row range covering this row deletes its entries below this
    /// sequence number (0: none), as a family tombstone would.
    pub dropped_below: u64,
    /// The family's aggregate, if it is an aggregate family (rule A).
    pub aggregate: Option<Aggregate>,
}

/// What assembly found for one live cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveCell {
    /// Index of its entry.
    pub index: usize,
    /// Whether `max_versions` counted it out (and the rest of the rule kept it).
    pub counted_out: bool,
    /// In an aggregate family, the cell's value: its inputs merged.
    pub merged: Option<i64>,
}

/// Assembles rows family by family, keeping its buffers from one family
/// to the next so that a read or a compaction allocates nothing per row
/// for them.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    family_tombstones: Vec<u64>,
    tombstones: Vec<(u64, TimeRange)>,
    puts: Vec<Put>,
    survivors: Vec<Put>,
}

impl Assembler {
    /// Appends to `live` the live cells among one family's entries (one
    /// row, key order, each with its index).
    pub fn family<'e>(
        &mut self,
        entries: impl IntoIterator<Item = (usize, EntryRef<'e>)>,
        rules: &FamilyRules<'_>,
        live: &mut Vec<LiveCell>,
    ) {
        let mut family_tombstones = std::mem::take(&mut self.family_tombstones);
        family_tombstones.clear();
        if rules.dropped_below > 0 && rules.dropped_below <= rules.snapshot {
            family_tombstones.push(rules.dropped_below);
        }
        let mut column = Column {
            qualifier: None,
            tombstones: std::mem::take(&mut self.tombstones),
            puts: std::mem::take(&mut self.puts),
            survivors: std::mem::take(&mut self.survivors),
        };
        column.reset();
        for (index, e) in entries {
            if e.seq > rules.snapshot {
                continue; // (S)
            }
            if e.kind == EntryKind::DeleteFamily {
                family_tombstones.push(e.seq);
                continue;
            }
            if column.qualifier != Some(e.qualifier) {
                column.finish(&family_tombstones, rules, live);
                column.qualifier = Some(e.qualifier);
            }
            if e.kind.is_cell() {
                let counted_out = e.kind == EntryKind::PutCountedOut;
                let input = match rules.aggregate {
                    None => 0,
                    // Writes to an aggregate family are checked to be 8 bytes.
                    Some(_) => match decode_i64(e.value) {
                        Some(input) => input,
                        None => continue,
                    },
                };
                column.puts.push(Put { index, timestamp: e.timestamp, seq: e.seq, counted_out, input });
            } else if let Some((start, end)) = e.deleted_span() {
                column.tombstones.push((e.seq, TimeRange::from_span((start, end))));
            }
        }
        column.finish(&family_tombstones, rules, live);
        self.family_tombstones = family_tombstones;
        self.tombstones = column.tombstones;
        self.puts = column.puts;
        self.survivors = column.survivors;
    }
}

impl FamilyRules<'_> {
    /// Whether the rules can only take whole families or keep them as they
    /// are, never a single cell by the history around it: no aggregate, no
    /// dropped range, no `max_versions`.
    fn keep_plain_histories(&self) -> bool {
        self.aggregate.is_none() && self.dropped_below == 0 && self.gc_rule.version_limit().is_none()
    }
}

impl Assembler {
    /// Appends every entry of one family (one row, key order, each with its
    /// index) to `live` if assembly keeps each as it is: plain cells the
    /// snapshot sees, no two at one timestamp of a column, and rules that
    /// collect none of them. Says whether it did; if not (a tombstone, an
    /// overwrite, a rule that counts versions...), `live` is unchanged and
    /// [`Assembler::family`] decides. A compacted time series read whole is
    /// this case, and the check costs a comparison or two an entry.
    pub fn family_unchanged<'e>(
        entries: impl IntoIterator<Item = (usize, EntryRef<'e>)> + Clone,
        rules: &FamilyRules<'_>,
        live: &mut Vec<LiveCell>,
    ) -> bool {
        if !rules.keep_plain_histories() {
            return false;
        }
        let collects_nothing = matches!(rules.gc_rule, GcRule::None);
        let mut previous: Option<EntryRef<'e>> = None;
        for (_, e) in entries.clone() {
            let overwrite = previous.is_some_and(|p| p.qualifier == e.qualifier && p.timestamp <= e.timestamp);
            if e.kind != EntryKind::Put
                || e.seq > rules.snapshot
                || overwrite
                || (!collects_nothing && rules.gc_rule.collects(0, e.timestamp, rules.now))
            {
                return false;
            }
            previous = Some(e);
        }
        live.extend(entries.into_iter().map(|(index, _)| LiveCell { index, counted_out: false, merged: None }));
        true
    }
}

/// A put of the column being assembled.
#[derive(Debug, Clone, Copy)]
struct Put {
    index: usize,
    timestamp: i64,
    seq: u64,
    /// Stored counted out (by a compaction that discarded the history).
    counted_out: bool,
    /// In an aggregate family, the input it holds.
    input: i64,
}

/// The entries of one column, gathered until the column ends.
#[derive(Debug)]
struct Column<'e> {
    qualifier: Option<&'e [u8]>,
    tombstones: Vec<(u64, TimeRange)>,
    /// In key order: timestamp descending, then sequence descending.
    puts: Vec<Put>,
    /// Scratch for `finish`, kept to reuse its allocation.
    survivors: Vec<Put>,
}

impl Column<'_> {
    /// Decides the gathered column's cells and resets it.
    fn finish(&mut self, family_tombstones: &[u64], rules: &FamilyRules<'_>, live: &mut Vec<LiveCell>) {
        let deleted_below = family_tombstones.iter().copied().max().unwrap_or(0);
        if let [p] = self.puts[..]
            && self.tombstones.is_empty()
            && p.seq >= deleted_below
        {
            // One cell and no delete (a tall row's column): the rules below
            // come down to (V) keeping a stored count-out and (G).
            let counted_out = p.counted_out && rules.gc_rule.version_limit().is_some();
            let version = if counted_out { usize::MAX } else { 0 };
            if !rules.gc_rule.collects(version, p.timestamp, rules.now) {
                live.push(LiveCell { index: p.index, counted_out, merged: rules.aggregate.map(|_| p.input) });
            }
            self.reset();
            return;
        }
        let is_deleted = |p: &Put| {
            p.seq < deleted_below // (F)
                || self.tombstones.iter().any(|(s, r)| p.seq < *s && r.contains_micros(p.timestamp)) // (C)
        };
        // The surviving entries, grouped by timestamp: one per group in a
        // plain family, every input left in an aggregate family.
        let mut survivors = std::mem::take(&mut self.survivors);
        survivors.clear();
        for (i, p) in self.puts.iter().enumerate() {
            if rules.aggregate.is_none() && i > 0 && self.puts[i - 1].timestamp == p.timestamp {
                continue; // (D)
            }
            if !is_deleted(p) {
                survivors.push(*p);
            }
        }
        let out = match rules.gc_rule.version_limit() {
            None => CountedOut::None,
            Some(n)
                if self.tombstones.is_empty()
                    && family_tombstones.is_empty()
                    && !self.puts.iter().any(|p| p.counted_out) =>
            {
                CountedOut::ByRank(n as usize)
            }
            Some(n) => CountedOut::Inputs(counted_out_by_history(
                &self.puts,
                &self.tombstones,
                family_tombstones,
                n as usize,
                rules.aggregate.is_some(),
            )),
        };
        for (rank, group) in survivors.chunk_by(|a, b| a.timestamp == b.timestamp).enumerate() {
            let is_out = |p: &Put| match &out {
                CountedOut::None => false,
                CountedOut::ByRank(n) => rank >= *n,
                CountedOut::Inputs(set) => set.contains(&(p.timestamp, p.seq)),
            };
            // A cell counted out stays so; inputs written to its timestamp
            // after that make a new cell without it. The cell is then its
            // inputs not counted out, or, if all are, all of them.
            let counted_out = group.iter().all(is_out);
            let mut inputs = group.iter().filter(|p| counted_out || !is_out(p));
            let Some(newest) = inputs.next() else { continue };
            let version = if counted_out { usize::MAX } else { 0 };
            if !rules.gc_rule.collects(version, newest.timestamp, rules.now) {
                let merged = rules.aggregate.map(|agg| inputs.fold(newest.input, |v, p| agg.merge(v, p.input)));
                live.push(LiveCell { index: newest.index, counted_out, merged }); // (G)
            }
        }
        self.survivors = survivors;
        self.reset();
    }

    /// Empties the column for the next one, keeping its buffers.
    fn reset(&mut self) {
        self.qualifier = None;
        self.tombstones.clear();
        self.puts.clear();
    }
}

/// Which cells rule (V) counted out.
enum CountedOut {
    /// No `max_versions`.
    None,
    /// All but the newest `n` timestamps (no deletes in the history).
    ByRank(usize),
    /// The inputs (timestamp, sequence) the replayed history counted out.
    Inputs(HashSet<(i64, u64)>),
}

/// The entries rule (V) counted out, as (timestamp, sequence), replaying
/// the column's history in sequence order: after each mutation, the
/// column's newest `n` cells not counted out stay, the others are counted
/// out for good. In an aggregate family a cell is the inputs at its
/// timestamp, all counted out together.
fn counted_out_by_history(
    puts: &[Put],
    tombstones: &[(u64, TimeRange)],
    families: &[u64],
    n: usize,
    aggregate: bool,
) -> HashSet<(i64, u64)> {
    enum Event {
        Put(Put),
        Column(TimeRange),
        Family,
    }
    let mut events: Vec<(u64, Event)> = puts.iter().map(|p| (p.seq, Event::Put(*p))).collect();
    events.extend(tombstones.iter().map(|(s, r)| (*s, Event::Column(*r))));
    events.extend(families.iter().map(|s| (*s, Event::Family)));
    events.sort_by_key(|(seq, _)| *seq);

    // The entries present at each timestamp (their sequences), the newest
    // `n` timestamps not counted out, and the entries counted out.
    let mut current: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    let mut top: BTreeSet<i64> = BTreeSet::new();
    let mut out: HashSet<(i64, u64)> = HashSet::new();
    let mut i = 0;
    while i < events.len() {
        let seq = events[i].0;
        while i < events.len() && events[i].0 == seq {
            match &events[i].1 {
                Event::Put(p) if aggregate => {
                    if p.counted_out {
                        out.insert((p.timestamp, p.seq));
                    } else {
                        current.entry(p.timestamp).or_default().push(p.seq);
                        top.insert(p.timestamp);
                    }
                }
                Event::Put(p) => {
                    top.remove(&p.timestamp);
                    current.insert(p.timestamp, vec![p.seq]);
                    if p.counted_out {
                        out.insert((p.timestamp, p.seq));
                    } else {
                        top.insert(p.timestamp);
                    }
                }
                Event::Column(range) => {
                    for (ts, seqs) in current.iter_mut().filter(|(ts, _)| range.contains_micros(**ts)) {
                        seqs.retain(|s| *s >= seq);
                        if seqs.is_empty() {
                            top.remove(ts);
                        }
                    }
                    current.retain(|_, seqs| !seqs.is_empty());
                }
                Event::Family => {
                    for seqs in current.values_mut() {
                        seqs.retain(|s| *s >= seq);
                    }
                    current.retain(|_, seqs| !seqs.is_empty());
                    top.retain(|ts| current.contains_key(ts));
                }
            }
            i += 1;
        }
        while top.len() > n {
            let Some(oldest) = top.pop_first() else { break };
            let seqs = if aggregate { current.remove(&oldest) } else { current.get(&oldest).cloned() };
            out.extend(seqs.unwrap_or_default().into_iter().map(|s| (oldest, s)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::key::Entry;

    fn rules(gc: &GcRule, snapshot: u64) -> FamilyRules<'_> {
        FamilyRules { gc_rule: gc, snapshot, now: 0, dropped_below: 0, aggregate: None }
    }

    fn assemble(mut entries: Vec<Entry>, gc: &GcRule, snapshot: u64) -> Vec<(String, i64, String)> {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let mut live = Vec::new();
        Assembler::default().family(entries.iter().map(Entry::as_ref).enumerate(), &rules(gc, snapshot), &mut live);
        live.iter()
            .map(|c| {
                let e = &entries[c.index];
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
            Entry::delete_column("r".into(), "b".into(), TimeRange::new(0, 3000).span(), 5),
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
            Entry::delete_column("r".into(), "a".into(), TimeRange::new(3000, 4000).span(), 4),
        ];
        // v1 had two newer live versions once (after v3): max_versions(2) collected it.
        let got = assemble(entries.clone(), &GcRule::max_versions(2), u64::MAX);
        assert_eq!(got, vec![("a".into(), 2000, "v2".into())]);
        // Before v3 was written (snapshot 2) it was still there.
        let got = assemble(entries, &GcRule::max_versions(2), 2);
        assert_eq!(got, vec![("a".into(), 2000, "v2".into()), ("a".into(), 1000, "v1".into())]);
    }

    /// Seed 45 of the model test: a counted-out cell does not count against
    /// a cell written after the newer ones were deleted.
    #[test]
    fn a_counted_out_cell_never_counts_against_later_cells() {
        let entries = vec![
            put("q", 1000, 1, "counted out"),
            put("q", 9000, 2, "newest"),
            Entry::delete_column("r".into(), "q".into(), TimeRange::since(5000).span(), 3),
            put("q", 0, 4, "written last"),
        ];
        let got = assemble(entries, &GcRule::max_versions(1), u64::MAX);
        assert_eq!(got, vec![("q".into(), 0, "written last".into())]);
    }

    #[test]
    fn a_cell_stored_counted_out_stays_counted_out() {
        let mut entries = vec![
            put("q", 5000, 0, "kept"),
            Entry {
                key: crate::key::InternalKey { kind: EntryKind::PutCountedOut, ..put("q", 3000, 0, "").key },
                value: "out".into(),
            },
            put("q", 1000, 7, "new"),
        ];
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let hour = Duration::from_secs(3600);
        // Counted out, but an intersection with max_age keeps a young cell.
        let young = GcRule::intersection([GcRule::max_versions(2), GcRule::max_age(hour)]);
        let now = 1_000_000;
        let rules = FamilyRules { gc_rule: &young, snapshot: u64::MAX, now, dropped_below: 0, aggregate: None };
        let mut live = Vec::new();
        Assembler::default().family(entries.iter().map(Entry::as_ref).enumerate(), &rules, &mut live);
        let out: Vec<bool> = live.iter().map(|c| c.counted_out).collect();
        assert_eq!(out, vec![false, true, false], "the stored flag holds; the newcomer has room beside one cell");
        assert_eq!(assemble(entries, &GcRule::max_versions(2), u64::MAX).len(), 2);
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

    fn assemble_sum(mut entries: Vec<Entry>, gc: &GcRule) -> Vec<(i64, i64)> {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let rules = FamilyRules { aggregate: Some(Aggregate::Sum), ..rules(gc, u64::MAX) };
        let mut live = Vec::new();
        Assembler::default().family(entries.iter().map(Entry::as_ref).enumerate(), &rules, &mut live);
        live.iter().map(|c| (entries[c.index].key.timestamp, c.merged.unwrap())).collect()
    }

    fn input(ts: i64, seq: u64, n: i64) -> Entry {
        Entry::put("r".into(), "q".into(), ts, seq, n.to_be_bytes().to_vec().into())
    }

    #[test]
    fn aggregate_inputs_at_a_timestamp_merge_and_deletes_reset_them() {
        let entries = vec![input(1000, 1, 5), input(1000, 2, 3), input(2000, 3, 7)];
        assert_eq!(assemble_sum(entries.clone(), &GcRule::None), vec![(2000, 7), (1000, 8)]);
        let mut deleted = entries;
        deleted.push(Entry::delete_column("r".into(), "q".into(), TimeRange::new(1000, 1001).span(), 4));
        deleted.push(input(1000, 5, 2));
        assert_eq!(assemble_sum(deleted, &GcRule::None), vec![(2000, 7), (1000, 2)]);
    }

    /// Inputs of a cell counted out are collected with it: an input written
    /// to its timestamp after newer cells were deleted starts a new cell.
    #[test]
    fn a_counted_out_aggregate_cell_does_not_lend_its_inputs_to_a_new_one() {
        let entries = vec![
            input(1000, 1, 5),
            input(2000, 2, 7),
            Entry::delete_column("r".into(), "q".into(), TimeRange::new(2000, 3000).span(), 3),
            input(1000, 4, 1),
        ];
        assert_eq!(assemble_sum(entries.clone(), &GcRule::max_versions(1)), vec![(1000, 1)]);
        assert_eq!(assemble_sum(entries, &GcRule::max_versions(2)), vec![(1000, 6)]);
    }

    /// Whenever the plain path takes a family, it keeps what full assembly
    /// keeps; it declines anything assembly would change. Families drawn at
    /// random: one to three columns, puts with repeated timestamps and
    /// sequences above the snapshot, now and then a tombstone, under rules
    /// with and without versions and ages, and dropped ranges.
    #[test]
    fn the_plain_path_keeps_exactly_what_assembly_keeps() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let rules_pool = [
            GcRule::None,
            GcRule::max_age(Duration::from_millis(500)),
            GcRule::max_versions(2),
            GcRule::union([GcRule::max_versions(1), GcRule::max_age(Duration::from_millis(500))]),
        ];
        let (mut taken, mut declined) = (0, 0);
        for _ in 0..4000 {
            // Half the families are histories written once, which the
            // plain path should take unless the rule collects a cell.
            let once = next(2) == 0;
            let mut entries = Vec::new();
            for seq in 1..=(1 + next(12)) {
                let q = ["a", "b", "c"][usize::try_from(next(3)).unwrap()];
                let ts = 1000 * if once { seq } else { next(6) }.cast_signed();
                entries.push(match next(if once { 1000 } else { 20 }) {
                    0 => Entry::delete_family("r".into(), seq),
                    1 => Entry::delete_column("r".into(), q.into(), TimeRange::new(0, 3000).span(), seq),
                    _ => Entry::put("r".into(), q.into(), ts, seq, format!("v{seq}").into()),
                });
            }
            entries.sort_by(|a, b| a.key.cmp(&b.key));
            let gc = &rules_pool[usize::try_from(next(4)).unwrap()];
            let rules = FamilyRules {
                gc_rule: gc,
                snapshot: if once { 20 } else { 4 + next(10) },
                now: 1_000_000 + 1000 * next(4).cast_signed(),
                dropped_below: if next(8) == 0 { 3 } else { 0 },
                aggregate: None,
            };
            let indexed = || entries.iter().map(Entry::as_ref).enumerate();
            let (mut plain, mut full) = (Vec::new(), Vec::new());
            Assembler::default().family(indexed(), &rules, &mut full);
            if Assembler::family_unchanged(indexed(), &rules, &mut plain) {
                assert_eq!(plain, full, "{entries:?} under {gc:?}");
                assert_eq!(plain.len(), entries.len(), "the plain path keeps every entry");
                taken += 1;
            } else {
                assert!(plain.is_empty());
                declined += 1;
            }
        }
        assert!(taken > 300 && declined > 300, "taken {taken}, declined {declined}");
    }
}
