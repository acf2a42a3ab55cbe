//! Decoding a data block (see [`super::block_builder`] for the layout).
//!
//! A block decodes whole, once, into the compact columnar form the block
//! cache keeps. Each per-entry integer (row, qualifier, kind, timestamp,
//! sequence number, value position and length) is stored as an offset from
//! the block's smallest, in the narrowest width that holds the block's
//! largest; a field equal in every entry (sequence numbers after a full
//! compaction, kinds where every entry is a cell) takes no space at all, nor
//! does one that grows or shrinks by a fixed step (each entry its own row,
//! values of one length, a column's minutes), and timestamps count in the
//! largest unit dividing their differences (minutes, in a series of
//! minutes). Where a stored stream says by its tag that its values step
//! evenly (one delta after the first in a block of one column, as in a
//! compacted column of regular measurements; or, in a block of several,
//! every value equal, as sequence numbers after a compaction), the field
//! is made from the tag, without a pass over the entries. Beside them:
//! the rebuilt row keys (the prefix all of them share once, then the rest
//! of each), the qualifier dictionary and the values, copied out of the
//! decompressed block, whose encoded streams are then dropped. A block of
//! one column of a wide row of small measurements costs little more than
//! its values (3 bytes an entry for three-digit measurements), where fixed
//! 40-byte slots over the kept raw block cost 55; a block of a
//! single-timestamp table's minutes keeps a few bytes of each 34-byte key.
//!
//! An entry is handed out as a borrowed [`EntryRef`], without reference
//! counting; iteration forward and backward is indexing. Its row key is
//! the block's own bytes where the block holds it whole (a block of one
//! row, or of rows that share no prefix); otherwise the reader copies it
//! out once a row ([`DecodedBlock::entry_in`], [`super::SstIter`]).
//!
//! [`EntryRef`]: crate::key::EntryRef

mod decode;
mod ints;
pub(super) mod layout;
mod part;
mod search;
#[cfg(test)]
mod tests;

pub use decode::DecodedBlock;
pub(super) use part::BlockPart;
pub(super) use search::{EntryAt, partition_point};
