//! A bounded cache of decoded blocks, least recently used out first.
//!
//! Generic over what it holds (anything that says what memory it takes,
//! [`Charge`]): the SSTable reader caches its decoded data blocks in it,
//! and the cache knows nothing of SSTables. Sharded by block so concurrent
//! readers rarely meet on one lock. Each shard keeps its blocks in a map
//! and their recency in an ordered map from a use counter, so both a hit
//! and an eviction cost O(log n).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

const SHARDS: usize = 16;

/// (file id, block number).
pub type BlockKey = (u64, u64);

/// What a cached value costs the cache's budget.
pub trait Charge {
    /// Bytes of memory the value holds.
    fn charge(&self) -> usize;
}

/// The block cache, shared by every SSTable of a database.
#[derive(Debug)]
pub struct BlockCache<V> {
    shards: Vec<Mutex<Shard<V>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug)]
struct Shard<V> {
    blocks: HashMap<BlockKey, (Arc<V>, u64)>,
    recency: BTreeMap<u64, BlockKey>,
    tick: u64,
    used: usize,
    capacity: usize,
}

impl<V: Charge> BlockCache<V> {
    /// A cache holding up to `capacity` bytes of values.
    pub fn new(capacity: usize) -> Self {
        let shard = || {
            let capacity = capacity / SHARDS;
            Mutex::new(Shard { blocks: HashMap::new(), recency: BTreeMap::new(), tick: 0, used: 0, capacity })
        };
        BlockCache {
            shards: (0..SHARDS).map(|_| shard()).collect(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: BlockKey) -> &Mutex<Shard<V>> {
        let h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        &self.shards[(h >> 59) as usize % SHARDS]
    }

    /// The cached block, if any.
    pub fn get(&self, key: BlockKey) -> Option<Arc<V>> {
        let found = self.shard(key).lock().touch(key);
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `block`, evicting the least recently used to stay in budget.
    pub fn insert(&self, key: BlockKey, block: Arc<V>) {
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

impl<V: Charge> Shard<V> {
    fn touch(&mut self, key: BlockKey) -> Option<Arc<V>> {
        self.tick += 1;
        let tick = self.tick;
        let (block, last) = self.blocks.get_mut(&key)?;
        self.recency.remove(last);
        *last = tick;
        self.recency.insert(tick, key);
        Some(block.clone())
    }

    fn insert(&mut self, key: BlockKey, block: Arc<V>) {
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
        for k in keys {
            self.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sized(usize);

    impl Charge for Sized {
        fn charge(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn the_least_recently_used_block_goes_first_and_the_budget_holds() {
        // One shard's budget is a sixteenth: keep every key in shard of (1, 0).
        let cache = BlockCache::new(SHARDS * 100);
        let same_shard: Vec<BlockKey> = (0..10_000u64)
            .map(|b| (1, b))
            .filter(|&k| std::ptr::eq(cache.shard(k), cache.shard((1, 0))))
            .take(3)
            .collect();
        let [a, b, c] = same_shard[..] else { panic!("three keys of one shard") };
        cache.insert(a, Arc::new(Sized(40)));
        cache.insert(b, Arc::new(Sized(40)));
        assert!(cache.get(a).is_some(), "a is now the most recent");
        cache.insert(c, Arc::new(Sized(40)));
        assert!(cache.get(b).is_none(), "b was the least recently used");
        assert!(cache.get(a).is_some() && cache.get(c).is_some());
        assert_eq!(cache.used_bytes(), 80);
        cache.insert((2, 0), Arc::new(Sized(1000)));
        assert!(cache.get((2, 0)).is_none(), "a block over a shard's budget is not kept");
        cache.forget_file(1);
        assert_eq!(cache.used_bytes(), 0);
        assert_eq!(cache.hit_counts(), (3, 2));
    }
}
