//! Bigtable's v2 messages into cellardb's model: filters, mutations, row
//! sets and read-modify-write rules. Each conversion checks what the
//! message can get wrong that cellardb's own types cannot express (a
//! negative limit, a sink set to false) and
//! answers `INVALID_ARGUMENT` naming it; the engine checks the rest (limits,
//! timestamps, labels, regex syntax) when the request reaches it.

use std::ops::Bound;

use bytes::Bytes;

use cellardb::{Filter, Mutation, ReadModifyWrite, RowRange, RowSet, TimeRange, Timestamp};
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::row_filter::Filter as F;
use tonic::Status;

use crate::status::{invalid, status_of};

/// The filter of a request; none means every cell.
pub fn filter(f: Option<&pb::RowFilter>) -> Result<Filter, Status> {
    let filter = f.map_or(Ok(Filter::pass_all()), row_filter)?;
    filter.validate().map_err(|e| status_of(&e))?;
    Ok(filter)
}

fn row_filter(f: &pb::RowFilter) -> Result<Filter, Status> {
    let Some(kind) = &f.filter else { return Err(invalid("a RowFilter with no filter set")) };
    Ok(match kind {
        F::Chain(c) => Filter::chain(c.filters.iter().map(row_filter).collect::<Result<Vec<_>, _>>()?),
        F::Interleave(i) => Filter::interleave(i.filters.iter().map(row_filter).collect::<Result<Vec<_>, _>>()?),
        F::Condition(c) => {
            let predicate =
                c.predicate_filter.as_ref().ok_or_else(|| invalid("a condition filter with no predicate"))?;
            let branch = |b: &Option<Box<pb::RowFilter>>| b.as_deref().map(row_filter).transpose();
            Filter::condition(row_filter(predicate)?, branch(&c.true_filter)?, branch(&c.false_filter)?)
        }
        F::Sink(on) => flag(*on, "sink", Filter::sink())?,
        F::PassAllFilter(on) => flag(*on, "pass_all_filter", Filter::pass_all())?,
        F::BlockAllFilter(on) => flag(*on, "block_all_filter", Filter::block_all())?,
        F::StripValueTransformer(on) => flag(*on, "strip_value_transformer", Filter::strip_value())?,
        // Regexes are bytes, matched as Bigtable matches them (RE2 over
        // bytes, each byte of the pattern a Latin-1 character).
        F::RowKeyRegexFilter(re) => Filter::row_key_regex(re),
        F::FamilyNameRegexFilter(re) => Filter::family_name_regex(re),
        F::ColumnQualifierRegexFilter(re) => Filter::column_qualifier_regex(re),
        F::ValueRegexFilter(re) => Filter::value_regex(re),
        F::RowSampleFilter(p) => Filter::row_sample(*p),
        F::ColumnRangeFilter(r) => column_range(r),
        F::TimestampRangeFilter(r) => Filter::timestamp_range(time_range(r)),
        F::ValueRangeFilter(r) => value_range(r),
        F::CellsPerRowOffsetFilter(n) => Filter::cells_per_row_offset(count(*n, "cells_per_row_offset_filter")?),
        F::CellsPerRowLimitFilter(n) => Filter::cells_per_row_limit(count(*n, "cells_per_row_limit_filter")?),
        F::CellsPerColumnLimitFilter(n) => Filter::cells_per_column_limit(count(*n, "cells_per_column_limit_filter")?),
        F::ApplyLabelTransformer(label) => Filter::apply_label(label.clone()),
    })
}

/// A filter that is a flag, which Bigtable requires to be set.
fn flag(on: bool, name: &str, filter: Filter) -> Result<Filter, Status> {
    if on { Ok(filter) } else { Err(invalid(format!("{name} must be true where it is set"))) }
}

fn count(n: i32, name: &str) -> Result<u32, Status> {
    u32::try_from(n).map_err(|_| invalid(format!("{name} is negative ({n})")))
}

fn column_range(r: &pb::ColumnRange) -> Filter {
    use pb::column_range::{EndQualifier as E, StartQualifier as S};
    let start = match &r.start_qualifier {
        None => Bound::Unbounded,
        Some(S::StartQualifierClosed(q)) => Bound::Included(q.clone()),
        Some(S::StartQualifierOpen(q)) => Bound::Excluded(q.clone()),
    };
    let end = match &r.end_qualifier {
        None => Bound::Unbounded,
        Some(E::EndQualifierClosed(q)) => Bound::Included(q.clone()),
        Some(E::EndQualifierOpen(q)) => Bound::Excluded(q.clone()),
    };
    Filter::column_range(r.family_name.clone(), start, end)
}

fn value_range(r: &pb::ValueRange) -> Filter {
    use pb::value_range::{EndValue as E, StartValue as S};
    let start = match &r.start_value {
        None => Bound::Unbounded,
        Some(S::StartValueClosed(v)) => Bound::Included(v.clone()),
        Some(S::StartValueOpen(v)) => Bound::Excluded(v.clone()),
    };
    let end = match &r.end_value {
        None => Bound::Unbounded,
        Some(E::EndValueClosed(v)) => Bound::Included(v.clone()),
        Some(E::EndValueOpen(v)) => Bound::Excluded(v.clone()),
    };
    Filter::value_range(start, end)
}

/// `[start, end)`, where an end of 0 means no end, as in Bigtable.
fn time_range(r: &pb::TimestampRange) -> TimeRange {
    let start = Timestamp::from_micros(r.start_timestamp_micros);
    if r.end_timestamp_micros == 0 {
        TimeRange::since(start)
    } else {
        TimeRange::new(start, Timestamp::from_micros(r.end_timestamp_micros))
    }
}

/// The rows of a read: its keys and ranges, or, if it names neither,
/// every row of the table, as Bigtable reads it. An empty key is refused
/// in Bigtable's words, which Google's clients' tests look for.
pub fn row_set(rows: Option<&pb::RowSet>) -> Result<RowSet, Status> {
    let Some(rows) = rows.filter(|r| !r.row_keys.is_empty() || !r.row_ranges.is_empty()) else {
        return Ok(RowSet::all());
    };
    if rows.row_keys.iter().any(Bytes::is_empty) {
        return Err(invalid("Row keys must be non-empty"));
    }
    let set = RowSet::new().keys(&rows.row_keys);
    Ok(rows.row_ranges.iter().fold(set, |set, r| set.range(row_range(r))))
}

/// A row range; an empty key at either end is no bound, as in Bigtable.
fn row_range(r: &pb::RowRange) -> RowRange {
    use pb::row_range::{EndKey as E, StartKey as S};
    let start = match &r.start_key {
        Some(S::StartKeyClosed(k)) if !k.is_empty() => Bound::Included(k.clone()),
        Some(S::StartKeyOpen(k)) if !k.is_empty() => Bound::Excluded(k.clone()),
        _ => Bound::Unbounded,
    };
    let end = match &r.end_key {
        Some(E::EndKeyClosed(k)) if !k.is_empty() => Bound::Included(k.clone()),
        Some(E::EndKeyOpen(k)) if !k.is_empty() => Bound::Excluded(k.clone()),
        _ => Bound::Unbounded,
    };
    RowRange::new(start, end)
}

/// A row's mutations.
pub fn mutations(ms: &[pb::Mutation]) -> Result<Vec<Mutation>, Status> {
    if ms.is_empty() {
        return Err(invalid("No mutations provided: a request must hold at least one"));
    }
    ms.iter().map(mutation).collect()
}

fn mutation(m: &pb::Mutation) -> Result<Mutation, Status> {
    use pb::mutation::Mutation as M;
    Ok(match m.mutation.as_ref().ok_or_else(|| invalid("a Mutation with nothing set"))? {
        M::SetCell(s) => Mutation::set_cell(
            &s.family_name,
            &s.column_qualifier,
            Timestamp::from_micros(s.timestamp_micros),
            &s.value,
        ),
        M::DeleteFromColumn(d) => {
            let range = d.time_range.as_ref().map_or(TimeRange::all(), time_range);
            Mutation::delete_from_column(&d.family_name, &d.column_qualifier, range)
        }
        M::DeleteFromFamily(d) => Mutation::delete_from_family(&d.family_name),
        M::DeleteFromRow(_) => Mutation::delete_from_row(),
        M::AddToCell(a) => {
            let qualifier = match value_kind(a.column_qualifier.as_ref()) {
                Some(pb::value::Kind::RawValue(q)) => q.clone(),
                _ => return Err(invalid("add_to_cell: the column qualifier must be a raw_value")),
            };
            let timestamp = match value_kind(a.timestamp.as_ref()) {
                Some(pb::value::Kind::RawTimestampMicros(t)) => Timestamp::from_micros(*t),
                _ => return Err(invalid("add_to_cell: the timestamp must be a raw_timestamp_micros")),
            };
            let input = match value_kind(a.input.as_ref()) {
                Some(pb::value::Kind::IntValue(n)) => *n,
                _ => return Err(invalid("add_to_cell: the input must be an int_value")),
            };
            Mutation::add_to_cell(&a.family_name, qualifier, timestamp, input)
        }
        M::MergeToCell(_) => return Err(Status::unimplemented("merge_to_cell is not served by cellardb")),
    })
}

fn value_kind(v: Option<&pb::Value>) -> Option<&pb::value::Kind> {
    v.and_then(|v| v.kind.as_ref())
}

/// A read-modify-write request's rules.
pub fn rules(rules: &[pb::ReadModifyWriteRule]) -> Result<Vec<ReadModifyWrite>, Status> {
    use pb::read_modify_write_rule::Rule;
    if rules.is_empty() {
        return Err(invalid("no rules: a read-modify-write must hold at least one"));
    }
    rules
        .iter()
        .map(|r| match &r.rule {
            Some(Rule::AppendValue(v)) => Ok(ReadModifyWrite::append(&r.family_name, &r.column_qualifier, v)),
            Some(Rule::IncrementAmount(n)) => Ok(ReadModifyWrite::increment(&r.family_name, &r.column_qualifier, *n)),
            None => Err(invalid("a ReadModifyWriteRule with no rule set")),
        })
        .collect()
}
