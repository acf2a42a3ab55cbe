//! Garbage-collection rules: which cells of a column a family keeps.
//!
//! The decision is a pure function of a cell's position among the column's
//! live versions (newest first, after deletes) and its age, so reads and
//! compaction apply exactly the same rule and results never depend on
//! whether compaction has run.

use std::time::Duration;

use crate::{Error, Result};

/// Bigtable's four GC rules, nestable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum GcRule {
    /// Keep every cell.
    #[default]
    None,
    /// Keep the newest `n` versions of each column.
    MaxVersions(u32),
    /// Keep cells whose timestamp is at most this old.
    MaxAge(Duration),
    /// Collect a cell when any rule collects it.
    Union(Vec<GcRule>),
    /// Collect a cell when every rule collects it.
    Intersection(Vec<GcRule>),
}

impl GcRule {
    /// Keeps everything.
    pub fn none() -> Self {
        GcRule::None
    }

    /// Keeps the newest `n` versions of each column.
    pub fn max_versions(n: u32) -> Self {
        GcRule::MaxVersions(n)
    }

    /// Keeps cells no older than `age` (by their timestamp, against the clock).
    ///
    /// A cell is collected as soon as its timestamp is older than `age`,
    /// and reads never return a collected cell, whether or not compaction
    /// has run. So a cell *written* with a timestamp already older than
    /// `age` is accepted and never read: the write succeeds, as in
    /// Bigtable, and [`crate::Stats::cells_expired_at_write`] counts it.
    pub fn max_age(age: Duration) -> Self {
        GcRule::MaxAge(age)
    }

    /// Collects what any of `rules` collects.
    pub fn union(rules: impl IntoIterator<Item = GcRule>) -> Self {
        GcRule::Union(rules.into_iter().collect())
    }

    /// Collects what all of `rules` collect.
    pub fn intersection(rules: impl IntoIterator<Item = GcRule>) -> Self {
        GcRule::Intersection(rules.into_iter().collect())
    }

    /// The rule's `max_versions` limit, if it has one (a valid rule has at
    /// most one).
    pub(crate) fn version_limit(&self) -> Option<u32> {
        match self {
            GcRule::MaxVersions(n) => Some(*n),
            GcRule::None | GcRule::MaxAge(_) => None,
            GcRule::Union(rules) | GcRule::Intersection(rules) => rules.iter().find_map(GcRule::version_limit),
        }
    }

    fn version_limits(&self, out: &mut Vec<u32>) {
        match self {
            GcRule::MaxVersions(n) => out.push(*n),
            GcRule::None | GcRule::MaxAge(_) => {}
            GcRule::Union(rules) | GcRule::Intersection(rules) => rules.iter().for_each(|r| r.version_limits(out)),
        }
    }

    /// Whether a cell is collected at wall-clock time `now` (µs), given its
    /// timestamp `ts` and `version`, which `max_versions(n)` compares with
    /// `n` (reads pass 0 for a cell within its column's newest live cells,
    /// `usize::MAX` for one counted out: see `read::assemble`).
    pub(crate) fn collects(&self, version: usize, ts: i64, now: i64) -> bool {
        match self {
            GcRule::None => false,
            GcRule::MaxVersions(n) => version >= *n as usize,
            GcRule::MaxAge(age) => {
                let age = i64::try_from(age.as_micros()).unwrap_or(i64::MAX);
                ts < now.saturating_sub(age)
            }
            GcRule::Union(rules) => rules.iter().any(|r| r.collects(version, ts, now)),
            GcRule::Intersection(rules) => rules.iter().all(|r| r.collects(version, ts, now)),
        }
    }

    /// Checks the rule: at least one version, a whole number of milliseconds
    /// of age, no empty union or intersection, and nesting at most
    /// [`GcRule::MAX_DEPTH`] deep (the manifest's decoder refuses deeper).
    pub(crate) fn validate(&self) -> Result<()> {
        self.validate_at(1)?;
        let mut limits = Vec::new();
        self.version_limits(&mut limits);
        limits.sort_unstable();
        limits.dedup();
        if limits.len() > 1 {
            return Err(Error::InvalidArgument(format!(
                "GC rule: names {} different max_versions limits ({limits:?}); a rule may name one \
                 (a union of limits is the smallest, an intersection the largest)",
                limits.len()
            )));
        }
        Ok(())
    }

    /// Deepest nesting of unions and intersections accepted.
    pub const MAX_DEPTH: usize = 32;

    fn validate_at(&self, depth: usize) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidArgument(format!("GC rule: {what}")));
        if depth > GcRule::MAX_DEPTH {
            return bad(&format!("nested more than {} deep", GcRule::MAX_DEPTH));
        }
        match self {
            GcRule::MaxVersions(0) => bad("max_versions must be at least 1"),
            GcRule::MaxAge(age) if age.is_zero() || age.subsec_micros() % 1000 != 0 => {
                bad("max_age must be a positive whole number of milliseconds")
            }
            GcRule::None | GcRule::MaxVersions(_) | GcRule::MaxAge(_) => Ok(()),
            GcRule::Union(rules) | GcRule::Intersection(rules) if rules.is_empty() => {
                bad("a union or intersection needs at least one rule")
            }
            GcRule::Union(rules) | GcRule::Intersection(rules) => {
                rules.iter().try_for_each(|r| r.validate_at(depth + 1))
            }
        }
    }
}

impl std::fmt::Display for GcRule {
    /// `cbt`'s notation: `versions() > 3 || age() > 7d`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |f: &mut std::fmt::Formatter<'_>, rules: &[GcRule], op: &str| {
            for (i, r) in rules.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                write!(f, "({r})")?;
            }
            Ok(())
        };
        match self {
            GcRule::None => f.write_str("<never>"),
            GcRule::MaxVersions(n) => write!(f, "versions() > {n}"),
            GcRule::MaxAge(age) => write!(f, "age() > {}ms", age.as_millis()),
            GcRule::Union(rules) => join(f, rules, "||"),
            GcRule::Intersection(rules) => join(f, rules, "&&"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn max_versions_counts_from_the_newest() {
        let r = GcRule::max_versions(2);
        assert!(!r.collects(0, 0, 0) && !r.collects(1, 0, 0) && r.collects(2, 0, 0));
    }

    #[test]
    fn max_age_collects_cells_older_than_the_limit() {
        let r = GcRule::max_age(Duration::from_secs(3600));
        let now = 10 * HOUR;
        assert!(r.collects(0, now - 2 * HOUR, now));
        assert!(!r.collects(0, now - HOUR / 2, now));
    }

    #[test]
    fn union_collects_on_any_and_intersection_on_all() {
        let now = 10 * HOUR;
        let old = now - 2 * HOUR;
        let parts = [GcRule::max_versions(1), GcRule::max_age(Duration::from_secs(3600))];
        let union = GcRule::union(parts.clone());
        let inter = GcRule::intersection(parts);
        assert!(union.collects(1, now, now) && union.collects(0, old, now));
        assert!(!inter.collects(1, now, now) && !inter.collects(0, old, now));
        assert!(inter.collects(1, old, now));
    }

    #[test]
    fn nested_rules_follow_their_structure() {
        let now = 10 * HOUR;
        let r = GcRule::union([
            GcRule::max_versions(5),
            GcRule::intersection([GcRule::max_versions(1), GcRule::max_age(Duration::from_secs(3600))]),
        ]);
        assert!(r.collects(5, now, now));
        assert!(r.collects(1, now - 2 * HOUR, now));
        assert!(!r.collects(1, now, now));
    }

    #[test]
    fn degenerate_rules_are_rejected() {
        assert!(GcRule::max_versions(0).validate().is_err());
        assert!(GcRule::max_age(Duration::ZERO).validate().is_err());
        assert!(GcRule::union([]).validate().is_err());
        assert!(GcRule::union([GcRule::max_versions(1)]).validate().is_ok());
        let two = GcRule::union([GcRule::max_versions(5), GcRule::intersection([GcRule::max_versions(1)])]);
        assert!(two.validate().unwrap_err().to_string().contains("one"));
        let same = GcRule::union([GcRule::max_versions(2), GcRule::intersection([GcRule::max_versions(2)])]);
        assert!(same.validate().is_ok());
        let nest = |depth: usize| (1..depth).fold(GcRule::max_versions(1), |r, _| GcRule::union([r]));
        assert!(nest(GcRule::MAX_DEPTH).validate().is_ok());
        assert!(nest(GcRule::MAX_DEPTH + 1).validate().is_err());
    }
}
