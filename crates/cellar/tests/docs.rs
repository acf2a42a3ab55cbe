//! `docs/tools.md` cannot go stale: this test builds the databases the doc
//! describes, runs every `$ ...` command of its ```` ```text ```` blocks,
//! and compares what the commands print with the block. When they differ it
//! fails with a diff; `CELLAR_BLESS=1 cargo test -p cellar --test docs`
//! writes the output into the doc instead (then reread the prose around
//! each block that changed: numbers it quotes must match).
//!
//! The databases are built in a temporary directory, each command's working
//! directory, with the steps of `crates/cellardb-lab/examples/load.rs`:
//! `balloons`, the workload at `BALLOONS` × `DAYS` (smaller than the
//! example's, so that a debug build stays quick) in every schema pattern,
//! each table flushed and fully compacted; `crashed`, 2 balloons × 1 day
//! left in the log by a writer that never flushed; and `damaged.sst`, the
//! `bucket-new-cell` SSTable with one bit flipped in block 1 and one in
//! block 3. Everything in them is deterministic but two things, masked as
//! the doc says: an SSTable's creation time, and the write speeds of
//! `dump sst --recompress`. `CELLAR_DOCS_DIR=DIR` builds them in `DIR`
//! (which must not exist) and keeps them, to try commands by hand.
//!
//! A command runs in `sh` with `cellar` first on the `PATH`, so blocks may
//! pipe to `head` and `tail`. A block shows each command's standard output,
//! then its standard error, then `(exit code N)` if it failed.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;

use cellardb::{Db, GcRule};
use cellardb_lab::workload::{SchemaPattern, Workload};

/// The scale of `balloons`; `docs/tools.md` quotes it.
const BALLOONS: u32 = 4;
const DAYS: u32 = 2;

/// What the creation time of an SSTable is shown as.
const CREATED: &str = "YYYY-MM-DDTHH:MM:SS.ffffffZ";

#[test]
fn tools_md_shows_what_cellar_prints() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
    let doc = std::fs::read_to_string(&doc_path).expect("read docs/tools.md");
    let (_temp, root) = fixtures_dir();
    build_fixtures(&root);
    let (mut updated, mut copied, mut stale) = (String::new(), 0, Vec::new());
    for block in golden_blocks(&doc) {
        let shown = &doc[block.body.clone()];
        let printed = render(&block.commands, &root);
        if shown != printed {
            let line = doc[..block.body.start].lines().count() + 1;
            stale.push(format!("docs/tools.md, the block at line {line}:\n{}", diff(shown, &printed)));
        }
        updated.push_str(&doc[copied..block.body.start]);
        updated.push_str(&printed);
        copied = block.body.end;
    }
    updated.push_str(&doc[copied..]);
    if std::env::var_os("CELLAR_BLESS").is_some_and(|v| v == "1") {
        if updated != doc {
            std::fs::write(&doc_path, updated).expect("write docs/tools.md");
        }
        return;
    }
    assert!(
        stale.is_empty(),
        "{}\n\ndocs/tools.md no longer shows what cellar prints (- the doc, + cellar). If cellar is right, run \
         `CELLAR_BLESS=1 cargo test -p cellar --test docs` and reread the prose around each changed block.",
        stale.join("\n\n")
    );
}

/// Where the fixtures go: a temporary directory, or `CELLAR_DOCS_DIR`.
fn fixtures_dir() -> (Option<tempfile::TempDir>, PathBuf) {
    if let Some(dir) = std::env::var_os("CELLAR_DOCS_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir(&dir).expect("CELLAR_DOCS_DIR must name a directory that does not exist yet");
        (None, dir)
    } else {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().to_path_buf();
        (Some(temp), root)
    }
}

fn build_fixtures(root: &Path) {
    load(&root.join("balloons"), Workload::new(BALLOONS, DAYS), false);
    load(&root.join("crashed"), Workload::new(2, 1), true);
    damage(root);
}

/// As `examples/load.rs` with `--compact`, or with `--crash`: the handle is
/// leaked, so nothing is flushed or closed, as when a process is killed.
fn load(dir: &Path, workload: Workload, crash: bool) {
    let db = Db::open(dir).unwrap();
    for pattern in SchemaPattern::ALL {
        let t = db.create_table(pattern.name(), [(pattern.family(), GcRule::none())]).unwrap();
        for e in workload.events() {
            for r in t.mutate_rows(pattern.mutations(&e)) {
                r.unwrap();
            }
        }
        if !crash {
            db.flush().unwrap();
            db.compact_table(pattern.name()).unwrap();
        }
    }
    if crash {
        std::mem::forget(db);
    } else {
        db.close().unwrap();
    }
}

/// `damaged.sst`: the `bucket-new-cell` SSTable of `balloons`, with a bit
/// flipped in block 1 and another in block 3.
fn damage(root: &Path) {
    let manifest = json_lines(&cellar(root, &["dump", "manifest", "balloons", "--json"]));
    let find = |record: &str, key: &str, value: &serde_json::Value| {
        manifest.iter().find(|r| r["record"] == record && &r[key] == value).unwrap_or_else(|| panic!("{record}"))
    };
    let table = &find("table", "name", &"bucket-new-cell".into())["id"];
    let store = &find("family", "table", table)["store"];
    let file = find("sst", "store", store)["file"].as_str().unwrap();
    let mut bytes = std::fs::read(root.join("balloons").join(file)).unwrap();
    let blocks = json_lines(&cellar(root, &["dump", "sst", &format!("balloons/{file}"), "--blocks", "--json"]));
    let offset = |i: usize| usize::try_from(blocks[i]["offset"].as_u64().unwrap()).unwrap();
    bytes[offset(1) + 10] ^= 0x01;
    bytes[offset(3) + 3] ^= 0x80;
    std::fs::write(root.join("damaged.sst"), bytes).unwrap();
}

fn cellar(root: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_cellar")).args(args).current_dir(root).output().unwrap();
    assert!(o.status.success(), "cellar {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A ```` ```text ```` block with commands: where its body lies in the doc.
struct Block {
    body: Range<usize>,
    commands: Vec<String>,
}

fn golden_blocks(doc: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let (mut offset, mut open) = (0, None);
    for line in doc.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        match (line.trim_end(), open) {
            ("```text", None) => open = Some(offset),
            ("```", Some(body)) => {
                let body: Range<usize> = body..start;
                let commands: Vec<String> =
                    doc[body.clone()].lines().filter_map(|l| l.strip_prefix("$ ")).map(str::to_owned).collect();
                if !commands.is_empty() {
                    blocks.push(Block { body, commands });
                }
                open = None;
            }
            _ => {}
        }
    }
    blocks
}

/// The block's body: each command and what it printed, an empty line
/// between commands.
fn render(commands: &[String], root: &Path) -> String {
    commands.iter().map(|c| format!("$ {c}\n{}", run(c, root))).collect::<Vec<_>>().join("\n")
}

fn run(command: &str, root: &Path) -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_cellar")).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let o = Command::new("sh")
        .args(["-c", command])
        .current_dir(root)
        .env("PATH", path)
        .env_remove("CELLAR_DB")
        .env_remove("RUST_LOG")
        .output()
        .expect("run sh");
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        let _ = writeln!(text, "(exit code {})", o.status.code().unwrap_or(-1));
    }
    text.lines().map(|line| mask(command, line) + "\n").collect()
}

/// `line` with what changes from run to run masked: the creation time of
/// an SSTable, and the last column (write MB/s) of `--recompress` rows.
fn mask(command: &str, line: &str) -> String {
    if let Some(time) = line.strip_prefix("created ") {
        return format!("created {}{CREATED}", " ".repeat(time.len() - time.trim_start().len()));
    }
    let recompress_row = command.contains("--recompress") && line.len() == 60 && !line.ends_with(' ');
    if recompress_row && !line.starts_with("block size") {
        return format!("{}{:>10}", &line[..50], "*");
    }
    line.to_owned()
}

/// A line diff of `old` and `new` (a longest common subsequence): `- `
/// lines only in `old`, `+ ` lines only in `new`.
fn diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}
