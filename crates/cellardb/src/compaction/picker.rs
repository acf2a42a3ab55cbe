//! Which files a store compacts next: pure functions of the store's files.
//!
//! Two strategies share the machinery; `docs/compaction.md` measures them on
//! the balloon workload and says why the default is what it is.
//!
//! - **Leveled** (LevelDB, RocksDB): flushed files land in level 0 and may
//!   overlap; when `L0_TRIGGER` of them wait and they hold at least
//!   `1 / L0_RATIO` of the bytes of the level-1 files they overlap (or
//!   `L0_MAX_WAIT` of them wait), they merge with those files. Each level
//!   holds non-overlapping files and
//!   `LEVEL_MULTIPLIER` times the bytes of the one above; an overfull level
//!   pushes one file (the one overlapping least below) down.
//! - **Time-window** (Cassandra's TWCS): level-0 files merge into level 1 as
//!   one run of files per window of cell timestamps, merging with the files
//!   already in the windows they touch. A closed window is never rewritten,
//!   and an expired window is deleted whole. Tombstones live in a file of
//!   their own (window `TOMBSTONE_WINDOW`) so that no window file holds one.
//!
//! Both first delete whole any file whose every cell the family's GC rule
//! collects by age alone, if it holds no tombstone (a tombstone may still
//! have cells to delete elsewhere); then rewrite, alone and in place, any
//! file holding entries a dropped row range deletes.

use bytes::Bytes;

use crate::model::GcRule;
use crate::model::retain::file_expired;

/// Level-0 files that trigger a compaction (leveled: once they are also
/// big enough against what they overlap below, [`L0_RATIO`]).
pub const L0_TRIGGER: usize = 4;
/// Leveled: level 0 merges into level 1 once its bytes are at least this
/// fraction's inverse of the level-1 bytes it overlaps. Each merge rewrites
/// those level-1 files, so merging a fixed count of small flushed files
/// into a growing level 1 makes compaction's work per flushed byte grow
/// with the data (a compressed flush of a 64 MiB memtable is well under a
/// megabyte where level 1 holds tens); waiting for a share bounds it near
/// `L0_RATIO + 1`. RocksDB's tuning advice reaches the same end by sizing
/// level 1 like level 0 at its trigger.
pub const L0_RATIO: u64 = 8;
/// Leveled: level-0 files that merge whatever their size, well below the
/// count that slows writers (`db/compact.rs`), so that reads during ingest
/// never cross more than this many flushed files of a store.
pub const L0_MAX_WAIT: usize = 12;
/// Bytes of level 1 (leveled strategy) before it pushes files down.
pub const LEVEL_BASE: u64 = 256 << 20;
/// Growth of each level's size over the one above.
pub const LEVEL_MULTIPLIER: u64 = 10;
/// Deepest level.
pub const MAX_LEVEL: u8 = 6;
/// Bytes at which a compaction's output file is cut (at a row boundary),
/// unless `Options::target_file_size` says otherwise.
pub const TARGET_FILE_SIZE: u64 = 64 << 20;
/// Rows at which a compaction's output file is cut. A file's row filter is
/// built when the file ends, from a hash of each row (8 bytes) kept until
/// then; a table of small rows that compress well fits tens of millions
/// of rows in `TARGET_FILE_SIZE`, so this bounds that memory (8 MiB)
/// instead. A read takes a level's files one after another, as one
/// source of its merge (`read::run`).
pub const TARGET_FILE_ROWS: u64 = 1 << 20;
/// The window of a time-window file holding only tombstones.
pub const TOMBSTONE_WINDOW: i64 = i64::MAX;

/// How a store's files are compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionStrategy {
    /// Levels of non-overlapping files, each ten times the one above.
    #[default]
    Leveled,
    /// One run of files per window of cell timestamps.
    TimeWindow {
        /// Width of a window, µs.
        window_micros: i64,
    },
}

/// What the picker needs to know of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// File number.
    pub file: u64,
    /// Level.
    pub level: u8,
    /// Bytes on disk.
    pub size: u64,
    /// Whether the file may hold entries a dropped row range deletes.
    pub holds_dropped: bool,
    /// Largest sequence number (0: every row in it was written out whole
    /// by a compaction that saw all of the row's history).
    pub max_seq: u64,
    /// Smallest row key.
    pub first_row: Bytes,
    /// Largest row key.
    pub last_row: Bytes,
    /// Smallest and largest cell timestamps (`i64::MAX`, `i64::MIN` if no cell).
    pub min_timestamp: i64,
    /// See `min_timestamp`.
    pub max_timestamp: i64,
    /// Cells (puts).
    pub cells: u64,
    /// Tombstones.
    pub tombstones: u64,
}

impl FileInfo {
    fn overlaps(&self, first: &[u8], last: &[u8]) -> bool {
        &self.first_row[..] <= last && first <= &self.last_row[..]
    }

    /// The time window of a level-1 time-window file.
    fn window(&self, width: i64) -> i64 {
        if self.cells == 0 { TOMBSTONE_WINDOW } else { self.min_timestamp.div_euclid(width) }
    }
}

/// Where a compaction's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputLayout {
    /// One run in this level, cut at `TARGET_FILE_SIZE`.
    Level(u8),
    /// Level 1, one run per window of this many µs (tombstones apart).
    Windows(i64),
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Delete these files whole: the GC rule collects every cell in them.
    Drop(Vec<u64>),
    /// Merge these files into new ones.
    Merge {
        /// Input files.
        inputs: Vec<u64>,
        /// Where the output goes.
        layout: OutputLayout,
    },
}

/// The next compaction of a store with `files`, if any is due.
pub fn pick(files: &[FileInfo], gc_rule: &GcRule, now: i64, strategy: CompactionStrategy) -> Option<Choice> {
    let expired: Vec<u64> = files
        .iter()
        .filter(|f| file_expired(gc_rule, f.max_timestamp, f.cells, f.tombstones, now))
        .map(|f| f.file)
        .collect();
    if !expired.is_empty() {
        return Some(Choice::Drop(expired));
    }
    if let Some(f) = files.iter().find(|f| f.holds_dropped) {
        let layout = match strategy {
            CompactionStrategy::TimeWindow { window_micros } if f.level > 0 => {
                OutputLayout::Windows(window_micros.max(1))
            }
            _ => OutputLayout::Level(f.level),
        };
        return Some(Choice::Merge { inputs: vec![f.file], layout });
    }
    match strategy {
        CompactionStrategy::Leveled => pick_leveled(files),
        CompactionStrategy::TimeWindow { window_micros } => pick_windowed(files, window_micros.max(1)),
    }
}

/// A compaction of every file of the store (GC applied, tombstones
/// dropped); none if there are no files, or if they are already what it
/// would write: each row whole in one file (sequence numbers all 0), no
/// tombstone, no dropped range, and no GC rule that time could make
/// collect more.
pub fn pick_full(files: &[FileInfo], strategy: CompactionStrategy, gc_rule: &GcRule) -> Option<Choice> {
    let compact = |f: &FileInfo| f.level >= 1 && f.max_seq == 0 && f.tombstones == 0 && !f.holds_dropped;
    if files.is_empty() || (*gc_rule == GcRule::None && files.iter().all(compact)) {
        return None;
    }
    let inputs = files.iter().map(|f| f.file).collect();
    let layout = match strategy {
        CompactionStrategy::Leveled => {
            let bottom = files.iter().map(|f| f.level).max().unwrap_or(1).max(1);
            OutputLayout::Level(bottom)
        }
        CompactionStrategy::TimeWindow { window_micros } => OutputLayout::Windows(window_micros.max(1)),
    };
    Some(Choice::Merge { inputs, layout })
}

fn level0(files: &[FileInfo]) -> Vec<&FileInfo> {
    files.iter().filter(|f| f.level == 0).collect()
}

/// The row range `files` span.
fn span<'a>(files: &[&'a FileInfo]) -> Option<(&'a [u8], &'a [u8])> {
    let first = files.iter().map(|f| &f.first_row[..]).min()?;
    let last = files.iter().map(|f| &f.last_row[..]).max()?;
    Some((first, last))
}

fn pick_leveled(files: &[FileInfo]) -> Option<Choice> {
    let l0 = level0(files);
    if l0.len() >= L0_TRIGGER {
        let (first, last) = span(&l0)?;
        let below: Vec<&FileInfo> = files.iter().filter(|f| f.level == 1 && f.overlaps(first, last)).collect();
        let bytes = |fs: &[&FileInfo]| fs.iter().map(|f| f.size).sum::<u64>();
        if l0.len() >= L0_MAX_WAIT || bytes(&l0).saturating_mul(L0_RATIO) >= bytes(&below) {
            let inputs = l0.iter().chain(&below).map(|f| f.file).collect();
            return Some(Choice::Merge { inputs, layout: OutputLayout::Level(1) });
        }
    }
    let mut target = LEVEL_BASE;
    for level in 1..MAX_LEVEL {
        let here: Vec<&FileInfo> = files.iter().filter(|f| f.level == level).collect();
        if here.iter().map(|f| f.size).sum::<u64>() > target {
            let below: Vec<&FileInfo> = files.iter().filter(|f| f.level == level + 1).collect();
            let overlap = |f: &FileInfo| -> Vec<&FileInfo> {
                below.iter().copied().filter(|b| b.overlaps(&f.first_row, &f.last_row)).collect()
            };
            // The file that drags the fewest bytes from below along, per byte.
            let ratio = |f: &&FileInfo| overlap(f).iter().map(|b| b.size).sum::<u64>() as f64 / f.size.max(1) as f64;
            let chosen = here.iter().min_by(|a, b| ratio(a).total_cmp(&ratio(b)))?;
            let mut inputs = vec![chosen.file];
            inputs.extend(overlap(chosen).iter().map(|b| b.file));
            return Some(Choice::Merge { inputs, layout: OutputLayout::Level(level + 1) });
        }
        target = target.saturating_mul(LEVEL_MULTIPLIER);
    }
    None
}

fn pick_windowed(files: &[FileInfo], width: i64) -> Option<Choice> {
    let l0 = level0(files);
    let level1: Vec<&FileInfo> = files.iter().filter(|f| f.level >= 1).collect();
    if l0.len() >= L0_TRIGGER {
        let touched = |f: &FileInfo| {
            f.cells == 0 || {
                let w = f.window(width);
                l0.iter().any(|z| {
                    z.cells > 0 && z.min_timestamp.div_euclid(width) <= w && w <= z.max_timestamp.div_euclid(width)
                })
            }
        };
        let mut inputs: Vec<u64> = l0.iter().map(|f| f.file).collect();
        inputs.extend(level1.iter().filter(|f| touched(f)).map(|f| f.file));
        return Some(Choice::Merge { inputs, layout: OutputLayout::Windows(width) });
    }
    // A window whose files overlap (late data, or a change of width) merges.
    for (i, a) in level1.iter().enumerate() {
        let clash: Vec<u64> = level1[i..]
            .iter()
            .filter(|b| b.window(width) == a.window(width) && b.overlaps(&a.first_row, &a.last_row))
            .map(|b| b.file)
            .collect();
        if clash.len() > 1 {
            return Some(Choice::Merge { inputs: clash, layout: OutputLayout::Windows(width) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn file(file: u64, level: u8, size: u64, rows: (&str, &str), ts: (i64, i64)) -> FileInfo {
        FileInfo {
            file,
            level,
            size,
            first_row: Bytes::copy_from_slice(rows.0.as_bytes()),
            last_row: Bytes::copy_from_slice(rows.1.as_bytes()),
            min_timestamp: ts.0,
            max_timestamp: ts.1,
            cells: 10,
            tombstones: 0,
            holds_dropped: false,
            max_seq: 9,
        }
    }

    #[test]
    fn leveled_merges_level_zero_with_what_it_overlaps_below() {
        let mut files: Vec<FileInfo> = (1..=3).map(|i| file(i, 0, 10, ("b", "m"), (0, 0))).collect();
        files.push(file(10, 1, 100, ("a", "c"), (0, 0)));
        files.push(file(11, 1, 100, ("n", "z"), (0, 0)));
        assert_eq!(pick(&files, &GcRule::None, 0, CompactionStrategy::Leveled), None, "three files wait");
        files.push(file(4, 0, 10, ("d", "e"), (0, 0)));
        let choice = pick(&files, &GcRule::None, 0, CompactionStrategy::Leveled);
        assert_eq!(choice, Some(Choice::Merge { inputs: vec![1, 2, 3, 4, 10], layout: OutputLayout::Level(1) }));
    }

    #[test]
    fn level_zero_waits_until_it_is_a_share_of_what_it_rewrites() {
        let leveled = |files: &[FileInfo]| pick(files, &GcRule::None, 0, CompactionStrategy::Leveled);
        // Level 1 holds 100 bytes under the span; four files of 2 bytes
        // are 8, below an eighth of it.
        let mut files: Vec<FileInfo> = (1..=4).map(|i| file(i, 0, 2, ("b", "m"), (0, 0))).collect();
        files.push(file(20, 1, 100, ("a", "z"), (0, 0)));
        files.push(file(21, 1, 1000, ("x", "z"), (0, 0)));
        assert_eq!(leveled(&files), None);
        // Five more, 18 bytes in all: 144 ≥ 100. The level-1 file outside
        // the span is not counted, nor merged.
        files.extend((5..=9).map(|i| file(i, 0, 2, ("b", "m"), (0, 0))));
        let merged =
            Some(Choice::Merge { inputs: vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 20], layout: OutputLayout::Level(1) });
        assert_eq!(leveled(&files), merged);
        // However big level 1 (not overfull), L0_MAX_WAIT files merge.
        files.iter_mut().filter(|f| f.file == 20).for_each(|f| f.size = LEVEL_BASE / 2);
        assert_eq!(leveled(&files), None);
        files.extend((10..=L0_MAX_WAIT as u64).map(|i| file(i, 0, 2, ("b", "m"), (0, 0))));
        let Some(Choice::Merge { inputs, .. }) = leveled(&files) else { panic!("{L0_MAX_WAIT} files did not merge") };
        assert_eq!(inputs.len(), L0_MAX_WAIT + 1);
    }

    #[test]
    fn an_overfull_level_pushes_down_the_file_overlapping_least() {
        let files = vec![
            file(1, 1, LEVEL_BASE, ("a", "f"), (0, 0)),
            file(2, 1, LEVEL_BASE, ("g", "m"), (0, 0)),
            file(3, 2, 1000, ("a", "c"), (0, 0)),
            file(4, 2, 10, ("h", "i"), (0, 0)),
        ];
        let choice = pick(&files, &GcRule::None, 0, CompactionStrategy::Leveled);
        assert_eq!(choice, Some(Choice::Merge { inputs: vec![2, 4], layout: OutputLayout::Level(2) }));
    }

    #[test]
    fn windows_merge_level_zero_with_the_windows_it_touches_only() {
        let w = 100;
        let mut files: Vec<FileInfo> = (1..=4).map(|i| file(i, 0, 10, ("a", "z"), (250, 420))).collect();
        files.push(file(10, 1, 100, ("a", "z"), (100, 199)));
        files.push(file(11, 1, 100, ("a", "z"), (200, 299)));
        let strategy = CompactionStrategy::TimeWindow { window_micros: w };
        let choice = pick(&files, &GcRule::None, 0, strategy);
        assert_eq!(choice, Some(Choice::Merge { inputs: vec![1, 2, 3, 4, 11], layout: OutputLayout::Windows(w) }));
    }

    #[test]
    fn a_full_compaction_of_files_already_fully_compacted_is_skipped() {
        let mut files = vec![file(1, 2, 10, ("a", "f"), (0, 0)), file(2, 2, 10, ("g", "m"), (0, 0))];
        let leveled = CompactionStrategy::Leveled;
        let full = Some(Choice::Merge { inputs: vec![1, 2], layout: OutputLayout::Level(2) });
        assert_eq!(pick_full(&files, leveled, &GcRule::None), full, "sequence numbers left");
        for f in &mut files {
            f.max_seq = 0;
        }
        assert_eq!(pick_full(&files, leveled, &GcRule::None), None);
        assert_eq!(pick_full(&files, leveled, &GcRule::max_versions(1)), full, "a GC rule may collect more");
        files[0].tombstones = 1;
        assert_eq!(pick_full(&files, leveled, &GcRule::None), full);
    }

    #[test]
    fn a_file_holding_dropped_rows_is_rewritten_alone_in_place() {
        let mut files = vec![file(1, 1, 10, ("a", "f"), (0, 0)), file(2, 1, 10, ("g", "m"), (0, 0))];
        assert_eq!(pick(&files, &GcRule::None, 0, CompactionStrategy::Leveled), None);
        files[1].holds_dropped = true;
        let choice = pick(&files, &GcRule::None, 0, CompactionStrategy::Leveled);
        assert_eq!(choice, Some(Choice::Merge { inputs: vec![2], layout: OutputLayout::Level(1) }));
    }

    #[test]
    fn files_wholly_expired_by_age_are_dropped_unless_they_hold_tombstones() {
        let hour = 3_600_000_000;
        let now = 100 * hour;
        let rule = GcRule::union([GcRule::max_versions(3), GcRule::max_age(Duration::from_secs(3600))]);
        let mut old = file(1, 1, 10, ("a", "z"), (0, now - 2 * hour));
        let fresh = file(2, 1, 10, ("a", "z"), (0, now));
        assert_eq!(
            pick(&[old.clone(), fresh.clone()], &rule, now, CompactionStrategy::Leveled),
            Some(Choice::Drop(vec![1]))
        );
        old.tombstones = 1;
        assert_eq!(pick(&[old, fresh], &rule, now, CompactionStrategy::Leveled), None);
        let both = GcRule::intersection([GcRule::max_versions(3), GcRule::max_age(Duration::from_secs(3600))]);
        let old = file(1, 1, 10, ("a", "z"), (0, now - 2 * hour));
        assert_eq!(pick(&[old], &both, now, CompactionStrategy::Leveled), None, "age alone does not collect");
    }
}
