//! An engine's ingest of the balloon workload, in turns.
//!
//! A round loads every engine with the same events. Loaded one engine
//! after the other, a slow spell of the machine (a virtual machine's CPUs
//! have them) can fall on one engine's ingest and not the other's, and
//! the ratio of their rates moves with it. So a round hands
//! out the ingest in turns ([`turn_ends`]): each engine writes the next
//! slice of the events, then the next engine writes the same slice, the
//! engines' order alternating from one turn to the next. An [`Ingest`]
//! carries an engine's place in the events and its clock from one of its
//! turns to the next.

use std::iter::Peekable;
use std::time::{Duration, Instant};

use crate::design::logical_size;
use crate::run::{LabEngine, Progress};
use crate::workload::{Event, SchemaPattern, Workload};
use cellardb::{Error, Result};

/// Turns a round's ingest is split into (fewer when there are fewer
/// events): at 100 balloons × 7 days, 10,080 events a turn.
pub(crate) const TURNS: u64 = 100;

/// Events made ahead of being written, off the ingest's clock.
const BATCH: usize = 4096;

/// Where each turn of an ingest of `total` events ends: the index of the
/// first event it leaves for the next turn. The ends rise, the last is
/// `total`, and each turn has at least one event (there are at most
/// [`TURNS`] of them, sizes within one of each other).
pub(crate) fn turn_ends(total: u64) -> Vec<u64> {
    let turns = total.clamp(1, TURNS);
    (1..=turns).map(|t| total * t / turns).collect()
}

/// An engine's ingest between its turns: the events it has still to
/// write, and what it has written so far.
pub(crate) struct Ingest {
    /// The events not yet written, each with its index.
    events: Peekable<std::iter::Zip<std::ops::RangeFrom<u64>, Box<dyn Iterator<Item = Event>>>>,
    /// Events in the workload.
    total: u64,
    /// Events in the first tenth, and in the last.
    tenth: u64,
    /// Logical bytes written so far (`workload.md`'s definition).
    logical_bytes: u64,
    /// Wall time of the writes so far.
    elapsed: Duration,
    /// Wall time of the writes when the first tenth was written.
    first_tenth: Option<Duration>,
    /// Wall time of the writes when the last tenth began.
    last_tenth_from: Option<Duration>,
}

/// What an ingest took, once every event is written.
pub(crate) struct IngestFigures {
    /// Events written.
    pub(crate) events: u64,
    /// Logical bytes written.
    pub(crate) logical_bytes: u64,
    /// Wall time of the writes of every event.
    pub(crate) elapsed: Duration,
    /// Wall time of the writes of the first tenth of the events, and of
    /// the last tenth.
    pub(crate) tenths: (Duration, Duration),
}

impl Ingest {
    /// An ingest of `workload`'s events, none written.
    pub(crate) fn new(workload: &Workload) -> Ingest {
        let total = workload.events_count();
        let events: Box<dyn Iterator<Item = Event>> = Box::new(workload.events());
        Ingest {
            events: (0u64..).zip(events).peekable(),
            total,
            tenth: (total / 10).max(1),
            logical_bytes: 0,
            elapsed: Duration::ZERO,
            first_tenth: None,
            last_tenth_from: None,
        }
    }

    /// Events written so far: the index of the next one.
    pub(crate) fn written(&mut self) -> u64 {
        self.events.peek().map_or(self.total, |&(i, _)| i)
    }

    /// Writes to `engine`, in `pattern`, the events not yet written whose
    /// index is below `until`. Events are made a batch at a time with the
    /// clock stopped, and written with it running: the generator's time
    /// (a quarter of the ingest's, on one-cell rows) is neither engine's.
    ///
    /// # Errors
    /// The engine's.
    pub(crate) fn write_until(
        &mut self,
        engine: &mut dyn LabEngine,
        pattern: SchemaPattern,
        until: u64,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        let last_tenth_start = self.total.saturating_sub(self.tenth);
        let mut batch = Vec::with_capacity(BATCH);
        while let Some(&(i, _)) = self.events.peek().filter(|&&(i, _)| i < until) {
            if i == self.tenth {
                self.first_tenth = Some(self.elapsed);
            }
            if i == last_tenth_start {
                self.last_tenth_from = Some(self.elapsed);
            }
            // A batch ends where a tenth does, so the tenths are timed exactly.
            let end = [self.tenth, last_tenth_start, until].into_iter().filter(|&b| b > i).min().unwrap_or(until);
            let len = usize::try_from((end - i).min(BATCH as u64)).unwrap_or(BATCH);
            let logical_bytes = &mut self.logical_bytes;
            batch.extend(self.events.by_ref().take(len).map(|(_, e)| {
                let rows = pattern.mutations(&e);
                *logical_bytes += logical_size(&rows);
                rows
            }));
            let started = Instant::now();
            for rows in batch.drain(..) {
                engine.write_event(rows)?;
            }
            self.elapsed += started.elapsed();
            progress(Progress { pattern, stage: "ingest", done: i, total: self.total });
        }
        Ok(())
    }

    /// What the ingest took, once every event is written.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if events are left to write.
    pub(crate) fn figures(&mut self) -> Result<IngestFigures> {
        let written = self.written();
        if written < self.total {
            return Err(Error::InvalidArgument(format!("the ingest ended after {written} of {} events", self.total)));
        }
        let elapsed = self.elapsed;
        let tenths =
            (self.first_tenth.unwrap_or(elapsed), elapsed.saturating_sub(self.last_tenth_from.unwrap_or_default()));
        Ok(IngestFigures { events: self.total, logical_bytes: self.logical_bytes, elapsed, tenths })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event falls in exactly one turn, each turn has some, and
    /// their sizes are within one of each other.
    #[test]
    fn the_turns_split_the_events_evenly() {
        for total in [1, 7, 99, 100, 101, 2880, 1_008_000, 10_080_000] {
            let ends = turn_ends(total);
            assert_eq!(ends.len() as u64, total.min(TURNS), "{total}");
            assert_eq!(ends.last(), Some(&total));
            let sizes: Vec<u64> = std::iter::once(0)
                .chain(ends.iter().copied())
                .collect::<Vec<_>>()
                .windows(2)
                .map(|w| w[1] - w[0])
                .collect();
            let (least, most) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(*least >= 1 && most - least <= 1, "{total}: {least}..{most}");
        }
    }
}
