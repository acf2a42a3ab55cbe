//! SSTables: immutable sorted files of one column family's entries.
//!
//! The format stands alone: it knows the entry format (`key.rs`), the
//! file-system seam and a generic block cache, and nothing of the engine —
//! no options, no clock, no other format. The inspection surface
//! (`cellardb::inspect`), the engine and the tests use [`SstWriter`],
//! [`SstReader`] and [`SstIter`] alike. The byte layout is specified in
//! `docs/format/sstable.md`:
//!
//! ```text
//! [data block][trailer] ... [dictionary block][trailer] (version 2 only)
//! [index block][trailer] [bloom block][trailer] [properties block][trailer]
//! [footer: 3 handles (4 in version 2), version, crc, magic]
//! ```

mod block;
mod block_builder;
mod bloom;
mod dictionary;
pub mod format;
pub(crate) mod index;
mod iter;
mod last_key;
mod props;
mod reader;
mod writer;

pub use block::DecodedBlock;
#[cfg(test)]
pub(crate) use block_builder::BlockBuilder;
pub(crate) use dictionary::DICTIONARY_BYTES;
pub use format::{BlockHandle, Footer};
pub use index::IndexEntry;
pub use iter::SstIter;
pub use props::Properties;
pub use reader::{SstBlockCache, SstReader};
pub use writer::{Compression, SstOptions, SstOrigin, SstSummary, SstWriter};

/// The file name of SSTable number `n`.
pub fn file_name(n: u64) -> String {
    format!("{n:06}.sst")
}

#[cfg(test)]
mod tests;
