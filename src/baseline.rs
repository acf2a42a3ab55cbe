//! RocksDB running the same workload, for side-by-side figures (behind the
//! non-default `rocksdb` feature).
//!
//! Configured as `shared/anchors.md` measures it: zstd level 3 on every
//! level, 4 KiB blocks, leveled compaction, the write-ahead log on without
//! fsync per write (`Durability::Buffered`) or with it (`Durability::Sync`),
//! and Bigtable cells stored under the standard key
//! `row ‖ 0 ‖ family ‖ 0 ‖ qualifier ‖ 0 ‖ (u64::MAX − timestamp) big-endian`.

use std::path::{Path, PathBuf};

use rocksdb::statistics::Ticker;
use rocksdb::{BlockBasedOptions, DB, DBCompressionType, IteratorMode, WriteBatch, WriteOptions};

use crate::{Durability, Error, Mutation, Result};

/// A RocksDB database holding Bigtable cells.
pub struct RocksBaseline {
    db: DB,
    dir: PathBuf,
    write_options: WriteOptions,
    /// Holds the statistics object the tickers are read from.
    options: rocksdb::Options,
}

/// What RocksDB wrote and how long writers stalled, since open.
#[derive(Debug, Clone, Copy, Default)]
pub struct RocksWrites {
    /// Bytes appended to the write-ahead log.
    pub wal_bytes: u64,
    /// Bytes of SSTables written by flushes.
    pub flush_bytes: u64,
    /// Bytes of SSTables written by compactions.
    pub compaction_bytes: u64,
    /// Microseconds writers were stalled or slowed.
    pub stall_micros: u64,
}

fn rocks_error(dir: &Path, e: rocksdb::Error) -> Error {
    Error::io(dir, std::io::Error::other(e.into_string()))
}

/// The standard key of a Bigtable cell on a sorted key-value store.
pub fn cell_key(row: &[u8], family: &str, qualifier: &[u8], timestamp: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + family.len() + qualifier.len() + 11);
    k.extend_from_slice(row);
    k.push(0);
    k.extend_from_slice(family.as_bytes());
    k.push(0);
    k.extend_from_slice(qualifier);
    k.push(0);
    k.extend_from_slice(&(u64::MAX - timestamp as u64).to_be_bytes());
    k
}

impl RocksBaseline {
    /// Opens (creating) a RocksDB database in `dir`.
    pub fn open(dir: &Path, durability: Durability) -> Result<RocksBaseline> {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(DBCompressionType::Zstd);
        opts.set_bottommost_compression_type(DBCompressionType::Zstd);
        opts.set_compression_options(-14, 3, 0, 0);
        opts.set_bottommost_compression_options(-14, 3, 0, 0, true);
        let mut table = BlockBasedOptions::default();
        table.set_block_size(4096);
        opts.set_block_based_table_factory(&table);
        opts.enable_statistics();
        let db = DB::open(&opts, dir).map_err(|e| rocks_error(dir, e))?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(durability == Durability::Sync);
        Ok(RocksBaseline { db, dir: dir.to_path_buf(), write_options, options: opts })
    }

    /// Writes a row mutation's cells as one write batch. Only `SetCell`s are
    /// supported (the workload writes nothing else).
    pub fn mutate_row(&self, row: &[u8], mutations: &[Mutation]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for m in mutations {
            let Mutation::SetCell { family, qualifier, timestamp, value } = m else {
                return Err(Error::InvalidArgument("the RocksDB baseline only sets cells".into()));
            };
            batch.put(cell_key(row, family, qualifier, timestamp.micros()), value);
        }
        self.db.write_opt(batch, &self.write_options).map_err(|e| rocks_error(&self.dir, e))
    }

    /// Flushes the memtable to an SSTable.
    pub fn flush(&self) -> Result<()> {
        self.db.flush().map_err(|e| rocks_error(&self.dir, e))
    }

    /// Compacts the whole key range.
    pub fn compact(&self) {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
    }

    /// What RocksDB wrote since open, from its statistics tickers.
    pub fn writes(&self) -> RocksWrites {
        let count = |t| self.options.get_ticker_count(t);
        RocksWrites {
            wal_bytes: count(Ticker::WalFileBytes),
            flush_bytes: count(Ticker::FlushWriteBytes),
            compaction_bytes: count(Ticker::CompactWriteBytes),
            stall_micros: count(Ticker::StallMicros),
        }
    }

    /// Entries of a full scan.
    pub fn scan_count(&self) -> Result<u64> {
        let mut n = 0;
        for kv in self.db.iterator(IteratorMode::Start) {
            kv.map_err(|e| rocks_error(&self.dir, e))?;
            n += 1;
        }
        Ok(n)
    }

    /// Bytes of SSTables in the directory.
    pub fn sst_bytes(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
                    .map(|e| e.metadata().map_or(0, |m| m.len()))
                    .sum()
            })
            .unwrap_or(0)
    }
}
