//! The Data API driven through the generated Bigtable client over
//! loopback, as Google's client libraries drive it: every RPC cellardb
//! serves, its errors, and `ReadRows` answers merged back into rows by a
//! merger that checks the chunk rules.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use cellardb::{Db, GcRule};
use cellardb_server::{ServeOptions, serve};
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use pb::read_rows_response::CellChunk;
use pb::read_rows_response::cell_chunk::RowStatus::CommitRow;
use pb::row_filter::Filter as F;
use prost::Message as _;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::Code;
use tonic::transport::Channel;

mod support;

use support::{MergedRow, merge_chunks};

const TABLE: &str = "projects/p/instances/i/tables/weather";

/// A server on an ephemeral loopback port over a fresh database with the
/// table `weather` (families `m` and `n`), and a client of it.
struct Harness {
    client: BigtableClient<Channel>,
    channel: Channel,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), cellardb_server::ServeError>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A server whose own instance is `projects/p/instances/i`, holding the
    /// database's table `weather`.
    async fn start(options: ServeOptions) -> Harness {
        let options = ServeOptions { instance: "projects/p/instances/i".into(), ..options };
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        db.create_table("weather", [("m", GcRule::none()), ("n", GcRule::max_versions(1))]).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(serve(db, listener, options, async {
            stopped.await.ok();
        }));
        let channel = Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
        let client = BigtableClient::new(channel.clone());
        Harness { client, channel, stop: Some(stop), served, _dir: dir }
    }

    async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), self.served).await.unwrap().unwrap().unwrap();
    }
}

fn set_cell(family: &str, qualifier: &str, ts: i64, value: &[u8]) -> pb::Mutation {
    pb::Mutation {
        mutation: Some(pb::mutation::Mutation::SetCell(pb::mutation::SetCell {
            family_name: family.into(),
            column_qualifier: Bytes::copy_from_slice(qualifier.as_bytes()),
            timestamp_micros: ts,
            value: Bytes::copy_from_slice(value),
        })),
    }
}

fn mutate(key: &str, mutations: Vec<pb::Mutation>) -> pb::MutateRowRequest {
    pb::MutateRowRequest {
        table_name: TABLE.into(),
        row_key: Bytes::copy_from_slice(key.as_bytes()),
        mutations,
        ..Default::default()
    }
}

/// Merges a read's answer into rows, failing the test on any chunk a
/// client library would reject (`support::merge_chunks`).
fn merge(responses: &[pb::ReadRowsResponse], reversed: bool) -> Vec<MergedRow> {
    let chunks: Vec<CellChunk> = responses.iter().flat_map(|r| r.chunks.iter().cloned()).collect();
    merge_chunks(&chunks, reversed).unwrap_or_else(|e| panic!("a client would reject this answer: {e}"))
}

async fn read(
    client: &mut BigtableClient<Channel>,
    request: impl tonic::IntoRequest<pb::ReadRowsRequest>,
) -> Result<Vec<pb::ReadRowsResponse>, tonic::Status> {
    let mut stream = client.read_rows(request).await?.into_inner();
    let mut out = Vec::new();
    while let Some(r) = stream.message().await? {
        out.push(r);
    }
    Ok(out)
}

fn read_all() -> pb::ReadRowsRequest {
    pb::ReadRowsRequest { table_name: TABLE.into(), ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_rows_read_back_through_the_chunk_rules_with_split_values() {
    let mut h = Harness::start(ServeOptions { value_chunk: 10, ..ServeOptions::default() }).await;
    let big: Vec<u8> = (0..35u8).collect();
    h.client
        .mutate_row(mutate(
            "r1",
            vec![set_cell("m", "a", 2000, b"v2"), set_cell("m", "a", 1000, &big), set_cell("n", "b", 1000, b"")],
        ))
        .await
        .unwrap();
    h.client.mutate_row(mutate("r2", vec![set_cell("m", "a", 3000, b"x")])).await.unwrap();
    let rows = merge(&read(&mut h.client, read_all()).await.unwrap(), false);
    let cell =
        |f: &str, q: &str, ts, v: &[u8]| (f.to_owned(), q.as_bytes().to_vec(), ts, v.to_vec(), Vec::<String>::new());
    assert_eq!(
        rows,
        vec![
            (b"r1".to_vec(), vec![cell("m", "a", 2000, b"v2"), cell("m", "a", 1000, &big), cell("n", "b", 1000, b"")]),
            (b"r2".to_vec(), vec![cell("m", "a", 3000, b"x")]),
        ]
    );
    // Reversed, limited to one row: the last.
    let reversed = pb::ReadRowsRequest { reversed: true, rows_limit: 1, ..read_all() };
    let rows = merge(&read(&mut h.client, advertising_reverse_scans(reversed.clone())).await.unwrap(), true);
    assert_eq!(rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), vec![b"r2".to_vec()]);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_packs_many_rows_into_each_response_and_never_splits_a_row() {
    let mut h = Harness::start(ServeOptions::default()).await;
    let value = vec![7u8; 1000];
    for batch in 0..4 {
        let entries = (0..500)
            .map(|i| pb::mutate_rows_request::Entry {
                row_key: Bytes::from(format!("row{:05}", batch * 500 + i)),
                mutations: vec![set_cell("m", "q", 1000, &value)],
                ..Default::default()
            })
            .collect();
        let request = pb::MutateRowsRequest { table_name: TABLE.into(), entries, ..Default::default() };
        let mut statuses = h.client.mutate_rows(request).await.unwrap().into_inner();
        while let Some(r) = statuses.message().await.unwrap() {
            assert!(r.entries.iter().all(|e| e.status.as_ref().is_none_or(|s| s.code == 0)));
        }
    }
    let responses = read(&mut h.client, read_all()).await.unwrap();
    let rows = merge(&responses, false);
    assert_eq!(rows.len(), 2000);
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
    // About 2 MB of rows: the first 16 a response each, the rest packed in
    // a handful, each response ending on a row's commit, none much over a
    // quarter of a MiB.
    assert!(responses.len() <= 16 + 16, "{} responses", responses.len());
    assert!(responses[..16].iter().all(|r| r.chunks.len() == 1), "the first rows come one a response");
    for r in &responses {
        let last = r.chunks.last().unwrap();
        assert!(matches!(last.row_status, Some(CommitRow(true))), "a response ends with a whole row");
        let bytes: usize = r.chunks.iter().map(|c| c.value.len()).sum();
        assert!(bytes <= (256 << 10) + 1100, "{bytes} bytes in one response");
    }
    // A point read is one response of one row.
    let one = pb::ReadRowsRequest {
        rows: Some(pb::RowSet { row_keys: vec![Bytes::from_static(b"row00042")], row_ranges: Vec::new() }),
        ..read_all()
    };
    let responses = read(&mut h.client, one).await.unwrap();
    assert_eq!((responses.len(), merge(&responses, false).len()), (1, 1));
    h.stop().await;
}

/// `request` with the `bigtable-features` header Google's Go client sends:
/// base64 of a `FeatureFlags` with `reverse_scans` set.
fn advertising_reverse_scans(request: pb::ReadRowsRequest) -> tonic::Request<pb::ReadRowsRequest> {
    let flags = pb::FeatureFlags { reverse_scans: true, ..Default::default() };
    let header = base64::engine::general_purpose::URL_SAFE.encode(flags.encode_to_vec());
    let mut request = tonic::Request::new(request);
    request.metadata_mut().insert("bigtable-features", header.parse().unwrap());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reversed_reads_are_served_only_to_clients_that_advertise_them() {
    let mut h = Harness::start(ServeOptions::default()).await;
    for key in ["r1", "r2", "r3"] {
        h.client.mutate_row(mutate(key, vec![set_cell("m", "a", 1000, b"v")])).await.unwrap();
    }
    let reversed = pb::ReadRowsRequest { reversed: true, ..read_all() };
    // Without the header, as Bigtable answers: the client's merger would
    // reject rows in descending order.
    let refused = read(&mut h.client, reversed.clone()).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
    assert!(refused.message().contains("reverse_scans"), "{refused:?}");
    // A header of other flags (here mutate_rows_rate_limit), or one that
    // does not decode, is no promise.
    for header in ["GAE=", "not base64!"] {
        let mut request = tonic::Request::new(reversed.clone());
        request.metadata_mut().insert("bigtable-features", header.parse().unwrap());
        assert_eq!(read(&mut h.client, request).await.unwrap_err().code(), Code::Unimplemented, "{header}");
    }
    // With it, every row, last first; the padding-free and standard
    // alphabets of other clients decode too.
    let keys = |responses: &[pb::ReadRowsResponse]| merge(responses, true).into_iter().map(|r| r.0).collect::<Vec<_>>();
    let want = vec![b"r3".to_vec(), b"r2".to_vec(), b"r1".to_vec()];
    assert_eq!(keys(&read(&mut h.client, advertising_reverse_scans(reversed.clone())).await.unwrap()), want);
    let mut request = tonic::Request::new(reversed.clone());
    request.metadata_mut().insert("bigtable-features", "CAE".parse().unwrap());
    assert_eq!(keys(&read(&mut h.client, request).await.unwrap()), want);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_filter_drops_many_rows_reports_the_last_scanned_key() {
    let mut h = Harness::start(ServeOptions::default()).await;
    let entries = (0..2500)
        .map(|i| pb::mutate_rows_request::Entry {
            row_key: Bytes::from(format!("r{i:04}")),
            mutations: vec![set_cell("m", "q", 1000, b"v")],
            idempotency: None,
        })
        .collect();
    let batch = pb::MutateRowsRequest { table_name: TABLE.into(), entries, ..Default::default() };
    let mut statuses = h.client.mutate_rows(batch).await.unwrap().into_inner();
    while let Some(response) = statuses.message().await.unwrap() {
        assert!(response.entries.iter().all(|e| e.status.as_ref().is_none_or(|s| s.code == 0)));
    }
    let only_last = pb::RowFilter { filter: Some(F::RowKeyRegexFilter(Bytes::from_static(b"r2499"))) };
    for reversed in [false, true] {
        let request = pb::ReadRowsRequest { filter: Some(only_last.clone()), reversed, ..read_all() };
        let responses = read(&mut h.client, advertising_reverse_scans(request)).await.unwrap();
        // Responses that only say how far the read got carry no chunk.
        let scanned: Vec<&[u8]> = responses
            .iter()
            .filter(|r| !r.last_scanned_row_key.is_empty())
            .inspect(|r| assert!(r.chunks.is_empty()))
            .map(|r| r.last_scanned_row_key.as_ref())
            .collect();
        // Every 1000 rows passed over in a row, the last of them.
        let want: &[&[u8]] = if reversed { &[b"r1499", b"r0499"] } else { &[b"r0999", b"r1999"] };
        assert_eq!(scanned, want, "reversed: {reversed}");
        let rows = merge(&responses, reversed);
        assert_eq!(rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), vec![b"r2499".to_vec()]);
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_sets_and_filters_select_what_bigtable_selects() {
    let mut h = Harness::start(ServeOptions::default()).await;
    for key in ["a1", "a2", "b1", "b2", "c1"] {
        h.client
            .mutate_row(mutate(key, vec![set_cell("m", "q", 1000, key.as_bytes()), set_cell("m", "r", 1000, b"other")]))
            .await
            .unwrap();
    }
    let keys_of = |responses: &[pb::ReadRowsResponse]| {
        merge(responses, false).into_iter().map(|r| String::from_utf8(r.0).unwrap()).collect::<Vec<_>>()
    };
    // A key, and a range [b1, c1): three rows, each once.
    let rows = pb::RowSet {
        row_keys: vec![Bytes::from_static(b"a2"), Bytes::from_static(b"b1")],
        row_ranges: vec![pb::RowRange {
            start_key: Some(pb::row_range::StartKey::StartKeyClosed(Bytes::from_static(b"b1"))),
            end_key: Some(pb::row_range::EndKey::EndKeyOpen(Bytes::from_static(b"c1"))),
        }],
    };
    let got = read(&mut h.client, pb::ReadRowsRequest { rows: Some(rows), ..read_all() }).await.unwrap();
    assert_eq!(keys_of(&got), ["a2", "b1", "b2"]);
    // A chain: rows matching `b.*`, qualifier q only, labelled.
    let chain = |filters: Vec<pb::row_filter::Filter>| pb::RowFilter {
        filter: Some(pb::row_filter::Filter::Chain(pb::row_filter::Chain {
            filters: filters.into_iter().map(|f| pb::RowFilter { filter: Some(f) }).collect(),
        })),
    };
    let filter = chain(vec![
        F::RowKeyRegexFilter(Bytes::from_static(b"b.*")),
        F::ColumnQualifierRegexFilter(Bytes::from_static(b"q")),
        F::ApplyLabelTransformer("seen".into()),
    ]);
    let got =
        merge(&read(&mut h.client, pb::ReadRowsRequest { filter: Some(filter), ..read_all() }).await.unwrap(), false);
    assert_eq!(got.len(), 2);
    for (key, cells) in got {
        assert_eq!(cells, vec![("m".to_owned(), b"q".to_vec(), 1000, key.clone(), vec!["seen".to_owned()])]);
    }
    h.stop().await;
}

/// `bytes` as RE2's `QuoteMeta` quotes them, as Google's clients build a
/// literal value filter: every ASCII byte but letters, digits and `_`
/// escaped, NUL as `\x00`, bytes from 0x80 as they are (so the pattern
/// need not be UTF-8).
fn quote_meta(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for &b in bytes {
        match b {
            0 => out.extend_from_slice(br"\x00"),
            b if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 => out.push(b),
            b => out.extend_from_slice(&[b'\\', b]),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regexes_are_bytes_matched_against_bytes() {
    let mut h = Harness::start(ServeOptions::default()).await;
    // Integers' big-endian bytes, as a client writes and filters them:
    // bytes from 0x80, a newline, NUL, none of it UTF-8.
    let values: Vec<i64> = vec![1, -1, 10, 128, 255, 0x0a0a, i64::MIN, i64::MAX, -129];
    for (i, v) in values.iter().enumerate() {
        h.client
            .mutate_row(mutate(&format!("row{i}"), vec![set_cell("m", "q", 1000, &v.to_be_bytes())]))
            .await
            .unwrap();
    }
    for (i, v) in values.iter().enumerate() {
        let pattern = Bytes::from(quote_meta(&v.to_be_bytes()));
        let filter = pb::RowFilter { filter: Some(F::ValueRegexFilter(pattern)) };
        let got = merge(
            &read(&mut h.client, pb::ReadRowsRequest { filter: Some(filter), ..read_all() }).await.unwrap(),
            false,
        );
        let keys: Vec<_> = got.iter().map(|r| String::from_utf8(r.0.clone()).unwrap()).collect();
        assert_eq!(keys, [format!("row{i}")], "the value {v}");
    }
    // A class of bytes from 0x80 up, as raw pattern bytes: the negative
    // values (a first byte 0xff or 0x80).
    let negative = pb::RowFilter { filter: Some(F::ValueRegexFilter(Bytes::from_static(b"[\x80-\xff]\\C*"))) };
    let got =
        merge(&read(&mut h.client, pb::ReadRowsRequest { filter: Some(negative), ..read_all() }).await.unwrap(), false);
    assert_eq!(got.len(), values.iter().filter(|v| **v < 0).count());
    // Row key and qualifier regexes take the same bytes.
    for filter in [
        F::RowKeyRegexFilter(Bytes::from_static(b"row1|\xff")),
        F::ColumnQualifierRegexFilter(Bytes::from_static(b"\xfe|q")),
    ] {
        let filter = pb::RowFilter { filter: Some(filter) };
        let got = merge(
            &read(&mut h.client, pb::ReadRowsRequest { filter: Some(filter), ..read_all() }).await.unwrap(),
            false,
        );
        assert!(!got.is_empty());
    }
    h.stop().await;
}

/// A message whose field 1 is an integer, where `MutateRowRequest`'s field
/// 1 (the table's name) is a string.
#[derive(Clone, PartialEq, prost::Message)]
struct WrongWireType {
    #[prost(uint64, tag = "1")]
    table_name: u64,
}

/// A `MutateRowRequest` on the wire whose mutations are all empty: each
/// element 2 bytes sent, a `Mutation` of a few hundred bytes decoded.
#[derive(Clone, PartialEq, prost::Message)]
struct EmptyMutations {
    #[prost(string, tag = "1")]
    table_name: String,
    #[prost(bytes = "vec", repeated, tag = "3")]
    mutations: Vec<Vec<u8>>,
}

/// `MutateRow` called with `request`, a message of another type.
async fn mutate_row_as<M: prost::Message + Default + 'static>(channel: Channel, request: M) -> tonic::Status {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/google.bigtable.v2.Bigtable/MutateRow");
    let codec = tonic_prost::ProstCodec::<M, pb::MutateRowResponse>::default();
    grpc.unary(tonic::Request::new(request), path, codec).await.unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_the_codes_bigtable_answers_with() {
    let mut h = Harness::start(ServeOptions::default()).await;
    let code = |r: Result<tonic::Response<pb::MutateRowResponse>, tonic::Status>| r.unwrap_err().code();
    // Unknown table, malformed name, unknown family, no mutations, a
    // timestamp not in milliseconds, a key over 4 KiB.
    let mut missing = mutate("r", vec![set_cell("m", "q", 1000, b"v")]);
    missing.table_name = "projects/p/instances/i/tables/nope".into();
    assert_eq!(code(h.client.mutate_row(missing).await), Code::NotFound);
    let mut malformed = mutate("r", vec![set_cell("m", "q", 1000, b"v")]);
    malformed.table_name = "weather".into();
    assert_eq!(code(h.client.mutate_row(malformed).await), Code::InvalidArgument);
    assert_eq!(code(h.client.mutate_row(mutate("r", vec![set_cell("zz", "q", 1000, b"v")])).await), Code::NotFound);
    assert_eq!(code(h.client.mutate_row(mutate("r", vec![])).await), Code::InvalidArgument);
    assert_eq!(
        code(h.client.mutate_row(mutate("r", vec![set_cell("m", "q", 1001, b"v")])).await),
        Code::InvalidArgument
    );
    let long = "k".repeat(4097);
    assert_eq!(
        code(h.client.mutate_row(mutate(&long, vec![set_cell("m", "q", 1000, b"v")])).await),
        Code::InvalidArgument
    );
    // A bad regex, a negative limit, a sink set to false.
    let bad_regex =
        pb::RowFilter { filter: Some(pb::row_filter::Filter::ValueRegexFilter(Bytes::from_static(b"(unclosed"))) };
    let err = read(&mut h.client, pb::ReadRowsRequest { filter: Some(bad_regex), ..read_all() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let err = read(&mut h.client, pb::ReadRowsRequest { rows_limit: -1, ..read_all() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    // An empty row key, and no mutations, refused in Bigtable's words
    // (Google's clients' tests look for them).
    let empty_key = pb::RowSet { row_keys: vec![Bytes::new()], row_ranges: Vec::new() };
    let err = read(&mut h.client, pb::ReadRowsRequest { rows: Some(empty_key), ..read_all() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("Row keys must be non-empty"), "{err:?}");
    let err = h.client.mutate_row(mutate("r", vec![])).await.unwrap_err();
    assert!(err.message().contains("No mutations provided"), "{err:?}");
    let sink = pb::RowFilter { filter: Some(pb::row_filter::Filter::Sink(false)) };
    let err = read(&mut h.client, pb::ReadRowsRequest { filter: Some(sink), ..read_all() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    // A request that does not decode: a filter chain nested past the
    // decoder's depth, and bytes of another message.
    let mut deep = pb::RowFilter { filter: Some(pb::row_filter::Filter::PassAllFilter(true)) };
    for _ in 0..60 {
        deep = pb::RowFilter {
            filter: Some(pb::row_filter::Filter::Chain(pb::row_filter::Chain { filters: vec![deep] })),
        };
    }
    let err = read(&mut h.client, pb::ReadRowsRequest { filter: Some(deep), ..read_all() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("does not decode"), "{err:?}");
    let err = mutate_row_as(h.channel.clone(), WrongWireType { table_name: 7 }).await;
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("does not decode"), "{err:?}");
    // A million empty mutations: 2 MB sent, hundreds of MB decoded; refused
    // before it is decoded.
    let flood = EmptyMutations { table_name: TABLE.into(), mutations: vec![Vec::new(); 1_000_000] };
    let err = mutate_row_as(h.channel.clone(), flood).await;
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("too many messages"), "{err:?}");
    // What cellardb does not serve.
    let err = h.client.prepare_query(pb::PrepareQueryRequest::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert!(err.message().contains("not served"), "{err:?}");
    // Nothing was written by any of it.
    assert!(merge(&read(&mut h.client, read_all()).await.unwrap(), false).is_empty());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_conditional_and_read_modify_write_calls_answer_as_bigtable_does() {
    let mut h = Harness::start(ServeOptions::default()).await;
    // MutateRows: a status per entry, the bad one failing alone.
    let entry = |key: &str, family: &str| pb::mutate_rows_request::Entry {
        row_key: Bytes::copy_from_slice(key.as_bytes()),
        mutations: vec![set_cell(family, "q", 1000, b"v")],
        idempotency: None,
    };
    let request = pb::MutateRowsRequest {
        table_name: TABLE.into(),
        entries: vec![entry("a", "m"), entry("b", "nope"), entry("c", "m")],
        ..Default::default()
    };
    let mut stream = h.client.mutate_rows(request).await.unwrap().into_inner();
    let mut statuses = Vec::new();
    while let Some(r) = stream.message().await.unwrap() {
        statuses.extend(r.entries.into_iter().map(|e| (e.index, e.status.unwrap().code)));
    }
    assert_eq!(statuses, vec![(0, 0), (1, Code::NotFound as i32), (2, 0)]);
    // CheckAndMutateRow: the predicate matches row a, not row b.
    let check = |key: &str| pb::CheckAndMutateRowRequest {
        table_name: TABLE.into(),
        row_key: Bytes::copy_from_slice(key.as_bytes()),
        predicate_filter: None,
        true_mutations: vec![set_cell("n", "hit", 1000, b"yes")],
        false_mutations: vec![set_cell("n", "miss", 1000, b"yes")],
        ..Default::default()
    };
    assert!(h.client.check_and_mutate_row(check("a")).await.unwrap().into_inner().predicate_matched);
    assert!(!h.client.check_and_mutate_row(check("b")).await.unwrap().into_inner().predicate_matched);
    // ReadModifyWriteRow: increments from nothing, then again.
    let increment = pb::ReadModifyWriteRowRequest {
        table_name: TABLE.into(),
        row_key: Bytes::from_static(b"counter"),
        rules: vec![pb::ReadModifyWriteRule {
            family_name: "n".into(),
            column_qualifier: Bytes::from_static(b"c"),
            rule: Some(pb::read_modify_write_rule::Rule::IncrementAmount(5)),
        }],
        ..Default::default()
    };
    h.client.read_modify_write_row(increment.clone()).await.unwrap();
    let row = h.client.read_modify_write_row(increment).await.unwrap().into_inner().row.unwrap();
    assert_eq!(row.key.as_ref(), b"counter");
    assert_eq!(row.families[0].name, "n");
    assert_eq!(row.families[0].columns[0].cells[0].value.as_ref(), 10i64.to_be_bytes());
    // SampleRowKeys answers; PingAndWarm checks the instance's name.
    let request = pb::SampleRowKeysRequest { table_name: TABLE.into(), ..Default::default() };
    let mut samples = h.client.sample_row_keys(request).await.unwrap().into_inner();
    while samples.message().await.unwrap().is_some() {}
    let ping = pb::PingAndWarmRequest { name: "projects/p/instances/i".into(), app_profile_id: String::new() };
    h.client.ping_and_warm(ping).await.unwrap();
    let bad_ping = pb::PingAndWarmRequest { name: "nope".into(), app_profile_id: String::new() };
    assert_eq!(h.client.ping_and_warm(bad_ping).await.unwrap_err().code(), Code::InvalidArgument);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_the_limits_or_naming_nothing_to_do_are_refused_and_write_nothing() {
    let mut h = Harness::start(ServeOptions::default()).await;
    // More than 100 000 mutations in one request, as Bigtable refuses.
    let many = (0..=100_000).map(|i| set_cell("m", "q", 1000 * i64::from(i % 50 + 1), b"v")).collect();
    let err = h.client.mutate_row(mutate("r", many)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    // A conditional write with neither branch, and a merge_to_cell.
    let check = pb::CheckAndMutateRowRequest {
        table_name: TABLE.into(),
        row_key: Bytes::from_static(b"r"),
        ..Default::default()
    };
    assert_eq!(h.client.check_and_mutate_row(check).await.unwrap_err().code(), Code::InvalidArgument);
    let merge_to_cell =
        pb::Mutation { mutation: Some(pb::mutation::Mutation::MergeToCell(pb::mutation::MergeToCell::default())) };
    assert_eq!(h.client.mutate_row(mutate("r", vec![merge_to_cell])).await.unwrap_err().code(), Code::Unimplemented);
    assert!(merge(&read(&mut h.client, read_all()).await.unwrap(), false).is_empty());
    h.stop().await;
}
