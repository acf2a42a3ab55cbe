//! The queries both lab tests (cellardb's and RocksDB's) check.

use cellardb_lab::workload::Workload;
use cellardb_lab::{Form, Query};

/// Two balloons over eight days: two ISO weeks, the second one day long.
pub const WORKLOAD: Workload = Workload { balloons: 2, days: 8, seed: 42 };

/// Every query kind, across the week boundary and at both ends of the data.
pub fn queries() -> Vec<Query> {
    let last_hour = WORKLOAD.minutes() / 60 - 1;
    let mut qs = vec![
        Query::BalloonWeek { balloon: 0, week: 0 },
        Query::BalloonWeek { balloon: 1, week: 1 },
        Query::Latest { balloon: 0 },
        Query::Latest { balloon: 1 },
        Query::FleetMinute { minute: 0 },
        Query::FleetMinute { minute: 7 * 1440 + 59 },
        Query::FleetMinute { minute: WORKLOAD.minutes() - 1 },
        Query::FleetScan { minute: 7 * 1440 + 59 },
    ];
    for (metric, hour) in [(0, 0), (1, 30), (2, 7 * 24), (3, last_hour)] {
        qs.push(Query::MetricHour { balloon: 1, metric, hour });
    }
    qs
}

/// Every query of [`queries`] in each of its forms.
pub fn queries_and_forms() -> Vec<(Query, Form)> {
    queries().into_iter().flat_map(|q| q.kind().forms().iter().map(move |&f| (q, f))).collect()
}
