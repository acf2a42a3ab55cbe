//! The table admin API driven through the generated admin client over
//! loopback, as `cbt` and the client libraries' admin clients drive it.

use std::collections::HashMap;
use std::time::Duration;

use admin::bigtable_table_admin_client::BigtableTableAdminClient;
use admin::drop_row_range_request::Target;
use admin::gc_rule::Rule;
use admin::modify_column_families_request::Modification;
use admin::modify_column_families_request::modification::Mod;
use bytes::Bytes;
use cellardb::Db;
use cellardb_server::{ServeOptions, serve};
use data::bigtable_client::BigtableClient;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as data;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::Code;
use tonic::transport::Channel;

const INSTANCE: &str = "projects/p/instances/i";

struct Harness {
    admin: BigtableTableAdminClient<Channel>,
    data: BigtableClient<Channel>,
    stop: oneshot::Sender<()>,
    served: tokio::task::JoinHandle<Result<(), cellardb_server::ServeError>>,
    dir: tempfile::TempDir,
}

/// A server over a database that holds one table of its own, `embedded`
/// (made by id, as a program embedding cellardb makes it): a table of the
/// server's own instance, [`cellardb_server::DEFAULT_INSTANCE`], not of
/// [`INSTANCE`].
async fn start() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    start_in(dir).await
}

async fn start_in(dir: tempfile::TempDir) -> Harness {
    let db = Db::open(dir.path()).unwrap();
    if db.table("embedded").is_err() {
        db.create_table("embedded", [("e", cellardb::GcRule::none())]).unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve(db, listener, ServeOptions::default(), async {
        stopped.await.ok();
    }));
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    Harness {
        admin: BigtableTableAdminClient::new(channel.clone()),
        data: BigtableClient::new(channel),
        stop,
        served,
        dir,
    }
}

impl Harness {
    /// Stops the server and closes its database; the directory, to serve
    /// it again.
    async fn stop(self) -> tempfile::TempDir {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), self.served).await.unwrap().unwrap().unwrap();
        self.dir
    }
}

fn versions(n: i32) -> admin::GcRule {
    admin::GcRule { rule: Some(Rule::MaxNumVersions(n)) }
}

fn age(seconds: i64) -> admin::GcRule {
    admin::GcRule { rule: Some(Rule::MaxAge(prost_types::Duration { seconds, nanos: 0 })) }
}

fn family(rule: admin::GcRule) -> admin::ColumnFamily {
    admin::ColumnFamily { gc_rule: Some(rule), value_type: None }
}

fn create(id: &str, families: &[(&str, admin::GcRule)]) -> admin::CreateTableRequest {
    let column_families: HashMap<String, admin::ColumnFamily> =
        families.iter().map(|(name, rule)| ((*name).to_owned(), family(rule.clone()))).collect();
    admin::CreateTableRequest {
        parent: INSTANCE.into(),
        table_id: id.into(),
        table: Some(admin::Table { column_families, ..Default::default() }),
        initial_splits: Vec::new(),
    }
}

fn modify(table: &str, id: &str, m: Mod) -> admin::ModifyColumnFamiliesRequest {
    admin::ModifyColumnFamiliesRequest {
        name: format!("{INSTANCE}/tables/{table}"),
        modifications: vec![Modification { id: id.into(), update_mask: None, r#mod: Some(m) }],
        ignore_warnings: false,
    }
}

fn rules_of(table: &admin::Table) -> Vec<(String, Option<Rule>)> {
    let mut rules: Vec<_> =
        table.column_families.iter().map(|(n, f)| (n.clone(), f.gc_rule.clone().and_then(|r| r.rule))).collect();
    rules.sort_by(|a, b| a.0.cmp(&b.0));
    rules
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_and_families_are_managed_as_bigtable_manages_them() {
    let mut h = start().await;
    let union =
        admin::GcRule { rule: Some(Rule::Union(admin::gc_rule::Union { rules: vec![versions(3), age(86_400)] })) };
    let table = h.admin.create_table(create("weather", &[("m", versions(1)), ("raw", union.clone())])).await.unwrap();
    assert_eq!(table.get_ref().name, format!("{INSTANCE}/tables/weather"));
    assert_eq!(rules_of(table.get_ref()), vec![("m".into(), versions(1).rule), ("raw".into(), union.rule.clone())]);
    let again = h.admin.create_table(create("weather", &[])).await.unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    h.admin.create_table(create("other", &[])).await.unwrap();

    let list = admin::ListTablesRequest { parent: INSTANCE.into(), ..Default::default() };
    let mut names: Vec<String> =
        h.admin.list_tables(list).await.unwrap().into_inner().tables.into_iter().map(|t| t.name).collect();
    names.sort();
    assert_eq!(names, [format!("{INSTANCE}/tables/other"), format!("{INSTANCE}/tables/weather")]);

    // Create, update and drop families; a step that cannot apply fails the
    // request, and changes nothing.
    h.admin.modify_column_families(modify("weather", "new", Mod::Create(family(age(60))))).await.unwrap();
    h.admin.modify_column_families(modify("weather", "m", Mod::Update(family(versions(2))))).await.unwrap();
    let dropped = h.admin.modify_column_families(modify("weather", "raw", Mod::Drop(true))).await.unwrap();
    assert_eq!(rules_of(dropped.get_ref()), vec![("m".into(), versions(2).rule), ("new".into(), age(60).rule)]);
    let batch = admin::ModifyColumnFamiliesRequest {
        name: format!("{INSTANCE}/tables/weather"),
        modifications: vec![
            Modification { id: "x".into(), update_mask: None, r#mod: Some(Mod::Create(family(versions(1)))) },
            Modification { id: "gone".into(), update_mask: None, r#mod: Some(Mod::Drop(true)) },
        ],
        ignore_warnings: false,
    };
    assert_eq!(h.admin.modify_column_families(batch).await.unwrap_err().code(), Code::NotFound);
    let get = admin::GetTableRequest { name: format!("{INSTANCE}/tables/weather"), view: 0 };
    let table = h.admin.get_table(get.clone()).await.unwrap().into_inner();
    assert_eq!(rules_of(&table), vec![("m".into(), versions(2).rule), ("new".into(), age(60).rule)]);
    let bad = h.admin.modify_column_families(modify("weather", "m", Mod::Update(family(versions(0))))).await;
    assert_eq!(bad.unwrap_err().code(), Code::InvalidArgument);

    // Consistency is immediate: one process, one replica.
    let token = admin::GenerateConsistencyTokenRequest { name: format!("{INSTANCE}/tables/weather") };
    let token = h.admin.generate_consistency_token(token).await.unwrap().into_inner().consistency_token;
    let check = admin::CheckConsistencyRequest {
        name: format!("{INSTANCE}/tables/weather"),
        consistency_token: token,
        mode: None,
    };
    assert!(h.admin.check_consistency(check).await.unwrap().into_inner().consistent);

    h.admin.delete_table(admin::DeleteTableRequest { name: format!("{INSTANCE}/tables/other") }).await.unwrap();
    let gone = admin::GetTableRequest { name: format!("{INSTANCE}/tables/other"), view: 0 };
    assert_eq!(h.admin.get_table(gone).await.unwrap_err().code(), Code::NotFound);
    let malformed = admin::GetTableRequest { name: "weather".into(), view: 0 };
    assert_eq!(h.admin.get_table(malformed).await.unwrap_err().code(), Code::InvalidArgument);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tables_pages_by_page_size_and_token() {
    let mut h = start().await;
    for id in ["e", "a", "d", "b", "c"] {
        h.admin.create_table(create(id, &[])).await.unwrap();
    }
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let request =
            admin::ListTablesRequest { parent: INSTANCE.into(), page_size: 2, page_token: token, ..Default::default() };
        let page = h.admin.list_tables(request).await.unwrap().into_inner();
        pages.push(page.tables.iter().map(|t| t.name.rsplit('/').next().unwrap().to_owned()).collect::<Vec<_>>());
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
        // A table created behind the token does not show up, nor does one
        // ahead of it repeat.
        if pages.len() == 1 {
            h.admin.create_table(create("aa", &[])).await.unwrap();
        }
    }
    assert_eq!(pages, [vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
    let negative = admin::ListTablesRequest { parent: INSTANCE.into(), page_size: -1, ..Default::default() };
    assert_eq!(h.admin.list_tables(negative).await.unwrap_err().code(), Code::InvalidArgument);
}

/// Sets `m:q` to `v` at 1000.
fn set_m_q() -> data::Mutation {
    data::Mutation {
        mutation: Some(data::mutation::Mutation::SetCell(data::mutation::SetCell {
            family_name: "m".into(),
            column_qualifier: Bytes::from_static(b"q"),
            timestamp_micros: 1000,
            value: Bytes::from_static(b"v"),
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_row_range_deletes_a_prefix_or_everything() {
    let mut h = start().await;
    h.admin.create_table(create("t", &[("m", versions(1))])).await.unwrap();
    let table = format!("{INSTANCE}/tables/t");
    for key in ["a1", "a2", "b1"] {
        let request = data::MutateRowRequest {
            table_name: table.clone(),
            row_key: Bytes::copy_from_slice(key.as_bytes()),
            mutations: vec![set_m_q()],
            ..Default::default()
        };
        h.data.mutate_row(request).await.unwrap();
    }
    let range = |target| admin::DropRowRangeRequest { name: table.clone(), target: Some(target) };
    h.admin.drop_row_range(range(Target::RowKeyPrefix(Bytes::from_static(b"a")))).await.unwrap();
    assert_eq!(keys_of(&mut h, &table).await.unwrap(), [Bytes::from_static(b"b1")]);
    let empty = h.admin.drop_row_range(range(Target::RowKeyPrefix(Bytes::new()))).await.unwrap_err();
    assert_eq!(empty.code(), Code::InvalidArgument);
    h.admin.drop_row_range(range(Target::DeleteAllDataFromTable(true))).await.unwrap();
    assert!(keys_of(&mut h, &table).await.unwrap().is_empty());
    h.stop().await;
}

/// A family's `value_type`: an aggregate of Int64 inputs, as clients send
/// it (no encoding named, no state type).
fn aggregate_type(aggregator: admin::r#type::aggregate::Aggregator) -> admin::Type {
    use admin::r#type::Kind;
    let int64 = admin::Type { kind: Some(Kind::Int64Type(admin::r#type::Int64 { encoding: None })) };
    let aggregate =
        admin::r#type::Aggregate { input_type: Some(Box::new(int64)), state_type: None, aggregator: Some(aggregator) };
    admin::Type { kind: Some(Kind::AggregateType(Box::new(aggregate))) }
}

/// The aggregator a family's `value_type` names, if it has one.
fn aggregator_of(family: &admin::ColumnFamily) -> Option<admin::r#type::aggregate::Aggregator> {
    match family.value_type.as_ref()?.kind.as_ref()? {
        admin::r#type::Kind::AggregateType(a) => a.aggregator,
        _ => None,
    }
}

fn add_to_cell(family: &str, qualifier: &str, input: i64) -> data::Mutation {
    use data::value::Kind;
    let value = |kind| Some(data::Value { kind: Some(kind), ..Default::default() });
    data::Mutation {
        mutation: Some(data::mutation::Mutation::AddToCell(data::mutation::AddToCell {
            family_name: family.into(),
            column_qualifier: value(Kind::RawValue(Bytes::copy_from_slice(qualifier.as_bytes()))),
            timestamp: value(Kind::RawTimestampMicros(1000)),
            input: value(Kind::IntValue(input)),
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregate_families_are_created_listed_and_merge_their_inputs() {
    use admin::r#type::aggregate::{Aggregator, HyperLogLogPlusPlusUniqueCount, Max, Sum};
    let mut h = start().await;
    let sum = admin::ColumnFamily { gc_rule: None, value_type: Some(aggregate_type(Aggregator::Sum(Sum {}))) };
    let mut request = create("counters", &[("plain", versions(1))]);
    request.table.as_mut().unwrap().column_families.insert("total".into(), sum);
    let table = h.admin.create_table(request).await.unwrap().into_inner();
    assert_eq!(aggregator_of(&table.column_families["total"]), Some(Aggregator::Sum(Sum {})));
    assert_eq!(aggregator_of(&table.column_families["plain"]), None);
    let max = admin::ColumnFamily { gc_rule: None, value_type: Some(aggregate_type(Aggregator::Max(Max {}))) };
    let table = h.admin.modify_column_families(modify("counters", "peak", Mod::Create(max.clone()))).await.unwrap();
    assert_eq!(aggregator_of(&table.get_ref().column_families["peak"]), Some(Aggregator::Max(Max {})));

    // AddToCell merges inputs into one cell, by the family's aggregate.
    let name = format!("{INSTANCE}/tables/counters");
    for input in [5, 7, -2] {
        let mutations = vec![add_to_cell("total", "n", input), add_to_cell("peak", "n", input)];
        let request =
            data::MutateRowRequest { table_name: name.clone(), row_key: "r".into(), mutations, ..Default::default() };
        h.data.mutate_row(request).await.unwrap();
    }
    let read = data::ReadRowsRequest { table_name: name.clone(), ..Default::default() };
    let mut stream = h.data.read_rows(read).await.unwrap().into_inner();
    let mut values = Vec::new();
    while let Some(response) = stream.message().await.unwrap() {
        values.extend(response.chunks.iter().map(|c| i64::from_be_bytes(c.value.as_ref().try_into().unwrap())));
    }
    assert_eq!(values, [7, 10], "peak then total, in family order");

    // A value_type cellardb does not keep, or one that would change, is
    // refused, and nothing changes.
    let hll = admin::ColumnFamily {
        gc_rule: None,
        value_type: Some(aggregate_type(Aggregator::HllppUniqueCount(HyperLogLogPlusPlusUniqueCount {}))),
    };
    let refused = h.admin.modify_column_families(modify("counters", "uniques", Mod::Create(hll))).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unimplemented);
    let refused = h.admin.modify_column_families(modify("counters", "total", Mod::Update(max))).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    let get = admin::GetTableRequest { name, view: admin::table::View::SchemaView.into() };
    let families = h.admin.get_table(get).await.unwrap().into_inner().column_families;
    assert_eq!(families.len(), 3);
    assert_eq!(aggregator_of(&families["total"]), Some(Aggregator::Sum(Sum {})));

    // A table whose aggregate family cannot be created is not created at
    // all, its plain families with it.
    let bad = admin::ColumnFamily { gc_rule: None, value_type: Some(aggregate_type(Aggregator::Sum(Sum {}))) };
    let mut request = create("half", &[("plain", versions(1))]);
    request.table.as_mut().unwrap().column_families.insert("no:colons".into(), bad);
    assert_eq!(h.admin.create_table(request).await.unwrap_err().code(), Code::InvalidArgument);
    let get = admin::GetTableRequest { name: format!("{INSTANCE}/tables/half"), ..Default::default() };
    assert_eq!(h.admin.get_table(get).await.unwrap_err().code(), Code::NotFound);
    h.stop().await;
}

/// The table ids `instance` lists.
async fn ids_in(h: &mut Harness, instance: &str) -> Vec<String> {
    let list = admin::ListTablesRequest { parent: instance.into(), ..Default::default() };
    let tables = h.admin.list_tables(list).await.unwrap().into_inner().tables;
    tables.iter().map(|t| t.name.strip_prefix(&format!("{instance}/tables/")).unwrap().to_owned()).collect()
}

/// The families of table `name`.
async fn families_of(h: &mut Harness, name: &str) -> Result<Vec<String>, Code> {
    let get = admin::GetTableRequest { name: name.into(), view: 0 };
    let table = h.admin.get_table(get).await.map_err(|e| e.code())?.into_inner();
    let mut families: Vec<String> = table.column_families.into_keys().collect();
    families.sort();
    Ok(families)
}

/// The row keys of table `name`.
async fn keys_of(h: &mut Harness, name: &str) -> Result<Vec<Bytes>, Code> {
    let request = data::ReadRowsRequest { table_name: name.into(), ..Default::default() };
    let mut stream = h.data.read_rows(request).await.map_err(|e| e.code())?.into_inner();
    let mut keys = Vec::new();
    while let Some(r) = stream.message().await.map_err(|e| e.code())? {
        keys.extend(r.chunks.iter().filter(|c| !c.row_key.is_empty()).map(|c| c.row_key.clone()));
    }
    Ok(keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_instance_keeps_its_own_tables_across_a_restart() {
    let mut h = start().await;
    let other = "projects/p/instances/j";
    let third = "projects/q/instances/i";
    h.admin.create_table(create("t", &[("m", versions(1))])).await.unwrap();
    let mut in_other = create("t", &[("n", versions(1))]);
    in_other.parent = other.into();
    h.admin.create_table(in_other).await.unwrap();
    let set = set_m_q();
    let write = |table: String| data::MutateRowRequest {
        table_name: table,
        row_key: Bytes::from_static(b"r"),
        mutations: vec![set.clone()],
        ..Default::default()
    };
    h.data.mutate_row(write(format!("{INSTANCE}/tables/t"))).await.unwrap();
    // The other instance's `t` has no family `m`, and the write to this
    // one is not in it.
    let refused = h.data.mutate_row(write(format!("{other}/tables/t"))).await.unwrap_err();
    assert_eq!(refused.code(), Code::NotFound);
    let refused = h.data.mutate_row(write(format!("{third}/tables/t"))).await.unwrap_err();
    assert_eq!(refused.code(), Code::NotFound, "the same instance id in another project is another instance");

    for round in 0..2 {
        assert_eq!(ids_in(&mut h, INSTANCE).await, ["t"], "round {round}");
        assert_eq!(ids_in(&mut h, other).await, ["t"], "round {round}");
        assert!(ids_in(&mut h, third).await.is_empty(), "round {round}");
        assert_eq!(ids_in(&mut h, cellardb_server::DEFAULT_INSTANCE).await, ["embedded"], "round {round}");
        assert_eq!(families_of(&mut h, &format!("{INSTANCE}/tables/t")).await.unwrap(), ["m"]);
        assert_eq!(families_of(&mut h, &format!("{other}/tables/t")).await.unwrap(), ["n"]);
        assert_eq!(families_of(&mut h, &format!("{INSTANCE}/tables/embedded")).await, Err(Code::NotFound));
        let embedded = format!("{}/tables/embedded", cellardb_server::DEFAULT_INSTANCE);
        assert_eq!(families_of(&mut h, &embedded).await.unwrap(), ["e"]);
        assert_eq!(keys_of(&mut h, &format!("{INSTANCE}/tables/t")).await.unwrap(), [Bytes::from_static(b"r")]);
        assert!(keys_of(&mut h, &format!("{other}/tables/t")).await.unwrap().is_empty());
        let dir = h.stop().await;
        h = start_in(dir).await;
    }

    // Deleting one instance's table leaves the other's.
    h.admin.delete_table(admin::DeleteTableRequest { name: format!("{INSTANCE}/tables/t") }).await.unwrap();
    assert!(ids_in(&mut h, INSTANCE).await.is_empty());
    assert_eq!(families_of(&mut h, &format!("{other}/tables/t")).await.unwrap(), ["n"]);

    for bad in ["projects/p q/instances/i", "projects/p/instances/", "projects/p"] {
        let list = admin::ListTablesRequest { parent: bad.into(), ..Default::default() };
        assert_eq!(h.admin.list_tables(list).await.unwrap_err().code(), Code::InvalidArgument, "{bad}");
        let mut create = create("x", &[]);
        create.parent = bad.into();
        assert_eq!(h.admin.create_table(create).await.unwrap_err().code(), Code::InvalidArgument, "{bad}");
    }
    let dir = h.stop().await;
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.list_tables().unwrap(), ["embedded", "projects/p/instances/j/tables/t"]);
}
