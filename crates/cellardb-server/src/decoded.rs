//! How much memory a request takes once decoded, worked out from its bytes
//! before it is decoded.
//!
//! A message on the wire can be far smaller than in memory: an empty
//! `Mutation` is 2 bytes sent and a few hundred bytes decoded, so a request
//! of millions of them, well under the 256 MiB a request may be, would take
//! gigabytes before any check on its contents could refuse it. The codec
//! therefore walks the request's wire format first, charging each nested
//! message that a request can repeat without bound (mutations, entries,
//! row keys and ranges, filters, rules, column families, GC rules, splits)
//! the size of its decoded form, and refuses a request whose messages
//! would take more than [`MAX_DECODED`]. Fields the walk does not follow
//! are charged as one byte string each. Payload bytes (values, keys) are
//! not charged: they are the request's own size, which is bounded apart.

use std::any::TypeId;
use std::mem::size_of;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;

/// The most a request's decoded messages may take, beside its payload
/// bytes: Bigtable's largest write (100,000 mutations, each its own entry)
/// takes about three quarters of it.
pub const MAX_DECODED: usize = 64 << 20;

/// What the walk knows of a message: its size decoded, and which of its
/// fields hold messages to follow.
pub struct Shape {
    size: usize,
    fields: Fields,
}

enum Fields {
    /// These fields, each of this shape; others are charged as strings.
    Listed(&'static [(u64, &'static Shape)]),
    /// Every length-delimited field, as this shape: for a type tree,
    /// whose many kinds nest one another.
    All(&'static Shape),
}

/// A field the walk does not follow: a string, bytes, or a message of
/// fixed size, charged as a `Vec`'s or `Bytes`' handle.
const UNFOLLOWED: usize = 32;

/// The decoder's nesting limit, which the walk shares: past it, the
/// decoder refuses the request anyway.
const MAX_DEPTH: usize = 100;

const fn listed(size: usize, fields: &'static [(u64, &'static Shape)]) -> Shape {
    Shape { size, fields: Fields::Listed(fields) }
}

static LEAF: Shape = listed(0, &[]);
static MUTATION: Shape = listed(size_of::<pb::Mutation>(), &[]);
static ENTRY: Shape = listed(size_of::<pb::mutate_rows_request::Entry>(), &[(2, &MUTATION)]);
static ROW_RANGE: Shape = listed(size_of::<pb::RowRange>(), &[]);
static ROW_SET: Shape = listed(size_of::<pb::RowSet>(), &[(2, &ROW_RANGE)]);
static ROW_FILTER: Shape = listed(size_of::<pb::RowFilter>(), &[(1, &FILTER_LIST), (2, &FILTER_LIST), (3, &CONDITION)]);
static FILTER_LIST: Shape = listed(size_of::<pb::row_filter::Chain>(), &[(1, &ROW_FILTER)]);
static CONDITION: Shape =
    listed(size_of::<pb::row_filter::Condition>(), &[(1, &ROW_FILTER), (2, &ROW_FILTER), (3, &ROW_FILTER)]);
static RULE: Shape = listed(size_of::<pb::ReadModifyWriteRule>(), &[]);

static READ_ROWS: Shape = listed(0, &[(2, &ROW_SET), (3, &ROW_FILTER)]);
static MUTATE_ROW: Shape = listed(0, &[(3, &MUTATION)]);
static MUTATE_ROWS: Shape = listed(0, &[(2, &ENTRY)]);
static CHECK_AND_MUTATE_ROW: Shape = listed(0, &[(4, &MUTATION), (5, &MUTATION), (6, &ROW_FILTER)]);
static READ_MODIFY_WRITE_ROW: Shape = listed(0, &[(3, &RULE)]);

static TYPE_TREE: Shape = Shape { size: size_of::<admin::Type>(), fields: Fields::All(&TYPE_TREE) };
static GC_RULE: Shape = listed(size_of::<admin::GcRule>(), &[(3, &GC_RULE_LIST), (4, &GC_RULE_LIST)]);
static GC_RULE_LIST: Shape = listed(size_of::<admin::gc_rule::Union>(), &[(1, &GC_RULE)]);
static COLUMN_FAMILY: Shape = listed(size_of::<admin::ColumnFamily>(), &[(1, &GC_RULE), (3, &TYPE_TREE)]);
/// A map entry: its key, and the family; the table's hash map holds both.
static FAMILY_ENTRY: Shape = listed(size_of::<(String, admin::ColumnFamily)>() + 16, &[(2, &COLUMN_FAMILY)]);
static TABLE: Shape = listed(0, &[(2, &TYPE_TREE), (3, &FAMILY_ENTRY), (15, &TYPE_TREE)]);
static SPLIT: Shape = listed(size_of::<admin::create_table_request::Split>(), &[]);
static MODIFICATION: Shape = listed(
    size_of::<admin::modify_column_families_request::Modification>(),
    &[(2, &COLUMN_FAMILY), (3, &COLUMN_FAMILY), (6, &TYPE_TREE)],
);

static CREATE_TABLE: Shape = listed(0, &[(3, &TABLE), (4, &SPLIT)]);
static MODIFY_COLUMN_FAMILIES: Shape = listed(0, &[(2, &MODIFICATION)]);

/// The shape of the request type `U`; requests with nothing to repeat
/// (names, tokens) are walked as a leaf, every field charged as a string.
pub fn shape_of<U: 'static>() -> &'static Shape {
    let of = TypeId::of::<U>();
    let shapes: [(TypeId, &'static Shape); 7] = [
        (TypeId::of::<pb::ReadRowsRequest>(), &READ_ROWS),
        (TypeId::of::<pb::MutateRowRequest>(), &MUTATE_ROW),
        (TypeId::of::<pb::MutateRowsRequest>(), &MUTATE_ROWS),
        (TypeId::of::<pb::CheckAndMutateRowRequest>(), &CHECK_AND_MUTATE_ROW),
        (TypeId::of::<pb::ReadModifyWriteRowRequest>(), &READ_MODIFY_WRITE_ROW),
        (TypeId::of::<admin::CreateTableRequest>(), &CREATE_TABLE),
        (TypeId::of::<admin::ModifyColumnFamiliesRequest>(), &MODIFY_COLUMN_FAMILIES),
    ];
    shapes.iter().find(|(id, _)| *id == of).map_or(&LEAF, |(_, shape)| shape)
}

/// What the messages of `bytes`, a message of `shape`, take decoded, as
/// far as the bytes are well-formed (what is not, the decoder refuses).
/// Stops counting once over `limit`.
pub fn decoded_size(bytes: &[u8], shape: &Shape, limit: usize) -> usize {
    walk(bytes, shape, 0, limit)
}

fn walk(mut bytes: &[u8], shape: &Shape, depth: usize, limit: usize) -> usize {
    let mut total = shape.size;
    while !bytes.is_empty() && total <= limit {
        let Some(key) = varint(&mut bytes) else { break };
        let (field, wire_type) = (key >> 3, key & 7);
        let skipped = match wire_type {
            0 => varint(&mut bytes).map(drop),
            1 => advance(&mut bytes, 8),
            5 => advance(&mut bytes, 4),
            // A group's start and end (deprecated, skipped by the decoder
            // as unknown fields): its fields are walked as the message's
            // own, which can only charge more, so a group cannot hide
            // what follows it.
            3 | 4 => Some(()),
            2 => {
                let Some(len) = varint(&mut bytes).and_then(|n| usize::try_from(n).ok()) else { break };
                let Some(payload) = bytes.get(..len) else { break };
                bytes = &bytes[len..];
                total += match follows(shape, field) {
                    Some(child) if depth < MAX_DEPTH => walk(payload, child, depth + 1, limit - total.min(limit)),
                    _ => UNFOLLOWED,
                };
                Some(())
            }
            _ => None,
        };
        if skipped.is_none() {
            break;
        }
    }
    total
}

/// The shape of `shape`'s field `field`, if the walk follows it.
fn follows(shape: &Shape, field: u64) -> Option<&'static Shape> {
    match shape.fields {
        Fields::Listed(fields) => fields.iter().find(|(f, _)| *f == field).map(|(_, s)| *s),
        Fields::All(child) => Some(child),
    }
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

fn advance(bytes: &mut &[u8], n: usize) -> Option<()> {
    *bytes = bytes.get(n..)?;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn empty_mutations(n: usize) -> Vec<u8> {
        pb::MutateRowRequest { mutations: vec![pb::Mutation::default(); n], ..Default::default() }.encode_to_vec()
    }

    #[test]
    fn a_request_is_charged_what_its_repeated_messages_take_decoded() {
        let bytes = empty_mutations(1000);
        assert_eq!(bytes.len(), 2000);
        let charged = decoded_size(&bytes, shape_of::<pb::MutateRowRequest>(), usize::MAX);
        assert_eq!(charged, 1000 * size_of::<pb::Mutation>());
    }

    #[test]
    fn bigtables_largest_write_fits_and_a_flood_of_empty_messages_does_not() {
        let set_cell = pb::Mutation {
            mutation: Some(pb::mutation::Mutation::SetCell(pb::mutation::SetCell {
                family_name: "cf".into(),
                column_qualifier: "q".into(),
                timestamp_micros: 1000,
                value: vec![7; 10].into(),
            })),
        };
        let entry =
            pb::mutate_rows_request::Entry { row_key: "row".into(), mutations: vec![set_cell], idempotency: None };
        let largest =
            pb::MutateRowsRequest { entries: vec![entry; crate::MAX_MUTATIONS], ..Default::default() }.encode_to_vec();
        assert!(decoded_size(&largest, shape_of::<pb::MutateRowsRequest>(), MAX_DECODED) <= MAX_DECODED * 4 / 5);
        let flood = empty_mutations(MAX_DECODED / size_of::<pb::Mutation>() + 1);
        assert!(decoded_size(&flood, shape_of::<pb::MutateRowRequest>(), MAX_DECODED) > MAX_DECODED);
    }

    #[test]
    fn filters_are_followed_through_chains_and_conditions() {
        use pb::row_filter::{Chain, Condition, Filter};
        let pass = pb::RowFilter { filter: Some(Filter::PassAllFilter(true)) };
        let chain = pb::RowFilter { filter: Some(Filter::Chain(Chain { filters: vec![pass.clone(); 10] })) };
        let condition = Condition {
            predicate_filter: Some(Box::new(chain.clone())),
            true_filter: Some(Box::new(chain)),
            false_filter: None,
        };
        let request = pb::ReadRowsRequest {
            filter: Some(pb::RowFilter { filter: Some(Filter::Condition(Box::new(condition))) }),
            ..Default::default()
        };
        let charged = decoded_size(&request.encode_to_vec(), shape_of::<pb::ReadRowsRequest>(), usize::MAX);
        let (filter, list) = (size_of::<pb::RowFilter>(), size_of::<Chain>());
        assert_eq!(charged, filter + size_of::<Condition>() + 2 * (filter + list + 10 * filter));
    }

    #[test]
    fn a_request_of_another_type_is_charged_its_fields_as_strings() {
        let ping = pb::PingAndWarmRequest { name: "projects/p/instances/i".into(), app_profile_id: "a".into() };
        assert_eq!(
            decoded_size(&ping.encode_to_vec(), shape_of::<pb::PingAndWarmRequest>(), usize::MAX),
            2 * UNFOLLOWED
        );
    }

    #[test]
    fn a_group_does_not_hide_the_messages_after_it() {
        // Field 99 as an empty group, then the mutations.
        let mut bytes = vec![0x9b, 0x06, 0x9c, 0x06];
        bytes.extend(empty_mutations(100));
        let charged = decoded_size(&bytes, shape_of::<pb::MutateRowRequest>(), usize::MAX);
        assert_eq!(charged, 100 * size_of::<pb::Mutation>());
    }

    #[test]
    fn bytes_that_are_not_a_message_end_the_walk_without_panic() {
        for bytes in [&[0xff_u8; 12][..], &[0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f], &[0x0b], &[0x1a, 0x05, 0x00]] {
            let _ = decoded_size(bytes, shape_of::<pb::ReadRowsRequest>(), MAX_DECODED);
        }
    }
}
