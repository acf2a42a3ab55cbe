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
//!
//! A full cache admits a block on its second miss
//! ([`BlockCache::get_or_admit`]): a reader that would otherwise cache a
//! block every random point read misses, each pushing out a block that
//! may be hot, asks first, and a block refused is one its reader need not
//! decode whole (`docs/architecture.md`, "A read").

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

const SHARDS: usize = 16;

/// (file id, block number).
pub type BlockKey = (u64, u64);

/// What a cached value costs the cache's budget.
pub trait Charge {
    /// Bytes of memory the value holds. Taken once, when the value is
    /// inserted: it must not change while the value is cached.
    fn charge(&self) -> usize;
}

/// The block cache, shared by every SSTable of a database.
#[derive(Debug)]
pub struct BlockCache<V> {
    shards: Vec<Mutex<Shard<V>>>,
}

/// One shard: its blocks by key, and their keys around the clock.
///
/// A hit is one lookup in `index`, whose entry holds the block itself: a
/// read of blocks far apart (a row set of one minute of every balloon)
/// finds each block's entry out of the CPU's caches, and every further
/// place a hit had to look would be one more miss. The clock's order is
/// kept apart in `ring`, which only an insert's eviction walks.
#[derive(Debug)]
struct Shard<V> {
    index: HashMap<BlockKey, Cached<V>, BuildHasherDefault<KeyHasher>>,
    /// Each cached block's key at its place around the clock.
    ring: Vec<Option<BlockKey>>,
    /// Places in `ring` emptied by evictions and removals, to fill first.
    free: Vec<usize>,
    hand: usize,
    used: usize,
    capacity: usize,
    /// Lookups that found their block, and that did not. Counted under the
    /// shard's lock, which a lookup holds anyway: a shared atomic counter
    /// would cost every lookup a locked instruction on a line every reader
    /// writes.
    hits: u64,
    misses: u64,
    /// A hash of each block refused lately, in the slot the hash picks
    /// (0: none): a block missed again while its hash is here is admitted.
    /// There is a slot per [`GHOST_SPAN`] of budget (at least 64), fewer
    /// than the blocks the shard holds, so that a block must be missed
    /// again soon; a slot's next refusal forgets the last.
    ghosts: Box<[u64]>,
}

/// Bytes of a shard's budget per slot of its refused blocks.
const GHOST_SPAN: usize = 64 << 10;

/// What [`BlockCache::get_or_admit`] found.
#[derive(Debug)]
pub enum Lookup<V> {
    /// The block, cached.
    Hit(Arc<V>),
    /// Not cached; the cache has room for it, or missed it lately: decode
    /// it whole and insert it.
    Admit,
    /// Not cached, and a full cache would not keep it yet.
    Refuse,
}

#[derive(Debug)]
struct Cached<V> {
    block: Arc<V>,
    /// What the block costs the budget, taken when it was inserted, while
    /// its memory was fresh: an eviction reads this, not the block, which
    /// has long left the CPU's caches by then.
    charge: usize,
    /// Where the block's key is in `ring`.
    place: usize,
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
                ring: Vec::new(),
                free: Vec::new(),
                hand: 0,
                used: 0,
                capacity: capacity / SHARDS,
                hits: 0,
                misses: 0,
                ghosts: vec![0; (capacity / SHARDS / GHOST_SPAN).clamp(64, 1 << 16)].into(),
            })
        };
        BlockCache { shards: (0..SHARDS).map(|_| shard()).collect() }
    }

    fn shard(&self, key: BlockKey) -> &Mutex<Shard<V>> {
        &self.shards[(hash(key) >> 59) as usize % SHARDS]
    }

    /// The cached block, if any.
    pub fn get(&self, key: BlockKey) -> Option<Arc<V>> {
        self.shard(key).lock().touch(key)
    }

    /// The cached block; else whether the caller should decode the block
    /// whole and insert it. It should while the cache has room, and once
    /// full, when the block was refused lately: a block read once is not
    /// let in to push out others, and one read twice is. Counts a hit or
    /// a miss as [`BlockCache::get`] does.
    pub fn get_or_admit(&self, key: BlockKey) -> Lookup<V> {
        let mut shard = self.shard(key).lock();
        if let Some(block) = shard.touch(key) {
            return Lookup::Hit(block);
        }
        if shard.admits(hash(key)) { Lookup::Admit } else { Lookup::Refuse }
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
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock();
                (s.hits, s.misses)
            })
            .fold((0, 0), |(h, m), (sh, sm)| (h + sh, m + sm))
    }

    /// Bytes of blocks held.
    pub fn used_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used).sum()
    }
}

/// Mixes a [`BlockKey`]'s two integers: the top bits pick the shard.
fn hash(key: BlockKey) -> u64 {
    key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

impl<V: Charge> Shard<V> {
    /// Whether a block missed now, of hash `h`, should be cached
    /// ([`BlockCache::get_or_admit`]); remembers it if not. Room is
    /// more than a sixteenth of the budget free. A shard of no budget
    /// admits none: it could keep none.
    #[allow(clippy::cast_possible_truncation, reason = "the low bits pick a slot")]
    fn admits(&mut self, h: u64) -> bool {
        if self.capacity == 0 {
            return false;
        }
        if self.used + self.capacity / 16 < self.capacity {
            return true;
        }
        let slot = &mut self.ghosts[h as usize % self.ghosts.len()];
        let mark = h | 1;
        if *slot == mark {
            *slot = 0;
            return true;
        }
        *slot = mark;
        false
    }

    fn touch(&mut self, key: BlockKey) -> Option<Arc<V>> {
        let Some(cached) = self.index.get_mut(&key) else {
            self.misses += 1;
            return None;
        };
        cached.referenced = true;
        let block = cached.block.clone();
        self.hits += 1;
        Some(block)
    }

    fn insert(&mut self, key: BlockKey, block: Arc<V>) {
        let charge = block.charge();
        if charge > self.capacity {
            return;
        }
        self.remove(key);
        self.used += charge;
        while self.used > self.capacity && self.evict_one() {}
        let place = if let Some(i) = self.free.pop() {
            self.ring[i] = Some(key);
            i
        } else {
            self.ring.push(Some(key));
            self.ring.len() - 1
        };
        self.index.insert(key, Cached { block, charge, place, referenced: false });
    }

    /// Moves the hand to the first block not used since it last passed,
    /// clearing the bits it passes, and evicts that block; false if the
    /// shard holds none.
    fn evict_one(&mut self) -> bool {
        if self.index.is_empty() {
            return false;
        }
        // Two turns at most: the first clears every bit.
        for _ in 0..2 * self.ring.len() {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.ring.len();
            let Some(key) = self.ring[i] else { continue };
            let Some(cached) = self.index.get_mut(&key) else { continue };
            if cached.referenced {
                cached.referenced = false;
                continue;
            }
            self.remove(key);
            return true;
        }
        false
    }

    fn remove(&mut self, key: BlockKey) {
        let Some(cached) = self.index.remove(&key) else { return };
        self.used -= cached.charge;
        self.ring[cached.place] = None;
        self.free.push(cached.place);
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

    /// Through inserts, replacements, evictions and file removals, each
    /// shard's clock holds exactly the keys of its blocks, each at the
    /// place its entry names, and its bytes add up within budget.
    #[test]
    fn the_clock_and_the_index_agree_through_every_change() {
        let cache = BlockCache::new(SHARDS * 1000);
        let mut state = 11u64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        for step in 0..20_000 {
            let key = (next() % 4, next() % 200);
            match next() % 10 {
                0 if step % 50 == 0 => cache.forget_file(key.0),
                0..=5 => cache.insert(key, Arc::new(Sized(1 + (next() % 300) as usize))),
                _ => {
                    let _ = cache.get(key);
                }
            }
        }
        for shard in &cache.shards {
            let shard = shard.lock();
            assert!(shard.used <= shard.capacity);
            assert_eq!(shard.used, shard.index.values().map(|c| c.block.0).sum::<usize>());
            for (key, cached) in &shard.index {
                assert_eq!(shard.ring[cached.place], Some(*key));
            }
            let placed = shard.ring.iter().filter(|k| k.is_some()).count();
            assert_eq!(placed, shard.index.len());
            assert_eq!(placed + shard.free.len(), shard.ring.len());
        }
        let (hits, misses) = cache.hit_counts();
        assert!(hits > 0 && misses > 0);
    }

    #[test]
    fn a_full_cache_admits_a_block_on_its_second_miss() {
        let cache = BlockCache::new(SHARDS * 100);
        let shard = cache.shard((1, 0));
        let keys: Vec<BlockKey> =
            (0..100_000u64).map(|b| (1, b)).filter(|&k| std::ptr::eq(cache.shard(k), shard)).take(6).collect();
        // With room, every miss is admitted.
        assert!(matches!(cache.get_or_admit(keys[0]), Lookup::Admit));
        for &k in &keys[..3] {
            cache.insert(k, Arc::new(Sized(33)));
        }
        assert!(matches!(cache.get_or_admit(keys[0]), Lookup::Hit(_)));
        // Full: a block's first miss is refused, its second admitted.
        assert!(matches!(cache.get_or_admit(keys[3]), Lookup::Refuse));
        assert!(matches!(cache.get_or_admit(keys[4]), Lookup::Refuse));
        assert!(matches!(cache.get_or_admit(keys[3]), Lookup::Admit));
        // Admitted once: its next miss starts over.
        assert!(matches!(cache.get_or_admit(keys[3]), Lookup::Refuse));
        assert!(matches!(cache.get_or_admit(keys[4]), Lookup::Admit));
        // Room again, once a file's blocks are dropped.
        cache.forget_file(1);
        assert!(matches!(cache.get_or_admit(keys[5]), Lookup::Admit));
        assert_eq!(cache.hit_counts(), (1, 7));
        // A cache of no bytes could keep nothing: it admits nothing.
        let none: BlockCache<Sized> = BlockCache::new(0);
        for _ in 0..3 {
            assert!(matches!(none.get_or_admit(keys[0]), Lookup::Refuse));
        }
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
