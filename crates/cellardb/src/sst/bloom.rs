//! A bloom filter over the row keys of one SSTable.
//!
//! Point reads skip a file whose filter says the row is absent. Ten bits per
//! row and seven probes give about 1% false positives. Hash: XXH3-64 of the
//! row key; probe `i` tests bit `(h1 + i·h2) mod m` (Kirsch–Mitzenmacher),
//! with `h1` the low and `h2` the high 32 bits (`h2` forced odd).

use xxhash_rust::xxh3::xxh3_64;

/// Bits of filter per distinct row.
const BITS_PER_KEY: usize = 10;
/// Probes per lookup: ln 2 × bits per key, rounded.
const PROBES: u8 = 7;

/// The hash a row is filtered by.
pub fn row_hash(row: &[u8]) -> u64 {
    xxh3_64(row)
}

/// Builds a filter block from row hashes: `[probes: u8][bit array]`.
pub fn build(hashes: &[u64]) -> Vec<u8> {
    let bits = (hashes.len() * BITS_PER_KEY).max(64);
    let bytes = bits.div_ceil(8);
    let mut out = vec![0u8; bytes + 1];
    out[0] = PROBES;
    let m = (bytes * 8) as u64;
    for &h in hashes {
        for bit in probes(h, PROBES, m) {
            out[1 + (bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    out
}

/// Whether a filter block may contain the row with hash `h`. A filter that
/// does not decode answers "maybe", so a damaged filter never hides data.
pub fn may_contain(filter: &[u8], h: u64) -> bool {
    let Some((&k, bits)) = filter.split_first() else {
        return true;
    };
    if bits.is_empty() || k == 0 || k > 30 {
        return true;
    }
    let m = (bits.len() * 8) as u64;
    probes(h, k, m).all(|bit| bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
}

/// The bits `(h1 + i·h2) mod m` for `i` in `0..k`, stepped by modular
/// addition: two divisions a row instead of one a probe. `h1` and `h2` are
/// below 2³² and `i` below 31, so `h1 + i·h2` never wraps, and the steps
/// give exactly its remainders.
fn probes(h: u64, k: u8, m: u64) -> impl Iterator<Item = u64> {
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

    #[test]
    fn members_always_pass_and_strangers_mostly_fail() {
        let rows: Vec<String> = (0..5000).map(|i| format!("us-west2#{i}#week09")).collect();
        let hashes: Vec<u64> = rows.iter().map(|r| row_hash(r.as_bytes())).collect();
        let f = build(&hashes);
        assert!(hashes.iter().all(|&h| may_contain(&f, h)));
        let false_pos = (0..10_000).filter(|i| may_contain(&f, row_hash(format!("absent{i}").as_bytes()))).count();
        assert!(false_pos < 300, "{false_pos} false positives in 10000");
    }

    #[test]
    fn probes_are_the_remainders_the_format_names() {
        for h in [0, 1, u64::MAX, 0x1234_5678_9abc_def0, row_hash(b"us-west2#1#week09")] {
            for m in [64, 65, 1000, 123_457, 1 << 33] {
                let stepped: Vec<u64> = probes(h, PROBES, m).collect();
                let (h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
                let named: Vec<u64> = (0..u64::from(PROBES)).map(|i| (h1 + i * h2) % m).collect();
                assert_eq!(stepped, named, "h {h:#x}, m {m}");
            }
        }
    }
}
