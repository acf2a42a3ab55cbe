//! How the machine ran while a query form was timed.
//!
//! On a shared machine (a cloud VM) a whole form — a thousand reads, tens
//! of milliseconds — can run at half speed in one round while the read is
//! the same in every round, and either engine's median then moves for a
//! reason neither controls. So that such a form can be told from an
//! engine's own slowness, the lab records beside each form's latencies:
//!
//! - what the scheduler says of the timing thread over the form
//!   (`/proc/thread-self/schedstat`): the share of the form's wall time the
//!   thread ran on a CPU, and the share it waited for one while runnable
//!   (another task had it). The rest, the thread was blocked (on the disk)
//!   or its virtual CPU was taken by the host: a guest kernel that accounts
//!   stolen time apart (`CONFIG_PARAVIRT_TIME_ACCOUNTING`) does not count
//!   it as the thread's run time;
//! - a yardstick: fixed work, a walk of dependent loads through a buffer
//!   larger than a core's private caches, timed just before and just after
//!   the form. Its time moves with the machine (another tenant on the
//!   core's sibling thread or in the shared cache, a lower clock) and with
//!   no engine.
//!
//! Promise: nothing here fails. Where the OS gives no scheduler
//! statistics, the shares are `None`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::workload::SplitMix64;

/// How the machine ran over one form on one engine: its untimed warm-up
/// runs, its timed runs and the reads that check their answers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pace {
    /// Wall time of the form.
    pub wall: Duration,
    /// Share of `wall` the timing thread ran on a CPU.
    pub on_cpu: Option<f64>,
    /// Share of `wall` the timing thread waited, runnable, for a CPU.
    pub waited: Option<f64>,
    /// The yardstick's time: the slower of its run just before the form
    /// and its run just after.
    pub yardstick: Duration,
}

/// A form being timed: [`Clock::start`] before its first run,
/// [`Clock::stop`] after its last.
pub(crate) struct Clock {
    yardstick: Duration,
    schedule: Option<Schedule>,
    started: Instant,
}

impl Clock {
    /// Runs the yardstick, then starts the clock and notes the thread's
    /// scheduler statistics.
    pub(crate) fn start() -> Self {
        let yardstick = yardstick();
        Self { yardstick, schedule: Schedule::now(), started: Instant::now() }
    }

    /// Stops the clock and runs the yardstick again.
    pub(crate) fn stop(self) -> Pace {
        let wall = self.started.elapsed();
        let spent = self.schedule.zip(Schedule::now()).map(|(before, after)| after.since(before));
        let share = |ns: u64| ns as f64 / wall.as_nanos().max(1) as f64;
        Pace {
            wall,
            on_cpu: spent.map(|s| share(s.ran_ns)),
            waited: spent.map(|s| share(s.waited_ns)),
            yardstick: self.yardstick.max(yardstick()),
        }
    }
}

/// The calling thread's scheduler statistics so far.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Schedule {
    /// Time run on a CPU.
    ran_ns: u64,
    /// Time spent runnable, waiting for a CPU.
    waited_ns: u64,
}

impl Schedule {
    /// The calling thread's statistics, if the OS gives them.
    fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
    }

    /// `schedstat`'s text: nanoseconds run, nanoseconds waited, time
    /// slices.
    fn parse(text: &str) -> Option<Self> {
        let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
        Some(Self { ran_ns: fields.next()?.ok()?, waited_ns: fields.next()?.ok()? })
    }

    fn since(self, before: Self) -> Self {
        Self {
            ran_ns: self.ran_ns.saturating_sub(before.ran_ns),
            waited_ns: self.waited_ns.saturating_sub(before.waited_ns),
        }
    }
}

/// Slots of the yardstick's buffer: 8 MiB of `u32`, past the private
/// caches of the cores the lab runs on, within a server's shared cache.
const YARDSTICK_SLOTS: usize = 1 << 21;

/// Loads the yardstick makes, each depending on the one before.
const YARDSTICK_STEPS: usize = 1 << 17;

/// Times the yardstick: [`YARDSTICK_STEPS`] dependent loads through a
/// random cycle over the buffer, so that each load waits for the one
/// before and none can be predicted. The buffer is built once per process.
pub(crate) fn yardstick() -> Duration {
    static CYCLE: OnceLock<Vec<u32>> = OnceLock::new();
    let cycle = CYCLE.get_or_init(|| random_cycle(YARDSTICK_SLOTS, 0x9ACE));
    let started = Instant::now();
    let mut at = 0u32;
    for _ in 0..YARDSTICK_STEPS {
        at = cycle[at as usize];
    }
    std::hint::black_box(at);
    started.elapsed()
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
    fn schedstat_gives_run_and_wait_time() {
        assert_eq!(Schedule::parse("8093 4316 5\n"), Some(Schedule { ran_ns: 8093, waited_ns: 4316 }));
        assert_eq!(Schedule::parse("8093\n"), None);
        assert_eq!(Schedule::parse("x 1 2"), None);
    }

    #[test]
    fn a_busy_thread_is_on_a_cpu_for_most_of_a_form() {
        let clock = Clock::start();
        let mut x = 0u64;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let pace = clock.stop();
        assert!(pace.wall >= Duration::from_millis(50));
        assert!(pace.yardstick > Duration::ZERO);
        // Where the OS tells (Linux), the shares add up to at most the whole.
        if let (Some(on_cpu), Some(waited)) = (pace.on_cpu, pace.waited) {
            assert!(on_cpu > 0.0 && on_cpu + waited <= 1.05, "{pace:?}");
        }
    }

    #[test]
    fn a_sleeping_thread_is_off_the_cpu() {
        let clock = Clock::start();
        std::thread::sleep(Duration::from_millis(50));
        let pace = clock.stop();
        if let Some(on_cpu) = pace.on_cpu {
            assert!(on_cpu < 0.5, "{pace:?}");
        }
    }
}
