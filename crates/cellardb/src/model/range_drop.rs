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
    pub fn covers(&self, row: &[u8]) -> bool {
        row >= &self.start[..] && self.end.as_ref().is_none_or(|e| row < &e[..])
    }

    /// Whether the range meets rows `first..=last`.
    pub fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        last >= &self.start[..] && self.end.as_ref().is_none_or(|e| first < &e[..])
    }

    /// Whether the range holds every row `first..=last`.
    pub fn contains(&self, first: &[u8], last: &[u8]) -> bool {
        first >= &self.start[..] && self.end.as_ref().is_none_or(|e| last < &e[..])
    }
}

/// The sequence number below which `drops` delete `row`'s entries (0: none).
pub fn dropped_below(drops: &[RangeDrop], row: &[u8]) -> u64 {
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
}
