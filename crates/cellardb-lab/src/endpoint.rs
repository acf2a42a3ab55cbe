//! Any Bigtable endpoint as a store of the lab: `cellar serve` or Google's
//! emulator in plaintext, or Cloud Bigtable (an endpoint on port 443:
//! TLS, the machine's root certificates, and application-default
//! credentials; tables made through `bigtableadmin.googleapis.com` when the
//! data endpoint is `bigtable.googleapis.com`). A
//! design's table is created through the table admin API (its families and
//! GC rules), events are written with `MutateRows` in batches as Google's
//! client batchers send them (up to 100 entries or 20 MB a request, a few
//! requests in flight), and each read is one `ReadRows` call whose chunks
//! are merged into cells as a client merges them.
//!
//! The Data API does not tell how many bytes a table takes on disk, nor
//! lets its user compact: bytes, write amplification and blocks read are
//! reported as unknown.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use cellardb::{Error, Mutation, Result};
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use pb::read_rows_response::cell_chunk::RowStatus;
use pb::row_filter::Filter as F;
use tonic::transport::Channel;

use crate::measure::{SpecConfig, Store};
use crate::plan::{Cell, End, Plan, Rows};
use crate::spec::Design;

/// Entries in one `MutateRows` request at most, as Google's batchers send.
const BATCH_ENTRIES: usize = 100;
/// Bytes of mutations in one request at most.
const BATCH_BYTES: usize = 20 << 20;
/// Requests in flight at once.
const IN_FLIGHT: usize = 4;

/// Where the endpoint is and whose tables the lab makes there.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `HOST:PORT`.
    pub address: String,
    /// The project the tables live under.
    pub project: String,
    /// The instance.
    pub instance: String,
}

/// The OAuth scopes the lab's calls need on Cloud Bigtable.
const SCOPES: [&str; 2] =
    ["https://www.googleapis.com/auth/bigtable.data", "https://www.googleapis.com/auth/bigtable.admin.table"];

/// A connected endpoint: its data and admin channels, and the source of
/// access tokens where it wants them.
#[derive(Clone)]
struct Connection {
    data: Channel,
    admin: Channel,
    auth: Option<std::sync::Arc<dyn gcp_auth::TokenProvider>>,
}

impl Connection {
    /// `message` as a request, with an access token where the endpoint
    /// wants one, and the routing header Google's clients send.
    async fn request<T>(&self, message: T, endpoint: &str, call: &str, table: &str) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        if let Some(auth) = &self.auth {
            let token = auth.token(&SCOPES).await.map_err(|e| {
                Error::io(endpoint, std::io::Error::other(format!("{call} on {endpoint}: no access token: {e}")))
            })?;
            if let Ok(value) = format!("Bearer {}", token.as_str()).parse() {
                request.metadata_mut().insert("authorization", value);
            }
        }
        if !table.is_empty()
            && let Ok(value) = format!("table_name={}", table.replace('/', "%2F")).parse()
        {
            request.metadata_mut().insert("x-goog-request-params", value);
        }
        Ok(request)
    }
}

impl Endpoint {
    /// How a report names it.
    pub fn name(&self) -> String {
        format!("endpoint {}", self.address)
    }

    fn instance_name(&self) -> String {
        format!("projects/{}/instances/{}", self.project, self.instance)
    }

    /// Whether the endpoint is reached over TLS with credentials (port 443,
    /// as Cloud Bigtable's are).
    pub fn is_cloud(&self) -> bool {
        self.address.ends_with(":443")
    }

    /// Where the table admin API is: Cloud Bigtable's own host for its data
    /// host, else the same server.
    fn admin_address(&self) -> String {
        match self.address.strip_prefix("bigtable.googleapis.com:") {
            Some(port) => format!("bigtableadmin.googleapis.com:{port}"),
            None => self.address.clone(),
        }
    }

    /// Connects, or says which endpoint could not be reached (or wants
    /// credentials this machine does not have).
    ///
    /// # Errors
    /// `Error::Io` naming the endpoint.
    fn connect(&self, runtime: &tokio::runtime::Runtime) -> Result<Connection> {
        let auth = if self.is_cloud() {
            let provider = runtime.block_on(gcp_auth::provider()).map_err(|e| {
                Error::io(
                    &self.address,
                    std::io::Error::other(format!(
                        "{} wants credentials and none were found (application-default credentials: \
                         `gcloud auth application-default login`, or GOOGLE_APPLICATION_CREDENTIALS): {e}",
                        self.address
                    )),
                )
            })?;
            Some(provider)
        } else {
            None
        };
        let channel = |address: &str| -> Result<Channel> {
            let fail = |e: &dyn std::fmt::Display| {
                Error::io(address, std::io::Error::other(format!("cannot reach the endpoint {address}: {e}")))
            };
            let scheme = if self.is_cloud() { "https" } else { "http" };
            let mut endpoint = Channel::from_shared(format!("{scheme}://{address}")).map_err(|e| fail(&e))?;
            if self.is_cloud() {
                let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
                let tls = tonic::transport::ClientTlsConfig::new().with_native_roots().domain_name(host);
                endpoint = endpoint.tls_config(tls).map_err(|e| fail(&e))?;
            }
            runtime
                .block_on(endpoint.connect_timeout(Duration::from_secs(10)).tcp_nodelay(true).connect())
                .map_err(|e| fail(&e))
        };
        Ok(Connection { data: channel(&self.address)?, admin: channel(&self.admin_address())?, auth })
    }
}

/// A refused call, with the endpoint and the call named.
fn refused(endpoint: &str, call: &str, status: &tonic::Status) -> Error {
    Error::io(
        endpoint,
        std::io::Error::other(format!("{call} on {endpoint} failed: {:?}: {}", status.code(), status.message())),
    )
}

/// An opener of fresh tables on `endpoint`, one per design (dropped first
/// if there, from an earlier run).
///
/// # Errors
/// `Error::Io` if the endpoint cannot be reached.
pub fn open_endpoint<'a>(
    config: &'a SpecConfig,
    endpoint: &'a Endpoint,
) -> Result<impl Fn(&Design, usize) -> Result<Box<dyn Store>> + 'a> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io(&endpoint.address, e))?;
    let connection = endpoint.connect(&runtime)?;
    let runtime = std::sync::Arc::new(runtime);
    Ok(move |design: &Design, _round: usize| {
        let table_id = format!("{}-{}", config.spec.name, design.name);
        let table = format!("{}/tables/{table_id}", endpoint.instance_name());
        create_table(&runtime, &connection, endpoint, &table_id, design)?;
        Ok(Box::new(Remote {
            runtime: std::sync::Arc::clone(&runtime),
            client: BigtableClient::new(connection.data.clone()).max_decoding_message_size(256 << 20),
            connection: connection.clone(),
            endpoint: endpoint.address.clone(),
            table,
            batch: Vec::new(),
            batch_bytes: 0,
            in_flight: VecDeque::new(),
        }) as Box<dyn Store>)
    })
}

fn create_table(
    runtime: &tokio::runtime::Runtime,
    connection: &Connection,
    endpoint: &Endpoint,
    table_id: &str,
    design: &Design,
) -> Result<()> {
    use admin::bigtable_table_admin_client::BigtableTableAdminClient;
    let mut client = BigtableTableAdminClient::new(connection.admin.clone());
    let name = format!("{}/tables/{table_id}", endpoint.instance_name());
    let address = &endpoint.address;
    runtime.block_on(async {
        let delete =
            connection.request(admin::DeleteTableRequest { name: name.clone() }, address, "DeleteTable", "").await?;
        match client.delete_table(delete).await {
            Ok(_) => {}
            Err(s) if s.code() == tonic::Code::NotFound => {}
            Err(s) => return Err(refused(&endpoint.address, "DeleteTable", &s)),
        }
        let families = design
            .families
            .iter()
            .map(|f| Ok((f.name.clone(), admin::ColumnFamily { gc_rule: admin_gc(&f.gc)?, ..Default::default() })))
            .collect::<Result<_>>()?;
        let request = admin::CreateTableRequest {
            parent: endpoint.instance_name(),
            table_id: table_id.to_owned(),
            table: Some(admin::Table { column_families: families, ..Default::default() }),
            ..Default::default()
        };
        let request = connection.request(request, address, "CreateTable", "").await?;
        client.create_table(request).await.map_err(|s| refused(&endpoint.address, "CreateTable", &s))?;
        Ok(())
    })
}

/// A GC rule in `cbt`'s words ([`crate::spec::parse_gc`]) as the admin API's.
fn admin_gc(text: &str) -> Result<Option<admin::GcRule>> {
    use admin::gc_rule::Rule;
    let one = |t: &str| -> Result<Option<Rule>> {
        let bad = || Error::InvalidArgument(format!("GC rule {t:?}"));
        Ok(match t.trim().split_once('=') {
            None if t.trim() == "never" => None,
            Some(("maxversions", n)) => Some(Rule::MaxNumVersions(n.trim().parse().map_err(|_| bad())?)),
            Some(("maxage", d)) => {
                let micros = crate::spec::time::parse_duration(d).map_err(Error::InvalidArgument)?;
                Some(Rule::MaxAge(prost_types::Duration {
                    seconds: micros / 1_000_000,
                    nanos: i32::try_from(micros % 1_000_000 * 1000).unwrap_or(0),
                }))
            }
            _ => return Err(bad()),
        })
    };
    let rules = |sep: &str| -> Result<Vec<admin::GcRule>> {
        text.split(sep).map(|t| Ok(admin::GcRule { rule: one(t)? })).collect()
    };
    Ok(if text.contains(" or ") {
        Some(admin::GcRule { rule: Some(Rule::Union(admin::gc_rule::Union { rules: rules(" or ")? })) })
    } else if text.contains(" and ") {
        Some(admin::GcRule { rule: Some(Rule::Intersection(admin::gc_rule::Intersection { rules: rules(" and ")? })) })
    } else {
        one(text)?.map(|rule| admin::GcRule { rule: Some(rule) })
    })
}

/// A design's table on an endpoint.
struct Remote {
    runtime: std::sync::Arc<tokio::runtime::Runtime>,
    client: BigtableClient<Channel>,
    connection: Connection,
    endpoint: String,
    table: String,
    batch: Vec<pb::mutate_rows_request::Entry>,
    batch_bytes: usize,
    in_flight: VecDeque<tokio::task::JoinHandle<Result<()>>>,
}

impl Remote {
    /// Sends the batch; waits for the oldest request if too many are in flight.
    fn send(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        if self.in_flight.len() >= IN_FLIGHT {
            self.wait_oldest()?;
        }
        let request = pb::MutateRowsRequest {
            table_name: self.table.clone(),
            entries: std::mem::take(&mut self.batch),
            ..Default::default()
        };
        self.batch_bytes = 0;
        let mut client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let (connection, table) = (self.connection.clone(), self.table.clone());
        self.in_flight.push_back(self.runtime.spawn(async move {
            let request = connection.request(request, &endpoint, "MutateRows", &table).await?;
            let mut stream =
                client.mutate_rows(request).await.map_err(|s| refused(&endpoint, "MutateRows", &s))?.into_inner();
            while let Some(response) = stream.message().await.map_err(|s| refused(&endpoint, "MutateRows", &s))? {
                if let Some(failed) = response.entries.iter().find_map(|e| e.status.as_ref().filter(|s| s.code != 0)) {
                    return Err(Error::io(
                        &endpoint,
                        std::io::Error::other(format!("MutateRows on {endpoint}: an entry failed: {}", failed.message)),
                    ));
                }
            }
            Ok(())
        }));
        Ok(())
    }

    fn wait_oldest(&mut self) -> Result<()> {
        let Some(task) = self.in_flight.pop_front() else { return Ok(()) };
        self.runtime.block_on(task).map_err(|e| Error::io(&self.endpoint, std::io::Error::other(e)))?
    }
}

impl Store for Remote {
    fn write_event(&mut self, rows: Vec<(String, Vec<Mutation>)>) -> Result<()> {
        for (key, mutations) in rows {
            let mutations: Vec<pb::Mutation> = mutations.into_iter().filter_map(set_cell).collect();
            self.batch_bytes += key.len() + mutations.iter().map(prost::Message::encoded_len).sum::<usize>();
            self.batch.push(pb::mutate_rows_request::Entry { row_key: Bytes::from(key), mutations, idempotency: None });
        }
        if self.batch.len() >= BATCH_ENTRIES || self.batch_bytes >= BATCH_BYTES {
            self.send()?;
        }
        Ok(())
    }

    fn finish_writes(&mut self) -> Result<()> {
        self.send()?;
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn compact(&mut self) -> Result<()> {
        Ok(())
    }

    fn bytes_written(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    fn stall_time(&self) -> Option<Duration> {
        None
    }

    fn blocks_read(&self) -> Option<u64> {
        None
    }

    fn read(&self, plan: &Plan, sink: &mut dyn FnMut(Cell<'_>)) -> Result<()> {
        let request = pb::ReadRowsRequest {
            table_name: self.table.clone(),
            rows: Some(row_set(&plan.rows)),
            filter: filter(plan),
            rows_limit: i64::from(plan.one_row.is_some()),
            reversed: plan.one_row == Some(End::Last),
            ..Default::default()
        };
        let mut client = self.client.clone();
        self.runtime.block_on(async {
            let request =
                with_features(self.connection.request(request, &self.endpoint, "ReadRows", &self.table).await?);
            let mut stream =
                client.read_rows(request).await.map_err(|s| refused(&self.endpoint, "ReadRows", &s))?.into_inner();
            let mut merger = Merger::default();
            while let Some(response) = stream.message().await.map_err(|s| refused(&self.endpoint, "ReadRows", &s))? {
                for chunk in response.chunks {
                    merger.chunk(chunk, sink);
                }
            }
            Ok(())
        })
    }

    fn close(mut self: Box<Self>) -> Result<Option<u64>> {
        self.finish_writes()?;
        Ok(None)
    }
}

/// `request` with the `bigtable-features` header Google's clients send,
/// saying this client takes reversed scans (Bigtable serves them only to
/// clients that say so).
fn with_features(mut request: tonic::Request<pb::ReadRowsRequest>) -> tonic::Request<pb::ReadRowsRequest> {
    use base64::Engine as _;
    use prost::Message as _;
    let flags = pb::FeatureFlags { reverse_scans: true, last_scanned_row_responses: true, ..Default::default() };
    let header = base64::engine::general_purpose::URL_SAFE.encode(flags.encode_to_vec());
    if let Ok(value) = header.parse() {
        request.metadata_mut().insert("bigtable-features", value);
    }
    request
}

fn set_cell(m: Mutation) -> Option<pb::Mutation> {
    let Mutation::SetCell { family, qualifier, timestamp, value } = m else { return None };
    Some(pb::Mutation {
        mutation: Some(pb::mutation::Mutation::SetCell(pb::mutation::SetCell {
            family_name: family,
            column_qualifier: qualifier,
            timestamp_micros: timestamp.micros(),
            value,
        })),
    })
}

/// A plan's rows as the API's row set.
fn row_set(rows: &Rows) -> pb::RowSet {
    use pb::row_range::{EndKey, StartKey};
    let range = |start: Vec<u8>, end: Option<Vec<u8>>| pb::RowRange {
        start_key: Some(StartKey::StartKeyClosed(Bytes::from(start))),
        end_key: end.map(|e| EndKey::EndKeyOpen(Bytes::from(e))),
    };
    match rows {
        Rows::Keys(keys) => {
            pb::RowSet { row_keys: keys.iter().map(|k| Bytes::from(k.clone())).collect(), row_ranges: Vec::new() }
        }
        Rows::Range(from, to) => {
            pb::RowSet { row_keys: Vec::new(), row_ranges: vec![range(from.clone().into(), Some(to.clone().into()))] }
        }
        Rows::Prefix(p) => {
            pb::RowSet { row_keys: Vec::new(), row_ranges: vec![range(p.clone().into(), successor(p.as_bytes()))] }
        }
        Rows::All => {
            pb::RowSet { row_keys: Vec::new(), row_ranges: vec![pb::RowRange { start_key: None, end_key: None }] }
        }
    }
}

/// The first key after every key starting with `prefix`, if there is one.
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A plan's filters as the API's chain, as [`Plan::filter`] makes them.
fn filter(plan: &Plan) -> Option<pb::RowFilter> {
    let mut filters = Vec::new();
    if let Some(f) = &plan.family {
        filters.push(F::FamilyNameRegexFilter(regex::escape(f)));
    }
    if let Some(c) = &plan.column {
        filters.push(F::ColumnQualifierRegexFilter(Bytes::from(c.clone())));
    }
    if let Some((start, end)) = plan.time {
        filters.push(F::TimestampRangeFilter(pb::TimestampRange {
            start_timestamp_micros: start,
            end_timestamp_micros: end,
        }));
    }
    if plan.newest_per_column {
        filters.push(F::CellsPerColumnLimitFilter(1));
    }
    match filters.len() {
        0 => None,
        1 => filters.pop().map(|f| pb::RowFilter { filter: Some(f) }),
        _ => Some(pb::RowFilter {
            filter: Some(F::Chain(pb::row_filter::Chain {
                filters: filters.into_iter().map(|f| pb::RowFilter { filter: Some(f) }).collect(),
            })),
        }),
    }
}

/// `ReadRows` chunks merged into cells, handed out a row at a time once
/// the row commits.
#[derive(Default)]
struct Merger {
    row: Vec<u8>,
    family: String,
    qualifier: Vec<u8>,
    /// The row's cells so far: family, qualifier, timestamp, value.
    cells: Vec<(String, Vec<u8>, i64, Vec<u8>)>,
    in_value: bool,
}

impl Merger {
    fn chunk(&mut self, c: pb::read_rows_response::CellChunk, sink: &mut dyn FnMut(Cell<'_>)) {
        if matches!(c.row_status, Some(RowStatus::ResetRow(true))) {
            self.cells.clear();
            self.in_value = false;
            return;
        }
        if self.in_value {
            if let Some(cell) = self.cells.last_mut() {
                cell.3.extend_from_slice(&c.value);
            }
        } else {
            if !c.row_key.is_empty() {
                self.row = c.row_key.to_vec();
            }
            if let Some(f) = c.family_name {
                self.family = f;
            }
            if let Some(q) = c.qualifier {
                self.qualifier = q;
            }
            self.cells.push((self.family.clone(), self.qualifier.clone(), c.timestamp_micros, c.value.to_vec()));
        }
        self.in_value = c.value_size > 0;
        if matches!(c.row_status, Some(RowStatus::CommitRow(true))) {
            for (family, qualifier, timestamp, value) in &self.cells {
                sink(Cell { row: &self.row, family, qualifier, timestamp: *timestamp, value });
            }
            self.cells.clear();
        }
    }
}
