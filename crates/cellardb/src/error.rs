//! The one error type of cellardb.
//!
//! Every variant says what happened and where: a corruption names the file and
//! the byte offset at which the decoder gave up, an I/O error names the path.
//! `Display` is written for people reading a log; it never says "see logs".

use std::path::PathBuf;
use std::sync::Arc;

/// The result type of every fallible cellardb call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
///
/// New variants may be added: match with a wildcard arm.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A table or column family that does not exist.
    #[error("{kind} not found: {name}")]
    NotFound {
        /// `"table"` or `"column family"`.
        kind: &'static str,
        /// The name that was asked for.
        name: String,
    },
    /// A table or column family that exists already.
    #[error("{kind} already exists: {name}")]
    AlreadyExists {
        /// `"table"` or `"column family"`.
        kind: &'static str,
        /// The name that was given.
        name: String,
    },
    /// Input that breaks a documented limit or rule; the message names it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Bytes on disk that fail a checksum or do not decode.
    #[error("corruption in {} at offset {offset}: {what}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset in that file where the damage was detected.
        offset: u64,
        /// What was expected and what was found.
        what: String,
    },
    /// A directory that holds no database (no `MANIFEST`, or no directory),
    /// where one must exist: a read-only open, which never creates one, and
    /// `inspect::verify_database`.
    #[error("no cellardb database in {} (no MANIFEST)", path.display())]
    NoDatabase {
        /// The directory.
        path: PathBuf,
    },
    /// An operating-system I/O failure.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory being accessed.
        path: PathBuf,
        /// The underlying error.
        source: Arc<std::io::Error>,
    },
    /// Another process (or another `Db` in this one) holds the directory.
    #[error("database directory {} is locked by another process or handle", path.display())]
    Locked {
        /// The database directory.
        path: PathBuf,
    },
    /// A write, sync, flush, compaction or manifest write failed earlier;
    /// the database refuses writes (mutations, schema changes, range drops)
    /// until it is reopened, because the state of the log or of the
    /// manifest after the failure is unknown. `source` is that first failure.
    #[error("database refuses writes until reopened, after an earlier failure: {source}")]
    Poisoned {
        /// The failure that poisoned the database.
        source: Arc<Error>,
    },
    /// The database was opened read-only ([`crate::Options::open_read_only`]):
    /// writes, schema changes, flushes and compactions are refused.
    #[error("database {} is open read-only", path.display())]
    ReadOnly {
        /// The database directory.
        path: PathBuf,
    },
    /// The database was closed.
    #[error("database is closed")]
    Closed,
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source: Arc::new(source) }
    }

    /// A corruption at `offset` of `file`.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, what: impl Into<String>) -> Error {
        Error::Corruption { file: file.into(), offset, what: what.into() }
    }

    /// The error every write gets after `first` failed: [`Error::Poisoned`]
    /// with `first` as its source (`first` itself if it is one already).
    pub(crate) fn poisoned(first: &Error) -> Error {
        match first {
            Error::Poisoned { .. } => first.clone(),
            other => Error::Poisoned { source: Arc::new(other.clone()) },
        }
    }

    pub(crate) fn table_not_found(name: &str) -> Error {
        Error::NotFound { kind: "table", name: name.to_owned() }
    }

    pub(crate) fn family_not_found(table: &str, family: &str) -> Error {
        Error::NotFound { kind: "column family", name: format!("{table}:{family}") }
    }
}
