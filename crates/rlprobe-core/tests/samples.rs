//! Samples end to end, without Node: wire batches in, part files, shard compaction with
//! crash-shaped leftovers, resumed writers, and filtered streaming reads.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use rlprobe_core::layout::{list_parts, list_shards, SAMPLES_DIR};
use rlprobe_core::samples::wire::{WireValue as W, WireWriter};
use rlprobe_core::samples::{
    compact_samples, CaptureReason, PrefetchCursor, SampleCursor, SampleFilter,
};
use rlprobe_core::{Recorder, RecorderOptions};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rlprobe-it-samples-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn opts(dir: &Path) -> RecorderOptions {
    let mut o = RecorderOptions::new(dir);
    o.flush_steps = 50;
    o.flush_interval = Duration::from_secs(60);
    o
}

/// One call of `per_step` samples at `step`; sample i gets group `g{i % 4}` and reward i.
fn push_step_samples(rec: &Recorder, step: i64, per_step: u32, text: &str) {
    let mut w = WireWriter::new(Some(step));
    for i in 0..per_step {
        let reason = if i % 2 == 0 {
            CaptureReason::TopK
        } else {
            CaptureReason::Random
        };
        let group = format!("g{}", i % 4);
        w.sample(
            i,
            Some(reason),
            &[
                ("group_id", W::Str(&group)),
                ("completion_text", W::Str(text)),
                ("reward_total", W::Number(i as f64)),
                ("reward_components", W::Object(vec![("fmt", 1.0)])),
                ("completion_len", W::Number(text.len() as f64)),
                ("truncated", W::Bool(i == 0)),
            ],
        );
    }
    assert!(rec.push_samples(w.buf, per_step as u64));
}

fn read_all(dir: &Path, filter: SampleFilter, columns: Option<Vec<String>>) -> Vec<RecordBatch> {
    let mut c = SampleCursor::open(dir, filter, columns, 1000).unwrap();
    let mut out = Vec::new();
    while let Some(b) = c.next_batch().unwrap() {
        out.push(b);
    }
    out
}

fn ids(batches: &[RecordBatch]) -> Vec<String> {
    let mut v = Vec::new();
    for b in batches {
        let a = b.column_by_name("sample_id").unwrap().as_string::<i32>();
        v.extend((0..a.len()).map(|i| a.value(i).to_string()));
    }
    v
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

#[test]
fn samples_are_written_compacted_into_shards_and_read_with_filters() {
    let dir = tempdir("basic");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 0..1250 {
        push_step_samples(&rec, step, 8, "the answer is 4");
    }
    assert!(rec.flush(Duration::from_secs(30)));
    let c = rec.counters();
    assert_eq!(
        (
            c.samples_logged,
            c.samples_written,
            c.samples_dropped,
            c.samples_bad
        ),
        (10_000, 10_000, 0, 0)
    );
    assert!(!list_parts(&dir.join(SAMPLES_DIR)).unwrap().is_empty());
    // readable while live, in order
    let live = ids(&read_all(&dir, SampleFilter::default(), None));
    assert_eq!(live.len(), 10_000);
    assert_eq!(live[9], "1_1");

    let report = rec.close(true, Duration::from_secs(60)).unwrap();
    let comp = report.compaction.unwrap();
    assert_eq!(comp.sample_rows, 10_000);
    let shards = list_shards(&dir.join(SAMPLES_DIR)).unwrap();
    assert_eq!(shards.len(), 3, "4096 + 4096 + 1808");
    assert!(list_parts(&dir.join(SAMPLES_DIR)).unwrap().is_empty());
    assert_eq!(ids(&read_all(&dir, SampleFilter::default(), None)), live);

    // filters: step range (row groups pruned by statistics), reason, group, projection
    let f = SampleFilter {
        step_min: Some(1000),
        step_max: Some(1009),
        ..Default::default()
    };
    let mut cursor = SampleCursor::open(&dir, f, None, 1000).unwrap();
    let mut n = 0;
    while let Some(b) = cursor.next_batch().unwrap() {
        let steps = b
            .column_by_name("step")
            .unwrap()
            .as_primitive::<Int64Type>();
        assert!(steps.values().iter().all(|s| (1000..=1009).contains(s)));
        n += b.num_rows();
    }
    assert_eq!(n, 80);
    assert!(
        cursor.row_groups_skipped >= 2,
        "shards outside the range are skipped unread: {}",
        cursor.row_groups_skipped
    );
    let f = SampleFilter {
        reasons: vec!["top_k".into()],
        group: Some("g2".into()),
        ..Default::default()
    };
    let got = read_all(&dir, f, Some(vec!["sample_id".into()]));
    assert_eq!(rows(&got), 2500, "samples 2 and 6 of each step");
    assert_eq!(
        got[0].num_columns(),
        1,
        "filter columns are not returned unless asked for"
    );
    assert!(ids(&got)
        .iter()
        .all(|id| id.ends_with("_2") || id.ends_with("_6")));

    // forensics filters: reward range, truncation, text search, one sample by id
    let f = SampleFilter {
        step_min: Some(10),
        step_max: Some(19),
        reward_min: Some(5.0),
        reward_max: Some(6.0),
        ..Default::default()
    };
    let got = ids(&read_all(&dir, f, Some(vec!["sample_id".into()])));
    assert_eq!(got.len(), 20, "rewards 5 and 6 of ten steps");
    assert!(got
        .iter()
        .all(|id| id.ends_with("_5") || id.ends_with("_6")));
    let f = SampleFilter {
        truncated: Some(true),
        ..Default::default()
    };
    assert_eq!(
        ids(&read_all(&dir, f, None)).len(),
        1250,
        "sample 0 of each step"
    );
    let f = SampleFilter {
        truncated: Some(false),
        step_min: Some(0),
        step_max: Some(0),
        ..Default::default()
    };
    assert_eq!(ids(&read_all(&dir, f, None)).len(), 7);
    let f = SampleFilter {
        text: Some("ANSWER IS".into()),
        step_min: Some(3),
        step_max: Some(3),
        ..Default::default()
    };
    assert_eq!(
        rows(&read_all(&dir, f, None)),
        8,
        "case-insensitive, in the completion"
    );
    let f = SampleFilter {
        text: Some("answer is 5".into()),
        ..Default::default()
    };
    assert_eq!(rows(&read_all(&dir, f, None)), 0);
    // a set of steps in one pass: only row groups holding a listed step are read
    let f = SampleFilter::default().with_steps([1200, 7, 1234, 7]);
    let mut cursor = SampleCursor::open(&dir, f, Some(vec!["step".into()]), 1000).unwrap();
    let mut seen = Vec::new();
    while let Some(b) = cursor.next_batch().unwrap() {
        seen.extend(
            b.column_by_name("step")
                .unwrap()
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    seen.sort_unstable();
    assert_eq!(seen, [[7; 8], [1200; 8], [1234; 8]].concat());
    // shards hold steps 0–511, 512–1023 and 1024–1249: the middle one holds no listed step
    assert_eq!(
        cursor.row_groups_skipped, 1,
        "row groups without a listed step are skipped"
    );
    let f = SampleFilter {
        step_min: Some(1000),
        ..Default::default()
    }
    .with_steps([7, 1234]);
    assert_eq!(
        rows(&read_all(&dir, f, None)),
        8,
        "a step set combines with a range"
    );
    let f = SampleFilter {
        sample_id: Some("1234_3".into()),
        ..Default::default()
    };
    let got = read_all(&dir, f, None);
    assert_eq!(ids(&got), vec!["1234_3".to_string()]);
    assert_eq!(
        got[0]
            .column_by_name("completion_text")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "the answer is 4"
    );
}

#[test]
fn an_interrupted_compaction_never_loses_or_doubles_a_sample() {
    let dir = tempdir("crash");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 0..1100 {
        push_step_samples(&rec, step, 8, "x");
    }
    rec.close(false, Duration::from_secs(60)).unwrap();
    let sdir = dir.join(SAMPLES_DIR);
    let saved = dir.join("saved-parts");
    fs::create_dir_all(&saved).unwrap();
    for (_, p) in list_parts(&sdir).unwrap() {
        fs::copy(&p, saved.join(p.file_name().unwrap())).unwrap();
    }
    let restore = || {
        for e in fs::read_dir(&saved).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), sdir.join(e.file_name())).unwrap();
        }
    };
    let all = ids(&read_all(&dir, SampleFilter::default(), None));
    assert_eq!(all.len(), 8800);

    compact_samples(&dir).unwrap();
    // crash after the last shard, before the parts were deleted
    restore();
    assert_eq!(ids(&read_all(&dir, SampleFilter::default(), None)), all);
    // crash before the last shard was published: the others are ignored
    let shards = list_shards(&sdir).unwrap();
    assert_eq!(shards.len(), 3);
    fs::remove_file(&shards[2].1).unwrap();
    assert_eq!(ids(&read_all(&dir, SampleFilter::default(), None)), all);
    // the next compaction cleans up and finishes
    let r = compact_samples(&dir).unwrap();
    assert_eq!(r.rows, 8800);
    assert_eq!(ids(&read_all(&dir, SampleFilter::default(), None)), all);
    assert!(list_parts(&sdir).unwrap().is_empty());
    assert_eq!(list_shards(&sdir).unwrap().len(), 3);
    // idempotent
    let again = compact_samples(&dir).unwrap();
    assert_eq!((again.parts_merged, again.rows), (0, 0));
}

#[test]
fn a_resumed_run_appends_shards_without_reusing_part_names() {
    let dir = tempdir("resume");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 0..100 {
        push_step_samples(&rec, step, 8, "a");
    }
    rec.close(true, Duration::from_secs(60)).unwrap();
    let before: BTreeSet<PathBuf> = list_shards(&dir.join(SAMPLES_DIR))
        .unwrap()
        .into_iter()
        .map(|s| s.1)
        .collect();
    let mtimes: Vec<_> = before
        .iter()
        .map(|p| fs::metadata(p).unwrap().modified().unwrap())
        .collect();

    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 100..150 {
        push_step_samples(&rec, step, 8, "b");
    }
    assert!(rec.flush(Duration::from_secs(30)));
    // the new part's name is past every name the shards absorbed
    let parts = list_parts(&dir.join(SAMPLES_DIR)).unwrap();
    assert!(parts[0].0 >= 1, "{parts:?}");
    assert_eq!(rows(&read_all(&dir, SampleFilter::default(), None)), 1200);
    rec.close(true, Duration::from_secs(60)).unwrap();
    let after = list_shards(&dir.join(SAMPLES_DIR)).unwrap();
    assert_eq!(
        after.len(),
        before.len() + 1,
        "a new shard, old ones untouched"
    );
    for (p, t) in before.iter().zip(mtimes) {
        assert_eq!(fs::metadata(p).unwrap().modified().unwrap(), t);
    }
    assert_eq!(rows(&read_all(&dir, SampleFilter::default(), None)), 1200);
}

#[test]
fn bad_samples_become_events_and_a_full_queue_drops_whole_calls() {
    let dir = tempdir("bad");
    let mut o = opts(&dir);
    o.sample_queue_bytes = 4096;
    let mut rec = Recorder::open(o).unwrap();
    let mut w = WireWriter::new(Some(3));
    w.sample(0, None, &[("completion_len", W::Number(-1.0))]);
    w.sample(1, None, &[("completion_text", W::Str("fine"))]);
    assert!(rec.push_samples(w.buf, 2));
    assert!(rec.flush(Duration::from_secs(10)));
    let c = rec.counters();
    assert_eq!((c.samples_written, c.samples_bad), (1, 1));
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"kind\":\"bad_record\"") && events.contains("completion_len"),
        "{events}"
    );

    // a queue of 4 KB: a burst of 3 KB calls keeps one or two and drops the rest, counted
    let big = "z".repeat(3000);
    let mut kept = 0;
    for step in 0..20 {
        let mut w = WireWriter::new(Some(step));
        w.sample(0, None, &[("completion_text", W::Str(&big))]);
        kept += rec.push_samples(w.buf, 1) as u64;
    }
    let report = rec.close(true, Duration::from_secs(30)).unwrap();
    let c = report.counters;
    assert_eq!(c.samples_logged, 22);
    assert_eq!(c.samples_written, 1 + kept);
    assert_eq!(c.samples_dropped, 20 - kept);
    assert_eq!(c.samples_pending, 0);
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    if kept < 20 {
        assert!(
            events.contains("\"record\":\"sample\""),
            "a recorder_drops event for samples"
        );
    }
}

/// Reads racing compactions and a live writer: every read sees each published sample and
/// step exactly once, so counts never fall and never exceed what was logged.
#[test]
fn reads_during_compaction_never_miss_or_double_a_row() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempdir("race");
    let mut o = opts(&dir);
    o.flush_steps = 5;
    let mut rec = Recorder::open(o).unwrap();
    let (loss_id, _) = rec.register("loss").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                rlprobe_core::compact_steps(&dir).unwrap();
                compact_samples(&dir).unwrap();
                n += 1;
            }
            n
        })
    };
    let reader = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut last_samples, mut last_steps, mut reads) = (0, 0, 0);
            while !stop.load(Ordering::Relaxed) {
                let samples = rows(&read_all(
                    &dir,
                    SampleFilter::default(),
                    Some(vec!["sample_id".into()]),
                ));
                let steps = rlprobe_core::read_steps(&dir, Some(&["step".to_string()]))
                    .unwrap()
                    .rows;
                assert!(
                    samples >= last_samples,
                    "a read lost samples: {samples} after {last_samples}"
                );
                assert!(
                    steps >= last_steps,
                    "a read lost steps: {steps} after {last_steps}"
                );
                (last_samples, last_steps) = (samples, steps);
                reads += 1;
            }
            (last_samples, last_steps, reads)
        })
    };
    for step in 0..1500 {
        assert!(rec.push_step(&[step as f64, f64::NAN, loss_id as f64, 1.0]));
        push_step_samples(&rec, step, 4, "t");
        if step % 50 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(rec.flush(Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let compactions = compactor.join().unwrap();
    let (samples, steps, reads) = reader.join().unwrap();
    rec.close(true, Duration::from_secs(60)).unwrap();
    assert!(
        samples <= 6000 && steps <= 1500,
        "never more than logged: {samples} {steps}"
    );
    assert!(
        compactions > 3 && reads > 3,
        "the race ran: {compactions} compactions, {reads} reads"
    );
    assert_eq!(rows(&read_all(&dir, SampleFilter::default(), None)), 6000);
    assert_eq!(rlprobe_core::read_steps(&dir, None).unwrap().rows, 1500);
}

fn read_ahead(
    dir: &Path,
    filter: SampleFilter,
    columns: Option<Vec<String>>,
) -> (Vec<RecordBatch>, u64) {
    let cursor = SampleCursor::open(dir, filter, columns, 1000).unwrap();
    let mut c = PrefetchCursor::start(cursor).unwrap();
    let mut out = Vec::new();
    while let Some(b) = c.next_batch().unwrap() {
        out.push(b);
    }
    assert!(c.next_batch().unwrap().is_none(), "done stays done");
    (out, c.row_groups_skipped())
}

#[test]
fn a_cursor_read_ahead_on_threads_of_its_own_yields_what_the_plain_cursor_does() {
    let dir = tempdir("prefetch");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 0..1250 {
        push_step_samples(&rec, step, 8, "the answer is 4");
    }
    rec.close(true, Duration::from_secs(60)).unwrap();
    // more files: parts after the shards
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for step in 1250..1400 {
        push_step_samples(&rec, step, 8, "four");
    }
    assert!(rec.flush(Duration::from_secs(30)));
    let filters = [
        SampleFilter::default(),
        SampleFilter {
            step_min: Some(1000),
            step_max: Some(1300),
            reasons: vec!["top_k".into()],
            ..Default::default()
        },
        SampleFilter {
            group: Some("g3".into()),
            ..Default::default()
        },
    ];
    for f in filters {
        for columns in [
            None,
            Some(vec!["sample_id".to_string(), "step".to_string()]),
        ] {
            let plain = read_all(&dir, f.clone(), columns.clone());
            let mut c = SampleCursor::open(&dir, f.clone(), columns.clone(), 1000).unwrap();
            while c.next_batch().unwrap().is_some() {}
            let (ahead, skipped) = read_ahead(&dir, f.clone(), columns.clone());
            assert_eq!(ahead, plain, "batch for batch, filter {f:?}");
            assert_eq!(skipped, c.row_groups_skipped);
            // any number of threads (0: the caller's own, as when none can start), the
            // same batches in the same order; a cursor part-read first goes on where it was
            for workers in [0, 1, 3, 8] {
                let mut c = SampleCursor::open(&dir, f.clone(), columns.clone(), 1000).unwrap();
                let first = c.next_batch().unwrap();
                let mut c = PrefetchCursor::start_on(c, workers).unwrap();
                let mut out: Vec<RecordBatch> = first.into_iter().collect();
                while let Some(b) = c.next_batch().unwrap() {
                    out.push(b);
                }
                assert_eq!(out, plain, "{workers} threads, filter {f:?}");
                assert_eq!(c.row_groups_skipped(), skipped, "{workers} threads");
            }
        }
    }
    rec.close(false, Duration::from_secs(60)).unwrap();
}

/// A run of 9,000 one-sample steps, closed: its samples compacted into three shards.
fn closed_run_of_three_shards(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut rec = Recorder::open(opts(dir)).unwrap();
    for step in 0..9000 {
        push_step_samples(&rec, step, 1, "x");
    }
    rec.close(true, Duration::from_secs(60)).unwrap();
    let shards = list_shards(&dir.join(SAMPLES_DIR)).unwrap();
    assert!(shards.len() >= 3);
    shards
}

#[test]
fn a_cursor_read_ahead_reports_a_damaged_file_and_stops_and_a_dropped_one_ends_its_thread() {
    let dir = tempdir("prefetch-damaged");
    let shards = closed_run_of_three_shards(&dir);
    // the second shard's middle overwritten: its footer still reads, its pages do not
    let victim = shards[1].1.clone();
    let mut bytes = fs::read(&victim).unwrap();
    let mid = bytes.len() / 3;
    for b in &mut bytes[mid..mid + 64] {
        *b = 0xAB;
    }
    fs::write(&victim, bytes).unwrap();
    let plain_err = {
        let mut c = SampleCursor::open(&dir, SampleFilter::default(), None, 1000).unwrap();
        loop {
            match c.next_batch() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the damaged shard was read without an error"),
                Err(e) => break e.to_string(),
            }
        }
    };
    let mut c = PrefetchCursor::start(
        SampleCursor::open(&dir, SampleFilter::default(), None, 1000).unwrap(),
    )
    .unwrap();
    let err = loop {
        match c.next_batch() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the damaged shard was read ahead without an error"),
            Err(e) => break e.to_string(),
        }
    };
    assert_eq!(err, plain_err);
    assert!(c.next_batch().unwrap().is_none(), "nothing after the error");

    // dropped after one batch: its thread must not outlive it (it would hold the files)
    let mut c =
        PrefetchCursor::start(SampleCursor::open(&dir, SampleFilter::default(), None, 10).unwrap())
            .unwrap();
    assert!(c.next_batch().unwrap().is_some());
    let ended = c.thread_ended();
    assert!(
        !ended.load(std::sync::atomic::Ordering::Acquire),
        "still reading ahead"
    );
    drop(c);
    let until_ended = |ended: std::sync::Arc<std::sync::atomic::AtomicBool>, what: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !ended.load(std::sync::atomic::Ordering::Acquire) {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    until_ended(ended, "the reading threads outlived their cursor");

    // closed after one batch (a loop left early): the threads end while the cursor lives
    let mut c =
        PrefetchCursor::start(SampleCursor::open(&dir, SampleFilter::default(), None, 10).unwrap())
            .unwrap();
    assert!(c.next_batch().unwrap().is_some());
    c.close();
    assert!(c.next_batch().unwrap().is_none(), "nothing after close");
    until_ended(c.thread_ended(), "the reading threads outlived close()");
}

#[test]
fn the_shards_of_one_compaction_share_one_parse_of_the_parts_they_absorbed() {
    use rlprobe_core::parquet_io::ParquetFile;
    use rlprobe_core::stream_files::{Absorbed, AbsorbedMemo};
    let dir = tempdir("absorbed-memo");
    let shards = closed_run_of_three_shards(&dir);
    let mut memo = AbsorbedMemo::default();
    let files: Vec<ParquetFile> = shards
        .iter()
        .map(|(_, p)| ParquetFile::open(p).unwrap())
        .collect();
    let parsed: Vec<_> = files
        .iter()
        .map(|f| Absorbed::of_memo(f, &mut memo).unwrap())
        .collect();
    assert!(
        parsed
            .windows(2)
            .all(|w| std::sync::Arc::ptr_eq(&w[0], &w[1])),
        "one parse for the compaction's lists"
    );
    // the same as parsing each shard on its own
    let alone = Absorbed::of(&files[1]).unwrap();
    assert_eq!(parsed[1].ids, alone.ids);
    assert_eq!(parsed[1].next_part(), alone.next_part());
    assert!(!alone.ids.is_empty());
    // a fresh memo parses again
    let again = Absorbed::of_memo(&files[0], &mut AbsorbedMemo::default()).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&again, &parsed[0]));
}
