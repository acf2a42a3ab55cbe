//! `cellar dump manifest`: every record of a database's manifest.

use std::io::Write;
use std::path::PathBuf;

use cellardb::inspect::{MANIFEST_FILE_NAME, ManifestReader, ManifestRecord as Record, log_file_name, sst_file_name};
use serde_json::{Value, json};

use crate::dump_sst::file_error;
use crate::show::escape;
use crate::{Out, Outcome};

/// Which manifest.
#[derive(clap::Args)]
pub struct Args {
    /// A database directory, or its `MANIFEST` file.
    path: PathBuf,
    /// One JSON object per line instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args, out: &mut Out) -> Outcome {
    let path = if args.path.is_dir() { args.path.join(MANIFEST_FILE_NAME) } else { args.path.clone() };
    let data = std::fs::read(&path).map_err(|e| file_error(&path, &e))?;
    let records = ManifestReader::new(&path, &data)?;
    if args.json {
        writeln!(out, "{}", json!({"record": "header", "version": records.version(), "bytes": data.len()}))?;
    } else {
        writeln!(out, "{}: format version {}, {} bytes", path.display(), records.version(), data.len())?;
    }
    for record in records {
        let (offset, record) = record?;
        if args.json {
            let mut v = record_json(&record);
            v["offset"] = offset.into();
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "@{offset} {}", record_text(&record))?;
        }
    }
    Ok(())
}

fn range_end(end: Option<&[u8]>) -> String {
    end.map_or_else(|| "the last row".to_owned(), |e| format!("\"{}\"", escape(e)))
}

fn record_text(record: &Record) -> String {
    match record {
        Record::Counters { next_file, next_store, next_table, last_seq, log_number } => format!(
            "counters: next file {next_file}, next store {next_store}, next table {next_table}, \
             last seq {last_seq}, log number {log_number}"
        ),
        Record::Table { id, name } => format!("table {id} \"{}\"", escape(name.as_bytes())),
        Record::Family { table, family } => {
            let aggregate = family.aggregate.map(|a| format!(", aggregate {a}")).unwrap_or_default();
            format!(
                "family \"{}\" of table {table}: store {}, gc {}{aggregate}",
                escape(family.name.as_bytes()),
                family.store,
                family.gc_rule
            )
        }
        Record::Sst(s) => format!(
            "sst {}: store {}, level {}, {} bytes, rows \"{}\" .. \"{}\", seq {} .. {}, drops applied to {}",
            sst_file_name(s.file),
            s.store,
            s.level,
            s.size,
            escape(&s.first_row),
            escape(&s.last_row),
            s.min_seq,
            s.max_seq,
            s.drops_applied
        ),
        Record::RangeDrop(d) => format!(
            "range drop: store {}, rows from \"{}\" to {} (excluded), seq {}, log {}",
            d.store,
            escape(&d.start),
            range_end(d.end.as_deref()),
            d.seq,
            d.log_number
        ),
        Record::Log(l) => match l.closed_size {
            Some(size) => format!("log {}: closed at {size} bytes", log_file_name(l.number)),
            None => format!("log {}: being written", log_file_name(l.number)),
        },
        Record::End { records } => format!("end: {records} records before it"),
        // A record of a later format version than this tool knows.
        other => format!("a record this version of cellar does not know: {other:?}"),
    }
}

fn record_json(record: &Record) -> Value {
    match record {
        Record::Counters { next_file, next_store, next_table, last_seq, log_number } => json!({
            "record": "counters", "next_file": next_file, "next_store": next_store,
            "next_table": next_table, "last_seq": last_seq, "log_number": log_number,
        }),
        Record::Table { id, name } => json!({"record": "table", "id": id, "name": name}),
        Record::Family { table, family } => json!({
            "record": "family", "table": table, "name": family.name, "store": family.store,
            "gc_rule": family.gc_rule.to_string(),
            "aggregate": family.aggregate.map(cellardb::Aggregate::name),
        }),
        Record::Sst(s) => json!({
            "record": "sst", "file": sst_file_name(s.file), "store": s.store, "level": s.level,
            "bytes": s.size, "first_row": escape(&s.first_row), "last_row": escape(&s.last_row),
            "min_seq": s.min_seq, "max_seq": s.max_seq, "drops_applied": s.drops_applied,
        }),
        Record::RangeDrop(d) => json!({
            "record": "range_drop", "store": d.store, "start": escape(&d.start),
            "end": d.end.as_ref().map(|e| escape(e)), "seq": d.seq, "log_number": d.log_number,
        }),
        Record::Log(l) => json!({
            "record": "log", "file": log_file_name(l.number), "closed_size": l.closed_size,
        }),
        Record::End { records } => json!({"record": "end", "records": records}),
        other => json!({"record": "unknown", "debug": format!("{other:?}")}),
    }
}
