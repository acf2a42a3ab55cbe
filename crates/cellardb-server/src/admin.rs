//! The table admin API (`google.bigtable.admin.v2.BigtableTableAdmin`), the
//! part of it that clients and `cbt` use to manage tables and families:
//! `CreateTable`, `ListTables`, `GetTable`, `DeleteTable`,
//! `ModifyColumnFamilies`, `DropRowRange`, and the consistency calls, which
//! answer "consistent" at once (one process has nothing to replicate).
//! Backups, snapshots, authorized views and IAM are not served.

use std::collections::HashMap;
use std::time::Duration;

use cellardb::{Aggregate, Db, FamilySchema, GcRule, RowRange, TableSchema};
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as pb;
use pb::gc_rule::Rule;
use tonic::{Request, Response, Status};

use crate::bigtable_table_admin_server::BigtableTableAdmin;
use crate::data::blocking;
use crate::names::Names;
use crate::status::{invalid, status_of};

/// The token `GenerateConsistencyToken` hands out; any token is consistent.
const CONSISTENCY_TOKEN: &str = "cellardb-has-one-replica";

/// The table admin service.
#[derive(Clone)]
pub struct AdminService {
    db: Db,
    names: Names,
}

impl AdminService {
    /// The service over `db`, its tables named by `names`.
    pub fn new(db: Db, names: Names) -> AdminService {
        AdminService { db, names }
    }

    /// The message of table `name` (its resource name), the database's
    /// `table`, with its families where `view` asks for them.
    fn table_message(&self, name: String, table: &str, view: pb::table::View) -> Result<pb::Table, Status> {
        let mut message = pb::Table { name, ..pb::Table::default() };
        if view != pb::table::View::NameOnly {
            let schema = self.db.table_schema(table).map_err(|e| status_of(&e))?;
            message.column_families = families_message(&schema);
        }
        Ok(message)
    }
}

fn families_message(schema: &TableSchema) -> HashMap<String, pb::ColumnFamily> {
    schema
        .families
        .iter()
        .map(|f| {
            let family = pb::ColumnFamily {
                gc_rule: Some(gc_rule_message(&f.gc_rule)),
                value_type: f.aggregate.map(value_type_message),
            };
            (f.name.clone(), family)
        })
        .collect()
}

/// A family's GC rule as the admin API writes it.
fn gc_rule_message(rule: &GcRule) -> pb::GcRule {
    let rule = match rule {
        GcRule::None => None,
        GcRule::MaxVersions(n) => Some(Rule::MaxNumVersions(i32::try_from(*n).unwrap_or(i32::MAX))),
        GcRule::MaxAge(d) => Some(Rule::MaxAge(prost_types::Duration {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
        })),
        GcRule::Union(rules) => {
            Some(Rule::Union(pb::gc_rule::Union { rules: rules.iter().map(gc_rule_message).collect() }))
        }
        GcRule::Intersection(rules) => {
            Some(Rule::Intersection(pb::gc_rule::Intersection { rules: rules.iter().map(gc_rule_message).collect() }))
        }
    };
    pb::GcRule { rule }
}

/// The admin API's GC rule as cellardb's; no rule keeps everything.
fn gc_rule(rule: Option<&pb::GcRule>) -> Result<GcRule, Status> {
    let Some(rule) = rule.and_then(|r| r.rule.as_ref()) else { return Ok(GcRule::none()) };
    Ok(match rule {
        Rule::MaxNumVersions(n) => match u32::try_from(*n) {
            Ok(n) if n > 0 => GcRule::max_versions(n),
            _ => return Err(invalid(format!("max_num_versions must be positive, not {n}"))),
        },
        Rule::MaxAge(d) => {
            let (Ok(seconds), Ok(nanos)) = (u64::try_from(d.seconds), u32::try_from(d.nanos)) else {
                return Err(invalid(format!("max_age must not be negative ({}s {}ns)", d.seconds, d.nanos)));
            };
            GcRule::max_age(Duration::new(seconds, nanos))
        }
        Rule::Union(u) => GcRule::Union(u.rules.iter().map(|r| gc_rule(Some(r))).collect::<Result<_, _>>()?),
        Rule::Intersection(i) => {
            GcRule::Intersection(i.rules.iter().map(|r| gc_rule(Some(r))).collect::<Result<_, _>>()?)
        }
    })
}

/// A family of a `CreateTable` or `ModifyColumnFamilies`: its GC rule, and
/// its aggregate if it has a `value_type`.
struct FamilySpec {
    gc_rule: GcRule,
    aggregate: Option<Aggregate>,
}

fn family_spec(family: &pb::ColumnFamily) -> Result<FamilySpec, Status> {
    let aggregate = family.value_type.as_ref().map(aggregate_of).transpose()?;
    Ok(FamilySpec { gc_rule: gc_rule(family.gc_rule.as_ref())?, aggregate })
}

/// The aggregate a family's `value_type` names. cellardb keeps Bigtable's
/// aggregates of 64-bit integers in big-endian bytes (no encoding set means
/// that one): sums, minimums and maximums.
fn aggregate_of(value_type: &pb::Type) -> Result<Aggregate, Status> {
    use pb::r#type::Kind;
    use pb::r#type::aggregate::Aggregator;
    use pb::r#type::int64::encoding::Encoding;
    let Some(Kind::AggregateType(aggregate)) = &value_type.kind else {
        return Err(Status::unimplemented(
            "a family's value_type must be an aggregate: cellardb keeps no other typed families",
        ));
    };
    match aggregate.input_type.as_deref().and_then(|t| t.kind.as_ref()) {
        Some(Kind::Int64Type(int))
            if int.encoding.is_none_or(|e| matches!(e.encoding, None | Some(Encoding::BigEndianBytes(_)))) => {}
        Some(_) => {
            return Err(Status::unimplemented(
                "an aggregate's input_type must be Int64 in big-endian bytes: cellardb keeps no other",
            ));
        }
        None => return Err(invalid("an aggregate value_type needs an input_type")),
    }
    match aggregate.aggregator {
        Some(Aggregator::Sum(_)) => Ok(Aggregate::Sum),
        Some(Aggregator::Min(_)) => Ok(Aggregate::Min),
        Some(Aggregator::Max(_)) => Ok(Aggregate::Max),
        Some(Aggregator::HllppUniqueCount(_)) => {
            Err(Status::unimplemented("HyperLogLog++ unique counts are not kept by cellardb: sum, min and max are"))
        }
        None => Err(invalid("an aggregate value_type needs an aggregator")),
    }
}

/// An aggregate as the admin API writes a family's `value_type`.
fn value_type_message(aggregate: Aggregate) -> pb::Type {
    use pb::r#type::{Int64, Kind, aggregate::Aggregator, int64};
    let aggregator = match aggregate {
        Aggregate::Sum => Aggregator::Sum(pb::r#type::aggregate::Sum {}),
        Aggregate::Min => Aggregator::Min(pb::r#type::aggregate::Min {}),
        Aggregate::Max => Aggregator::Max(pb::r#type::aggregate::Max {}),
    };
    let big_endian = int64::encoding::Encoding::BigEndianBytes(int64::encoding::BigEndianBytes::default());
    let int64 = Int64 { encoding: Some(int64::Encoding { encoding: Some(big_endian) }) };
    let input = pb::Type { kind: Some(Kind::Int64Type(int64)) };
    let message = pb::r#type::Aggregate {
        input_type: Some(Box::new(input.clone())),
        state_type: Some(Box::new(input)),
        aggregator: Some(aggregator),
    };
    pb::Type { kind: Some(Kind::AggregateType(Box::new(message))) }
}

/// One step of a `ModifyColumnFamilies`, checked.
enum Step {
    Create(String, FamilySpec),
    Update(String, GcRule),
    Drop(String),
}

/// The page of `names` (sorted) after `token`, at most `size` long (0: the
/// rest), and the token of the page after it (empty: none). A token is the
/// last name of the page before, so a table created or deleted between
/// pages neither repeats nor hides another.
fn page_of<'a, 'n>(names: &'a [&'n str], token: &str, size: usize) -> (&'a [&'n str], String) {
    let start = if token.is_empty() { 0 } else { names.partition_point(|n| *n <= token) };
    let rest = &names[start..];
    let page = if size == 0 { rest } else { &rest[..size.min(rest.len())] };
    let next =
        if page.len() < rest.len() { page.last().map(|n| (*n).to_owned()).unwrap_or_default() } else { String::new() };
    (page, next)
}

#[tonic::async_trait]
impl BigtableTableAdmin for AdminService {
    async fn create_table(&self, request: Request<pb::CreateTableRequest>) -> Result<Response<pb::Table>, Status> {
        let req = request.into_inner();
        let table = self.names.table_in(&req.parent, &req.table_id)?;
        if req.table_id.is_empty() || req.table_id.contains('/') {
            return Err(invalid(format!("table_id {:?} is empty or holds a '/'", req.table_id)));
        }
        let families: Vec<(String, FamilySpec)> = req
            .table
            .iter()
            .flat_map(|t| t.column_families.iter())
            .map(|(name, f)| Ok((name.clone(), family_spec(f)?)))
            .collect::<Result<_, Status>>()?;
        let families: Vec<FamilySchema> = families
            .into_iter()
            .map(|(name, f)| FamilySchema { name, gc_rule: f.gc_rule, aggregate: f.aggregate })
            .collect();
        let (db, created) = (self.db.clone(), table.clone());
        blocking(move || db.create_table_with_families(&created, families).map(drop).map_err(|e| status_of(&e)))
            .await?;
        let name = format!("{}/tables/{}", req.parent, req.table_id);
        Ok(Response::new(self.table_message(name, &table, pb::table::View::SchemaView)?))
    }

    async fn list_tables(
        &self,
        request: Request<pb::ListTablesRequest>,
    ) -> Result<Response<pb::ListTablesResponse>, Status> {
        let req = request.into_inner();
        let view = match pb::table::View::try_from(req.view).unwrap_or_default() {
            pb::table::View::Unspecified => pb::table::View::NameOnly,
            v => v,
        };
        let page_size = usize::try_from(req.page_size)
            .map_err(|_| invalid(format!("page_size is negative ({})", req.page_size)))?;
        let all = self.db.list_tables().map_err(|e| status_of(&e))?;
        let mut ids = self.names.tables_of(&req.parent, &all)?;
        ids.sort_unstable();
        let (page, next_page_token) = page_of(&ids, &req.page_token, page_size);
        let tables = page
            .iter()
            .map(|id| {
                let table = self.names.table_in(&req.parent, id)?;
                self.table_message(format!("{}/tables/{id}", req.parent), &table, view)
            })
            .collect::<Result<_, _>>()?;
        Ok(Response::new(pb::ListTablesResponse { tables, next_page_token }))
    }

    async fn get_table(&self, request: Request<pb::GetTableRequest>) -> Result<Response<pb::Table>, Status> {
        let req = request.into_inner();
        let table = self.names.table(&req.name)?;
        let view = match pb::table::View::try_from(req.view).unwrap_or_default() {
            pb::table::View::Unspecified => pb::table::View::SchemaView,
            v => v,
        };
        // A table that does not exist is NOT_FOUND whatever the view.
        self.db.table(table).map_err(|e| status_of(&e))?;
        Ok(Response::new(self.table_message(req.name.clone(), table, view)?))
    }

    async fn delete_table(&self, request: Request<pb::DeleteTableRequest>) -> Result<Response<()>, Status> {
        let name = self.names.table(&request.get_ref().name)?.to_owned();
        let db = self.db.clone();
        blocking(move || db.delete_table(&name).map_err(|e| status_of(&e))).await?;
        Ok(Response::new(()))
    }

    async fn modify_column_families(
        &self,
        request: Request<pb::ModifyColumnFamiliesRequest>,
    ) -> Result<Response<pb::Table>, Status> {
        use pb::modify_column_families_request::modification::Mod;
        let req = request.into_inner();
        let table = self.names.table(&req.name)?.to_owned();
        if req.modifications.is_empty() {
            return Err(invalid("no modifications"));
        }
        // Every step is checked against the schema as the steps before it
        // leave it, before any is applied: a request that cannot apply
        // whole changes nothing (short of an I/O error part way).
        let schema = self.db.table_schema(&table).map_err(|e| status_of(&e))?;
        // Each family the steps leave, with its aggregate.
        let mut families: Vec<(String, Option<Aggregate>)> =
            schema.families.iter().map(|f| (f.name.clone(), f.aggregate)).collect();
        let mut steps = Vec::new();
        for m in &req.modifications {
            let existing = families.iter().find(|(name, _)| *name == m.id).map(|(_, aggregate)| *aggregate);
            let exists = existing.is_some();
            let step = match &m.r#mod {
                Some(Mod::Create(f)) if !exists => Step::Create(m.id.clone(), family_spec(f)?),
                Some(Mod::Create(_)) => return Err(Status::already_exists(format!("family {:?} exists", m.id))),
                Some(Mod::Update(f)) if exists => {
                    let spec = family_spec(f)?;
                    if f.value_type.is_some() && existing != Some(spec.aggregate) {
                        return Err(invalid(format!("family {:?}: a family's value_type cannot change", m.id)));
                    }
                    Step::Update(m.id.clone(), spec.gc_rule)
                }
                Some(Mod::Drop(true)) if exists => Step::Drop(m.id.clone()),
                Some(Mod::Update(_) | Mod::Drop(true)) => {
                    return Err(Status::not_found(format!("family {:?} does not exist", m.id)));
                }
                Some(Mod::Drop(false)) | None => {
                    return Err(invalid(format!("modification of {:?} names nothing to do", m.id)));
                }
            };
            match &step {
                Step::Create(name, spec) => families.push((name.clone(), spec.aggregate)),
                Step::Drop(name) => families.retain(|(f, _)| f != name),
                Step::Update(..) => {}
            }
            steps.push(step);
        }
        let (db, name) = (self.db.clone(), table.clone());
        blocking(move || {
            for step in steps {
                match step {
                    Step::Create(f, FamilySpec { gc_rule, aggregate: None }) => db.create_family(&name, &f, gc_rule),
                    Step::Create(f, FamilySpec { gc_rule, aggregate: Some(a) }) => {
                        db.create_aggregate_family(&name, &f, a, gc_rule)
                    }
                    Step::Update(f, rule) => db.set_gc_rule(&name, &f, rule),
                    Step::Drop(f) => db.delete_family(&name, &f),
                }
                .map_err(|e| status_of(&e))?;
            }
            Ok(())
        })
        .await?;
        Ok(Response::new(self.table_message(req.name.clone(), &table, pb::table::View::SchemaView)?))
    }

    async fn drop_row_range(&self, request: Request<pb::DropRowRangeRequest>) -> Result<Response<()>, Status> {
        use pb::drop_row_range_request::Target;
        let req = request.into_inner();
        let table = self.db.table(self.names.table(&req.name)?).map_err(|e| status_of(&e))?;
        let range = match req.target {
            Some(Target::RowKeyPrefix(p)) if !p.is_empty() => RowRange::prefix(p),
            Some(Target::DeleteAllDataFromTable(true)) => RowRange::all(),
            _ => return Err(invalid("drop_row_range needs a non-empty row_key_prefix or delete_all_data_from_table")),
        };
        blocking(move || table.drop_row_range(range).map_err(|e| status_of(&e))).await?;
        Ok(Response::new(()))
    }

    async fn generate_consistency_token(
        &self,
        request: Request<pb::GenerateConsistencyTokenRequest>,
    ) -> Result<Response<pb::GenerateConsistencyTokenResponse>, Status> {
        self.db.table(self.names.table(&request.get_ref().name)?).map_err(|e| status_of(&e))?;
        Ok(Response::new(pb::GenerateConsistencyTokenResponse { consistency_token: CONSISTENCY_TOKEN.into() }))
    }

    async fn check_consistency(
        &self,
        request: Request<pb::CheckConsistencyRequest>,
    ) -> Result<Response<pb::CheckConsistencyResponse>, Status> {
        self.db.table(self.names.table(&request.get_ref().name)?).map_err(|e| status_of(&e))?;
        Ok(Response::new(pb::CheckConsistencyResponse { consistent: true }))
    }
}
