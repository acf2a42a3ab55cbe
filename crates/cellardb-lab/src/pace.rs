//! How the machine ran while a query form was timed.
//!
//! On a shared machine (a cloud VM) a whole form — a thousand reads, tens
//! of milliseconds — can run at half speed in one round while the read is
//! the same in every round, and either engine's median then moves for a
//! reason neither controls. So that such a form can be told from an
//! engine's own slowness, the lab records beside each form's latencies:
//!
//! - what the OS says of the timing thread over the form: the share of
//!   the form's wall time the thread ran on a CPU (its CPU-time clock), and
//!   the share it waited for one while runnable, another task having it
//!   (`/proc/thread-self/schedstat`, Linux). The rest, the thread was
//!   blocked (on the disk) or its virtual CPU was taken by the host: a
//!   guest kernel that accounts stolen time apart
//!   (`CONFIG_PARAVIRT_TIME_ACCOUNTING`) does not count it as the thread's
//!   CPU time;
//! - two yardsticks, fixed work timed just before and just after the form:
//!   a walk of dependent loads within a core's private cache (it slows
//!   with the core: a lower clock, another tenant on its sibling thread)
//!   and one through a buffer larger than that (it slows with the shared
//!   cache and memory). Their times move with the machine and with no
//!   engine.
//!
//! And since a virtual machine's CPUs can each run slow at their own
//! times, every engine times its forms on the same CPU (`Pinned`).
//!
//! Promise: nothing here fails. Where the OS gives no scheduler
//! statistics, the share waited is `None`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use rustix::time::{ClockId, clock_gettime};

use crate::workload::SplitMix64;

/// How the machine ran over one form on one engine: its batches of runs
/// (untimed warm-up runs, timed runs and the reads that check their
/// answers), not the other engines' turns between them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pace {
    /// Wall time of the form's batches on this engine.
    pub wall: Duration,
    /// Share of `wall` the timing thread ran on a CPU.
    pub on_cpu: f64,
    /// Share of `wall` the timing thread waited, runnable, for a CPU.
    pub waited: Option<f64>,
    /// The core's yardstick (a walk within a core's private cache): the
    /// slower of its run just before the form's first batch and its run
    /// just after its last.
    pub core_yardstick: Duration,
    /// The memory's yardstick (a walk through 8 MiB), the same way.
    pub memory_yardstick: Duration,
}

/// A form being timed on one engine: [`Clock::start`] before its first
/// batch of runs, [`Clock::count`] around each batch, [`Clock::stop`]
/// after its last. The time between batches, when the other engines take
/// their turns, is not the form's.
pub(crate) struct Clock {
    yardsticks: [Duration; 2],
    wall: Duration,
    cpu: Duration,
    /// `None` once the OS has not told.
    waited_ns: Option<u64>,
}

impl Clock {
    /// Runs the yardsticks; nothing is counted until [`Clock::count`].
    pub(crate) fn start() -> Self {
        let yardsticks = [Yardstick::Core.time(), Yardstick::Memory.time()];
        Self { yardsticks, wall: Duration::ZERO, cpu: Duration::ZERO, waited_ns: Some(0) }
    }

    /// Runs `work`, counting its wall time, the thread's CPU time over it
    /// and the time the thread waited for a CPU.
    pub(crate) fn count<T>(&mut self, work: impl FnOnce() -> T) -> T {
        let (waited_before, cpu_before, started) = (waited_ns(), thread_cpu_time(), Instant::now());
        let out = work();
        self.wall += started.elapsed();
        self.cpu += thread_cpu_time().saturating_sub(cpu_before);
        let waited = waited_before.zip(waited_ns()).map(|(before, after)| after.saturating_sub(before));
        self.waited_ns = self.waited_ns.zip(waited).map(|(sum, ns)| sum + ns);
        out
    }

    /// Runs the yardsticks again: the form's record.
    pub(crate) fn stop(self) -> Pace {
        let share = |ns: u128| ns as f64 / self.wall.as_nanos().max(1) as f64;
        Pace {
            wall: self.wall,
            on_cpu: share(self.cpu.as_nanos()),
            waited: self.waited_ns.map(|ns| share(u128::from(ns))),
            core_yardstick: self.yardsticks[0].max(Yardstick::Core.time()),
            memory_yardstick: self.yardsticks[1].max(Yardstick::Memory.time()),
        }
    }
}

/// The calling thread held on one CPU, the same for every engine, until
/// dropped.
///
/// A virtual machine's CPUs do not run at one speed: each is a thread of
/// the host, and one can run slower than the other for a while, as when
/// another tenant shares its core. An engine's worker process tends to
/// stay on the CPU it started on, so two engines timed in turn could each
/// meet their own CPU's speed, and the turns would not even it out. So
/// each engine times its forms on the highest-numbered CPU its process
/// may use, which is the same CPU in every worker of a run.
pub(crate) struct Pinned {
    /// The CPUs the thread could run on before, restored on drop; `None`
    /// if the OS did not let it be pinned.
    before: Option<CpuSet>,
}

impl Pinned {
    /// Pins the calling thread to the highest-numbered CPU it may run on.
    /// Where the OS refuses, the thread runs where it would have.
    pub(crate) fn to_last_cpu() -> Pinned {
        let Ok(allowed) = sched_getaffinity(None) else { return Pinned { before: None } };
        let Some(cpu) = (0..CpuSet::MAX_CPU).rev().find(|&c| allowed.is_set(c)) else {
            return Pinned { before: None };
        };
        let mut one = CpuSet::new();
        one.set(cpu);
        Pinned { before: sched_setaffinity(None, &one).is_ok().then_some(allowed) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(before) = &self.before {
            let _ = sched_setaffinity(None, before);
        }
    }
}

/// CPU time the calling thread has run, to the nanosecond (the kernel
/// brings the running thread's account up to date when asked, where
/// `schedstat`'s run time lags by up to a scheduler tick).
fn thread_cpu_time() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

/// Nanoseconds the calling thread has waited, runnable, for a CPU, if the
/// OS tells.
fn waited_ns() -> Option<u64> {
    parse_waited(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// `schedstat`'s text: nanoseconds run, nanoseconds waited, time slices.
fn parse_waited(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Fixed work whose time tells how fast the machine runs: a walk of
/// dependent loads through a random cycle over a buffer, so that each
/// load waits for the one before and none can be predicted. Each buffer
/// is built once per process.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Yardstick {
    /// 256 KiB, within a core's private (L2) cache: slows with the core.
    Core,
    /// 8 MiB, past a core's private caches: slows with the shared cache
    /// and the memory.
    Memory,
}

impl Yardstick {
    /// Slots of the buffer (`u32` each) and loads of the walk.
    fn size(self) -> (usize, usize) {
        match self {
            Yardstick::Core => (1 << 16, 1 << 20),
            Yardstick::Memory => (1 << 21, 1 << 15),
        }
    }

    /// Times one walk.
    pub(crate) fn time(self) -> Duration {
        static CYCLES: [OnceLock<Vec<u32>>; 2] = [OnceLock::new(), OnceLock::new()];
        let (slots, steps) = self.size();
        let cycle = CYCLES[self as usize].get_or_init(|| random_cycle(slots, 0x9ACE));
        let started = Instant::now();
        let mut at = 0u32;
        for _ in 0..steps {
            at = cycle[at as usize];
        }
        std::hint::black_box(at);
        started.elapsed()
    }
}

/// A permutation of `0..n` that is one cycle through every slot
/// (Sattolo's algorithm): following it from any slot visits all `n`
/// before coming back.
fn random_cycle(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n).map(|i| u32::try_from(i).unwrap_or(u32::MAX)).collect();
    let mut random = SplitMix64(seed);
    for i in (1..n).rev() {
        let j = usize::try_from(random.next_u64() % i as u64).unwrap_or(0);
        next.swap(i, j);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_yardsticks_walk_visits_every_slot_once_per_lap() {
        let n = 1000;
        let cycle = random_cycle(n, 7);
        let mut seen = vec![false; n];
        let mut at = 0usize;
        for _ in 0..n {
            assert!(!seen[at], "slot {at} visited twice in one lap");
            seen[at] = true;
            at = cycle[at] as usize;
        }
        assert_eq!(at, 0, "the walk is back where it started after n steps");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn schedstat_gives_the_time_waited() {
        assert_eq!(parse_waited("8093 4316 5\n"), Some(4316));
        assert_eq!(parse_waited("8093\n"), None);
        assert_eq!(parse_waited("1 x 2"), None);
    }

    #[test]
    fn a_busy_thread_is_on_a_cpu_for_most_of_a_form() {
        let mut clock = Clock::start();
        clock.count(|| spin(Duration::from_millis(50)));
        let pace = clock.stop();
        assert!(pace.wall >= Duration::from_millis(50));
        assert!(pace.core_yardstick > Duration::ZERO && pace.memory_yardstick > Duration::ZERO);
        // A busy thread runs on a CPU but when another task has it (as
        // when the tests run side by side); the shares add up to the whole.
        let waited = pace.waited.unwrap_or(0.0);
        assert!(pace.on_cpu + waited > 0.5 && pace.on_cpu + waited <= 1.01, "{pace:?}");
    }

    #[test]
    fn a_sleeping_thread_is_off_the_cpu() {
        let mut clock = Clock::start();
        clock.count(|| std::thread::sleep(Duration::from_millis(50)));
        let pace = clock.stop();
        assert!(pace.wall >= Duration::from_millis(50));
        assert!(pace.on_cpu < 0.5, "{pace:?}");
    }

    /// The other engines' turns between a form's batches are not the
    /// form's: neither its wall time nor a share of it.
    #[test]
    fn only_the_counted_batches_are_the_forms() {
        let mut clock = Clock::start();
        clock.count(|| spin(Duration::from_millis(20)));
        std::thread::sleep(Duration::from_millis(300));
        clock.count(|| spin(Duration::from_millis(20)));
        let pace = clock.stop();
        assert!(pace.wall >= Duration::from_millis(40) && pace.wall < Duration::from_millis(300), "{pace:?}");
        let waited = pace.waited.unwrap_or(0.0);
        assert!(pace.on_cpu + waited > 0.5, "{pace:?}");
    }

    /// A pinned thread runs on one CPU, the last it may use, and on the
    /// CPUs it could use before once unpinned.
    #[test]
    fn a_pinned_thread_runs_on_its_last_cpu_until_unpinned() {
        std::thread::spawn(|| {
            let before = sched_getaffinity(None).unwrap();
            let last = (0..CpuSet::MAX_CPU).rev().find(|&c| before.is_set(c)).unwrap();
            let pinned = Pinned::to_last_cpu();
            let now = sched_getaffinity(None).unwrap();
            assert_eq!(now.count(), 1);
            assert!(now.is_set(last));
            assert_eq!(rustix::thread::sched_getcpu(), last);
            drop(pinned);
            assert_eq!(sched_getaffinity(None).unwrap(), before);
        })
        .join()
        .unwrap();
    }

    /// Keeps the thread busy for `d`.
    fn spin(d: Duration) {
        let mut x = 0u64;
        let started = Instant::now();
        while started.elapsed() < d {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
    }
}
