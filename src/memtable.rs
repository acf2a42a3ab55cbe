//! The memtable: recent writes, ordered, in memory.
//!
//! Entries of every column-family store share one ordered map keyed by
//! `(store, internal key)`. Writers insert under a short write lock; readers
//! copy out bounded chunks under a read lock, so a long scan never holds the
//! lock and never blocks writers for long. An entry is never removed or
//! changed once inserted, and readers ignore sequence numbers above their
//! snapshot, so chunked reading still sees one consistent state.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::RwLock;

use crate::key::{Entry, InternalKey};
use crate::wal::LogEntry;

/// Per-entry bytes charged on top of key and value, for the map's nodes.
const ENTRY_OVERHEAD: usize = 64;

type MemKey = (u32, InternalKey);

/// A row range within one store, as memtable bounds.
pub type KeyBounds = (Bound<InternalKey>, Bound<InternalKey>);

/// An ordered map of entries for every store, sized in bytes.
#[derive(Debug)]
pub struct Memtable {
    map: RwLock<BTreeMap<MemKey, Bytes>>,
    approximate_bytes: AtomicUsize,
    max_seq: AtomicU64,
    wal_number: u64,
}

impl Memtable {
    /// An empty memtable whose entries are logged in log file `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        Memtable {
            map: RwLock::new(BTreeMap::new()),
            approximate_bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_number,
        }
    }

    /// The log file holding this memtable's entries.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Bytes held, approximately (keys, values and node overhead).
    pub fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(Ordering::Relaxed)
    }

    /// Largest sequence number inserted.
    pub fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }

    /// Inserts a group of entries under one lock.
    pub fn insert<'a>(&self, entries: impl IntoIterator<Item = &'a LogEntry>) {
        let mut bytes = 0;
        let mut max_seq = 0;
        let mut map = self.map.write();
        for LogEntry { store, entry } in entries {
            bytes += entry.key.row.len() + entry.key.qualifier.len() + entry.value.len() + ENTRY_OVERHEAD;
            max_seq = max_seq.max(entry.key.seq);
            map.insert((*store, entry.key.clone()), entry.value.clone());
        }
        drop(map);
        self.approximate_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.max_seq.fetch_max(max_seq, Ordering::Relaxed);
    }

    /// Up to `limit` entries of `store` within `bounds`, in key order or, if
    /// `reverse`, in reverse key order.
    pub fn chunk(&self, store: u32, bounds: &KeyBounds, reverse: bool, limit: usize) -> Vec<Entry> {
        let lo = map_bound(store, &bounds.0, false);
        let hi = map_bound(store, &bounds.1, true);
        if is_empty_range(&lo, &hi) {
            return Vec::new();
        }
        let map = self.map.read();
        let range = map.range((lo, hi));
        let to_entry = |((_, key), value): (&MemKey, &Bytes)| Entry { key: key.clone(), value: value.clone() };
        if reverse {
            range.rev().take(limit).map(to_entry).collect()
        } else {
            range.take(limit).map(to_entry).collect()
        }
    }

    /// The stores that have entries, in order.
    pub fn stores(&self) -> Vec<u32> {
        let map = self.map.read();
        let mut stores = Vec::new();
        let mut next = map.keys().next().map(|(s, _)| *s);
        while let Some(s) = next {
            stores.push(s);
            next = s.checked_add(1).and_then(|n| {
                let from = (n, InternalKey::first_of_row(Bytes::new()));
                map.range(from..).next().map(|((s, _), _)| *s)
            });
        }
        stores
    }
}

/// `bound` within `store`; an unbounded end stops at the store's edge.
fn map_bound(store: u32, bound: &Bound<InternalKey>, upper: bool) -> Bound<MemKey> {
    let store_start = |s: u32| (s, InternalKey::first_of_row(Bytes::new()));
    match bound {
        Bound::Included(k) => Bound::Included((store, k.clone())),
        Bound::Excluded(k) => Bound::Excluded((store, k.clone())),
        Bound::Unbounded if !upper => Bound::Included(store_start(store)),
        Bound::Unbounded => match store.checked_add(1) {
            Some(next) => Bound::Excluded(store_start(next)),
            None => Bound::Unbounded,
        },
    }
}

/// Whether `(lo, hi)` holds no key; `BTreeMap::range` panics on such bounds.
fn is_empty_range(lo: &Bound<MemKey>, hi: &Bound<MemKey>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}
