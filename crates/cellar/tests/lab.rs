//! `cellar lab`, the project's main job, end to end: the report files it
//! writes, and its refusal of an unknown pattern.

use std::process::Command;

#[test]
fn cellar_lab_writes_the_report_files() {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args([
            "lab",
            "--balloons",
            "2",
            "--days",
            "1",
            "--samples",
            "2",
            "--fleet-samples",
            "4",
            "--patterns",
            "bucket-new-cell,bucket-serialized",
            "--rounds",
            "2",
        ])
        .arg("--out")
        .arg(out.path().join("report"))
        .arg("--dir")
        .arg(out.path().join("databases"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.contains("| bucket-serialized | cellardb |"), "{stdout}");
    let report = out.path().join("report");
    let csv = std::fs::read_to_string(report.join("report.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0].split(',').collect::<Vec<_>>(), cellardb_lab::report::csv_columns());
    assert_eq!(lines.len(), 5, "a header and a line per round and pattern: {csv}");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("2 runs per point query and form, 4 per fleet query and form"), "{md}");
    // How the machine ran over each form comes back from the worker
    // processes with the form's latencies.
    let pace = std::fs::read_to_string(report.join("pace.csv")).unwrap();
    let forms = cellardb_lab::report::measured().len();
    assert_eq!(pace.lines().count(), 1 + 4 * forms, "a header and a line per form, round and pattern: {pace}");
    assert!(md.contains("## The machine during the queries"), "{md}");
    for file in ["report.md", "bytes_per_measurement.svg", "ingest.svg", "query_latency.svg"] {
        assert!(report.join(file).exists(), "{file}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--patterns", "wide-and-tall"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let no_rounds = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--rounds", "0"]).output().unwrap();
    assert_eq!(no_rounds.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_rounds.stderr).contains("--rounds"));
    let no_fleet = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--fleet-samples", "0"]).output().unwrap();
    assert_eq!(no_fleet.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_fleet.stderr).contains("--fleet-samples"));
    let no_entries = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--block-entries", "0"]).output().unwrap();
    assert_eq!(no_entries.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_entries.stderr).contains("--block-entries"));
    // The run above kept each engine's database in a worker process (this
    // program again, `--worker ENGINE:PATTERN`), each of which removed its
    // database as it ended.
    assert!(!out.path().join("databases").exists());
    let no_engine = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["lab", "--worker", "nosuch:bucket-new-cell"])
        .output()
        .unwrap();
    assert_eq!(no_engine.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_engine.stderr).contains("no engine \"nosuch\""));
}

/// `cellar lab --spec`: the report's HTML page renders in headless Chromium
/// with nothing on its console, and every figure its tables show is the
/// median over the rounds of the CSV's column for that design.
#[test]
fn a_spec_report_renders_in_chromium_and_agrees_with_its_csv() {
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("report");
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/../../specs/server-metrics.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["lab", "--spec", spec, "--entities", "12", "--rounds", "2", "--samples", "4"])
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.contains("## Recommendation") && stdout.contains("| `top-cpu-noon` |"), "{stdout}");
    for file in ["report.html", "report.md", "report.csv", "query_latency.svg", "bytes_per_value.svg", "ingest.svg"] {
        assert!(report.join(file).exists(), "{file}");
    }
    assert!(!report.join("db").exists(), "the databases are removed without --keep");
    let csv = std::fs::read_to_string(report.join("report.csv")).unwrap();
    let Some(chromium) =
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        assert!(std::env::var_os("CI").is_none(), "CI installs Chromium (.ci/run)");
        eprintln!("no Chromium here: the page was not rendered");
        return;
    };
    let page = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", out.path().join("chromium").display()))
        .arg(format!("file://{}", report.join("report.html").display()))
        .output()
        .unwrap();
    assert!(page.status.success(), "{}", String::from_utf8_lossy(&page.stderr));
    let console: Vec<&str> =
        std::str::from_utf8(&page.stderr).unwrap().lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "the page wrote to its console: {console:?}");
    let dom = String::from_utf8(page.stdout).unwrap();
    assert!(dom.contains("<svg") && dom.matches("<table>").count() >= 8, "{dom}");
    let shown = shown_figures(&dom);
    assert!(shown.len() > 50, "{} figures", shown.len());
    for (design, column, value) in shown {
        let want = csv_median(&csv, &design, &column);
        assert!(
            (value - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{design} {column}: the page shows {value}, the CSV {want}"
        );
    }
}

/// (design, CSV column, value) of every figure of the page's tables.
fn shown_figures(dom: &str) -> Vec<(String, String, f64)> {
    let row = regex::Regex::new(r"(?s)<tr>(.*?)</tr>").unwrap();
    let design = regex::Regex::new(r"<th>([^<]*)</th>").unwrap();
    let figure = regex::Regex::new(r#"data-column="([^"]+)" data-value="([^"]+)""#).unwrap();
    let mut out = Vec::new();
    for r in row.captures_iter(dom) {
        let Some(d) = design.captures(&r[1]) else { continue };
        for f in figure.captures_iter(&r[1]) {
            out.push((d[1].to_owned(), f[1].to_owned(), f[2].parse().unwrap()));
        }
    }
    out
}

/// The median over the rounds of `column` in `design`'s lines of `csv`.
fn csv_median(csv: &str, design: &str, column: &str) -> f64 {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|c| *c == column).unwrap_or_else(|| panic!("no column {column}"));
    let mut values: Vec<f64> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[0] == design)
        .map(|f| f[at].parse().unwrap())
        .collect();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { f64::midpoint(values[n / 2 - 1], values[n / 2]) }
}

/// `cellar lab --spec --endpoint`: every query of every shipped spec,
/// through `cellar serve` started here, answers exactly what the generator
/// says (the lab checks every run and stops at the first wrong answer);
/// bytes are unknown through the Data API, and said so.
#[test]
fn every_query_of_the_shipped_specs_is_answered_exactly_through_cellar_serve() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["serve", "--listen", "127.0.0.1:0", "--dir"])
        .arg(dir.path().join("served"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut line).unwrap();
    let addr = line.rsplit("BIGTABLE_EMULATOR_HOST=").next().unwrap().trim_end().trim_end_matches(')').to_owned();
    let specs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../specs");
    let runs = [
        ("balloons.toml", ["--entities", "3", "--duration", "8d"]),
        ("server-metrics.toml", ["--entities", "6", "--duration", "2h"]),
    ];
    let mut outcome = Vec::new();
    for (spec, size) in runs {
        let o = Command::new(env!("CARGO_BIN_EXE_cellar"))
            .args(["lab", "--spec", &format!("{specs}/{spec}"), "--endpoint", &addr, "--rounds", "1", "--samples", "6"])
            .args(size)
            .arg("--out")
            .arg(dir.path().join(spec))
            .output()
            .unwrap();
        outcome.push((spec, o));
    }
    let _ = server.kill();
    let _ = server.wait();
    for (spec, o) in outcome {
        assert!(o.status.success(), "{spec}: {}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8(o.stdout).unwrap();
        assert!(stdout.contains(&format!("loaded into endpoint {addr}")), "{stdout}");
        assert!(stdout.contains("| unknown |"), "bytes are unknown through an endpoint: {stdout}");
    }
    let unreachable = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["lab", "--spec", &format!("{specs}/balloons.toml"), "--endpoint", "127.0.0.1:1", "--entities", "2"])
        .arg("--out")
        .arg(dir.path().join("unreachable"))
        .output()
        .unwrap();
    assert_eq!(unreachable.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unreachable.stderr);
    assert!(
        stderr.contains("cannot reach the endpoint 127.0.0.1:1") && stderr.contains("no report was written"),
        "{stderr}"
    );
    assert!(!dir.path().join("unreachable").exists(), "nothing is written for a run that did not finish");
    // Cloud Bigtable (port 443) wants application-default credentials;
    // with none, the run stops before any call, saying so.
    let home = dir.path().join("home");
    let cloud = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["lab", "--spec", &format!("{specs}/balloons.toml"), "--entities", "2"])
        .args(["--endpoint", "bigtable.googleapis.com:443", "--project", "p", "--instance", "i"])
        .arg("--out")
        .arg(dir.path().join("cloud"))
        .env("HOME", &home)
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .env_remove("CLOUDSDK_CONFIG")
        .output()
        .unwrap();
    assert_eq!(cloud.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&cloud.stderr);
    assert!(stderr.contains("bigtable.googleapis.com:443 wants credentials and none were found"), "{stderr}");
    assert!(!dir.path().join("cloud").exists());
}

/// A spec with a mistake, an unknown design, or one that would not fit on
/// the disk is refused with one error, and nothing is written.
#[test]
fn a_bad_spec_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../specs/balloons.toml")).unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, good.replacen("cadence = \"1m\"", "cadence = \"0m\"", 1)).unwrap();
    let line = good[..good.find("cadence = \"1m\"").unwrap()].matches('\n').count() + 1;
    let lab = |spec: &std::path::Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cellar"))
            .args(["lab", "--spec"])
            .arg(spec)
            .args(extra)
            .arg("--out")
            .arg(dir.path().join("report"))
            .output()
            .unwrap()
    };
    let o = lab(&bad, &[]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(&format!("bad.toml:{line}:")) && stderr.contains("data.cadence"), "{stderr}");
    let good_path = dir.path().join("good.toml");
    std::fs::write(&good_path, &good).unwrap();
    let o = lab(&good_path, &["--designs", "bucket-new-cell,wide-and-tall"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no design \"wide-and-tall\""));
    let o = lab(&good_path, &["--entities", "4000000000"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("the spec would write about") && stderr.contains("nothing was written"), "{stderr}");
    assert!(!dir.path().join("report").exists(), "nothing was written");
}
