//! `inspect`, the seam for tools: what it hands out of each file agrees with
//! what was written, and its decoders over bytes agree with its readers.

mod common;

use bytes::Bytes;
use cellardb::inspect::{
    EntryKind, LogReader, MANIFEST_FILE_NAME, ManifestReader, ManifestRecord, SstFile, decode_data_block,
    decode_index_block, decode_properties_block, decode_sst_footer, log_file_name, read_manifest, sst_file_name,
};
use cellardb::{Compression, Db, Error, GcRule, Mutation, Options, TimeRange};
use common::files_ending;

/// Writes `rows` rows of a cell and a column tombstone in `cf`, and a
/// family tombstone in `cg`.
fn write(db: &Db, rows: usize) {
    let t = db.table("t").unwrap();
    for i in 0..rows {
        t.mutate_row(
            format!("row{i:04}"),
            [
                Mutation::set_cell("cf", "q", 5_000, format!("v{i}")),
                Mutation::delete_from_column("cf", "old", TimeRange::new(1_000, 3_000)),
                Mutation::delete_from_family("cg"),
            ],
        )
        .unwrap();
    }
}

#[test]
fn an_sstable_reads_back_as_written_by_its_readers_and_by_its_decoders() {
    for compression in [Compression::Zstd { level: 3 }, Compression::None] {
        sstable_reads_back(compression);
    }
}

fn sstable_reads_back(compression: Compression) {
    let dir = tempfile::tempdir().unwrap();
    let db = Options::default().block_size(512).compression(compression).open(dir.path()).unwrap();
    db.create_table("t", [("cf", GcRule::none()), ("cg", GcRule::none())]).unwrap();
    write(&db, 200);
    db.flush().unwrap();
    db.close().unwrap();

    let manifest = read_manifest(
        &dir.path().join(MANIFEST_FILE_NAME),
        &std::fs::read(dir.path().join(MANIFEST_FILE_NAME)).unwrap(),
    )
    .unwrap();
    let store_of = |name: &str| manifest.tables[0].families.iter().find(|f| f.name == name).unwrap().store;
    let listed: Vec<String> = manifest.ssts.iter().map(|s| sst_file_name(s.file)).collect();
    let ssts = files_ending(dir.path(), ".sst");
    assert_eq!(ssts.len(), 2, "one file a family");
    for path in &ssts {
        assert!(listed.iter().any(|name| path.ends_with(name)), "{} is listed", path.display());
        let data = std::fs::read(path).unwrap();
        let sst = SstFile::open(path, Bytes::from(data.clone())).unwrap();
        let props = sst.properties();
        let blocks = sst.blocks();
        assert!(blocks.len() > 1, "512-byte blocks: many a file");
        assert_eq!(sst.block_count(), blocks.len());
        let mut entries = Vec::new();
        for (i, info) in blocks.iter().enumerate() {
            let block = sst.block(i).unwrap();
            assert_eq!(block.entries.len(), info.entries as usize);
            assert_eq!(block.entries.last().unwrap().key, info.last_key);
            // The bytes alone decode to the same block.
            assert_eq!(decode_data_block(&sst.block_bytes(i).unwrap()).unwrap(), block);
            entries.extend(block.entries);
        }
        assert!(matches!(sst.block(blocks.len()), Err(Error::InvalidArgument(_))));
        assert_eq!(entries.len() as u64, props.cells + props.tombstones);
        let rows: std::collections::BTreeSet<_> = entries.iter().map(|e| e.key.row.clone()).collect();
        assert_eq!(rows.len(), 200);
        assert_eq!((props.first_row.as_slice(), props.last_row.as_slice()), (&b"row0000"[..], &b"row0199"[..]));
        if props.family == "cf" {
            assert_eq!(props.store, store_of("cf"));
            assert_eq!((props.cells, props.tombstones), (200, 200));
            let cell = entries.iter().find(|e| e.key.kind == EntryKind::Put).unwrap();
            assert_eq!((cell.key.qualifier.as_slice(), cell.key.timestamp), (&b"q"[..], 5_000));
            assert_eq!(cell.deleted_until(), None);
            let tombstone = entries.iter().find(|e| e.key.kind == EntryKind::DeleteColumn).unwrap();
            assert_eq!((tombstone.key.timestamp, tombstone.deleted_until()), (1_000, Some(Some(3_000))));
        } else {
            assert_eq!(props.store, store_of("cg"));
            assert!(entries.iter().all(|e| e.key.kind == EntryKind::DeleteFamily && e.value.is_empty()));
        }
        let check = sst.check();
        assert!(check.faults.is_empty(), "{:?}", check.faults);
        assert_eq!(
            (check.blocks, check.entries, check.cells),
            (blocks.len() as u64, entries.len() as u64, props.cells)
        );
        assert!(sst.may_contain_row(b"row0100"));

        // The metadata blocks and the footer, taken from the file, decode as
        // the reader decoded them.
        let spans = sst.layout().spans;
        let footer = &data[data.len() - cellardb::inspect::SST_FOOTER_LEN..];
        assert_eq!(decode_sst_footer(footer).unwrap(), spans);
        let slice = |span: cellardb::inspect::BlockSpan| {
            let start = usize::try_from(span.offset).unwrap();
            &data[start..start + span.stored_bytes as usize]
        };
        // Uncompressed, the blocks lie in the file as they decode.
        if compression == Compression::None {
            assert_eq!(decode_index_block(slice(spans.index)).unwrap(), blocks);
            assert_eq!(decode_properties_block(slice(spans.properties)).unwrap(), props);
        }
    }
}

#[test]
fn a_log_reads_back_batch_by_batch_with_its_stores_and_the_manifest_record_by_record() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.create_table("t", [("cf", GcRule::none()), ("cg", GcRule::none())]).unwrap();
    write(&db, 3);
    drop(db);

    let manifest_path = dir.path().join(MANIFEST_FILE_NAME);
    let manifest_bytes = std::fs::read(&manifest_path).unwrap();
    let manifest = read_manifest(&manifest_path, &manifest_bytes).unwrap();
    let cf = manifest.tables[0].families.iter().find(|f| f.name == "cf").unwrap().store;
    let log = dir.path().join(log_file_name(manifest.logs.last().unwrap().number));
    let bytes = std::fs::read(&log).unwrap();
    let mut batches = Vec::new();
    let end = LogReader::new(&log, &bytes)
        .read(|_, batch| {
            batches.push(batch);
            Ok(())
        })
        .unwrap();
    assert_eq!((end.records, end.torn_tail), (3, None));
    assert_eq!(batches.iter().map(|b| b.row.clone()).collect::<Vec<_>>(), [&b"row0000"[..], b"row0001", b"row0002"]);
    let first = &batches[0];
    assert_eq!(first.entries.len(), 3);
    assert!(first.entries.iter().all(|e| e.entry.key.row == first.row));
    assert_eq!((first.entries[0].store, first.entries[0].entry.value.as_slice()), (cf, &b"v0"[..]));
    assert_eq!(first.entries[1].entry.deleted_until(), Some(Some(3_000)));
    assert_eq!(first.entries[2].entry.key.kind, EntryKind::DeleteFamily);
    let seqs: Vec<u64> = first.entries.iter().map(|e| e.entry.key.seq).collect();
    assert_eq!(seqs, [first.first_seq, first.first_seq + 1, first.first_seq + 2]);

    let records: Vec<ManifestRecord> =
        ManifestReader::new(&manifest_path, &manifest_bytes).unwrap().map(|r| r.unwrap().1).collect();
    assert!(records.iter().any(|r| matches!(r, ManifestRecord::Table { name, .. } if name == "t")));
    let families = records.iter().filter(|r| matches!(r, ManifestRecord::Family { .. })).count();
    assert_eq!(families, 2);
}
