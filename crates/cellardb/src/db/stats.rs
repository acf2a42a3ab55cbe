//! What the engine reports about itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Core;
use crate::Result;
use crate::model::TableMeta;
use crate::version::SuperVersion;
use crate::wal::TornTail;

/// What opening the database recovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Log files replayed.
    pub logs_replayed: u64,
    /// Intact records replayed from them.
    pub records_replayed: u64,
    /// Damaged log tails cut off (a write torn by a crash).
    pub torn_tails: Vec<TornTail>,
    /// Files removed: SSTables no manifest named, obsolete logs, a partial manifest.
    pub removed_files: Vec<String>,
}

/// Running totals since open.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    logical: AtomicU64,
    wal: AtomicU64,
    flushed: AtomicU64,
    compaction_read: AtomicU64,
    compaction_written: AtomicU64,
    blocks_copied: AtomicU64,
    entries_passed: AtomicU64,
    stall_micros: AtomicU64,
    expired_at_write: AtomicU64,
}

impl Counters {
    pub fn add_logical(&self, n: u64) {
        self.logical.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_wal(&self, n: u64) {
        self.wal.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_flushed(&self, n: u64) {
        self.flushed.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_compaction(&self, read: u64, written: u64) {
        self.compaction_read.fetch_add(read, Ordering::Relaxed);
        self.compaction_written.fetch_add(written, Ordering::Relaxed);
    }

    pub fn add_passed(&self, blocks_copied: u64, entries: u64) {
        self.blocks_copied.fetch_add(blocks_copied, Ordering::Relaxed);
        self.entries_passed.fetch_add(entries, Ordering::Relaxed);
    }

    pub fn add_expired_at_write(&self, n: u64) {
        self.expired_at_write.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_stall(&self, d: Duration) {
        self.stall_micros.fetch_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// A snapshot of the engine's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Per table, sorted by name.
    pub tables: Vec<TableStats>,
    /// Bytes in the memtable taking writes.
    pub memtable_bytes: u64,
    /// Frozen memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Highest sequence number visible to reads.
    pub last_sequence: u64,
    /// Logical bytes written since open (row + family + qualifier + value + 8 per entry).
    pub logical_bytes_written: u64,
    /// Bytes appended to the write-ahead log since open.
    pub wal_bytes_written: u64,
    /// Bytes of SSTables written by flushes since open.
    pub flush_bytes_written: u64,
    /// Bytes of SSTables compactions read since open.
    pub compaction_bytes_read: u64,
    /// Bytes of SSTables compactions wrote since open.
    pub compaction_bytes_written: u64,
    /// Data blocks compactions copied into their output as stored, since
    /// open: blocks of rows no other input touched (`docs/compaction.md`).
    pub compaction_blocks_copied: u64,
    /// Entries compactions wrote without merging them, since open: those
    /// of the copied blocks, and others of such rows added one by one.
    pub compaction_entries_passed: u64,
    /// Bytes written to disk (log, flushes, compactions) per logical byte
    /// written, since open.
    pub write_amplification: f64,
    /// Bytes of SSTables per byte of the deepest level of each family (1.0
    /// when each family is one run; how RocksDB estimates it).
    pub space_amplification: f64,
    /// Time writers spent stalled waiting for flushes since open.
    pub stall_time: Duration,
    /// Cells written since open that their family's GC rule collected at
    /// once: a timestamp older than the family's `max_age` at the time of
    /// the write. Such a write succeeds, and its cell is never read.
    pub cells_expired_at_write: u64,
    /// Bytes of decoded blocks in the block cache.
    pub block_cache_bytes: u64,
    /// Block cache hits and misses since open.
    pub block_cache_hits: u64,
    /// Block cache misses since open.
    pub block_cache_misses: u64,
    /// What opening recovered.
    pub recovery: RecoveryReport,
}

/// One table's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStats {
    /// Table name.
    pub name: String,
    /// Per family, in name order.
    pub families: Vec<FamilyStats>,
}

/// The files of one level of one family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelStats {
    /// Level (0: flushed, may overlap).
    pub level: u8,
    /// Files.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Logical bytes they hold.
    pub logical_bytes: u64,
}

/// One family's figures (SSTables only; the memtable is counted apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyStats {
    /// Family name.
    pub name: String,
    /// Live SSTables.
    pub sst_files: usize,
    /// Bytes of those files.
    pub sst_bytes: u64,
    /// Logical bytes they hold.
    pub logical_bytes: u64,
    /// Cells they hold (before deletes and GC are applied).
    pub cells: u64,
    /// Tombstones they hold.
    pub tombstones: u64,
    /// Data blocks read from disk (decompressed, and decoded whole or, for
    /// a read of one row, in part) since open.
    pub blocks_decoded: u64,
    /// Files and bytes per level, levels in order, empty levels left out.
    pub levels: Vec<LevelStats>,
}

impl TableStats {
    pub(crate) fn of(table: &TableMeta, sv: &SuperVersion) -> TableStats {
        let families = table
            .families
            .iter()
            .map(|f| {
                let files = sv.files_of(f.store);
                let props = files.iter().map(|h| h.reader.props());
                FamilyStats {
                    name: f.name.clone(),
                    sst_files: files.len(),
                    sst_bytes: files.iter().map(|h| h.meta.size).sum(),
                    logical_bytes: props.clone().map(|p| p.logical_bytes).sum(),
                    cells: props.clone().map(|p| p.cells).sum(),
                    tombstones: props.map(|p| p.tombstones).sum(),
                    blocks_decoded: files.iter().map(|h| h.reader.blocks_decoded()).sum(),
                    levels: levels_of(files),
                }
            })
            .collect();
        TableStats { name: table.name.clone(), families }
    }

    /// Bytes of the table's SSTables.
    pub fn sst_bytes(&self) -> u64 {
        self.families.iter().map(|f| f.sst_bytes).sum()
    }
}

fn levels_of(files: &[std::sync::Arc<crate::version::SstHandle>]) -> Vec<LevelStats> {
    let mut levels: Vec<LevelStats> = Vec::new();
    for h in files {
        let level = h.meta.level;
        let i = levels.iter().position(|l| l.level == level).unwrap_or_else(|| {
            levels.push(LevelStats { level, files: 0, bytes: 0, logical_bytes: 0 });
            levels.len() - 1
        });
        levels[i].files += 1;
        levels[i].bytes += h.meta.size;
        levels[i].logical_bytes += h.reader.props().logical_bytes;
    }
    levels.sort_by_key(|l| l.level);
    levels
}

/// The engine's figures now (`Db::stats`).
pub(super) fn stats_of(core: &Core) -> Result<Stats> {
    let sv = core.view()?;
    let mut tables: Vec<TableStats> = sv.schema.tables.iter().map(|t| TableStats::of(t, &sv)).collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    let (hits, misses) = core.cache.hit_counts();
    let c = &core.counters;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let written = load(&c.wal) + load(&c.flushed) + load(&c.compaction_written);
    let logical = load(&c.logical);
    let families = tables.iter().flat_map(|t| &t.families);
    let all: u64 = families.clone().map(|f| f.sst_bytes).sum();
    let deepest: u64 = families.filter_map(|f| f.levels.last()).map(|l| l.bytes).sum();
    Ok(Stats {
        tables,
        memtable_bytes: sv.mem.approximate_bytes() as u64,
        immutable_memtables: sv.imm.len(),
        last_sequence: core.visible_seq.load(Ordering::Acquire),
        logical_bytes_written: c.logical.load(Ordering::Relaxed),
        wal_bytes_written: c.wal.load(Ordering::Relaxed),
        flush_bytes_written: c.flushed.load(Ordering::Relaxed),
        compaction_bytes_read: load(&c.compaction_read),
        compaction_bytes_written: load(&c.compaction_written),
        compaction_blocks_copied: load(&c.blocks_copied),
        compaction_entries_passed: load(&c.entries_passed),
        write_amplification: if logical == 0 { 0.0 } else { written as f64 / logical as f64 },
        space_amplification: if deepest == 0 { 1.0 } else { all as f64 / deepest as f64 },
        stall_time: Duration::from_micros(c.stall_micros.load(Ordering::Relaxed)),
        cells_expired_at_write: load(&c.expired_at_write),
        block_cache_bytes: core.cache.used_bytes() as u64,
        block_cache_hits: hits,
        block_cache_misses: misses,
        recovery: core.recovery.clone(),
    })
}
