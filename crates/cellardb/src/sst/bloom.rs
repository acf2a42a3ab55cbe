//! A bloom filter over the row keys of one SSTable.
//!
//! Point reads skip a file whose filter says the row is absent. A point
//! read of a cold key is a string of cache misses, so every probe for a
//! row falls in one 64-byte line of the filter: one miss per file where a
//! filter whose probes spread over the whole array costs one per probe.
//! Ten bits per row and six probes give about 1% false positives.
//!
//! Hash: XXH3-64 of the row key. Its high 32 bits pick the line
//! (`(high × lines) >> 32`); its low 32 bits, multiplied by `0x9e3779b9`
//! (modulo 2³²) after each probe, give the probes: each takes the top nine
//! bits as a bit of the line. The writer pads the block so that the lines
//! start at a multiple of 64 bytes in the file: a mapped file holds them
//! aligned, and they are read in place. Files written before this layout
//! carry the classic filter (probe `i` tests bit `(h1 + i·h2) mod m` of the whole
//! array), which is still read.

use bytes::Bytes;
use xxhash_rust::xxh3::xxh3_64;

/// Bits of filter per distinct row.
const BITS_PER_KEY: usize = 10;
/// Probes per lookup in a cache-local filter: one fewer than a classic
/// filter's `ln 2 × 10 ≈ 7`, as RocksDB's cache-local filter takes at ten
/// bits a row (a line fills less evenly than a whole array). Not tuned
/// here: 6 was not measured against 7.
const PROBES: u8 = 6;
/// Bytes of a line: the cache line of the machines cellardb runs on.
const LINE_BYTES: usize = 64;
/// The first byte of a cache-local filter block: this flag with the probe
/// count. A classic block's first byte is its probe count, at most 30.
const LOCAL_FLAG: u8 = 0x80;
/// With [`LOCAL_FLAG`]: a byte of padding length follows, then that many
/// zeros, placing the lines at a multiple of 64 bytes in the file, so
/// that a file mapped into memory holds them aligned and they are read in
/// place. (Blocks of the layout's first commit, `7907c4f`, lack it.)
const PADDED_FLAG: u8 = 0x40;
/// The most probes either layout is read with; more is not a filter.
const MAX_PROBES: u8 = 30;
/// What the line's probe bits are stepped by: 2³² over the golden ratio.
const PROBE_STEP: u32 = 0x9e37_79b9;

/// The hash a row is filtered by.
pub fn row_hash(row: &[u8]) -> u64 {
    xxh3_64(row)
}

/// Builds a cache-local filter block from row hashes, to be written at
/// file offset `at`: `[0xC0 | probes: u8][pad: u8][pad zeros][lines of 64
/// bytes]`, the lines starting at a multiple of 64 in the file.
#[allow(clippy::cast_possible_truncation, reason = "a remainder of 64")]
pub fn build(hashes: &[u64], at: u64) -> Vec<u8> {
    let line_bytes = LINE_BYTES as u64;
    let pad = ((line_bytes - (at + 2) % line_bytes) % line_bytes) as usize;
    let lines = (hashes.len() * BITS_PER_KEY).div_ceil(LINE_BYTES * 8).max(1);
    let start = 2 + pad;
    let mut out = vec![0u8; start + lines * LINE_BYTES];
    out[0] = LOCAL_FLAG | PADDED_FLAG | PROBES;
    out[1] = pad as u8;
    // A filter of a large file is megabytes, and each row's line is a
    // cache miss: a batch's lines are read first, with nothing depending
    // on the reads, so that their misses overlap.
    for batch in hashes.chunks(TOUCH_AHEAD) {
        let touched = batch.iter().fold(0u8, |acc, &h| acc | out[start + line_of(h, lines) * LINE_BYTES]);
        std::hint::black_box(touched);
        for &h in batch {
            let line_at = start + line_of(h, lines) * LINE_BYTES;
            let line = &mut out[line_at..line_at + LINE_BYTES];
            for bit in line_probes(h, PROBES) {
                line[bit / 8] |= 1 << (bit % 8);
            }
        }
    }
    out
}

/// Rows whose filter lines [`build`] reads ahead of setting their bits.
const TOUCH_AHEAD: usize = 16;

/// A 64-byte line, aligned so that it is one line of the CPU's cache.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct Line([u8; LINE_BYTES]);

/// What a file's row filter is, for inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomSummary {
    /// `cache-local`, `classic` (files written before the cache-local
    /// layout), or `none` (a block that does not decode as a filter).
    pub layout: &'static str,
    /// Bits of the filter.
    pub bits: usize,
    /// Bits tested per row.
    pub probes: u8,
}

/// A filter block decoded for lookups.
#[derive(Debug, Clone, Default)]
pub enum RowFilter {
    /// Every row may be present: a block that does not decode as a filter.
    /// A damaged filter must never hide data; the block's checksum is what
    /// reports damage.
    #[default]
    PassAll,
    /// All of a row's probes in one line.
    Local { probes: u8, lines: Lines },
    /// Probes across the whole bit array (files written before the
    /// cache-local layout), read in place.
    Classic { probes: u8, bits: Bytes },
}

/// The lines of a cache-local filter: in place where the file's mapping
/// holds them aligned (no copy, and memory the operating system may page
/// out like the rest of the file), else copied into aligned memory.
#[derive(Debug, Clone)]
pub enum Lines {
    /// A slice of the file, starting at a 64-byte aligned address.
    InPlace(Bytes),
    /// Copied: blocks without padding, or a file read into unaligned memory.
    Copied(Box<[Line]>),
}

impl Lines {
    fn of(bytes: Bytes) -> Lines {
        if (bytes.as_ptr() as usize).is_multiple_of(LINE_BYTES) {
            return Lines::InPlace(bytes);
        }
        let lines = bytes
            .chunks_exact(LINE_BYTES)
            .map(|c| Line(c.try_into().expect("chunks are exactly a line long")))
            .collect();
        Lines::Copied(lines)
    }

    fn len(&self) -> usize {
        match self {
            Lines::InPlace(b) => b.len() / LINE_BYTES,
            Lines::Copied(l) => l.len(),
        }
    }

    fn line(&self, i: usize) -> &[u8] {
        match self {
            Lines::InPlace(b) => &b[i * LINE_BYTES..(i + 1) * LINE_BYTES],
            Lines::Copied(l) => &l[i].0,
        }
    }
}

impl RowFilter {
    /// Decodes a filter block (any layout), keeping slices of `block`
    /// where it can.
    pub fn decode(block: &Bytes) -> RowFilter {
        let Some(&first) = block.first() else {
            return RowFilter::PassAll;
        };
        let probes = first & !(LOCAL_FLAG | PADDED_FLAG);
        if probes == 0 || probes > MAX_PROBES {
            return RowFilter::PassAll;
        }
        if first & LOCAL_FLAG == 0 {
            return if first & PADDED_FLAG != 0 || block.len() < 2 {
                RowFilter::PassAll
            } else {
                RowFilter::Classic { probes, bits: block.slice(1..) }
            };
        }
        let start = if first & PADDED_FLAG == 0 {
            1
        } else {
            match block.get(1) {
                Some(&pad) => 2 + usize::from(pad),
                None => return RowFilter::PassAll,
            }
        };
        match block.len().checked_sub(start) {
            Some(n) if n > 0 && n.is_multiple_of(LINE_BYTES) => {
                RowFilter::Local { probes, lines: Lines::of(block.slice(start..)) }
            }
            _ => RowFilter::PassAll,
        }
    }

    /// Whether the filter may hold the row with hash `h` (false: it surely
    /// does not).
    pub fn may_contain(&self, h: u64) -> bool {
        match self {
            RowFilter::PassAll => true,
            RowFilter::Local { probes, lines } => {
                let line = lines.line(line_of(h, lines.len()));
                line_probes(h, *probes).all(|bit| line[bit / 8] & (1 << (bit % 8)) != 0)
            }
            RowFilter::Classic { probes, bits } => {
                let m = (bits.len() * 8) as u64;
                classic_probes(h, *probes, m).all(|bit| bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
            }
        }
    }

    /// Whether the lines are read in place, in the file's mapping.
    #[cfg(test)]
    pub fn in_place(&self) -> bool {
        matches!(self, RowFilter::Local { lines: Lines::InPlace(_), .. })
    }

    /// The layout, its bits and its probes per row.
    pub fn summary(&self) -> BloomSummary {
        let (layout, bits, probes) = match self {
            RowFilter::PassAll => ("none", 0, 0),
            RowFilter::Local { probes, lines } => ("cache-local", lines.len() * LINE_BYTES * 8, *probes),
            RowFilter::Classic { probes, bits } => ("classic", bits.len() * 8, *probes),
        };
        BloomSummary { layout, bits, probes }
    }
}

/// The line of `lines` the row with hash `h` is filtered in: the high 32
/// bits scaled to the line count (no division).
#[allow(clippy::cast_possible_truncation, reason = "the product shifted right 32 is below `lines`")]
fn line_of(h: u64, lines: usize) -> usize {
    (((h >> 32) * lines as u64) >> 32) as usize
}

/// The bits of its line the row with hash `h` sets: the top nine bits of
/// the low 32, stepped by multiplication.
fn line_probes(h: u64, k: u8) -> impl Iterator<Item = usize> {
    #[allow(clippy::cast_possible_truncation, reason = "the low 32 bits")]
    let mut x = h as u32;
    (0..k).map(move |_| {
        let bit = (x >> 23) as usize;
        x = x.wrapping_mul(PROBE_STEP);
        bit
    })
}

/// The bits `(h1 + i·h2) mod m` for `i` in `0..k` of the classic layout,
/// stepped by modular addition: two divisions a row instead of one a
/// probe. `h1` and `h2` are below 2³² and `i` below 31, so `h1 + i·h2`
/// never wraps, and the steps give exactly its remainders.
fn classic_probes(h: u64, k: u8, m: u64) -> impl Iterator<Item = u64> {
    let h1 = h & 0xffff_ffff;
    let h2 = (h >> 32) | 1;
    let step = h2 % m;
    let mut bit = h1 % m;
    (0..k).map(move |_| {
        let this = bit;
        bit += step;
        if bit >= m {
            bit -= m;
        }
        this
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize) -> Vec<u64> {
        (0..n).map(|i| row_hash(format!("us-west2#{i}#week09").as_bytes())).collect()
    }

    fn false_positives(filter: &RowFilter, strangers: usize) -> usize {
        (0..strangers).filter(|i| filter.may_contain(row_hash(format!("absent{i}").as_bytes()))).count()
    }

    /// `block` in memory that holds its lines 64-byte aligned, as a file
    /// mapped at the offset the block was built for does.
    fn mapped(block: &[u8]) -> Bytes {
        in_memory(block, 0)
    }

    /// `block` in memory that holds its lines `skew` bytes past alignment.
    fn in_memory(block: &[u8], skew: usize) -> Bytes {
        let start = 2 + usize::from(block[1]);
        let mut memory = vec![0u8; block.len() + 2 * LINE_BYTES];
        let off = (LINE_BYTES - (memory.as_ptr() as usize + start) % LINE_BYTES) % LINE_BYTES + skew;
        memory[off..off + block.len()].copy_from_slice(block);
        Bytes::from(memory).slice(off..off + block.len())
    }

    #[test]
    fn members_always_pass_and_strangers_mostly_fail() {
        for n in [1, 7, 51, 5000, 100_000] {
            let hashes = rows(n);
            let f = RowFilter::decode(&mapped(&build(&hashes, 0)));
            assert!(matches!(f, RowFilter::Local { lines: Lines::InPlace(_), .. }));
            assert!(hashes.iter().all(|&h| f.may_contain(h)), "{n} rows");
            // Ten bits a row and six probes in a line: about 1%.
            if n >= 5000 {
                let fp = false_positives(&f, 100_000);
                assert!(fp < 1_500, "{fp} false positives in 100000 for {n} rows");
            }
        }
    }

    #[test]
    fn lines_start_at_a_multiple_of_64_in_the_file_and_are_read_in_place() {
        let hashes = rows(2000);
        for at in 0..200u64 {
            let block = build(&hashes, at);
            let start = 2 + usize::from(block[1]);
            assert_eq!((at + start as u64) % 64, 0, "at {at}");
            assert_eq!((block.len() - start) % LINE_BYTES, 0);
            let in_place = RowFilter::decode(&mapped(&block));
            let RowFilter::Local { lines: Lines::InPlace(bytes), .. } = &in_place else { panic!("copied at {at}") };
            assert_eq!(bytes.as_ptr() as usize % LINE_BYTES, 0);
            // Unaligned in memory (a file read into a buffer): copied,
            // aligned, and the same filter.
            let copied = RowFilter::decode(&in_memory(&block, 1 + usize::try_from(at % 63).unwrap()));
            let RowFilter::Local { lines: Lines::Copied(lines), .. } = &copied else { panic!("not copied") };
            assert_eq!(lines.as_ptr() as usize % LINE_BYTES, 0);
            assert!(hashes.iter().all(|&h| in_place.may_contain(h) && copied.may_contain(h)));
        }
    }

    #[test]
    fn a_rows_probes_fall_in_one_line_the_format_names() {
        let hashes = rows(2000);
        // One row alone sets bits in exactly one line.
        let one = build(&hashes[..1], 0);
        let start = 2 + usize::from(one[1]);
        let touched = one[start..].chunks(LINE_BYTES).filter(|l| l.iter().any(|&b| b != 0)).count();
        assert_eq!(touched, 1);
        // The line a row lands on is its hash's high half, scaled.
        let many = build(&[hashes[0]; 1000], 0);
        let start = 2 + usize::from(many[1]);
        let lines = (many.len() - start) / LINE_BYTES;
        let at = many[start..].chunks(LINE_BYTES).position(|l| l.iter().any(|&b| b != 0));
        assert_eq!(at, Some(line_of(hashes[0], lines)));
    }

    #[test]
    fn unpadded_cache_local_blocks_of_the_first_layout_still_filter() {
        // As `7907c4f` wrote them: `[0x80 | 6][lines]`.
        let hashes = rows(3000);
        let padded = build(&hashes, 0);
        let start = 2 + usize::from(padded[1]);
        let block = [&[LOCAL_FLAG | PROBES][..], &padded[start..]].concat();
        let f = RowFilter::decode(&Bytes::from(block));
        assert!(matches!(f, RowFilter::Local { probes: 6, .. }));
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        assert!(false_positives(&f, 10_000) < 200);
    }

    #[test]
    fn classic_filters_of_older_files_still_filter() {
        // A classic block as files before the cache-local layout carry it.
        let hashes = rows(5000);
        let bits = hashes.len() * BITS_PER_KEY;
        let mut block = vec![0u8; 1 + bits.div_ceil(8)];
        block[0] = 7;
        let m = ((block.len() - 1) * 8) as u64;
        for &h in &hashes {
            for bit in classic_probes(h, 7, m) {
                block[1 + (bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        let f = RowFilter::decode(&Bytes::from(block));
        assert!(matches!(f, RowFilter::Classic { probes: 7, .. }));
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        assert!(false_positives(&f, 10_000) < 300);
    }

    #[test]
    fn blocks_that_are_not_filters_pass_every_row() {
        let local = build(&rows(100), 0);
        let start = 2 + usize::from(local[1]);
        let mut bad_probes = local.clone();
        bad_probes[0] = LOCAL_FLAG | PADDED_FLAG | 31;
        let mut pad_past_end = local.clone();
        pad_past_end[1] = 255;
        let blocks = [
            vec![],
            vec![7],
            vec![0, 1, 2],
            vec![PADDED_FLAG | 7, 0, 1, 2],
            vec![LOCAL_FLAG | PADDED_FLAG | 6],
            bad_probes,
            pad_past_end,
            local[..local.len() - 1].to_vec(),
            local[..start].to_vec(),
        ];
        for block in blocks {
            let f = RowFilter::decode(&Bytes::from(block.clone()));
            assert!(matches!(f, RowFilter::PassAll), "{block:?}");
            assert!(f.may_contain(row_hash(b"anything")));
        }
    }

    #[test]
    fn classic_probes_are_the_remainders_the_format_names() {
        for h in [0, 1, u64::MAX, 0x1234_5678_9abc_def0, row_hash(b"us-west2#1#week09")] {
            for m in [64, 65, 1000, 123_457, 1 << 33] {
                let stepped: Vec<u64> = classic_probes(h, 7, m).collect();
                let (h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
                let named: Vec<u64> = (0..7).map(|i| (h1 + i * h2) % m).collect();
                assert_eq!(stepped, named, "h {h:#x}, m {m}");
            }
        }
    }

    #[test]
    fn line_probes_are_the_top_bits_the_format_names() {
        for h in [0, 1, u64::MAX, 0x1234_5678_9abc_def0] {
            let got: Vec<usize> = line_probes(h, 6).collect();
            let mut x = (h & 0xffff_ffff) as u32;
            let mut named = Vec::new();
            for _ in 0..6 {
                named.push((x >> 23) as usize);
                x = x.wrapping_mul(0x9e37_79b9);
            }
            assert_eq!(got, named);
        }
    }
}
