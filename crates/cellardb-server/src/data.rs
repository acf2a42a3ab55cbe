//! The Data API (`google.bigtable.v2.Bigtable`) over one cellardb database.
//!
//! The engine's calls block (a write waits for its log, a read for its
//! blocks), so each runs on Tokio's blocking pool. A read streams: a
//! blocking task walks the rows and sends each row's response through a
//! small bounded channel, so the answer is never gathered in memory and a
//! slow client slows the read rather than filling the server.

use std::pin::Pin;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use bytes::Bytes;
use cellardb::{Db, Durability, Step, Table};
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use googleapis_tonic_google_bigtable_v2::google::rpc;
use prost::Message as _;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use crate::bigtable_server::Bigtable;
use crate::chunks::row_chunks;
use crate::convert;
use crate::names::{Names, instance};
use crate::status::{invalid, status_of};

/// Rows' responses waiting for a slow client, per read.
const READ_AHEAD: usize = 16;

/// A read that passes over this many rows in a row without returning one
/// (its filter drops them) tells the client how far it got, in a response
/// of no chunks and `last_scanned_row_key`: a client that retries the read
/// after a failure then starts past them, and a long silent scan does not
/// look like a stalled one.
const REPORT_SCANNED_EVERY: usize = 1000;

/// The first rows of a `ReadRows` answer go a response each, as Bigtable
/// and the emulator send a short answer: a reader that wants only the
/// first rows has each at once, and clients' tests that count responses
/// (Google's mid-stream retry tests inject an error after the fifth) meet
/// what they expect. Rows after them are packed.
const UNPACKED_ROWS: usize = 16;

/// A `ReadRows` response is sent once the rows packed into it hold this
/// many bytes of keys, qualifiers and values: fewer, larger messages for a
/// scan, each far under the 4 MiB clients accept by default (one row alone
/// can exceed it: a row is never split over responses).
const PACK_BYTES: usize = 256 << 10;

/// The rows of one `ReadRows` response, as they are packed.
#[derive(Default)]
struct Packed {
    chunks: Vec<pb::read_rows_response::CellChunk>,
    value_bytes: usize,
}

impl Packed {
    /// Adds `row`'s chunks; the bytes packed so far.
    fn add(&mut self, row: &cellardb::RowRef<'_>, value_chunk: usize) -> usize {
        let before = self.chunks.len();
        row_chunks(row, value_chunk, &mut self.chunks);
        self.value_bytes += self.chunks[before..]
            .iter()
            .map(|c| c.value.len() + c.qualifier.as_ref().map_or(0, Vec::len))
            .sum::<usize>()
            + row.key().len();
        self.value_bytes
    }

    fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The response of the rows packed, leaving none.
    fn take(&mut self) -> pb::ReadRowsResponse {
        self.value_bytes = 0;
        pb::ReadRowsResponse { chunks: std::mem::take(&mut self.chunks), ..pb::ReadRowsResponse::default() }
    }
}

/// Sends the answer of `read` through `send`: its first [`UNPACKED_ROWS`]
/// rows a response each, then rows packed into responses until one holds
/// [`PACK_BYTES`]; a packed response is sent then, before a scanned-row
/// report, before an error, and at the end. Stops when `send` says the
/// client went away.
fn send_rows(
    mut read: cellardb::ReadRows,
    value_chunk: usize,
    mut send: impl FnMut(Result<pb::ReadRowsResponse, Status>) -> bool,
) {
    let mut packed = Packed::default();
    let mut rows = 0;
    while let Some(step) = read.next_step() {
        match step {
            Ok(Step::Row(row)) => {
                rows += 1;
                let full = packed.add(&row, value_chunk) >= PACK_BYTES || rows <= UNPACKED_ROWS;
                if full && !send(Ok(packed.take())) {
                    return;
                }
            }
            Ok(Step::Scanned(key)) => {
                let report = pb::ReadRowsResponse {
                    last_scanned_row_key: Bytes::copy_from_slice(key),
                    ..pb::ReadRowsResponse::default()
                };
                if (!packed.is_empty() && !send(Ok(packed.take()))) || !send(Ok(report)) {
                    return;
                }
            }
            Err(e) => {
                if packed.is_empty() || send(Ok(packed.take())) {
                    send(Err(status_of(&e)));
                }
                return;
            }
        }
    }
    if !packed.is_empty() {
        send(Ok(packed.take()));
    }
}

/// The most mutations one `MutateRow`, `MutateRows` or
/// `CheckAndMutateRow` request may hold, as in Bigtable.
pub const MAX_MUTATIONS: usize = 100_000;

/// The Data API service.
#[derive(Clone)]
pub struct DataService {
    db: Db,
    names: Names,
    /// Values longer than this are split over several chunks of a read.
    value_chunk: usize,
}

impl DataService {
    /// The service over `db`, its tables named by `names`, splitting
    /// values above `value_chunk` bytes.
    pub fn new(db: Db, names: Names, value_chunk: usize) -> DataService {
        DataService { db, names, value_chunk }
    }

    fn table(&self, table_name: &str, view_name: &str) -> Result<Table, Status> {
        let name = self.names.table_of(table_name, view_name)?;
        self.db.table(name).map_err(|e| status_of(&e))
    }
}

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Runs `f` on the blocking pool: the engine's calls block (a write on its
/// log, a schema change on the manifest, a read on its blocks).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(format!("a request's task failed: {e}")))?
}

/// Runs the write `f`: on this task when the database's writes are
/// buffered (a memtable insert and a `write` to the log, shorter than the
/// hand-offs to a blocking thread and back; it waits, as every writer does,
/// only when flushes fall behind), on the blocking pool when each waits for
/// the disk.
async fn write<T: Send + 'static>(
    db: &Db,
    f: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    if db.durability() == Durability::Buffered { f() } else { blocking(f).await }
}

fn unimplemented<T>(what: &str) -> Result<T, Status> {
    Err(Status::unimplemented(format!("{what} is not served by cellardb (docs/server.md lists what is)")))
}

/// Whether the request's `bigtable-features` header (a base64 `FeatureFlags`
/// message, which Google's clients send) says the client can merge rows
/// that come in descending order. Bigtable refuses reversed reads to any
/// other client, whose merger would reject the answer; a header that does
/// not decode says nothing.
fn advertises_reverse_scans(metadata: &MetadataMap) -> bool {
    let Some(header) = metadata.get("bigtable-features").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let flags = [&URL_SAFE_INDIFFERENT, &STANDARD_INDIFFERENT]
        .iter()
        .find_map(|engine| engine.decode(header.trim()).ok())
        .and_then(|bytes| pb::FeatureFlags::decode(bytes.as_slice()).ok());
    flags.is_some_and(|f| f.reverse_scans)
}

/// Base64 as Google's clients write the header: the URL-safe alphabet
/// (Go, Java) or the standard one (Node.js), padded or not.
const URL_SAFE_INDIFFERENT: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, indifferent_padding());
const STANDARD_INDIFFERENT: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, indifferent_padding());

const fn indifferent_padding() -> GeneralPurposeConfig {
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent)
}

fn check_mutation_count(n: usize) -> Result<(), Status> {
    if n > MAX_MUTATIONS {
        return Err(invalid(format!("{n} mutations in one request: at most {MAX_MUTATIONS}")));
    }
    Ok(())
}

#[tonic::async_trait]
impl Bigtable for DataService {
    type ReadRowsStream = Streamed<pb::ReadRowsResponse>;

    async fn read_rows(&self, request: Request<pb::ReadRowsRequest>) -> Result<Response<Self::ReadRowsStream>, Status> {
        let reverse_scans = advertises_reverse_scans(request.metadata());
        let req = request.into_inner();
        if !req.materialized_view_name.is_empty() {
            return unimplemented("reading a materialized view");
        }
        if req.reversed && !reverse_scans {
            return Err(Status::unimplemented(
                "a reversed read from a client that does not advertise reverse scans: as Bigtable does, cellardb \
                 serves them only to clients whose `bigtable-features` header sets FeatureFlags.reverse_scans",
            ));
        }
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        let filter = convert::filter(req.filter.as_ref())?;
        let one_row = req.rows.as_ref().is_some_and(|r| r.row_keys.len() == 1 && r.row_ranges.is_empty());
        let rows = convert::row_set(req.rows.as_ref())?;
        let limit = usize::try_from(req.rows_limit)
            .map_err(|_| invalid(format!("rows_limit is negative ({})", req.rows_limit)))?;
        let value_chunk = self.value_chunk;
        let read = move || {
            let read = table.read_rows(rows, &filter).limit(limit).report_scanned(REPORT_SCANNED_EVERY);
            if req.reversed { read.reversed() } else { read }
        };
        if one_row {
            // A point read answers in one response: it is read on this
            // task, without the hand-offs to a blocking thread and back
            // that would cost more than the read.
            let mut responses = Vec::with_capacity(1);
            send_rows(read(), value_chunk, |response| {
                responses.push(response);
                true
            });
            return Ok(Response::new(Box::pin(tokio_stream::iter(responses))));
        }
        let (tx, rx) = mpsc::channel(READ_AHEAD);
        tokio::task::spawn_blocking(move || {
            send_rows(read(), value_chunk, |response| tx.blocking_send(response).is_ok());
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type SampleRowKeysStream = Streamed<pb::SampleRowKeysResponse>;

    async fn sample_row_keys(
        &self,
        request: Request<pb::SampleRowKeysRequest>,
    ) -> Result<Response<Self::SampleRowKeysStream>, Status> {
        let req = request.into_inner();
        if !req.materialized_view_name.is_empty() {
            return unimplemented("sampling a materialized view");
        }
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        let samples = blocking(move || table.sample_row_keys().map_err(|e| status_of(&e))).await?;
        let responses: Vec<Result<pb::SampleRowKeysResponse, Status>> = samples
            .into_iter()
            .map(|(row_key, offset)| {
                Ok(pb::SampleRowKeysResponse { row_key, offset_bytes: i64::try_from(offset).unwrap_or(i64::MAX) })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(responses))))
    }

    async fn mutate_row(
        &self,
        request: Request<pb::MutateRowRequest>,
    ) -> Result<Response<pb::MutateRowResponse>, Status> {
        let req = request.into_inner();
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        check_mutation_count(req.mutations.len())?;
        let mutations = convert::mutations(&req.mutations)?;
        let key = req.row_key;
        let db = table.db().clone();
        write(&db, move || table.mutate_row(&key, mutations).map_err(|e| status_of(&e))).await?;
        Ok(Response::new(pb::MutateRowResponse {}))
    }

    type MutateRowsStream = Streamed<pb::MutateRowsResponse>;

    async fn mutate_rows(
        &self,
        request: Request<pb::MutateRowsRequest>,
    ) -> Result<Response<Self::MutateRowsStream>, Status> {
        let req = request.into_inner();
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        if req.entries.is_empty() {
            return Err(invalid("no entries: a MutateRows request must hold at least one"));
        }
        check_mutation_count(req.entries.iter().map(|e| e.mutations.len()).sum())?;
        // An entry whose mutations do not convert fails alone, as one that
        // the engine refuses does.
        // The valid entries move to the engine; each refused one keeps its
        // status, in its place.
        let mut valid = Vec::with_capacity(req.entries.len());
        let mut refused: Vec<Option<Status>> = Vec::with_capacity(req.entries.len());
        for entry in req.entries {
            match convert::mutations(&entry.mutations) {
                Ok(mutations) => {
                    valid.push((entry.row_key, mutations));
                    refused.push(None);
                }
                Err(status) => refused.push(Some(status)),
            }
        }
        let db = table.db().clone();
        let statuses = write(&db, move || {
            let mut written = table.mutate_rows(valid).into_iter();
            Ok(refused
                .into_iter()
                .map(|refusal| match refusal {
                    None => written.next().unwrap_or(Err(cellardb::Error::Closed)).map_err(|e| status_of(&e)),
                    Some(status) => Err(status),
                })
                .collect::<Vec<_>>())
        })
        .await?;
        let entries = statuses
            .into_iter()
            .enumerate()
            .map(|(index, result)| pb::mutate_rows_response::Entry {
                index: i64::try_from(index).unwrap_or(i64::MAX),
                status: Some(rpc_status(result.err())),
            })
            .collect();
        let response = pb::MutateRowsResponse { entries, rate_limit_info: None };
        Ok(Response::new(Box::pin(tokio_stream::iter([Ok(response)]))))
    }

    async fn check_and_mutate_row(
        &self,
        request: Request<pb::CheckAndMutateRowRequest>,
    ) -> Result<Response<pb::CheckAndMutateRowResponse>, Status> {
        let req = request.into_inner();
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        check_mutation_count(req.true_mutations.len() + req.false_mutations.len())?;
        if req.true_mutations.is_empty() && req.false_mutations.is_empty() {
            return Err(invalid("No mutations provided: true_mutations and false_mutations are both empty"));
        }
        let predicate = convert::filter(req.predicate_filter.as_ref())?;
        let branch = |ms: &[pb::Mutation]| if ms.is_empty() { Ok(Vec::new()) } else { convert::mutations(ms) };
        let (on_true, on_false) = (branch(&req.true_mutations)?, branch(&req.false_mutations)?);
        let key = req.row_key;
        let predicate_matched = blocking(move || {
            table.check_and_mutate_row(&key, &predicate, on_true, on_false).map_err(|e| status_of(&e))
        })
        .await?;
        Ok(Response::new(pb::CheckAndMutateRowResponse { predicate_matched }))
    }

    async fn ping_and_warm(
        &self,
        request: Request<pb::PingAndWarmRequest>,
    ) -> Result<Response<pb::PingAndWarmResponse>, Status> {
        instance(&request.get_ref().name)?;
        Ok(Response::new(pb::PingAndWarmResponse {}))
    }

    async fn read_modify_write_row(
        &self,
        request: Request<pb::ReadModifyWriteRowRequest>,
    ) -> Result<Response<pb::ReadModifyWriteRowResponse>, Status> {
        let req = request.into_inner();
        let table = self.table(&req.table_name, &req.authorized_view_name)?;
        let rules = convert::rules(&req.rules)?;
        let key = req.row_key;
        let row = blocking(move || table.read_modify_write_row(&key, rules).map_err(|e| status_of(&e))).await?;
        Ok(Response::new(pb::ReadModifyWriteRowResponse { row: Some(row_message(&row)) }))
    }

    type GenerateInitialChangeStreamPartitionsStream = Streamed<pb::GenerateInitialChangeStreamPartitionsResponse>;

    async fn generate_initial_change_stream_partitions(
        &self,
        _request: Request<pb::GenerateInitialChangeStreamPartitionsRequest>,
    ) -> Result<Response<Self::GenerateInitialChangeStreamPartitionsStream>, Status> {
        unimplemented("change streams")
    }

    type ReadChangeStreamStream = Streamed<pb::ReadChangeStreamResponse>;

    async fn read_change_stream(
        &self,
        _request: Request<pb::ReadChangeStreamRequest>,
    ) -> Result<Response<Self::ReadChangeStreamStream>, Status> {
        unimplemented("change streams")
    }

    async fn prepare_query(
        &self,
        _request: Request<pb::PrepareQueryRequest>,
    ) -> Result<Response<pb::PrepareQueryResponse>, Status> {
        unimplemented("SQL (PrepareQuery)")
    }

    type ExecuteQueryStream = Streamed<pb::ExecuteQueryResponse>;

    async fn execute_query(
        &self,
        _request: Request<pb::ExecuteQueryRequest>,
    ) -> Result<Response<Self::ExecuteQueryStream>, Status> {
        unimplemented("SQL (ExecuteQuery)")
    }
}

/// A `google.rpc.Status` for a `MutateRows` entry: OK, or the entry's
/// error.
fn rpc_status(error: Option<Status>) -> rpc::Status {
    match error {
        None => rpc::Status { code: 0, message: String::new(), details: Vec::new() },
        Some(s) => rpc::Status { code: s.code() as i32, message: s.message().to_owned(), details: Vec::new() },
    }
}

/// A row as the v2 `Row` message: families, then columns, then cells, in
/// the model's order (the row's own grouping).
fn row_message(row: &cellardb::Row) -> pb::Row {
    let families = row
        .families()
        .map(|f| pb::Family {
            name: f.name.to_owned(),
            columns: f
                .columns()
                .map(|c| pb::Column {
                    qualifier: c.qualifier.clone(),
                    cells: c
                        .cells
                        .iter()
                        .map(|cell| pb::Cell {
                            timestamp_micros: cell.timestamp.micros(),
                            value: cell.value.clone(),
                            labels: cell.labels.clone(),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    pb::Row { key: row.key.clone(), families }
}
