//! Spans end to end, without Node: wire batches through the recorder's writer thread into
//! part files, a span written twice (caught open by a flush, ended later) read once at its
//! last write, deduplicating compaction, resumed runs re-recording a keyed span, a crash
//! between publishing `spans.parquet` and deleting the parts, and the filters.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use rlprobe_core::layout::{list_parts, SPANS_DIR, SPANS_FILE};
use rlprobe_core::spans::{
    compact_spans, encode_spans, read_spans, span_counts, KindCount, SpanFilter, SpanRow,
    SpanStatus,
};
use rlprobe_core::{Recorder, RecorderOptions};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rlprobe-it-spans-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn opts(dir: &Path) -> RecorderOptions {
    let mut o = RecorderOptions::new(dir);
    o.flush_interval = Duration::from_secs(60);
    o
}

fn span(
    id: &str,
    parent: Option<&str>,
    root: &str,
    kind: &str,
    step: Option<i64>,
    start: f64,
) -> SpanRow {
    SpanRow {
        parent_id: parent.map(Into::into),
        root_id: root.into(),
        step,
        ..SpanRow::new(id, kind, &format!("{kind}:{id}"), start, Some(start + 0.25))
    }
}

/// A rollout tree at `step`: rollout → 2 turns → a tool call under each.
fn rollout(step: i64, r: usize, sample: &str) -> Vec<SpanRow> {
    let root = format!("r{step}-{r}");
    let t0 = 1_700_000_000.0 + step as f64 * 10.0 + r as f64;
    let labels = Some(format!(r#"{{"sample":"{sample}","group":"g{r}"}}"#));
    let mut out = vec![SpanRow {
        labels: labels.clone(),
        sample_id: Some(sample.into()),
        ..span(&root, None, &root, "rollout", Some(step), t0)
    }];
    for t in 0..2 {
        let turn = format!("{root}-t{t}");
        out.push(SpanRow {
            labels: labels.clone(),
            ..span(
                &turn,
                Some(&root),
                &root,
                "turn",
                Some(step),
                t0 + 0.1 + t as f64 * 0.1,
            )
        });
        out.push(span(
            &format!("{turn}-c"),
            Some(&turn),
            &root,
            "tool_call",
            Some(step),
            t0 + 0.15 + t as f64 * 0.1,
        ));
    }
    out
}

fn ids(batch: &arrow::array::RecordBatch) -> Vec<String> {
    let a = batch.column_by_name("span_id").unwrap().as_string::<i32>();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

fn text(batch: &arrow::array::RecordBatch, col: &str, i: usize) -> Option<String> {
    let a = batch.column_by_name(col).unwrap().as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_string())
}

#[test]
fn spans_flow_through_the_writer_and_read_once_at_their_last_write() {
    let dir = tempdir("flow");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    let mut first: Vec<SpanRow> = (0..3)
        .flat_map(|s| rollout(s, 0, &format!("s{s}")))
        .collect();
    // the last rollout is still running when the flush comes: written open
    let open_root = first.iter().position(|r| r.span_id == "r2-0").unwrap();
    first[open_root].end_time = None;
    first[open_root].status = SpanStatus::Open;
    assert!(rec.push_spans(encode_spans(&first), first.len() as u64));
    assert!(rec.flush(Duration::from_secs(10)));
    assert_eq!(list_parts(&dir.join(SPANS_DIR)).unwrap().len(), 1);
    let live = read_spans(
        &dir,
        &SpanFilter {
            kinds: vec!["rollout".into()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ids(&live.batch), ["r0-0", "r1-0", "r2-0"]);
    assert_eq!(text(&live.batch, "status", 2).as_deref(), Some("open"));
    assert!(live.batch.column_by_name("end_time").unwrap().is_null(2));

    // it ends with an error after the flush: written again, in a later part
    let mut ended = first[open_root].clone();
    ended.end_time = Some(ended.start_time + 2.0);
    ended.status = SpanStatus::Error;
    ended.error = Some("tool timed out".into());
    assert!(rec.push_spans(encode_spans(&[ended]), 1));
    assert!(rec.flush(Duration::from_secs(10)));
    let read = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!(
        (read.total, read.matched),
        (15, 15),
        "15 distinct spans, the re-written one once"
    );
    let i = ids(&read.batch).iter().position(|id| id == "r2-0").unwrap();
    assert_eq!(text(&read.batch, "status", i).as_deref(), Some("error"));
    assert_eq!(
        text(&read.batch, "error", i).as_deref(),
        Some("tool timed out")
    );
    let dur = read
        .batch
        .column_by_name("duration_s")
        .unwrap()
        .as_primitive::<arrow::datatypes::Float64Type>();
    assert_eq!(dur.value(i), 2.0);
    let c = rec.counters();
    assert_eq!(
        (
            c.spans_logged,
            c.spans_written,
            c.spans_dropped,
            c.spans_bad,
            c.spans_pending
        ),
        (16, 16, 0, 0, 0)
    );

    let report = rec.close(true, Duration::from_secs(30)).unwrap();
    let compaction = report.compaction.unwrap();
    assert_eq!(
        (compaction.span_parts_merged, compaction.span_rows),
        (2, 15)
    );
    assert!(dir.join(SPANS_FILE).is_file());
    assert!(list_parts(&dir.join(SPANS_DIR)).unwrap().is_empty());
    let after = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!(after.total, 15);
    let mut before_ids = ids(&read.batch);
    let mut after_ids = ids(&after.batch);
    before_ids.sort();
    after_ids.sort();
    assert_eq!(before_ids, after_ids);
    assert_eq!(
        span_counts(&dir).unwrap(),
        vec![
            KindCount {
                kind: "rollout".into(),
                spans: 3,
                open: 0,
                error: 1
            },
            KindCount {
                kind: "tool_call".into(),
                spans: 6,
                open: 0,
                error: 0
            },
            KindCount {
                kind: "turn".into(),
                spans: 6,
                open: 0,
                error: 0
            },
        ]
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn filters_by_kind_step_tree_parent_label_and_status() {
    let dir = tempdir("filters");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    // enough rows for several row groups once compacted (65,536 rows each)
    let mut rows = Vec::new();
    for step in 0..14_000 {
        rows.extend(rollout(step, 0, &format!("s{step}")));
    }
    let n = rows.len();
    for chunk in rows.chunks(10_000) {
        assert!(rec.push_spans(encode_spans(chunk), chunk.len() as u64));
    }
    rec.close(true, Duration::from_secs(60)).unwrap();

    let step = read_spans(
        &dir,
        &SpanFilter {
            step_min: Some(7_000),
            step_max: Some(7_000),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        ids(&step.batch),
        [
            "r7000-0",
            "r7000-0-t0",
            "r7000-0-t0-c",
            "r7000-0-t1",
            "r7000-0-t1-c"
        ],
        "sorted by start time"
    );
    assert_eq!(
        step.total, n,
        "the total counts row groups the step filter skipped"
    );

    let tree = read_spans(
        &dir,
        &SpanFilter {
            root_ids: Some(HashSet::from(["r42-0".to_string()])),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(tree.matched, 5);
    let children = read_spans(
        &dir,
        &SpanFilter {
            parent_ids: Some(HashSet::from(["r42-0".to_string()])),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ids(&children.batch), ["r42-0-t0", "r42-0-t1"]);

    let label = read_spans(
        &dir,
        &SpanFilter {
            labels: vec![("sample".into(), "s13".into())],
            kinds: vec!["turn".into()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        ids(&label.batch),
        ["r13-0-t0", "r13-0-t1"],
        "label value matched exactly (not s130…)"
    );
    let none = read_spans(
        &dir,
        &SpanFilter {
            labels: vec![("group".into(), "s13".into())],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(none.matched, 0, "a value under another key does not match");

    let limited = read_spans(
        &dir,
        &SpanFilter {
            kinds: vec!["tool_call".into()],
            limit: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((limited.batch.num_rows(), limited.matched), (3, 28_000));
    let steps = limited
        .batch
        .column_by_name("step")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(
        steps.values().to_vec(),
        [0, 0, 1],
        "the earliest-starting ones"
    );
    let errors = read_spans(
        &dir,
        &SpanFilter {
            statuses: vec!["error".into()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(errors.matched, 0);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_resumed_run_rerecording_a_keyed_span_keeps_the_last_write() {
    let dir = tempdir("resume");
    let mut a = SpanRow {
        key: Some("sample-7".into()),
        ..span("k7", None, "k7", "rollout", Some(7), 1_700_000_000.0)
    };
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    rec.push_spans(
        encode_spans(&[
            a.clone(),
            span("u1", None, "u1", "epoch", None, 1_700_000_001.0),
        ]),
        2,
    );
    rec.close(true, Duration::from_secs(30)).unwrap();

    // the run resumes and records the same keyed rollout again, with a new reward
    a.attributes = Some(r#"{"reward":1}"#.into());
    a.start_time += 100.0;
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    rec.push_spans(encode_spans(&[a.clone()]), 1);
    assert!(rec.flush(Duration::from_secs(10)));
    let live = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!(live.total, 2, "spans.parquet and a part hold k7: read once");
    let k = ids(&live.batch).iter().position(|id| id == "k7").unwrap();
    assert_eq!(
        text(&live.batch, "attributes", k).as_deref(),
        Some(r#"{"reward":1}"#)
    );
    rec.close(true, Duration::from_secs(30)).unwrap();
    let compact = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!(compact.total, 2);
    assert_eq!(
        text(
            &compact.batch,
            "attributes",
            ids(&compact.batch)
                .iter()
                .position(|id| id == "k7")
                .unwrap()
        )
        .as_deref(),
        Some(r#"{"reward":1}"#)
    );
    // the epoch span had no step: kept, sorted after the stepped ones
    assert_eq!(
        span_counts(&dir)
            .unwrap()
            .iter()
            .map(|c| (c.kind.as_str(), c.spans))
            .collect::<Vec<_>>(),
        [("epoch", 1), ("rollout", 1)]
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crash_between_publishing_and_deleting_parts_never_doubles_a_span() {
    let dir = tempdir("crash");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    let rows = rollout(1, 0, "s1");
    rec.push_spans(encode_spans(&rows), rows.len() as u64);
    rec.close(false, Duration::from_secs(30)).unwrap();
    let parts = list_parts(&dir.join(SPANS_DIR)).unwrap();
    let saved: Vec<(PathBuf, Vec<u8>)> = parts
        .iter()
        .map(|(_, p)| (p.clone(), fs::read(p).unwrap()))
        .collect();
    compact_spans(&dir).unwrap();
    // put the absorbed parts back, as a crash before their deletion would leave them
    for (p, bytes) in &saved {
        fs::write(p, bytes).unwrap();
    }
    assert_eq!(read_spans(&dir, &SpanFilter::default()).unwrap().total, 5);
    let again = compact_spans(&dir).unwrap();
    assert_eq!(
        (again.parts_merged, again.leftovers_removed, again.rows),
        (0, 1, 5)
    );
    assert!(list_parts(&dir.join(SPANS_DIR)).unwrap().is_empty());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_spans_become_bad_record_events_and_are_counted() {
    let dir = tempdir("bad");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    let mut bad = span("b", None, "b", "turn", Some(1), f64::NAN);
    bad.start_time = f64::INFINITY;
    rec.push_spans(
        encode_spans(&[bad, span("g", None, "g", "turn", Some(1), 1.0)]),
        2,
    );
    rec.push_spans(b"not a batch".to_vec(), 3);
    let report = rec.close(true, Duration::from_secs(30)).unwrap();
    let c = report.counters;
    assert_eq!(
        (
            c.spans_logged,
            c.spans_written,
            c.spans_bad,
            c.spans_pending
        ),
        (5, 1, 4, 0)
    );
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains(r#""span_id":"b","field":"start_time""#),
        "{events}"
    );
    assert!(
        events.contains("3 spans dropped by the writer: not a span batch"),
        "{events}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_label_with_control_characters_matches_as_json_stringify_wrote_it() {
    let dir = tempdir("labels");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    // JSON.stringify writes \b, \f, \n, \t, \u0001 and quotes this way
    let labels = r#"{"sample":"a\bb\f\n\t\u0001\"q\"","group":"g"}"#;
    let s = SpanRow {
        labels: Some(labels.into()),
        ..span("x", None, "x", "turn", Some(1), 1.0)
    };
    rec.push_spans(
        encode_spans(&[s, span("y", None, "y", "turn", Some(1), 2.0)]),
        2,
    );
    for compact in [false, true] {
        if compact {
            rec.close(true, Duration::from_secs(30)).unwrap();
        } else {
            assert!(rec.flush(Duration::from_secs(10)));
        }
        let value = "a\u{8}b\u{c}\n\t\u{1}\"q\"".to_string();
        let hit = read_spans(
            &dir,
            &SpanFilter {
                labels: vec![("sample".into(), value)],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ids(&hit.batch), ["x"], "compacted: {compact}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn captured_trial_spans_read_beside_the_run_and_are_replaced_whole_on_recapture() {
    use rlprobe_core::spans::{capture_span_paths, write_capture_spans};
    let dir = tempdir("capture");
    // the run's own spans: one compacted tree and one live part on top
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    assert!(rec.push_spans(encode_spans(&rollout(1, 0, "s0")), 5));
    rec.close(true, Duration::from_secs(30)).unwrap();
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    assert!(rec.push_spans(encode_spans(&rollout(2, 0, "s1")), 5));
    rec.close(false, Duration::from_secs(30)).unwrap();
    assert_eq!(list_parts(&dir.join(SPANS_DIR)).unwrap().len(), 1);

    let mut trial = rollout(7, 3, "trial-sample");
    for r in trial.iter_mut() {
        r.span_id = format!("cap-{}", r.span_id);
        r.root_id = format!("cap-{}", r.root_id);
        r.parent_id = r.parent_id.as_ref().map(|p| format!("cap-{p}"));
    }
    assert_eq!(
        write_capture_spans(&dir, "trial-a.0123", &encode_spans(&trial)).unwrap(),
        5
    );
    // unfinished until its manifest is written: not read
    assert!(capture_span_paths(&dir).unwrap().is_empty());
    assert_eq!(read_spans(&dir, &SpanFilter::default()).unwrap().total, 10);
    fs::write(dir.join("trials/trial-a.0123/capture.json"), b"{}").unwrap();
    assert_eq!(
        capture_span_paths(&dir).unwrap(),
        vec![dir.join("trials/trial-a.0123/spans.parquet")]
    );
    let all = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!((all.total, all.matched), (15, 15));
    let at7 = read_spans(
        &dir,
        &SpanFilter {
            step_min: Some(7),
            step_max: Some(7),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(at7.batch.num_rows(), 5);
    assert!(ids(&at7.batch).iter().all(|id| id.starts_with("cap-")));

    // a recapture with fewer spans replaces the file: the dropped ones are gone, none doubled
    write_capture_spans(&dir, "trial-a.0123", &encode_spans(&trial[..3])).unwrap();
    let all = read_spans(&dir, &SpanFilter::default()).unwrap();
    assert_eq!((all.total, all.matched), (13, 13));
    let counts = span_counts(&dir).unwrap();
    assert_eq!(counts.iter().map(|c| c.spans).sum::<u64>(), 13);

    // compaction absorbs the run's parts only; the capture keeps its own file
    compact_spans(&dir).unwrap();
    assert_eq!(read_spans(&dir, &SpanFilter::default()).unwrap().total, 13);
    assert_eq!(
        rlprobe_core::parquet_io::row_count(&dir.join(SPANS_FILE)).unwrap(),
        10
    );
    // with only unique sources the step filter runs inside the read, and still counts all rows
    let at7 = read_spans(
        &dir,
        &SpanFilter {
            step_min: Some(7),
            step_max: Some(7),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((at7.batch.num_rows(), at7.total), (3, 13));

    for bad in ["", "../x", ".hidden", "a/b", "a b"] {
        let e = write_capture_spans(&dir, bad, &encode_spans(&trial)).unwrap_err();
        // the caller's mistake, not an io failure
        assert_eq!(e.code(), rlprobe_core::Code::Invalid, "{bad:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("invalid capture key {bad:?}")),
            "{e}"
        );
    }
    assert!(!dir.join("x").exists());
}
