//! Well-formed requests of every RPC, drawn at random: messages that
//! decode, with fields taken from small pools of the values that matter
//! (the fuzzed database's tables and families, names of the wrong shape,
//! keys and qualifiers that collide, limits at their edges, filters and
//! GC rules nested a few deep). The driver mutates their bytes too, so
//! what does not decode is reached from what does.

use bytes::Bytes;
use cellardb_lab::workload::SplitMix64;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::row_filter::Filter as F;
use prost::Message;

/// A seeded source of draws: the lab's splitmix64.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A draw in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }

    /// True once in `n` draws.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }
}

/// The fuzzed database's instance, and its table with data.
pub const INSTANCE: &str = "projects/fuzz/instances/i";
pub const TABLE: &str = "projects/fuzz/instances/i/tables/t";

/// Its families: `cf` keeps 3 versions, `old` a day, `sum` adds Int64
/// inputs.
pub const FAMILIES: [&str; 3] = ["cf", "old", "sum"];

fn table_name(rng: &mut Rng) -> String {
    const NAMES: [&str; 8] = [
        TABLE,
        TABLE,
        TABLE,
        "projects/fuzz/instances/i/tables/nope",
        "projects/local/instances/local/tables/embedded",
        "t",
        "projects/fuzz/instances/i/tables/",
        "projects//instances/i/tables/t",
    ];
    if rng.one_in(16) { text(rng, 80) } else { rng.pick(&NAMES).to_owned() }
}

fn family(rng: &mut Rng) -> String {
    const OTHERS: [&str; 4] = ["gone", "", "c f", "cf\u{0}"];
    match rng.below(8) {
        0 => rng.pick(&OTHERS).to_owned(),
        1 => text(rng, 70),
        _ => rng.pick(&FAMILIES).to_owned(),
    }
}

/// Text of up to `max` characters, mostly name-like.
pub fn text(rng: &mut Rng, max: usize) -> String {
    const CHARS: &[u8] = b"abz09_-.:/ *\\";
    (0..rng.below(max + 1)).map(|_| char::from(rng.pick(CHARS))).collect()
}

/// Bytes that collide often (keys, qualifiers): short, from a small
/// alphabet; now and then over Bigtable's limits.
fn key(rng: &mut Rng) -> Bytes {
    const ALPHABET: [u8; 5] = [b'a', b'b', b'r', 0x00, 0xff];
    match rng.below(64) {
        0 => Bytes::from(vec![b'k'; 4097]),
        1 => Bytes::from(vec![b'q'; 16 * 1024 + 1]),
        _ => (0..rng.below(5)).map(|_| rng.pick(&ALPHABET)).collect(),
    }
}

fn value(rng: &mut Rng) -> Bytes {
    if rng.one_in(32) {
        return Bytes::from(vec![0xab; 1 << 16]);
    }
    (0..rng.below(24)).map(|_| u8::try_from(rng.below(256)).unwrap_or(0)).collect()
}

fn timestamp(rng: &mut Rng) -> i64 {
    const EDGES: [i64; 10] = [-1, 0, 1, 999, 1000, 1_000_000, -1000, i64::MAX, i64::MIN, 1_700_000_000_000_000];
    if rng.one_in(2) { rng.pick(&EDGES) } else { i64::try_from(rng.below(1 << 20)).unwrap_or(0) * 1000 }
}

fn count(rng: &mut Rng) -> i32 {
    const EDGES: [i32; 7] = [-1, 0, 1, 2, 3, i32::MAX, i32::MIN];
    rng.pick(&EDGES)
}

fn regex(rng: &mut Rng) -> Bytes {
    const PATTERNS: [&[u8]; 14] = [
        b".*",
        b"a+",
        b"(",
        b"\\C",
        b"[^\x00]",
        b"\xff.",
        b"(?i)A",
        b"^ab$",
        b"a{1000}",
        b"((a{100}){100}){100}",
        b"\\p{L}",
        b"",
        b"c.",
        b"[",
    ];
    if rng.one_in(8) { value(rng) } else { Bytes::from_static(rng.pick(&PATTERNS)) }
}

fn label(rng: &mut Rng) -> String {
    const LABELS: [&str; 4] = ["l", "", "Bad label", "a_label_longer_than_fifteen"];
    rng.pick(&LABELS).to_owned()
}

/// A filter nested at most `depth` deep; now and then, a chain nested
/// around the decoder's limit of 100 messages deep, or an interleave of
/// many patterns of a few MiB compiled each.
pub fn filter(rng: &mut Rng, depth: usize) -> pb::RowFilter {
    if rng.one_in(256) {
        let big = F::ValueRegexFilter(Bytes::from_static(br"(?:[a-z]{40}\d){300}"));
        let filters = vec![pb::RowFilter { filter: Some(big) }; 1 + rng.below(100)];
        return pb::RowFilter { filter: Some(F::Interleave(pb::row_filter::Interleave { filters })) };
    }
    if rng.one_in(128) {
        return (0..40 + rng.below(40)).fold(pb::RowFilter { filter: Some(F::PassAllFilter(true)) }, |inner, _| {
            pb::RowFilter { filter: Some(F::Chain(pb::row_filter::Chain { filters: vec![inner] })) }
        });
    }
    let nests = if depth == 0 { 0 } else { 3 };
    let kind = match rng.below(19 + nests) {
        0 => F::Sink(rng.one_in(4)),
        1 => F::PassAllFilter(!rng.one_in(8)),
        2 => F::BlockAllFilter(!rng.one_in(8)),
        3 => F::StripValueTransformer(!rng.one_in(8)),
        4 => F::RowKeyRegexFilter(regex(rng)),
        5 => F::FamilyNameRegexFilter(String::from_utf8_lossy(&regex(rng)).into_owned()),
        6 => F::ColumnQualifierRegexFilter(regex(rng)),
        7 => F::ValueRegexFilter(regex(rng)),
        8 => F::RowSampleFilter(rng.pick(&[-1.0, 0.0, 0.5, 1.0, 2.0, f64::NAN])),
        9 => F::ColumnRangeFilter(column_range(rng)),
        10 => F::TimestampRangeFilter(pb::TimestampRange {
            start_timestamp_micros: timestamp(rng),
            end_timestamp_micros: timestamp(rng),
        }),
        11 => F::ValueRangeFilter(value_range(rng)),
        12 => F::CellsPerRowOffsetFilter(count(rng)),
        13 => F::CellsPerRowLimitFilter(count(rng)),
        14 => F::CellsPerColumnLimitFilter(count(rng)),
        15 => F::ApplyLabelTransformer(label(rng)),
        16..=18 => return pb::RowFilter { filter: if rng.one_in(4) { None } else { Some(F::Sink(true)) } },
        19 => F::Chain(pb::row_filter::Chain { filters: filters(rng, depth - 1) }),
        20 => F::Interleave(pb::row_filter::Interleave { filters: filters(rng, depth - 1) }),
        _ => F::Condition(Box::new(pb::row_filter::Condition {
            predicate_filter: (!rng.one_in(8)).then(|| Box::new(filter(rng, depth - 1))),
            true_filter: rng.one_in(2).then(|| Box::new(filter(rng, depth - 1))),
            false_filter: rng.one_in(2).then(|| Box::new(filter(rng, depth - 1))),
        })),
    };
    pb::RowFilter { filter: Some(kind) }
}

fn filters(rng: &mut Rng, depth: usize) -> Vec<pb::RowFilter> {
    (0..rng.below(5)).map(|_| filter(rng, depth)).collect()
}

fn column_range(rng: &mut Rng) -> pb::ColumnRange {
    use pb::column_range::{EndQualifier as E, StartQualifier as S};
    pb::ColumnRange {
        family_name: family(rng),
        start_qualifier: match rng.below(3) {
            0 => None,
            1 => Some(S::StartQualifierClosed(key(rng))),
            _ => Some(S::StartQualifierOpen(key(rng))),
        },
        end_qualifier: match rng.below(3) {
            0 => None,
            1 => Some(E::EndQualifierClosed(key(rng))),
            _ => Some(E::EndQualifierOpen(key(rng))),
        },
    }
}

fn value_range(rng: &mut Rng) -> pb::ValueRange {
    use pb::value_range::{EndValue as E, StartValue as S};
    pb::ValueRange {
        start_value: match rng.below(3) {
            0 => None,
            1 => Some(S::StartValueClosed(value(rng))),
            _ => Some(S::StartValueOpen(value(rng))),
        },
        end_value: match rng.below(3) {
            0 => None,
            1 => Some(E::EndValueClosed(value(rng))),
            _ => Some(E::EndValueOpen(value(rng))),
        },
    }
}

fn row_set(rng: &mut Rng) -> Option<pb::RowSet> {
    use pb::row_range::{EndKey as E, StartKey as S};
    if rng.one_in(4) {
        return None;
    }
    let ranges = (0..rng.below(3))
        .map(|_| pb::RowRange {
            start_key: match rng.below(3) {
                0 => None,
                1 => Some(S::StartKeyClosed(key(rng))),
                _ => Some(S::StartKeyOpen(key(rng))),
            },
            end_key: match rng.below(3) {
                0 => None,
                1 => Some(E::EndKeyClosed(key(rng))),
                _ => Some(E::EndKeyOpen(key(rng))),
            },
        })
        .collect();
    Some(pb::RowSet { row_keys: (0..rng.below(4)).map(|_| key(rng)).collect(), row_ranges: ranges })
}

pub fn read_rows(rng: &mut Rng) -> Vec<u8> {
    pb::ReadRowsRequest {
        table_name: table_name(rng),
        authorized_view_name: if rng.one_in(32) { text(rng, 60) } else { String::new() },
        materialized_view_name: if rng.one_in(32) { text(rng, 60) } else { String::new() },
        app_profile_id: String::new(),
        rows: row_set(rng),
        filter: (!rng.one_in(3)).then(|| filter(rng, 4)),
        rows_limit: rng.pick(&[0, 0, 0, 1, 2, 5, -1, i64::MAX]),
        request_stats_view: i32::try_from(rng.below(4)).unwrap_or(0),
        reversed: rng.one_in(3),
    }
    .encode_to_vec()
}

pub fn sample_row_keys(rng: &mut Rng) -> Vec<u8> {
    pb::SampleRowKeysRequest {
        table_name: table_name(rng),
        authorized_view_name: if rng.one_in(16) { text(rng, 60) } else { String::new() },
        materialized_view_name: if rng.one_in(16) { text(rng, 60) } else { String::new() },
        app_profile_id: String::new(),
    }
    .encode_to_vec()
}

fn int_value(rng: &mut Rng, kind: pb::value::Kind) -> Option<pb::Value> {
    if rng.one_in(8) { None } else { Some(pb::Value { r#type: None, kind: Some(kind) }) }
}

fn mutation(rng: &mut Rng) -> pb::Mutation {
    use pb::mutation::{self as m, Mutation as M};
    let time_range = |rng: &mut Rng| pb::TimestampRange {
        start_timestamp_micros: timestamp(rng),
        end_timestamp_micros: timestamp(rng),
    };
    let kind = match rng.below(9) {
        0..=3 => M::SetCell(m::SetCell {
            family_name: family(rng),
            column_qualifier: key(rng),
            timestamp_micros: timestamp(rng),
            value: value(rng),
        }),
        4 => M::DeleteFromColumn(m::DeleteFromColumn {
            family_name: family(rng),
            column_qualifier: key(rng),
            time_range: rng.one_in(2).then(|| time_range(rng)),
        }),
        5 => M::DeleteFromFamily(m::DeleteFromFamily { family_name: family(rng) }),
        6 => M::DeleteFromRow(m::DeleteFromRow {}),
        7 => {
            let qualifier = pb::value::Kind::RawValue(key(rng));
            let at = pb::value::Kind::RawTimestampMicros(timestamp(rng));
            let input = if rng.one_in(4) {
                pb::value::Kind::StringValue(text(rng, 4))
            } else {
                pb::value::Kind::IntValue(timestamp(rng))
            };
            M::AddToCell(m::AddToCell {
                family_name: family(rng),
                column_qualifier: int_value(rng, qualifier),
                timestamp: int_value(rng, at),
                input: int_value(rng, input),
            })
        }
        _ => M::MergeToCell(m::MergeToCell::default()),
    };
    pb::Mutation { mutation: (!rng.one_in(16)).then_some(kind) }
}

/// Up to 4 mutations; now and then one more than a request may hold.
fn mutations(rng: &mut Rng) -> Vec<pb::Mutation> {
    if rng.one_in(512) {
        let delete =
            pb::Mutation { mutation: Some(pb::mutation::Mutation::DeleteFromRow(pb::mutation::DeleteFromRow {})) };
        return vec![delete; cellardb_server::MAX_MUTATIONS + 1];
    }
    (0..rng.below(5)).map(|_| mutation(rng)).collect()
}

/// Now and then a flood of empty mutations: just under what a request may
/// take decoded, or far over it. On the wire, each is 2 bytes (field 3,
/// length 0), appended to the request.
pub fn mutate_row(rng: &mut Rng) -> Vec<u8> {
    let mut request = mutate_row_of(rng);
    if rng.one_in(512) {
        let n = if rng.one_in(2) { 190_000 } else { 1_000_000 };
        request.extend(std::iter::repeat_n([0x1a, 0x00], n).flatten());
    }
    request
}

fn mutate_row_of(rng: &mut Rng) -> Vec<u8> {
    pb::MutateRowRequest {
        table_name: table_name(rng),
        authorized_view_name: if rng.one_in(32) { text(rng, 60) } else { String::new() },
        app_profile_id: String::new(),
        row_key: key(rng),
        mutations: mutations(rng),
        idempotency: None,
    }
    .encode_to_vec()
}

pub fn mutate_rows(rng: &mut Rng) -> Vec<u8> {
    pb::MutateRowsRequest {
        table_name: table_name(rng),
        authorized_view_name: if rng.one_in(32) { text(rng, 60) } else { String::new() },
        app_profile_id: String::new(),
        entries: (0..rng.below(5))
            .map(|_| pb::mutate_rows_request::Entry { row_key: key(rng), mutations: mutations(rng), idempotency: None })
            .collect(),
    }
    .encode_to_vec()
}

pub fn check_and_mutate_row(rng: &mut Rng) -> Vec<u8> {
    pb::CheckAndMutateRowRequest {
        table_name: table_name(rng),
        authorized_view_name: String::new(),
        app_profile_id: String::new(),
        row_key: key(rng),
        predicate_filter: (!rng.one_in(3)).then(|| filter(rng, 3)),
        true_mutations: mutations(rng),
        false_mutations: mutations(rng),
    }
    .encode_to_vec()
}

pub fn read_modify_write_row(rng: &mut Rng) -> Vec<u8> {
    use pb::read_modify_write_rule::Rule;
    let rule = |rng: &mut Rng| pb::ReadModifyWriteRule {
        family_name: family(rng),
        column_qualifier: key(rng),
        rule: match rng.below(5) {
            0 => None,
            1 | 2 => Some(Rule::AppendValue(value(rng))),
            _ => Some(Rule::IncrementAmount(timestamp(rng))),
        },
    };
    pb::ReadModifyWriteRowRequest {
        table_name: table_name(rng),
        authorized_view_name: String::new(),
        app_profile_id: String::new(),
        row_key: key(rng),
        rules: (0..rng.below(4)).map(|_| rule(rng)).collect(),
    }
    .encode_to_vec()
}

pub fn ping_and_warm(rng: &mut Rng) -> Vec<u8> {
    let name = if rng.one_in(2) { INSTANCE.to_owned() } else { text(rng, 40) };
    pb::PingAndWarmRequest { name, app_profile_id: String::new() }.encode_to_vec()
}

/// An instance's name: the fuzzed one, the server's own, or another shape.
fn parent(rng: &mut Rng) -> String {
    const PARENTS: [&str; 5] =
        [INSTANCE, INSTANCE, "projects/local/instances/local", "projects/fuzz/instances/", "projects/fuzz"];
    if rng.one_in(8) { text(rng, 60) } else { rng.pick(&PARENTS).to_owned() }
}

fn gc_rule(rng: &mut Rng, depth: usize) -> admin::GcRule {
    use admin::gc_rule::{Intersection, Rule, Union};
    let nests = if depth == 0 { 0 } else { 2 };
    let rule = match rng.below(3 + nests) {
        0 => None,
        1 => Some(Rule::MaxNumVersions(count(rng))),
        2 => Some(Rule::MaxAge(prost_types::Duration {
            seconds: rng.pick(&[-1, 0, 1, 86_400, i64::MAX]),
            nanos: rng.pick(&[-1, 0, 1, 999_999_999, 1_000_000_000]),
        })),
        3 => Some(Rule::Intersection(Intersection {
            rules: (0..rng.below(3)).map(|_| gc_rule(rng, depth - 1)).collect(),
        })),
        _ => Some(Rule::Union(Union { rules: (0..rng.below(3)).map(|_| gc_rule(rng, depth - 1)).collect() })),
    };
    admin::GcRule { rule }
}

fn value_type(rng: &mut Rng) -> Option<admin::Type> {
    use admin::r#type::aggregate::{Aggregator, HyperLogLogPlusPlusUniqueCount, Max, Min, Sum};
    use admin::r#type::{Aggregate, Int64, Kind, String as Text};
    let kind = match rng.below(6) {
        0..=2 => return None,
        3 => Kind::StringType(Text { encoding: None }),
        _ => {
            let aggregator = match rng.below(5) {
                0 => None,
                1 => Some(Aggregator::Sum(Sum {})),
                2 => Some(Aggregator::Min(Min {})),
                3 => Some(Aggregator::Max(Max {})),
                _ => Some(Aggregator::HllppUniqueCount(HyperLogLogPlusPlusUniqueCount {})),
            };
            let input = (!rng.one_in(4))
                .then(|| Box::new(admin::Type { kind: Some(Kind::Int64Type(Int64 { encoding: None })) }));
            Kind::AggregateType(Box::new(Aggregate { input_type: input, state_type: None, aggregator }))
        }
    };
    Some(admin::Type { kind: Some(kind) })
}

fn column_family(rng: &mut Rng) -> admin::ColumnFamily {
    admin::ColumnFamily { gc_rule: rng.one_in(2).then(|| gc_rule(rng, 3)), value_type: value_type(rng) }
}

fn table_id(rng: &mut Rng) -> String {
    const IDS: [&str; 6] = ["t", "u", "v", "", "-bad", "a_table_id_longer_than_fifty_bytes_which_bigtable_refuses"];
    if rng.one_in(8) { text(rng, 60) } else { rng.pick(&IDS).to_owned() }
}

fn admin_table_name(rng: &mut Rng) -> String {
    if rng.one_in(2) { table_name(rng) } else { format!("{}/tables/{}", parent(rng), table_id(rng)) }
}

pub fn create_table(rng: &mut Rng) -> Vec<u8> {
    let families = (0..rng.below(4)).map(|_| (family(rng), column_family(rng))).collect();
    admin::CreateTableRequest {
        parent: parent(rng),
        table_id: table_id(rng),
        table: (!rng.one_in(8)).then(|| admin::Table { column_families: families, ..admin::Table::default() }),
        initial_splits: (0..rng.below(3)).map(|_| admin::create_table_request::Split { key: key(rng) }).collect(),
    }
    .encode_to_vec()
}

pub fn list_tables(rng: &mut Rng) -> Vec<u8> {
    admin::ListTablesRequest {
        parent: parent(rng),
        view: i32::try_from(rng.below(6)).unwrap_or(0),
        page_size: rng.pick(&[0, 1, 2, -1, i32::MAX]),
        page_token: if rng.one_in(3) { text(rng, 20) } else { String::new() },
    }
    .encode_to_vec()
}

pub fn get_table(rng: &mut Rng) -> Vec<u8> {
    admin::GetTableRequest { name: admin_table_name(rng), view: i32::try_from(rng.below(6)).unwrap_or(0) }
        .encode_to_vec()
}

pub fn delete_table(rng: &mut Rng) -> Vec<u8> {
    admin::DeleteTableRequest { name: admin_table_name(rng) }.encode_to_vec()
}

pub fn modify_column_families(rng: &mut Rng) -> Vec<u8> {
    use admin::modify_column_families_request::Modification;
    use admin::modify_column_families_request::modification::Mod;
    let modification = |rng: &mut Rng| Modification {
        id: family(rng),
        r#mod: match rng.below(4) {
            0 => None,
            1 => Some(Mod::Create(column_family(rng))),
            2 => Some(Mod::Update(column_family(rng))),
            _ => Some(Mod::Drop(!rng.one_in(4))),
        },
        update_mask: rng.one_in(4).then(|| prost_types::FieldMask {
            paths: (0..rng.below(3)).map(|_| rng.pick(&["gc_rule", "value_type", "x"]).to_owned()).collect(),
        }),
    };
    admin::ModifyColumnFamiliesRequest {
        name: admin_table_name(rng),
        modifications: (0..rng.below(4)).map(|_| modification(rng)).collect(),
        ignore_warnings: rng.one_in(2),
    }
    .encode_to_vec()
}

pub fn drop_row_range(rng: &mut Rng) -> Vec<u8> {
    use admin::drop_row_range_request::Target;
    let target = match rng.below(4) {
        0 => None,
        1 => Some(Target::DeleteAllDataFromTable(!rng.one_in(4))),
        _ => Some(Target::RowKeyPrefix(key(rng))),
    };
    admin::DropRowRangeRequest { name: admin_table_name(rng), target }.encode_to_vec()
}

pub fn generate_consistency_token(rng: &mut Rng) -> Vec<u8> {
    admin::GenerateConsistencyTokenRequest { name: admin_table_name(rng) }.encode_to_vec()
}

pub fn check_consistency(rng: &mut Rng) -> Vec<u8> {
    admin::CheckConsistencyRequest { name: admin_table_name(rng), consistency_token: text(rng, 20), mode: None }
        .encode_to_vec()
}

/// A request of a call that is not served: any bytes, any message.
pub fn unserved(rng: &mut Rng) -> Vec<u8> {
    value(rng).to_vec()
}
