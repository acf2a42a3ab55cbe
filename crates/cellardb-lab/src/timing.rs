//! A query form timed on one engine, a batch of runs at a time.
//!
//! On a shared machine a core can run at half its speed for a while, and
//! the while can be shorter than the time the engines take over a form's
//! runs. Timed whole, one engine's form can fall in a slow spell and the
//! other's, run just before or after it, not. So the lab splits each
//! form's runs into batches ([`batches`]) and the engines take the
//! batches in turn, each engine timing its share with a [`FormTiming`]
//! kept between its turns: a spell that lasts a few batches then weighs
//! on both engines' figures of the form alike. And as a virtual machine's
//! CPUs can each have spells of their own, every engine times its
//! batches on the same CPU ([`pace::Pinned`]).
//!
//! Promise: every run is checked against the generator, and an engine's
//! figures are those of its own runs alone, whatever ran between them.

use std::time::{Duration, Instant};

use crate::pace;
use crate::queries::{CellCollector, Form, QueryKind};
use crate::run::{LabEngine, QueryReport};
use crate::workload::{SchemaPattern, SplitMix64, Workload};
use cellardb::{Error, Result};

/// The fewest timed runs in a batch: fewer, and the batch's warm-up run
/// would weigh more than a tenth of it.
const MIN_BATCH_RUNS: usize = 10;

/// The most batches a form's runs are split into.
const MAX_BATCHES: usize = 10;

/// How a form's `runs` timed runs split into the batches the engines
/// take in turn: as many batches as there are [`MIN_BATCH_RUNS`] in
/// `runs`, from 1 to [`MAX_BATCHES`], their sizes differing by at most
/// one. (At the lab's usual thousand samples: a point query's form in 10
/// batches of 100; a fleet query's 50 runs in 5 of 10; the full scan's
/// 10 runs in one.)
pub(crate) fn batches(runs: usize) -> Vec<usize> {
    let n = (runs / MIN_BATCH_RUNS).clamp(1, MAX_BATCHES);
    (0..n).map(|i| runs * (i + 1) / n - runs * i / n).collect()
}

/// Untimed runs before a batch's timed ones: a tenth as many, at least
/// one.
pub(crate) fn warm_up_runs(runs: usize) -> usize {
    runs.div_ceil(10).max(1)
}

/// A form being timed on one engine, between the batches it has run and
/// the ones still to come.
pub(crate) struct FormTiming {
    kind: QueryKind,
    form: Form,
    tally: Tally,
    clock: pace::Clock,
    /// The timing thread on the CPU every engine times on, until the form
    /// ends.
    _pinned: pace::Pinned,
}

/// What a form's timed runs have found so far.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    cells: u64,
    measurements: u64,
    /// The first run's cells and measurements, once checked.
    checked: Option<(u64, u64)>,
}

impl FormTiming {
    /// Begins timing query `kind` in `form`: pins the calling thread to
    /// the CPU every engine times on ([`pace::Pinned`]), then runs the
    /// machine's yardsticks ([`pace::Clock::start`]). Every batch of the
    /// form must run on this thread.
    pub(crate) fn begin((kind, form): (QueryKind, Form)) -> FormTiming {
        let pinned = pace::Pinned::to_last_cpu();
        FormTiming { kind, form, tally: Tally::default(), clock: pace::Clock::start(), _pinned: pinned }
    }

    /// The query and form being timed.
    pub(crate) fn query(&self) -> (QueryKind, Form) {
        (self.kind, self.form)
    }

    /// Runs a batch: `runs` queries with random parameters, after a tenth
    /// as many untimed ones ([`warm_up`]). Each timed run hands its cells
    /// to a sink that only counts them, then reads them again into a copy
    /// that is checked against the generator (for a query without
    /// parameters, whose runs all read the same cells, the first run's
    /// copy; later runs must count as many cells). How the machine ran
    /// over the batch is counted to the form ([`pace`]).
    pub(crate) fn run(
        &mut self,
        pattern: SchemaPattern,
        w: &Workload,
        engine: &dyn LabEngine,
        runs: usize,
        random: &mut SplitMix64,
    ) -> Result<()> {
        let query = (self.kind, self.form);
        let tally = &mut self.tally;
        self.clock.count(|| {
            warm_up(pattern, w, engine, query, warm_up_runs(runs), random)?;
            (0..runs).try_for_each(|_| tally.run_once(pattern, w, engine, query, random))
        })
    }

    /// The form's figures over every batch, once the yardsticks have run
    /// again.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if no run was timed.
    pub(crate) fn end(self) -> Result<QueryReport> {
        let FormTiming { kind, form, tally: Tally { mut latencies, cells, measurements, .. }, clock, _pinned } = self;
        let pace = clock.stop();
        let runs = latencies.len();
        if runs == 0 {
            return Err(Error::InvalidArgument(format!("{} ({}) ended with no run timed", kind.name(), form.name())));
        }
        latencies.sort();
        // The nearest-rank percentile: the sample at rank ⌈n × percent / 100⌉.
        let at = |percent: usize| latencies[(runs * percent).div_ceil(100).clamp(1, runs) - 1];
        Ok(QueryReport {
            kind,
            form,
            runs,
            p50: at(50),
            p99: at(99),
            cells_read: cells as f64 / runs as f64,
            measurements: measurements as f64 / runs as f64,
            pace: Some(pace),
        })
    }
}

impl Tally {
    /// One timed run, with the next parameters of `random`, checked.
    fn run_once(
        &mut self,
        pattern: SchemaPattern,
        w: &Workload,
        engine: &dyn LabEngine,
        (kind, form): (QueryKind, Form),
        random: &mut SplitMix64,
    ) -> Result<()> {
        let q = kind.sample(w, random.next_u64());
        let plans = q.plans(pattern, w, form);
        let (mut count, mut value_bytes) = (0u64, 0usize);
        let started = Instant::now();
        for plan in &plans {
            engine.read(plan, &mut |c| {
                count += 1;
                value_bytes += c.value.len();
            })?;
        }
        self.latencies.push(started.elapsed());
        std::hint::black_box(value_bytes);
        if let Some((first_cells, first_measurements)) = self.checked.filter(|_| kind.is_fixed()) {
            if count != first_cells {
                return Err(Error::InvalidArgument(format!(
                    "{} on {} read {count} cells, where its first run read {first_cells}",
                    kind.name(),
                    pattern.name(),
                )));
            }
            (self.cells, self.measurements) = (self.cells + count, self.measurements + first_measurements);
            return Ok(());
        }
        let mut copy = CellCollector::default();
        for plan in &plans {
            engine.read(plan, &mut |c| copy.push(c))?;
        }
        let answer = q.answer(pattern, w, form, &copy)?;
        if answer.cells_read != count {
            return Err(Error::InvalidArgument(format!(
                "{} on {} read {count} cells, then {}: {q:?}",
                kind.name(),
                pattern.name(),
                answer.cells_read
            )));
        }
        check(pattern, w, form, &q, &answer.measurements)?;
        self.cells += count;
        self.measurements += answer.measurements.len() as u64;
        self.checked = Some((count, answer.measurements.len() as u64));
        Ok(())
    }
}

/// Runs `runs` queries of `kind` in `form` untimed, with parameters of
/// their own (drawn from `random`, as the timed runs' are). Without them
/// a batch's first timed run found the machine as the other engine's
/// batch had left it, and with the fleet queries' few runs that one run
/// was the p99.
fn warm_up(
    pattern: SchemaPattern,
    w: &Workload,
    engine: &dyn LabEngine,
    (kind, form): (QueryKind, Form),
    runs: usize,
    random: &mut SplitMix64,
) -> Result<()> {
    for _ in 0..runs {
        let q = kind.sample(w, random.next_u64());
        let mut value_bytes = 0usize;
        for plan in &q.plans(pattern, w, form) {
            engine.read(plan, &mut |c| value_bytes += c.value.len())?;
        }
        std::hint::black_box(value_bytes);
    }
    Ok(())
}

fn check(pattern: SchemaPattern, w: &Workload, form: Form, q: &crate::Query, got: &[crate::Measurement]) -> Result<()> {
    let expected = q.expected(w);
    if got == expected {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{} ({}) on {} returned {} measurements, the generator says {}: {q:?}",
        q.kind().name(),
        form.name(),
        pattern.name(),
        got.len(),
        expected.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form's runs are all timed, in batches of at least ten runs (but
    /// for a form of fewer) and at most ten batches, of even sizes.
    #[test]
    fn a_forms_runs_split_into_even_batches() {
        assert_eq!(batches(1000), vec![100; 10]);
        assert_eq!(batches(50), vec![10; 5]);
        assert_eq!(batches(10), vec![10]);
        assert_eq!(batches(3), vec![3]);
        assert_eq!(batches(25), vec![12, 13]);
        for runs in 1..2000 {
            let b = batches(runs);
            assert_eq!(b.iter().sum::<usize>(), runs, "{runs}");
            assert!(b.len() <= MAX_BATCHES, "{runs}: {b:?}");
            assert!(b.len() == 1 || b.iter().all(|&n| n >= MIN_BATCH_RUNS), "{runs}: {b:?}");
            assert!(b.iter().max().unwrap() - b.iter().min().unwrap() <= 1, "{runs}: {b:?}");
        }
    }
}
