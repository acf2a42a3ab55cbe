//! A bounded cache of decoded blocks, evicted by CLOCK.
//!
//! Generic over what it holds (anything that says what memory it takes,
//! [`Charge`]): the SSTable reader caches its decoded data blocks in it,
//! and the cache knows nothing of SSTables. Sharded by block so concurrent
//! readers rarely meet on one lock.
//!
//! Eviction is CLOCK (second chance), an approximation of least recently
//! used (RocksDB's `HyperClockCache` is one, as are many OS page caches):
//! a hit only sets the block's reference bit, so it costs a hash lookup
//! and nothing else; eviction sweeps a hand over the blocks, clearing set
//! bits and evicting the first block whose bit is clear, so a block used
//! since the hand last passed survives one more sweep.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
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

/// One shard: its blocks in slots around the clock, and where each is.
#[derive(Debug)]
struct Shard<V> {
    index: HashMap<BlockKey, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot<V>>,
    /// Slots emptied by evictions and removals, to fill first.
    free: Vec<usize>,
    hand: usize,
    used: usize,
    capacity: usize,
}

#[derive(Debug)]
struct Slot<V> {
    key: BlockKey,
    block: Option<Arc<V>>,
    /// Used since the hand last passed.
    referenced: bool,
}

/// Hashes a [`BlockKey`]: two integers need a multiply and a rotate, not
/// `SipHash`'s defence against chosen keys (the keys are the engine's own).
#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

impl<V: Charge> BlockCache<V> {
    /// A cache holding up to `capacity` bytes of values.
    pub fn new(capacity: usize) -> Self {
        let shard = || {
            Mutex::new(Shard {
                index: HashMap::default(),
                slots: Vec::new(),
                free: Vec::new(),
                hand: 0,
                used: 0,
                capacity: capacity / SHARDS,
            })
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

    /// Caches `block`, evicting blocks not used lately to stay in budget.
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
        let slot = &mut self.slots[*self.index.get(&key)?];
        slot.referenced = true;
        slot.block.clone()
    }

    fn insert(&mut self, key: BlockKey, block: Arc<V>) {
        let charge = block.charge();
        if charge > self.capacity {
            return;
        }
        self.remove(key);
        self.used += charge;
        while self.used > self.capacity && self.evict_one() {}
        let slot = Slot { key, block: Some(block), referenced: false };
        let i = if let Some(i) = self.free.pop() {
            self.slots[i] = slot;
            i
        } else {
            self.slots.push(slot);
            self.slots.len() - 1
        };
        self.index.insert(key, i);
    }

    /// Moves the hand to the first block not used since it last passed,
    /// clearing the bits it passes, and evicts that block; false if the
    /// shard holds none.
    fn evict_one(&mut self) -> bool {
        if self.index.is_empty() {
            return false;
        }
        // Two turns at most: the first clears every bit.
        for _ in 0..2 * self.slots.len() {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.slots.len();
            let slot = &mut self.slots[i];
            if slot.block.is_none() {
                continue;
            }
            if slot.referenced {
                slot.referenced = false;
                continue;
            }
            let key = slot.key;
            self.remove(key);
            return true;
        }
        false
    }

    fn remove(&mut self, key: BlockKey) {
        let Some(i) = self.index.remove(&key) else { return };
        if let Some(b) = self.slots[i].block.take() {
            self.used -= b.charge();
        }
        self.free.push(i);
    }

    fn remove_file(&mut self, id: u64) {
        let keys: Vec<BlockKey> = self.index.keys().filter(|k| k.0 == id).copied().collect();
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
    fn a_block_used_lately_outlives_one_not_used_and_the_budget_holds() {
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
        assert!(cache.get(b).is_none(), "b was not used since a was, so the hand takes it");
        assert!(cache.get(a).is_some() && cache.get(c).is_some());
        assert_eq!(cache.used_bytes(), 80);
        cache.insert((2, 0), Arc::new(Sized(1000)));
        assert!(cache.get((2, 0)).is_none(), "a block over a shard's budget is not kept");
        cache.forget_file(1);
        assert_eq!(cache.used_bytes(), 0);
        assert_eq!(cache.hit_counts(), (3, 2));
    }

    #[test]
    fn a_block_hit_between_inserts_is_never_evicted() {
        let cache = BlockCache::new(SHARDS * 100);
        let shard = cache.shard((1, 0));
        let keys: Vec<BlockKey> =
            (0..100_000u64).map(|b| (1, b)).filter(|&k| std::ptr::eq(cache.shard(k), shard)).take(50).collect();
        cache.insert(keys[0], Arc::new(Sized(30)));
        for &k in &keys[1..] {
            assert!(cache.get(keys[0]).is_some(), "the hot block is still cached before {k:?}");
            cache.insert(k, Arc::new(Sized(30)));
            assert!(cache.used_bytes() <= 100);
        }
    }
}
