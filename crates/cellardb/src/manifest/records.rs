//! The manifest's records and their encoding.

use std::time::Duration;

use bytes::Bytes;

use crate::coding::{Cursor, DecodeError, crc32, put_bytes, put_varint};
use crate::model::{Aggregate, FamilyMeta, GcRule, RangeDrop, TableMeta};

/// The length of a log file's header (`docs/format/wal.md`): the least a
/// log closed cleanly holds. The manifest states it for itself, to stand
/// alone; `db/open.rs` checks that it is the log's.
pub(crate) const LOG_HEADER_LEN: u64 = 12;

const MAGIC: &[u8; 8] = b"CELLARMF";
/// Manifest format version written. Version changes: 1 is the first; 2
/// adds dropped row ranges and each SSTable's `drops_applied`; 3 adds each
/// family's aggregate; 4 the live logs; 5 table names of other instances
/// (`projects/{p}/instances/{i}/tables/{t}`). Older manifests are read as
/// version 5 without what they lack (no drops, plain families, logs not
/// tracked, every table the database's own).
const VERSION: u32 = 5;
/// The oldest version read.
const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 12;
/// Bytes before a record's payload: its length and checksum.
const RECORD_HEADER_LEN: u64 = 8;
/// Deepest GC rule nesting a decoder follows: what `GcRule::validate`
/// accepts (it also guards against stack exhaustion).
const MAX_GC_DEPTH: usize = GcRule::MAX_DEPTH;

/// Record tags. Written to disk: never renumber.
mod tag {
    pub const COUNTERS: u8 = 1;
    pub const TABLE: u8 = 2;
    pub const FAMILY: u8 = 3;
    pub const SST: u8 = 4;
    pub const END: u8 = 5;
    pub const RANGE_DROP: u8 = 6;
    pub const LOG: u8 = 7;
}

/// A family's aggregate: 0 for a plain family, else the aggregate's tag.
/// Written to disk: never renumber.
mod aggregate_tag {
    pub const PLAIN: u8 = 0;
    pub const SUM: u8 = 1;
    pub const MIN: u8 = 2;
    pub const MAX: u8 = 3;
}

/// GC rule tags. Written to disk: never renumber.
mod gc_tag {
    pub const NONE: u8 = 0;
    pub const MAX_VERSIONS: u8 = 1;
    pub const MAX_AGE: u8 = 2;
    pub const UNION: u8 = 3;
    pub const INTERSECTION: u8 = 4;
}

/// Everything the manifest records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestState {
    /// Next number for a log or SSTable file.
    pub next_file: u64,
    /// Next store id (one per family ever created; never reused).
    pub next_store: u32,
    /// Next table id (never reused).
    pub next_table: u32,
    /// Highest sequence number held in an SSTable.
    pub last_seq: u64,
    /// Logs numbered below this are flushed and obsolete.
    pub log_number: u64,
    /// Tables with their families.
    pub tables: Vec<TableMeta>,
    /// Live SSTables.
    pub ssts: Vec<SstMeta>,
    /// Row ranges dropped whose older entries may still be in files.
    pub drops: Vec<RangeDrop>,
    /// The live logs (numbered `log_number` or above), oldest first: every
    /// log is listed before a record is written to it.
    pub logs: Vec<LogMeta>,
    /// Whether the manifest lists the live logs (version 4 on): an older
    /// one does not, and its logs are replayed as found.
    pub logs_tracked: bool,
}

/// A live log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogMeta {
    /// File number.
    pub number: u64,
    /// For a log closed cleanly (synced, then trimmed to its records once
    /// this is recorded), its length in bytes; `None` for a log still being
    /// written, or being written when the engine stopped.
    pub closed_size: Option<u64>,
}

impl LogMeta {
    /// Log `number`, being written.
    pub(crate) fn open(number: u64) -> LogMeta {
        LogMeta { number, closed_size: None }
    }
}

/// A live SSTable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstMeta {
    /// Store whose entries it holds.
    pub store: u32,
    /// File number.
    pub file: u64,
    /// LSM level (0: flushed from a memtable, may overlap others).
    pub level: u8,
    /// Bytes of the file.
    pub size: u64,
    /// Smallest row key.
    pub first_row: Bytes,
    /// Largest row key.
    pub last_row: Bytes,
    /// Smallest sequence number.
    pub min_seq: u64,
    /// Largest sequence number.
    pub max_seq: u64,
    /// Every dropped row range of the store with a sequence number up to
    /// this one was applied when the file was written: it holds no entry
    /// such a drop deletes. 0: none applied.
    pub drops_applied: u64,
}

impl SstMeta {
    /// Whether the file may hold entries `drop` deletes.
    pub(crate) fn holds_dropped(&self, drop: &RangeDrop) -> bool {
        drop.may_delete_in(self.store, (&self.first_row, &self.last_row), self.min_seq, self.drops_applied)
    }
}

impl ManifestState {
    /// The manifest file's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut payloads = vec![self.counters_record()];
        for t in &self.tables {
            let mut p = vec![tag::TABLE];
            put_varint(&mut p, u64::from(t.id));
            put_bytes(&mut p, t.name.as_bytes());
            payloads.push(p);
            for f in &t.families {
                let mut p = vec![tag::FAMILY];
                put_varint(&mut p, u64::from(t.id));
                put_varint(&mut p, u64::from(f.store));
                put_bytes(&mut p, f.name.as_bytes());
                encode_gc_rule(&mut p, &f.gc_rule);
                p.push(encode_aggregate(f.aggregate));
                payloads.push(p);
            }
        }
        payloads.extend(self.ssts.iter().map(sst_record));
        payloads.extend(self.drops.iter().map(drop_record));
        payloads.extend(self.logs.iter().map(log_record));
        let mut end = vec![tag::END];
        put_varint(&mut end, payloads.len() as u64);
        payloads.push(end);

        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        for p in payloads {
            // A record holds one table, family (names and a GC rule of
            // bounded depth), file or dropped range: far below 4 GiB.
            let len = u32::try_from(p.len()).expect("a manifest record fits a u32 length");
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&crc32(&[&p]).to_le_bytes());
            out.extend_from_slice(&p);
        }
        out
    }

    fn counters_record(&self) -> Vec<u8> {
        let mut p = vec![tag::COUNTERS];
        for v in
            [self.next_file, u64::from(self.next_store), u64::from(self.next_table), self.last_seq, self.log_number]
        {
            put_varint(&mut p, v);
        }
        p
    }

    /// Decodes a manifest file.
    ///
    /// # Errors
    /// A [`DecodeError`] at the offset of the first bad record (or byte).
    pub(crate) fn decode(data: &[u8]) -> Result<ManifestState, DecodeError> {
        let records = Records::new(data)?;
        let mut state = ManifestState { logs_tracked: records.version() >= 4, ..ManifestState::default() };
        for record in records {
            state.apply(record?.1);
        }
        Ok(state)
    }

    /// Records that log `number` is closed, `size` bytes long.
    pub(crate) fn close_log(&mut self, number: u64, size: u64) {
        if let Some(log) = self.logs.iter_mut().find(|l| l.number == number) {
            log.closed_size = Some(size);
        }
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Counters { next_file, next_store, next_table, last_seq, log_number } => {
                (self.next_file, self.next_store, self.next_table) = (next_file, next_store, next_table);
                (self.last_seq, self.log_number) = (last_seq, log_number);
            }
            Record::Table { id, name } => self.tables.push(TableMeta { id, name, families: Vec::new() }),
            Record::Family { table, family } => {
                if let Some(t) = self.tables.iter_mut().find(|t| t.id == table) {
                    t.families.push(family);
                }
            }
            Record::Sst(meta) => self.ssts.push(meta),
            Record::RangeDrop(drop) => self.drops.push(drop),
            Record::Log(log) => self.logs.push(log),
            Record::End { .. } => {}
        }
    }
}

/// One record of the manifest file, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// The counters (tag 1).
    Counters {
        /// Next number for a log or SSTable file.
        next_file: u64,
        /// Next store id.
        next_store: u32,
        /// Next table id.
        next_table: u32,
        /// Highest sequence number held in an SSTable.
        last_seq: u64,
        /// Logs numbered below this are flushed and obsolete.
        log_number: u64,
    },
    /// A table (tag 2).
    Table {
        /// Id.
        id: u32,
        /// Name.
        name: String,
    },
    /// A column family of a table listed before it (tag 3).
    Family {
        /// The table's id.
        table: u32,
        /// The family.
        family: FamilyMeta,
    },
    /// A live SSTable (tag 4).
    Sst(SstMeta),
    /// A dropped row range (tag 6).
    RangeDrop(RangeDrop),
    /// A live log (tag 7).
    Log(LogMeta),
    /// The end (tag 5).
    End {
        /// Records before it.
        records: u64,
    },
}

/// The records of a manifest file in order, each with the offset of its
/// header, checked as `ManifestState::decode` checks them. After an error
/// it yields nothing more.
pub struct Records<'a> {
    cursor: Cursor<'a>,
    version: u32,
    /// How many records were read so far.
    read: u64,
    tables: Vec<u32>,
    done: bool,
}

impl<'a> Records<'a> {
    /// Checks the header of `data`, a manifest file.
    ///
    /// # Errors
    /// A [`DecodeError`] if the magic or version is not a manifest's.
    pub fn new(data: &'a [u8]) -> Result<Records<'a>, DecodeError> {
        if data.len() < HEADER_LEN || &data[..8] != MAGIC {
            return Err(DecodeError::new(0, "not a cellardb manifest: bad magic"));
        }
        let version = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            let what = format!("manifest format version {version}, expected {OLDEST_VERSION} to {VERSION}");
            return Err(DecodeError::new(8, what));
        }
        let mut cursor = Cursor::new(data);
        cursor.bytes(HEADER_LEN, "header")?;
        Ok(Records { cursor, version, read: 0, tables: Vec::new(), done: false })
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    fn next_record(&mut self) -> Result<(u64, Record), DecodeError> {
        let c = &mut self.cursor;
        let at = c.position() as u64;
        let fail = |what: &'static str| DecodeError::new(at, what);
        let len = c.u32_le("record length").map_err(|_| fail("manifest ends without its end record"))?;
        let crc = c.u32_le("record checksum").map_err(|_| fail("record header cut short"))?;
        let payload = c.bytes(len as usize, "record").map_err(|_| fail("record runs past the end of the file"))?;
        if crc32(&[payload]) != crc {
            return Err(fail("record checksum mismatch"));
        }
        let record = decode_record(payload, self.read, self.version, &self.tables).map_err(|e| {
            DecodeError::new(e.offset, format!("record does not decode: {}", e.what)).at(at + RECORD_HEADER_LEN)
        })?;
        self.read += 1;
        match &record {
            Record::Table { id, .. } => self.tables.push(*id),
            Record::End { .. } if !self.cursor.is_empty() => {
                let after = self.cursor.position() as u64;
                return Err(DecodeError::new(after, "bytes after the end record"));
            }
            Record::End { .. } => self.done = true,
            _ => {}
        }
        Ok((at, record))
    }
}

impl Iterator for Records<'_> {
    type Item = Result<(u64, Record), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_record();
        self.done |= next.is_err();
        Some(next)
    }
}

/// Decodes one record's payload; `tables` are the ids of the tables before it.
fn decode_record(payload: &[u8], records_before: u64, version: u32, tables: &[u32]) -> Result<Record, DecodeError> {
    let mut c = Cursor::new(payload);
    let u32_of = |c: &mut Cursor<'_>, what| {
        let at = c.position();
        u32::try_from(c.varint(what)?).map_err(|_| c.error_at(at, what))
    };
    let string = |c: &mut Cursor<'_>, what| {
        let at = c.position();
        String::from_utf8(c.length_prefixed(what)?.to_vec()).map_err(|_| c.error_at(at, what))
    };
    let record = match c.u8("record tag")? {
        tag::COUNTERS => Record::Counters {
            next_file: c.varint("next file")?,
            next_store: u32_of(&mut c, "next store")?,
            next_table: u32_of(&mut c, "next table")?,
            last_seq: c.varint("last sequence")?,
            log_number: c.varint("log number")?,
        },
        tag::TABLE => Record::Table { id: u32_of(&mut c, "table id")?, name: string(&mut c, "table name")? },
        tag::FAMILY => {
            let table = u32_of(&mut c, "family's table id")?;
            let store = u32_of(&mut c, "store id")?;
            let name = string(&mut c, "family name")?;
            let gc_rule = decode_gc_rule(&mut c, 1)?;
            let aggregate = if version >= 3 { decode_aggregate(&mut c)? } else { None };
            if !tables.contains(&table) {
                return Err(c.error("family of an unknown table"));
            }
            Record::Family { table, family: FamilyMeta { name, store, gc_rule, aggregate } }
        }
        tag::SST => {
            let store = u32_of(&mut c, "store id")?;
            let file = c.varint("file number")?;
            let level = c.u8("level")?;
            let size = c.varint("file size")?;
            let first_row = Bytes::copy_from_slice(c.length_prefixed("first row")?);
            let last_row = Bytes::copy_from_slice(c.length_prefixed("last row")?);
            let min_seq = c.varint("min sequence")?;
            let max_seq = c.varint("max sequence")?;
            let drops_applied = if version >= 2 { c.varint("drops applied")? } else { 0 };
            Record::Sst(SstMeta { store, file, level, size, first_row, last_row, min_seq, max_seq, drops_applied })
        }
        tag::RANGE_DROP if version >= 2 => {
            let store = u32_of(&mut c, "store id")?;
            let start = Bytes::copy_from_slice(c.length_prefixed("range start")?);
            let end = match c.u8("range end marker")? {
                0 => None,
                1 => Some(Bytes::copy_from_slice(c.length_prefixed("range end")?)),
                _ => return Err(c.error("range end marker")),
            };
            let seq = c.varint("drop sequence")?;
            let log_number = c.varint("drop log number")?;
            Record::RangeDrop(RangeDrop { store, start, end, seq, log_number })
        }
        tag::LOG if version >= 4 => {
            let number = c.varint("log number")?;
            let at = c.position();
            let closed_size = match c.varint("closed size")? {
                0 => None,
                n if n >= LOG_HEADER_LEN => Some(n),
                _ => return Err(c.error_at(at, "closed size shorter than a log's header")),
            };
            Record::Log(LogMeta { number, closed_size })
        }
        tag::END => {
            let at = c.position();
            let records = c.varint("record count")?;
            if records != records_before {
                return Err(c.error_at(at, "record count differs from the records read"));
            }
            Record::End { records }
        }
        _ => return Err(c.error_at(0, "unknown record tag")),
    };
    if !c.is_empty() {
        return Err(c.error("end of record"));
    }
    Ok(record)
}

fn log_record(log: &LogMeta) -> Vec<u8> {
    let mut p = vec![tag::LOG];
    put_varint(&mut p, log.number);
    put_varint(&mut p, log.closed_size.unwrap_or(0));
    p
}

fn drop_record(d: &RangeDrop) -> Vec<u8> {
    let mut p = vec![tag::RANGE_DROP];
    put_varint(&mut p, u64::from(d.store));
    put_bytes(&mut p, &d.start);
    match &d.end {
        Some(end) => {
            p.push(1);
            put_bytes(&mut p, end);
        }
        None => p.push(0),
    }
    put_varint(&mut p, d.seq);
    put_varint(&mut p, d.log_number);
    p
}

fn sst_record(s: &SstMeta) -> Vec<u8> {
    let mut p = vec![tag::SST];
    put_varint(&mut p, u64::from(s.store));
    put_varint(&mut p, s.file);
    p.push(s.level);
    put_varint(&mut p, s.size);
    put_bytes(&mut p, &s.first_row);
    put_bytes(&mut p, &s.last_row);
    put_varint(&mut p, s.min_seq);
    put_varint(&mut p, s.max_seq);
    put_varint(&mut p, s.drops_applied);
    p
}

fn encode_aggregate(aggregate: Option<Aggregate>) -> u8 {
    match aggregate {
        None => aggregate_tag::PLAIN,
        Some(Aggregate::Sum) => aggregate_tag::SUM,
        Some(Aggregate::Min) => aggregate_tag::MIN,
        Some(Aggregate::Max) => aggregate_tag::MAX,
    }
}

fn decode_aggregate(c: &mut Cursor<'_>) -> Result<Option<Aggregate>, DecodeError> {
    Ok(match c.u8("aggregate")? {
        aggregate_tag::PLAIN => None,
        aggregate_tag::SUM => Some(Aggregate::Sum),
        aggregate_tag::MIN => Some(Aggregate::Min),
        aggregate_tag::MAX => Some(Aggregate::Max),
        _ => return Err(c.error_at(c.position() - 1, "aggregate")),
    })
}

fn encode_gc_rule(out: &mut Vec<u8>, rule: &GcRule) {
    match rule {
        GcRule::None => out.push(gc_tag::NONE),
        GcRule::MaxVersions(n) => {
            out.push(gc_tag::MAX_VERSIONS);
            put_varint(out, u64::from(*n));
        }
        GcRule::MaxAge(age) => {
            out.push(gc_tag::MAX_AGE);
            put_varint(out, u64::try_from(age.as_micros()).unwrap_or(u64::MAX));
        }
        GcRule::Union(rules) | GcRule::Intersection(rules) => {
            out.push(if matches!(rule, GcRule::Union(_)) { gc_tag::UNION } else { gc_tag::INTERSECTION });
            put_varint(out, rules.len() as u64);
            for r in rules {
                encode_gc_rule(out, r);
            }
        }
    }
}

fn decode_gc_rule(c: &mut Cursor<'_>, depth: usize) -> Result<GcRule, DecodeError> {
    if depth > MAX_GC_DEPTH {
        return Err(c.error("GC rule nested too deeply"));
    }
    match c.u8("GC rule tag")? {
        gc_tag::NONE => Ok(GcRule::None),
        gc_tag::MAX_VERSIONS => {
            let at = c.position();
            let n = u32::try_from(c.varint("max versions")?).map_err(|_| c.error_at(at, "max versions"))?;
            Ok(GcRule::MaxVersions(n))
        }
        gc_tag::MAX_AGE => Ok(GcRule::MaxAge(Duration::from_micros(c.varint("max age")?))),
        t @ (gc_tag::UNION | gc_tag::INTERSECTION) => {
            let n = c.len(c.remaining(), "GC rule count")?;
            let rules = (0..n).map(|_| decode_gc_rule(c, depth + 1)).collect::<Result<Vec<_>, _>>()?;
            Ok(if t == gc_tag::UNION { GcRule::Union(rules) } else { GcRule::Intersection(rules) })
        }
        _ => Err(c.error("unknown GC rule tag")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ManifestState {
        ManifestState {
            next_file: 12,
            next_store: 3,
            next_table: 2,
            last_seq: 99,
            log_number: 11,
            tables: vec![TableMeta {
                id: 1,
                name: "weather".into(),
                families: vec![
                    FamilyMeta { name: "m".into(), store: 1, gc_rule: GcRule::None, aggregate: Some(Aggregate::Max) },
                    FamilyMeta {
                        name: "measurements".into(),
                        store: 2,
                        gc_rule: GcRule::union([
                            GcRule::max_versions(5),
                            GcRule::intersection([GcRule::max_age(Duration::from_secs(3600)), GcRule::max_versions(1)]),
                        ]),
                        aggregate: None,
                    },
                ],
            }],
            ssts: vec![SstMeta {
                store: 2,
                file: 10,
                level: 0,
                size: 4096,
                first_row: "a".into(),
                last_row: "z".into(),
                min_seq: 1,
                max_seq: 99,
                drops_applied: 40,
            }],
            drops: vec![
                RangeDrop { store: 2, start: "a".into(), end: Some("b".into()), seq: 50, log_number: 9 },
                RangeDrop { store: 1, start: Bytes::new(), end: None, seq: 60, log_number: 10 },
            ],
            logs: vec![LogMeta { number: 11, closed_size: Some(300) }],
            logs_tracked: true,
        }
    }

    #[test]
    fn state_round_trips() {
        let s = sample();
        assert_eq!(ManifestState::decode(&s.encode()).unwrap(), s);
    }

    /// `state` (listing no logs) as an older `version` wrote it: family
    /// records without the aggregate (before 3), SSTable records without
    /// `drops_applied` (1).
    fn encode_old(state: &ManifestState, version: u32) -> Vec<u8> {
        let current = state.encode();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        let mut at = HEADER_LEN;
        while at < current.len() {
            let len = u32::from_le_bytes(current[at..at + 4].try_into().unwrap()) as usize;
            let mut payload = current[at + 8..at + 8 + len].to_vec();
            if (payload[0] == tag::FAMILY && version < 3) || (payload[0] == tag::SST && version < 2) {
                payload.pop(); // the aggregate; drops_applied, one byte below 128
            }
            out.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
            out.extend_from_slice(&crc32(&[&payload]).to_le_bytes());
            out.extend_from_slice(&payload);
            at += 8 + len;
        }
        out
    }

    #[test]
    fn older_manifests_read_without_what_they_lack() {
        let mut s = sample();
        assert_eq!(ManifestState::decode(&encode_old(&s, 4)).unwrap(), s, "version 4 names only its own tables");
        s.logs.clear();
        s.logs_tracked = false;
        assert_eq!(ManifestState::decode(&encode_old(&s, 3)).unwrap(), s, "version 3 lists no logs");
        s.tables[0].families.iter_mut().for_each(|f| f.aggregate = None);
        assert_eq!(ManifestState::decode(&encode_old(&s, 2)).unwrap(), s);
        s.drops.clear();
        s.ssts.iter_mut().for_each(|m| m.drops_applied = 0);
        assert_eq!(ManifestState::decode(&encode_old(&s, 1)).unwrap(), s);
        let mut future = s.encode();
        future[8] = u8::try_from(VERSION + 1).unwrap();
        let err = ManifestState::decode(&future).unwrap_err();
        assert_eq!(err.offset, 8, "an unknown version is refused at its offset: {}", err.what);
    }

    #[test]
    fn tables_of_other_instances_round_trip() {
        let mut s = sample();
        let other = TableMeta { id: 2, name: "projects/p/instances/i/tables/weather".into(), families: Vec::new() };
        s.tables.push(other);
        s.next_table = 3;
        assert_eq!(ManifestState::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn an_unknown_aggregate_is_refused() {
        let mut s = sample();
        s.drops.clear();
        let bytes = s.encode();
        let payload_len = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let mut at = HEADER_LEN;
        while bytes[at + 8] != tag::FAMILY {
            at += 8 + payload_len(at);
        }
        let mut bad = bytes.clone();
        let last = at + 8 + payload_len(at) - 1;
        bad[last] = 9;
        let crc = crc32(&[&bad[at + 8..=last]]);
        bad[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        let err = ManifestState::decode(&bad).unwrap_err();
        assert!(err.what.contains("aggregate"), "{}", err.what);
    }

    #[test]
    fn a_log_being_written_and_a_closed_one_round_trip() {
        let mut s = sample();
        s.logs = vec![LogMeta { number: 11, closed_size: Some(12) }, LogMeta::open(12)];
        s.next_file = 13;
        assert_eq!(ManifestState::decode(&s.encode()).unwrap(), s);
        s.close_log(12, 4096);
        assert_eq!(s.logs[1].closed_size, Some(4096));
    }

    #[test]
    fn the_deepest_rule_validation_accepts_round_trips() {
        let deep = (1..GcRule::MAX_DEPTH).fold(GcRule::max_versions(1), |r, _| GcRule::union([r]));
        assert!(deep.validate().is_ok());
        let mut s = sample();
        s.tables[0].families[0].gc_rule = deep;
        assert_eq!(ManifestState::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(ManifestState::decode(&bad).is_err(), "flip at {i}");
        }
        for cut in 0..bytes.len() {
            assert!(ManifestState::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
