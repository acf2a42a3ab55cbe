//! `cellar`: look inside cellardb's files and databases.
//!
//! `cellar dump sst|wal|manifest` decodes one file, byte for byte as
//! `docs/format/` specifies it, and can verify it; `ls`, `read`, `lookup`,
//! `count` and `stats` read a database directory as `cbt` reads a Bigtable
//! instance, opened read-only so they run beside a live writer;
//! `checkpoint` copies a database and `verify` checks one; `serve` serves
//! one over Bigtable's gRPC API.
//! `docs/tools.md` shows each command on the balloon workload.
//!
//! The logger is on (`warn`, or as `RUST_LOG` says, to stderr), so what the
//! engine warns about while it opens a database reaches the terminal.
//!
//! Exit codes: 0 success, 1 any other failure (I/O), 2 usage, 3 not found
//! (file, directory, table, row), 4 corruption (a fault found by a dump or
//! `--verify`).

mod cbt;
mod cbt_args;
mod dump_manifest;
mod dump_sst;
mod dump_wal;
mod go;
mod lab;
mod serve;
mod show;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Look inside cellardb's files and databases.
#[derive(Parser)]
#[command(
    name = "cellar",
    version,
    after_help = "Exit codes: 0 ok, 1 I/O or other failure, 2 usage, 3 not found, 4 corruption."
)]
struct Cli {
    /// Database directory, for `ls`, `read`, `lookup`, `count`, `stats`,
    /// `checkpoint` and `verify`.
    #[arg(long, global = true, env = "CELLAR_DB")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode one file: an SSTable, a log, or a manifest.
    #[command(subcommand)]
    Dump(Dump),
    /// List tables, or with TABLE its column families, GC policies and
    /// value types, as `cbt ls`.
    Ls {
        /// A table.
        table: Option<String>,
        /// One JSON object per table or family.
        #[arg(long)]
        json: bool,
    },
    /// Read rows, as `cbt read`: `read TABLE [start=ROW] [end=ROW]
    /// [prefix=P] [regex=RE] [columns=FAMILY:QUALIFIER,...] [count=N]
    /// [cells-per-column=N] [keys-only=BOOL] [reversed=BOOL]` (regexes are
    /// RE2, matching whole keys, families and qualifiers).
    Read {
        /// The table.
        table: String,
        /// `key=value` arguments.
        args: Vec<String>,
        /// One JSON object per row.
        #[arg(long)]
        json: bool,
    },
    /// Read one row, as `cbt lookup`: `lookup TABLE ROW [columns=...]
    /// [cells-per-column=N] [keys-only=BOOL]`; exit code 3 if absent.
    Lookup {
        /// The table.
        table: String,
        /// The row key (escapes as shown by the dumps: `\xNN`, `\\`).
        row: String,
        /// `key=value` arguments, as for `read`.
        args: Vec<String>,
        /// One JSON object for the row.
        #[arg(long)]
        json: bool,
    },
    /// Count a table's rows, as `cbt count`: `count TABLE [prefix=P]`.
    Count {
        /// The table.
        table: String,
        /// `prefix=P`.
        args: Vec<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write a consistent copy of the database to DEST (a new or empty
    /// directory), openable on its own. Opens the database for writing, so
    /// not beside a process that has it open: that process can call
    /// `Db::checkpoint` itself.
    Checkpoint {
        /// Where the copy goes.
        dest: PathBuf,
    },
    /// Check the whole database without opening it: the manifest, every
    /// SSTable it lists (size, checksums, entry order, its recorded rows and
    /// sequence numbers), rows across the files of a level, and the live
    /// logs. Exit code 4 if anything is damaged.
    Verify {
        /// The database has only ever been compacted with the leveled
        /// strategy: check that its level 1 is one run of files whose rows
        /// do not overlap. Without it, level 1 may hold overlapping files,
        /// as the time-window strategy keeps them (one run per window), and
        /// as they stay after a change from it.
        #[arg(long)]
        always_leveled: bool,
    },
    /// The schema-pattern lab: load the balloon workload in each schema
    /// pattern, and report what each costs (bytes, ingest, queries).
    Lab(lab::Args),
    /// Serve Bigtable's v2 Data API and table admin API over gRPC from a
    /// database directory, until SIGINT or SIGTERM (`docs/server.md`).
    Serve(serve::Args),
    /// Files, bytes, logical bytes and compression per table, family and level.
    Stats {
        /// One JSON object per family and level.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum Dump {
    /// An SSTable: properties and footer; its blocks, cells, faults, or
    /// what other block sizes and zstd levels would take.
    Sst(dump_sst::Args),
    /// A write-ahead log: every record, and how the log ends.
    Wal(dump_wal::Args),
    /// The manifest of a database directory (or a manifest file): every record.
    Manifest(dump_manifest::Args),
}

/// Why a command failed, and so its exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments.
    Usage(String),
    /// A file, directory, table or row that does not exist.
    NotFound(String),
    /// Bytes that fail their checks; already reported when empty.
    Corrupt(String),
    /// Anything else.
    Other(String),
    /// Standard output was closed (`cellar ... | head`): not a failure.
    ClosedPipe,
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::ClosedPipe => 0,
            Failure::Other(_) => 1,
            Failure::Usage(_) => 2,
            Failure::NotFound(_) => 3,
            Failure::Corrupt(_) => 4,
        }
    }

    fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::NotFound(m) | Failure::Corrupt(m) | Failure::Other(m) => m,
            Failure::ClosedPipe => "",
        }
    }
}

impl From<cellardb::Error> for Failure {
    fn from(e: cellardb::Error) -> Self {
        use cellardb::Error;
        match &e {
            Error::NotFound { .. } | Error::NoDatabase { .. } => Failure::NotFound(e.to_string()),
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Failure::NotFound(e.to_string())
            }
            Error::Corruption { .. } => Failure::Corrupt(e.to_string()),
            Error::InvalidArgument(_) => Failure::Usage(e.to_string()),
            _ => Failure::Other(e.to_string()),
        }
    }
}

/// Writing to standard output failed.
impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::ClosedPipe
        } else {
            Failure::Other(format!("writing the output: {e}"))
        }
    }
}

/// The result of a command.
pub type Outcome = Result<(), Failure>;

/// A buffered standard output, which the commands write to.
pub type Out = std::io::BufWriter<std::io::StdoutLock<'static>>;

fn main() -> ExitCode {
    let logs = env_logger::Env::default().default_filter_or("warn");
    env_logger::Builder::from_env(logs).target(env_logger::Target::Stderr).init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let result = run(&cli, &mut out).and_then(|()| out.flush().map_err(Failure::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let _ = out.flush();
            if !f.message().is_empty() {
                eprintln!("cellar: {}", f.message());
            }
            ExitCode::from(f.exit_code())
        }
    }
}

fn run(cli: &Cli, out: &mut Out) -> Outcome {
    let db = || cli.db.clone().ok_or_else(|| Failure::Usage("this command needs --db DIR (or CELLAR_DB)".into()));
    match &cli.command {
        Command::Dump(Dump::Sst(args)) => dump_sst::run(args, out),
        Command::Dump(Dump::Wal(args)) => dump_wal::run(args, out),
        Command::Dump(Dump::Manifest(args)) => dump_manifest::run(args, out),
        Command::Ls { table, json } => cbt::ls(&db()?, table.as_deref(), *json, out),
        Command::Read { table, args, json } => cbt::read(&db()?, table, args, *json, out),
        Command::Lookup { table, row, args, json } => cbt::lookup(&db()?, table, row, args, *json, out),
        Command::Count { table, args, json } => cbt::count(&db()?, table, args, *json, out),
        Command::Stats { json } => cbt::stats(&db()?, *json, out),
        Command::Checkpoint { dest } => checkpoint(&db()?, dest, out),
        Command::Verify { always_leveled } => verify(&db()?, *always_leveled, out),
        Command::Lab(args) => lab::run(args, out),
        Command::Serve(args) => serve::run(args, out),
    }
}

/// `cellar checkpoint DEST`: the database opened for writing (replaying and
/// flushing what its logs hold), copied, and closed.
fn checkpoint(dir: &std::path::Path, dest: &std::path::Path, out: &mut Out) -> Outcome {
    if !dir.join(cellardb::inspect::MANIFEST_FILE_NAME).exists() {
        return Err(Failure::NotFound(format!("{}: not a cellardb database (no MANIFEST)", dir.display())));
    }
    let db = cellardb::Options::default().open(dir)?;
    db.checkpoint(dest)?;
    db.close()?;
    writeln!(out, "cellar: checkpoint of {} written to {}", dir.display(), dest.display())?;
    Ok(())
}

/// `cellar verify`: every fault, every note, and a summary.
fn verify(dir: &std::path::Path, always_leveled: bool, out: &mut Out) -> Outcome {
    let report = cellardb::inspect::verify_database(dir, always_leveled)?;
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    for fault in &report.faults {
        writeln!(out, "fault: {fault}")?;
    }
    writeln!(
        out,
        "{}: {} SSTables ({} blocks, {} entries), {} logs ({} records): {} faults",
        dir.display(),
        report.ssts,
        report.blocks,
        report.entries,
        report.logs,
        report.log_records,
        report.faults.len()
    )?;
    if report.faults.is_empty() {
        Ok(())
    } else {
        Err(Failure::Corrupt(format!("{}: {} faults", dir.display(), report.faults.len())))
    }
}
