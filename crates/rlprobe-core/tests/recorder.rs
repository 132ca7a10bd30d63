//! The recorder end to end, without Node: record, flush, crash-shaped leftovers, compaction.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rlprobe_core::compact::compact_steps;
use rlprobe_core::encoding::{encode_step, FieldValue};
use rlprobe_core::layout::{list_parts, part_name, STEPS_FILE, STEPS_PARTS_DIR};
use rlprobe_core::parquet_io::write_table;
use rlprobe_core::props::Codec;
use rlprobe_core::schema::Registry;
use rlprobe_core::{read_steps, Recorder, RecorderOptions, Table};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rlprobe-it-{tag}-{}", std::process::id()));
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

/// Encodes through the recorder's own registry, as the JS encoder does.
fn push(rec: &Recorder, step: i64, loss: f64) -> bool {
    let (loss_id, _) = rec.register("loss").unwrap();
    let (comp_id, _) = rec.register("reward_component.fmt").unwrap();
    let (kl_id, _) = rec.register("kl_positional").unwrap();
    let slots = [
        step as f64,
        f64::NAN,
        loss_id as f64,
        loss,
        comp_id as f64,
        0.5,
        kl_id as f64,
        2.0,
        0.1,
        0.2,
    ];
    rec.push_step(&slots)
}

fn steps_of(t: &Table) -> Vec<i64> {
    let c = t.column("step").unwrap();
    (0..t.rows).map(|r| c.scalar(r).unwrap() as i64).collect()
}

#[test]
fn records_flushes_and_compacts() {
    let dir = tempdir("basic");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    for s in 0..175 {
        assert!(push(&rec, s, s as f64 * 0.5));
    }
    assert!(rec.flush(Duration::from_secs(10)));
    let c = rec.counters();
    assert_eq!(
        (c.logged, c.written, c.dropped, c.bad, c.pending),
        (175, 175, 0, 0, 0)
    );
    assert!(
        !list_parts(&dir.join(STEPS_PARTS_DIR)).unwrap().is_empty(),
        "published by flush_steps"
    );

    // readable while live
    let live = read_steps(&dir, None).unwrap();
    assert_eq!(steps_of(&live), (0..175).collect::<Vec<_>>());

    let report = rec.close(true, Duration::from_secs(30)).unwrap();
    let compaction = report.compaction.unwrap();
    assert_eq!(compaction.rows, 175);
    assert!(dir.join(STEPS_FILE).exists());
    assert!(
        !dir.join(STEPS_PARTS_DIR).exists(),
        "parts removed after compaction"
    );
    let t = read_steps(&dir, None).unwrap();
    assert_eq!(steps_of(&t), (0..175).collect::<Vec<_>>());
    assert_eq!(t.column("loss").unwrap().scalar(10), Some(5.0));
    assert_eq!(
        t.column("reward_component.fmt").unwrap().scalar(3),
        Some(0.5)
    );
    assert_eq!(
        t.column("kl_positional").unwrap().list(7),
        Some(&[0.1, 0.2][..])
    );
    assert!(t.column("timestamp").unwrap().scalar(0).unwrap() > 1.6e9);
    assert_eq!(t.column("rank").unwrap().scalar(0), Some(0.0));

    // idempotent
    let again = compact_steps(&dir).unwrap();
    assert_eq!((again.parts_merged, again.rows), (0, 175));
}

#[test]
fn full_queue_drops_and_reports() {
    let dir = tempdir("drops");
    let mut o = opts(&dir);
    o.queue_capacity = 16;
    o.tick = Duration::from_secs(3600); // the writer only wakes when told to
    o.flush_steps = 1_000_000;
    let mut rec = Recorder::open(o).unwrap();
    std::thread::sleep(Duration::from_millis(200)); // let the writer park
    let mut accepted = 0;
    for s in 0..1000 {
        if push(&rec, s, 1.0) {
            accepted += 1;
        }
    }
    assert!(accepted < 1000, "a 16-record queue must have dropped");
    let report = rec.close(false, Duration::from_secs(30)).unwrap();
    let c = report.counters;
    assert_eq!(c.logged, 1000);
    assert_eq!(c.written + c.dropped, c.logged, "{c:?}");
    assert_eq!(c.written, accepted);
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let drop_line = events
        .lines()
        .find(|l| l.contains("\"recorder_drops\""))
        .expect("drop event");
    assert!(
        drop_line.contains(&format!("\"total\":{}", c.dropped)),
        "{drop_line}"
    );
}

#[test]
fn bad_records_from_the_encoder_are_counted_and_logged() {
    let dir = tempdir("bad");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    push(&rec, 0, 1.0);
    rec.report_bad(r#"{"timestamp":1,"kind":"bad_record","step":1,"rank":0,"message":"loss: not a number","data":{}}"#.into());
    // structurally corrupt record that slipped past an encoder: the writer refuses it
    rec.push_step(&[2.0, f64::NAN, 999.0, 1.0]);
    let report = rec.close(false, Duration::from_secs(30)).unwrap();
    let c = report.counters;
    assert_eq!((c.logged, c.written, c.bad), (3, 1, 2));
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert_eq!(
        events
            .lines()
            .filter(|l| l.contains("\"bad_record\""))
            .count(),
        2
    );
}

#[test]
fn events_are_written_promptly_and_in_order() {
    let dir = tempdir("events");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    rec.log_event(r#"{"kind":"a"}"#.into());
    rec.log_event(r#"{"kind":"b"}"#.into());
    rec.write_event_now(r#"{"kind":"crash"}"#).unwrap();
    let text = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert_eq!(
        text,
        "{\"kind\":\"a\"}\n{\"kind\":\"b\"}\n{\"kind\":\"crash\"}\n"
    );
    rec.close(false, Duration::from_secs(10)).unwrap();
}

fn part_table(steps: std::ops::Range<i64>, extra: &str) -> Table {
    let mut reg = Registry::default();
    let mut t = rlprobe_core::encoding::StepBatch::new(0);
    let mut slots = Vec::new();
    for s in steps {
        encode_step(
            &mut reg,
            s,
            Some(1.0),
            &[
                FieldValue::Num("loss", s as f64),
                FieldValue::Num(extra, 1.0),
            ],
            &mut slots,
        )
        .unwrap();
        t.append(&slots, &reg).unwrap();
    }
    t.take()
}

fn write_part(dir: &Path, index: u64, table: &Table) {
    let parts = dir.join(STEPS_PARTS_DIR);
    fs::create_dir_all(&parts).unwrap();
    let path = parts.join(part_name(index));
    write_table(
        fs::File::create(&path).unwrap(),
        &path,
        table,
        Codec::default(),
        Vec::new(),
    )
    .unwrap();
}

#[test]
fn crash_between_publish_and_part_deletion_never_double_counts() {
    let dir = tempdir("mix");
    write_part(&dir, 0, &part_table(0..10, "a"));
    write_part(&dir, 1, &part_table(10..20, "b"));
    // simulate: compaction published steps.parquet, then the process died before unlinking
    let saved: Vec<(PathBuf, Vec<u8>)> = list_parts(&dir.join(STEPS_PARTS_DIR))
        .unwrap()
        .into_iter()
        .map(|(_, p)| (p.clone(), fs::read(&p).unwrap()))
        .collect();
    compact_steps(&dir).unwrap();
    for (p, bytes) in &saved {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
    // plus a new part from a resumed writer, and a stray temporary
    write_part(&dir, 2, &part_table(20..25, "c"));
    fs::write(dir.join(".steps.tmp-999-0"), b"garbage").unwrap();

    let t = read_steps(&dir, None).unwrap();
    assert_eq!(
        steps_of(&t),
        (0..25).collect::<Vec<_>>(),
        "each step exactly once"
    );
    assert_eq!(t.column("extra.a").unwrap().scalar(0), Some(1.0));
    assert_eq!(t.column("extra.a").unwrap().scalar(12), None);
    assert_eq!(t.column("extra.c").unwrap().scalar(22), Some(1.0));

    let r = compact_steps(&dir).unwrap();
    assert_eq!((r.parts_merged, r.leftovers_removed, r.rows), (1, 2, 25));
    assert!(!dir.join(".steps.tmp-999-0").exists());
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..25).collect::<Vec<_>>()
    );
}

#[test]
fn resumed_writer_does_not_reuse_absorbed_part_names() {
    let dir = tempdir("resume");
    write_part(&dir, 0, &part_table(0..5, "a"));
    write_part(&dir, 1, &part_table(5..10, "a"));
    compact_steps(&dir).unwrap();
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    push(&rec, 10, 0.0);
    assert!(rec.flush(Duration::from_secs(10)));
    // steps.parquet became the first part (resume.rs), the new rows the next one
    assert!(!dir.join("steps.parquet").exists());
    let parts: Vec<u64> = list_parts(&dir.join(STEPS_PARTS_DIR))
        .unwrap()
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        parts,
        [2, 3],
        "must not collide with absorbed part names, got {parts:?}"
    );
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..11).collect::<Vec<_>>()
    );
    rec.close(true, Duration::from_secs(30)).unwrap();
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..11).collect::<Vec<_>>()
    );
}

#[test]
fn stray_part_temporaries_are_removed_on_open() {
    let dir = tempdir("stray");
    fs::create_dir_all(dir.join(STEPS_PARTS_DIR)).unwrap();
    let stray = dir.join(STEPS_PARTS_DIR).join(".part-00003.tmp-1-1");
    fs::write(&stray, b"half a file").unwrap();
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    assert!(!stray.exists());
    rec.close(false, Duration::from_secs(10)).unwrap();
}

#[test]
fn flush_interval_publishes_without_reaching_the_step_count() {
    let dir = tempdir("interval");
    let mut o = opts(&dir);
    o.flush_steps = 1000;
    o.flush_interval = Duration::from_millis(100);
    let mut rec = Recorder::open(o).unwrap();
    push(&rec, 0, 1.0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rec.counters().written == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rec.counters().written, 1);
    rec.close(false, Duration::from_secs(10)).unwrap();
}

#[test]
fn two_interrupted_compactions_never_double_count() {
    let dir = tempdir("twice");
    let save_parts = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        list_parts(&dir.join(STEPS_PARTS_DIR))
            .unwrap()
            .into_iter()
            .map(|(_, p)| (p.clone(), fs::read(&p).unwrap()))
            .collect()
    };
    let restore = |saved: &[(PathBuf, Vec<u8>)]| {
        for (p, bytes) in saved {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, bytes).unwrap();
        }
    };
    write_part(&dir, 0, &part_table(0..10, "a"));
    let first = save_parts(&dir);
    compact_steps(&dir).unwrap();
    restore(&first); // died before deleting part 0
    write_part(&dir, 1, &part_table(10..20, "a"));
    let second = save_parts(&dir);
    compact_steps(&dir).unwrap();
    restore(&second); // died again before deleting parts 0 and 1
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..20).collect::<Vec<_>>()
    );
    compact_steps(&dir).unwrap();
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..20).collect::<Vec<_>>()
    );
}

fn columns_of(path: &Path) -> Vec<String> {
    let f = rlprobe_core::parquet_io::ParquetFile::open(path).unwrap();
    assert_eq!(f.rows(), 0, "{} holds no rows", path.display());
    f.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

#[test]
fn steps_columns_file_holds_every_column_of_the_parts_and_goes_at_compaction() {
    let dir = tempdir("columns-file");
    let head = dir.join(STEPS_PARTS_DIR).join("columns.parquet");
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    let (loss, _) = rec.register("loss").unwrap();
    rec.push_step(&[0.0, f64::NAN, loss as f64, 1.0]);
    assert!(rec.flush(Duration::from_secs(10)));
    assert_eq!(columns_of(&head), ["step", "timestamp", "rank", "loss"]);
    // a metric first logged mid-run, in a part of its own
    let (eval, _) = rec.register("extra.eval").unwrap();
    rec.push_step(&[1.0, f64::NAN, eval as f64, 0.5]);
    assert!(rec.flush(Duration::from_secs(10)));
    assert_eq!(
        columns_of(&head),
        ["step", "timestamp", "rank", "loss", "extra.eval"]
    );
    let parts = list_parts(&dir.join(STEPS_PARTS_DIR)).unwrap();
    assert_eq!(parts.len(), 2, "the file is not a part");
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        [0, 1],
        "readers skip it"
    );
    rec.close(true, Duration::from_secs(30)).unwrap();
    assert!(
        !dir.join(STEPS_PARTS_DIR).exists(),
        "steps/ goes with its parts and columns file"
    );
}

#[test]
fn a_resumed_session_that_logs_no_step_leaves_steps_parquet_as_it_was() {
    let dir = tempdir("resume-idle");
    write_part(&dir, 0, &part_table(0..5, "a"));
    compact_steps(&dir).unwrap();
    let inode =
        || std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir.join(STEPS_FILE)).unwrap());
    let before = inode();
    let mut rec = Recorder::open(opts(&dir)).unwrap();
    assert!(rec.flush(Duration::from_secs(10)));
    rec.close(true, Duration::from_secs(30)).unwrap();
    assert_eq!(inode(), before, "not demoted, not rewritten");
    assert_eq!(
        steps_of(&read_steps(&dir, None).unwrap()),
        (0..5).collect::<Vec<_>>()
    );
}

#[test]
fn a_killed_writers_columns_temporary_is_removed_on_open_and_a_columns_file_with_rows_is_foreign() {
    let dir = tempdir("columns-stray");
    let steps = dir.join(STEPS_PARTS_DIR);
    fs::create_dir_all(&steps).unwrap();
    fs::write(steps.join(".columns.tmp-999-0"), b"half").unwrap();
    let rec = Recorder::open(opts(&dir)).unwrap();
    assert!(!steps.join(".columns.tmp-999-0").exists());
    drop(rec);
    // not the recorder's: a table with rows under the columns file's name
    write_part(&dir, 7, &part_table(0..3, "a"));
    fs::rename(steps.join(part_name(7)), steps.join("columns.parquet")).unwrap();
    let sources = rlprobe_core::steps_files::open_step_sources(&dir).unwrap();
    assert_eq!(sources.foreign.len(), 1);
    assert!(
        sources.foreign[0].reason.contains("holds 3 rows"),
        "{}",
        sources.foreign[0].reason
    );
}
