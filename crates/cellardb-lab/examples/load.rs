//! Loads the balloon workload into a database directory, one table per
//! schema pattern, so that `cellar` has something to look at
//! (`docs/tools.md`).
//!
//! `cargo run --release -p cellardb-lab --example load -- DIR [BALLOONS DAYS] [--compact | --crash]`
//!
//! `--compact` runs a full compaction of each table; `--crash` exits after
//! the writes without flushing or closing, as a killed process would, so the
//! rows are left in the log (for `cellar dump wal`).

use cellardb::{Db, GcRule};
use cellardb_lab::workload::{SchemaPattern, Workload};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let compact = args.iter().any(|a| a == "--compact");
    let crash = args.iter().any(|a| a == "--crash");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let Some(dir) = positional.first() else {
        return Err("usage: load DIR [BALLOONS DAYS] [--compact | --crash]".into());
    };
    let number = |i: usize, default: u32| positional.get(i).map_or(Ok(default), |s| s.parse::<u32>());
    let workload = Workload::new(number(1, 10)?, number(2, 1)?);
    let db = Db::open(dir)?;
    for pattern in SchemaPattern::ALL {
        let t = db.create_table(pattern.name(), [(pattern.family(), GcRule::none())])?;
        for e in workload.events() {
            for r in t.mutate_rows(pattern.mutations(&e)) {
                r?;
            }
        }
        if crash {
            continue;
        }
        db.flush()?;
        if compact {
            db.compact_table(pattern.name())?;
        }
        println!("{}: {} events", pattern.name(), workload.events_count());
    }
    if crash {
        std::process::exit(0);
    }
    db.close()?;
    Ok(())
}
