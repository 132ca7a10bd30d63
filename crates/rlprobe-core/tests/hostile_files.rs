//! Hostile and damaged files in a run directory (issue 15, items 13-16): things that are not
//! regular files, flipped bits, copies, foreign Parquet files and corrupt footers. Every read
//! either returns exactly what was written or fails naming the file; nothing hangs, and no
//! damaged, copied or foreign file is merged silently.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use rlprobe_core::layout::{
    part_name, shard_name, SAMPLES_DIR, SPANS_DIR, STEPS_FILE, STEPS_PARTS_DIR,
};
use rlprobe_core::parquet_io::{arrow_writer, write_table};
use rlprobe_core::props::Codec;
use rlprobe_core::samples::files::open_sample_sources;
use rlprobe_core::samples::{compact_samples, SampleCursor, SampleFilter};
use rlprobe_core::spans::{read_spans, SpanFilter, SpanRow};
use rlprobe_core::steps_files::open_step_sources;
use rlprobe_core::stream_files::SkippedFile;
use rlprobe_core::{compact_steps, read_steps, Table};

fn tempdir(tag: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!(
        "rlprobe-it-hostile-{tag}-{}-{n}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// A step table: `step` from `steps`, and four float columns of varied, hard-to-compress values.
fn step_table(steps: std::ops::Range<i64>) -> Table {
    let mut t = Table::default();
    let n = (steps.end - steps.start) as usize;
    for (row, s) in steps.clone().enumerate() {
        t.column_mut("step", rlprobe_core::schema::ColumnKind::I64)
            .unwrap()
            .push_number(s as f64);
        for (k, name) in ["loss", "reward_mean", "kl_mean", "grad_norm"]
            .iter()
            .enumerate()
        {
            let x = ((s as f64 + 1.0) * (k as f64 + 1.618)).sin() * 1e3 + s as f64 / 7.0;
            t.column_mut(name, rlprobe_core::schema::ColumnKind::F64)
                .unwrap()
                .push_number(x);
        }
        t.finish_rows(row + 1);
    }
    assert_eq!(t.rows, n);
    t
}

fn write_steps_file(path: &Path, steps: std::ops::Range<i64>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    write_table(
        fs::File::create(path).unwrap(),
        path,
        &step_table(steps),
        Codec::default(),
        Vec::new(),
    )
    .unwrap();
}

fn sample_batch(steps: std::ops::Range<i64>, per_step: i64) -> RecordBatch {
    let mut step = Vec::new();
    let mut id = Vec::new();
    let mut reward = Vec::new();
    let mut text = Vec::new();
    for s in steps {
        for i in 0..per_step {
            step.push(s);
            id.push(format!("{s}_{i}"));
            reward.push((s * per_step + i) as f64 * 0.37 - 3.0);
            text.push(format!(
                "completion {s}/{i}: {}",
                "x".repeat((s * 7 + i) as usize % 50)
            ));
        }
    }
    RecordBatch::try_from_iter([
        ("step", Arc::new(Int64Array::from(step)) as ArrayRef),
        ("sample_id", Arc::new(StringArray::from(id)) as ArrayRef),
        (
            "reward_total",
            Arc::new(Float64Array::from(reward)) as ArrayRef,
        ),
        (
            "completion_text",
            Arc::new(StringArray::from(text)) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn write_batch_file(path: &Path, batch: &RecordBatch) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = arrow_writer(
        fs::File::create(path).unwrap(),
        path,
        batch.schema(),
        Codec::default(),
        Vec::new(),
    )
    .unwrap();
    w.write(batch).unwrap();
    w.into_inner().unwrap();
}

fn span_batch(n: usize) -> RecordBatch {
    let rows: Vec<SpanRow> = (0..n)
        .map(|i| {
            let mut r = SpanRow::new(
                &format!("span-{i}"),
                "rollout",
                &format!("rollout {i}"),
                1000.0 + i as f64,
                Some(1001.5 + i as f64),
            );
            r.step = Some(i as i64 / 4);
            r
        })
        .collect();
    rlprobe_core::spans::batch::to_record_batch(&rows).unwrap()
}

/// A run with steps (compacted table + two live parts), samples (one part) and spans (one part).
fn sample_run(tag: &str) -> PathBuf {
    let dir = tempdir(tag);
    fs::write(dir.join("manifest.json"), r#"{"schema_version":1,"run_id":"hostile","created_at":"2024-01-01T00:00:00Z","algorithm":"grpo"}"#).unwrap();
    write_steps_file(&dir.join(STEPS_PARTS_DIR).join(part_name(0)), 0..10);
    compact_steps(&dir).unwrap();
    write_steps_file(&dir.join(STEPS_PARTS_DIR).join(part_name(1)), 10..20);
    write_steps_file(&dir.join(STEPS_PARTS_DIR).join(part_name(2)), 20..30);
    write_batch_file(
        &dir.join(SAMPLES_DIR).join(part_name(0)),
        &sample_batch(0..30, 3),
    );
    write_batch_file(&dir.join(SPANS_DIR).join(part_name(0)), &span_batch(40));
    dir
}

fn steps_of(t: &Table) -> Vec<i64> {
    let c = t.column("step").unwrap();
    (0..t.rows).map(|r| c.scalar(r).unwrap() as i64).collect()
}

fn read_samples(dir: &Path) -> rlprobe_core::Result<Vec<RecordBatch>> {
    let mut c = SampleCursor::open(dir, SampleFilter::default(), None, 1000)?;
    let mut out = Vec::new();
    while let Some(b) = c.next_batch()? {
        out.push(b);
    }
    Ok(out)
}

fn sample_ids(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = read_samples(dir)
        .unwrap()
        .iter()
        .flat_map(|b| {
            let a = b.column_by_name("sample_id").unwrap();
            let a = arrow::compute::cast(a, &arrow::datatypes::DataType::Utf8).unwrap();
            let a = a.as_any().downcast_ref::<StringArray>().unwrap().clone();
            (0..a.len())
                .map(move |i| a.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids
}

/// Runs `f` on another thread; None when it has not returned within `limit` (a hang).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

#[cfg(unix)]
fn make_hostile(path: &Path, kind: &str) {
    let _ = fs::remove_file(path);
    match kind {
        "fifo" => assert!(std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success()),
        "dev-zero" => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        "directory" => fs::create_dir(path).unwrap(),
        "symlink-loop" => std::os::unix::fs::symlink(path, path).unwrap(),
        _ => unreachable!(),
    }
}

/// What each hostile kind must be called in the error.
const HOSTILE: &[(&str, &str)] = &[
    ("fifo", "FIFO"),
    ("dev-zero", "character device"),
    ("directory", "a directory"),
    ("symlink-loop", "symbolic link loop"),
];

#[cfg(unix)]
#[test]
fn a_file_that_is_not_regular_fails_at_once_naming_it_and_the_other_surfaces_still_read() {
    let surfaces: &[(&str, &str)] = &[
        ("steps part", "steps/part-00001.parquet"),
        ("steps.parquet", STEPS_FILE),
        ("samples part", "samples/part-00000.parquet"),
        ("spans part", "spans/part-00000.parquet"),
        // a finished capture's spans: skipped without a word before
        (
            "spans of a captured trial",
            "trials/hello.0123456789ab/spans.parquet",
        ),
    ];
    for (surface, rel) in surfaces {
        for (kind, called) in HOSTILE {
            let dir = sample_run("not-regular");
            let target = dir.join(rel);
            if rel.starts_with("trials/") {
                let capture = target.parent().unwrap();
                fs::create_dir_all(capture).unwrap();
                fs::write(capture.join("capture.json"), b"{}").unwrap();
            }
            make_hostile(&target, kind);
            let case = format!("{surface} as {kind}");
            let d = dir.clone();
            let result = within(Duration::from_secs(10), move || {
                let steps = read_steps(&d, None)
                    .map(|t| steps_of(&t))
                    .map_err(|e| e.to_string());
                let samples = read_samples(&d)
                    .map(|b| b.iter().map(|b| b.num_rows()).sum::<usize>())
                    .map_err(|e| e.to_string());
                let spans = read_spans(&d, &SpanFilter::default())
                    .map(|r| r.total)
                    .map_err(|e| e.to_string());
                (steps, samples, spans)
            });
            let Some((steps, samples, spans)) = result else {
                panic!("{case}: the reader hung")
            };
            let damaged = match surface.split(' ').next().unwrap() {
                "steps" | "steps.parquet" => &steps.as_ref().err(),
                "samples" => &samples.as_ref().err(),
                _ => &spans.as_ref().err(),
            };
            let msg = damaged.unwrap_or_else(|| panic!("{case}: read without an error"));
            assert!(
                msg.contains(&target.display().to_string()),
                "{case}: names the file: {msg}"
            );
            assert!(
                msg.contains(called),
                "{case}: says what it is ({called}): {msg}"
            );
            assert!(
                msg.contains("move it out of the run directory"),
                "{case}: says what to do: {msg}"
            );
            if !surface.starts_with("steps") {
                assert_eq!(
                    steps.as_ref().map(|s| s.len()),
                    Ok(30),
                    "{case}: steps still read"
                );
            }
            if !surface.starts_with("samples") {
                assert_eq!(samples, Ok(90), "{case}: samples still read");
            }
            if !surface.starts_with("spans") {
                assert_eq!(spans, Ok(40), "{case}: spans still read");
            }
        }
    }
}

/// A small seeded PRNG, so a failing flip can be replayed from the printed seed.
use rlprobe_core::samples::select::SplitMix64 as Rng;

/// Flips `flips` seeded bits, one at a time, in `rel` of a run made by `make`, and reads the
/// surface back with `read`: every flip must read back exactly the original values or fail
/// naming the file. Returns (identical, errors).
fn flip_bits<T: PartialEq>(
    tag: &str,
    rel: &str,
    flips: usize,
    make: impl Fn(&Path),
    read: impl Fn(&Path) -> rlprobe_core::Result<Vec<T>>,
) -> (usize, usize) {
    let seed: u64 = std::env::var("RLPROBE_FLIP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_0000 + tag.len() as u64);
    eprintln!(
        "{tag}: {flips} bit flips in {rel}, seed {seed} (replay with RLPROBE_FLIP_SEED={seed})"
    );
    let dir = tempdir(tag);
    make(&dir);
    let original_bytes = fs::read(dir.join(rel)).unwrap();
    let expected = read(&dir).unwrap();
    let mut rng = Rng(seed);
    let (mut identical, mut errors) = (0, 0);
    for flip in 0..flips {
        let at = (rng.next_u64() % original_bytes.len() as u64) as usize;
        let bit = (rng.next_u64() % 8) as u8;
        let mut bytes = original_bytes.clone();
        bytes[at] ^= 1 << bit;
        // a fresh name per flip: no cache may serve the previous file's footer
        let case_dir = tempdir(&format!("{tag}-{flip}"));
        make(&case_dir);
        fs::write(case_dir.join(rel), &bytes).unwrap();
        match read(&case_dir) {
            Ok(got) => {
                if got != expected {
                    let first = got.iter().zip(&expected).position(|(a, b)| a != b);
                    panic!(
                        "{tag}: flip of bit {bit} at byte {at} of {} (seed {seed}) read back wrong values without an error: {} values instead of {}, first difference at {first:?}",
                        bytes.len(),
                        got.len(),
                        expected.len()
                    );
                }
                identical += 1;
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&case_dir.join(rel).display().to_string()),
                    "{tag}: the error names the file: {msg}"
                );
                errors += 1;
            }
        }
        let _ = fs::remove_dir_all(&case_dir);
    }
    eprintln!("{tag}: {identical} flips read back identical, {errors} reported the damaged file, 0 wrong values");
    (identical, errors)
}

fn step_values(dir: &Path) -> rlprobe_core::Result<Vec<Vec<u64>>> {
    let t = read_steps(dir, None)?;
    Ok(t.names
        .iter()
        .map(|n| {
            let c = t.column(n).unwrap();
            (0..t.rows)
                .map(|r| c.scalar(r).map_or(u64::MAX, f64::to_bits))
                .collect()
        })
        .collect())
}

fn sample_values(dir: &Path) -> rlprobe_core::Result<Vec<String>> {
    let mut out = Vec::new();
    for b in read_samples(dir)? {
        for i in 0..b.num_rows() {
            let row: Vec<String> = b
                .columns()
                .iter()
                .map(|c| format!("{:?}", c.slice(i, 1)))
                .collect();
            out.push(row.join("|"));
        }
    }
    Ok(out)
}

fn span_values(dir: &Path) -> rlprobe_core::Result<Vec<String>> {
    let r = read_spans(dir, &SpanFilter::default())?;
    Ok((0..r.batch.num_rows())
        .map(|i| {
            r.batch
                .columns()
                .iter()
                .map(|c| format!("{:?}", c.slice(i, 1)))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect())
}

#[test]
fn bit_flips_in_a_steps_file_never_read_back_as_wrong_values() {
    let (_, errors) = flip_bits(
        "flip-steps",
        "steps/part-00000.parquet",
        150,
        |d| write_steps_file(&d.join(STEPS_PARTS_DIR).join(part_name(0)), 0..5000),
        step_values,
    );
    assert!(errors > 0);
}

#[test]
fn bit_flips_in_a_samples_file_never_read_back_as_wrong_values() {
    let (_, errors) = flip_bits(
        "flip-samples",
        "samples/part-00000.parquet",
        150,
        |d| {
            write_batch_file(
                &d.join(SAMPLES_DIR).join(part_name(0)),
                &sample_batch(0..400, 8),
            )
        },
        sample_values,
    );
    assert!(errors > 0);
}

#[test]
fn bit_flips_in_a_spans_file_never_read_back_as_wrong_values() {
    let (_, errors) = flip_bits(
        "flip-spans",
        "spans/part-00000.parquet",
        150,
        |d| write_batch_file(&d.join(SPANS_DIR).join(part_name(0)), &span_batch(3000)),
        span_values,
    );
    assert!(errors > 0);
}

/// The one skipped file at `path`, asserting its reason mentions `why`.
fn listed(files: &[SkippedFile], path: &Path, why: &str) {
    let found: Vec<&SkippedFile> = files.iter().filter(|f| f.path == path).collect();
    assert_eq!(
        found.len(),
        1,
        "{} listed once in {files:?}",
        path.display()
    );
    assert!(
        found[0].reason.contains(why),
        "reason for {}: {}",
        path.display(),
        found[0].reason
    );
}

#[test]
fn a_copied_part_file_does_not_duplicate_steps() {
    let dir = sample_run("dup-part");
    let copy = dir.join(STEPS_PARTS_DIR).join(part_name(7));
    fs::copy(dir.join(STEPS_PARTS_DIR).join(part_name(1)), &copy).unwrap();
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..30).collect::<Vec<_>>()
    );
    let sources = open_step_sources(&dir).unwrap();
    listed(&sources.foreign, &copy, "a copy of part-00001.parquet");
    assert_eq!(
        sources.next_part, 8,
        "a writer never reuses the copy's name"
    );
    // compaction neither merges nor deletes it
    compact_steps(&dir).unwrap();
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..30).collect::<Vec<_>>()
    );
    assert!(copy.exists());
    listed(
        &open_step_sources(&dir).unwrap().foreign,
        &copy,
        "a copy of part-00001.parquet",
    );
}

#[test]
fn a_copied_sample_part_does_not_duplicate_samples() {
    let dir = sample_run("dup-sample");
    let copy = dir.join(SAMPLES_DIR).join(part_name(4));
    fs::copy(dir.join(SAMPLES_DIR).join(part_name(0)), &copy).unwrap();
    assert_eq!(sample_ids(&dir).len(), 90);
    listed(
        &open_sample_sources(&dir).unwrap().foreign,
        &copy,
        "a copy of part-00000.parquet",
    );
    // nor does compaction merge the copy (its original is then inside a shard)
    compact_samples(&dir).unwrap();
    assert_eq!(sample_ids(&dir).len(), 90);
    listed(
        &open_sample_sources(&dir).unwrap().foreign,
        &copy,
        "a copy of part-00000.parquet",
    );
}

#[test]
fn a_foreign_parquet_file_in_samples_is_not_read_as_samples() {
    let dir = sample_run("foreign-sample");
    let expected = sample_ids(&dir);
    // a steps table dropped into samples/ under a shard's name, and files of other names
    let shard = dir.join(SAMPLES_DIR).join(shard_name(3));
    write_steps_file(&shard, 0..5);
    let other = dir.join(SAMPLES_DIR).join("extra.parquet");
    write_batch_file(&other, &sample_batch(50..52, 2));
    fs::write(dir.join(SAMPLES_DIR).join("notes.txt"), "hello").unwrap();
    assert_eq!(sample_ids(&dir), expected);
    let sources = open_sample_sources(&dir).unwrap();
    listed(&sources.foreign, &shard, "not a samples table");
    listed(
        &sources.foreign,
        &other,
        "not a file rlprobe writes in samples/",
    );
    listed(
        &sources.foreign,
        &dir.join(SAMPLES_DIR).join("notes.txt"),
        "not a file rlprobe writes",
    );
    assert_eq!(
        sources.next_shard, 4,
        "a compaction never overwrites the foreign shard"
    );
    compact_samples(&dir).unwrap();
    assert_eq!(sample_ids(&dir), expected);
    assert!(shard.exists() && other.exists());
}

#[test]
fn a_shard_without_our_footer_keys_is_read_like_the_python_packages() {
    // pyarrow-style: a plain writer, no rlprobe keys, no checksums, the sample columns
    let dir = sample_run("python-shard");
    let batch = sample_batch(40..45, 2);
    let path = dir.join(SAMPLES_DIR).join(shard_name(0));
    let mut w = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    assert_eq!(sample_ids(&dir).len(), 90 + 10);
    assert!(open_sample_sources(&dir).unwrap().foreign.is_empty());
}

#[test]
fn a_shard_copied_from_another_run_does_not_hide_this_runs_samples() {
    // run A compacted its part-00000 into shard-00000 (whose footer lists part-00000)
    let a = tempdir("other-run");
    write_batch_file(
        &a.join(SAMPLES_DIR).join(part_name(0)),
        &sample_batch(100..110, 2),
    );
    compact_samples(&a).unwrap();
    // run B has its own live part-00000; A's shard lands in B's samples/
    let b = sample_run("hidden-part");
    let expected = sample_ids(&b);
    let copied = b.join(SAMPLES_DIR).join(shard_name(0));
    fs::copy(a.join(SAMPLES_DIR).join(shard_name(0)), &copied).unwrap();
    assert_eq!(sample_ids(&b), expected, "B's own samples, and not A's");
    listed(
        &open_sample_sources(&b).unwrap().foreign,
        &copied,
        "compacted from another run's parts",
    );
    // a compaction of B keeps A's shard out, and B's samples in
    compact_samples(&b).unwrap();
    assert_eq!(sample_ids(&b), expected);
}

#[test]
fn a_lone_shard_of_another_runs_compaction_is_foreign_not_an_interrupted_compaction() {
    // run A's compaction of its part-00033 wrote two shards (4,200 samples); its second
    // lands in B (whose parts have other names: no name conflict to tell)
    let a = tempdir("other-two-shards");
    write_batch_file(
        &a.join(SAMPLES_DIR).join(part_name(33)),
        &sample_batch(1000..3100, 2),
    );
    compact_samples(&a).unwrap();
    let b = sample_run("lone-shard");
    let expected = sample_ids(&b);
    let copied = b.join(SAMPLES_DIR).join(shard_name(1));
    fs::copy(a.join(SAMPLES_DIR).join(shard_name(1)), &copied).unwrap();
    assert_eq!(sample_ids(&b), expected);
    let sources = open_sample_sources(&b).unwrap();
    listed(&sources.foreign, &copied, "the parts they list are not");
    assert!(sources.incomplete_shards.is_empty());
    // so compaction leaves it alone (an interrupted compaction's shards it would delete)
    compact_samples(&b).unwrap();
    assert!(copied.exists());
    assert_eq!(sample_ids(&b), expected);
}

#[test]
fn a_compacted_steps_table_of_another_run_does_not_hide_this_runs_parts() {
    let a = tempdir("other-steps");
    write_steps_file(&a.join(STEPS_PARTS_DIR).join(part_name(0)), 100..110);
    compact_steps(&a).unwrap();
    let b = tempdir("hidden-steps");
    write_steps_file(&b.join(STEPS_PARTS_DIR).join(part_name(0)), 0..10);
    fs::copy(a.join(STEPS_FILE), b.join(STEPS_FILE)).unwrap();
    assert_eq!(
        steps_of(&read_steps(&b, None).unwrap()),
        (0..10).collect::<Vec<_>>()
    );
    listed(
        &open_step_sources(&b).unwrap().foreign,
        &b.join(STEPS_FILE),
        "another run",
    );
}

#[test]
fn a_corrupt_footer_is_an_error_naming_the_file_and_what_to_do() {
    for rel in ["steps/part-00001.parquet", STEPS_FILE] {
        let dir = sample_run("corrupt-footer");
        let path = dir.join(rel);
        let mut bytes = fs::read(&path).unwrap();
        let n = bytes.len();
        // the footer's length field says more than the file holds
        bytes[n - 5] ^= 0x40;
        fs::write(&path, &bytes).unwrap();
        let msg = read_steps(&dir, None).unwrap_err().to_string();
        assert!(
            msg.contains(&path.display().to_string()),
            "{rel}: names the file: {msg}"
        );
        assert!(msg.contains("move it"), "{rel}: says what to do: {msg}");
    }
}
