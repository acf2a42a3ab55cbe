//! How a database is opened: durability, memtable and block sizes, compression.

use std::sync::Arc;

use crate::compaction::CompactionStrategy;
use crate::fs::{Fs, OsFs};
pub use crate::sst::Compression;

/// When a write is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Acknowledged once the write-ahead log record is handed to the operating
    /// system: survives a crash of the process, not a power loss.
    #[default]
    Buffered,
    /// Acknowledged only after `fdatasync` of the write-ahead log: survives a
    /// power loss. Concurrent writers share one write and one sync.
    Sync,
}

/// What recovery does with a write-ahead log whose last record is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    /// Cut the log at the last good record when the damage is at its tail (a
    /// write torn by a crash), report it in [`crate::Stats`] and the log, and
    /// open. Damage followed by intact records is still `Error::Corruption`.
    #[default]
    TolerateCorruptTail,
    /// Any damaged record is `Error::Corruption`.
    AbsoluteConsistency,
}

/// Settings for [`Options::open`]. Every setter returns the options, so they chain.
#[derive(Debug, Clone)]
#[must_use = "options do nothing until a database is opened with them"]
pub struct Options {
    pub(crate) durability: Durability,
    pub(crate) memtable_size: usize,
    pub(crate) max_immutable_memtables: usize,
    pub(crate) block_size: usize,
    pub(crate) block_entries: Option<usize>,
    pub(crate) dictionary: Option<usize>,
    pub(crate) block_cache_size: usize,
    pub(crate) target_file_size: u64,
    pub(crate) compression: Compression,
    pub(crate) recovery: RecoveryMode,
    pub(crate) compaction: CompactionStrategy,
    pub(crate) fs: Arc<dyn Fs>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::default(),
            memtable_size: 64 << 20,
            max_immutable_memtables: 2,
            block_size: 16 << 10,
            block_entries: None,
            dictionary: None,
            block_cache_size: 64 << 20,
            target_file_size: crate::compaction::picker::TARGET_FILE_SIZE,
            compression: Compression::default(),
            recovery: RecoveryMode::default(),
            compaction: CompactionStrategy::default(),
            fs: Arc::new(OsFs),
        }
    }
}

impl Options {
    /// When writes are acknowledged (default [`Durability::Buffered`]).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Bytes a memtable holds before it is frozen and flushed (default 64 MiB,
    /// at least 1 KiB, at most 16 GiB).
    pub fn memtable_size(mut self, bytes: usize) -> Self {
        self.memtable_size = bytes.clamp(1 << 10, 16 << 30);
        self
    }

    /// Frozen memtables allowed to wait for flush before writers stall (default 2).
    pub fn max_immutable_memtables(mut self, n: usize) -> Self {
        self.max_immutable_memtables = n.max(1);
        self
    }

    /// Uncompressed bytes per SSTable data block (default 16 KiB).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes.clamp(256, 16 << 20);
        self
    }

    /// Entries per SSTable data block at most, however small they are
    /// (default: no bound; at least 1). A read of one row from a block the
    /// cache does not hold decompresses the block and reads every entry's
    /// qualifier id and value length up to the row's, so a bound makes
    /// such first reads of tables of small cells cheaper, at a cost in
    /// bytes and in reads and scans of many blocks
    /// (`docs/results-log.md`, "A bound on a block's entries").
    pub fn block_entries(mut self, entries: usize) -> Self {
        self.block_entries = Some(entries.max(1));
        self
    }

    /// Compress the data blocks of each file a compaction writes with a
    /// zstd dictionary of this many bytes (default: none; 256 bytes to
    /// 64 KiB). The dictionary is trained on the raw bytes of the file's
    /// first blocks (64 times its size), which are compressed without one,
    /// and is stored in the file. Small blocks (see
    /// [`Options::block_entries`]) then take fewer bytes and decompress
    /// faster (`docs/results-log.md`, "A per-file dictionary"). Flushes
    /// write no dictionary: training one would slow them, and their files
    /// are soon compacted. Ignored without compression.
    pub fn compression_dictionary(mut self, bytes: usize) -> Self {
        let range = crate::sst::DICTIONARY_BYTES;
        self.dictionary = Some(bytes.clamp(*range.start(), *range.end()));
        self
    }

    /// Bytes of decoded blocks kept in memory (default 64 MiB). Once it is
    /// full, a block a read of one row misses is cached on its second
    /// miss, and until then only the part of it the read returns is
    /// decoded; with 0, no block is kept.
    pub fn block_cache_size(mut self, bytes: usize) -> Self {
        self.block_cache_size = bytes;
        self
    }

    /// Bytes at which a compaction ends an output file, at the next row's
    /// start (default 64 MiB, at least 1 KiB; LevelDB's `max_file_size`,
    /// RocksDB's `target_file_size_base`). A file also ends at 1 Mi rows.
    /// A read takes a level's files one after another, as one source, so
    /// more, smaller files cost it little.
    pub fn target_file_size(mut self, bytes: u64) -> Self {
        self.target_file_size = bytes.max(1 << 10);
        self
    }

    /// Block compression (default zstd level 3).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// What to do with a damaged log tail (default: cut it and report).
    pub fn recovery_mode(mut self, mode: RecoveryMode) -> Self {
        self.recovery = mode;
        self
    }

    /// How each family's files are compacted (default leveled; see
    /// `docs/compaction.md`).
    pub fn compaction_strategy(mut self, strategy: CompactionStrategy) -> Self {
        self.compaction = strategy;
        self
    }

    /// The file system the database lives on: the operating system's by
    /// default; [`crate::fs::MemFs`] for tests that simulate power loss.
    pub fn file_system(mut self, fs: Arc<dyn Fs>) -> Self {
        self.fs = fs;
        self
    }

    /// When writes are acknowledged.
    pub fn get_durability(&self) -> Durability {
        self.durability
    }

    /// Bytes a memtable holds before it is frozen and flushed.
    pub fn get_memtable_size(&self) -> usize {
        self.memtable_size
    }

    /// Frozen memtables allowed to wait for flush before writers stall.
    pub fn get_max_immutable_memtables(&self) -> usize {
        self.max_immutable_memtables
    }

    /// The memory these settings let a database hold at once: its
    /// memtables (the live one and the frozen ones waiting for flush) and
    /// its block cache. A flush's or compaction's working memory comes on
    /// top: a few decoded blocks, and a hash of each row of the file being
    /// written (8 bytes a row; a compaction cuts its files at 1 Mi rows).
    pub fn memory_bound(&self) -> usize {
        self.memtable_size.saturating_mul(self.max_immutable_memtables + 1).saturating_add(self.block_cache_size)
    }

    /// Uncompressed bytes per SSTable data block.
    pub fn get_block_size(&self) -> usize {
        self.block_size
    }

    /// Entries per data block at most, if bounded.
    pub fn get_block_entries(&self) -> Option<usize> {
        self.block_entries
    }

    /// Bytes of the compression dictionary of each compacted file, if any.
    pub fn get_compression_dictionary(&self) -> Option<usize> {
        self.dictionary
    }

    /// How compactions lay out the SSTables they write; flushes write no
    /// dictionary.
    pub(crate) fn sst_options(&self) -> crate::sst::SstOptions {
        crate::sst::SstOptions {
            block_size: self.block_size,
            compression: self.compression,
            block_entries: self.block_entries,
            dictionary: self.dictionary,
        }
    }

    /// Bytes of decoded blocks kept in memory.
    pub fn get_block_cache_size(&self) -> usize {
        self.block_cache_size
    }

    /// Bytes at which a compaction ends an output file.
    pub fn get_target_file_size(&self) -> u64 {
        self.target_file_size
    }

    /// Block compression.
    pub fn get_compression(&self) -> Compression {
        self.compression
    }

    /// What recovery does with a damaged log tail.
    pub fn get_recovery_mode(&self) -> RecoveryMode {
        self.recovery
    }

    /// How each family's files are compacted.
    pub fn get_compaction_strategy(&self) -> CompactionStrategy {
        self.compaction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_bound_counts_every_memtable_and_the_cache() {
        assert_eq!(Options::default().memory_bound(), 256 << 20, "the default docs/compaction.md states");
        let o = Options::default().memtable_size(8 << 20).max_immutable_memtables(3).block_cache_size(1 << 20);
        assert_eq!(o.memory_bound(), 4 * (8 << 20) + (1 << 20));
        assert_eq!(Options::default().block_cache_size(usize::MAX).memory_bound(), usize::MAX, "saturates");
    }

    #[test]
    fn compaction_files_end_at_64_mib_by_default_and_at_no_less_than_1_kib() {
        assert_eq!(Options::default().get_target_file_size(), 64 << 20, "the default docs/compaction.md states");
        assert_eq!(Options::default().target_file_size(0).get_target_file_size(), 1 << 10);
        assert_eq!(Options::default().target_file_size(8 << 20).get_target_file_size(), 8 << 20);
    }

    #[test]
    fn a_block_entry_bound_is_unset_by_default_and_at_least_one() {
        assert_eq!(Options::default().get_block_entries(), None);
        assert_eq!(Options::default().sst_options().block_entries, None);
        assert_eq!(Options::default().block_entries(0).get_block_entries(), Some(1), "a block holds an entry");
        assert_eq!(Options::default().block_entries(300).sst_options().block_entries, Some(300));
        assert_eq!(Options::default().sst_options().dictionary, None);
        assert_eq!(Options::default().compression_dictionary(1).get_compression_dictionary(), Some(256));
        assert_eq!(Options::default().compression_dictionary(16 << 10).sst_options().dictionary, Some(16 << 10));
        assert_eq!(Options::default().compression_dictionary(1 << 30).sst_options().dictionary, Some(64 << 10));
    }
}
