//! Framing one record: a checksummed header before an opaque payload.
//!
//! ```text
//! [header crc: u32 le][payload length: u32 le][payload crc: u32 le][payload]
//! ```
//!
//! The header checksum covers the length and the payload checksum, so a
//! damaged length is caught before it is trusted. What the payload holds
//! (a row batch) is not the log's business.

use super::RECORD_HEADER_LEN;
use crate::coding::{DecodeError, crc32};

/// Appends one record to `buf`: `payload` writes the payload after the
/// header, which is then filled in.
pub fn append_record(buf: &mut Vec<u8>, payload: impl FnOnce(&mut Vec<u8>)) {
    let start = buf.len();
    buf.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    payload(buf);
    let body = start + RECORD_HEADER_LEN;
    let len = u32::try_from(buf.len() - body).unwrap_or(u32::MAX);
    let payload_crc = crc32(&[&buf[body..]]);
    buf[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    buf[start + 8..start + 12].copy_from_slice(&payload_crc.to_le_bytes());
    let header_crc = crc32(&[&buf[start + 4..start + 12]]);
    buf[start..start + 4].copy_from_slice(&header_crc.to_le_bytes());
}

/// The payload of the intact record at `pos` of `data`, and the offset
/// just past it.
///
/// # Errors
/// Why the bytes at `pos` are not an intact record, at offset `pos`.
pub fn record_at(data: &[u8], pos: usize) -> Result<(&[u8], usize), DecodeError> {
    let fault = |what: &'static str| DecodeError::new(pos as u64, what);
    let header = data.get(pos..pos + RECORD_HEADER_LEN).ok_or_else(|| fault("record header cut short"))?;
    let field = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    if crc32(&[&header[4..12]]) != field(0) {
        return Err(fault("record header checksum mismatch"));
    }
    let start = pos + RECORD_HEADER_LEN;
    let end = usize::try_from(field(4)).ok().and_then(|len| start.checked_add(len));
    let payload =
        end.and_then(|end| data.get(start..end)).ok_or_else(|| fault("record runs past the end of the file"))?;
    if crc32(&[payload]) != field(8) {
        return Err(fault("record payload checksum mismatch"));
    }
    Ok((payload, start + payload.len()))
}
