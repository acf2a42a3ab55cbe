use std::cmp::Ordering;

use super::ints::{Divisor, stride};
use super::layout::{FLAG_MILLIS, FLAG_PACKED_STREAMS, MAX_BLOCK_ENTRIES};
use super::{BlockPart, DecodedBlock};
use crate::key::{Entry, InternalKey};
use crate::sst::block_builder::BlockBuilder;

/// `entries` (in key order) encoded as one block.
fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut b = BlockBuilder::default();
    for e in entries {
        b.add(e.as_ref());
    }
    let mut raw = Vec::new();
    b.finish(&mut raw);
    raw
}

fn round_trip(entries: &[Entry]) -> Vec<Entry> {
    DecodedBlock::decode(&encode(entries)).unwrap().entries().collect()
}

#[test]
fn a_timestamp_beyond_i64_once_scaled_is_an_error() {
    // One cell whose stored milliseconds overflow i64 as microseconds.
    let mut raw = vec![FLAG_MILLIS, 1, 1, 1, 0, 1, b'r', 1, 1, b'q', 0, 0];
    crate::coding::put_zigzag(&mut raw, i64::MAX / 1000 + 1);
    raw.extend_from_slice(&[0, 0]); // sequence 0, empty value
    let err = DecodedBlock::decode(&raw).unwrap_err();
    assert_eq!((err.offset, err.what.as_ref()), (12, "timestamp out of range"));
    // One millisecond less decodes.
    raw.truncate(12);
    crate::coding::put_zigzag(&mut raw, i64::MAX / 1000);
    raw.extend_from_slice(&[0, 0]);
    assert_eq!(DecodedBlock::decode(&raw).unwrap().entry(0).unwrap().key.timestamp, i64::MAX / 1000 * 1000);
}

/// Blocks to seek in: one of rows of one to four entries, one of a
/// single wide row, and two of a row per entry, each sorted; and for
/// each, targets on every entry, between entries and rows, before the
/// first and after the last, and rows that are a part of the prefix
/// the block's rows share ("row-r") or part from it.
fn blocks_and_targets() -> Vec<(Vec<Entry>, Vec<InternalKey>)> {
    let mut many = Vec::new();
    for r in 0..20u32 {
        let row = format!("row-r{:02}", r * 2);
        for q in 0..=(r % 4) {
            many.push(Entry::put(row.clone().into(), format!("q{q}").into(), 1000 * i64::from(q), 5, "v".into()));
        }
        if r % 5 == 0 {
            many.push(Entry::delete_family(row.clone().into(), 9));
        }
    }
    let mut wide = vec![Entry::delete_family("row-r20".into(), 9)];
    for q in 0..4u32 {
        let column = format!("q{q}");
        wide.push(Entry::delete_column("row-r20".into(), column.clone().into(), (0, Some(500)), 8));
        for t in 0..30i64 {
            wide.push(Entry::put(
                "row-r20".into(),
                column.clone().into(),
                1000 * t,
                7 - (t % 3).cast_unsigned(),
                "v".into(),
            ));
        }
    }
    // A row per entry, as a tall table's blocks hold; and such rows
    // whose keys differ in length, so that their ends are listed.
    let tall: Vec<Entry> =
        (0..20u32).map(|r| Entry::put(format!("row-r{:02}", r * 2).into(), "q".into(), 1000, 5, "v".into())).collect();
    let uneven: Vec<Entry> = (0..20u32)
        .map(|r| {
            Entry::put(
                format!("row-r{}", "9".repeat(r as usize % 4) + &r.to_string()).into(),
                "q".into(),
                1000,
                5,
                "v".into(),
            )
        })
        .collect();
    let mut blocks = Vec::new();
    for mut entries in [many, wide, tall, uneven] {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let mut targets: Vec<InternalKey> = entries.iter().map(|e| e.key.clone()).collect();
        for e in &entries {
            let mut between = e.key.clone();
            between.timestamp -= 1;
            targets.push(between);
        }
        for r in 0..=40u32 {
            targets.push(InternalKey::first_of_row(format!("row-r{r:02}").into()));
            targets.push(InternalKey::first_of_row(format!("row-r{r:02}~").into()));
        }
        for row in ["", "a", "r", "row", "row-", "row-r", "row-r0", "row-s", "rox", "roa", "s"] {
            targets.push(InternalKey::first_of_row(row.into()));
        }
        blocks.push((entries, targets));
    }
    blocks
}

#[test]
fn a_seek_lands_where_a_scan_would() {
    for (entries, targets) in blocks_and_targets() {
        let block = DecodedBlock::decode(&encode(&entries)).unwrap();
        for t in &targets {
            for inclusive in [true, false] {
                let scan = entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t });
                let want = scan.unwrap_or(entries.len());
                assert_eq!(block.seek(t, inclusive), want, "{t:?} inclusive {inclusive}");
            }
        }
    }
}

/// A reversed read that starts with a part of a block gets the entries
/// a backward scan of the whole block gives it: from the last below its
/// bound (or the block's end) back to the first of their row and one
/// more, or as many as the cap allows.
#[test]
fn a_part_before_a_bound_holds_what_a_reversed_read_would_scan_first() {
    for (entries, targets) in blocks_and_targets() {
        let raw = encode(&entries);
        let bounds = targets.iter().flat_map(|t| [Some((t, true)), Some((t, false))]).chain([None]);
        for bound in bounds {
            for cap in [1, 3, 128] {
                let at = match bound {
                    Some((t, inclusive)) => {
                        entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t })
                    }
                    None => None,
                }
                .unwrap_or(entries.len());
                let row_start = match at {
                    0 => 0,
                    _ => entries[..at].iter().rposition(|e| e.key.row != entries[at - 1].key.row).map_or(0, |i| i + 1),
                };
                let first = row_start.saturating_sub(1).max(at.saturating_sub(cap));
                let part = BlockPart::decode_before(&raw, bound, cap).unwrap();
                let what = format!("{bound:?} cap {cap}");
                assert_eq!((part.first, part.total), (first, entries.len()), "{what}");
                let got: Vec<Entry> = part.block.entries().collect();
                assert_eq!(got, entries[first..at], "{what}");
                for (i, e) in got.iter().enumerate() {
                    assert_eq!(part.block.seek(&e.key, true), i, "{what}");
                }
            }
        }
    }
}

/// A read of one row that decodes only a part of a block gets the
/// entries a scan of the whole block gives it: from the first at or
/// past the target, through the row's last in the block and the entry
/// after it, or as many as the cap allows; and the part seeks, and
/// answers for its keys, as the whole block would.
#[test]
fn a_part_holds_what_a_read_of_its_row_would_scan() {
    for (entries, targets) in blocks_and_targets() {
        let raw = encode(&entries);
        for t in &targets {
            for (inclusive, cap) in [(true, 1), (true, 3), (false, 3), (true, 128), (false, 128)] {
                let scan = entries.iter().position(|e| if inclusive { e.key >= *t } else { e.key > *t });
                let first = scan.unwrap_or(entries.len());
                let row_ends = entries[first..].iter().position(|e| e.key.row != t.row).map(|i| first + i);
                // One past the row's last entry (the next row's first
                // if the block lacks the row), as far as the cap allows.
                let end = row_ends.map_or(entries.len(), |past| past + 1).min(first + cap).min(entries.len());
                let part = BlockPart::decode(&raw, t, inclusive, cap).unwrap();
                let got: Vec<Entry> = part.block.entries().collect();
                let what = format!("{t:?} inclusive {inclusive} cap {cap}");
                assert_eq!((part.first, part.total), (first, entries.len()), "{what}");
                assert_eq!(got, entries[first..end], "{what}");
                assert_eq!(part.block.seek(t, inclusive), 0, "{what}");
                for (i, e) in got.iter().enumerate() {
                    assert_eq!(part.block.cmp_key(i, &e.key), Ordering::Equal, "{what}");
                    assert_eq!(part.block.seek(&e.key, true), i, "{what}");
                }
            }
        }
    }
}

#[test]
fn entries_survive_encoding_exactly() {
    let mut entries = vec![
        Entry::delete_family("a".into(), 9),
        Entry::delete_column("a".into(), "".into(), (0, Some(5000)), 8),
        Entry::put("a".into(), "".into(), 3000, 7, "".into()),
        Entry::put("a".into(), "x".into(), 2_000_000, 6, "v1".into()),
        Entry::put("a".into(), "x".into(), 1_000_000, 5, "v0".into()),
        Entry::put("ab".into(), "\0\u{ff}".into(), -5, 4, vec![0u8, 255].into()),
        Entry::put("b".into(), "x".into(), i64::MAX, u64::MAX >> 1, "w".into()),
    ];
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(round_trip(&entries), entries);
}

#[test]
fn every_field_width_round_trips() {
    // 300 rows and qualifiers (16-bit ids), a 70 000-byte value (32-bit
    // value offsets), timestamps from i64::MIN to i64::MAX and sequence
    // numbers up to 2^63 - 1 (64-bit offsets), every kind.
    let mut entries = vec![Entry::put("a".into(), "big".into(), 7, 1, vec![7u8; 70_000].into())];
    for i in 0..300i64 {
        let (row, qualifier) = (format!("r{i:03}"), format!("q{i:03}"));
        entries.push(Entry::put(row.clone().into(), qualifier.clone().into(), i64::MIN + i, 2, "v".into()));
        entries.push(Entry::put(row.clone().into(), qualifier.into(), i64::MAX - i, (u64::MAX >> 1) - 3, "".into()));
        entries.push(Entry::delete_family(row.into(), 4));
    }
    entries.push(Entry::delete_column("z".into(), "q".into(), (-10, Some(10)), 5));
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(round_trip(&entries), entries);
}

#[test]
fn a_block_of_no_entries_decodes_empty() {
    // flags, 0 entries, 0 rows, 0 qualifiers: nothing else.
    let block = DecodedBlock::decode(&[0, 0, 0, 0]).unwrap();
    assert!(block.is_empty());
    assert!(block.entry(0).is_none());
}

#[test]
fn a_wide_row_of_small_measurements_costs_the_cache_little() {
    // A compacted wide row: one row, one column, minutes, sequence 0.
    let entries: Vec<Entry> = (0..1800i64)
        .map(|m| {
            let value = (700 + m % 50).to_string();
            Entry::put("balloon#week".into(), "altitude".into(), (10_000 - m) * 60_000_000, 0, value.into())
        })
        .collect();
    let raw = encode(&entries);
    let block = DecodedBlock::decode(&raw).unwrap();
    assert_eq!(block.entries().collect::<Vec<_>>(), entries);
    // The 3-byte values alone: row, qualifier, kind, sequence, the
    // timestamps (a minute apart, newest first) and the values'
    // lengths and offsets (a stride) cost nothing. Timestamps cost 2
    // bytes an entry before they were seen to step evenly; a fixed
    // 40-byte slot per entry beside the kept encoded block cost 50.
    assert!(block.memory_bytes() <= 3 * entries.len() + 512, "{} bytes", block.memory_bytes());
}

#[test]
fn exact_division_agrees_with_the_operators() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let divisors = [1u64, 2, 3, 7, 60, 1000, 60_000, 60_000_000, 1 << 40, 3 << 61, u64::MAX - 1, u64::MAX];
    for d in divisors {
        let divisor = Divisor::new(d);
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let multiples = [Some(seed / d * d), (seed % 4096).checked_mul(d)];
            for x in [Some(seed), Some(seed | 1), Some(seed >> 7)].into_iter().chain(multiples).flatten() {
                assert_eq!(divisor.divides(x), x % d == 0, "{x} by {d}");
                if x % d == 0 {
                    assert_eq!(divisor.quotient(x), x / d, "{x} by {d}");
                }
            }
        }
    }
}

#[test]
fn a_stride_is_every_offset_its_index_times_the_first_step() {
    assert_eq!(stride([0, 14, 28, 42].into_iter()), Some(14));
    assert_eq!(stride([0, 1].into_iter()), Some(1));
    assert_eq!(stride([0, 14, 28, 43].into_iter()), None);
    assert_eq!(stride([1, 2, 3].into_iter()), None);
    assert_eq!(stride([0, 0, 0].into_iter()), None);
    assert_eq!(stride([0].into_iter()), None);
    // A step whose multiples pass u64::MAX is no stride.
    assert_eq!(stride([0, 1 << 63, 0].into_iter()), None);
}

#[test]
fn evenly_stepping_columns_round_trip_at_every_step_and_sign() {
    let put = |row: String, t: i64, seq: u64| Entry::put(row.into(), "q".into(), t, seq, "v".into());
    for step in [1i64, 7, 1000, 60_000_000, i64::MAX / 4] {
        for seq_step in [0u64, 1, 5] {
            for n in [1i64, 2, 3, 500].into_iter().filter(|&n| step.checked_mul(n + 1).is_some()) {
                // One column, newest first: the timestamps count down.
                let column: Vec<Entry> =
                    (0..n).map(|i| put("r".into(), -step * i + 17_000, 3 + i.cast_unsigned() * seq_step)).collect();
                assert_eq!(round_trip(&column), column, "step {step}, seq step {seq_step}, n {n}");
                // A row each: the timestamps count up.
                let rows: Vec<Entry> = (0..n)
                    .map(|i| put(format!("r{i:04}"), step * i - 40_000, 9_000 - i.cast_unsigned() * seq_step))
                    .collect();
                assert_eq!(round_trip(&rows), rows, "step {step}, seq step {seq_step}, n {n}");
            }
        }
    }
    // Several columns a row, one timestamp and one sequence number for
    // all: constant fields, however many qualifiers; then the same with
    // one entry apart, taken the general way.
    let cell = |r: i64, q: &str, t: i64, seq: u64| {
        Entry::put(format!("r{r:04}").into(), q.as_bytes().to_vec().into(), t, seq, "v".into())
    };
    let mut same: Vec<Entry> = (0..300).flat_map(|r| ["a", "b", "c"].map(|q| cell(r, q, 5_000, 7))).collect();
    assert_eq!(round_trip(&same), same);
    same[400] = cell(133, "b", 4_000, 9);
    assert_eq!(round_trip(&same), same);
    // A step that would overflow i64 by the last entry is taken the
    // general way, whose wrapping deltas give the entries back.
    let far = [put("a".into(), i64::MAX, 0), put("b".into(), i64::MIN, 0), put("c".into(), i64::MIN + 1, 0)];
    assert_eq!(round_trip(&far), far);
}

#[test]
fn timestamps_of_a_common_unit_and_without_one_round_trip() {
    let at = |row: &str, t: i64| Entry::put(row.to_owned().into(), "q".into(), t, 0, "v".into());
    // Minutes in microseconds (a unit of 60 000 000), around zero.
    let minutes: Vec<Entry> = (-5..300i64).rev().map(|m| at(&format!("r{m:+05}"), m * 60_000_000)).collect();
    let mut sorted = minutes.clone();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(round_trip(&sorted), sorted);
    // A unit of 7 microseconds, then one timestamp that breaks it.
    let mut sevens: Vec<Entry> = (0..100i64).map(|i| at("r", i * 7 - 350)).collect();
    sevens.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(round_trip(&sevens), sevens);
    sevens.push(at("s", 3));
    assert_eq!(round_trip(&sevens), sevens);
    // Two timestamps far apart: a unit as large as their distance.
    let ends = vec![at("a", i64::MAX), at("b", i64::MIN)];
    assert_eq!(round_trip(&ends), ends);
}

#[test]
fn single_timestamp_rows_cost_the_cache_what_their_keys_do_not_share_and_their_values() {
    // A compacted single-timestamp table: a row per minute, one
    // 14-byte blob each, sequence 0.
    let entries: Vec<Entry> = (0..304i64)
        .map(|m| {
            let row = format!("asia-south2#1001#2021-03-01-{m:04}");
            Entry::put(row.into(), "blob".into(), m * 60_000_000, 0, vec![7u8; 14].into())
        })
        .collect();
    let block = DecodedBlock::decode(&encode(&entries)).unwrap();
    let decoded: Vec<Entry> = block.entries().collect();
    assert_eq!(decoded, entries);
    // The keys share their first 29 bytes, kept once. Each entry: the
    // 3 bytes of its key after them and its 14 bytes of value; the
    // rests are all 3 bytes long, so where each ends is not kept; rows,
    // value offsets and timestamps (a minute apart) step evenly and
    // cost nothing (they cost 2 bytes each, and the timestamp 4, then
    // 2 in minutes). Whole keys cost 29 more bytes an entry, a list of
    // their ends 4.
    let per_entry = 3 + 14;
    assert!(block.memory_bytes() <= 29 + per_entry * entries.len() + 512, "{} bytes", block.memory_bytes());
}

/// The worked example of `docs/format/sstable.md`, byte for byte.
#[test]
fn worked_example_of_the_format_doc() {
    let entries = [
        Entry::put("r1".into(), "a".into(), 2000, 5, "x".into()),
        Entry::put("r1".into(), "a".into(), 1000, 3, "y".into()),
        Entry::put("r2".into(), "b".into(), 1000, 4, "zz".into()),
    ];
    let raw = encode(&entries);
    let expected: Vec<u8> = vec![
        0x03, 0x03, 0x02, 0x02, // flags (ms, packed streams), entries, rows, qualifiers
        0x00, 0x02, b'r', b'1', 0x02, // row "r1": shares 0, suffix "r1", 2 entries
        0x01, 0x01, b'2', 0x01, // row "r2": shares 1, suffix "2", 1 entry
        0x01, b'a', 0x01, b'b', // qualifier dictionary
        0x01, 0x00, // kinds: one value, put
        0x00, 0x00, 0x00, 0x01, // qualifier ids as varints
        0x04, 0x00, 0x01, 0x01, // timestamps/1000, zigzag deltas: heads 2 (a's) and 1-1 (b's), then 1-2
        0x0a, 0x02, 0x01, 0x03, // sequences, zigzag deltas: heads 5 and 4-3, then 3-5
        0x00, 0x01, 0x01, 0x02, // value lengths as varints
        b'x', b'y', b'z', b'z', // values, grouped by qualifier
    ];
    assert_eq!(raw, expected);
    let decoded: Vec<Entry> = DecodedBlock::decode(&raw).unwrap().entries().collect();
    assert_eq!(decoded, entries);
    // The same block as written before packed streams: still read.
    let unpacked: Vec<u8> = vec![
        0x01, 0x03, 0x02, 0x02, 0x00, 0x02, b'r', b'1', 0x02, 0x01, 0x01, b'2', 0x01, 0x01, b'a', 0x01, b'b', 0x00,
        0x00, 0x00, // kinds as bytes
        0x00, 0x00, 0x01, 0x04, 0x01, 0x00, 0x0a, 0x03, 0x02, 0x01, 0x01, 0x02, // the rest as varints
        b'x', b'y', b'z', b'z',
    ];
    let decoded: Vec<Entry> = DecodedBlock::decode(&unpacked).unwrap().entries().collect();
    assert_eq!(decoded, entries);
}

#[test]
fn qualifier_ids_out_of_first_appearance_order_are_an_error() {
    // The worked example's block, its qualifier ids (bytes 20..23, after
    // the tag at 19) changed.
    let block = |ids: [u8; 3]| {
        let mut raw = encode(&[
            Entry::put("r1".into(), "a".into(), 2000, 5, "x".into()),
            Entry::put("r1".into(), "a".into(), 1000, 3, "y".into()),
            Entry::put("r2".into(), "b".into(), 1000, 4, "zz".into()),
        ]);
        assert_eq!(raw[19..23], [0, 0, 0, 1]);
        raw[20..23].copy_from_slice(&ids);
        DecodedBlock::decode(&raw)
    };
    assert!(block([0, 0, 1]).is_ok());
    // `b` before `a`, and `b` never: both are refused where the ids are.
    for ids in [[1, 0, 0], [0, 0, 0]] {
        let err = block(ids).unwrap_err();
        assert!(err.what.starts_with("qualifier id"), "{ids:?}: {}", err.what);
        assert!((19..23).contains(&err.offset), "{ids:?}: at {}", err.offset);
    }
}

/// The doc's column of minutes: kinds, qualifier ids, sequences and
/// timestamp deltas one value each, value lengths one byte each.
#[test]
fn a_column_of_minutes_packs_its_streams() {
    let entries: Vec<Entry> = (0..1817i64)
        .map(|m| {
            let value = if m % 3 == 0 { "1013" } else { "951" };
            Entry::put("asia#1001#week09".into(), "altitude".into(), (10_000 - m) * 60_000_000, 0, value.into())
        })
        .collect();
    let raw = encode(&entries);
    let dictionary = [&[0x08][..], b"altitude"].concat();
    let at = raw.windows(dictionary.len()).position(|w| w == dictionary).unwrap() + dictionary.len();
    // Kinds, qualifier ids: one value, 0. Timestamps: the head, the
    // first delta, from 0; then one value, zigzag(−60,000). Sequences:
    // a head of 0, then one value, 0. Value lengths: 1-byte offsets from 3.
    let mut streams = vec![0x01, 0x00, 0x01, 0x00];
    crate::coding::put_zigzag(&mut streams, 10_000 * 60_000);
    streams.extend_from_slice(&[0x01, 0xbf, 0xa9, 0x07, 0x00, 0x01, 0x00, 0x02, 0x03]);
    assert_eq!(raw[at..at + streams.len()], streams);
    let lengths = &raw[at + streams.len()..at + streams.len() + entries.len()];
    assert!(lengths.iter().all(|&b| b <= 1));
    let decoded: Vec<Entry> = DecodedBlock::decode(&raw).unwrap().entries().collect();
    assert_eq!(decoded, entries);
}

/// A column of empty values at regular times packs to a few bytes
/// however many entries it holds: the count is bounded by a constant,
/// not by the block's length, and a count past it is refused.
#[test]
fn more_entries_than_bytes_decode_and_too_many_are_refused() {
    let entries: Vec<Entry> =
        (0..5000i64).map(|m| Entry::put("heartbeat".into(), "up".into(), (9000 - m) * 1000, 0, "".into())).collect();
    let raw = encode(&entries);
    assert!(raw.len() < 100, "{} bytes", raw.len());
    assert_eq!(round_trip(&entries), entries);
    let mut huge = vec![FLAG_MILLIS | FLAG_PACKED_STREAMS];
    crate::coding::put_varint(&mut huge, MAX_BLOCK_ENTRIES as u64 + 1);
    huge.extend_from_slice(&raw[4..]);
    let err = DecodedBlock::decode(&huge).unwrap_err();
    assert_eq!((err.offset, err.what.as_ref()), (1, "entry count"));
}

/// Streams whose ranges need one, two and four bytes, or more (then
/// varints), with tombstones among the kinds, decode to what was written.
#[test]
fn every_stream_encoding_round_trips() {
    for spread in [1u64, 200, 60_000, 3_000_000_000, u64::MAX >> 2] {
        let mut entries = Vec::new();
        for i in 0..300u64 {
            let ts = 5_000_000i64 + (i.wrapping_mul(7919) % spread.max(2)).cast_signed() * 1000;
            let value = vec![b'v'; (i % 4) as usize + if spread > 1000 { 300 } else { 0 }];
            entries.push(Entry::put(
                format!("r{:03}", i / 3).into(),
                format!("q{}", i % 3).into(),
                ts,
                i,
                value.into(),
            ));
            if i % 50 == 0 {
                entries.push(Entry::delete_column(
                    format!("r{:03}", i / 3).into(),
                    format!("q{}", i % 3).into(),
                    (0, Some(10)),
                    i + 1,
                ));
            }
        }
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        entries.dedup_by(|a, b| a.key == b.key);
        assert_eq!(round_trip(&entries), entries, "spread {spread}");
    }
}

#[test]
fn truncated_or_garbled_blocks_are_errors_not_panics() {
    let entries: Vec<Entry> = (0..50u64)
        .map(|i| {
            let ts = 1000 * i.cast_signed();
            Entry::put(format!("row{:03}", i / 4).into(), format!("q{}", i % 4).into(), ts, i, "val".into())
        })
        .collect();
    let raw = encode(&entries);
    // Reads of one row decode parts: of a row at the start, in the
    // middle, at the end, and of one the block lacks.
    let targets: Vec<InternalKey> =
        ["row000", "row006", "row012", "row0065"].map(|r| InternalKey::first_of_row(r.into())).into();
    for cut in 0..raw.len() {
        assert!(DecodedBlock::decode(&raw[..cut]).is_err());
        for t in &targets {
            assert!(BlockPart::decode(&raw[..cut], t, true, 8).is_err(), "{t:?} cut at {cut}");
            assert!(BlockPart::decode_before(&raw[..cut], Some((t, true)), 8).is_err(), "{t:?} cut at {cut}");
        }
        assert!(BlockPart::decode_before(&raw[..cut], None, 8).is_err(), "cut at {cut}");
    }
    for i in 0..raw.len() {
        let mut bad = raw.clone();
        bad[i] ^= 0xa5;
        let _ = DecodedBlock::decode(&bad);
        for t in &targets {
            let _ = BlockPart::decode(&bad, t, true, 8);
            let _ = BlockPart::decode_before(&bad, Some((t, false)), 8);
        }
        let _ = BlockPart::decode_before(&bad, None, 8);
    }
}
