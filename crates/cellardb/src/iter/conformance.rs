//! One conformance suite for every layer that yields entries, as LevelDB's
//! `table_test` runs the same data through block, table, memtable and DB:
//! the same random entries go into a data block, an SSTable, a memtable,
//! and a merge of SSTables and memtables holding them between them, and
//! each is read between random bounds — forward, backward, and forward
//! with seeks — against a `BTreeMap` holding the same entries.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "a test generator's draws are small numbers"
)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::{EntrySource, MergingIter};
use crate::fs::{Fs, MemFs};
use crate::key::{Entry, EntryKind, EntryRef, InternalKey};
use crate::manifest::SstMeta;
use crate::memtable::{MemIter, Memtable};
use crate::model::{BatchEntry, RowBatch};
use crate::read::RunIter;
use crate::sst::{
    BlockBuilder, Compression, DecodedBlock, SstBlockCache, SstIter, SstOptions, SstOrigin, SstReader, SstWriter,
};
use crate::version::{FileRun, SstHandle};

type Model = BTreeMap<InternalKey, Bytes>;
type Bounds = (Bound<InternalKey>, Bound<InternalKey>);

/// A small deterministic generator (the suite prints its seed on failure).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// `n` entries of every kind over a few rows and qualifiers, each with its
/// own sequence number (as the write path gives them).
fn random_entries(rng: &mut Rng, n: usize) -> Model {
    let mut model = Model::new();
    for i in 0..n {
        let row: Bytes = format!("row{:03}", rng.below(40)).into();
        let q: Bytes = ["", "a", "b\0", "pressure", "\u{ff}"][rng.below(5) as usize].into();
        let ts = 1000 * rng.below(30) as i64;
        let seq = i as u64 + 1;
        let value: Bytes = format!("value-{i}").repeat(rng.below(3) as usize).into();
        let e = match rng.below(12) {
            0 => Entry::delete_family(row, seq),
            1 => Entry::delete_column(row, q, (ts, Some(ts + 5000)), seq),
            2 => Entry {
                key: InternalKey { kind: EntryKind::PutCountedOut, ..Entry::put(row, q, ts, seq, value.clone()).key },
                value,
            },
            _ => Entry::put(row, q, ts, seq, value),
        };
        model.insert(e.key, e.value);
    }
    model
}

/// A key to bound or seek by: an entry's own key, the first key of a row
/// (present or not), or a key between entries.
fn random_key(rng: &mut Rng, model: &Model) -> InternalKey {
    let keys: Vec<&InternalKey> = model.keys().collect();
    match rng.below(3) {
        0 => keys[rng.below(keys.len() as u64) as usize].clone(),
        1 => InternalKey::first_of_row(format!("row{:03}", rng.below(42)).into()),
        _ => {
            let k = keys[rng.below(keys.len() as u64) as usize];
            InternalKey { timestamp: k.timestamp.saturating_sub(500), ..k.clone() }
        }
    }
}

fn random_bound(rng: &mut Rng, model: &Model) -> Bound<InternalKey> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng, model)),
        _ => Bound::Excluded(random_key(rng, model)),
    }
}

/// The model's entries within `bounds`, in key order.
fn expected(model: &Model, bounds: &Bounds) -> Vec<Entry> {
    // `BTreeMap::range` panics on bounds that hold nothing, as
    // `Excluded(k)..Excluded(k)`; every layer must read them as empty.
    let empty = match bounds {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a >= b,
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    model.range(bounds.clone()).map(|(k, v)| Entry { key: k.clone(), value: v.clone() }).collect()
}

/// What the suite drives: a positioned stream of entries.
trait Under {
    fn current(&self) -> Option<EntryRef<'_>>;
    fn advance(&mut self);
    fn seek(&mut self, target: &InternalKey);
}

impl<T: EntrySource> Under for T {
    fn current(&self) -> Option<EntryRef<'_>> {
        EntrySource::current(self)
    }
    fn advance(&mut self) {
        EntrySource::advance(self).unwrap();
    }
    fn seek(&mut self, target: &InternalKey) {
        EntrySource::seek(self, target).unwrap();
    }
}

/// A merge, driven as one source of one family (rank 0).
struct Merge(MergingIter);

impl Under for Merge {
    fn current(&self) -> Option<EntryRef<'_>> {
        self.0.current().map(|(_, e)| e)
    }
    fn advance(&mut self) {
        self.0.advance().unwrap();
    }
    fn seek(&mut self, target: &InternalKey) {
        self.0.seek_rank(0, target).unwrap();
    }
}

/// A decoded block read through its own interface (`seek` to a position,
/// `entry` by index), within bounds, as `SstIter` reads one.
struct BlockCursor {
    block: Arc<DecodedBlock>,
    bounds: Bounds,
    reverse: bool,
    pos: Option<usize>,
    /// The key of the row at `pos`, where the block does not hold it whole.
    row: Vec<u8>,
}

impl BlockCursor {
    fn new(block: Arc<DecodedBlock>, bounds: Bounds, reverse: bool) -> Self {
        let start = if reverse {
            match &bounds.1 {
                Bound::Unbounded => block.len(),
                Bound::Included(k) => block.seek(k, false),
                Bound::Excluded(k) => block.seek(k, true),
            }
            .checked_sub(1)
        } else {
            Some(match &bounds.0 {
                Bound::Unbounded => 0,
                Bound::Included(k) => block.seek(k, true),
                Bound::Excluded(k) => block.seek(k, false),
            })
        };
        let mut cursor = BlockCursor { block, bounds, reverse, pos: start, row: Vec::new() };
        cursor.check();
        cursor
    }

    /// Ends the cursor once it leaves the block or the far bound.
    fn check(&mut self) {
        let Some(e) = self.pos.and_then(|p| self.block.entry_in(p, &mut self.row)) else {
            self.pos = None;
            return;
        };
        let outside = if self.reverse {
            match &self.bounds.0 {
                Bound::Unbounded => false,
                Bound::Included(k) => e.cmp_internal(k).is_lt(),
                Bound::Excluded(k) => e.cmp_internal(k).is_le(),
            }
        } else {
            match &self.bounds.1 {
                Bound::Unbounded => false,
                Bound::Included(k) => e.cmp_internal(k).is_gt(),
                Bound::Excluded(k) => e.cmp_internal(k).is_ge(),
            }
        };
        if outside {
            self.pos = None;
        }
    }
}

impl Under for BlockCursor {
    fn current(&self) -> Option<EntryRef<'_>> {
        let at = self.block.locate(self.pos?)?;
        Some(self.block.at(&at, &self.row))
    }
    fn advance(&mut self) {
        self.pos = match self.pos {
            Some(p) if self.reverse => p.checked_sub(1),
            Some(p) => Some(p + 1),
            None => None,
        };
        self.check();
    }
    fn seek(&mut self, target: &InternalKey) {
        if let Some(p) = self.pos {
            self.pos = Some(self.block.seek(target, true).max(p));
            self.check();
        }
    }
}

/// Every entry left, in the order read.
fn drain(it: &mut dyn Under) -> Vec<Entry> {
    let mut out = Vec::new();
    while let Some(e) = it.current() {
        out.push(e.to_entry());
        it.advance();
    }
    out
}

/// The layers, each holding every entry of a model.
struct Layers {
    block: Arc<DecodedBlock>,
    sst: Arc<SstReader>,
    mem: Arc<Memtable>,
    /// The same entries split among two SSTables and two memtables.
    parts: (Vec<Arc<SstReader>>, Vec<Arc<Memtable>>),
    /// The same entries cut into consecutive SSTables, as a compacted
    /// level holds them: a merge whose leader stays ahead for long.
    run: Vec<Arc<SstReader>>,
    /// The same entries cut into SSTables between rows, as a compaction
    /// cuts a level's files, read as one run.
    level: Arc<FileRun>,
}

fn write_sst(fs: &MemFs, name: &str, entries: &[Entry], block_size: usize) -> Arc<SstReader> {
    let path = Path::new(name);
    let origin = SstOrigin { family: "cf", store: 1, created_micros: 0 };
    let options =
        SstOptions { block_size, compression: Compression::Zstd { level: 1 }, block_entries: None, dictionary: None };
    let mut w = SstWriter::create(fs, path, origin, options).unwrap();
    for e in entries {
        w.add(e.as_ref()).unwrap();
    }
    w.finish().unwrap();
    Arc::new(SstReader::open(path, fs.map(path).unwrap()).unwrap())
}

fn memtable_of(entries: &[Entry]) -> Arc<Memtable> {
    let mem = Memtable::new(1);
    for e in entries {
        let entry = BatchEntry {
            store: 1,
            kind: e.key.kind,
            seq: e.key.seq,
            qualifier: &e.key.qualifier,
            timestamp: e.key.timestamp,
            value: (&e.value[..]).into(),
        };
        mem.insert(&[RowBatch { row: &e.key.row, first_seq: e.key.seq, entries: vec![entry] }]);
    }
    Arc::new(mem)
}

fn build(model: &Model, rng: &mut Rng) -> Layers {
    let entries: Vec<Entry> = model.iter().map(|(k, v)| Entry { key: k.clone(), value: v.clone() }).collect();
    let mut builder = BlockBuilder::default();
    for e in &entries {
        builder.add(e.as_ref());
    }
    let mut raw = Vec::new();
    builder.finish(&mut raw);
    let block = Arc::new(DecodedBlock::decode(&raw).unwrap());
    let fs = MemFs::new();
    let block_size = [64, 512, 4096][rng.below(3) as usize];
    let sst = write_sst(&fs, "/all.sst", &entries, block_size);
    let mem = memtable_of(&entries);
    let mut shares: [Vec<Entry>; 4] = Default::default();
    for e in &entries {
        shares[rng.below(4) as usize].push(e.clone());
    }
    let ssts = vec![write_sst(&fs, "/a.sst", &shares[0], block_size), write_sst(&fs, "/b.sst", &shares[1], 256)];
    let mems = vec![memtable_of(&shares[2]), memtable_of(&shares[3])];
    let files = 2 + rng.below(5) as usize;
    let run = entries
        .chunks(entries.len().div_ceil(files).max(1))
        .enumerate()
        .map(|(i, chunk)| write_sst(&fs, &format!("/run-{i}.sst"), chunk, block_size))
        .collect();
    let level = level_of(&fs, &entries, 2 + rng.below(5) as usize, block_size);
    Layers { block, sst, mem, parts: (ssts, mems), run, level }
}

/// `entries` cut between rows into about `files` SSTables of level 1, as
/// the one run a read takes them as.
fn level_of(fs: &MemFs, entries: &[Entry], files: usize, block_size: usize) -> Arc<FileRun> {
    let per_file = entries.len().div_ceil(files).max(1);
    let mut cuts: Vec<Vec<Entry>> = vec![Vec::new()];
    for e in entries {
        let last = cuts.last_mut().expect("never empty");
        let new_row = last.last().is_none_or(|prev| prev.key.row != e.key.row);
        if new_row && last.len() >= per_file {
            cuts.push(Vec::new());
        }
        cuts.last_mut().expect("never empty").push(e.clone());
    }
    cuts.retain(|cut| !cut.is_empty());
    let cache = Arc::new(SstBlockCache::new(1 << 20));
    let handles: Vec<Arc<SstHandle>> = cuts
        .iter()
        .enumerate()
        .rev() // newest first, as a version lists them
        .map(|(i, cut)| {
            let name = format!("/level-{i}.sst");
            write_sst(fs, &name, cut, block_size);
            let path = Path::new(&name);
            // The cache knows a file by its id.
            let reader = SstReader::open_with_id(path, fs.map(path).unwrap(), i as u64 + 1).unwrap();
            let meta = SstMeta {
                store: 1,
                file: i as u64,
                level: 1,
                size: 0,
                first_row: cut[0].key.row.clone(),
                last_row: cut[cut.len() - 1].key.row.clone(),
                min_seq: 0,
                max_seq: 0,
                drops_applied: 0,
            };
            let fs: Arc<dyn Fs> = Arc::new(fs.clone());
            Arc::new(SstHandle::new(reader, meta, fs, cache.clone()))
        })
        .collect();
    let mut runs = FileRun::runs_of(&handles);
    assert_eq!(runs.len(), 1, "a level's files sharing no row are one run");
    runs.remove(0)
}

/// A run's files that may hold keys within `bounds`, as a read chooses
/// them, each starting at the lower bound.
fn run_start(bounds: &Bounds) -> impl Fn(&SstHandle) -> Option<Bound<InternalKey>> {
    let bounds = bounds.clone();
    move |file| {
        let ends_before = match &bounds.0 {
            Bound::Included(k) | Bound::Excluded(k) => file.meta.last_row < k.row,
            Bound::Unbounded => false,
        };
        let starts_after = match &bounds.1 {
            Bound::Included(k) | Bound::Excluded(k) => file.meta.first_row > k.row,
            Bound::Unbounded => false,
        };
        (!ends_before && !starts_after).then(|| bounds.0.clone())
    }
}

impl Layers {
    /// Each layer, positioned within `bounds`, with its name.
    fn open(&self, bounds: &Bounds, reverse: bool) -> Vec<(&'static str, Box<dyn Under>)> {
        let sst = |r: &Arc<SstReader>| SstIter::new(r.clone(), None, bounds.clone(), reverse).unwrap();
        let mem = |m: &Arc<Memtable>| MemIter::new(m.clone(), 1, bounds.clone(), reverse);
        let mut merge: MergingIter = MergingIter::new(reverse);
        for r in &self.parts.0 {
            merge.add(Box::new(sst(r)), 0);
        }
        for m in &self.parts.1 {
            merge.add(Box::new(mem(m)), 0);
        }
        let mut run: MergingIter = MergingIter::new(reverse);
        for r in &self.run {
            run.add(Box::new(sst(r)), 0);
        }
        let level = RunIter::new(self.level.clone(), 0, bounds.1.clone(), reverse, run_start(bounds)).unwrap();
        vec![
            ("block", Box::new(BlockCursor::new(self.block.clone(), bounds.clone(), reverse))),
            ("sstable", Box::new(sst(&self.sst))),
            ("memtable", Box::new(mem(&self.mem))),
            ("merge", Box::new(Merge(merge))),
            ("merge of a run", Box::new(Merge(run))),
            ("run read as one", Box::new(level)),
        ]
    }
}

/// Fails at the first entry where `got` and `want` differ, naming it.
fn assert_same(got: &[Entry], want: &[Entry], context: impl Fn() -> String) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{}: entry {i} of {} read is {:?}, the model's ({} entries) is {:?}",
            context(),
            got.len(),
            got.get(i).map(|e| &e.key),
            want.len(),
            want.get(i).map(|e| &e.key)
        );
    }
}

fn check_model(seed: u64, entries: usize) {
    let mut rng = Rng(seed);
    let model = random_entries(&mut rng, entries);
    let layers = build(&model, &mut rng);
    for round in 0..60 {
        let bounds = (random_bound(&mut rng, &model), random_bound(&mut rng, &model));
        let want = expected(&model, &bounds);
        let at = |name: &str, what: &str| format!("seed {seed}, round {round}, {name}, {what}, bounds {bounds:?}");
        for (name, mut it) in layers.open(&bounds, false) {
            assert_same(&drain(&mut *it), &want, || at(name, "forward"));
        }
        let mut back = want.clone();
        back.reverse();
        for (name, mut it) in layers.open(&bounds, true) {
            assert_same(&drain(&mut *it), &back, || at(name, "reverse"));
        }
        let steps: Vec<Option<InternalKey>> =
            (0..20).map(|_| (rng.below(2) == 0).then(|| random_key(&mut rng, &model))).collect();
        for (name, mut it) in layers.open(&bounds, false) {
            let mut pos = 0; // index in `want` of the current entry
            for step in &steps {
                if let Some(target) = step {
                    it.seek(target);
                    pos = pos.max(want.partition_point(|e| e.key < *target));
                } else {
                    it.advance();
                    pos = (pos + 1).min(want.len());
                }
                let got = it.current().map(EntryRef::to_entry);
                assert_eq!(got.as_ref(), want.get(pos), "{}", at(name, &format!("after {step:?}")));
            }
        }
    }
}

#[test]
fn every_layer_reads_what_a_btree_map_holds_between_any_bounds() {
    for seed in 1..=12 {
        check_model(seed, 400 + 100 * seed as usize);
    }
}

#[test]
fn empty_and_single_entry_sources_conform_too() {
    let mut rng = Rng(99);
    let one = random_entries(&mut rng, 1);
    let layers = build(&one, &mut rng);
    let all = (Bound::Unbounded, Bound::Unbounded);
    for reverse in [false, true] {
        for (name, mut it) in layers.open(&all, reverse) {
            assert_eq!(drain(&mut *it).len(), 1, "{name}");
        }
    }
    let key = one.keys().next().unwrap().clone();
    let (inc, exc) = (Bound::Included(key.clone()), Bound::Excluded(key));
    for none in [(exc.clone(), inc.clone()), (inc.clone(), exc.clone()), (exc.clone(), exc)] {
        for reverse in [false, true] {
            for (name, mut it) in layers.open(&none, reverse) {
                assert!(drain(&mut *it).is_empty(), "{name} between {none:?}");
            }
        }
    }
    for (name, mut it) in layers.open(&(inc.clone(), inc), false) {
        assert_eq!(drain(&mut *it).len(), 1, "{name}: the one key, bounded on both sides by itself");
    }
}

/// A read of many keys moves one merge from span to span: each forward
/// source that can be moved on (SSTable, memtable, a level's run) reads
/// each span, in part or whole, as the model holds it.
#[test]
fn sources_moved_from_span_to_span_read_what_a_btree_map_holds() {
    for seed in 1..=12 {
        let mut rng = Rng(seed);
        let model = random_entries(&mut rng, 600);
        let layers = build(&model, &mut rng);
        let mut spans = Vec::new();
        let mut next_row = 0;
        while next_row < 42 {
            let lo = next_row + rng.below(4);
            let hi = lo + 1 + rng.below(3) * rng.below(6);
            spans.push((lo, hi));
            next_row = hi;
        }
        let row = |n: u64| InternalKey::first_of_row(format!("row{n:03}").into());
        let bounds_of = |(lo, hi): (u64, u64)| (Bound::Included(row(lo)), Bound::Excluded(row(hi)));
        let first = bounds_of(spans[0]);
        let mut sst = SstIter::new(layers.sst.clone(), None, first.clone(), false).unwrap();
        let mut mem = MemIter::new(layers.mem.clone(), 1, first.clone(), false);
        let mut run = RunIter::new(layers.level.clone(), 0, first.1.clone(), false, run_start(&first)).unwrap();
        for (i, span) in spans.iter().enumerate() {
            let bounds = bounds_of(*span);
            if i > 0 {
                sst.restart(bounds.clone()).unwrap();
                mem.restart(bounds.clone());
                run.restart(bounds.1.clone(), run_start(&bounds)).unwrap();
            }
            let want = expected(&model, &bounds);
            // Some spans are left before their end, as a read whose filter
            // is done with a row leaves it.
            let read = if rng.below(3) == 0 { rng.below(want.len() as u64 + 1) as usize } else { want.len() };
            let sources: [(&str, &mut dyn Under); 3] =
                [("sstable", &mut sst), ("memtable", &mut mem), ("run", &mut run)];
            for (name, it) in sources {
                let mut got = Vec::new();
                while got.len() < read {
                    let Some(e) = it.current() else { break };
                    got.push(e.to_entry());
                    it.advance();
                }
                assert_same(&got, &want[..read], || format!("seed {seed}, {name}, span {i} of {spans:?}"));
            }
        }
    }
}
