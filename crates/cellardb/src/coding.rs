//! Little-endian integers, LEB128 varints and a bounds-checked reader.
//!
//! Every on-disk integer in cellardb is either fixed-width little-endian or a
//! LEB128 varint (signed values zigzag-encoded first). Decoding never panics:
//! [`Cursor`] returns a [`DecodeError`] carrying the offset where the bytes ran
//! out or made no sense. Every decoder of every format fails in that one
//! shape; the code that knows the file ([`DecodeError::in_file`]) turns it
//! into `Error::Corruption` with the file's path and the offset in the file.

use std::borrow::Cow;
use std::path::Path;

use crate::Error;

/// Where and why a decode failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset of the fault, relative to the start of the bytes decoded
    /// until [`DecodeError::at`] places it further in a file.
    pub offset: u64,
    /// What was expected, or what was wrong.
    pub what: Cow<'static, str>,
}

impl DecodeError {
    /// A fault at `offset`.
    pub fn new(offset: u64, what: impl Into<Cow<'static, str>>) -> DecodeError {
        DecodeError { offset, what: what.into() }
    }

    /// The same fault, in bytes that start `base` bytes further on.
    #[must_use]
    pub fn at(self, base: u64) -> DecodeError {
        DecodeError { offset: base.saturating_add(self.offset), ..self }
    }

    /// The fault as `Error::Corruption` of `file` (the offset must be the
    /// file's by now).
    pub fn in_file(self, file: &Path) -> Error {
        Error::corruption(file, self.offset, self.what)
    }
}

/// Appends `v` as a LEB128 varint.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    buf.push((v & 0x7f) as u8);
}

/// Appends a signed value as a zigzag LEB128 varint.
pub fn put_zigzag(buf: &mut Vec<u8>, v: i64) {
    put_varint(buf, zigzag(v));
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Maps signed to unsigned so that small magnitudes stay small.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)).cast_unsigned()
}

/// Inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    (v >> 1).cast_signed() ^ -(v & 1).cast_signed()
}

/// A bounds-checked reader over a byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Current offset from the start of the buffer.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True once every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error at the current position.
    pub fn error(&self, what: &'static str) -> DecodeError {
        DecodeError::new(self.pos as u64, what)
    }

    /// An error at `offset` of the buffer.
    #[allow(clippy::unused_self, reason = "read beside `error`, as the cursor's error")]
    pub fn error_at(&self, offset: usize, what: &'static str) -> DecodeError {
        DecodeError::new(offset as u64, what)
    }

    /// Reads one byte.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let b = *self.buf.get(self.pos).ok_or_else(|| self.error(what))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.error(what))?;
        let slice = self.buf.get(self.pos..end).ok_or_else(|| self.error(what))?;
        self.pos = end;
        Ok(slice)
    }

    /// Reads a fixed-width little-endian u32.
    pub fn u32_le(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a fixed-width little-endian u64.
    pub fn u64_le(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Reads a LEB128 varint of at most 10 bytes.
    #[inline]
    pub fn varint(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        // Most varints of a block's streams are one byte.
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        self.long_varint(what)
    }

    /// [`Cursor::varint`] of more than one byte, or at the end.
    #[inline(never)]
    fn long_varint(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.pos = start;
        Err(self.error(what))
    }

    /// Reads `n` varints into `out` (cleared first): what [`Cursor::varint`]
    /// gives `n` times, read eight bytes at a time. A block's streams are
    /// thousands of varints of one to three bytes; reading them a byte at
    /// a time, with a bounds check each, was most of a block's decode.
    ///
    /// # Errors
    /// As [`Cursor::varint`], at the varint that does not decode.
    pub fn varints(&mut self, n: usize, what: &'static str, out: &mut Vec<u64>) -> Result<(), DecodeError> {
        out.clear();
        out.resize(n, 0);
        let buf = self.buf;
        let mut pos = self.pos;
        for slot in out.iter_mut() {
            if let Some(word) = buf.get(pos..).and_then(<[u8]>::first_chunk::<8>) {
                let word = u64::from_le_bytes(*word);
                if word & 0x80 == 0 {
                    *slot = word & 0x7f;
                    pos += 1;
                    continue;
                }
                // The byte that ends the varint is the first with its top bit clear.
                let stops = !word & 0x8080_8080_8080_8080;
                if stops != 0 {
                    let len = stops.trailing_zeros() / 8 + 1;
                    *slot = gather_7bit_groups(word, len);
                    pos += len as usize;
                    continue;
                }
            }
            // The last bytes of the buffer, or a varint of 9 or 10 bytes.
            self.pos = pos;
            *slot = self.varint(what)?;
            pos = self.pos;
        }
        self.pos = pos;
        Ok(())
    }

    /// The offset of the `i`th varint from `start` (which must have been
    /// read once without error): where to report a varint that decoded but
    /// made no sense.
    pub fn varint_offset(&self, start: usize, i: usize) -> usize {
        let mut c = Cursor { buf: self.buf, pos: start };
        for _ in 0..i {
            if c.varint("").is_err() {
                break;
            }
        }
        c.pos
    }

    /// Reads a varint that must fit a `usize` no larger than `max`.
    #[inline]
    pub fn len(&mut self, max: usize, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let v = self.varint(what)?;
        match usize::try_from(v) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(self.error_at(at, what)),
        }
    }

    /// Reads a varint that must be at most `max`, as a `u32`.
    #[inline]
    pub fn u32_at_most(&mut self, max: u32, what: &'static str) -> Result<u32, DecodeError> {
        let at = self.pos;
        match u32::try_from(self.varint(what)?) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(self.error_at(at, what)),
        }
    }

    /// Reads a zigzag varint.
    #[inline]
    pub fn zigzag(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        Ok(unzigzag(self.varint(what)?))
    }

    /// Reads a length-prefixed byte string.
    #[inline]
    pub fn length_prefixed(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.len(self.remaining(), what)?;
        self.bytes(n, what)
    }
}

/// The value of the LEB128 varint in the first `len` (1 to 8) bytes of
/// `word` (read little-endian): their low seven bits, packed.
#[inline]
fn gather_7bit_groups(word: u64, len: u32) -> u64 {
    // The bytes past the varint's shifted out at the top, then back.
    let unused = 64 - 8 * len;
    let x = ((word << unused) >> unused) & 0x7f7f_7f7f_7f7f_7f7f;
    // Pairs of 7-bit groups into 14 bits, then 28, then 56.
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// CRC-32 (IEEE 802.3 polynomial, as zlib's `crc32`) of the concatenation of `parts`.
pub fn crc32(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let values = [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut c = Cursor::new(&buf);
        for v in values {
            assert_eq!(c.varint("v").unwrap(), v);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn a_stream_of_varints_reads_as_one_at_a_time() {
        // Every width from 1 to 10 bytes, at every alignment against the
        // buffer's end (the last eight bytes take the byte-wise path).
        let mut values = vec![0u64, 1, 127, 128, 300, 16_383, 16_384, 119_999, u64::MAX, u64::MAX - 1];
        values.extend((0..64).map(|bit| 1u64 << bit));
        values.extend((1..64).map(|bit| (1u64 << bit) - 1));
        let mut buf = Vec::new();
        for v in &values {
            put_varint(&mut buf, *v);
        }
        for skip in 0..values.len() {
            let mut one = Cursor::new(&buf);
            for _ in 0..skip {
                one.varint("v").unwrap();
            }
            let mut many = one.clone();
            let mut out = Vec::new();
            many.varints(values.len() - skip, "v", &mut out).unwrap();
            assert_eq!(out, values[skip..]);
            assert!(many.is_empty());
            assert_eq!(many.varint_offset(one.position(), values.len() - skip), buf.len());
        }
        // A stream that runs out, or holds an overlong varint, fails where
        // one read at a time fails.
        let mut out = Vec::new();
        let err = Cursor::new(&buf[..buf.len() - 1]).varints(values.len(), "v", &mut out).unwrap_err();
        assert_eq!(err, Cursor::new(&buf[..buf.len() - 1]).varints_one_by_one(values.len()).unwrap_err());
        let overlong = [[0x80u8; 11].as_slice(), &[0; 8]].concat();
        assert!(Cursor::new(&overlong).varints(1, "v", &mut out).is_err());
    }

    impl Cursor<'_> {
        fn varints_one_by_one(&mut self, n: usize) -> Result<Vec<u64>, DecodeError> {
            (0..n).map(|_| self.varint("v")).collect()
        }
    }

    #[test]
    fn zigzag_keeps_small_magnitudes_small() {
        for v in [0i64, -1, 1, -64, 63, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert!(zigzag(-60) < 128);
    }

    #[test]
    fn truncated_and_overlong_varints_are_errors() {
        assert!(Cursor::new(&[0x80]).varint("v").is_err());
        assert!(Cursor::new(&[0xff; 11]).varint("v").is_err());
        let mut c = Cursor::new(&[5, 1, 2]);
        assert_eq!(c.length_prefixed("b").unwrap_err().offset, 0);
    }
}
