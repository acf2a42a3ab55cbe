//! The SSTable's framing: block handles, block trailers and the footer,
//! and a data block as stored.
//! Specified in `docs/format/sstable.md`.

use bytes::Bytes;

use crate::coding::{Cursor, DecodeError, crc32};

/// Last bytes of every SSTable.
pub const MAGIC: &[u8; 8] = b"CELLARSS";
/// The newest format version a footer carries. Version changes: 1 is the
/// first; 2 adds a compression dictionary (a fourth handle in the footer,
/// and block compression [`BlockCompression::ZstdDictionary`]). A file
/// without a dictionary is still written as version 1.
pub const VERSION: u32 = 2;
/// Bytes of a version-1 footer: a file without a dictionary.
pub const FOOTER_LEN: usize = 64;
/// Bytes of a version-2 footer: a file with a dictionary.
pub const FOOTER_LEN_V2: usize = 80;
/// Bytes every footer ends with: version, checksum, magic.
const FOOTER_TAIL: usize = 16;
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
    /// One zstd frame compressed with the file's dictionary.
    ZstdDictionary = 2,
}

impl BlockCompression {
    /// The compression with tag `b`.
    pub(crate) fn from_tag(b: u8) -> Option<Self> {
        match b {
            0 => Some(BlockCompression::Raw),
            1 => Some(BlockCompression::Zstd),
            2 => Some(BlockCompression::ZstdDictionary),
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

/// The end of the file, pointing at the metadata blocks: 64 bytes in
/// version 1, 80 in version 2 (which adds the dictionary's handle). Both
/// end with the version, a checksum and the magic, so a reader finds the
/// version before it knows the footer's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The bloom filter block.
    pub bloom: BlockHandle,
    /// The properties block.
    pub props: BlockHandle,
    /// The compression dictionary block, if the file has one (version 2).
    pub dictionary: Option<BlockHandle>,
}

impl Footer {
    /// Bytes of the footer as encoded.
    pub(crate) fn encoded_len(&self) -> usize {
        if self.dictionary.is_some() { FOOTER_LEN_V2 } else { FOOTER_LEN }
    }

    /// The footer's bytes: version 2 if the file has a dictionary, else 1.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.index.encode(&mut out);
        self.bloom.encode(&mut out);
        self.props.encode(&mut out);
        let version: u32 = match &self.dictionary {
            Some(d) => {
                d.encode(&mut out);
                2
            }
            None => 1,
        };
        out.extend_from_slice(&version.to_le_bytes());
        let crc = crc32(&[&out]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out
    }

    /// Decodes the footer at the end of `file`, and says where it starts.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset within `file` of what is wrong.
    pub(crate) fn decode_end(file: &[u8]) -> Result<(Footer, usize), DecodeError> {
        let err = |offset: usize, what| Err(DecodeError::new(offset as u64, what));
        let Some(tail_at) = file.len().checked_sub(FOOTER_TAIL) else {
            return err(0, "file too short to be an SSTable");
        };
        let tail = &file[tail_at..];
        if &tail[8..] != MAGIC {
            return err(tail_at + 8, "not a cellardb SSTable: bad magic");
        }
        let len = match u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) {
            1 => FOOTER_LEN,
            2 => FOOTER_LEN_V2,
            _ => return err(tail_at, "unsupported SSTable format version"),
        };
        let Some(at) = file.len().checked_sub(len) else {
            return err(0, "file too short for its footer");
        };
        let footer = Footer::decode(&file[at..]).map_err(|e| e.at(at as u64))?;
        Ok((footer, at))
    }

    /// Decodes a footer from its bytes, all of them.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset within the footer of what is wrong.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer, DecodeError> {
        let err = |offset: usize, what| Err(DecodeError::new(offset as u64, what));
        let Some(tail_at) = bytes.len().checked_sub(FOOTER_TAIL) else {
            return err(0, "footer length");
        };
        if &bytes[tail_at + 8..] != MAGIC {
            return err(tail_at + 8, "not a cellardb SSTable: bad magic");
        }
        let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let has_dictionary = match (word(tail_at), bytes.len()) {
            (1, FOOTER_LEN) => false,
            (2, FOOTER_LEN_V2) => true,
            (1 | 2, _) => return err(0, "footer length differs from its version's"),
            _ => return err(tail_at, "unsupported SSTable format version"),
        };
        if crc32(&[&bytes[..tail_at + 4]]) != word(tail_at + 4) {
            return err(0, "footer checksum mismatch");
        }
        let mut c = Cursor::new(bytes);
        Ok(Footer {
            index: BlockHandle::decode(&mut c)?,
            bloom: BlockHandle::decode(&mut c)?,
            props: BlockHandle::decode(&mut c)?,
            dictionary: if has_dictionary { Some(BlockHandle::decode(&mut c)?) } else { None },
        })
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

/// A data block as stored in its file, its checksum checked.
pub(crate) struct StoredBlock {
    /// The stored bytes, without the trailer.
    pub bytes: Bytes,
    /// How they are compressed.
    pub compression: BlockCompression,
    /// Bytes once decompressed.
    pub raw_len: u32,
    /// Entries in the block.
    pub entries: u32,
    /// The file's dictionary, if the block is compressed with it.
    pub dictionary: Option<Bytes>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_footer_is_found_by_its_version_and_a_short_file_is_an_error() {
        let h = |o| BlockHandle { offset: o, stored_len: 7, raw_len: 9 };
        let v2 = Footer { index: h(1), bloom: h(2), props: h(3), dictionary: Some(h(4)) }.encode();
        assert!(Footer::decode_end(&v2[FOOTER_LEN_V2 - FOOTER_LEN..]).is_err(), "a version-2 footer cut to 64 bytes");
        assert!(Footer::decode_end(&v2[..10]).is_err());
        let mut v9 = v2.clone();
        v9[FOOTER_LEN_V2 - 16] = 9;
        let e = Footer::decode_end(&v9).unwrap_err();
        assert_eq!((e.offset, &*e.what), ((FOOTER_LEN_V2 - 16) as u64, "unsupported SSTable format version"));
    }

    #[test]
    fn footer_round_trips_and_rejects_damage() {
        let h = |o| BlockHandle { offset: o, stored_len: 7, raw_len: 9 };
        for (dictionary, len) in [(None, FOOTER_LEN), (Some(h(4)), FOOTER_LEN_V2)] {
            let f = Footer { index: h(1), bloom: h(2), props: h(3), dictionary };
            let bytes = f.encode();
            assert_eq!(bytes.len(), len);
            assert_eq!(Footer::decode(&bytes).unwrap(), f);
            let mut file = vec![7u8; 100];
            file.extend_from_slice(&bytes);
            assert_eq!(Footer::decode_end(&file).unwrap(), (f, 100));
            for i in 0..len {
                let mut bad = bytes.clone();
                bad[i] ^= 1;
                assert!(Footer::decode(&bad).is_err(), "byte {i}");
            }
        }
    }
}
