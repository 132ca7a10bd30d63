//! The error model at the files (issue 17): footer metadata we rely on is parsed strictly (a
//! corrupt part list or next part number fails naming the file, instead of restarting the
//! part numbering), an invalid zstd level is refused, and a truncated part fails every read
//! and compaction naming the file and saying what to do.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use rlprobe_core::layout::{part_name, SAMPLES_DIR, STEPS_FILE, STEPS_PARTS_DIR};
use rlprobe_core::parquet_io::write_table;
use rlprobe_core::props::Codec;
use rlprobe_core::samples::files::open_sample_sources;
use rlprobe_core::schema::ColumnKind;
use rlprobe_core::steps_files::open_step_sources;
use rlprobe_core::{compact_steps, read_steps, Code, Table};

fn tempdir(tag: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!(
        "rlprobe-it-errors-{tag}-{}-{n}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// A Parquet file of `batch` carrying footer key-values `kv`, as another writer (or a
/// hand edit) would leave it.
fn write_with_metadata(path: &Path, batch: &RecordBatch, kv: &[(&str, &str)]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let kv = kv
        .iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v.to_string()))
        .collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn steps_batch(n: i64) -> RecordBatch {
    RecordBatch::try_from_iter([("step", Arc::new(Int64Array::from_iter_values(0..n)) as _)])
        .unwrap()
}

fn step_table(steps: std::ops::Range<i64>) -> Table {
    let mut t = Table::default();
    for (row, s) in steps.enumerate() {
        t.column_mut("step", ColumnKind::I64)
            .unwrap()
            .push_number(s as f64);
        t.column_mut("loss", ColumnKind::F64)
            .unwrap()
            .push_number((s as f64).sin());
        t.finish_rows(row + 1);
    }
    t
}

fn write_part(dir: &Path, index: u64, steps: std::ops::Range<i64>) -> PathBuf {
    let path = dir.join(STEPS_PARTS_DIR).join(part_name(index));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    write_table(
        fs::File::create(&path).unwrap(),
        &path,
        &step_table(steps),
        Codec::default(),
        Vec::new(),
    )
    .unwrap();
    path
}

fn assert_names_footer_key(e: &rlprobe_core::Error, file: &Path, key: &str) {
    assert_eq!(e.code(), Code::CorruptFile, "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{}: its footer key `{key}`", file.display())),
        "names the file and the key: {text}"
    );
    assert!(
        text.contains("restore it from a copy"),
        "says what to do: {text}"
    );
}

#[test]
fn a_compacted_table_whose_next_part_number_is_corrupt_fails_naming_it() {
    let dir = tempdir("next-part");
    let file = dir.join(STEPS_FILE);
    write_with_metadata(
        &file,
        &steps_batch(5),
        &[
            ("rlprobe.compacted_parts", r#"["part-00007.parquet"]"#),
            ("rlprobe.next_part", "seven"),
        ],
    );
    // taken for 0, a resumed writer would start again at part-00000 under names it never wrote
    let e = open_step_sources(&dir)
        .err()
        .expect("a corrupt next part number is an error");
    assert_names_footer_key(&e, &file, "rlprobe.next_part");
    assert!(e.to_string().contains("(got \"seven\")"), "{e}");
    assert_eq!(
        read_steps(&dir, None).unwrap_err().to_string(),
        e.to_string(),
        "reads fail the same way"
    );
}

#[test]
fn a_compacted_table_whose_part_list_is_corrupt_fails_naming_it() {
    let dir = tempdir("part-list");
    let file = dir.join(STEPS_FILE);
    // (what the old comma-splitting parser accepted)
    write_with_metadata(
        &file,
        &steps_batch(5),
        &[(
            "rlprobe.compacted_parts",
            "part-00000.parquet, part-00001.parquet",
        )],
    );
    write_part(&dir, 0, 0..5);
    let e = open_step_sources(&dir)
        .err()
        .expect("a part list that is not JSON is an error");
    assert_names_footer_key(&e, &file, "rlprobe.compacted_parts");
    assert!(
        e.to_string().contains("is not a JSON array of strings"),
        "{e}"
    );
    let e = compact_steps(&dir).expect_err("compaction refuses too");
    assert_names_footer_key(&e, &file, "rlprobe.compacted_parts");
    assert!(
        dir.join(STEPS_PARTS_DIR).join(part_name(0)).exists(),
        "nothing deleted"
    );

    // ids that do not pair with the names
    write_with_metadata(
        &file,
        &steps_batch(5),
        &[
            ("rlprobe.compacted_parts", r#"["part-00000.parquet"]"#),
            ("rlprobe.compacted_ids", r#"["a","b"]"#),
        ],
    );
    let e = open_step_sources(&dir)
        .err()
        .expect("ids that do not pair with the parts are an error");
    assert_names_footer_key(&e, &file, "rlprobe.compacted_ids");
}

#[test]
fn metadata_we_wrote_still_reads_and_a_file_without_it_is_another_writers() {
    let dir = tempdir("metadata-ok");
    write_part(&dir, 0, 0..5);
    write_part(&dir, 1, 5..9);
    compact_steps(&dir).unwrap();
    write_part(&dir, 2, 9..12);
    let sources = open_step_sources(&dir).unwrap();
    assert_eq!(sources.next_part, 3);
    assert_eq!(read_steps(&dir, None).unwrap().rows, 12);
    // pyarrow's steps.parquet: no keys, nothing absorbed
    let other = tempdir("metadata-foreign");
    write_with_metadata(&other.join(STEPS_FILE), &steps_batch(4), &[]);
    assert_eq!(open_step_sources(&other).unwrap().next_part, 0);
}

#[test]
fn a_sample_shard_whose_shard_count_is_corrupt_fails_naming_it() {
    let dir = tempdir("shard-count");
    let file = dir.join(SAMPLES_DIR).join("shard-00000.parquet");
    let batch = RecordBatch::try_from_iter([
        ("step", Arc::new(Int64Array::from(vec![1, 2])) as _),
        (
            "sample_id",
            Arc::new(StringArray::from(vec!["a", "b"])) as _,
        ),
    ])
    .unwrap();
    // taken for "not ours", the shard would be read beside the parts it holds
    write_with_metadata(
        &file,
        &batch,
        &[
            ("rlprobe.compaction", "shard-00000.parquet"),
            ("rlprobe.compaction_shards", "two"),
        ],
    );
    let e = open_sample_sources(&dir)
        .err()
        .expect("a shard count that is not a number is an error");
    assert_names_footer_key(&e, &file, "rlprobe.compaction_shards");
}

#[test]
fn an_invalid_zstd_level_is_refused_not_replaced() {
    let dir = tempdir("zstd");
    let path = dir.join("t.parquet");
    let codec = Codec {
        zstd_level: 99,
        ..Codec::default()
    };
    let e = write_table(Vec::new(), &path, &step_table(0..3), codec, Vec::new()).unwrap_err();
    assert_eq!(e.code(), Code::Invalid);
    assert!(
        e.to_string()
            .starts_with("invalid zstd level 99: expected 1 to 22"),
        "{e}"
    );
}

#[test]
fn a_truncated_part_fails_reads_and_compaction_naming_it_and_what_to_do() {
    let dir = tempdir("truncated");
    write_part(&dir, 0, 0..50);
    let part = write_part(&dir, 1, 50..100);
    let bytes = fs::read(&part).unwrap();
    fs::write(&part, &bytes[..bytes.len() / 2]).unwrap();
    for (what, e) in [
        ("read", read_steps(&dir, None).unwrap_err()),
        ("compaction", compact_steps(&dir).unwrap_err()),
    ] {
        assert_eq!(e.code(), Code::CorruptFile, "{what}: {e}");
        let text = e.report();
        assert!(
            text.starts_with(&format!("{}: damaged Parquet file (", part.display())),
            "{what} names the file: {text}"
        );
        assert!(
            text.contains("move it out of the run directory")
                && text.contains("`probe compact <run>`"),
            "{what} says what to do: {text}"
        );
    }
    assert!(
        part.exists() && dir.join(STEPS_PARTS_DIR).join(part_name(0)).exists(),
        "compaction neither merged nor deleted"
    );
    // moved aside as told: the rest reads and compacts
    fs::rename(&part, dir.join("part-00001.parquet.damaged")).unwrap();
    assert_eq!(compact_steps(&dir).unwrap().rows, 50);
    assert_eq!(read_steps(&dir, None).unwrap().rows, 50);
}

#[test]
fn a_column_whose_type_differs_between_files_names_the_column_and_the_file() {
    let dir = tempdir("conflict");
    write_part(&dir, 0, 0..5);
    // another writer's part whose `loss` is a list
    let mut t = Table::default();
    t.column_mut("step", ColumnKind::I64)
        .unwrap()
        .push_number(5.0);
    t.column_mut("loss", ColumnKind::ListF64)
        .unwrap()
        .push_list(&[1.0, 2.0]);
    t.finish_rows(1);
    let other = dir.join(STEPS_PARTS_DIR).join(part_name(1));
    write_table(
        fs::File::create(&other).unwrap(),
        &other,
        &t,
        Codec::default(),
        Vec::new(),
    )
    .unwrap();
    let e = read_steps(&dir, None).unwrap_err();
    assert_eq!(e.code(), Code::SchemaConflict, "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("column `loss` is f64 in one file and list_f64 in another"),
        "{text}"
    );
    assert!(
        text.contains(&other.display().to_string()),
        "names the file: {text}"
    );
}
