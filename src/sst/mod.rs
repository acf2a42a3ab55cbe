//! SSTables: immutable sorted files of one column family's entries.
//!
//! This module knows nothing of the engine: the dump tool, benches and tests
//! use [`SstWriter`], [`SstReader`] and [`SstIter`] on their own. The byte
//! layout is specified in `docs/format/sstable.md`:
//!
//! ```text
//! [data block][trailer] ... [index block][trailer] [bloom block][trailer]
//! [properties block][trailer] [footer: 3 handles, version, crc, magic]
//! ```

mod block;
mod block_builder;
pub mod bloom;
pub mod format;
pub mod index;
mod iter;
mod props;
mod reader;
mod writer;

pub use block::DecodedBlock;
pub use iter::SstIter;
pub use props::Properties;
pub use reader::{CheckReport, SstReader};
pub use writer::{SstOptions, SstSummary, SstWriter};

/// The file name of SSTable number `n`.
pub fn file_name(n: u64) -> String {
    format!("{n:06}.sst")
}
