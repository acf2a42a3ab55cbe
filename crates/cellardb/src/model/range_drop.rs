//! Dropped row ranges: Bigtable's `DropRowRange`, as a rule reads and
//! compaction apply.
//!
//! A drop deletes every entry of a row in its range with a sequence number
//! below its own, in every file and memtable, as a family tombstone per row
//! would. It is recorded once (in the manifest) rather than written per row,
//! and applied wherever a row is assembled until no file holds an entry it
//! deletes.

use bytes::Bytes;

/// A dropped range of rows of one store: every entry of a row in
/// `[start, end)` with a sequence number below `seq` is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeDrop {
    /// Store (one column family of one table).
    pub store: u32,
    /// First row key (empty: from the first row).
    pub start: Bytes,
    /// First row key past the range (`None`: to the last row).
    pub end: Option<Bytes>,
    /// The drop's sequence number.
    pub seq: u64,
    /// The log of the memtable taking writes when the range was dropped:
    /// memtables of that log or older may hold entries the drop deletes.
    pub log_number: u64,
}

impl RangeDrop {
    /// Whether `row` lies in the range.
    pub(crate) fn covers(&self, row: &[u8]) -> bool {
        row >= &self.start[..] && self.end.as_ref().is_none_or(|e| row < &e[..])
    }

    /// Whether the range meets rows `first..=last`.
    pub(crate) fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        last >= &self.start[..] && self.end.as_ref().is_none_or(|e| first < &e[..])
    }

    /// Whether the range holds every row `first..=last`.
    pub(crate) fn contains(&self, first: &[u8], last: &[u8]) -> bool {
        first >= &self.start[..] && self.end.as_ref().is_none_or(|e| last < &e[..])
    }

    /// Whether a file may hold an entry the drop deletes: a file of the
    /// drop's store, with rows `first..=last` meeting the range, whose
    /// oldest entry (`min_seq`) is older than the drop, and that no
    /// compaction has yet cleared of the drops up to `drops_applied`.
    pub(crate) fn may_delete_in(&self, store: u32, rows: (&[u8], &[u8]), min_seq: u64, drops_applied: u64) -> bool {
        store == self.store && drops_applied < self.seq && min_seq < self.seq && self.overlaps(rows.0, rows.1)
    }

    /// Whether the drop is spent and can be forgotten:
    /// (D1) no file may hold an entry it deletes (`held_by_a_file` false),
    /// and (D2) every memtable started after it (`oldest_log`, the log of
    /// the oldest memtable, is newer than the drop's), so no memtable holds
    /// an entry older than it either. Entries written later are newer than
    /// the drop, which never deletes them.
    pub(crate) fn is_spent(&self, held_by_a_file: bool, oldest_log: u64) -> bool {
        !held_by_a_file && oldest_log > self.log_number
    }
}

/// The sequence number below which `drops` delete `row`'s entries (0: none).
/// Inlined: a read asks it of every row, and mostly of no drop at all.
#[inline]
pub fn dropped_below(drops: &[RangeDrop], row: &[u8]) -> u64 {
    if drops.is_empty() {
        return 0;
    }
    drops.iter().filter(|d| d.covers(row)).map(|d| d.seq).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop(start: &str, end: Option<&str>, seq: u64) -> RangeDrop {
        RangeDrop {
            store: 1,
            start: Bytes::copy_from_slice(start.as_bytes()),
            end: end.map(|e| e.to_owned().into()),
            seq,
            log_number: 1,
        }
    }

    #[test]
    fn ranges_are_half_open_and_the_newest_drop_counts() {
        let drops = [drop("b", Some("d"), 5), drop("c", None, 9)];
        assert_eq!(dropped_below(&drops, b"a"), 0);
        assert_eq!(dropped_below(&drops, b"b"), 5);
        assert_eq!(dropped_below(&drops, b"c"), 9);
        assert_eq!(dropped_below(&drops, b"d"), 9);
        assert!(drops[0].overlaps(b"a", b"b") && !drops[0].overlaps(b"d", b"e"));
        assert!(drops[0].contains(b"b", b"c\xff") && !drops[0].contains(b"b", b"d"));
        assert!(drop("", None, 1).covers(b"\0"), "an empty start is the first row");
    }

    #[test]
    fn a_drop_matters_to_older_files_of_its_store_and_rows_until_spent() {
        let d = drop("b", Some("d"), 5);
        assert!(d.may_delete_in(1, (b"a", b"c"), 4, 0));
        assert!(!d.may_delete_in(2, (b"a", b"c"), 4, 0), "another store");
        assert!(!d.may_delete_in(1, (b"d", b"e"), 4, 0), "other rows");
        assert!(!d.may_delete_in(1, (b"a", b"c"), 5, 0), "only newer entries");
        assert!(!d.may_delete_in(1, (b"a", b"c"), 4, 5), "already applied");
        assert!(!d.is_spent(true, 2) && !d.is_spent(false, 1) && d.is_spent(false, 2));
    }
}
