//! `cellar dump sst`: an SSTable's properties, blocks, entries, faults, and
//! what it would take laid out otherwise.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cellardb::Compression;
use cellardb::fs::{Fs, OsFs};
use cellardb::inspect::{Entry, EntryKey, SstFile};
use serde_json::json;

use crate::show::{entry_json, entry_line, escape, iso_time, ratio, unescape};
use crate::{Failure, Out, Outcome};

/// What to show of the file.
#[derive(clap::Args)]
#[allow(clippy::struct_excessive_bools, reason = "the command's flags")]
pub struct Args {
    /// The SSTable (`NNNNNN.sst`).
    file: PathBuf,
    /// Properties, footer, index and filter: the default when nothing else is asked.
    #[arg(long)]
    summary: bool,
    /// Per data block: offset, entries, raw and stored size, ratio, first and last key.
    #[arg(long)]
    blocks: bool,
    /// Every entry, one per line: `row family:qualifier @time = value`.
    #[arg(long)]
    scan: bool,
    /// Scan from this row on (escaped as shown).
    #[arg(long, requires = "scan")]
    from: Option<String>,
    /// Scan rows before this one.
    #[arg(long, requires = "scan")]
    to: Option<String>,
    /// Scan rows starting with this prefix.
    #[arg(long, requires = "scan")]
    prefix: Option<String>,
    /// Scan at most this many entries.
    #[arg(long, requires = "scan")]
    limit: Option<u64>,
    /// Check every checksum, decoding and key order; report each fault with its offset.
    #[arg(long)]
    verify: bool,
    /// Rewrite the entries in memory with each block size and zstd level, and report the sizes.
    #[arg(long)]
    recompress: bool,
    /// Block sizes for `--recompress`.
    #[arg(long, value_delimiter = ',', default_values_t = [4096, 16384, 65536], requires = "recompress")]
    block_sizes: Vec<usize>,
    /// zstd levels for `--recompress` (uncompressed is always shown).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 3, 9], requires = "recompress")]
    levels: Vec<i32>,
    /// One JSON object per line instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args, out: &mut Out) -> Outcome {
    let path = &args.file;
    let data = OsFs.map(path).map_err(|e| file_error(path, &e))?;
    let reader = match SstFile::open(path, data) {
        Ok(r) => Arc::new(r),
        Err(e) if args.verify => {
            fault(out, args.json, &e)?;
            return Err(Failure::Corrupt(format!("{}: the file does not open: {e}", path.display())));
        }
        Err(e) => return Err(e.into()),
    };
    let nothing_asked = !(args.blocks || args.scan || args.verify || args.recompress);
    if args.summary || nothing_asked {
        summary(&reader, args.json, out)?;
    }
    if args.blocks {
        blocks(&reader, args.json, out)?;
    }
    if args.scan {
        scan(&reader, args, out)?;
    }
    if args.recompress {
        recompress(&reader, args, out)?;
    }
    if args.verify {
        verify(&reader, args.json, out)?;
    }
    Ok(())
}

/// The failure to open `path`.
pub fn file_error(path: &Path, e: &std::io::Error) -> Failure {
    let message = format!("cannot open {}: {e}", path.display());
    if e.kind() == std::io::ErrorKind::NotFound { Failure::NotFound(message) } else { Failure::Other(message) }
}

fn summary(r: &SstFile, json: bool, out: &mut Out) -> Outcome {
    let (p, layout) = (r.properties(), r.layout());
    let f = layout.spans;
    let blocks = r.block_count();
    let entries = BlockEntries::of(r);
    if json {
        let v = json!({
            "record": "summary",
            "file": r.path().display().to_string(),
            "file_bytes": r.file_size(),
            "format_version": r.format_version(),
            "family": p.family,
            "store": p.store,
            "cells": p.cells,
            "tombstones": p.tombstones,
            "rows": p.rows,
            "first_row": escape(&p.first_row),
            "last_row": escape(&p.last_row),
            "min_timestamp": p.min_timestamp,
            "max_timestamp": p.max_timestamp,
            "min_seq": p.min_seq,
            "max_seq": p.max_seq,
            "created_micros": p.created_micros,
            "logical_bytes": p.logical_bytes,
            "raw_data_bytes": p.raw_data_bytes,
            "stored_data_bytes": p.stored_data_bytes,
            "data_blocks": p.data_blocks,
            "entries_per_block": {"mean": entries.mean(), "max": entries.max},
            "index": {"offset": f.index.offset, "stored_bytes": f.index.stored_bytes, "raw_bytes": f.index.raw_bytes},
            "bloom": {"offset": f.bloom.offset, "bytes": layout.bloom_bytes, "layout": layout.bloom_layout,
                      "bits": layout.bloom_bits, "probes": layout.bloom_probes},
            "properties": {"offset": f.properties.offset, "bytes": f.properties.stored_bytes},
            "dictionary": f.dictionary.map(|d| json!({"offset": d.offset, "bytes": d.stored_bytes})),
        });
        return Ok(writeln!(out, "{v}")?);
    }
    let times = if p.cells == 0 {
        "none".to_owned()
    } else {
        format!("{} .. {}", iso_time(p.min_timestamp), iso_time(p.max_timestamp))
    };
    let mut lines = vec![
        ("file", format!("{} ({} bytes)", r.path().display(), r.file_size())),
        ("family", format!("{} (store {})", p.family, p.store)),
        ("entries", format!("{} cells, {} tombstones, {} rows", p.cells, p.tombstones, p.rows)),
        ("rows", format!("\"{}\" .. \"{}\"", escape(&p.first_row), escape(&p.last_row))),
        ("timestamps", times),
        ("sequences", format!("{} .. {}", p.min_seq, p.max_seq)),
        ("created", iso_time(p.created_micros)),
        (
            "data",
            format!(
                "{} blocks: {} bytes raw, {} stored ({}x)",
                p.data_blocks,
                p.raw_data_bytes,
                p.stored_data_bytes,
                ratio(p.raw_data_bytes, p.stored_data_bytes)
            ),
        ),
        ("", format!("{} entries a block on average, {} at most", entries.mean(), entries.max)),
        ("logical", format!("{} bytes ({}x the file)", p.logical_bytes, ratio(p.logical_bytes, r.file_size()))),
        ("index", format!("{blocks} entries, {} bytes at offset {}", f.index.stored_bytes, f.index.offset)),
        (
            "bloom",
            format!(
                "{} bits, {}, k = {}, at offset {}",
                layout.bloom_bits, layout.bloom_layout, layout.bloom_probes, f.bloom.offset
            ),
        ),
        ("properties", format!("{} bytes at offset {}", f.properties.stored_bytes, f.properties.offset)),
    ];
    if let Some(d) = f.dictionary {
        lines.push(("dictionary", format!("{} bytes at offset {}", d.stored_bytes, d.offset)));
    }
    let footer_len = r.footer_len();
    lines.push(("footer", format!("{footer_len} bytes at offset {}", r.file_size() - footer_len as u64)));
    for (name, value) in lines {
        writeln!(out, "{name:<11} {value}")?;
    }
    Ok(())
}

/// How many entries the file's data blocks hold, from its index: what a
/// first read of a block walks, and what `Options::block_entries` bounds.
struct BlockEntries {
    total: u64,
    blocks: u64,
    max: u32,
}

impl BlockEntries {
    fn of(r: &SstFile) -> BlockEntries {
        let blocks = r.blocks();
        BlockEntries {
            total: blocks.iter().map(|b| u64::from(b.entries)).sum(),
            blocks: blocks.len() as u64,
            max: blocks.iter().map(|b| b.entries).max().unwrap_or(0),
        }
    }

    /// The mean, rounded to the nearest entry (0 for a file of no blocks).
    fn mean(&self) -> u64 {
        (self.total + self.blocks / 2).checked_div(self.blocks).unwrap_or(0)
    }
}

/// A key as `row family:qualifier @time #seq`.
fn key_text(family: &str, k: &EntryKey) -> String {
    format!("{} {family}:{} @{} #{}", escape(&k.row), escape(&k.qualifier), iso_time(k.timestamp), k.seq)
}

fn blocks(r: &SstFile, json: bool, out: &mut Out) -> Outcome {
    if !json {
        writeln!(
            out,
            "{:>6} {:>12} {:>8} {:>9} {:>9} {:>7} {:>9}  first key .. last key",
            "block", "offset", "entries", "raw", "stored", "ratio", "cached"
        )?;
    }
    let mut faults = 0;
    let family = &r.properties().family;
    for (i, ie) in r.blocks().iter().enumerate() {
        let h = &ie.span;
        let (first, cached) = match r.block(i) {
            Ok(b) => (b.entries.first().map(|e| key_text(family, &e.key)), b.decoded_bytes),
            Err(e) => {
                faults += 1;
                fault(out, json, &e)?;
                continue;
            }
        };
        let (first, last) = (first.unwrap_or_default(), key_text(family, &ie.last_key));
        if json {
            let v = json!({
                "record": "block", "block": i, "offset": h.offset, "entries": ie.entries,
                "raw_bytes": h.raw_bytes, "stored_bytes": h.stored_bytes, "cached_bytes": cached,
                "first_key": first, "last_key": last,
            });
            writeln!(out, "{v}")?;
        } else {
            let r = ratio(u64::from(h.raw_bytes), u64::from(h.stored_bytes));
            writeln!(
                out,
                "{i:>6} {:>12} {:>8} {:>9} {:>9} {r:>7} {cached:>9}  {first} .. {last}",
                h.offset, ie.entries, h.raw_bytes, h.stored_bytes
            )?;
        }
    }
    if faults > 0 {
        return Err(Failure::Corrupt(format!("{}: {faults} blocks do not read", r.path().display())));
    }
    Ok(())
}

/// The rows a scan shows: `[from, to)`, within `prefix`.
struct RowBounds {
    from: Vec<u8>,
    to: Option<Vec<u8>>,
    prefix: Vec<u8>,
}

impl RowBounds {
    fn of(args: &Args) -> Result<RowBounds, Failure> {
        let parse = |s: &Option<String>| s.as_deref().map(unescape).transpose().map_err(Failure::Usage);
        let prefix = parse(&args.prefix)?.unwrap_or_default();
        let from = parse(&args.from)?.unwrap_or_default().max(prefix.clone());
        Ok(RowBounds { from, to: parse(&args.to)?, prefix })
    }

    /// Whether `row` is past every row shown.
    fn is_past(&self, row: &[u8]) -> bool {
        self.to.as_deref().is_some_and(|to| row >= to) || (!row.starts_with(&self.prefix) && row > &self.prefix[..])
    }

    fn holds(&self, row: &[u8]) -> bool {
        row >= &self.from[..] && row.starts_with(&self.prefix) && !self.is_past(row)
    }
}

fn scan(r: &SstFile, args: &Args, out: &mut Out) -> Outcome {
    let bounds = RowBounds::of(args)?;
    let family = &r.properties().family;
    let index = r.blocks();
    let first_block = index.partition_point(|ie| ie.last_key.row[..] < bounds.from[..]);
    let mut shown = 0u64;
    let limit = args.limit.unwrap_or(u64::MAX);
    for i in first_block..index.len() {
        let block = r.block(i)?;
        for e in &block.entries {
            if shown >= limit || bounds.is_past(&e.key.row) {
                return Ok(());
            }
            if bounds.holds(&e.key.row) {
                print_entry(out, args.json, family, e)?;
                shown += 1;
            }
        }
    }
    Ok(())
}

fn print_entry(out: &mut Out, json: bool, family: &str, e: &Entry) -> Outcome {
    if json {
        let mut v = entry_json(family, e);
        v["record"] = "entry".into();
        writeln!(out, "{v}")?;
    } else {
        writeln!(out, "{}", entry_line(family, e))?;
    }
    Ok(())
}

fn fault(out: &mut Out, json: bool, e: &cellardb::Error) -> Outcome {
    let (offset, what) = match e {
        cellardb::Error::Corruption { offset, what, .. } => (*offset, what.clone()),
        other => (0, other.to_string()),
    };
    if json {
        writeln!(out, "{}", json!({"record": "fault", "offset": offset, "what": what}))?;
    } else {
        writeln!(out, "fault at offset {offset}: {what}")?;
    }
    Ok(())
}

fn verify(r: &SstFile, json: bool, out: &mut Out) -> Outcome {
    let report = r.check();
    for e in &report.faults {
        fault(out, json, e)?;
    }
    let faults = report.faults.len();
    if json {
        let v = json!({"record": "verify", "blocks": r.block_count(), "blocks_read": report.blocks,
                       "entries": report.entries, "faults": faults});
        writeln!(out, "{v}")?;
    } else if faults == 0 {
        writeln!(
            out,
            "verified {}: {} blocks, {} entries; every checksum, decoding, key order and count is right",
            r.path().display(),
            report.blocks,
            report.entries
        )?;
    }
    if faults > 0 {
        return Err(Failure::Corrupt(format!("{}: {faults} faults", r.path().display())));
    }
    Ok(())
}

fn recompress(r: &SstFile, args: &Args, out: &mut Out) -> Outcome {
    let mut compressions = vec![Compression::None];
    compressions.extend(args.levels.iter().map(|&level| Compression::Zstd { level }));
    if !args.json {
        writeln!(
            out,
            "{:>10} {:>12} {:>14} {:>10} {:>10}",
            "block size", "compression", "file bytes", "vs now", "write MB/s"
        )?;
        writeln!(out, "{:>10} {:>12} {:>14} {:>10} {:>10}", "(now)", "", r.file_size(), "1.00", "")?;
    }
    for &block_size in &args.block_sizes {
        if block_size == 0 {
            return Err(Failure::Usage("--block-sizes must be positive".into()));
        }
        for &compression in &compressions {
            let started = Instant::now();
            let bytes = r.recompressed_size(block_size, compression)?;
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            let mb_s = r.properties().raw_data_bytes as f64 / secs / 1e6;
            let name = match compression {
                Compression::None => "none".to_owned(),
                Compression::Zstd { level } => format!("zstd {level}"),
            };
            if args.json {
                let v = json!({"record": "recompress", "block_size": block_size, "compression": name,
                               "file_bytes": bytes, "current_bytes": r.file_size(), "write_mb_per_s": mb_s});
                writeln!(out, "{v}")?;
            } else {
                let vs = ratio(bytes, r.file_size());
                writeln!(out, "{block_size:>10} {name:>12} {bytes:>14} {vs:>10} {mb_s:>10.1}")?;
            }
        }
    }
    Ok(())
}
