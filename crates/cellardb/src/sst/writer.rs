//! Writing an SSTable from entries in key order.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::block::DecodedBlock;
use super::block_builder::BlockBuilder;
use super::bloom;
use super::dictionary::WriterDictionary;
use super::format::{BlockCompression, BlockHandle, Footer, StoredBlock, TRAILER_LEN, trailer};
use super::index::{self, IndexEntry};
use super::last_key::{LastKey, parts};
use super::props::Properties;
use crate::fs::{Fs, WritableFile};
use crate::key::{EntryKind, EntryRef, InternalKey, compare_parts};
use crate::{Error, Result};

/// Bytes buffered before a write to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// How SSTable blocks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Blocks are stored as encoded.
    None,
    /// Each block is one zstd frame at this level (1–22); a block that
    /// compression does not shrink by an eighth is stored raw.
    Zstd {
        /// zstd compression level.
        level: i32,
    },
}

impl Default for Compression {
    fn default() -> Self {
        Compression::Zstd { level: 3 }
    }
}

/// zstd at one level, with the parameters zstd picks for the level and the
/// block's size or with a minimum match of five bytes, whichever makes the
/// smaller frames (both decompress alike).
///
/// zstd picks its parameters by input size: at level 3, a minimum match of
/// four bytes for inputs up to 16 KiB and five above. Packed streams
/// (`docs/format/sstable.md`) brought most data blocks under 16 KiB raw,
/// and which minimum suits a block depends on its data: on the lab's
/// workload, five is smaller on `bucket-new-cell` and larger on
/// `single-ts-serialized`. A file's blocks are mostly alike, so both are tried on its first blocks
/// and on one block in [`TRIAL_EVERY`] after them, and the other blocks
/// take the last trial's winner: a little more compression work than one
/// try, far from twice as much.
///
/// A file written with a dictionary ([`SstOptions::dictionary`]) compresses
/// its data blocks with it once it has one (`sst::dictionary`).
struct BlockCompressor {
    zstd: zstd::bulk::Compressor<'static>,
    level: i32,
    dictionary: WriterDictionary,
    /// Blocks compressed so far.
    blocks: u64,
    /// Whether the last trial found the wider minimum match better.
    wider_wins: bool,
}

/// The second parameter set's minimum match length.
const WIDER_MIN_MATCH: u32 = 5;

/// Both parameter sets are tried on a file's first blocks and on one block
/// in this many after.
const TRIAL_EVERY: u64 = 16;

impl BlockCompressor {
    fn new(level: i32, dictionary: Option<usize>) -> std::io::Result<BlockCompressor> {
        Ok(BlockCompressor {
            zstd: zstd::bulk::Compressor::new(level)?,
            level,
            dictionary: WriterDictionary::new(dictionary),
            blocks: 0,
            wider_wins: false,
        })
    }

    /// The data block `raw` as a zstd frame, with the file's dictionary if
    /// it has one by now.
    fn compress_data(&mut self, raw: &[u8]) -> std::io::Result<(Vec<u8>, BlockCompression)> {
        match self.dictionary.compress(raw, self.level)? {
            Some(frame) => Ok((frame, BlockCompression::ZstdDictionary)),
            None => Ok((self.compress(raw)?, BlockCompression::Zstd)),
        }
    }

    /// `raw` as a zstd frame.
    fn compress(&mut self, raw: &[u8]) -> std::io::Result<Vec<u8>> {
        let trial = self.blocks < 4 || self.blocks.is_multiple_of(TRIAL_EVERY);
        self.blocks += 1;
        if !trial {
            return self.compress_with(raw, self.wider_wins);
        }
        let own = self.compress_with(raw, false)?;
        let wider = self.compress_with(raw, true)?;
        self.wider_wins = wider.len() < own.len();
        Ok(if self.wider_wins { wider } else { own })
    }

    fn compress_with(&mut self, raw: &[u8], wider: bool) -> std::io::Result<Vec<u8>> {
        // 0: the level's own choice for this input.
        let min_match = if wider { WIDER_MIN_MATCH } else { 0 };
        self.zstd.set_parameter(zstd::zstd_safe::CParameter::MinMatch(min_match))?;
        self.zstd.compress(raw)
    }
}

/// Whose entries an SSTable holds, and when it was written: recorded in
/// its properties. The format reads no clock; the caller says the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstOrigin<'a> {
    /// The column family's name (as it is when the file is written).
    pub family: &'a str,
    /// The family's store id.
    pub store: u32,
    /// When the file is written, µs since the epoch.
    pub created_micros: i64,
}

/// How an SSTable is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstOptions {
    /// Encoded bytes per data block before a new one is started.
    pub block_size: usize,
    /// How blocks are compressed.
    pub compression: Compression,
    /// Entries per data block before a new one is started, whatever its
    /// size; `None` for no bound.
    pub block_entries: Option<usize>,
    /// Bytes of a zstd dictionary to train on the file's first data blocks
    /// and compress the rest with (`sst::dictionary`); `None` for none.
    /// Ignored without compression.
    pub dictionary: Option<usize>,
}

/// What a finished SSTable holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstSummary {
    /// Bytes of the file.
    pub file_size: u64,
    /// Its properties block.
    pub props: Properties,
}

/// Writes one SSTable. Entries must come in strictly increasing key order.
pub struct SstWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    options: SstOptions,
    compressor: Option<BlockCompressor>,
    block: BlockBuilder,
    index: Vec<IndexEntry>,
    /// The row of the first entry of the block being built.
    block_first_row: Vec<u8>,
    /// Whether the index records each block's first row: always, but in
    /// tests of files written before it did.
    index_first_rows: bool,
    row_hashes: Vec<u64>,
    props: Properties,
    last: LastKey,
    buffer: Vec<u8>,
    offset: u64,
}

impl SstWriter {
    /// Creates the file `path` for the entries of `origin`.
    ///
    /// # Errors
    /// `Error::Io` if the file cannot be created or zstd cannot start.
    pub fn create(fs: &dyn Fs, path: &Path, origin: SstOrigin<'_>, options: SstOptions) -> Result<SstWriter> {
        let file = fs.create(path).map_err(|e| Error::io(path, e))?;
        let compressor = match options.compression {
            Compression::None => None,
            Compression::Zstd { level } => {
                Some(BlockCompressor::new(level, options.dictionary).map_err(|e| Error::io(path, e))?)
            }
        };
        let props = Properties {
            family: origin.family.to_owned(),
            store: origin.store,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            min_seq: u64::MAX,
            created_micros: origin.created_micros,
            ..Properties::default()
        };
        Ok(SstWriter {
            file,
            path: path.to_path_buf(),
            options,
            compressor,
            block: BlockBuilder::default(),
            index: Vec::new(),
            block_first_row: Vec::new(),
            index_first_rows: true,
            row_hashes: Vec::new(),
            props,
            last: LastKey::default(),
            buffer: Vec::with_capacity(WRITE_BUFFER),
            offset: 0,
        })
    }

    /// Bytes written to the file so far.
    pub fn file_size(&self) -> u64 {
        self.offset
    }

    /// Rows added so far. The row filter's input grows with them (a hash
    /// of 8 bytes each, held until the file is finished).
    pub fn rows(&self) -> u64 {
        self.props.rows
    }

    /// Adds the next entry. A block is ended once it reaches the block
    /// size or its entry bound, and also before the next column of a
    /// wide row where the block holds one column alone and is at least a
    /// quarter full: where a wide row's columns span blocks, most of them
    /// then begin a block, so a read of a column's newest cells (or of any
    /// stretch of it) decodes blocks of that column only, the case block
    /// decoding makes cheapest.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `entry` does not sort after the previous
    /// one; `Error::Io` if a full block cannot be written.
    pub fn add(&mut self, entry: EntryRef<'_>) -> Result<()> {
        self.check_order(&entry)?;
        if self.block.estimated_size() >= self.options.block_size / 4 && self.block.is_column_before(&entry) {
            self.finish_data_block()?;
        }
        self.add_checked(entry);
        if self.block.estimated_size() >= self.options.block_size || self.block.len() >= self.max_block_entries() {
            self.finish_data_block()?;
        }
        Ok(())
    }

    /// Adds the next entry to the block being built, however large it
    /// grows (until [`SstWriter::end_block`]).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `entry` does not sort after the previous
    /// one.
    pub(crate) fn push(&mut self, entry: EntryRef<'_>) -> Result<()> {
        self.check_order(&entry)?;
        self.add_checked(entry);
        Ok(())
    }

    /// Adds `entry`, checked to sort after the previous one, to the block
    /// being built.
    fn add_checked(&mut self, entry: EntryRef<'_>) {
        if self.block.len() == 0 {
            self.block_first_row.clear();
            self.block_first_row.extend_from_slice(entry.row);
        }
        self.note_row(entry.row);
        self.count(&entry);
        self.block.add(entry);
        self.last.set(&entry);
    }

    /// Ends the block being built, if it holds any entry.
    ///
    /// # Errors
    /// `Error::Io` if the block cannot be written.
    pub(crate) fn end_block(&mut self) -> Result<()> {
        self.finish_data_block()
    }

    /// Whether a block of `entries` entries and size estimate `estimate`
    /// may be joined to the block being built, which holds some entry:
    /// together they stay within half again the block size and half again
    /// the entry bound.
    /// A compaction joins a short block to the one before it this way, so
    /// that the short blocks left where passing a file's blocks begins and
    /// ends do not pile up.
    pub(crate) fn can_join(&self, estimate: usize, entries: usize) -> bool {
        let size = self.options.block_size;
        self.block.len() > 0
            && self.block.estimated_size() + estimate <= size * 3 / 2
            && self.block.len() + entries <= self.max_block_entries().saturating_mul(3) / 2
    }

    /// The entries a block holds at most (`usize::MAX` with no bound).
    fn max_block_entries(&self) -> usize {
        self.options.block_entries.unwrap_or(usize::MAX)
    }

    /// The row of the last entry added.
    pub(crate) fn last_row(&self) -> Option<&[u8]> {
        self.last.present.then_some(&self.last.row[..])
    }

    /// Appends a data block of another SSTable as it is stored, after
    /// ending the block being built: `stored` holds the entries of
    /// `decoded`, whose last key is `last_key`. The file's properties,
    /// filter and index take its entries as if they had been added one by
    /// one; its bytes are neither decoded again nor compressed again.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if its entries do not sort after the
    /// previous one, `last_key` is not its last key, or it is compressed
    /// with a dictionary the file cannot take ([`SstWriter::can_copy`]);
    /// `Error::Io` if a write fails.
    pub(crate) fn copy_block(
        &mut self,
        stored: &StoredBlock,
        decoded: &DecodedBlock,
        last_key: &InternalKey,
    ) -> Result<()> {
        let (mut first_row, mut last_row) = (Vec::new(), Vec::new());
        let first = decoded.entry_in(0, &mut first_row);
        let (Some(first), Some(last)) = (first, decoded.entry_in(decoded.len().wrapping_sub(1), &mut last_row)) else {
            return Ok(());
        };
        self.finish_data_block()?;
        self.check_order(&first)?;
        if last.cmp_internal(last_key).is_ne() || u32::try_from(decoded.len()).ok() != Some(stored.entries) {
            return Err(Error::InvalidArgument("a copied block differs from its index entry".into()));
        }
        if stored.compression == BlockCompression::ZstdDictionary && !self.adopt_dictionary(stored) {
            return Err(Error::InvalidArgument("a copied block's dictionary differs from the file's".into()));
        }
        // A block's rows are distinct: only its first may continue the
        // last row added.
        let mut key = Vec::new();
        for (r, row) in decoded.rows().enumerate() {
            let row = row.bytes(&mut key);
            if r == 0 {
                self.note_row(row);
            } else {
                self.new_row(row);
            }
        }
        match decoded.cell_totals().filter(|_| decoded.all_settled_puts()) {
            Some(t) => {
                let p = &mut self.props;
                p.cells += t.cells;
                p.min_timestamp = p.min_timestamp.min(t.oldest);
                p.max_timestamp = p.max_timestamp.max(t.newest);
                p.min_seq = 0;
                p.logical_bytes += t.logical_bytes + t.cells * p.family.len() as u64;
            }
            None => decoded.for_each_entry(|e| self.count(&e)),
        }
        self.last.set(&last);
        let handle = self.append_block(&stored.bytes, stored.compression, stored.raw_len)?;
        self.index_data_block(last_key.clone(), first.row, handle, stored.entries);
        Ok(())
    }

    /// Whether [`SstWriter::copy_block`] may copy `stored` as it is: it is
    /// not compressed with a dictionary, or the file compresses with the
    /// same one, or has none yet and may take it.
    pub(crate) fn can_copy(&self, stored: &StoredBlock) -> bool {
        match (&stored.dictionary, stored.compression) {
            (Some(d), BlockCompression::ZstdDictionary) => {
                self.compressor.as_ref().is_some_and(|c| c.dictionary.can_take(d))
            }
            (None, BlockCompression::ZstdDictionary) => false,
            _ => true,
        }
    }

    /// Makes the dictionary `stored` is compressed with the file's.
    fn adopt_dictionary(&mut self, stored: &StoredBlock) -> bool {
        match (&mut self.compressor, &stored.dictionary) {
            (Some(c), Some(d)) => c.dictionary.adopt(d, c.level),
            _ => false,
        }
    }

    /// Counts a row, unless it continues the last one added.
    fn note_row(&mut self, row: &[u8]) {
        if self.last.present && self.last.row == row {
            return;
        }
        if !self.last.present {
            self.props.first_row = Bytes::copy_from_slice(row);
        }
        self.new_row(row);
    }

    fn check_order(&self, entry: &EntryRef<'_>) -> Result<()> {
        if self.last.present && compare_parts(self.last.parts(), parts(entry)) != std::cmp::Ordering::Less {
            let show = |(row, qualifier, timestamp, seq, kind): (&[u8], &[u8], i64, u64, EntryKind)| {
                format!(
                    "{:?}/{:?}@{timestamp} seq {seq} {kind:?}",
                    String::from_utf8_lossy(row),
                    String::from_utf8_lossy(qualifier)
                )
            };
            return Err(Error::InvalidArgument(format!(
                "SSTable entries out of order at row {:?} of family {:?}: {} after {}",
                String::from_utf8_lossy(entry.row),
                self.props.family,
                show(parts(entry)),
                show(self.last.parts())
            )));
        }
        Ok(())
    }

    fn new_row(&mut self, row: &[u8]) {
        self.row_hashes.push(bloom::row_hash(row));
        self.props.rows += 1;
    }

    fn count(&mut self, entry: &EntryRef<'_>) {
        let p = &mut self.props;
        if entry.kind.is_cell() {
            p.cells += 1;
            p.min_timestamp = p.min_timestamp.min(entry.timestamp);
            p.max_timestamp = p.max_timestamp.max(entry.timestamp);
        } else {
            p.tombstones += 1;
        }
        p.min_seq = p.min_seq.min(entry.seq);
        p.max_seq = p.max_seq.max(entry.seq);
        p.logical_bytes += (entry.logical_size() + p.family.len()) as u64;
    }

    fn finish_data_block(&mut self) -> Result<()> {
        if self.block.len() == 0 {
            return Ok(());
        }
        let last_key = self.last.to_key();
        let entries = u32::try_from(self.block.len())
            .map_err(|_| Error::InvalidArgument("more than 2^32 entries in one block".into()))?;
        let mut raw = Vec::with_capacity(self.block.estimated_size() + 64);
        self.block.finish(&mut raw);
        let handle = self.write_block(&raw, Compress::Data)?;
        let first_row = std::mem::take(&mut self.block_first_row);
        self.index_data_block(last_key, &first_row, handle, entries);
        self.block_first_row = first_row;
        Ok(())
    }

    /// Records a data block written at `handle`, whose first entry's row
    /// is `first_row`, in the index and properties.
    fn index_data_block(&mut self, last_key: InternalKey, first_row: &[u8], handle: BlockHandle, entries: u32) {
        self.props.raw_data_bytes += u64::from(handle.raw_len);
        self.props.stored_data_bytes += u64::from(handle.stored_len) + TRAILER_LEN as u64;
        self.props.data_blocks += 1;
        let first_row = match self.index.last() {
            _ if !self.index_first_rows => None,
            // A row that goes on from the block before, or one alone in its block.
            Some(prev) if prev.last_key.row == first_row => Some(prev.last_key.row.clone()),
            _ if last_key.row == first_row => Some(last_key.row.clone()),
            _ => Some(Bytes::copy_from_slice(first_row)),
        };
        self.index.push(IndexEntry { last_key, first_row, handle, entries });
    }

    /// Writes the index as files written before first rows were have it,
    /// for tests that such files read alike.
    #[cfg(test)]
    pub(crate) fn without_first_rows(mut self) -> SstWriter {
        self.index_first_rows = false;
        self
    }

    /// Writes a block (compressed as `compress` allows, if worth it) with
    /// its trailer.
    fn write_block(&mut self, raw: &[u8], compress: Compress) -> Result<BlockHandle> {
        let compressed = match (&mut self.compressor, compress) {
            (Some(z), Compress::Data) => Some(z.compress_data(raw)),
            (Some(z), Compress::Plain) => Some(z.compress(raw).map(|c| (c, BlockCompression::Zstd))),
            _ => None,
        };
        let compressed = compressed.transpose().map_err(|e| Error::io(&self.path, e))?;
        let (stored, compression): (&[u8], _) = match &compressed {
            Some((c, how)) if c.len() < raw.len() - raw.len() / 8 => (c, *how),
            _ => (raw, BlockCompression::Raw),
        };
        self.append_block(stored, compression, stored_len(raw)?)
    }

    /// Appends a block's stored bytes and their trailer.
    fn append_block(&mut self, stored: &[u8], compression: BlockCompression, raw_len: u32) -> Result<BlockHandle> {
        let handle = BlockHandle { offset: self.offset, stored_len: stored_len(stored)?, raw_len };
        self.append(stored)?;
        self.append(&trailer(stored, compression))?;
        Ok(handle)
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.buffer.extend_from_slice(bytes);
        self.offset += bytes.len() as u64;
        if self.buffer.len() >= WRITE_BUFFER {
            self.flush_buffer()?;
        }
        Ok(())
    }

    fn flush_buffer(&mut self) -> Result<()> {
        self.file.write_all(&self.buffer).map_err(|e| Error::io(&self.path, e))?;
        self.buffer.clear();
        Ok(())
    }

    /// Writes the index, filter, properties and footer, and syncs the file.
    ///
    /// # Errors
    /// `Error::Io` if a write or the sync fails.
    pub fn finish(mut self) -> Result<SstSummary> {
        self.finish_data_block()?;
        if self.last.present {
            self.props.last_row = Bytes::copy_from_slice(&self.last.row);
        }
        if self.props.min_seq == u64::MAX {
            self.props.min_seq = 0;
        }
        let stored_dictionary = self.compressor.as_ref().and_then(|c| c.dictionary.to_store().cloned());
        let dictionary = match stored_dictionary {
            Some(d) => Some(self.write_block(&d, Compress::Never)?),
            None => None,
        };
        let index = self.write_block(&index::encode(&self.index), Compress::Plain)?;
        let bloom = self.write_block(&bloom::build(&self.row_hashes, self.offset), Compress::Never)?;
        let props = self.write_block(&self.props.encode(), Compress::Never)?;
        let footer = Footer { index, bloom, props, dictionary }.encode();
        self.append(&footer)?;
        self.flush_buffer()?;
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))?;
        Ok(SstSummary { file_size: self.offset, props: self.props })
    }
}

/// How a block may be compressed.
#[derive(Debug, Clone, Copy)]
enum Compress {
    /// A data block: with the file's dictionary once it has one.
    Data,
    /// Without a dictionary (the index, read before any data block).
    Plain,
    /// Stored raw (the filter and properties, which zstd barely shrinks;
    /// the dictionary, which is zstd's own tables and content).
    Never,
}

/// The length of a block's bytes, as its handle records it.
fn stored_len(bytes: &[u8]) -> Result<u32> {
    u32::try_from(bytes.len())
        .map_err(|_| Error::InvalidArgument(format!("block of {} bytes is too large", bytes.len())))
}
