//! The chunk merger the server's tests check `ReadRows` answers with,
//! itself checked on chunk sequences a client must accept and ones it must
//! reject. The cases follow the kinds in the Bigtable client conformance
//! tests (`googleapis/conformance-tests`, `bigtable/v2/readrows.json`):
//! missing commits, cells before any key, a family without a qualifier,
//! bare commits, split values, resets, rows out of order.

mod support;

use bytes::Bytes;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::read_rows_response::CellChunk;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::read_rows_response::cell_chunk::RowStatus;
use support::merge_chunks;

/// A chunk: its row key, family, qualifier, timestamp, value, value size,
/// and whether it commits.
#[derive(Default, Clone)]
struct C {
    row: &'static str,
    family: Option<&'static str>,
    qualifier: Option<&'static str>,
    ts: i64,
    value: &'static str,
    size: i32,
    labels: &'static [&'static str],
    commit: bool,
    reset: bool,
}

impl C {
    fn chunk(&self) -> CellChunk {
        let status = if self.reset {
            Some(RowStatus::ResetRow(true))
        } else {
            self.commit.then_some(RowStatus::CommitRow(true))
        };
        CellChunk {
            row_key: Bytes::from_static(self.row.as_bytes()),
            family_name: self.family.map(str::to_owned),
            qualifier: self.qualifier.map(|q| q.as_bytes().to_vec()),
            timestamp_micros: self.ts,
            labels: self.labels.iter().map(|l| (*l).to_owned()).collect(),
            value: Bytes::from_static(self.value.as_bytes()),
            value_size: self.size,
            row_status: status,
        }
    }
}

/// The first chunk of row `row`: family A, qualifier C.
fn first(row: &'static str) -> C {
    C { row, family: Some("A"), qualifier: Some("C"), ts: 100, value: "v", ..C::default() }
}

/// A merged cell as text: family, qualifier, timestamp, value.
type TextCell = (String, String, i64, String);

fn merge(chunks: &[C]) -> Result<Vec<(String, Vec<TextCell>)>, String> {
    let chunks: Vec<CellChunk> = chunks.iter().map(C::chunk).collect();
    Ok(merge_chunks(&chunks, false)?
        .into_iter()
        .map(|(key, cells)| {
            let cells = cells
                .into_iter()
                .map(|(f, q, ts, v, _)| (f, String::from_utf8(q).unwrap(), ts, String::from_utf8(v).unwrap()))
                .collect();
            (String::from_utf8(key).unwrap(), cells)
        })
        .collect())
}

fn cell(f: &str, q: &str, ts: i64, v: &str) -> TextCell {
    (f.to_owned(), q.to_owned(), ts, v.to_owned())
}

#[test]
fn sequences_a_client_accepts_merge_into_their_rows() {
    // One chunk, one row.
    assert_eq!(merge(&[C { commit: true, ..first("r") }]).unwrap(), vec![("r".into(), vec![cell("A", "C", 100, "v")])]);
    // Cells inherit the family and qualifier; a new family names its
    // qualifier; a bare commit is an empty cell at timestamp 0.
    let row = [
        first("r"),
        C { ts: 99, value: "w", ..C::default() },
        C { qualifier: Some("D"), ts: 98, value: "x", ..C::default() },
        C { family: Some("B"), qualifier: Some("E"), ts: 97, value: "y", ..C::default() },
        C { commit: true, ..C::default() },
    ];
    assert_eq!(
        merge(&row).unwrap(),
        vec![(
            "r".into(),
            vec![
                cell("A", "C", 100, "v"),
                cell("A", "C", 99, "w"),
                cell("A", "D", 98, "x"),
                cell("B", "E", 97, "y"),
                cell("B", "E", 0, "")
            ]
        )]
    );
    // A value split four ways, then a second split value; sizes on every
    // part but the last.
    let split = [
        C { value: "va", size: 9, ..first("r") },
        C { value: "lu", size: 9, ..C::default() },
        C { value: "e-V", size: 9, ..C::default() },
        C { value: "AL", ..C::default() },
        C { ts: 99, value: "ab", size: 4, ..C::default() },
        C { value: "cd", commit: true, ..C::default() },
    ];
    assert_eq!(
        merge(&split).unwrap(),
        vec![("r".into(), vec![cell("A", "C", 100, "value-VAL"), cell("A", "C", 99, "abcd")])]
    );
    // A reset drops the row in progress; the row then starts again.
    let reset = [first("r"), C { reset: true, ..C::default() }, C { value: "again", commit: true, ..first("r") }];
    assert_eq!(merge(&reset).unwrap(), vec![("r".into(), vec![cell("A", "C", 100, "again")])]);
    // Two rows in order.
    let two = [C { commit: true, ..first("r1") }, C { commit: true, ..first("r2") }];
    assert_eq!(merge(&two).unwrap().len(), 2);
    assert_eq!(merge(&[]).unwrap(), vec![]);
}

#[test]
fn sequences_a_client_rejects_are_errors() {
    let cases: Vec<(&str, Vec<C>)> = vec![
        ("no commit", vec![first("r")]),
        ("a commit before any cell key", vec![C { commit: true, ..C::default() }]),
        ("a value before any cell key", vec![C { ts: 100, value: "v", ..C::default() }]),
        ("a new family without a qualifier", vec![first("r"), C { family: Some("B"), commit: true, ..C::default() }]),
        ("a second row before the first commits", vec![first("r1"), C { commit: true, ..first("r2") }]),
        ("the last row without a commit", vec![C { commit: true, ..first("r1") }, first("r2")]),
        ("a row key twice", vec![C { commit: true, ..first("r1") }, C { commit: true, ..first("r1") }]),
        ("rows out of order", vec![C { commit: true, ..first("r2") }, C { commit: true, ..first("r1") }]),
        ("a reset with no row in progress", vec![C { reset: true, ..C::default() }]),
        ("a reset that carries a value", vec![first("r"), C { reset: true, value: "v", ..C::default() }]),
        ("a commit inside a split value", vec![C { size: 9, commit: true, ..first("r") }]),
        (
            "a continuation naming a qualifier",
            vec![C { size: 9, ..first("r") }, C { qualifier: Some("D"), value: "x", commit: true, ..C::default() }],
        ),
        (
            "a continuation with a timestamp",
            vec![C { size: 2, ..first("r") }, C { ts: 5, value: "x", commit: true, ..C::default() }],
        ),
        (
            "split parts that do not add up",
            vec![C { size: 9, ..first("r") }, C { value: "x", commit: true, ..C::default() }],
        ),
    ];
    for (what, chunks) in cases {
        assert!(merge(&chunks).is_err(), "{what}: accepted");
    }
}
