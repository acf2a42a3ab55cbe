//! The SSTable's framing: block handles, block trailers and the footer.
//! Specified in `docs/format/sstable.md`.

use crate::coding::{Cursor, DecodeError, crc32};

/// Last bytes of every SSTable.
pub const MAGIC: &[u8; 8] = b"CELLARSS";
/// Format version in the footer. Version changes: 1 is the first.
pub const VERSION: u32 = 1;
/// Bytes of the footer.
pub const FOOTER_LEN: usize = 64;
/// Bytes after each block's stored bytes: compression tag and checksum.
pub const TRAILER_LEN: usize = 5;
/// Largest decoded block a reader accepts (a cell may hold 100 MiB).
pub const MAX_RAW_BLOCK: u32 = 256 << 20;

/// How a block's bytes are stored. Written to disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockCompression {
    /// Stored as encoded.
    Raw = 0,
    /// One zstd frame.
    Zstd = 1,
}

impl BlockCompression {
    /// The compression with tag `b`.
    pub(crate) fn from_tag(b: u8) -> Option<Self> {
        match b {
            0 => Some(BlockCompression::Raw),
            1 => Some(BlockCompression::Zstd),
            _ => None,
        }
    }
}

/// Where a block is: offset of its stored bytes, their length (trailer
/// excluded) and its length once decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BlockHandle {
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Stored bytes, trailer excluded.
    pub stored_len: u32,
    /// Bytes once decompressed.
    pub raw_len: u32,
}

impl BlockHandle {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.stored_len.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
    }

    fn decode(c: &mut Cursor<'_>) -> Result<BlockHandle, DecodeError> {
        Ok(BlockHandle {
            offset: c.u64_le("block offset")?,
            stored_len: c.u32_le("block stored length")?,
            raw_len: c.u32_le("block raw length")?,
        })
    }

    /// Offset just past the block's trailer; `None` if that overflows.
    pub(crate) fn end(&self) -> Option<u64> {
        self.offset.checked_add(u64::from(self.stored_len) + TRAILER_LEN as u64)
    }
}

/// The fixed-size end of the file, pointing at the metadata blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The bloom filter block.
    pub bloom: BlockHandle,
    /// The properties block.
    pub props: BlockHandle,
}

impl Footer {
    /// The footer's 64 bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        self.index.encode(&mut out);
        self.bloom.encode(&mut out);
        self.props.encode(&mut out);
        out.extend_from_slice(&VERSION.to_le_bytes());
        let crc = crc32(&[&out]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out
    }

    /// Decodes the footer from the last 64 bytes of a file.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset within the footer of what is wrong.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer, DecodeError> {
        let mut c = Cursor::new(bytes);
        let err = |offset, what| Err(DecodeError::new(offset, what));
        if bytes.len() != FOOTER_LEN {
            return err(0, "footer length");
        }
        if &bytes[56..] != MAGIC {
            return err(56, "not a cellardb SSTable: bad magic");
        }
        if crc32(&[&bytes[..52]]) != u32::from_le_bytes([bytes[52], bytes[53], bytes[54], bytes[55]]) {
            return err(0, "footer checksum mismatch");
        }
        let footer = Footer {
            index: BlockHandle::decode(&mut c)?,
            bloom: BlockHandle::decode(&mut c)?,
            props: BlockHandle::decode(&mut c)?,
        };
        let version = c.u32_le("format version")?;
        if version != VERSION {
            return err(48, "unsupported SSTable format version");
        }
        Ok(footer)
    }
}

/// The trailer of a block stored as `stored` with `compression`.
pub fn trailer(stored: &[u8], compression: BlockCompression) -> [u8; TRAILER_LEN] {
    let tag = compression as u8;
    let crc = crc32(&[stored, &[tag]]);
    let c = crc.to_le_bytes();
    [tag, c[0], c[1], c[2], c[3]]
}

/// Checks a block's trailer and returns how it is compressed.
///
/// # Errors
/// A [`DecodeError`] at offset 0, the block's first byte: the checksum
/// covers the whole block, so the damage is somewhere from there on.
pub fn check_trailer(stored: &[u8], trailer: &[u8]) -> Result<BlockCompression, DecodeError> {
    let [tag, a, b, c, d] = *trailer else {
        return Err(DecodeError::new(0, "block trailer cut short"));
    };
    if crc32(&[stored, &[tag]]) != u32::from_le_bytes([a, b, c, d]) {
        return Err(DecodeError::new(0, "block checksum mismatch"));
    }
    BlockCompression::from_tag(tag).ok_or(DecodeError::new(0, "unknown block compression"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trips_and_rejects_damage() {
        let h = |o| BlockHandle { offset: o, stored_len: 7, raw_len: 9 };
        let f = Footer { index: h(1), bloom: h(2), props: h(3) };
        let bytes = f.encode();
        assert_eq!(bytes.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&bytes).unwrap(), f);
        for i in 0..FOOTER_LEN {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
    }
}
