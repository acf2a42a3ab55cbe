//! What the tests share: a merger of `ReadRows` chunks into rows that
//! checks every rule of `ReadRowsResponse.CellChunk` a client library
//! checks, so a server's answer that a client would reject fails the test.

#![allow(dead_code, reason = "each test binary uses part of it")]

use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::read_rows_response::CellChunk;
use pb::read_rows_response::cell_chunk::RowStatus;

/// A merged cell: family, qualifier, timestamp, value, labels.
pub type MergedCell = (String, Vec<u8>, i64, Vec<u8>, Vec<String>);

/// A merged row: its key and cells, in the order they came.
pub type MergedRow = (Vec<u8>, Vec<MergedCell>);

/// Where the merge stands between chunks.
enum State {
    /// Between rows.
    NewRow,
    /// Inside a row, at a cell boundary.
    InRow,
    /// Inside a split value, which has this many bytes in all.
    InValue(usize),
}

/// Merges a read's chunks into rows, or says which rule a chunk breaks:
///
/// - a row begins with a chunk naming the row (after the last committed
///   one, in the read's direction), its family and its qualifier;
/// - a chunk naming a family names a qualifier too, and names no other
///   row than the one in progress;
/// - a chunk with `value_size` begins or continues a split value; the
///   chunks after it carry only value bytes (no row, family, qualifier,
///   timestamp or labels) until one without `value_size` ends it, and
///   the parts add up to the size;
/// - `reset_row` drops the row in progress and carries nothing else;
/// - `commit_row` ends a row, not inside a split value;
/// - the answer ends between rows.
///
/// A chunk that neither continues a value nor resets starts a cell, taking
/// the family and qualifier before it where it names none (a bare commit
/// is such a cell, empty, at timestamp 0).
pub fn merge_chunks(chunks: &[CellChunk], reversed: bool) -> Result<Vec<MergedRow>, String> {
    let mut rows: Vec<MergedRow> = Vec::new();
    let mut row: Option<MergedRow> = None;
    let (mut family, mut qualifier): (Option<String>, Option<Vec<u8>>) = (None, None);
    let mut state = State::NewRow;
    for (i, c) in chunks.iter().enumerate() {
        let fail = |what: &str| Err(format!("chunk {i}: {what}"));
        let reset = matches!(c.row_status, Some(RowStatus::ResetRow(true)));
        let commit = matches!(c.row_status, Some(RowStatus::CommitRow(true)));
        let size = usize::try_from(c.value_size).map_err(|_| format!("chunk {i}: negative value_size"))?;
        if reset {
            let bare = c.row_key.is_empty()
                && c.family_name.is_none()
                && c.qualifier.is_none()
                && c.timestamp_micros == 0
                && c.labels.is_empty()
                && c.value.is_empty()
                && size == 0;
            if matches!(state, State::NewRow) || !bare {
                return fail("a reset must end a row in progress and carry nothing else");
            }
            (row, family, qualifier, state) = (None, None, None, State::NewRow);
            continue;
        }
        match state {
            State::InValue(total) => {
                if !c.row_key.is_empty() || c.family_name.is_some() || c.qualifier.is_some() {
                    return fail("a split value's continuation names a row, family or qualifier");
                }
                if c.timestamp_micros != 0 || !c.labels.is_empty() {
                    return fail("a split value's continuation carries a timestamp or labels");
                }
                let Some(cell) = row.as_mut().and_then(|r| r.1.last_mut()) else { return fail("no cell") };
                cell.3.extend_from_slice(&c.value);
                if size == 0 {
                    if cell.3.len() != total {
                        return fail("a split value's parts do not add up to its size");
                    }
                    state = State::InRow;
                }
            }
            State::NewRow | State::InRow => {
                if matches!(state, State::NewRow) {
                    if c.row_key.is_empty() {
                        return fail("a row's first chunk names no row");
                    }
                    if let Some((last, _)) = rows.last() {
                        let after =
                            if reversed { c.row_key.as_ref() < &last[..] } else { c.row_key.as_ref() > &last[..] };
                        if !after {
                            return fail("a row out of order, or again");
                        }
                    }
                    if c.family_name.is_none() || c.qualifier.is_none() {
                        return fail("a row's first chunk names no family or qualifier");
                    }
                    row = Some((c.row_key.to_vec(), Vec::new()));
                } else if !c.row_key.is_empty() && row.as_ref().is_some_and(|r| r.0 != c.row_key.as_ref()) {
                    return fail("a new row before the last one committed");
                }
                if let Some(f) = &c.family_name {
                    if c.qualifier.is_none() {
                        return fail("a new family without a qualifier");
                    }
                    family = Some(f.clone());
                }
                if let Some(q) = &c.qualifier {
                    qualifier = Some(q.clone());
                }
                let (Some(f), Some(q)) = (&family, &qualifier) else { return fail("a cell before any family") };
                let cell = (f.clone(), q.clone(), c.timestamp_micros, c.value.to_vec(), c.labels.clone());
                if let Some(r) = row.as_mut() {
                    r.1.push(cell);
                }
                if size > 0 {
                    if c.value.len() >= size {
                        return fail("a split value's first part is not shorter than its size");
                    }
                    state = State::InValue(size);
                } else {
                    state = State::InRow;
                }
            }
        }
        if commit {
            if matches!(state, State::InValue(_)) {
                return fail("a commit inside a split value");
            }
            rows.extend(row.take());
            (family, qualifier, state) = (None, None, State::NewRow);
        }
    }
    if matches!(state, State::NewRow) { Ok(rows) } else { Err("the answer ends inside a row".into()) }
}
