//! `cellar dump wal`: every record of a log file, and how the log ends.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use cellardb::inspect::{
    LogInfo, LogReader, MANIFEST_FILE_NAME, Manifest, check_listed_log, log_file_name, read_manifest,
};
use serde_json::json;

use crate::dump_sst::file_error;
use crate::show::{entry_json, entry_line, escape};
use crate::{Out, Outcome};

/// Which log.
#[derive(clap::Args)]
pub struct Args {
    /// The log file (`NNNNNN.log`). Family names come from the `MANIFEST`
    /// beside it, when there is one.
    file: PathBuf,
    /// One JSON object per line instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args, out: &mut Out) -> Outcome {
    let path = &args.file;
    let data = std::fs::read(path).map_err(|e| file_error(path, &e))?;
    let manifest = manifest_beside(path);
    let families = family_names(manifest.as_ref());
    let family = |store: u32| families.get(&store).cloned().unwrap_or_else(|| format!("store{store}"));
    let mut write_error = None;
    let replayed = LogReader::new(path, &data).read(|offset, record| {
        let shown = if args.json {
            let entries: Vec<_> = record.entries.iter().map(|e| entry_json(&family(e.store), &e.entry)).collect();
            let v = json!({"record": "mutation", "offset": offset, "row": escape(&record.row),
                           "first_seq": record.first_seq, "entries": entries});
            writeln!(out, "{v}")
        } else {
            let n = record.entries.len();
            let entries = if n == 1 { "1 entry".to_owned() } else { format!("{n} entries") };
            writeln!(out, "@{offset} row mutation, seq {}, {entries}", record.first_seq).and_then(|()| {
                record.entries.iter().try_for_each(|e| writeln!(out, "  {}", entry_line(&family(e.store), &e.entry)))
            })
        };
        // Stop replaying (with any error) once the output is gone.
        shown.map_err(|e| {
            write_error = Some(e);
            cellardb::Error::Closed
        })
    });
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let stats = replayed?;
    let len = data.len() as u64;
    // What recovery would say of the log as the manifest beside it lists
    // it (its size, its end), asked of the engine rather than worked out.
    if let Some(listed) = listed_log(manifest.as_ref(), path)
        && let Err(e) = check_listed_log(path, &data, listed)
    {
        eprintln!("cellar: {e}: recovery refuses it");
    }
    match &stats.torn_tail {
        Some(torn) => {
            if args.json {
                let v = json!({"record": "torn_tail", "offset": torn.offset, "bytes": torn.dropped_bytes,
                               "what": torn.what, "records": stats.records});
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "torn tail at offset {}: {}; {} records before it; recovery zeroes the {} bytes from there",
                    torn.offset, torn.what, stats.records, torn.dropped_bytes
                )?;
            }
            eprintln!("cellar: {}: torn tail at offset {}: {}", path.display(), torn.offset, torn.what);
        }
        None if args.json => {
            let v = json!({"record": "end", "offset": stats.end_offset, "records": stats.records,
                           "zero_bytes_after": len - stats.end_offset});
            writeln!(out, "{v}")?;
        }
        None => {
            let zeros = len - stats.end_offset;
            let after =
                if zeros == 0 { String::new() } else { format!(", then {zeros} zero bytes (preallocated, unwritten)") };
            writeln!(out, "end at offset {}: {} records, intact{after}", stats.end_offset, stats.records)?;
        }
    }
    Ok(())
}

/// The manifest beside `log`, if it can be read.
fn manifest_beside(log: &Path) -> Option<Manifest> {
    let manifest = log.with_file_name(MANIFEST_FILE_NAME);
    let data = std::fs::read(&manifest).ok()?;
    read_manifest(&manifest, &data).ok()
}

/// Family names by store id, from `manifest`; none without one (the dump
/// then names stores by id).
fn family_names(manifest: Option<&Manifest>) -> HashMap<u32, String> {
    let Some(state) = manifest else { return HashMap::new() };
    state.tables.iter().flat_map(|t| &t.families).map(|f| (f.store, f.name.clone())).collect()
}

/// How `manifest` lists `log`, if it does.
fn listed_log<'m>(manifest: Option<&'m Manifest>, log: &Path) -> Option<&'m LogInfo> {
    manifest?.logs.iter().find(|l| log.file_name() == Some(log_file_name(l.number).as_ref()))
}
