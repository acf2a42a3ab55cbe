//! A bounded cache of decoded SSTable blocks, least recently used out first.
//!
//! Sharded by block so concurrent readers rarely meet on one lock. Each
//! shard keeps its blocks in a map and their recency in an ordered map from
//! a use counter, so both a hit and an eviction cost O(log n).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::sst::DecodedBlock;

const SHARDS: usize = 16;

/// (SSTable id, block number).
pub type BlockKey = (u64, u32);

/// The block cache, shared by every SSTable of a database.
#[derive(Debug)]
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug, Default)]
struct Shard {
    blocks: HashMap<BlockKey, (Arc<DecodedBlock>, u64)>,
    recency: BTreeMap<u64, BlockKey>,
    tick: u64,
    used: usize,
    capacity: usize,
}

impl BlockCache {
    /// A cache holding up to `capacity` bytes of decoded blocks.
    pub fn new(capacity: usize) -> Self {
        let shards =
            (0..SHARDS).map(|_| Mutex::new(Shard { capacity: capacity / SHARDS, ..Shard::default() })).collect();
        BlockCache { shards, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    fn shard(&self, key: BlockKey) -> &Mutex<Shard> {
        let h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(key.1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        &self.shards[(h >> 59) as usize % SHARDS]
    }

    /// The cached block, if any.
    pub fn get(&self, key: BlockKey) -> Option<Arc<DecodedBlock>> {
        let found = self.shard(key).lock().touch(key);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `block`, evicting the least recently used to stay in budget.
    pub fn insert(&self, key: BlockKey, block: Arc<DecodedBlock>) {
        self.shard(key).lock().insert(key, block);
    }

    /// Drops every block of SSTable `id` (when the file is deleted).
    pub fn forget_file(&self, id: u64) {
        for shard in &self.shards {
            shard.lock().remove_file(id);
        }
    }

    /// (hits, misses) since the cache was made.
    pub fn hit_counts(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    /// Bytes of blocks held.
    pub fn used_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used).sum()
    }
}

impl Shard {
    fn touch(&mut self, key: BlockKey) -> Option<Arc<DecodedBlock>> {
        self.tick += 1;
        let tick = self.tick;
        let (block, last) = self.blocks.get_mut(&key)?;
        self.recency.remove(last);
        *last = tick;
        self.recency.insert(tick, key);
        Some(block.clone())
    }

    fn insert(&mut self, key: BlockKey, block: Arc<DecodedBlock>) {
        let charge = block.charge();
        if charge > self.capacity {
            return;
        }
        self.remove(key);
        self.tick += 1;
        self.recency.insert(self.tick, key);
        self.blocks.insert(key, (block, self.tick));
        self.used += charge;
        while self.used > self.capacity {
            let Some((_, oldest)) = self.recency.pop_first() else { break };
            if let Some((b, _)) = self.blocks.remove(&oldest) {
                self.used -= b.charge();
            }
        }
    }

    fn remove(&mut self, key: BlockKey) {
        if let Some((b, tick)) = self.blocks.remove(&key) {
            self.recency.remove(&tick);
            self.used -= b.charge();
        }
    }

    fn remove_file(&mut self, id: u64) {
        let keys: Vec<BlockKey> = self.blocks.keys().filter(|k| k.0 == id).copied().collect();
        keys.into_iter().for_each(|k| self.remove(k));
    }
}
