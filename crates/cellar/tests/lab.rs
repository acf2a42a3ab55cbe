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
    for file in ["report.md", "bytes_per_measurement.svg", "ingest.svg", "query_latency.svg"] {
        assert!(report.join(file).exists(), "{file}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--patterns", "wide-and-tall"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let no_rounds = Command::new(env!("CARGO_BIN_EXE_cellar")).args(["lab", "--rounds", "0"]).output().unwrap();
    assert_eq!(no_rounds.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_rounds.stderr).contains("--rounds"));
}
