//! The SSTable layer on its own: random entries written with `SstWriter`,
//! read back with `SstIter` between random bounds, forward and backward,
//! against a sorted vector.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "a test generator's draws are small numbers"
)]

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::{Compression, SstIter, SstOptions, SstOrigin, SstReader, SstWriter};
use crate::fs::{Fs, MemFs};
use crate::key::{Entry, InternalKey};

const ORIGIN: SstOrigin<'static> = SstOrigin { family: "cf", store: 1, created_micros: 0 };

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn random_entries(rng: &mut Rng, n: usize) -> Vec<Entry> {
    let mut entries: Vec<Entry> = (0..n)
        .map(|i| {
            let row: Bytes = format!("row{:03}", rng.below(60)).into();
            let q: Bytes = ["", "a", "b\0", "pressure"][rng.below(4) as usize].into();
            let ts = 1000 * rng.below(50) as i64;
            let seq = i as u64 + 1;
            match rng.below(10) {
                0 => Entry::delete_family(row, seq),
                1 => Entry::delete_column(row, q, (ts, Some(ts + 5000)), seq),
                _ => Entry::put(row, q, ts, seq, format!("value-{i}").into()),
            }
        })
        .collect();
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    entries
}

fn write(fs: &MemFs, entries: &[Entry], block_size: usize, compression: Compression) -> Arc<SstReader> {
    write_with(fs, entries, SstOptions { block_size, compression, block_entries: None, dictionary: None })
}

fn write_with(fs: &MemFs, entries: &[Entry], options: SstOptions) -> Arc<SstReader> {
    write_index_with(fs, entries, options, true)
}

/// [`write_with`], the index recording each block's first row or not (as
/// files written before it did).
fn write_index_with(fs: &MemFs, entries: &[Entry], options: SstOptions, first_rows: bool) -> Arc<SstReader> {
    let path = std::path::Path::new("/t.sst");
    let mut w = SstWriter::create(fs, path, ORIGIN, options).unwrap();
    if !first_rows {
        w = w.without_first_rows();
    }
    for e in entries {
        w.add(e.as_ref()).unwrap();
    }
    let summary = w.finish().unwrap();
    assert_eq!(summary.props.cells + summary.props.tombstones, entries.len() as u64);
    let reader = SstReader::open(path, fs.map(path).unwrap()).unwrap();
    assert_eq!(reader.verify().unwrap(), entries.len() as u64);
    Arc::new(reader)
}

fn bound(rng: &mut Rng, entries: &[Entry]) -> Bound<InternalKey> {
    let k = match rng.below(3) {
        0 => entries[rng.below(entries.len() as u64) as usize].key.clone(),
        1 => InternalKey::first_of_row(format!("row{:03}", rng.below(62)).into()),
        _ => return Bound::Unbounded,
    };
    if rng.below(2) == 0 { Bound::Included(k) } else { Bound::Excluded(k) }
}

fn within(k: &InternalKey, lo: &Bound<InternalKey>, hi: &Bound<InternalKey>) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    };
    above && below
}

/// The entries of `reader` between `bounds`, read forward or backward,
/// in key order.
fn read_between(
    reader: &Arc<SstReader>,
    (lo, hi): (&Bound<InternalKey>, &Bound<InternalKey>),
    reverse: bool,
) -> Vec<Entry> {
    let mut it = SstIter::new(reader.clone(), None, (lo.clone(), hi.clone()), reverse).unwrap();
    let mut got = Vec::new();
    while let Some(e) = it.current() {
        got.push(e.to_entry());
        it.advance().unwrap();
    }
    if reverse {
        got.reverse();
    }
    got
}

/// Every read between bounds, forward and backward, and every forward
/// read that seeks, in files whose index records each block's first row
/// (a read skips the blocks that begin past its bound) and in files whose
/// index does not.
#[test]
fn iteration_between_any_bounds_matches_a_sorted_vector() {
    let mut rng = Rng(7);
    for (block_size, compression) in
        [(256, Compression::Zstd { level: 3 }), (64, Compression::None), (1 << 16, Compression::Zstd { level: 1 })]
    {
        let entries = random_entries(&mut rng, 1500);
        for first_rows in [true, false] {
            let fs = MemFs::new();
            let options = SstOptions { block_size, compression, block_entries: None, dictionary: None };
            let reader = write_index_with(&fs, &entries, options, first_rows);
            assert_eq!(reader.index().iter().all(|e| e.first_row.is_some()), first_rows);
            for _ in 0..300 {
                let (lo, hi) = (bound(&mut rng, &entries), bound(&mut rng, &entries));
                let expected: Vec<&Entry> = entries.iter().filter(|e| within(&e.key, &lo, &hi)).collect();
                let want: Vec<Entry> = expected.iter().map(|e| (*e).clone()).collect();
                let what = format!("bounds {lo:?}..{hi:?}, block size {block_size}, first rows {first_rows}");
                for reverse in [false, true] {
                    let got = read_between(&reader, (&lo, &hi), reverse);
                    assert_eq!(got, want, "{what}, reverse {reverse}");
                }
                let target = entries[rng.below(entries.len() as u64) as usize].key.clone();
                let mut it = SstIter::new(reader.clone(), None, (lo.clone(), hi.clone()), false).unwrap();
                it.seek(&target).unwrap();
                let mut got = Vec::new();
                while let Some(e) = it.current() {
                    got.push(e.to_entry());
                    it.advance().unwrap();
                }
                let after: Vec<Entry> = want.iter().filter(|e| e.key >= target).cloned().collect();
                assert_eq!(got, after, "{what}, seek to {target:?}");
            }
        }
    }
}

#[test]
fn bloom_filter_never_hides_a_row_it_holds() {
    let mut rng = Rng(11);
    let fs = MemFs::new();
    let entries = random_entries(&mut rng, 500);
    let reader = write(&fs, &entries, 512, Compression::default());
    assert!(entries.iter().all(|e| reader.may_contain_row(&e.key.row)));
    let strangers = (0..1000).filter(|i| reader.may_contain_row(format!("absent{i}").as_bytes())).count();
    assert!(strangers < 50, "{strangers} of 1000 absent rows pass the filter");
}

#[test]
fn a_mapped_file_reads_its_filter_in_place() {
    use crate::fs::OsFs;
    let mut rng = Rng(12);
    let entries = random_entries(&mut rng, 700);
    let dir = tempfile::tempdir().unwrap();
    for block_size in [512, 4096] {
        let path = dir.path().join(format!("{block_size}.sst"));
        let options =
            SstOptions { block_size, compression: Compression::default(), block_entries: None, dictionary: None };
        let mut w = SstWriter::create(&OsFs, &path, ORIGIN, options).unwrap();
        for e in &entries {
            w.add(e.as_ref()).unwrap();
        }
        w.finish().unwrap();
        let reader = SstReader::open(&path, OsFs.map(&path).unwrap()).unwrap();
        assert!(reader.row_filter().in_place(), "block size {block_size}");
        assert_eq!(reader.bloom().layout, "cache-local");
        assert!(entries.iter().all(|e| reader.may_contain_row(&e.key.row)));
    }
}

#[test]
fn entries_out_of_order_are_refused() {
    let fs = MemFs::new();
    let path = std::path::Path::new("/bad.sst");
    let options =
        SstOptions { block_size: 4096, compression: Compression::None, block_entries: None, dictionary: None };
    let mut w = SstWriter::create(&fs, path, ORIGIN, options).unwrap();
    w.add(Entry::put("b".into(), "q".into(), 0, 1, "v".into()).as_ref()).unwrap();
    let err = w.add(Entry::put("a".into(), "q".into(), 0, 2, "v".into()).as_ref()).unwrap_err();
    assert!(matches!(err, crate::Error::InvalidArgument(_)), "{err}");
}

/// Each block's last key, as (row, qualifier), in file order.
/// Reads of one row after another, as a read of a row set makes them
/// (each from the row's first key or from a key inside it, seeking ahead
/// now and then), get what the sorted vector holds, whether their blocks
/// are decoded in part (no cache; a full cache refusing a block's first
/// miss) or whole (a cache with room). Some rows are wide, with columns
/// longer than a part.
#[test]
fn reads_of_one_row_get_from_parts_of_blocks_what_whole_blocks_hold() {
    use crate::sst::reader::SstBlockCache;
    let mut rng = Rng(17);
    for (round, block_size) in [256, 4096, 16384, 1 << 16].into_iter().enumerate() {
        let fs = MemFs::new();
        let mut entries = random_entries(&mut rng, 1200);
        entries.extend(wide_row("row030w", &["a", "b", "c"], 400));
        entries.extend(wide_row("row031", &["x"], 300).into_iter().map(|mut e| {
            e.key.seq = 5000 + (e.key.timestamp / 60_000_000).cast_unsigned();
            e
        }));
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        entries.dedup_by(|a, b| a.key == b.key);
        let compression = if round % 2 == 0 { Compression::Zstd { level: 1 } } else { Compression::None };
        let reader = write(&fs, &entries, block_size, compression);
        let mut rows: Vec<Bytes> = (0..62).map(|r| Bytes::from(format!("row{r:03}"))).collect();
        rows.push("row030w".into());
        rows.sort();
        for cache in [None, Some(Arc::new(SstBlockCache::new(0))), Some(Arc::new(SstBlockCache::new(1 << 30)))] {
            let mut it: Option<SstIter> = None;
            for row in &rows {
                let mut next_row = row.to_vec();
                next_row.push(0);
                let hi = Bound::Excluded(InternalKey::first_of_row(next_row.into()));
                let of_row: Vec<&Entry> = entries.iter().filter(|e| e.key.row == *row).collect();
                let lo = match rng.below(3) {
                    0 if !of_row.is_empty() => {
                        Bound::Included(of_row[rng.below(of_row.len() as u64) as usize].key.clone())
                    }
                    1 if !of_row.is_empty() => {
                        Bound::Excluded(of_row[rng.below(of_row.len() as u64) as usize].key.clone())
                    }
                    _ => Bound::Included(InternalKey::first_of_row(row.clone())),
                };
                let want: Vec<&Entry> = entries.iter().filter(|e| within(&e.key, &lo, &hi)).collect();
                let it = match it.as_mut() {
                    Some(it) => {
                        it.restart((lo.clone(), hi.clone())).unwrap();
                        it
                    }
                    None => {
                        it.insert(SstIter::new(reader.clone(), cache.clone(), (lo.clone(), hi.clone()), false).unwrap())
                    }
                };
                let what = format!("row {row:?} from {lo:?}, block size {block_size}, cache {}", cache.is_some());
                let (mut j, seeks) = (0, rng.below(2) == 0);
                while let Some(e) = it.current() {
                    assert_eq!(Some(&e.to_entry()), want.get(j).copied(), "entry {j} of {what}");
                    if seeks && rng.below(6) == 0 {
                        let mut target = want[(j + 1 + rng.below(200) as usize).min(want.len() - 1)].key.clone();
                        target.timestamp += rng.below(2) as i64;
                        it.seek(&target).unwrap();
                        j = j.max(want.partition_point(|e| e.key < target));
                    } else {
                        it.advance().unwrap();
                        j += 1;
                    }
                }
                assert_eq!(j, want.len(), "{what}");
            }
        }
    }
}

/// A read of one row that the file does not hold, its bloom filter not
/// asked (as on a false positive), finds nothing: also where the block
/// the index search lands in begins past the row, which a read of one row
/// starting does not look up (it decodes the block, or part of it).
#[test]
fn a_read_of_one_absent_row_finds_nothing_where_its_block_begins_past_it() {
    use crate::sst::reader::SstBlockCache;
    let fs = MemFs::new();
    // Even rows only, a few entries a block: many odd rows fall between
    // two blocks.
    let entries: Vec<Entry> = (0..400)
        .step_by(2)
        .flat_map(|r| ["a", "b"].map(|q| Entry::put(format!("r{r:03}").into(), q.into(), 5, 1, "v".into())))
        .collect();
    let reader = write(&fs, &entries, 64, Compression::None);
    let one_row = |row: &str| {
        let lo = Bound::Included(InternalKey::first_of_row(Bytes::from(row.to_owned())));
        let hi = Bound::Excluded(InternalKey::first_of_row(Bytes::from(format!("{row}\0"))));
        (lo, hi)
    };
    let keys = reader.index_keys();
    // Absent rows just before a block's first row: the search lands in
    // a block that begins past them.
    let between = (1..400).step_by(2).filter(|r| {
        let next = format!("r{:03}", r + 1);
        (0..reader.index().len()).any(|i| keys.first_row(i) == Some(next.as_bytes()))
    });
    assert!(between.count() > 20, "few absent rows fall between blocks");
    for cache in [None, Some(Arc::new(SstBlockCache::new(0))), Some(Arc::new(SstBlockCache::new(1 << 30)))] {
        let mut shared: Option<SstIter> = None;
        for r in 0..400 {
            let row = format!("r{r:03}");
            let bounds = one_row(&row);
            let alone = SstIter::new(reader.clone(), cache.clone(), bounds.clone(), false).unwrap();
            let moved = match shared.as_mut() {
                Some(it) => {
                    it.restart(bounds).unwrap();
                    it
                }
                None => shared.insert(SstIter::new(reader.clone(), cache.clone(), bounds, false).unwrap()),
            };
            for it in [&alone, &*moved] {
                let got = it.current().map(|e| e.to_entry().key.row);
                if r % 2 == 1 {
                    assert_eq!(got, None, "absent row {row}");
                } else {
                    assert_eq!(got, Some(Bytes::from(row.clone())), "row {row}");
                }
            }
        }
    }
}

fn block_ends(reader: &SstReader) -> Vec<(String, String)> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    reader.index().iter().map(|e| (text(&e.last_key.row), text(&e.last_key.qualifier))).collect()
}

/// `cells` minutes of each of `columns` in row `row`, newest first.
fn wide_row(row: &str, columns: &[&str], cells: i64) -> Vec<Entry> {
    let mut entries = Vec::new();
    for q in columns {
        for m in (0..cells).rev() {
            entries.push(Entry::put(
                row.to_owned().into(),
                q.as_bytes().to_vec().into(),
                m * 60_000_000,
                0,
                "1234".into(),
            ));
        }
    }
    entries
}

#[test]
fn a_wide_row_column_more_than_a_quarter_block_ends_its_block() {
    let fs = MemFs::new();
    // 4096 bytes hold about 400 of these cells: 150 are over a quarter.
    let reader = write(&fs, &wide_row("r", &["a", "b", "c"], 150), 4096, Compression::None);
    let ends = block_ends(&reader);
    assert_eq!(ends, [("r".into(), "a".into()), ("r".into(), "b".into()), ("r".into(), "c".into())]);
    // 50 cells are under a quarter: columns share blocks, cut by size.
    let reader =
        write(&fs, &wide_row("r", &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"], 50), 4096, Compression::None);
    assert!(block_ends(&reader).len() < 5, "{:?}", block_ends(&reader));
    // A block of many rows is cut by size only, whatever the columns.
    let mut narrow: Vec<Entry> = (0..300).flat_map(|m| wide_row(&format!("r{m:04}"), &["a", "b"], 1)).collect();
    narrow.sort_by(|a, b| a.key.cmp(&b.key));
    let reader = write(&fs, &narrow, 4096, Compression::None);
    assert!(block_ends(&reader).len() <= 3, "{:?}", block_ends(&reader));
}

#[test]
fn a_block_of_small_entries_ends_at_its_entry_bound() {
    let fs = MemFs::new();
    let most = 128;
    // One-cell rows of one-byte values, and a column of a thousand
    // minutes: either way the estimate stays far below 4096 bytes at the
    // bound, so the bound, not the size, ends each block.
    let mut tall: Vec<Entry> =
        (0..1000).map(|m| Entry::put(format!("r{m:04}").into(), "a".into(), 0, 0, "1".into())).collect();
    tall.sort_by(|a, b| a.key.cmp(&b.key));
    for entries in [tall, wide_row("r", &["a"], 1000)] {
        let options = SstOptions {
            block_size: 4096,
            compression: Compression::None,
            block_entries: Some(most),
            dictionary: None,
        };
        let reader = write_with(&fs, &entries, options);
        let counts: Vec<usize> = reader.index().iter().map(|e| e.entries as usize).collect();
        let (full, last) = counts.split_at(counts.len() - 1);
        assert!(full.iter().all(|&n| n == most), "{counts:?}");
        assert_eq!(full.len() * most + last[0], 1000, "{counts:?}");
        let largest = (0..counts.len()).map(|b| reader.read_block(b).unwrap().estimated_size()).max().unwrap();
        assert!(largest < 4096 / 2, "a block's estimate is {largest} bytes");
    }
}

#[test]
fn check_reports_entries_out_of_order_and_goes_on_past_them() {
    // A block whose two cells of one column are oldest first, which key
    // order forbids (newest first), copied in as stored: the writer checks
    // a copied block's first and last keys only. A well-ordered block of
    // rows sharing a prefix follows it.
    let cell = |row: &'static str, ts: i64| Entry::put(row.into(), "q".into(), ts, 1, "v".into());
    let unordered = [cell("row-a", 1000), cell("row-a", 2000)];
    let ordered = [cell("row-b1", 1000), cell("row-b2", 1000), cell("row-b3", 1000)];
    let fs = MemFs::new();
    let path = std::path::Path::new("/unordered.sst");
    let options =
        SstOptions { block_size: 4096, compression: Compression::None, block_entries: None, dictionary: None };
    let mut w = SstWriter::create(&fs, path, ORIGIN, options).unwrap();
    for block in [&unordered[..], &ordered[..]] {
        let mut builder = super::BlockBuilder::default();
        for e in block {
            builder.add(e.as_ref());
        }
        let mut raw = Vec::new();
        builder.finish(&mut raw);
        let decoded = super::DecodedBlock::decode(&raw).unwrap();
        let stored = super::format::StoredBlock {
            raw_len: raw.len() as u32,
            bytes: raw.into(),
            compression: super::format::BlockCompression::Raw,
            entries: block.len() as u32,
            dictionary: None,
        };
        w.copy_block(&stored, &decoded, &block[block.len() - 1].key).unwrap();
    }
    w.finish().unwrap();
    let reader = SstReader::open(path, fs.map(path).unwrap()).unwrap();
    let report = reader.check();
    let faults: Vec<String> = report.faults.iter().map(ToString::to_string).collect();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(faults[0].contains("block 0: entry 1 is not after the entry before it"), "{faults:?}");
    assert_eq!((report.blocks, report.entries, report.cells), (2, 5, 5));
}

/// A file written with a dictionary: blocks after the first samples are
/// compressed with it, and every read agrees with the entries written.
fn write_with_dictionary(fs: &MemFs, entries: &[Entry]) -> Arc<SstReader> {
    let options = SstOptions {
        block_size: 256,
        compression: Compression::Zstd { level: 3 },
        block_entries: Some(16),
        dictionary: Some(256),
    };
    write_with(fs, entries, options)
}

#[test]
fn a_file_with_a_dictionary_reads_back_every_entry() {
    let mut rng = Rng(21);
    let fs = MemFs::new();
    let entries = random_entries(&mut rng, 4000);
    let reader = write_with_dictionary(&fs, &entries);
    assert!(reader.dictionary().is_some_and(|d| d.len() <= 256));
    assert_eq!(reader.footer_len(), super::format::FOOTER_LEN_V2);
    let blocks = reader.index().len();
    let with_dictionary = (0..blocks).filter(|&i| reader.stored_block(i).unwrap().dictionary.is_some()).count();
    assert!(with_dictionary > blocks / 2, "{with_dictionary} of {blocks} blocks use the dictionary");
    for _ in 0..100 {
        let (lo, hi) = (bound(&mut rng, &entries), bound(&mut rng, &entries));
        let want: Vec<Entry> = entries.iter().filter(|e| within(&e.key, &lo, &hi)).cloned().collect();
        for reverse in [false, true] {
            assert_eq!(read_between(&reader, (&lo, &hi), reverse), want, "bounds {lo:?}..{hi:?}, reverse {reverse}");
        }
    }
}

#[test]
fn a_damaged_dictionary_or_a_missing_one_is_corruption() {
    let fs = MemFs::new();
    let reader = write_with_dictionary(&fs, &random_entries(&mut Rng(22), 4000));
    let data = fs.map(std::path::Path::new("/t.sst")).unwrap();
    let path = std::path::Path::new("/damaged.sst");
    let handle = reader.footer().dictionary.unwrap();
    for at in handle.offset..handle.end().unwrap() {
        let mut bad = data.to_vec();
        bad[at as usize] ^= 0x10;
        match SstReader::open(path, bad.into()) {
            Err(crate::Error::Corruption { offset, .. }) => assert_eq!(offset, handle.offset, "byte {at}"),
            other => panic!("byte {at} of the dictionary flipped: {other:?}"),
        }
    }
    // The same blocks under a version-1 footer, which names no dictionary.
    let footer_at = data.len() - reader.footer_len();
    let mut without = data[..footer_at].to_vec();
    without.extend_from_slice(&super::Footer { dictionary: None, ..*reader.footer() }.encode());
    let reader = SstReader::open(path, without.into()).unwrap();
    let faults = reader.check().faults;
    assert!(!faults.is_empty());
    for fault in faults {
        assert!(fault.to_string().contains("a dictionary the file does not have"), "{fault}");
    }
}

/// Sixteen rows of four cells each, `row000` to `row015`, written in
/// blocks of eight entries: two rows a block, each block starting a row.
fn rows_of_four_in_blocks_of_eight(fs: &MemFs) -> (Vec<Entry>, Arc<SstReader>) {
    let entries: Vec<Entry> =
        (0..64).map(|i| Entry::put(format!("row{:03}", i / 4).into(), "q".into(), 64 - i, 1, "v".into())).collect();
    let options =
        SstOptions { block_size: 4096, compression: Compression::None, block_entries: Some(8), dictionary: None };
    let reader = write_with(fs, &entries, options);
    (entries, reader)
}

/// A file whose index names a wrong first row for a block, every checksum
/// right (as a writer's bug would leave it), fails `check`: a read that
/// trusted it would skip the block.
#[test]
fn check_reports_a_block_whose_first_row_differs_from_its_index_entry() {
    use super::format::{BlockCompression, BlockHandle, Footer, trailer};
    let fs = MemFs::new();
    let (_, reader) = rows_of_four_in_blocks_of_eight(&fs);
    let mut index = reader.index().to_vec();
    assert_eq!(index[1].first_row.as_deref(), Some(&b"row002"[..]));
    // Within the bounds a reader checks as it opens the file: the row the
    // block before ends with.
    index[1].first_row = Some(index[0].last_key.row.clone());

    let data = fs.map(std::path::Path::new("/t.sst")).unwrap();
    let footer = reader.footer();
    let mut file = data[..usize::try_from(footer.index.offset).unwrap()].to_vec();
    let mut append = |stored: &[u8]| {
        let handle =
            BlockHandle { offset: file.len() as u64, stored_len: stored.len() as u32, raw_len: stored.len() as u32 };
        file.extend_from_slice(stored);
        file.extend_from_slice(&trailer(stored, BlockCompression::Raw));
        handle
    };
    let stored = |h: &BlockHandle| &data[h.offset as usize..(h.offset + u64::from(h.stored_len)) as usize];
    let index = append(&super::index::encode(&index));
    let bloom = append(stored(&footer.bloom));
    let props = append(stored(&footer.props));
    file.extend_from_slice(&Footer { index, bloom, props, dictionary: None }.encode());

    let reader = SstReader::open(std::path::Path::new("/bad.sst"), file.into()).unwrap();
    let faults: Vec<String> = reader.check().faults.iter().map(ToString::to_string).collect();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(faults[0].contains("block 1: its first row differs from its index entry's"), "{faults:?}");
}

/// A reversed read whose bounds fall where blocks meet decodes only the
/// blocks between them: not the block after its upper bound (the index
/// says which row that block starts with), nor the one before its lower
/// bound (the index says which key that block ends with).
#[test]
fn a_reversed_read_between_block_edges_decodes_only_its_blocks() {
    let fs = MemFs::new();
    let (entries, reader) = rows_of_four_in_blocks_of_eight(&fs);
    let before = reader.blocks_decoded();
    // Rows 2 and 3: block 1, two rows of four entries each.
    let row = |r: &str| InternalKey::first_of_row(r.to_owned().into());
    let bounds = (Bound::Included(row("row002")), Bound::Excluded(row("row004")));
    let got = read_between(&reader, (&bounds.0, &bounds.1), true);
    assert_eq!(got, entries[8..16]);
    // Block 1 alone: without a cache, the part of it the read starts with
    // (its last row), then, going back past the part, all of it.
    assert_eq!(reader.blocks_decoded() - before, 2);
}
