//! A row as the `CellChunk`s of a `ReadRowsResponse`, by the rules written
//! in the doc comments of `ReadRowsResponse.CellChunk`:
//!
//! - a row's first chunk names the row, and every cell's first chunk its
//!   timestamp and labels; the family is named where it changes, and the
//!   qualifier where it or the family changes;
//! - a value longer than the chunk size is split over several chunks; each
//!   but the last carries `value_size`, the whole value's length, and the
//!   chunks after the first carry nothing but their part of the value;
//! - the row's last chunk commits it.

use bytes::Bytes;
use cellardb::RowRef;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::read_rows_response::CellChunk;
use pb::read_rows_response::cell_chunk::RowStatus;

/// The largest part of a value one chunk carries: values above it are
/// split, as the real service splits large values.
pub const DEFAULT_VALUE_CHUNK: usize = 1 << 20;

/// Appends `row`'s chunks to `out`, splitting values longer than
/// `value_chunk` bytes (at least 1).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "a value is at most 100 MiB, under i32::MAX"
)]
pub fn row_chunks(row: &RowRef<'_>, value_chunk: usize, out: &mut Vec<CellChunk>) {
    let value_chunk = value_chunk.max(1);
    let first_of_row = out.len();
    let (mut family, mut qualifier): (Option<&str>, Option<&[u8]>) = (None, None);
    for cell in row.cells() {
        let new_family = family != Some(cell.family);
        let new_column = new_family || qualifier != Some(cell.qualifier);
        family = Some(cell.family);
        qualifier = Some(cell.qualifier);
        let parts: Vec<&[u8]> =
            if cell.value.is_empty() { vec![&[][..]] } else { cell.value.chunks(value_chunk).collect() };
        let split = parts.len() > 1;
        for (i, part) in parts.iter().enumerate() {
            let last_part = i + 1 == parts.len();
            let mut chunk = CellChunk {
                value: Bytes::copy_from_slice(part),
                value_size: if split && !last_part { cell.value.len() as i32 } else { 0 },
                ..CellChunk::default()
            };
            if i == 0 {
                chunk.timestamp_micros = cell.timestamp.micros();
                chunk.labels = cell.labels.to_vec();
                if new_family {
                    chunk.family_name = Some(cell.family.to_owned());
                }
                if new_column {
                    chunk.qualifier = Some(cell.qualifier.to_vec());
                }
            }
            out.push(chunk);
        }
    }
    if let Some(first) = out.get_mut(first_of_row) {
        first.row_key = Bytes::copy_from_slice(row.key());
    }
    if out.len() > first_of_row
        && let Some(last) = out.last_mut()
    {
        last.row_status = Some(RowStatus::CommitRow(true));
    }
}
