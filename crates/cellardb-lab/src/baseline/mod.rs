//! RocksDB running the same workload, for side-by-side figures (behind the
//! non-default `rocksdb` feature).
//!
//! Configured as `docs/schema-patterns.md` describes the baseline: zstd level 3 on every
//! level, 4 KiB blocks, leveled compaction, the write-ahead log on without
//! fsync per write (`Durability::Buffered`) or with it (`Durability::Sync`),
//! and Bigtable cells stored under the standard key
//! `row ‖ 0 ‖ family ‖ 0 ‖ qualifier ‖ 0 ‖ (u64::MAX − timestamp) big-endian`.
//!
//! Reads use that key order the way a good RocksDB user reads it: one
//! iterator per read, bounded to the row or range; a row is the entries
//! under `row ‖ 0`, a column those under `row ‖ 0 ‖ family ‖ 0 ‖ qualifier
//! ‖ 0`, newest first, so a named column's time range is one seek and its
//! newest cell its first entry. Without a named column, the reader steps
//! within a column and seeks past what a filter drops once it has stepped
//! over a few entries (as cellardb's reader does). Cells are handed out as
//! slices borrowed from the iterator: no copy, no allocation per cell. The
//! order matches Bigtable's model order (families by name, qualifiers
//! ascending, timestamps descending) as long as row keys and qualifiers
//! hold no 0 byte and timestamps are not negative; the balloon workload
//! keeps to that.

use std::path::{Path, PathBuf};

use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, DB, DBCompressionType, DBRawIterator, IteratorMode, ReadOptions, WriteBatch, WriteOptions,
};

use crate::queries::CellRef;
use cellardb::{Durability, Error, Mutation, Result};

mod run;

pub(crate) use run::open;
pub use run::{query, read_plan, run_pattern};

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

/// Which cells of a row a read returns: the Bigtable filters the key
/// order serves.
#[derive(Debug, Clone, Copy, Default)]
pub struct CellSelection<'a> {
    /// Only this column, `(family, qualifier)`: one seek to its cells.
    pub column: Option<(&'a str, &'a [u8])>,
    /// Only cells with timestamps in `[start, end)`.
    pub time: Option<(i64, i64)>,
    /// Only each column's newest cell (of those in `time`).
    pub newest_per_column: bool,
}

/// Adds `mutations` of `row` to `batch` (only `SetCell`s).
fn put_cells(batch: &mut WriteBatch, row: &[u8], mutations: &[Mutation]) -> Result<()> {
    for m in mutations {
        let Mutation::SetCell { family, qualifier, timestamp, value } = m else {
            return Err(Error::InvalidArgument("the RocksDB baseline only sets cells".into()));
        };
        batch.put(cell_key(row, family.as_bytes(), qualifier, timestamp.micros()), value);
    }
    Ok(())
}

/// The standard key of a Bigtable cell on a sorted key-value store.
pub fn cell_key(row: &[u8], family: &[u8], qualifier: &[u8], timestamp: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + family.len() + qualifier.len() + 11);
    k.extend_from_slice(row);
    k.push(0);
    k.extend_from_slice(family);
    k.push(0);
    k.extend_from_slice(qualifier);
    k.push(0);
    k.extend_from_slice(&(u64::MAX - timestamp as u64).to_be_bytes());
    k
}

impl RocksBaseline {
    /// Opens (creating) a RocksDB database in `dir`, with a block cache of
    /// `block_cache_bytes` (cellardb's budget, for a comparison).
    pub fn open(dir: &Path, durability: Durability, block_cache_bytes: usize) -> Result<RocksBaseline> {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(DBCompressionType::Zstd);
        opts.set_bottommost_compression_type(DBCompressionType::Zstd);
        opts.set_compression_options(-14, 3, 0, 0);
        opts.set_bottommost_compression_options(-14, 3, 0, 0, true);
        let mut table = BlockBasedOptions::default();
        table.set_block_size(4096);
        table.set_block_cache(&Cache::new_lru_cache(block_cache_bytes));
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
        put_cells(&mut batch, row, mutations)?;
        self.write(batch)
    }

    /// Writes several rows' cells as one write batch: one event of the
    /// workload, atomically. Only `SetCell`s are supported.
    pub fn write_rows(&self, rows: &[(String, Vec<Mutation>)]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for (row, mutations) in rows {
            put_cells(&mut batch, row.as_bytes(), mutations)?;
        }
        self.write(batch)
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
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

    /// Row `row` narrowed by `select`, its cells handed to `sink`: an
    /// iterator bounded to the row, a seek to its first entry or straight
    /// to the column. Says whether a cell was selected.
    ///
    /// # Errors
    /// `Error::Io` for RocksDB's errors, `Error::InvalidArgument` for an
    /// entry that is not a cell key.
    pub fn read_row(&self, row: &[u8], select: &CellSelection<'_>, sink: &mut dyn FnMut(CellRef<'_>)) -> Result<bool> {
        let mut it = self.db.raw_iterator_opt(bounded(&row_start(row), Some(&row_end(row))));
        it.seek(row_start(row));
        let found = read_at(&mut it, row, select, sink)?;
        it.status().map_err(|e| rocks_error(&self.dir, e))?;
        Ok(found)
    }

    /// Rows `keys` narrowed by `select`, in key order, with one iterator
    /// sought to each.
    ///
    /// # Errors
    /// As [`RocksBaseline::read_row`].
    pub fn read_keys(
        &self,
        keys: &[&[u8]],
        select: &CellSelection<'_>,
        sink: &mut dyn FnMut(CellRef<'_>),
    ) -> Result<()> {
        let mut it = self.db.raw_iterator();
        for row in keys {
            it.seek(row_start(row));
            read_at(&mut it, row, select, sink)?;
        }
        it.status().map_err(|e| rocks_error(&self.dir, e))
    }

    /// The rows with keys in `[from, to)` (to the end if `to` is `None`)
    /// narrowed by `select`, in key order, with one iterator bounded to the
    /// range.
    ///
    /// # Errors
    /// As [`RocksBaseline::read_row`].
    pub fn read_rows(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        select: &CellSelection<'_>,
        sink: &mut dyn FnMut(CellRef<'_>),
    ) -> Result<()> {
        let mut it = self.db.raw_iterator_opt(bounded(from, to));
        it.seek(from);
        let mut row = Vec::new();
        while let Some(key) = it.key() {
            row.clear();
            row.extend_from_slice(split_cell_key(key)?.0);
            read_at(&mut it, &row, select, sink)?;
            // A read that stopped inside the row steps over the rest.
            if it.key().is_some_and(|k| k.starts_with(&row) && k.get(row.len()) == Some(&0)) {
                it.seek(row_end(&row));
            }
        }
        it.status().map_err(|e| rocks_error(&self.dir, e))
    }

    /// The last row with a key in `[from, to)` (to the end if `to` is
    /// `None`) that has a cell `select` keeps: a reverse seek to the range's
    /// last entry, then the row read forward; a row with no such cell sends
    /// the iterator back before it. Says whether a row was found.
    ///
    /// # Errors
    /// As [`RocksBaseline::read_row`].
    pub fn last_row(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        select: &CellSelection<'_>,
        sink: &mut dyn FnMut(CellRef<'_>),
    ) -> Result<bool> {
        let mut it = self.db.raw_iterator_opt(bounded(from, to));
        it.seek_to_last();
        let mut row = Vec::new();
        while let Some(key) = it.key() {
            row.clear();
            row.extend_from_slice(split_cell_key(key)?.0);
            it.seek(row_start(&row));
            if read_at(&mut it, &row, select, sink)? {
                return Ok(true);
            }
            it.seek_for_prev(&row);
        }
        it.status().map_err(|e| rocks_error(&self.dir, e))?;
        Ok(false)
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

/// Read options bounding an iterator to `[from, to)` (to the end if `to`
/// is `None`).
fn bounded(from: &[u8], to: Option<&[u8]>) -> ReadOptions {
    let mut read_options = ReadOptions::default();
    read_options.set_iterate_lower_bound(from);
    if let Some(to) = to {
        read_options.set_iterate_upper_bound(to);
    }
    read_options
}

/// `row ‖ 0`: every entry of `row` starts with it.
fn row_start(row: &[u8]) -> Vec<u8> {
    [row, &[0]].concat()
}

/// `row ‖ 1`: after every entry of `row`, before any other row's.
fn row_end(row: &[u8]) -> Vec<u8> {
    [row, &[1]].concat()
}

/// `row ‖ 0 ‖ family ‖ 0 ‖ qualifier ‖ 0`: every entry of the column starts with it.
fn column_start(row: &[u8], family: &str, qualifier: &[u8]) -> Vec<u8> {
    [row, &[0], family.as_bytes(), &[0], qualifier, &[0]].concat()
}

/// `key` without its timestamp and with its last separator 1: after every
/// entry of `key`'s column, before the next column's.
fn column_end(key: &[u8]) -> Vec<u8> {
    let mut end = key[..key.len() - 8].to_vec();
    if let Some(separator) = end.last_mut() {
        *separator = 1;
    }
    end
}

/// `key` as `(row, family, qualifier, timestamp)`: the row up to the first
/// 0, the family up to the next, the timestamp the last 8 bytes after a 0.
fn split_cell_key(key: &[u8]) -> Result<(&[u8], &[u8], &[u8], i64)> {
    let bad = || Error::InvalidArgument(format!("RocksDB key {key:02x?} is not a cell key"));
    let (rest, stamp) = key.split_last_chunk::<9>().ok_or_else(bad)?;
    let [0, stamp @ ..] = *stamp else { return Err(bad()) };
    let (row, rest) = rest.split_at(rest.iter().position(|&b| b == 0).ok_or_else(bad)?);
    let (family, qualifier) = rest[1..].split_at(rest[1..].iter().position(|&b| b == 0).ok_or_else(bad)?);
    Ok((row, family, &qualifier[1..], (u64::MAX - u64::from_be_bytes(stamp)) as i64))
}

/// Entries stepped over before a reader seeks instead: a step is cheaper
/// than a seek until a few have been taken.
const STEPS_BEFORE_SEEK: u32 = 8;

/// Hands `row`'s cells selected by `select` to `sink`. With a column, seeks
/// to it (and to the newest cell of the time range); otherwise reads from
/// `it`, which must be at the row's first entry, and passes over what the
/// selection drops (cells newer than the time range, the rest of a column
/// past it or past its newest cell) by stepping, then seeking. Says
/// whether a cell was selected.
fn read_at(
    it: &mut DBRawIterator<'_>,
    row: &[u8],
    select: &CellSelection<'_>,
    sink: &mut dyn FnMut(CellRef<'_>),
) -> Result<bool> {
    if let Some((family, qualifier)) = select.column {
        match select.time {
            Some((_, end)) => it.seek(cell_key(row, family.as_bytes(), qualifier, end - 1)),
            None => it.seek(column_start(row, family, qualifier)),
        }
    }
    let mut found = false;
    let mut steps = 0;
    while let Some((key, value)) = it.item() {
        let (key_row, family, qualifier, timestamp) = split_cell_key(key)?;
        if key_row != row || select.column.is_some_and(|(f, q)| (f.as_bytes(), q) != (family, qualifier)) {
            break;
        }
        let (start, end) = select.time.unwrap_or((i64::MIN, i64::MAX));
        // Cells come newest first within a column: past the range's start
        // (or past the newest cell wanted), the column has nothing more.
        let column_done = timestamp < start;
        if timestamp >= end || column_done {
            if column_done && select.column.is_some() {
                break;
            }
            steps += 1;
            if steps <= STEPS_BEFORE_SEEK {
                it.next();
            } else {
                let target = if column_done { column_end(key) } else { cell_key(row, family, qualifier, end - 1) };
                steps = 0;
                it.seek(target);
            }
            continue;
        }
        sink(CellRef { row, qualifier, timestamp, value });
        found = true;
        if select.newest_per_column {
            if select.column.is_some() {
                break;
            }
            let next_column = column_end(key);
            skip_to(it, &next_column);
        } else {
            it.next();
        }
        steps = 0;
    }
    Ok(found)
}

/// Moves `it` to the first entry not below `target`: a few steps, then a seek.
fn skip_to(it: &mut DBRawIterator<'_>, target: &[u8]) {
    for _ in 0..STEPS_BEFORE_SEEK {
        it.next();
        if it.key().is_none_or(|k| k >= target) {
            return;
        }
    }
    it.seek(target);
}
