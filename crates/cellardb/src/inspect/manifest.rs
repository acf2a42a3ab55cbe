//! The manifest, record by record, and the state its records add up to
//! (`docs/format/manifest.md`).

use std::path::Path;

use crate::manifest::{self, LogMeta, ManifestState, Record, SstMeta};
use crate::model::{FamilyMeta, RangeDrop, TableMeta};
use crate::{Aggregate, GcRule, Result};

/// The file name of a database's manifest.
pub const MANIFEST_FILE_NAME: &str = manifest::FILE_NAME;

/// The records of a manifest file, in order, each with its offset; checked
/// as opening a database checks them. After an error it yields nothing more.
pub struct ManifestReader<'a> {
    path: &'a Path,
    records: manifest::Records<'a>,
}

impl<'a> ManifestReader<'a> {
    /// A reader of `data`, the bytes of the manifest file `path`.
    ///
    /// # Errors
    /// `Error::Corruption` if the magic or the format version is not a
    /// manifest's.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Result<Self> {
        let records = manifest::Records::new(data).map_err(|e| e.in_file(path))?;
        Ok(ManifestReader { path, records })
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.records.version()
    }
}

impl Iterator for ManifestReader<'_> {
    type Item = Result<(u64, ManifestRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.records.next()?;
        Some(next.map(|(offset, record)| (offset, ManifestRecord::of(record))).map_err(|e| e.in_file(self.path)))
    }
}

/// The state the manifest file `path`, whose bytes are `data`, records.
///
/// # Errors
/// `Error::Corruption` at the offset of the first bad record.
pub fn read_manifest(path: &Path, data: &[u8]) -> Result<Manifest> {
    Ok(Manifest::of(manifest::decode(path, data)?))
}

/// One record of a manifest, as written.
///
/// New kinds may be added with a later format version: match with a
/// wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestRecord {
    /// The database's counters.
    Counters {
        /// The next number for a log or an SSTable.
        next_file: u64,
        /// The next store id.
        next_store: u32,
        /// The next table id.
        next_table: u32,
        /// The highest sequence number held in an SSTable.
        last_seq: u64,
        /// Logs numbered below this are flushed and obsolete.
        log_number: u64,
    },
    /// A table.
    Table {
        /// Its id.
        id: u32,
        /// Its name.
        name: String,
    },
    /// A column family of a table listed before it.
    Family {
        /// The table's id.
        table: u32,
        /// The family.
        family: FamilyInfo,
    },
    /// A live SSTable.
    Sst(SstInfo),
    /// A dropped row range.
    RangeDrop(RangeDropInfo),
    /// A live log.
    Log(LogInfo),
    /// The end of the records.
    End {
        /// Records before it.
        records: u64,
    },
}

impl ManifestRecord {
    fn of(record: Record) -> ManifestRecord {
        match record {
            Record::Counters { next_file, next_store, next_table, last_seq, log_number } => {
                ManifestRecord::Counters { next_file, next_store, next_table, last_seq, log_number }
            }
            Record::Table { id, name } => ManifestRecord::Table { id, name },
            Record::Family { table, family } => ManifestRecord::Family { table, family: FamilyInfo::of(&family) },
            Record::Sst(s) => ManifestRecord::Sst(SstInfo::of(&s)),
            Record::RangeDrop(d) => ManifestRecord::RangeDrop(RangeDropInfo::of(&d)),
            Record::Log(l) => ManifestRecord::Log(LogInfo::of(l)),
            Record::End { records } => ManifestRecord::End { records },
        }
    }
}

/// What a manifest's records add up to: the database's schema and files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Manifest {
    /// The next number for a log or an SSTable.
    pub next_file: u64,
    /// The next store id.
    pub next_store: u32,
    /// The next table id.
    pub next_table: u32,
    /// The highest sequence number held in an SSTable.
    pub last_seq: u64,
    /// Logs numbered below this are flushed and obsolete.
    pub log_number: u64,
    /// The tables, with their families.
    pub tables: Vec<TableInfo>,
    /// The live SSTables.
    pub ssts: Vec<SstInfo>,
    /// Row ranges dropped whose older entries may still be in files.
    pub drops: Vec<RangeDropInfo>,
    /// The live logs.
    pub logs: Vec<LogInfo>,
}

impl Manifest {
    fn of(state: ManifestState) -> Manifest {
        Manifest {
            next_file: state.next_file,
            next_store: state.next_store,
            next_table: state.next_table,
            last_seq: state.last_seq,
            log_number: state.log_number,
            tables: state.tables.iter().map(TableInfo::of).collect(),
            ssts: state.ssts.iter().map(SstInfo::of).collect(),
            drops: state.drops.iter().map(RangeDropInfo::of).collect(),
            logs: state.logs.into_iter().map(LogInfo::of).collect(),
        }
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableInfo {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its column families.
    pub families: Vec<FamilyInfo>,
}

impl TableInfo {
    fn of(t: &TableMeta) -> TableInfo {
        TableInfo { id: t.id, name: t.name.clone(), families: t.families.iter().map(FamilyInfo::of).collect() }
    }
}

/// A column family.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyInfo {
    /// Its name.
    pub name: String,
    /// Its store id: its identity, which a family dropped and made again
    /// under the same name does not share.
    pub store: u32,
    /// Its GC rule.
    pub gc_rule: GcRule,
    /// Its aggregate, for a family of counters.
    pub aggregate: Option<Aggregate>,
}

impl FamilyInfo {
    fn of(f: &FamilyMeta) -> FamilyInfo {
        FamilyInfo { name: f.name.clone(), store: f.store, gc_rule: f.gc_rule.clone(), aggregate: f.aggregate }
    }
}

/// A live SSTable as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstInfo {
    /// The family's store id.
    pub store: u32,
    /// The file number (`NNNNNN.sst`).
    pub file: u64,
    /// Its level.
    pub level: u8,
    /// Its length in bytes.
    pub size: u64,
    /// Its smallest row key.
    pub first_row: Vec<u8>,
    /// Its largest row key.
    pub last_row: Vec<u8>,
    /// Its smallest sequence number.
    pub min_seq: u64,
    /// Its largest sequence number.
    pub max_seq: u64,
    /// Every dropped row range of the family with a sequence number up to
    /// this one was applied when the file was written (0: none).
    pub drops_applied: u64,
}

impl SstInfo {
    fn of(s: &SstMeta) -> SstInfo {
        SstInfo {
            store: s.store,
            file: s.file,
            level: s.level,
            size: s.size,
            first_row: s.first_row.to_vec(),
            last_row: s.last_row.to_vec(),
            min_seq: s.min_seq,
            max_seq: s.max_seq,
            drops_applied: s.drops_applied,
        }
    }
}

/// A dropped row range.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeDropInfo {
    /// The family's store id.
    pub store: u32,
    /// The first row dropped (empty: from the first row).
    pub start: Vec<u8>,
    /// The first row after the range (`None`: to the last row).
    pub end: Option<Vec<u8>>,
    /// The drop's sequence number: entries of the range's rows below it
    /// are deleted.
    pub seq: u64,
    /// The log being written when the range was dropped: memtables of that
    /// log or older may hold entries the drop deletes.
    pub log_number: u64,
}

impl RangeDropInfo {
    fn of(d: &RangeDrop) -> RangeDropInfo {
        RangeDropInfo {
            store: d.store,
            start: d.start.to_vec(),
            end: d.end.as_ref().map(|e| e.to_vec()),
            seq: d.seq,
            log_number: d.log_number,
        }
    }
}

/// A live log as the manifest lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogInfo {
    /// The log number (`NNNNNN.log`).
    pub number: u64,
    /// Its length when it was closed; `None` for the log being written.
    pub closed_size: Option<u64>,
}

impl LogInfo {
    fn of(l: LogMeta) -> LogInfo {
        LogInfo { number: l.number, closed_size: l.closed_size }
    }

    pub(super) fn meta(self) -> LogMeta {
        LogMeta { number: self.number, closed_size: self.closed_size }
    }
}
