//! Generates the server side of `google.bigtable.v2.Bigtable` and of
//! `google.bigtable.admin.v2.BigtableTableAdmin` over the message types of
//! `googleapis-tonic-google-bigtable-v2` and `-admin-v2`, which ship the
//! messages and a client but no server. `tonic_build::manual` writes the
//! service trait and its router from the method list below: no `.proto`
//! file and no `protoc` are needed (`docs/server.md`).

use tonic_build::manual::{Builder, Method, Service};

/// The service's RPCs: (Rust name, route name, request, response, whether
/// the response is a stream). Every RPC of the service is listed, so that
/// those cellardb does not serve answer `UNIMPLEMENTED` with a message of
/// the server's own rather than a bare routing error.
const RPCS: &[(&str, &str, &str, &str, bool)] = &[
    ("read_rows", "ReadRows", "ReadRowsRequest", "ReadRowsResponse", true),
    ("sample_row_keys", "SampleRowKeys", "SampleRowKeysRequest", "SampleRowKeysResponse", true),
    ("mutate_row", "MutateRow", "MutateRowRequest", "MutateRowResponse", false),
    ("mutate_rows", "MutateRows", "MutateRowsRequest", "MutateRowsResponse", true),
    ("check_and_mutate_row", "CheckAndMutateRow", "CheckAndMutateRowRequest", "CheckAndMutateRowResponse", false),
    ("ping_and_warm", "PingAndWarm", "PingAndWarmRequest", "PingAndWarmResponse", false),
    ("read_modify_write_row", "ReadModifyWriteRow", "ReadModifyWriteRowRequest", "ReadModifyWriteRowResponse", false),
    (
        "generate_initial_change_stream_partitions",
        "GenerateInitialChangeStreamPartitions",
        "GenerateInitialChangeStreamPartitionsRequest",
        "GenerateInitialChangeStreamPartitionsResponse",
        true,
    ),
    ("read_change_stream", "ReadChangeStream", "ReadChangeStreamRequest", "ReadChangeStreamResponse", true),
    ("prepare_query", "PrepareQuery", "PrepareQueryRequest", "PrepareQueryResponse", false),
    ("execute_query", "ExecuteQuery", "ExecuteQueryRequest", "ExecuteQueryResponse", true),
];

/// The table admin RPCs served: (Rust name, route name, request,
/// response). The others (backups, snapshots, authorized views, IAM) are
/// not listed, and tonic answers them `UNIMPLEMENTED`.
const ADMIN_RPCS: &[(&str, &str, &str, &str)] = &[
    ("create_table", "CreateTable", "CreateTableRequest", "Table"),
    ("list_tables", "ListTables", "ListTablesRequest", "ListTablesResponse"),
    ("get_table", "GetTable", "GetTableRequest", "Table"),
    ("delete_table", "DeleteTable", "DeleteTableRequest", "()"),
    ("modify_column_families", "ModifyColumnFamilies", "ModifyColumnFamiliesRequest", "Table"),
    ("drop_row_range", "DropRowRange", "DropRowRangeRequest", "()"),
    (
        "generate_consistency_token",
        "GenerateConsistencyToken",
        "GenerateConsistencyTokenRequest",
        "GenerateConsistencyTokenResponse",
    ),
    ("check_consistency", "CheckConsistency", "CheckConsistencyRequest", "CheckConsistencyResponse"),
];

/// Where the messages of each service are.
const TYPES: &str = "googleapis_tonic_google_bigtable_v2::google::bigtable::v2";
const ADMIN_TYPES: &str = "googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2";

/// `name` in the module `types`; `()`, `google.protobuf.Empty` (which
/// prost writes as the unit type), through the crate's alias for it, as
/// the builder takes a path.
fn type_path(types: &str, name: &str) -> String {
    if name == "()" { "crate::Empty".to_owned() } else { format!("{types}::{name}") }
}

fn main() {
    let mut service = Service::builder().name("Bigtable").package("google.bigtable.v2");
    for &(name, route, input, output, streams) in RPCS {
        let mut method = Method::builder()
            .name(name)
            .route_name(route)
            .input_type(type_path(TYPES, input))
            .output_type(type_path(TYPES, output))
            .codec_path("crate::codec::RequestCodec");
        if streams {
            method = method.server_streaming();
        }
        service = service.method(method.build());
    }
    let mut admin = Service::builder().name("BigtableTableAdmin").package("google.bigtable.admin.v2");
    for &(name, route, input, output) in ADMIN_RPCS {
        let method = Method::builder()
            .name(name)
            .route_name(route)
            .input_type(type_path(ADMIN_TYPES, input))
            .output_type(type_path(ADMIN_TYPES, output))
            .codec_path("crate::codec::RequestCodec");
        admin = admin.method(method.build());
    }
    Builder::new().build_client(false).compile(&[service.build(), admin.build()]);
}
