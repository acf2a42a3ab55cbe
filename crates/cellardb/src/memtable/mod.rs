//! The memtable: recent writes, ordered, in memory.
//!
//! Two levels, as cells live in rows: an ordered map from (store, row) to
//! the row's cells, each row an ordered collection of cells keyed by
//! (qualifier, timestamp newest first, sequence). A row mutation finds its
//! row once, however many cells it writes, and cells compare within their
//! row only. Row keys up to 46 bytes and qualifiers up to 22 bytes are held
//! inline in the tree nodes, so comparisons rarely leave the node; values
//! and longer keys are carved from 1 MiB arena chunks rather than allocated
//! one by one. A row of one cell holds it in place in the tree of rows; a
//! small row is a sorted vector, promoted to a B-tree when it grows.
//!
//! One lock guards the whole: the single writer (the commit leader) takes
//! it for each group, readers copy out bounded chunks under a read lock.
//! Entries are never removed or changed once inserted, and readers ignore
//! sequence numbers above their snapshot, so chunked reading still sees one
//! consistent state.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::{Bound, Range};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;

use crate::Result;
use crate::key::{Entry, EntryKind, EntryRef, InternalKey, compare_parts};
use crate::model::RowBatch;

mod iter;

pub use iter::MemIter;

/// Bytes of each arena chunk values and long keys are carved from.
const ARENA_CHUNK: usize = 1 << 20;
/// Cells a row holds as a sorted vector before it becomes a B-tree.
const SMALL_ROW: usize = 32;
/// Bytes a B-tree spends per element of `size` bytes: nodes are half to
/// two-thirds full (inserts into the middle of a run split nodes in half)
/// and carry headers, edges and the allocator's own overhead. The factor
/// was fitted to the heap of the balloon workload's four patterns, which
/// it overestimates somewhat (`docs/compaction.md`, "Memory", measures
/// by how much), so that `memtable_size` bounds what a memtable really
/// holds.
const fn btree_bytes(size: usize) -> usize {
    size * 2
}
/// Bytes charged per row for its place in the tree of rows.
const ROW_OVERHEAD: usize = btree_bytes(size_of::<(RowKey, RowCells)>());
/// Bytes charged per cell of a large row, for its place in the row's tree.
const LARGE_CELL_OVERHEAD: usize = btree_bytes(size_of::<(CellKey, Bytes)>());
/// Bytes of a slot of a small row's vector.
const SMALL_CELL_SLOT: usize = size_of::<(CellKey, Bytes)>();

/// A key part held inline when it fits in `N` bytes, else shared.
#[derive(Debug, Clone)]
enum KeyBytes<const N: usize> {
    Inline(u8, [u8; N]),
    Shared(Bytes),
}

impl<const N: usize> KeyBytes<N> {
    fn new(bytes: &[u8], arena: &mut Arena) -> Self {
        match u8::try_from(bytes.len()) {
            Ok(len) if bytes.len() <= N => {
                let mut buf = [0u8; N];
                buf[..bytes.len()].copy_from_slice(bytes);
                KeyBytes::Inline(len, buf)
            }
            _ => KeyBytes::Shared(arena.copy(bytes)),
        }
    }

    /// For lookups: never touches an arena.
    fn query(bytes: &[u8]) -> Self {
        KeyBytes::Shared(Bytes::copy_from_slice(bytes))
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline(len, buf) => &buf[..usize::from(*len)],
            KeyBytes::Shared(b) => b,
        }
    }
}

/// A row of one store.
#[derive(Debug, Clone)]
struct RowKey {
    store: u32,
    row: KeyBytes<46>,
}

impl Ord for RowKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.store.cmp(&other.store).then_with(|| self.row.as_slice().cmp(other.row.as_slice()))
    }
}

impl PartialOrd for RowKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for RowKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for RowKey {}

/// A cell's key within its row.
#[derive(Debug, Clone)]
struct CellKey {
    qualifier: KeyBytes<22>,
    timestamp: i64,
    seq: u64,
    kind: EntryKind,
}

impl CellKey {
    fn of(k: &InternalKey) -> CellKey {
        CellKey { qualifier: KeyBytes::query(&k.qualifier), timestamp: k.timestamp, seq: k.seq, kind: k.kind }
    }
}

impl Ord for CellKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        compare_parts(
            (&[], self.qualifier.as_slice(), self.timestamp, self.seq, self.kind),
            (&[], other.qualifier.as_slice(), other.timestamp, other.seq, other.kind),
        )
    }
}

impl PartialOrd for CellKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for CellKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for CellKey {}

/// The cells of one row: the row's one cell in place, then a sorted
/// vector while small, then a B-tree.
///
/// A tall table's rows mostly hold one cell each: in place in the tree of
/// rows, such a row costs no allocation of its own to write and none to
/// free when the memtable is dropped, and its cell is read where its key
/// is.
#[derive(Debug)]
enum RowCells {
    One((CellKey, Bytes)),
    Small(Vec<(CellKey, Bytes)>),
    Large(BTreeMap<CellKey, Bytes>),
}

impl RowCells {
    /// A new row's cells, `key` and `value` first, with room for `n` cells
    /// in all; returns them and the bytes they take beyond the row's
    /// place in the tree.
    fn first(key: CellKey, value: Bytes, n: usize) -> (RowCells, usize) {
        if n <= 1 {
            return (RowCells::One((key, value)), 0);
        }
        let mut cells = Vec::with_capacity(n);
        cells.push((key, value));
        (RowCells::Small(cells), n * SMALL_CELL_SLOT)
    }

    /// Inserts a cell; returns the bytes the row's structure grew by.
    fn insert(&mut self, key: CellKey, value: Bytes) -> usize {
        match self {
            RowCells::One(cell) => {
                if cell.0 == key {
                    cell.1 = value;
                    return 0;
                }
                if let RowCells::One(old) = std::mem::replace(self, RowCells::Small(Vec::new())) {
                    let new = (key, value);
                    let pair = if old.0 < new.0 { [old, new] } else { [new, old] };
                    *self = RowCells::Small(Vec::from(pair));
                }
                2 * SMALL_CELL_SLOT
            }
            RowCells::Small(cells) => {
                let before = cells.capacity();
                match cells.binary_search_by(|(k, _)| k.cmp(&key)) {
                    Ok(i) => cells[i].1 = value,
                    Err(i) => {
                        // Doubling from one slot: most rows of tall tables
                        // hold a few cells, and the default first
                        // allocation of four would mostly sit empty.
                        if cells.len() == cells.capacity() {
                            cells.reserve_exact(cells.capacity().max(1));
                        }
                        cells.insert(i, (key, value));
                    }
                }
                if cells.len() > SMALL_ROW {
                    let n = cells.len();
                    *self = RowCells::Large(std::mem::take(cells).into_iter().collect());
                    return (n * LARGE_CELL_OVERHEAD).saturating_sub(before * SMALL_CELL_SLOT);
                }
                (cells.capacity() - before) * SMALL_CELL_SLOT
            }
            RowCells::Large(map) => match map.insert(key, value) {
                None => LARGE_CELL_OVERHEAD,
                Some(_) => 0,
            },
        }
    }

    /// The cells of a small row; none for a large row (its cells are in
    /// a tree of their own, read in order).
    fn small(&self) -> &[(CellKey, Bytes)] {
        match self {
            RowCells::One(cell) => std::slice::from_ref(cell),
            RowCells::Small(cells) => cells,
            RowCells::Large(_) => &[],
        }
    }

    /// Calls `f` on the cells within `(lo, hi)`, in order or reversed,
    /// while it returns true.
    fn visit(
        &self,
        lo: &Bound<CellKey>,
        hi: &Bound<CellKey>,
        reverse: bool,
        mut f: impl FnMut(&CellKey, &Bytes) -> bool,
    ) {
        if is_empty_range(lo, hi) {
            return;
        }
        match self {
            RowCells::One(_) | RowCells::Small(_) => {
                let cells = self.small();
                let start = match lo {
                    Bound::Included(k) => cells.partition_point(|(c, _)| c < k),
                    Bound::Excluded(k) => cells.partition_point(|(c, _)| c <= k),
                    Bound::Unbounded => 0,
                };
                let end = match hi {
                    Bound::Included(k) => cells.partition_point(|(c, _)| c <= k),
                    Bound::Excluded(k) => cells.partition_point(|(c, _)| c < k),
                    Bound::Unbounded => cells.len(),
                };
                let slice = &cells[start..end.max(start)];
                if reverse {
                    let _ = slice.iter().rev().all(|(k, v)| f(k, v));
                } else {
                    let _ = slice.iter().all(|(k, v)| f(k, v));
                }
            }
            RowCells::Large(map) => {
                let range = map.range((lo.clone(), hi.clone()));
                if reverse {
                    let _ = range.rev().all(|(k, v)| f(k, v));
                } else {
                    let _ = range.into_iter().all(|(k, v)| f(k, v));
                }
            }
        }
    }
}

/// Where values and long keys are copied to: 1 MiB chunks, handed out as
/// slices, so a million cells cost a handful of allocations.
#[derive(Debug, Default)]
struct Arena {
    chunk: BytesMut,
}

impl Arena {
    fn copy(&mut self, bytes: &[u8]) -> Bytes {
        if bytes.is_empty() {
            return Bytes::new();
        }
        if self.chunk.capacity() - self.chunk.len() < bytes.len() {
            self.chunk = BytesMut::with_capacity(ARENA_CHUNK.max(bytes.len()));
        }
        self.chunk.extend_from_slice(bytes);
        self.chunk.split().freeze()
    }
}

#[derive(Debug, Default)]
struct Tree {
    rows: BTreeMap<RowKey, RowCells>,
    arena: Arena,
}

impl Drop for Tree {
    /// Frees the small rows' cell vectors in the order of their addresses.
    /// They were allocated in the order rows were written, in time, and
    /// the tree holds them in key order: freed as the tree drops, each
    /// free read a vector and its heap neighbours at random, a cache miss
    /// each (`docs/architecture.md`, "A flush", says what the order
    /// saves). The rows' handles are gathered first: 32 bytes a row, for
    /// the time of the drop.
    fn drop(&mut self) {
        let mut cells: Vec<RowCells> = std::mem::take(&mut self.rows).into_values().collect();
        cells.sort_unstable_by_key(|c| match c {
            RowCells::Small(cells) => cells.as_ptr() as usize,
            RowCells::One(_) | RowCells::Large(_) => 0,
        });
    }
}

/// A row range within one store, as memtable bounds.
pub type KeyBounds = (Bound<InternalKey>, Bound<InternalKey>);

/// The ordered entries of every store, sized in bytes.
#[derive(Debug)]
pub struct Memtable {
    tree: RwLock<Tree>,
    approximate_bytes: AtomicUsize,
    max_seq: AtomicU64,
    wal_number: u64,
}

impl Memtable {
    /// An empty memtable whose entries are logged in log file `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        Memtable {
            tree: RwLock::new(Tree::default()),
            approximate_bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_number,
        }
    }

    /// The log file holding this memtable's entries.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Bytes held, approximately (entries and the structures around them).
    pub fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Largest sequence number inserted.
    pub fn max_seq(&self) -> u64 {
        self.max_seq.load(AtomicOrdering::Relaxed)
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.tree.read().rows.is_empty()
    }

    /// Applies the entries of `batches` under one write lock.
    pub fn insert(&self, batches: &[RowBatch<'_>]) {
        let mut bytes = 0;
        let mut max_seq = 0;
        let mut guard = self.tree.write();
        let Tree { rows, arena } = &mut *guard;
        for r in batches {
            let mut current: Option<(u32, &mut RowCells)> = None;
            for (i, e) in r.entries.iter().enumerate() {
                let key = CellKey {
                    qualifier: KeyBytes::new(e.qualifier, arena),
                    timestamp: e.timestamp,
                    seq: e.seq,
                    kind: e.kind,
                };
                let value = arena.copy(&e.value);
                bytes += e.qualifier.len() + e.value.len();
                max_seq = max_seq.max(e.seq);
                match current.as_mut() {
                    Some((store, cells)) if *store == e.store => bytes += cells.insert(key, value),
                    _ => {
                        let row = RowKey { store: e.store, row: KeyBytes::new(r.row, arena) };
                        let cells = match rows.entry(row) {
                            std::collections::btree_map::Entry::Occupied(o) => {
                                let cells = o.into_mut();
                                bytes += cells.insert(key, value);
                                cells
                            }
                            std::collections::btree_map::Entry::Vacant(v) => {
                                // Room for this record's cells of the store at once.
                                let n = r.entries[i..].iter().take_while(|x| x.store == e.store).count().min(SMALL_ROW);
                                let (cells, cell_bytes) = RowCells::first(key, value, n);
                                bytes += ROW_OVERHEAD + r.row.len() + cell_bytes;
                                v.insert(cells)
                            }
                        };
                        current = Some((e.store, cells));
                    }
                }
            }
        }
        drop(guard);
        self.approximate_bytes.fetch_add(bytes, AtomicOrdering::Relaxed);
        self.max_seq.fetch_max(max_seq, AtomicOrdering::Relaxed);
    }

    /// Up to `limit` entries of `store` within `bounds`, in key order or, if
    /// `reverse`, in reverse key order.
    pub fn chunk(&self, store: u32, bounds: &KeyBounds, reverse: bool, limit: usize) -> Vec<Entry> {
        let lo = row_bound(store, &bounds.0, false);
        let hi = row_bound(store, &bounds.1, true);
        if is_empty_range(&lo, &hi) {
            return Vec::new();
        }
        let tree = self.tree.read();
        let mut copier = EntryCopier::with_capacity(limit.min(1024));
        let mut visit_row = |rk: &RowKey, cells: &RowCells| {
            let row = rk.row.as_slice();
            let cell_lo = cell_bound(&bounds.0, row);
            let cell_hi = cell_bound(&bounds.1, row);
            cells.visit(&cell_lo, &cell_hi, reverse, |ck, v| {
                copier.copy(row, ck, v);
                copier.len() < limit
            });
            copier.len() < limit
        };
        let range = tree.rows.range((lo, hi));
        if reverse {
            let _ = range.rev().all(|(rk, cells)| visit_row(rk, cells));
        } else {
            let _ = range.into_iter().all(|(rk, cells)| visit_row(rk, cells));
        }
        drop(tree);
        copier.finish()
    }

    /// Calls `f` with every entry of `store`, in key order, holding the read
    /// lock throughout (for flushing a frozen memtable, which no one writes).
    pub fn for_each(&self, store: u32, mut f: impl FnMut(EntryRef<'_>) -> Result<()>) -> Result<()> {
        let tree = self.tree.read();
        let lo = Bound::Included(RowKey { store, row: KeyBytes::Inline(0, [0; 46]) });
        let mut rows = tree.rows.range((lo, store_end(store)));
        let mut batch = Vec::with_capacity(TOUCH_AHEAD);
        loop {
            batch.clear();
            batch.extend(rows.by_ref().take(TOUCH_AHEAD));
            if batch.is_empty() {
                return Ok(());
            }
            touch_ahead(&batch);
            for (rk, cells) in &batch {
                let mut result = Ok(());
                cells.visit(&Bound::Unbounded, &Bound::Unbounded, false, |ck, v| {
                    let e = EntryRef {
                        row: rk.row.as_slice(),
                        qualifier: ck.qualifier.as_slice(),
                        timestamp: ck.timestamp,
                        seq: ck.seq,
                        kind: ck.kind,
                        value: v,
                    };
                    result = f(e);
                    result.is_ok()
                });
                result?;
            }
        }
    }

    /// The stores that have entries, in order.
    pub fn stores(&self) -> Vec<u32> {
        let tree = self.tree.read();
        let mut stores = Vec::new();
        let mut next = tree.rows.keys().next().map(|k| k.store);
        while let Some(s) = next {
            stores.push(s);
            next = match store_end(s) {
                Bound::Excluded(from) => tree.rows.range(from..).next().map(|(k, _)| k.store),
                _ => None,
            };
        }
        stores
    }
}

/// Rows whose cells a walk of the whole memtable reads ahead of using.
const TOUCH_AHEAD: usize = 16;

/// Reads each cell of the small rows among `rows`, then the first byte of
/// each of their values, before the rows are used. A small row's cells
/// and its values lie where they were inserted, in time order, while a
/// walk goes in key order: each row's first read misses the CPU's
/// caches (a large row's cells are in a tree of their own). Issued one
/// after another with nothing depending on them, the reads of a batch
/// miss together rather than one by one as the walk reaches each row; a
/// flush's walk spent most of its time waiting on them.
fn touch_ahead(rows: &[(&RowKey, &RowCells)]) {
    let mut sum = 0u64;
    for (_, cells) in rows {
        for (k, _) in cells.small() {
            sum = sum.wrapping_add(k.seq);
        }
    }
    for (_, cells) in rows {
        for (_, v) in cells.small() {
            sum = sum.wrapping_add(v.first().map_or(0, |&b| u64::from(b)));
        }
    }
    std::hint::black_box(sum);
}

/// Copies a chunk's entries out of the tree. Row keys and inline
/// qualifiers go into one buffer for the whole chunk, each written once
/// for the run of entries that share it, so a chunk costs one allocation
/// for its keys rather than one per row and per column (a scan of small
/// rows, or of deleted ones, was mostly allocation).
struct EntryCopier {
    keys: Vec<u8>,
    entries: Vec<CopiedEntry>,
    /// Where the last row key and qualifier were written, to reuse them.
    row: Range<usize>,
    qualifier: CopiedQualifier,
}

/// An entry whose key parts are still positions in the chunk's buffer.
struct CopiedEntry {
    row: Range<usize>,
    qualifier: CopiedQualifier,
    timestamp: i64,
    seq: u64,
    kind: EntryKind,
    value: Bytes,
}

/// A qualifier copied into the buffer, or one the arena already shares.
#[derive(Clone)]
enum CopiedQualifier {
    InBuffer(Range<usize>),
    Shared(Bytes),
}

impl EntryCopier {
    fn with_capacity(entries: usize) -> Self {
        EntryCopier {
            keys: Vec::new(),
            entries: Vec::with_capacity(entries),
            row: 0..0,
            qualifier: CopiedQualifier::InBuffer(0..0),
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn copy(&mut self, row: &[u8], ck: &CellKey, value: &Bytes) {
        if self.entries.is_empty() || self.keys[self.row.clone()] != *row {
            self.row = append(&mut self.keys, row);
            // A new row starts a new run of qualifiers too.
            self.qualifier = CopiedQualifier::InBuffer(0..0);
        }
        let q = ck.qualifier.as_slice();
        let same_qualifier = match &self.qualifier {
            CopiedQualifier::InBuffer(r) => self.keys[r.clone()] == *q,
            CopiedQualifier::Shared(b) => b == q,
        };
        if !same_qualifier {
            self.qualifier = match &ck.qualifier {
                KeyBytes::Shared(b) => CopiedQualifier::Shared(b.clone()),
                KeyBytes::Inline(..) => CopiedQualifier::InBuffer(append(&mut self.keys, q)),
            };
        }
        self.entries.push(CopiedEntry {
            row: self.row.clone(),
            qualifier: self.qualifier.clone(),
            timestamp: ck.timestamp,
            seq: ck.seq,
            kind: ck.kind,
            value: value.clone(),
        });
    }

    /// The entries, their key parts slices of the one buffer.
    fn finish(self) -> Vec<Entry> {
        let keys = Bytes::from(self.keys);
        self.entries
            .into_iter()
            .map(|e| {
                let qualifier = match e.qualifier {
                    CopiedQualifier::InBuffer(r) => keys.slice(r),
                    CopiedQualifier::Shared(b) => b,
                };
                let key =
                    InternalKey { row: keys.slice(e.row), qualifier, timestamp: e.timestamp, seq: e.seq, kind: e.kind };
                Entry { key, value: e.value }
            })
            .collect()
    }
}

/// Appends `bytes` to `buffer`; where they now are.
fn append(buffer: &mut Vec<u8>, bytes: &[u8]) -> Range<usize> {
    let start = buffer.len();
    buffer.extend_from_slice(bytes);
    start..buffer.len()
}

/// The first row key past `store`.
fn store_end(store: u32) -> Bound<RowKey> {
    match store.checked_add(1) {
        Some(next) => Bound::Excluded(RowKey { store: next, row: KeyBytes::Inline(0, [0; 46]) }),
        None => Bound::Unbounded,
    }
}

/// The rows a key bound can reach: the bound's row itself is always
/// visited, its cells then filtered by [`cell_bound`].
fn row_bound(store: u32, bound: &Bound<InternalKey>, upper: bool) -> Bound<RowKey> {
    match bound {
        Bound::Included(k) | Bound::Excluded(k) => Bound::Included(RowKey { store, row: KeyBytes::query(&k.row) }),
        Bound::Unbounded if !upper => Bound::Included(RowKey { store, row: KeyBytes::Inline(0, [0; 46]) }),
        Bound::Unbounded => store_end(store),
    }
}

/// The part of `bound` that applies within `row`: all of it in the bound's
/// own row, none elsewhere (rows strictly inside the range are whole).
fn cell_bound(bound: &Bound<InternalKey>, row: &[u8]) -> Bound<CellKey> {
    match bound {
        Bound::Included(k) if k.row == row => Bound::Included(CellKey::of(k)),
        Bound::Excluded(k) if k.row == row => Bound::Excluded(CellKey::of(k)),
        _ => Bound::Unbounded,
    }
}

/// Whether `(lo, hi)` holds nothing; `BTreeMap::range` panics on such bounds.
fn is_empty_range<T: Ord>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::BatchEntry;

    fn record(row: &'static [u8], cells: &[(u32, &'static [u8], i64, u64)]) -> RowBatch<'static> {
        let entries = cells
            .iter()
            .map(|&(store, q, ts, seq)| BatchEntry {
                store,
                kind: EntryKind::Put,
                seq,
                qualifier: q,
                timestamp: ts,
                value: (&b"v"[..]).into(),
            })
            .collect();
        RowBatch { row, first_seq: cells[0].3, entries }
    }

    fn keys(entries: &[Entry]) -> Vec<(Vec<u8>, Vec<u8>, i64)> {
        entries.iter().map(|e| (e.key.row.to_vec(), e.key.qualifier.to_vec(), e.key.timestamp)).collect()
    }

    #[test]
    fn rows_of_every_size_read_back_in_key_order_in_chunks_both_ways() {
        let m = Memtable::new(1);
        let long_row: &'static [u8] = Box::leak(vec![b'z'; 100].into_boxed_slice());
        let long_q: &'static [u8] = Box::leak(vec![b'q'; 40].into_boxed_slice());
        let mut expected = Vec::new();
        for (i, row) in [&b"a"[..], b"a\0", b"b", long_row].into_iter().enumerate() {
            let n: i64 = if i == 2 { 100 } else { 3 };
            for t in 0..n {
                let seq = (i * 1000) as u64 + t.unsigned_abs() + 1;
                for q in [&b""[..], b"x", long_q] {
                    m.insert(&[record(row, &[(1, q, t * 1000, seq)])]);
                    expected.push((row.to_vec(), q.to_vec(), t * 1000));
                }
            }
            m.insert(&[record(row, &[(2, b"other store", 0, 1)])]);
        }
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
        let bounds: KeyBounds = (Bound::Unbounded, Bound::Unbounded);
        for chunk in [1, 7, 1000] {
            let mut got = Vec::new();
            let mut b = bounds.clone();
            loop {
                let c = m.chunk(1, &b, false, chunk);
                let Some(last) = c.last() else { break };
                b.0 = Bound::Excluded(last.key.clone());
                got.extend(keys(&c));
            }
            assert_eq!(got, expected, "chunk {chunk}");
            let mut back = Vec::new();
            let mut b = bounds.clone();
            loop {
                let c = m.chunk(1, &b, true, chunk);
                let Some(last) = c.last() else { break };
                b.1 = Bound::Excluded(last.key.clone());
                back.extend(keys(&c));
            }
            back.reverse();
            assert_eq!(back, expected, "reverse chunk {chunk}");
        }
        assert_eq!(m.stores(), vec![1, 2]);
        let mut flushed = 0;
        m.for_each(2, |_| {
            flushed += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(flushed, 4);
    }

    #[test]
    fn a_one_cell_row_takes_a_second_cell_on_either_side_and_a_rewrite_in_place() {
        let m = Memtable::new(1);
        let walk = |m: &Memtable| {
            let mut cells = Vec::new();
            m.for_each(1, |e| {
                cells.push((e.row.to_vec(), e.qualifier.to_vec(), e.timestamp, e.value.to_vec()));
                Ok(())
            })
            .unwrap();
            cells
        };
        let cell = |row: &[u8], q: &[u8], ts: i64, v: &[u8]| (row.to_vec(), q.to_vec(), ts, v.to_vec());
        // Rows "b" and "c" get a second cell that sorts after the first;
        // "a" gets one that sorts before (a newer timestamp).
        m.insert(&[record(b"a", &[(1, b"q", 10, 1)]), record(b"b", &[(1, b"q", 10, 2)])]);
        m.insert(&[record(b"c", &[(1, b"q", 10, 3)])]);
        let before = m.approximate_bytes();
        m.insert(&[record(b"a", &[(1, b"q", 20, 4)]), record(b"b", &[(1, b"r", 0, 5)])]);
        m.insert(&[record(b"c", &[(1, b"q", 5, 6)])]);
        assert!(m.approximate_bytes() > before, "a row that grows is charged for it");
        assert_eq!(
            walk(&m),
            [
                cell(b"a", b"q", 20, b"v"),
                cell(b"a", b"q", 10, b"v"),
                cell(b"b", b"q", 10, b"v"),
                cell(b"b", b"r", 0, b"v"),
                cell(b"c", b"q", 10, b"v"),
                cell(b"c", b"q", 5, b"v"),
            ]
        );

        // The same key again (a replayed log record) replaces the value.
        let m = Memtable::new(1);
        let mut rewrite = record(b"d", &[(1, b"q", 10, 7)]);
        m.insert(std::slice::from_ref(&rewrite));
        rewrite.entries[0].value = (&b"w"[..]).into();
        m.insert(&[rewrite]);
        assert_eq!(walk(&m), [cell(b"d", b"q", 10, b"w")]);
        let chunk = m.chunk(1, &(Bound::Unbounded, Bound::Unbounded), true, 10);
        assert_eq!(keys(&chunk), [(b"d".to_vec(), b"q".to_vec(), 10)]);
    }

    #[test]
    fn a_walk_gives_every_entry_of_its_store_in_order_and_stops_at_the_first_error() {
        // More rows than a batch read ahead, small and large, around a
        // store on either side.
        let m = Memtable::new(1);
        let rows: Vec<&'static [u8]> = (0..3 * TOUCH_AHEAD + 5)
            .map(|i| &*Box::leak(format!("row{i:03}").into_bytes().into_boxed_slice()))
            .collect();
        let mut expected = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let cells = if i % 7 == 0 { SMALL_ROW + 3 } else { i % 4 + 1 };
            for c in 0..cells {
                let ts = i64::try_from(c).unwrap();
                m.insert(&[record(row, &[(0, b"before", 0, 1), (5, b"q", ts, 2), (9, b"after", 0, 3)])]);
                expected.push((row.to_vec(), b"q".to_vec(), ts));
            }
        }
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)));
        let mut walked = Vec::new();
        m.for_each(5, |e| {
            walked.push((e.row.to_vec(), e.qualifier.to_vec(), e.timestamp));
            Ok(())
        })
        .unwrap();
        assert_eq!(walked, expected);

        let stop_at = 2 * TOUCH_AHEAD + 1;
        let mut seen = 0;
        let stopped = m.for_each(5, |_| {
            seen += 1;
            if seen == stop_at { Err(crate::Error::InvalidArgument("stop".into())) } else { Ok(()) }
        });
        assert!(matches!(stopped, Err(crate::Error::InvalidArgument(_))));
        assert_eq!(seen, stop_at);
    }
}
