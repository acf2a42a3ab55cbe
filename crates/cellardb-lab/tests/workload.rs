//! The balloon workload generator against the golden values of `workload.md`.

use std::fmt::Write as _;

use cellardb_lab::workload::{SchemaPattern, Workload};
use sha2::{Digest, Sha256};

#[test]
fn first_events_match_the_golden_lines() {
    let w = Workload::default();
    let lines: Vec<String> = w.balloon_events(0).take(3).map(|e| e.golden_line()).collect();
    assert_eq!(
        lines,
        [
            "us-west2#1000#2021-03-01-0000 week09 1614556800000000 95437 11.1 58 761 08cde905159a993141183a20f905",
            "us-west2#1000#2021-03-01-0001 week09 1614556860000000 95392 11.3 59 760 08a0e90515cdcc3441183b20f805",
            "us-west2#1000#2021-03-01-0002 week09 1614556920000000 95330 11.1 60 760 08e2e805159a993141183c20f805",
        ]
    );
    assert_eq!(
        w.balloon_events(1).next().unwrap().golden_line(),
        "asia-south2#1001#2021-03-01-0000 week09 1614556800000000 95105 7.2 46 635 0881e705156666e640182e20fb04"
    );
}

fn digest(w: Workload) -> String {
    let mut h = Sha256::new();
    for b in 0..w.balloons {
        for e in w.balloon_events(b) {
            h.update(e.golden_line().as_bytes());
            h.update(b"\n");
        }
    }
    h.finalize().iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

#[test]
fn whole_data_sets_match_the_reference_digests() {
    assert_eq!(digest(Workload::new(3, 1)), "ca5e85eecb2306b5597cbe22d85394e0d2902303ef4ef8244bf4ae63b839fc94");
    assert_eq!(digest(Workload::new(10, 7)), "16ab45d5251408dbc57ff26230b55459ccfd8d86517123133fcb343efb2f706a");
}

#[test]
fn arrival_order_is_minute_by_minute_and_agrees_with_balloon_order() {
    let w = Workload::new(5, 1);
    let arrival: Vec<_> = w.events().collect();
    assert_eq!(arrival.len() as u64, w.events_count());
    assert_eq!((arrival[0].balloon, arrival[0].minute), (0, 0));
    assert_eq!((arrival[1].balloon, arrival[1].minute), (1, 0));
    assert_eq!((arrival[5].balloon, arrival[5].minute), (0, 1));
    for b in 0..5 {
        let by_balloon: Vec<_> = w.balloon_events(b).collect();
        let from_arrival: Vec<_> = arrival.iter().filter(|e| e.balloon == b).copied().collect();
        assert_eq!(by_balloon, from_arrival);
    }
}

#[test]
fn patterns_write_the_keys_and_cells_of_workload_md() {
    let e = Workload::default().balloon_events(0).nth(1).unwrap();
    let rows =
        |p: SchemaPattern| -> Vec<(String, usize)> { p.mutations(&e).into_iter().map(|(k, m)| (k, m.len())).collect() };
    assert_eq!(
        rows(SchemaPattern::BucketNewColumn),
        [
            ("us-west2#1000#pressure#week09".into(), 1),
            ("us-west2#1000#temperature#week09".into(), 1),
            ("us-west2#1000#humidity#week09".into(), 1),
            ("us-west2#1000#altitude#week09".into(), 1)
        ]
    );
    assert_eq!(rows(SchemaPattern::BucketNewCell), [("us-west2#1000#week09".into(), 4)]);
    assert_eq!(rows(SchemaPattern::SingleTsSerialized), [("us-west2#1000#2021-03-01-0001".into(), 1)]);
    assert_eq!(rows(SchemaPattern::SingleTsUnserialized), [("us-west2#1000#2021-03-01-0001".into(), 4)]);
    let cells = &SchemaPattern::BucketNewCell.mutations(&e)[0].1;
    assert_eq!(cells[1], cellardb::Mutation::set_cell("measurements", "temperature", 1_614_556_860_000_000, "11.3"));
    let column = &SchemaPattern::BucketNewColumn.mutations(&e)[0].1[0];
    assert_eq!(column, &cellardb::Mutation::set_cell("m", "95392", 1_614_556_860_000_000, ""));
    // The guide's combination: an hour's row, a minute's column, the blob.
    let hourly = SchemaPattern::BucketSerialized.mutations(&e);
    assert_eq!(hourly[0].0, "us-west2#1000#2021-03-01-00");
    assert_eq!(hourly[0].1, [cellardb::Mutation::set_cell("measurements", "01", 1_614_556_860_000_000, e.blob())]);
}

#[test]
fn a_serialized_event_decodes_to_its_values() {
    let w = Workload::new(40, 2);
    let mut negative = 0;
    for e in w.events() {
        let values = cellardb_lab::workload::decode_blob(&e.blob()).expect("decodes");
        assert_eq!(values, e.values(), "{}", e.golden_line());
        let texts: Vec<String> = (0..4).map(|m| cellardb_lab::workload::metric_text(m, values[m])).collect();
        assert_eq!(texts, (0..4).map(|m| e.metric_text(m)).collect::<Vec<_>>());
        negative += usize::from(e.temperature < 0);
    }
    assert!(negative > 0, "the data set has negative temperatures to decode");
    assert_eq!(cellardb_lab::workload::decode_blob(b"\x08\x01"), None, "a cut message");
}
