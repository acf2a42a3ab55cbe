//! Damaged files: every flipped byte gives `Error::Corruption` naming the
//! file and an offset at or before the damage, never a panic or wrong data.

mod common;

use std::path::{Path, PathBuf};

use cellardb::{Error, Filter, Mutation, Options, RowSet};
use common::*;

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

/// A database with one flushed SSTable of several blocks; returns its cells.
fn build(dir: &Path) -> Vec<Flat> {
    let (db, t) = open_with_table(dir, Options::default().block_size(512));
    for i in 0..200 {
        t.mutate_row(
            format!("row{i:03}"),
            [Mutation::set_cell("cf1", format!("q{}", i % 3), 1000 * i, format!("v{i}"))],
        )
        .unwrap();
    }
    db.flush().unwrap();
    scan_all(&t)
}

/// Opens and reads everything; the cells, or the error met on the way.
fn open_and_scan(dir: &Path) -> Result<Vec<Flat>, Error> {
    let db = Options::default().open(dir)?;
    let t = db.table("t")?;
    let rows = t.read_rows(RowSet::all(), &Filter::pass_all()).collect_rows()?;
    Ok(flatten(&rows))
}

fn assert_corruption_at_or_before(result: Result<Vec<Flat>, Error>, file: &Path, flipped: usize) {
    match result {
        Err(Error::Corruption { file: f, offset, what }) => {
            assert_eq!(f, file, "names the damaged file ({what})");
            assert!(offset <= flipped as u64, "offset {offset} is at or before the flipped byte {flipped} ({what})");
        }
        other => panic!("byte {flipped} of {}: expected corruption, got {other:?}", file.display()),
    }
}

#[test]
fn any_flipped_byte_of_an_sstable_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path());
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    let len = usize::try_from(std::fs::metadata(&sst).unwrap().len()).unwrap();
    for offset in (0..len).step_by(3).chain([len - 1]) {
        flip(&sst, offset);
        let result = open_and_scan(dir.path());
        assert_corruption_at_or_before(result, &sst, offset);
        flip(&sst, offset);
    }
    assert_eq!(open_and_scan(dir.path()).unwrap(), expected, "restored file reads whole");
}

#[test]
fn a_damaged_data_block_fails_only_the_reads_that_touch_it() {
    let dir = tempfile::tempdir().unwrap();
    let expected = build(dir.path());
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    flip(&sst, 10);
    let db = Options::default().open(dir.path()).unwrap();
    let t = db.table("t").unwrap();
    let err = t.read_row("row000", &Filter::pass_all()).unwrap_err();
    assert!(matches!(err, Error::Corruption { offset: 0, .. }), "{err}");
    let tail = t.read_row("row199", &Filter::pass_all()).unwrap().unwrap();
    assert_eq!(flatten(&[tail]), expected[expected.len() - 1..].to_vec());
}

#[test]
fn any_flipped_byte_of_the_manifest_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let manifest = dir.path().join("MANIFEST");
    let len = usize::try_from(std::fs::metadata(&manifest).unwrap().len()).unwrap();
    for offset in 0..len {
        flip(&manifest, offset);
        assert_corruption_at_or_before(open_and_scan(dir.path()), &manifest, offset);
        flip(&manifest, offset);
    }
    std::fs::write(&manifest, b"garbage").unwrap();
    assert_corruption_at_or_before(open_and_scan(dir.path()), &manifest, 0);
}

#[test]
fn a_flipped_byte_in_the_middle_of_the_log_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, t) = open_with_table(dir.path(), Options::default());
        for i in 0..50 {
            t.mutate_row(format!("k{i:02}"), [Mutation::set_cell("cf1", "q", 1000, "v")]).unwrap();
        }
    }
    let log = files_with_ext(dir.path(), "log").pop().unwrap();
    let len = usize::try_from(std::fs::metadata(&log).unwrap().len()).unwrap();
    // Every byte of the first half: whatever field it hits, intact records follow.
    for offset in 0..len / 2 {
        flip(&log, offset);
        assert_corruption_at_or_before(open_and_scan(dir.path()), &log, offset);
        flip(&log, offset);
    }
    assert_eq!(open_and_scan(dir.path()).unwrap().len(), 50);
}

#[test]
fn garbage_where_a_table_should_be_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    for garbage in [&b""[..], b"x", &[0u8; 64], &[0xffu8; 4096]] {
        std::fs::write(&sst, garbage).unwrap();
        assert_corruption_at_or_before(open_and_scan(dir.path()), &sst, garbage.len());
    }
}

#[test]
fn a_block_handle_pointing_past_the_end_is_corruption_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    let footer = bytes.len() - 64;
    // Index handle: offset u64::MAX - 4, stored length 0; checksum recomputed.
    bytes[footer..footer + 8].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
    bytes[footer + 8..footer + 12].copy_from_slice(&0u32.to_le_bytes());
    let crc = crc32fast::hash(&bytes[footer..footer + 52]);
    bytes[footer + 52..footer + 56].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&sst, bytes).unwrap();
    assert_corruption_at_or_before(open_and_scan(dir.path()), &sst, usize::MAX);
}

#[test]
fn a_missing_manifest_beside_tables_refuses_to_open_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    std::fs::remove_file(dir.path().join("MANIFEST")).unwrap();
    let err = Options::default().open(dir.path()).err();
    assert!(matches!(err, Some(Error::Corruption { .. })), "{err:?}");
    assert_eq!(files_with_ext(dir.path(), "sst").len(), 1, "the table is still there");
}
