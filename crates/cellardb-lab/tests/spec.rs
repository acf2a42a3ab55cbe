//! Schema specs: the shipped ones parse, round-trip and (the balloon spec)
//! reproduce `docs/workload.md` to the byte; every query of every shipped
//! spec is answered exactly by every design; every kind of mistake in a
//! spec is one error naming the file, line and field.

use std::fmt::Write as _;

use cellardb_lab::design::{RowWriter, encode};
use cellardb_lab::generator::{Arrivals, Value};
use cellardb_lab::measure::{SpecConfig, open_local, run_spec};
use cellardb_lab::spec::{BALLOONS, SERVER_METRICS, Spec, SpecFile};
use cellardb_lab::workload::{SchemaPattern, Workload};
use sha2::{Digest, Sha256};

const SHIPPED: [(&str, &str); 2] = [("specs/balloons.toml", BALLOONS), ("specs/server-metrics.toml", SERVER_METRICS)];

#[test]
fn shipped_specs_parse_and_round_trip() {
    for (file, text) in SHIPPED {
        let spec = Spec::parse(text, file).unwrap_or_else(|e| panic!("{e}"));
        let raw: SpecFile = toml::from_str(text).unwrap();
        let written = toml::to_string(&raw).unwrap();
        let again = Spec::parse(&written, "written").unwrap_or_else(|e| panic!("{e}\n{written}"));
        assert_eq!(spec, again, "{file} written out and read back");
        assert!(spec.queries.len() >= 5 && spec.designs.len() >= 4, "{file}");
    }
}

/// The golden line of `docs/workload.md` for one event of the balloon spec:
/// the single-ts key, the week, the timestamp, the values as text and the
/// serialized event in hex, all made by the spec's designs.
fn golden_line(spec: &Spec, e: &cellardb_lab::generator::Event) -> String {
    let design = |name: &str| spec.design(name).unwrap();
    let key = RowWriter::new(spec, design("single-ts-serialized")).rows(e)[0].0.clone();
    let week = RowWriter::new(spec, design("bucket-new-cell")).rows(e)[0].0.rsplit('#').next().unwrap().to_owned();
    let cells = RowWriter::new(spec, design("single-ts-unserialized")).rows(e).remove(0).1;
    let values: Vec<String> = cells
        .iter()
        .map(|m| match m {
            cellardb::Mutation::SetCell { value, .. } => String::from_utf8(value.to_vec()).unwrap(),
            _ => unreachable!("the lab only sets cells"),
        })
        .collect();
    let mut blob = String::new();
    for b in encode(spec, cellardb_lab::spec::Encoding::Protobuf, e) {
        let _ = write!(blob, "{b:02x}");
    }
    format!("{key} {week} {} {} {blob}", e.time, values.join(" "))
}

fn balloon_digest(balloons: u32, days: i64) -> String {
    let spec = Spec::balloons().resized(Some(balloons), Some(days * 86_400_000_000));
    let mut per_balloon: Vec<Vec<String>> = vec![Vec::new(); balloons as usize];
    let mut events = Arrivals::new(&spec);
    while let Some(e) = events.next() {
        per_balloon[e.entity as usize].push(golden_line(&spec, e));
    }
    let mut h = Sha256::new();
    for line in per_balloon.iter().flatten() {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

#[test]
fn the_balloon_spec_reproduces_the_workloads_golden_lines_and_digests() {
    let spec = Spec::balloons();
    let mut events = Arrivals::new(&spec);
    let first = events.next().unwrap().clone();
    assert_eq!(
        golden_line(&spec, &first),
        "us-west2#1000#2021-03-01-0000 week09 1614556800000000 95437 11.1 58 761 08cde905159a993141183a20f905"
    );
    let second = events.next().unwrap();
    assert_eq!(
        golden_line(&spec, second),
        "asia-south2#1001#2021-03-01-0000 week09 1614556800000000 95105 7.2 46 635 0881e705156666e640182e20fb04"
    );
    assert_eq!(balloon_digest(3, 1), "ca5e85eecb2306b5597cbe22d85394e0d2902303ef4ef8244bf4ae63b839fc94");
    assert_eq!(balloon_digest(10, 7), "16ab45d5251408dbc57ff26230b55459ccfd8d86517123133fcb343efb2f706a");
}

/// Each design of the balloon spec writes, event for event, the rows and
/// cells of its schema pattern: the same bytes on disk follow.
#[test]
fn the_balloon_designs_write_the_cells_of_the_schema_patterns() {
    let spec = Spec::balloons().resized(Some(9), Some(2 * 86_400_000_000));
    let reference: Vec<_> = Workload::new(9, 2).events().collect();
    for pattern in SchemaPattern::ALL {
        let design = spec.design(pattern.name()).unwrap();
        let mut writer = RowWriter::new(&spec, design);
        let mut events = Arrivals::new(&spec);
        let mut n = 0;
        while let Some(e) = events.next() {
            assert!(e.values.iter().all(|v| matches!(v, Value::Int(_))));
            assert_eq!(writer.rows(e), pattern.mutations(&reference[n]), "{} event {n}", pattern.name());
            n += 1;
        }
        assert_eq!(n, reference.len());
    }
}

/// Runs every design and query of `spec` once, small, on cellardb: every
/// answer is checked against the generator inside the run, and each query
/// across every entity runs `fleet_samples` times if given.
fn answers_exactly(spec: Spec, fleet_samples: Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let config = SpecConfig {
        spec,
        options: cellardb::Options::default(),
        dir: dir.path().to_path_buf(),
        samples: 20,
        fleet_samples,
        seed: 5,
        rounds: 1,
        keep: false,
    };
    let open = open_local(&config);
    let reports = run_spec(&config, "cellardb", &open, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), config.spec.designs.len());
    for r in &reports {
        for q in &config.spec.queries {
            let figures = r.query(&q.name, cellardb_lab::plan::Form::Natural).unwrap();
            assert!(figures.values_returned > 0.0, "{} {} returned nothing", r.design, q.name);
            let runs = if q.kind.is_cross_entity() { fleet_samples.unwrap_or(3) } else { 20 };
            assert_eq!(figures.runs, runs, "{} {}", r.design, q.name);
        }
        assert!(r.bytes.unwrap() > 0);
    }
}

#[test]
fn every_query_of_the_balloon_spec_is_answered_exactly() {
    answers_exactly(Spec::balloons().resized(Some(3), Some(8 * 86_400_000_000)), None);
}

#[test]
fn every_query_of_the_server_metrics_spec_is_answered_exactly() {
    answers_exactly(Spec::parse(SERVER_METRICS, "server-metrics").unwrap().resized(Some(30), None), Some(2));
}

/// The balloon spec with `from` replaced by `to` (once), the error it
/// gives, and the line `to` is on.
fn mistake(from: &str, to: &str) -> (cellardb_lab::spec::SpecError, usize) {
    assert!(BALLOONS.contains(from), "{from}");
    let text = BALLOONS.replacen(from, to, 1);
    let at = text.find(to).unwrap();
    let line = text[..at].matches('\n').count() + 1;
    let e = Spec::parse(&text, "bad.toml").expect_err(to);
    assert_eq!(e.file, "bad.toml");
    assert!(e.to_string().starts_with(&format!("bad.toml:{}:", e.line)), "{e}");
    (e, line)
}

#[test]
fn every_kind_of_mistake_is_one_error_naming_the_file_line_and_field() {
    // TOML that does not parse.
    let (e, line) = mistake("cadence = \"1m\"", "cadence = \"1m");
    assert_eq!(e.line, line, "{e}");
    // An unknown field.
    let (e, line) = mistake("step = 100\n", "stepp = 100\n");
    assert_eq!(e.line, line, "{e}");
    assert!(e.message.contains("stepp"), "{e}");
    // A template field that does not exist.
    let (e, line) =
        mistake("row_key = \"{location}#{id}#{time:week%V}\"", "row_key = \"{location}#{idd}#{time:week%V}\"");
    assert_eq!((e.line, e.field.as_str()), (line, "designs[1].row_key"), "{e}");
    assert!(e.message.contains("{idd} does not exist") && e.message.contains("{location}"), "{e}");
    // A zero or negative cadence.
    for bad in ["cadence = \"0s\"", "cadence = \"-1m\""] {
        let (e, line) = mistake("cadence = \"1m\"", bad);
        assert_eq!((e.line, e.field.as_str()), (line, "data.cadence"), "{e}");
    }
    // A bucket that does not divide the day.
    let (e, line) = mistake("bucket = \"1h\"", "bucket = \"7h\"");
    assert_eq!((e.line, e.field.as_str()), (line, "designs[4].bucket"), "{e}");
    assert!(e.message.contains("does not divide the day"), "{e}");
    // A query a design cannot answer: the series after the time in the
    // key, so the newest event is not one row.
    let (e, line) = mistake(
        "row_key = \"{location}#{id}#{series}#{time:week%V}\"",
        "row_key = \"{location}#{id}#{time:%Y-%m-%d-%H%M}#{series}\"\nbucket_was = 1",
    );
    assert_eq!(e.line, line + 1, "an unknown field is named first: {e}");
    let text = BALLOONS.replacen(
        "row_key = \"{location}#{id}#{series}#{time:week%V}\"\nbucket = \"1w\"",
        "row_key = \"{location}#{id}#{time:%Y-%m-%d-%H%M}#{series}\"",
        1,
    );
    let e = Spec::parse(&text, "bad.toml").unwrap_err();
    assert_eq!(e.field, "queries[2].kind", "{e}");
    assert!(e.message.contains("cannot answer query \"latest\""), "{e}");
    assert_eq!(e.line, text[..text.find("kind = \"latest\"").unwrap()].matches('\n').count() + 1);
    // A time format that merges rows: a day's format on hourly buckets.
    let (e, line) =
        mistake("row_key = \"{location}#{id}#{time:%Y-%m-%d-%H}\"", "row_key = \"{location}#{id}#{time:%Y-%m-%d}\"");
    assert_eq!((e.line, e.field.as_str()), (line, "designs[4].row_key"), "{e}");
    // A key that does not name the entity.
    let (e, _) =
        mistake("row_key = \"{location}#{id}#{time:%Y-%m-%d-%H}\"", "row_key = \"{location}#{time:%Y-%m-%d-%H}\"");
    assert!(e.message.contains("cannot answer") || e.message.contains("entity"), "{e}");
    // Values that share a column.
    let (e, _) = mistake(
        "qualifier = \"{series}\"\nfamilies = [{ name = \"measurements\" }]",
        "qualifier = \"m\"\nfamilies = [{ name = \"measurements\" }]",
    );
    assert!(e.message.contains("share a column"), "{e}");
    // A bad GC rule, an unknown shape, an unknown series in a query.
    let (e, _) = mistake("families = [{ name = \"m\" }]", "families = [{ name = \"m\", gc = \"maxversions=0\" }]");
    assert!(e.message.contains("maxversions"), "{e}");
    let (e, line) = mistake("shape = \"random-walk\"", "shape = \"brownian\"");
    assert_eq!((e.line, e.field.as_str()), (line, "data.series[0].shape"), "{e}");
    let (e, _) = mistake("window = \"1h\"", "window = \"1h\"\nseries = \"wind\"");
    assert!(e.message.contains("no series is named \"wind\""), "{e}");
    let missing = Spec::from_file(std::path::Path::new("no/such/spec.toml")).unwrap_err();
    assert!(missing.to_string().starts_with("no/such/spec.toml: cannot read it"), "{missing}");
}

/// A spec resized past what its designs handle is caught: the week's
/// number stops sorting at the turn of the year (so the newest row is no
/// longer the last), and repeats after a year.
#[test]
fn a_run_longer_than_a_design_handles_is_caught() {
    let days = |n: i64| Spec::balloons().resized(Some(3), Some(n * 86_400_000_000)).check_size();
    assert_eq!(days(300), Ok(()), "2021-03-01 to 2021-12-26: week09 to week51");
    let e = days(320).unwrap_err();
    assert!(e.contains("bucket-new-column") && e.contains("does not sort"), "{e}");
    let e = days(400).unwrap_err();
    assert!(e.contains("bucket-new-column") && e.contains("week%V"), "{e}");
}

/// Hex ids drawn per entity must not repeat: too few digits for the
/// entities is refused.
#[test]
fn hex_ids_too_short_for_the_entities_are_refused() {
    let spec = |digits: u32, count: u32| {
        SERVER_METRICS
            .replacen("fields.host = { number = 0, width = 5 }", &format!("fields.host = {{ hex = {digits} }}"), 1)
            .replacen("count = 2000", &format!("count = {count}"), 1)
    };
    assert!(Spec::parse(&spec(8, 2000), "hex.toml").is_ok());
    let e = Spec::parse(&spec(2, 2000), "hex.toml").unwrap_err();
    assert!(e.message.contains("same id") && e.field == "data.entities", "{e}");
}

/// Late arrivals come after events of later instants, never later than
/// `by` allows, each event once; gaps drop values without moving the
/// others (the walk goes on under a gap).
#[test]
fn late_arrivals_and_gaps_keep_every_value_where_the_generator_puts_it() {
    use cellardb_lab::generator::walk_entity;
    let spec = Spec::parse(SERVER_METRICS, "server-metrics").unwrap().resized(Some(40), Some(20 * 60_000_000));
    let late = spec.data.late.unwrap();
    let (mut arrived, mut newest, mut late_seen) = (Vec::new(), i64::MIN, 0);
    let mut events = Arrivals::new(&spec);
    while let Some(e) = events.next() {
        if e.time < newest {
            late_seen += 1;
            assert!(newest - e.time <= late.by, "{} µs late, more than {}", newest - e.time, late.by);
        }
        newest = newest.max(e.time);
        arrived.push(e.clone());
    }
    assert!(late_seen > 0, "the spec's late events arrive late");
    let mut by_time = Vec::new();
    for entity in 0..spec.data.entities.count {
        walk_entity(&spec, entity, spec.data.end, &mut |e| by_time.push(e.clone()));
    }
    let key = |e: &cellardb_lab::generator::Event| (e.entity, e.time);
    arrived.sort_by_key(key);
    by_time.sort_by_key(key);
    assert_eq!(arrived, by_time, "every event once, the same values in arrival order and in time order");

    let mut no_gaps = spec.clone();
    no_gaps.data.series[0].gaps = 0.0;
    let (mut gaps, mut values) = (0, 0);
    for entity in 0..spec.data.entities.count {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        walk_entity(&spec, entity, spec.data.end, &mut |e| with.push(e.clone()));
        walk_entity(&no_gaps, entity, spec.data.end, &mut |e| without.push(e.clone()));
        assert_eq!(with.len(), without.len());
        for (a, b) in with.iter().zip(&without) {
            for (x, y) in a.values.iter().zip(&b.values) {
                values += 1;
                if *x == Value::Absent && *y != Value::Absent {
                    gaps += 1;
                } else {
                    assert_eq!(x, y, "a gap moved a value");
                }
            }
        }
    }
    assert!(gaps > 0 && gaps * 100 < values, "{gaps} gaps in {values} values");
}
