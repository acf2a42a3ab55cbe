//! A compaction writes the same entries whether or not it passes rows
//! through: random settled files (as a compaction leaves them) merged with
//! newer files of new rows, new cells, overwrites and tombstones, with
//! files left out holding some rows, dropped ranges, and GC rules, each
//! compacted both ways and compared entry by entry.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "a test generator's draws are small numbers"
)]

use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::compaction::job::{Job, LeftOut};
use crate::compaction::picker::OutputLayout;
use crate::compaction::run::Ran;
use crate::fs::{Fs, MemFs};
use crate::key::{Entry, EntryKind};
use crate::model::{GcRule, RangeDrop};
use crate::sst::{Compression, SstIter, SstOptions, SstOrigin, SstReader, SstWriter};

const ORIGIN: SstOrigin<'static> = SstOrigin { family: "cf", store: 1, created_micros: 0 };
const HOUR: i64 = 3_600_000_000;
/// The compaction's clock in every case.
const NOW: i64 = 100 * HOUR;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn row(i: u64) -> Bytes {
    format!("r{i:04}").into()
}

/// Rows at even numbers, as a compaction that saw each whole writes them:
/// sequence number 0, one entry per cell, no tombstone (now and then a
/// cell an earlier rule counted out). Timestamps are whole milliseconds,
/// newest first within a column, some older than the age rules collect.
fn settled_rows(rng: &mut Rng, rows: u64) -> Vec<Entry> {
    let mut entries = Vec::new();
    for r in (0..rows).map(|i| i * 2) {
        if rng.chance(20) {
            continue;
        }
        for q in ["a", "b", "c"] {
            if rng.chance(30) {
                continue;
            }
            let versions = if rng.chance(20) { 20 + rng.below(200) } else { 1 + rng.below(8) };
            for v in 0..versions {
                let ts = NOW - (v as i64 + 1) * HOUR / 8;
                let value: Bytes = format!("{r}-{q}-{v}-{}", "x".repeat(rng.below(12) as usize)).into();
                let mut e = Entry::put(row(r), Bytes::from_static(q.as_bytes()), ts / 1000 * 1000, 0, value);
                if rng.chance(1) {
                    e.key.kind = EntryKind::PutCountedOut;
                }
                entries.push(e);
            }
        }
    }
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    entries.dedup_by(|a, b| {
        a.key.row == b.key.row && a.key.qualifier == b.key.qualifier && a.key.timestamp == b.key.timestamp
    });
    entries
}

/// Newer entries (sequence numbers from `seq`): cells of existing and new
/// rows, cells rewritten at an existing timestamp, and tombstones.
fn newer_entries(rng: &mut Rng, rows: u64, seq: &mut u64) -> Vec<Entry> {
    let mut entries = Vec::new();
    for _ in 0..rng.below(40) {
        let r = row(rng.below(rows * 2));
        let q: Bytes = ["a", "b", "c", "d"][rng.below(4) as usize].into();
        *seq += 1;
        let e = match rng.below(20) {
            0 => Entry::delete_family(r, *seq),
            1 => Entry::delete_column(r, q, (NOW - HOUR, None), *seq),
            2 => Entry::put(r, q, NOW - HOUR / 8 * (1 + rng.below(4) as i64), *seq, "rewritten".into()),
            _ => Entry::put(r, q, NOW + 1000 * rng.below(1000) as i64, *seq, "new".into()),
        };
        entries.push(e);
    }
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    entries
}

fn write(fs: &MemFs, path: &str, entries: &[Entry], options: SstOptions) -> Arc<SstReader> {
    let path = PathBuf::from(path);
    let mut w = SstWriter::create(fs, &path, ORIGIN, options).unwrap();
    for e in entries {
        w.add(e.as_ref()).unwrap();
    }
    w.finish().unwrap();
    Arc::new(SstReader::open(&path, fs.map(&path).unwrap()).unwrap())
}

/// Splits `entries` into files at row boundaries.
fn split_at_rows(rng: &mut Rng, entries: Vec<Entry>) -> Vec<Vec<Entry>> {
    let mut files = vec![Vec::new()];
    for e in entries {
        let last = files.last_mut().unwrap();
        let new_row = last.last().is_some_and(|p: &Entry| p.key.row != e.key.row);
        if new_row && rng.chance(1) {
            files.push(vec![e]);
        } else {
            files.last_mut().unwrap().push(e);
        }
    }
    files
}

/// One compaction's inputs.
struct Case {
    inputs: Vec<Arc<SstReader>>,
    older: Vec<LeftOut>,
    drops: Vec<RangeDrop>,
    rule: GcRule,
    options: SstOptions,
}

fn case(rng: &mut Rng, fs: &MemFs) -> Case {
    let rows = 20 + rng.below(100);
    let compression = if rng.chance(50) { Compression::Zstd { level: 1 } } else { Compression::None };
    let block_entries = rng.chance(50).then(|| 4 + rng.below(60) as usize);
    let dictionary = (compression != Compression::None && rng.chance(50)).then_some(256);
    let options = SstOptions { block_size: 200 + rng.below(2000) as usize, compression, block_entries, dictionary };
    let mut inputs = Vec::new();
    let settled = settled_rows(rng, rows);
    for (i, entries) in split_at_rows(rng, settled).iter().enumerate() {
        inputs.push(write(fs, &format!("/settled-{i}.sst"), entries, options));
    }
    let mut seq = 0;
    for i in 0..rng.below(4) {
        inputs.push(write(fs, &format!("/newer-{i}.sst"), &newer_entries(rng, rows, &mut seq), options));
    }
    let older = if rng.chance(30) {
        let entries: Vec<Entry> = (0..rng.below(5))
            .map(|_| rng.below(rows * 2))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|r| Entry::put(row(r), "a".into(), NOW - 50 * HOUR, 0, "old".into()))
            .collect();
        vec![LeftOut { reader: Some(write(fs, "/older.sst", &entries, options)), tombstone_between: false }]
    } else {
        Vec::new()
    };
    let drops = if rng.chance(20) {
        let start = rng.below(rows * 2);
        let end = start + rng.below(rows);
        vec![RangeDrop { store: 1, start: row(start), end: Some(row(end)), seq: seq / 2 + 1, log_number: 0 }]
    } else {
        Vec::new()
    };
    let rule = match rng.below(4) {
        0 => GcRule::max_age(Duration::from_secs(3600 / 2)),
        1 => GcRule::max_versions(2),
        _ => GcRule::none(),
    };
    Case { inputs, older, drops, rule, options }
}

/// Runs the compaction of `case`, its outputs written under `dir`.
fn compact(fs: &MemFs, case: &Case, pass_through: bool, dir: &str) -> (Ran, Vec<Arc<SstReader>>) {
    let job = Job {
        inputs: &case.inputs,
        older: &case.older,
        gc_rule: &case.rule,
        aggregate: None,
        now: NOW,
        layout: OutputLayout::Level(1),
        drops: &case.drops,
        pass_through,
        target_file_size: 8 << 10,
        target_file_rows: 30,
    };
    let mut paths = Vec::new();
    let mut new_writer = || -> crate::Result<(u64, SstWriter)> {
        let path = PathBuf::from(format!("/{dir}-{}.sst", paths.len()));
        paths.push(path.clone());
        Ok((paths.len() as u64, SstWriter::create(fs, &path, ORIGIN, case.options)?))
    };
    let ran = job.run(&mut new_writer).unwrap();
    let readers = paths.iter().map(|p| Arc::new(SstReader::open(p, fs.map(p).unwrap()).unwrap())).collect();
    (ran, readers)
}

/// A leveled compaction of `inputs` alone (no file left out, no dropped
/// range) into one run of files cut at `target_file_rows`.
fn alone<'a>(inputs: &'a [Arc<SstReader>], gc_rule: &'a GcRule, pass_through: bool, target_file_rows: u64) -> Job<'a> {
    Job {
        inputs,
        older: &[],
        gc_rule,
        aggregate: None,
        now: NOW,
        layout: OutputLayout::Level(1),
        drops: &[],
        pass_through,
        target_file_size: u64::MAX,
        target_file_rows,
    }
}

fn entries_of(files: &[Arc<SstReader>]) -> Vec<Entry> {
    let mut out = Vec::new();
    for f in files {
        let mut it = SstIter::new(f.clone(), None, (Bound::Unbounded, Bound::Unbounded), false).unwrap();
        while let Some(e) = it.current() {
            out.push(e.to_entry());
            it.advance().unwrap();
        }
    }
    out
}

#[test]
fn passing_rows_through_writes_what_merging_them_writes() {
    let mut totals = super::PassCounts::default();
    let mut with_dictionary = 0;
    for seed in 0..150 {
        let mut rng = Rng(seed);
        let fs = MemFs::new();
        let case = case(&mut rng, &fs);
        with_dictionary += case.inputs.iter().filter(|f| f.dictionary().is_some()).count();
        let (merged, merged_files) = compact(&fs, &case, false, "merged");
        let (passed, passed_files) = compact(&fs, &case, true, "passed");
        assert_eq!(merged.passed, super::PassCounts::default());
        assert_eq!(entries_of(&passed_files), entries_of(&merged_files), "seed {seed}");
        let props = |files: &[Arc<SstReader>]| -> Vec<_> {
            files.iter().map(|f| f.props()).map(|p| (p.rows, p.cells, p.logical_bytes, p.min_timestamp)).collect()
        };
        let total =
            |files: &[Arc<SstReader>]| props(files).iter().fold((0, 0, 0), |t, p| (t.0 + p.0, t.1 + p.1, t.2 + p.2));
        assert_eq!(total(&passed_files), total(&merged_files), "seed {seed}");
        for (i, f) in passed_files.iter().enumerate() {
            let report = f.check();
            assert!(report.faults.is_empty(), "seed {seed}: {:?}", report.faults);
            let p = f.props();
            assert_eq!(p.cells, report.cells, "seed {seed}");
            for e in entries_of(std::slice::from_ref(f)) {
                assert!(f.may_contain_row(&e.key.row), "seed {seed}: the filter hides a row");
                assert!(p.first_row <= e.key.row && e.key.row <= p.last_row, "seed {seed}");
                let ts = e.key.timestamp;
                assert!(!e.key.kind.is_cell() || (p.min_timestamp <= ts && ts <= p.max_timestamp), "seed {seed}");
            }
            if let Some(next) = passed_files.get(i + 1) {
                assert!(p.last_row < next.props().first_row, "seed {seed}: a row split across files");
            }
            // In the estimate blocks are cut by (raw bytes are fewer).
            let largest = (0..f.index().len()).map(|b| f.read_block(b).unwrap().estimated_size()).max().unwrap_or(0);
            assert!(largest <= case.options.block_size * 3 / 2 + 512, "seed {seed}: a block of {largest} bytes");
            let most = f.index().iter().map(|e| e.entries as usize).max().unwrap_or(0);
            let bound = case.options.block_entries.map_or(usize::MAX, |n| n * 3 / 2);
            assert!(most <= bound, "seed {seed}: a block of {most} entries");
        }
        totals.blocks_copied += passed.passed.blocks_copied;
        totals.entries_copied += passed.passed.entries_copied;
        totals.entries_added += passed.passed.entries_added;
    }
    // The cases exercise both ways of passing, often, and files with
    // dictionaries.
    assert!(totals.blocks_copied > 500, "{totals:?}");
    assert!(totals.entries_added > 500, "{totals:?}");
    assert!(with_dictionary > 20, "{with_dictionary} inputs with a dictionary");
}

/// Blocks compressed with a dictionary pass through into an output that
/// has none yet (which takes the dictionary) or the same one, and are
/// encoded again into an output that compresses without one.
#[test]
fn blocks_pass_with_their_dictionary_or_are_encoded_again() {
    let fs = MemFs::new();
    let with = |dictionary| SstOptions {
        block_size: 1024,
        compression: Compression::Zstd { level: 3 },
        block_entries: Some(32),
        dictionary,
    };
    let input = write(&fs, "/in.sst", &settled_rows(&mut Rng(11), 800), with(Some(512)));
    let dictionary = input.dictionary().expect("the input trained a dictionary").clone();
    let no_gc = GcRule::none();
    let copied_with = |options: SstOptions, name: &str, pass_through: bool| {
        let job = alone(std::slice::from_ref(&input), &no_gc, pass_through, u64::MAX);
        let path = PathBuf::from(format!("/{name}.sst"));
        let mut new_writer = || Ok((1, SstWriter::create(&fs, &path, ORIGIN, options)?));
        let ran = job.run(&mut new_writer).unwrap();
        let out = Arc::new(SstReader::open(&path, fs.map(&path).unwrap()).unwrap());
        assert!(out.check().faults.is_empty());
        (ran.passed, out)
    };
    let (_, merged) = copied_with(with(None), "merged", false);
    let merged = entries_of(&[merged]);
    let same_entries = |out: &Arc<SstReader>| entries_of(std::slice::from_ref(out)) == merged;
    let uses_dictionary =
        |f: &SstReader| (0..f.index().len()).filter(|&i| f.stored_block(i).unwrap().dictionary.is_some()).count();
    let first_with_dictionary = (0..input.index().len())
        .find(|&i| input.stored_block(i).unwrap().dictionary.is_some())
        .expect("blocks after the samples use the dictionary");
    let (passed, out) = copied_with(with(Some(512)), "adopts", true);
    assert!(same_entries(&out), "an output that took the input's dictionary differs");
    assert_eq!(out.dictionary(), Some(&dictionary), "the output took the input's dictionary");
    assert!(passed.blocks_copied > first_with_dictionary as u64 + 10, "{passed:?}");
    assert!(uses_dictionary(&out) > 10);
    let (passed, out) = copied_with(with(None), "without", true);
    assert!(same_entries(&out), "an output without a dictionary differs");
    assert_eq!((out.dictionary(), uses_dictionary(&out)), (None, 0));
    assert!(passed.blocks_copied > 0 && passed.blocks_copied <= first_with_dictionary as u64, "{passed:?}");
    assert!(passed.entries_added > 0, "{passed:?}");
}

#[test]
fn output_files_are_cut_at_their_row_count() {
    const CAP: u64 = 64;
    let fs = MemFs::new();
    let options =
        SstOptions { block_size: 1024, compression: Compression::None, block_entries: Some(32), dictionary: None };
    let input = write(&fs, "/in.sst", &settled_rows(&mut Rng(7), 500), options);
    // A file's rows are counted where a row ends, so a pass of blocks
    // that each go on with the row the one before ends in may run past
    // the target by their rows: the most rows of such a run of blocks.
    let block_rows = {
        let (mut most, mut run) = (0, 0);
        for b in 0..input.index().len() {
            let block = input.read_block(b).unwrap();
            let goes_on = b > 0 && block.rows().next().is_some_and(|r| r.is(&input.index()[b - 1].last_key.row));
            let rows = block.rows().count() as u64;
            run = if goes_on { run + rows - 1 } else { rows };
            most = most.max(run);
        }
        most
    };
    let no_gc = GcRule::none();
    let compact = |pass_through: bool, target_file_rows: u64| {
        let job = alone(std::slice::from_ref(&input), &no_gc, pass_through, target_file_rows);
        let mut paths = Vec::new();
        let mut new_writer = || -> crate::Result<(u64, SstWriter)> {
            let path = PathBuf::from(format!("/out-{pass_through}-{target_file_rows}-{}.sst", paths.len()));
            paths.push(path.clone());
            Ok((paths.len() as u64, SstWriter::create(&fs, &path, ORIGIN, options)?))
        };
        job.run(&mut new_writer).unwrap();
        paths.iter().map(|p| Arc::new(SstReader::open(p, fs.map(p).unwrap()).unwrap())).collect::<Vec<_>>()
    };
    let whole = compact(false, u64::MAX);
    assert_eq!(whole.len(), 1);
    for pass_through in [false, true] {
        let files = compact(pass_through, CAP);
        assert_eq!(entries_of(&files), entries_of(&whole), "pass through: {pass_through}");
        let (last, full) = files.split_last().unwrap();
        assert!(full.len() >= 2 && last.props().rows <= CAP + block_rows, "pass through: {pass_through}");
        for f in full {
            // Merged rows are added one by one, passed blocks whole.
            let rows = f.props().rows;
            let most = if pass_through { CAP + block_rows } else { CAP };
            assert!((CAP..=most).contains(&rows), "pass through: {pass_through}: a file of {rows} rows");
        }
    }
}
