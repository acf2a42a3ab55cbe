//! Reading an SSTable: footer, index, filter and properties at open; data
//! blocks on demand, checksummed, decompressed and cached.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use zstd::zstd_safe::{DCtx, DDict};

use super::Properties;
use super::block::{BlockPart, DecodedBlock};
use super::bloom::{self, BloomSummary, RowFilter};
use super::dictionary::{ReaderDictionary, zstd_error};
use super::format::{BlockCompression, BlockHandle, Footer, MAX_RAW_BLOCK, StoredBlock, TRAILER_LEN, check_trailer};
use super::index::{self, IndexEntry, IndexKeys};
use super::last_key::LastKey;
use crate::cache::{BlockCache, Lookup};
use crate::coding::DecodeError;
use crate::key::InternalKey;
use crate::{Error, Result};

/// The cache an SSTable's decoded data blocks are kept in.
pub type SstBlockCache = BlockCache<DecodedBlock>;

thread_local! {
    static DECOMPRESSOR: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
    /// A data block, decompressed to be decoded: one buffer per thread.
    static RAW_BLOCK: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The most entries a read of one row, or a reversed read's first, decodes
/// as a part of a block ([`SstReader::block_for_row`],
/// [`SstReader::block_before`]); a read that goes on past them decodes the
/// block whole. A point read takes a few; a column's cells in a time
/// range, an hour's or so; a reversed read gives up gathering a row
/// backwards after as many as this (`read::scan::WIDE_ROW_ENTRIES`).
pub(crate) const PART_CAP: usize = 128;

/// What a read of one row, or a reversed read's first, gets of a data
/// block ([`SstReader::block_for_row`], [`SstReader::block_before`]).
#[derive(Debug)]
pub(crate) enum RowBlock {
    /// The whole block.
    Whole(Arc<DecodedBlock>),
    /// Entries `first..first + block.len()` of the block's `total`.
    Part { block: Arc<DecodedBlock>, first: usize, total: usize },
}

/// An open SSTable.
#[derive(Debug)]
pub struct SstReader {
    path: PathBuf,
    id: u64,
    data: Bytes,
    footer: Footer,
    /// Where the footer starts: every block ends before it.
    footer_at: usize,
    /// The compression dictionary, if the file has one.
    dictionary: Option<ReaderDictionary>,
    index: Vec<IndexEntry>,
    /// The index's keys laid out for a seek's search.
    index_keys: IndexKeys,
    bloom: RowFilter,
    props: Properties,
    blocks_decoded: AtomicU64,
}

impl SstReader {
    /// Opens the SSTable whose bytes are `data` (read from `path`).
    ///
    /// # Errors
    /// `Error::Corruption` if the footer, index, filter or properties fail
    /// their checks.
    pub fn open(path: &Path, data: Bytes) -> Result<SstReader> {
        SstReader::open_with_id(path, data, 0)
    }

    /// [`SstReader::open`], with `id` naming the file in a block cache:
    /// unique among the tables that share one.
    pub(crate) fn open_with_id(path: &Path, data: Bytes, id: u64) -> Result<SstReader> {
        let (footer, footer_at) = Footer::decode_end(&data).map_err(|e| e.in_file(path))?;
        let mut reader = SstReader {
            path: path.to_path_buf(),
            id,
            data,
            footer,
            footer_at,
            dictionary: None,
            index: Vec::new(),
            index_keys: IndexKeys::default(),
            bloom: RowFilter::PassAll,
            props: Properties::default(),
            blocks_decoded: AtomicU64::new(0),
        };
        let raw_index = reader.read_raw(&footer.index)?;
        reader.index = index::decode(&raw_index).map_err(|e| reader.block_corruption(&footer.index, &e))?;
        reader.index_keys = IndexKeys::of(&reader.index).map_err(|e| reader.block_corruption(&footer.index, &e))?;
        reader.bloom = RowFilter::decode(&reader.read_raw(&footer.bloom)?);
        let raw_props = reader.read_raw(&footer.props)?;
        reader.props = Properties::decode(&raw_props).map_err(|e| reader.block_corruption(&footer.props, &e))?;
        if let Some(handle) = &footer.dictionary {
            let bytes = reader.read_raw(handle)?;
            let loaded = ReaderDictionary::load(bytes);
            let fault = || Error::corruption(path, handle.offset, "compression dictionary does not load");
            reader.dictionary = Some(loaded.ok_or_else(fault)?);
        }
        Ok(reader)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The id given at open.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Bytes of the file.
    pub fn file_size(&self) -> u64 {
        self.data.len() as u64
    }

    /// The properties block.
    pub fn props(&self) -> &Properties {
        &self.props
    }

    /// The footer: where the index, filter and properties blocks are.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Bytes of the footer.
    pub fn footer_len(&self) -> usize {
        self.data.len() - self.footer_at
    }

    /// The compression dictionary's bytes, if the file has one.
    pub fn dictionary(&self) -> Option<&Bytes> {
        self.dictionary.as_ref().map(|d| &d.bytes)
    }

    /// The index: one entry per data block.
    pub fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// The index's keys laid out for a seek's search.
    pub(crate) fn index_keys(&self) -> &IndexKeys {
        &self.index_keys
    }

    /// Bytes of the bloom filter block.
    pub fn bloom_bytes(&self) -> usize {
        self.footer.bloom.stored_len as usize
    }

    /// The bloom filter's layout, bits and probes.
    pub fn bloom(&self) -> BloomSummary {
        self.bloom.summary()
    }

    /// Data blocks decompressed and decoded since open (cache hits excluded).
    pub(crate) fn blocks_decoded(&self) -> u64 {
        self.blocks_decoded.load(Ordering::Relaxed)
    }

    /// The decoded filter.
    #[cfg(test)]
    pub(crate) fn row_filter(&self) -> &RowFilter {
        &self.bloom
    }

    /// Whether the file may hold entries of `row` (false: it surely does not).
    pub fn may_contain_row(&self, row: &[u8]) -> bool {
        self.bloom.may_contain(bloom::row_hash(row))
    }

    /// Data block `i` (the index's entry `i`), read, checked and decoded.
    ///
    /// # Errors
    /// `Error::Corruption` at the block's offset if it fails its checksum
    /// or does not decode; `Error::InvalidArgument` if there is no block `i`.
    pub fn read_block(&self, i: usize) -> Result<Arc<DecodedBlock>> {
        self.block(i, None)
    }

    /// Data block `i`, from `cache` if there, else read, checked, decoded
    /// and cached.
    pub(crate) fn block(&self, i: usize, cache: Option<&SstBlockCache>) -> Result<Arc<DecodedBlock>> {
        if let Some(block) = cache.and_then(|c| c.get((self.id, i as u64))) {
            return Ok(block);
        }
        self.decode_block(i, cache)
    }

    /// What a forward read of `target`'s row from `target` gets of data
    /// block `i`: the block from `cache` if there; else decoded whole and
    /// cached if the cache admits it ([`BlockCache::get_or_admit`]); else
    /// only the part the read needs ([`BlockPart`]), not cached. Without a
    /// cache, the part.
    pub(crate) fn block_for_row(
        &self,
        i: usize,
        cache: Option<&SstBlockCache>,
        (target, inclusive): (&InternalKey, bool),
    ) -> Result<RowBlock> {
        self.block_or_part(i, cache, |raw| BlockPart::decode(raw, target, inclusive, PART_CAP))
    }

    /// What a reversed read from below `bound` (from the block's end if
    /// `None`) gets first of data block `i`: as [`SstReader::block_for_row`],
    /// the part being its last row below the bound ([`BlockPart::decode_before`]).
    pub(crate) fn block_before(
        &self,
        i: usize,
        cache: Option<&SstBlockCache>,
        bound: Option<(&InternalKey, bool)>,
    ) -> Result<RowBlock> {
        self.block_or_part(i, cache, |raw| BlockPart::decode_before(raw, bound, PART_CAP))
    }

    /// Data block `i` from `cache`, or decoded whole if the cache admits
    /// it; else (or without a cache) the part `decode` makes of it.
    fn block_or_part(
        &self,
        i: usize,
        cache: Option<&SstBlockCache>,
        decode: impl FnOnce(&[u8]) -> std::result::Result<BlockPart, DecodeError>,
    ) -> Result<RowBlock> {
        if let Some(c) = cache {
            match c.get_or_admit((self.id, i as u64)) {
                Lookup::Hit(block) => return Ok(RowBlock::Whole(block)),
                Lookup::Admit => return self.decode_block(i, cache).map(RowBlock::Whole),
                Lookup::Refuse => {}
            }
        }
        let handle = self.handle(i)?;
        let part = self.with_raw(&handle, decode)?.map_err(|e| self.block_corruption(&handle, &e))?;
        self.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        Ok(RowBlock::Part { block: Arc::new(part.block), first: part.first, total: part.total })
    }

    /// Data block `i`, read, checked and decoded, and cached in `cache`.
    fn decode_block(&self, i: usize, cache: Option<&SstBlockCache>) -> Result<Arc<DecodedBlock>> {
        let handle = self.handle(i)?;
        let decoded = self.with_raw(&handle, DecodedBlock::decode)?;
        let block = Arc::new(decoded.map_err(|e| self.block_corruption(&handle, &e))?);
        self.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = cache {
            c.insert((self.id, i as u64), block.clone());
        }
        Ok(block)
    }

    /// Where data block `i` is.
    fn handle(&self, i: usize) -> Result<BlockHandle> {
        let Some(entry) = self.index.get(i) else {
            let what = format!("block {i} of {}: the file has {} data blocks", self.path.display(), self.index.len());
            return Err(Error::InvalidArgument(what));
        };
        Ok(entry.handle)
    }

    /// Data block `i` as stored (compressed or not), its checksum checked:
    /// for a compaction that copies the block into its output unchanged.
    ///
    /// # Errors
    /// `Error::Corruption` at the block's offset if it fails its checksum;
    /// `Error::InvalidArgument` if there is no block `i`.
    pub(crate) fn stored_block(&self, i: usize) -> Result<StoredBlock> {
        let Some(entry) = self.index.get(i) else {
            let what = format!("block {i} of {}: the file has {} data blocks", self.path.display(), self.index.len());
            return Err(Error::InvalidArgument(what));
        };
        let stored = self.stored(&entry.handle)?;
        let uses_dictionary = stored.compression == BlockCompression::ZstdDictionary;
        Ok(StoredBlock {
            dictionary: self.dictionary().filter(|_| uses_dictionary).cloned(),
            bytes: stored.bytes,
            compression: stored.compression,
            raw_len: entry.handle.raw_len,
            entries: entry.entries,
        })
    }

    /// Data block `i`'s bytes, checksum verified and decompressed, not
    /// decoded (inspection takes blocks apart).
    ///
    /// # Errors
    /// `Error::Corruption` at the block's offset if it fails its checksum or
    /// does not decompress to its handle's length; `Error::InvalidArgument`
    /// if there is no block `i`.
    pub(crate) fn block_bytes(&self, i: usize) -> Result<Bytes> {
        self.read_raw(&self.handle(i)?)
    }

    /// A block (data, index or properties) whose bytes passed their
    /// checksum but do not decode: the fault is named at the block's offset
    /// in the file, with its place in the decompressed bytes.
    fn block_corruption(&self, handle: &BlockHandle, e: &DecodeError) -> Error {
        Error::corruption(
            &self.path,
            handle.offset,
            format!("block does not decode: {} (at byte {} of the decompressed block)", e.what, e.offset),
        )
    }

    /// The decompressed bytes of the block at `handle`, checksum verified.
    /// The block at `handle`, checked and decompressed: metadata blocks, kept.
    fn read_raw(&self, handle: &BlockHandle) -> Result<Bytes> {
        let stored = self.stored(handle)?;
        if stored.compression == BlockCompression::Raw {
            return Ok(stored.bytes);
        }
        let mut raw = Vec::with_capacity(stored.raw_len);
        self.decompress(handle, &stored, &mut raw)?;
        Ok(raw.into())
    }

    /// `f` of the block at `handle`, checked and decompressed into a
    /// per-thread buffer: data blocks, which are decoded and not kept.
    fn with_raw<T>(&self, handle: &BlockHandle, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let stored = self.stored(handle)?;
        if stored.compression == BlockCompression::Raw {
            return Ok(f(&stored.bytes));
        }
        RAW_BLOCK.with(|cell| {
            let mut raw = cell.borrow_mut();
            raw.clear();
            raw.reserve(stored.raw_len);
            self.decompress(handle, &stored, &mut raw)?;
            Ok(f(&raw))
        })
    }

    /// Decompresses the block at `handle` (`stored`, a zstd frame) into
    /// `out`, which has the capacity its handle gives, with the file's
    /// dictionary if the block says so, and checks its length.
    fn decompress(&self, handle: &BlockHandle, stored: &Stored, out: &mut Vec<u8>) -> Result<()> {
        let dictionary = match (stored.compression, &self.dictionary) {
            (BlockCompression::ZstdDictionary, Some(d)) => Some(&d.ddict),
            (BlockCompression::ZstdDictionary, None) => {
                let what = "block compressed with a dictionary the file does not have";
                return Err(Error::corruption(&self.path, handle.offset, what));
            }
            _ => None,
        };
        decompress(&stored.bytes, dictionary, out).map_err(|e| e.at(handle.offset).in_file(&self.path))?;
        self.check_raw_len(handle, out.len())
    }

    /// The stored bytes of the block at `handle`, checksum checked.
    fn stored(&self, handle: &BlockHandle) -> Result<Stored> {
        let at = handle.offset;
        let corrupt = |what: &'static str| Error::corruption(&self.path, at, what);
        let meta_end = self.footer_at as u64;
        if handle.end().is_none_or(|end| end > meta_end) {
            return Err(corrupt("block handle points past the end of the data"));
        }
        if handle.raw_len > MAX_RAW_BLOCK {
            return Err(corrupt("block larger than 256 MiB once decompressed"));
        }
        let start = usize::try_from(at).map_err(|_| corrupt("block offset"))?;
        let stored_end = start + handle.stored_len as usize;
        let bytes = self.data.slice(start..stored_end);
        let trailer = &self.data[stored_end..stored_end + TRAILER_LEN];
        let compression = check_trailer(&bytes, trailer).map_err(|e| e.at(at).in_file(&self.path))?;
        if compression == BlockCompression::Raw {
            self.check_raw_len(handle, bytes.len())?;
        }
        Ok(Stored { bytes, compression, raw_len: handle.raw_len as usize })
    }

    fn check_raw_len(&self, handle: &BlockHandle, len: usize) -> Result<()> {
        if len == handle.raw_len as usize {
            Ok(())
        } else {
            Err(Error::corruption(&self.path, handle.offset, "block length differs from its handle"))
        }
    }

    /// Reads and decodes every block and checks that keys strictly increase.
    /// Returns the number of entries.
    ///
    /// # Errors
    /// `Error::Corruption` naming the offset of the first bad block.
    #[cfg(test)]
    pub fn verify(&self) -> Result<u64> {
        let report = self.check();
        match report.faults.into_iter().next() {
            Some(fault) => Err(fault),
            None => Ok(report.entries),
        }
    }

    /// Reads and decodes every block, checking its checksum, that keys
    /// strictly increase within and across blocks, that each block agrees
    /// with its index entry (last key, first row, entry count), and that
    /// the entries add up to the properties' counts. Unlike
    /// [`SstReader::verify`] it goes on past a bad block, so it reports
    /// every fault (each `Error::Corruption` with its offset).
    pub fn check(&self) -> CheckReport {
        let mut report = CheckReport::default();
        // The key of the last entry checked, or of the index entry of a
        // bad block, in buffers reused from entry to entry.
        let mut last = LastKey::default();
        for (i, ie) in self.index.iter().enumerate() {
            let fault = |what: String| Error::corruption(&self.path, ie.handle.offset, what);
            let block = match self.block(i, None) {
                Ok(block) => block,
                Err(e) => {
                    report.faults.push(e);
                    // Keys after a bad block are compared with its index key.
                    last.set_key(&ie.last_key);
                    continue;
                }
            };
            report.blocks += 1;
            let mut j = 0;
            block.for_each_entry(|e| {
                if last.is_set() && last.cmp_entry(&e).is_ge() {
                    report.faults.push(fault(format!("block {i}: entry {j} is not after the entry before it")));
                }
                if e.kind.is_cell() {
                    report.cells += 1;
                }
                last.set(&e);
                j += 1;
            });
            let last_in_index = block.entry(block.len().wrapping_sub(1)).is_some_and(|l| l.key == ie.last_key);
            if !last_in_index {
                report.faults.push(fault(format!("block {i}: its last key differs from its index entry's")));
            }
            let first_in_index = ie.first_row.as_ref().is_none_or(|f| block.entry(0).is_some_and(|e| e.key.row == f));
            if !first_in_index {
                report.faults.push(fault(format!("block {i}: its first row differs from its index entry's")));
            }
            if block.len() != ie.entries as usize {
                let what = format!("block {i}: {} entries, its index entry says {}", block.len(), ie.entries);
                report.faults.push(fault(what));
            }
            report.entries += block.len() as u64;
        }
        if report.faults.is_empty() {
            let (p, tombstones) = (&self.props, report.entries - report.cells);
            if (p.cells, p.tombstones, p.data_blocks) != (report.cells, tombstones, self.index.len() as u64) {
                let what = format!(
                    "properties count {} cells, {} tombstones, {} blocks; the blocks hold {}, {}, {}",
                    p.cells,
                    p.tombstones,
                    p.data_blocks,
                    report.cells,
                    tombstones,
                    self.index.len()
                );
                report.faults.push(Error::corruption(&self.path, self.footer.props.offset, what));
            }
        }
        report
    }
}

/// What [`SstReader::check`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CheckReport {
    /// Data blocks that read and decoded.
    pub blocks: u64,
    /// Entries in those blocks.
    pub entries: u64,
    /// Cells (puts) among them.
    pub cells: u64,
    /// Every fault found, in file order.
    pub faults: Vec<Error>,
}

/// A block as stored, its checksum checked.
struct Stored {
    bytes: Bytes,
    compression: BlockCompression,
    raw_len: usize,
}

/// Decompresses the zstd frame `stored` into `out`, which has the capacity
/// the block's handle gives, with `dictionary` if given; a fault is at the
/// frame's start.
fn decompress(stored: &[u8], dictionary: Option<&DDict<'_>>, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(DCtx::try_create().ok_or(DecodeError::new(0, "no zstd context"))?);
        }
        let d = slot.as_mut().ok_or(DecodeError::new(0, "no zstd context"))?;
        let done = match dictionary {
            Some(ddict) => d.decompress_using_ddict(out, stored, ddict),
            None => d.decompress(out, stored),
        };
        done.map(|_| ())
            .map_err(|code| DecodeError::new(0, format!("zstd frame does not decompress: {}", zstd_error(code))))
    })
}
