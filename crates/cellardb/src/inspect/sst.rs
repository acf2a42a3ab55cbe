//! SSTables, one file at a time: what `cellar dump sst` shows, in records
//! of `inspect`'s own (`docs/format/sstable.md` gives every byte).

use std::path::Path;

use bytes::Bytes;

use super::entry::{Entry, EntryKey};
use crate::fs::MemFs;
use crate::sst::{self, BlockHandle, DecodedBlock, Footer, IndexEntry, Properties, SstOptions, SstOrigin, SstReader};
use crate::{Compression, Error, Result};

/// The newest SSTable format version this build writes and reads (a file
/// without a compression dictionary is written as version 1).
pub const SST_FORMAT_VERSION: u32 = sst::format::VERSION;

/// The length of the footer of an SSTable without a compression
/// dictionary (version 1), its last bytes; [`SstFile::footer_len`] gives
/// any file's.
pub const SST_FOOTER_LEN: usize = sst::format::FOOTER_LEN;

/// An SSTable opened for inspection: its footer, index, row filter and
/// properties checked and decoded; its data blocks read on request.
pub struct SstFile {
    reader: SstReader,
}

impl SstFile {
    /// Opens `data`, the bytes of the SSTable `path`.
    ///
    /// # Errors
    /// `Error::Corruption`, naming `path` and the offset, if the footer, the
    /// index, the filter or the properties fail their checksums or do not
    /// decode.
    pub fn open(path: &Path, data: Bytes) -> Result<SstFile> {
        Ok(SstFile { reader: SstReader::open(path, data)? })
    }

    /// The file's path, as given to [`SstFile::open`].
    pub fn path(&self) -> &Path {
        self.reader.path()
    }

    /// The file's length in bytes.
    pub fn file_size(&self) -> u64 {
        self.reader.file_size()
    }

    /// The file's format version: 2 if it has a compression dictionary,
    /// else 1.
    pub fn format_version(&self) -> u32 {
        if self.reader.dictionary().is_some() { 2 } else { 1 }
    }

    /// The length of the file's footer: 64 bytes in version 1, 80 in
    /// version 2 (a file with a compression dictionary).
    pub fn footer_len(&self) -> usize {
        self.reader.footer_len()
    }

    /// What the properties block records of the file.
    pub fn properties(&self) -> SstProperties {
        SstProperties::of(self.reader.props())
    }

    /// Where the file's parts lie, and what its row filter is.
    pub fn layout(&self) -> SstLayout {
        let footer = self.reader.footer();
        let bloom = self.reader.bloom();
        SstLayout {
            spans: SstSpans::of(footer),
            bloom_layout: bloom.layout.to_owned(),
            bloom_bits: bloom.bits,
            bloom_probes: bloom.probes,
            bloom_bytes: self.reader.bloom_bytes(),
        }
    }

    /// The number of data blocks.
    pub fn block_count(&self) -> usize {
        self.reader.index().len()
    }

    /// The data blocks, in key order, as the index lists them.
    pub fn blocks(&self) -> Vec<BlockInfo> {
        self.reader.index().iter().map(BlockInfo::of).collect()
    }

    /// Data block `i` (counted from 0), read, checked and decoded.
    ///
    /// # Errors
    /// `Error::Corruption` at the block's offset if it fails its checksum
    /// or does not decode; `Error::InvalidArgument` if there is no block `i`.
    pub fn block(&self, i: usize) -> Result<DataBlock> {
        let block = self.reader.read_block(i)?;
        Ok(DataBlock::of(&block))
    }

    /// The bytes of data block `i` as the block format lays them out:
    /// checksum verified and decompressed, not decoded.
    ///
    /// # Errors
    /// As [`SstFile::block`], but for a block that does not decode.
    pub fn block_bytes(&self, i: usize) -> Result<Vec<u8>> {
        Ok(self.reader.block_bytes(i)?.to_vec())
    }

    /// Whether the row filter lets `row` through: `false` means the file
    /// holds no entry of `row`.
    pub fn may_contain_row(&self, row: &[u8]) -> bool {
        self.reader.may_contain_row(row)
    }

    /// Reads and decodes every block, going on past a bad one, and checks
    /// checksums, key order within and across blocks, each block against
    /// its index entry, and the counts against the properties.
    pub fn check(&self) -> SstCheck {
        let report = self.reader.check();
        SstCheck { blocks: report.blocks, entries: report.entries, cells: report.cells, faults: report.faults }
    }

    /// The size of the file's entries written again, in memory, with
    /// `block_size` bytes a block and `compression`: what `cellar dump sst
    /// --recompress` reports, as RocksDB's `sst_dump --command=recompress`
    /// does.
    ///
    /// # Errors
    /// `Error::Corruption` if a block does not read;
    /// `Error::InvalidArgument` for a block size of 0.
    pub fn recompressed_size(&self, block_size: usize, compression: Compression) -> Result<u64> {
        if block_size == 0 {
            return Err(Error::InvalidArgument("a block size must be positive".into()));
        }
        let fs = MemFs::new();
        let path = Path::new("recompressed.sst");
        let p = self.reader.props();
        let origin = SstOrigin { family: &p.family, store: p.store, created_micros: p.created_micros };
        let mut w = sst::SstWriter::create(
            &fs,
            path,
            origin,
            SstOptions { block_size, compression, block_entries: None, dictionary: None },
        )?;
        for i in 0..self.reader.index().len() {
            self.reader.read_block(i)?.try_for_each_entry(|e| w.add(e))?;
        }
        Ok(w.finish()?.file_size)
    }
}

/// What an SSTable's properties block records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstProperties {
    /// The column family's name when the file was written.
    pub family: String,
    /// The family's store id: its identity, never reused.
    pub store: u32,
    /// Cells.
    pub cells: u64,
    /// Tombstones (of columns and of families).
    pub tombstones: u64,
    /// Distinct rows.
    pub rows: u64,
    /// Over the entries, row key + family + qualifier + value + 8 bytes:
    /// the data's logical size, as Bigtable counts storage.
    pub logical_bytes: u64,
    /// Data blocks before compression.
    pub raw_data_bytes: u64,
    /// Data blocks as stored, with their trailers.
    pub stored_data_bytes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// The smallest row key.
    pub first_row: Vec<u8>,
    /// The largest row key.
    pub last_row: Vec<u8>,
    /// The smallest cell timestamp (`i64::MAX` without cells).
    pub min_timestamp: i64,
    /// The largest cell timestamp (`i64::MIN` without cells).
    pub max_timestamp: i64,
    /// The smallest sequence number.
    pub min_seq: u64,
    /// The largest sequence number.
    pub max_seq: u64,
    /// When the file was written, in µs since the epoch.
    pub created_micros: i64,
}

impl SstProperties {
    fn of(p: &Properties) -> SstProperties {
        SstProperties {
            family: p.family.clone(),
            store: p.store,
            cells: p.cells,
            tombstones: p.tombstones,
            rows: p.rows,
            logical_bytes: p.logical_bytes,
            raw_data_bytes: p.raw_data_bytes,
            stored_data_bytes: p.stored_data_bytes,
            data_blocks: p.data_blocks,
            first_row: p.first_row.to_vec(),
            last_row: p.last_row.to_vec(),
            min_timestamp: p.min_timestamp,
            max_timestamp: p.max_timestamp,
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            created_micros: p.created_micros,
        }
    }
}

/// Where a block lies in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockSpan {
    /// Its first byte's offset.
    pub offset: u64,
    /// Bytes as stored, before its trailer.
    pub stored_bytes: u32,
    /// Bytes once decompressed.
    pub raw_bytes: u32,
}

impl BlockSpan {
    fn of(h: &BlockHandle) -> BlockSpan {
        BlockSpan { offset: h.offset, stored_bytes: h.stored_len, raw_bytes: h.raw_len }
    }
}

/// Where the footer says an SSTable's metadata blocks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstSpans {
    /// The index block.
    pub index: BlockSpan,
    /// The row filter.
    pub bloom: BlockSpan,
    /// The properties block.
    pub properties: BlockSpan,
    /// The compression dictionary, if the file has one.
    pub dictionary: Option<BlockSpan>,
}

impl SstSpans {
    fn of(f: &Footer) -> SstSpans {
        SstSpans {
            index: BlockSpan::of(&f.index),
            bloom: BlockSpan::of(&f.bloom),
            properties: BlockSpan::of(&f.props),
            dictionary: f.dictionary.as_ref().map(BlockSpan::of),
        }
    }
}

/// An SSTable's metadata blocks and its row filter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstLayout {
    /// Where the footer says the metadata blocks are.
    pub spans: SstSpans,
    /// `cache-local`, `classic` (files written before the cache-local
    /// layout), or `none` (a block that does not decode as a filter).
    pub bloom_layout: String,
    /// Bits of the filter.
    pub bloom_bits: usize,
    /// Bits tested a row.
    pub bloom_probes: u8,
    /// Bytes the filter takes.
    pub bloom_bytes: usize,
}

/// A data block as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockInfo {
    /// Where it lies.
    pub span: BlockSpan,
    /// Its entries.
    pub entries: u32,
    /// The key of its last entry.
    pub last_key: EntryKey,
    /// The row of its first entry; `None` in a file whose index was written
    /// before it recorded first rows.
    pub first_row: Option<Vec<u8>>,
}

impl BlockInfo {
    fn of(ie: &IndexEntry) -> BlockInfo {
        BlockInfo {
            span: BlockSpan::of(&ie.handle),
            entries: ie.entries,
            last_key: EntryKey::of(&ie.last_key),
            first_row: ie.first_row.as_ref().map(|r| r.to_vec()),
        }
    }
}

/// A data block, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DataBlock {
    /// Its entries, in key order.
    pub entries: Vec<Entry>,
    /// Its distinct rows.
    pub rows: usize,
    /// Its oldest timestamp, as its timestamp column stores it (`None` if
    /// it is empty).
    pub oldest_timestamp: Option<i64>,
    /// Bytes of memory the decoded block takes: what it costs the block
    /// cache.
    pub decoded_bytes: usize,
}

impl DataBlock {
    /// Each entry is taken by its position, as a read that seeks into the
    /// block takes it, rather than in one pass.
    fn of(block: &DecodedBlock) -> DataBlock {
        let mut row = Vec::new();
        let entries = (0..block.len()).filter_map(|i| block.entry_in(i, &mut row).map(|e| Entry::of(&e))).collect();
        DataBlock {
            entries,
            rows: block.rows().count(),
            oldest_timestamp: block.oldest_timestamp(),
            decoded_bytes: block.memory_bytes(),
        }
    }
}

/// What [`SstFile::check`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SstCheck {
    /// Data blocks that read and decoded.
    pub blocks: u64,
    /// Their entries.
    pub entries: u64,
    /// The cells among them.
    pub cells: u64,
    /// Every fault, each an `Error::Corruption` with its offset.
    pub faults: Vec<Error>,
}

/// The name a fault in bytes given alone is reported in: offsets are into
/// those bytes.
fn bytes_named(what: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("({what})"))
}

/// Decodes `bytes` as a data block laid out as [`SstFile::block_bytes`]
/// gives it: for fuzzers and for tools that take blocks apart.
///
/// # Errors
/// `Error::Corruption` in the file `(data block)`, at the offset in `bytes`
/// where the decoder gave up.
pub fn decode_data_block(bytes: &[u8]) -> Result<DataBlock> {
    let block = DecodedBlock::decode(bytes).map_err(|e| e.in_file(&bytes_named("data block")))?;
    Ok(DataBlock::of(&block))
}

/// Decodes `bytes` as an index block, decompressed: the data blocks it
/// lists.
///
/// # Errors
/// `Error::Corruption` in the file `(index block)`, at the offset in `bytes`.
pub fn decode_index_block(bytes: &[u8]) -> Result<Vec<BlockInfo>> {
    let index = sst::index::decode(bytes).map_err(|e| e.in_file(&bytes_named("index block")))?;
    Ok(index.iter().map(BlockInfo::of).collect())
}

/// Decodes `bytes` as a properties block, decompressed.
///
/// # Errors
/// `Error::Corruption` in the file `(properties block)`, at the offset in
/// `bytes`.
pub fn decode_properties_block(bytes: &[u8]) -> Result<SstProperties> {
    let p = Properties::decode(bytes).map_err(|e| e.in_file(&bytes_named("properties block")))?;
    Ok(SstProperties::of(&p))
}

/// Decodes the footer that ends `bytes`, an SSTable's last bytes (at
/// least its footer's: [`SST_FOOTER_LEN`], or 80 in version 2).
///
/// # Errors
/// `Error::Corruption` in the file `(footer)`, at the offset in `bytes`.
pub fn decode_sst_footer(bytes: &[u8]) -> Result<SstSpans> {
    let (f, _) = Footer::decode_end(bytes).map_err(|e| e.in_file(&bytes_named("footer")))?;
    Ok(SstSpans::of(&f))
}
