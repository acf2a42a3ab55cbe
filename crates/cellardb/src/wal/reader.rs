//! Replaying a log file, and telling a torn tail from damage in the middle.

use std::path::{Path, PathBuf};

use super::frame::record_at;
use super::{FILE_HEADER_LEN, MAGIC, OLDEST_VERSION, RECORD_HEADER_LEN, VERSION};
use crate::coding::DecodeError;
use crate::{Error, Result};

/// A damaged tail that replay cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TornTail {
    /// The log file.
    pub file: PathBuf,
    /// Offset of the first damaged record (the end of the last good one).
    pub offset: u64,
    /// Bytes cut from there to the end of the file.
    pub dropped_bytes: u64,
    /// What was wrong with the record at `offset`.
    pub what: String,
}

/// What replaying one file found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayStats {
    /// Intact records replayed.
    pub records: u64,
    /// Offset just past the last intact record (the header's end if none):
    /// what follows is zeros, a torn tail, or nothing.
    pub end_offset: u64,
    /// The damaged tail cut off, if any.
    pub torn_tail: Option<TornTail>,
}

/// Reads the records of one log file held in memory.
pub struct WalReader<'a> {
    path: &'a Path,
    data: &'a [u8],
}

/// The unit a disk writes atomically, at the least.
const SECTOR: usize = 512;

impl<'a> WalReader<'a> {
    /// A reader of `data`, the content of the log file at `path`.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Self {
        WalReader { path, data }
    }

    fn corruption(&self, offset: usize, what: impl Into<String>) -> Error {
        Error::corruption(self.path, offset as u64, what)
    }

    /// Calls `apply` with the offset of each record's header and its
    /// payload, in order.
    ///
    /// The log ends at the end of the file or where only zero bytes remain
    /// (the preallocated tail a crash leaves behind a mapped log).
    /// A damaged record followed by no intact record is a torn tail: if
    /// `tolerate_torn_tail`, replay stops there and reports it; otherwise it is
    /// `Error::Corruption`. A damaged record followed by an intact one is
    /// `Error::Corruption` — records are never skipped in the middle — unless
    /// tolerating and the damage includes a whole zero sector (a hole power
    /// loss leaves in unsynced data): then the log is cut there and reported,
    /// like a torn tail.
    ///
    /// # Errors
    /// `Error::Corruption` for a bad header or damage the mode does not
    /// tolerate; whatever `apply` returns.
    pub fn replay(
        &self,
        tolerate_torn_tail: bool,
        mut apply: impl FnMut(u64, &'a [u8]) -> Result<()>,
    ) -> Result<ReplayStats> {
        let mut stats = ReplayStats::default();
        let written = self.data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        if written < FILE_HEADER_LEN && self.is_header_prefix(written) {
            // Created (and preallocated) but never written, or its header
            // cut short by a crash or a failed write at its creation, the
            // room after it zeros: an empty log.
            stats.end_offset = if written == 0 { 0 } else { FILE_HEADER_LEN.min(self.data.len()) as u64 };
            return Ok(stats);
        }
        self.check_header()?;
        let mut pos = FILE_HEADER_LEN;
        stats.end_offset = pos.min(self.data.len()) as u64;
        while pos < self.data.len() {
            if self.data[pos..].iter().all(|&b| b == 0) {
                break;
            }
            match record_at(self.data, pos) {
                Ok((payload, next)) => {
                    apply(pos as u64, payload)?;
                    stats.records += 1;
                    pos = next;
                    stats.end_offset = pos as u64;
                }
                Err(fault) => {
                    if !tolerate_torn_tail {
                        return Err(fault.in_file(self.path));
                    }
                    let fault = fault.what;
                    let what = match self.next_intact_record(pos + 1) {
                        None => fault.into_owned(),
                        Some(intact) => {
                            let Some(sector) = self.unwritten_sector(pos, intact) else {
                                let what = format!("{fault}, followed by an intact record at offset {intact}");
                                return Err(self.corruption(pos, what));
                            };
                            format!(
                                "{fault}: the sector at offset {sector} was never written (power lost before a \
                                 sync), so the records after it were never synced"
                            )
                        }
                    };
                    stats.torn_tail = Some(TornTail {
                        file: self.path.to_path_buf(),
                        offset: pos as u64,
                        dropped_bytes: (self.data.len() - pos) as u64,
                        what,
                    });
                    break;
                }
            }
        }
        Ok(stats)
    }

    /// Whether the first `n` bytes are the start of a log header, of a
    /// version this reader reads.
    fn is_header_prefix(&self, n: usize) -> bool {
        (OLDEST_VERSION..=VERSION).any(|version| {
            let mut header = MAGIC.to_vec();
            header.extend_from_slice(&version.to_le_bytes());
            self.data.get(..n).is_some_and(|start| header.starts_with(start))
        })
    }

    fn check_header(&self) -> Result<()> {
        if self.data.len() < FILE_HEADER_LEN || &self.data[..8] != MAGIC {
            return Err(self.corruption(0, "not a cellardb log: bad magic"));
        }
        let version = u32::from_le_bytes([self.data[8], self.data[9], self.data[10], self.data[11]]);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            let what = format!("log format version {version}, expected {OLDEST_VERSION} to {VERSION}");
            return Err(self.corruption(8, what));
        }
        Ok(())
    }

    /// `Error::Corruption` of the log for a payload that passed its
    /// checksum but does not decode: `e` is relative to the payload of the
    /// record whose header is at `record`.
    pub fn payload_error(&self, record: u64, e: DecodeError) -> Error {
        e.at(record + RECORD_HEADER_LEN as u64).in_file(self.path)
    }

    /// The first 512-byte sector within `[from, to)` holding only zeros, if
    /// any. Damage that includes such a sector is the hole power loss leaves
    /// in a preallocated log whose pages reached the disk out of order;
    /// a damaged byte (bit rot, a bad write) never zeroes a whole sector.
    fn unwritten_sector(&self, from: usize, to: usize) -> Option<usize> {
        let first = from.div_ceil(SECTOR) * SECTOR;
        (first..to.saturating_sub(SECTOR - 1))
            .step_by(SECTOR)
            .find(|&s| self.data[s..s + SECTOR].iter().all(|&b| b == 0))
    }

    /// Offset of the first intact record starting at or after `from`.
    fn next_intact_record(&self, from: usize) -> Option<usize> {
        (from..self.data.len().saturating_sub(RECORD_HEADER_LEN - 1)).find(|&p| record_at(self.data, p).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::append_record;

    fn log_of(rows: &[&str]) -> Vec<u8> {
        let mut data = MAGIC.to_vec();
        data.extend_from_slice(&VERSION.to_le_bytes());
        for row in rows {
            append_record(&mut data, |p| p.extend_from_slice(row.as_bytes()));
        }
        data
    }

    fn replay(data: &[u8]) -> Result<(Vec<String>, ReplayStats)> {
        let mut rows = Vec::new();
        let stats = WalReader::new(Path::new("x.log"), data).replay(true, |_, payload| {
            rows.push(String::from_utf8_lossy(payload).into_owned());
            Ok(())
        })?;
        Ok((rows, stats))
    }

    /// The frame of the worked example of `docs/format/wal.md`, byte for
    /// byte (`model::batch` checks its payload).
    #[test]
    fn worked_example_of_the_format_doc() {
        let payload = [
            0x07, 0, 0, 0, 0, 0, 0, 0, 0x01, b'r', 0x01, // first sequence, row, 1 entry
            0x00, 0x01, 0x00, 0x01, b'q', 0xd0, 0x0f, 0x01, b'v', // put, store 1, +0, "q", 1000, "v"
        ];
        let mut buf = Vec::new();
        append_record(&mut buf, |p| p.extend_from_slice(&payload));
        let header = [0xd1, 0xe9, 0xd7, 0x6d, 0x14, 0x00, 0x00, 0x00, 0xd5, 0xf0, 0x89, 0x72];
        assert_eq!(buf[..RECORD_HEADER_LEN], header);
        assert_eq!(buf[RECORD_HEADER_LEN..], payload);
    }

    #[test]
    fn intact_log_replays_every_record_with_its_offset() {
        let data = log_of(&["a", "b", "c"]);
        let mut offsets = Vec::new();
        let stats = WalReader::new(Path::new("x.log"), &data)
            .replay(false, |offset, _| {
                offsets.push(offset);
                Ok(())
            })
            .unwrap();
        assert_eq!(offsets, [12, 25, 38], "each record: a 12-byte header and a 1-byte payload");
        assert_eq!((stats.records, stats.end_offset, stats.torn_tail), (3, 51, None));
    }

    #[test]
    fn torn_tail_is_cut_at_the_last_good_record_and_reported() {
        let full = log_of(&["a", "b", "c"]);
        let two = log_of(&["a", "b"]).len();
        for cut in two + 1..full.len() {
            let (rows, stats) = replay(&full[..cut]).unwrap();
            assert_eq!(rows, ["a", "b"], "cut at {cut}");
            let torn = stats.torn_tail.unwrap();
            assert_eq!(torn.offset, two as u64);
            assert_eq!(torn.dropped_bytes, (cut - two) as u64);
        }
    }

    #[test]
    fn a_zero_filled_tail_is_the_end_of_the_log_not_damage() {
        let mut data = log_of(&["a", "b"]);
        data.extend_from_slice(&[0u8; 4096]);
        let (rows, stats) = replay(&data).unwrap();
        assert_eq!(rows, ["a", "b"]);
        assert_eq!(stats.torn_tail, None);
        let strict = WalReader::new(Path::new("x.log"), &data).replay(false, |_, _| Ok(())).unwrap();
        assert_eq!(strict.records, 2);
        data.push(1);
        assert!(replay(&data).unwrap().1.torn_tail.is_some(), "anything but zeros is a torn tail");
    }

    #[test]
    fn a_never_written_log_is_empty() {
        let (rows, stats) = replay(&vec![0u8; 1 << 16]).unwrap();
        assert!(rows.is_empty());
        assert_eq!(stats.torn_tail, None);
    }

    #[test]
    fn a_header_cut_short_at_creation_then_zeros_is_an_empty_log() {
        let header = log_of(&[]);
        for written in 1..=header.len() {
            for size in [written, FILE_HEADER_LEN, 1 << 16] {
                let mut data = header[..written].to_vec();
                data.resize(size.max(written), 0);
                let (rows, stats) = replay(&data).unwrap_or_else(|e| panic!("{written} of {size}: {e}"));
                assert!(rows.is_empty() && stats.torn_tail.is_none(), "{written} of {size}");
            }
        }
        let mut foreign = b"CELLARXX".to_vec();
        foreign.resize(1 << 16, 0);
        assert!(matches!(replay(&foreign), Err(Error::Corruption { offset: 0, .. })));
        assert!(matches!(replay(b"CELLAX"), Err(Error::Corruption { offset: 0, .. })));
        let mut later = header[..6].to_vec();
        later.resize(100, 0);
        later.push(7);
        assert!(replay(&later).is_err(), "a short header with bytes after it is no empty log");
    }

    #[test]
    fn a_hole_of_unwritten_sectors_cuts_the_log_where_it_starts() {
        let rows: Vec<String> = (0..200).map(|i| format!("row-{i:04}-{}", "x".repeat(40))).collect();
        let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
        let mut data = log_of(&refs);
        let hole = 2048..2048 + 1024;
        data[hole.clone()].fill(0);
        let (got, stats) = replay(&data).unwrap();
        let torn = stats.torn_tail.unwrap();
        assert!(torn.offset <= hole.start as u64 && !got.is_empty(), "{torn:?}");
        assert_eq!(got, refs[..got.len()]);
        assert!(torn.what.contains("never written"), "{}", torn.what);
        let strict = WalReader::new(Path::new("x.log"), &data).replay(false, |_, _| Ok(()));
        assert!(matches!(strict, Err(Error::Corruption { .. })));
    }

    #[test]
    fn damage_before_an_intact_record_is_corruption_with_its_offset() {
        let mut data = log_of(&["abcdefgh", "b", "c"]);
        let second = log_of(&["abcdefgh"]).len();
        data[second + RECORD_HEADER_LEN - 1] ^= 0x40;
        match replay(&data) {
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, second as u64),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_payload_that_does_not_decode_is_corruption_at_its_byte_in_the_file() {
        let data = log_of(&["a", "b"]);
        let reader = WalReader::new(Path::new("x.log"), &data);
        let e = reader.replay(false, |offset, payload| {
            if payload == b"b" { Err(reader.payload_error(offset, DecodeError::new(0, "no row"))) } else { Ok(()) }
        });
        match e {
            Err(Error::Corruption { offset, what, .. }) => assert_eq!((offset, what.as_str()), (37, "no row")),
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}
