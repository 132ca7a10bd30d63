//! The recorder's two halves: the producer the training thread calls (`Recorder`) and
//! the writer thread that owns all IO.
//!
//! The producer only copies a record into the lock-free ring (or a call into a byte queue)
//! and bumps counters. The writer thread wakes on a short timer, when the producer has
//! queued a flush's worth of records, or when an event arrives. Each pass (`cycle`) drains
//! every stream (stream.rs: steps, samples, spans) in bounded chunks, writing queued events
//! between chunks so no event waits behind a backlog, and publishes one part per stream
//! when any of them is due: `flush_steps` rows, a size bound, `flush_interval`, a flush or
//! close. A backlog goes out as one larger part, so a writer that fell behind catches up.
//! Invariant once flushed: `written + dropped + bad == logged`, per stream.

mod health;
mod lock;
mod stream;

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::atomic::{publish_in_stream_dir, remove_stray_temps, write_file_atomic};
use crate::columns_file::ColumnsHead;
use crate::compact::{compact_steps, next_part_index, CompactReport};
use crate::encoding::StepBatch;
use crate::error::{Error, IoContext, Result};
use crate::events::{event_line, EventLog};
use crate::layout::{
    part_name, COLUMNS_FILE, EVENTS_FILE, MANIFEST_FILE, SPANS_DIR, STEPS_FILE, STEPS_PARTS_DIR,
};
use crate::parquet_io::prewarm;
use crate::resume::demote_compacted_steps;
use crate::ring::{self, PushError, RingMemory};
use crate::samples::compact_samples;
use crate::samples::files::{open_sample_sources, samples_dir};
use crate::schema::{ColumnKind, Registry};
use crate::spans::compact::{compact_spans, next_span_part};

use health::Health;
pub use health::Lost;
pub use lock::lock_run_for_writing;
use lock::WriterLock;
use stream::{Kind, Part, RowStream, SampleStream, SpanStream, StepStream};

#[derive(Debug, Clone)]
pub struct RecorderOptions {
    /// Where this recorder writes (already the `rank-NNN/` sub-directory when applicable).
    pub run_dir: PathBuf,
    pub rank: i64,
    pub flush_interval: Duration,
    pub flush_steps: usize,
    /// Records the queue holds before it drops.
    pub queue_capacity: usize,
    /// Events waiting for the writer before further ones are dropped.
    pub event_queue_capacity: usize,
    pub events_fsync_every: Duration,
    /// How often an idle writer thread looks at the queue and refreshes the published
    /// clock records are stamped with.
    pub tick: Duration,
    /// Bytes of encoded samples the queue holds before further `logSamples` calls drop.
    pub sample_queue_bytes: usize,
    /// A sample part is published early once its buffered rows reach about this size, so
    /// long completions cannot pile up between two flushes.
    pub sample_part_bytes: usize,
    /// Bytes of encoded spans the queue holds before further span batches drop.
    pub span_queue_bytes: usize,
    /// Sees every step part right after it is published, on the writer thread (the live
    /// doctor's feed). The writer knows nothing of what it does with them.
    pub step_tap: Option<StepTap>,
}

/// A callback that sees each published step table. It runs on the writer thread: it must
/// hand the rows off and return, never do the work there.
#[derive(Clone)]
pub struct StepTap(pub Arc<dyn Fn(&crate::table::Table) + Send + Sync>);

impl std::fmt::Debug for StepTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepTap")
    }
}

impl RecorderOptions {
    pub fn new(run_dir: impl Into<PathBuf>) -> Self {
        RecorderOptions {
            run_dir: run_dir.into(),
            rank: 0,
            flush_interval: Duration::from_secs(5),
            flush_steps: 200,
            queue_capacity: 8192,
            event_queue_capacity: 65_536,
            events_fsync_every: Duration::from_secs(1),
            // also the resolution of the clock published for timestamps (ring.rs NOW)
            tick: Duration::from_millis(10),
            sample_queue_bytes: 64 << 20,
            sample_part_bytes: 16 << 20,
            span_queue_bytes: 64 << 20,
            step_tap: None,
        }
    }
}

/// Queued span (or sample) bytes past which a push wakes the writer instead of waiting
/// for its tick.
const QUEUE_WAKE_BYTES: usize = 1 << 20;

/// Slots reserved per queued record: the 40-field record of the benchmark needs ~82.
const SLOTS_PER_RECORD: usize = 96;

/// The ring's least size: the JS fast path reserves 512 slots (ts/recorder/step-logger.ts
/// FAST_RECORD_SLOTS) before it encodes, plus the record header.
const MIN_RING_SLOTS: usize = 1024;

/// Rows a stream drains before the writer looks at events again: bounds how long an
/// event waits behind a backlog (a chunk decodes in well under a millisecond).
const DRAIN_CHUNK: usize = 2048;

/// Rows one pass gathers at most before it publishes (when due) and looks at flush and
/// close requests again; a backlog up to this size goes out as one part.
const MAX_PASS_ROWS: usize = 65_536;

/// Written by the training thread only, on a cache line of its own. (`logged` and
/// `dropped` of steps live in the ring's header, where the JS producer counts them.)
#[derive(Default)]
#[repr(align(128))]
struct ProducerCounters {
    bad_reported: AtomicU64,
    samples_logged: AtomicU64,
    samples_dropped: AtomicU64,
    spans_logged: AtomicU64,
    spans_dropped: AtomicU64,
}

/// What became of the rows of one stream once the writer had them.
#[derive(Default)]
struct Tally {
    /// In published part files.
    written: AtomicU64,
    /// Malformed (a `bad_record` event each).
    bad: AtomicU64,
    /// Lost to a failed write, a caught panic, or the run directory's removal.
    lost: AtomicU64,
}

/// Written by the writer thread only (events_written: under the event-log lock).
#[derive(Default)]
#[repr(align(128))]
struct WriterCounters {
    /// Indexed by `Kind`.
    tally: [Tally; 3],
    events_written: AtomicU64,
    /// Event lines that could not be written (a full disk): counted as dropped events.
    events_lost: AtomicU64,
    /// Failed writes of part files and events, since the recorder opened.
    write_failures: AtomicU64,
}

#[derive(Default)]
struct Counters {
    producer: ProducerCounters,
    writer: WriterCounters,
    /// Bumped by whoever meets a full event queue.
    events_dropped: AtomicU64,
}

#[inline]
fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Relaxed) + by, Release);
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    pub logged: u64,
    /// Rows in published part files.
    pub written: u64,
    /// Refused by a full queue, or lost to a writer failure.
    pub dropped: u64,
    /// Malformed records (refused by the encoder, or by the writer's structural check).
    pub bad: u64,
    /// Accepted but not yet in a published part file.
    pub pending: u64,
    pub events_written: u64,
    /// Refused by a full event queue, or lost to a failed write.
    pub events_dropped: u64,
    /// Samples handed to the writer (after selection).
    pub samples_logged: u64,
    /// Samples in published part files.
    pub samples_written: u64,
    /// Refused by a full sample queue, or lost to a writer failure.
    pub samples_dropped: u64,
    /// Malformed samples (a `bad_record` event each).
    pub samples_bad: u64,
    pub samples_pending: u64,
    /// Span writes handed to the writer (a span caught open by a flush and ended later is
    /// written twice; readers keep the last write).
    pub spans_logged: u64,
    /// Span writes in published part files.
    pub spans_written: u64,
    /// Refused by a full span queue, or lost to a writer failure.
    pub spans_dropped: u64,
    /// Malformed spans (a `bad_record` event each).
    pub spans_bad: u64,
    pub spans_pending: u64,
    /// Failed writes (part files, event lines, the run directory's re-creation).
    pub write_failures: u64,
}

#[derive(Debug, Clone, Default)]
pub struct CloseReport {
    pub counters: CountersSnapshot,
    pub compaction: Option<CompactReport>,
    /// The last error the writer met (a failed part write, a caught panic…), if any.
    pub error: Option<String>,
}

#[derive(Default)]
struct Control {
    flush_requested: u64,
    flush_done: u64,
    /// Some(compact) once close was asked for.
    stop: Option<bool>,
    finished: Option<CloseReport>,
    last_error: Option<String>,
}

struct Shared {
    rank: i64,
    run_dir: PathBuf,
    ring: Arc<RingMemory>,
    event_queue_capacity: usize,
    counters: Counters,
    pending_events: Mutex<VecDeque<String>>,
    event_log: Mutex<EventLog>,
    registry: RwLock<Registry>,
    control: Mutex<Control>,
    changed: Condvar,
    /// `recorder_drops` already written, per `Kind`.
    reported_drops: [AtomicU64; 3],
    samples: Mutex<ByteQueue>,
    sample_queue_bytes: usize,
    spans: Mutex<ByteQueue>,
    span_queue_bytes: usize,
    health: Mutex<Health>,
}

/// Encoded calls (`logSamples` calls, span batches) waiting for the writer, bounded by bytes.
#[derive(Default)]
struct ByteQueue {
    batches: VecDeque<(Vec<u8>, u64)>,
    bytes: usize,
}

impl ByteQueue {
    /// Queues `encoded` unless it would pass `limit` (one call larger than the whole queue
    /// still goes in when the queue is empty).
    fn offer(&mut self, encoded: Vec<u8>, count: u64, limit: usize) -> bool {
        if self.bytes > 0 && self.bytes + encoded.len() > limit {
            return false;
        }
        self.bytes += encoded.len();
        self.batches.push_back((encoded, count));
        true
    }

    fn pop(&mut self) -> Option<(Vec<u8>, u64)> {
        let next = self.batches.pop_front();
        if let Some((bytes, _)) = &next {
            self.bytes -= bytes.len();
        }
        next
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks must not wedge the recorder.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn tally(&self, kind: Kind) -> &Tally {
        &self.counters.writer.tally[kind.index()]
    }

    /// Grows with every loss: a failed write, rows or events lost to one, to a caught
    /// panic or to the run directory's removal. A flush that saw it grow says so.
    fn loss_mark(&self) -> u64 {
        let w = &self.counters.writer;
        w.tally.iter().map(|t| t.lost.load(Acquire)).sum::<u64>()
            + w.events_lost.load(Acquire)
            + w.write_failures.load(Acquire)
    }

    fn snapshot(&self) -> CountersSnapshot {
        let c = &self.counters;
        let [steps, samples, spans] = &c.writer.tally;
        let logged = self.ring.logged();
        let written = steps.written.load(Acquire);
        let dropped = self.ring.dropped() + steps.lost.load(Acquire);
        let bad = c.producer.bad_reported.load(Acquire) + steps.bad.load(Acquire);
        let samples_logged = c.producer.samples_logged.load(Acquire);
        let samples_written = samples.written.load(Acquire);
        let samples_dropped = c.producer.samples_dropped.load(Acquire) + samples.lost.load(Acquire);
        let samples_bad = samples.bad.load(Acquire);
        let spans_logged = c.producer.spans_logged.load(Acquire);
        let spans_written = spans.written.load(Acquire);
        let spans_dropped = c.producer.spans_dropped.load(Acquire) + spans.lost.load(Acquire);
        let spans_bad = spans.bad.load(Acquire);
        CountersSnapshot {
            logged,
            written,
            dropped,
            bad,
            pending: logged.saturating_sub(written + dropped + bad),
            events_written: c.writer.events_written.load(Acquire),
            events_dropped: c.events_dropped.load(Acquire) + c.writer.events_lost.load(Acquire),
            samples_logged,
            samples_written,
            samples_dropped,
            samples_bad,
            samples_pending: samples_logged
                .saturating_sub(samples_written + samples_dropped + samples_bad),
            spans_logged,
            spans_written,
            spans_dropped,
            spans_bad,
            spans_pending: spans_logged.saturating_sub(spans_written + spans_dropped + spans_bad),
            write_failures: c.writer.write_failures.load(Acquire),
        }
    }

    /// Writes queued events, then `extra` if given, under the log lock (keeps order). Lines
    /// that cannot be written (a full disk) are counted as lost events and reported.
    fn write_events(&self, extra: Option<&str>) -> Result<()> {
        let mut log = lock(&self.event_log);
        let queued: Vec<String> = lock(&self.pending_events).drain(..).collect();
        let total = queued.len() + usize::from(extra.is_some());
        for (i, line) in queued.iter().map(String::as_str).chain(extra).enumerate() {
            if let Err(e) = log.append(line) {
                drop(log);
                let lost = (total - i) as u64;
                // fetch_add: the JS thread writes crash-class events itself (write_event_now)
                self.counters.writer.events_lost.fetch_add(lost, AcqRel);
                self.write_failed(
                    format!("{lost} events lost: {e}"),
                    Lost {
                        events: lost,
                        ..Lost::default()
                    },
                );
                return Err(e);
            }
            self.counters.writer.events_written.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// A write failed: counted, remembered as the last error, printed to stderr
    /// (rate-limited), and written to events.jsonl once writing works again.
    fn write_failed(&self, message: String, lost: Lost) {
        self.counters.writer.write_failures.fetch_add(1, AcqRel);
        let line = lock(&self.health).failed(&self.run_dir.display().to_string(), &message, lost);
        if let Some(line) = line {
            eprintln!("{line}");
        }
        lock(&self.control).last_error = Some(message);
    }

    /// After failed writes: once an event line goes through again, writes the outage
    /// down (a `recorder_error`, and `recorder_drops` per stream that lost rows).
    fn report_recovery(&self) {
        let Some(outage) = lock(&self.health).take_outage() else {
            return;
        };
        let (message, data) = outage.describe();
        let mut lines = vec![event_line(
            "recorder_error",
            None,
            self.rank,
            &message,
            data,
        )];
        for (kind, n) in [
            (Kind::Steps, outage.lost.steps),
            (Kind::Samples, outage.lost.samples),
            (Kind::Spans, outage.lost.spans),
        ] {
            if n > 0 {
                let data = kind.with_record(json!({ "count": n, "reason": "write_failed" }));
                lines.push(event_line(
                    "recorder_drops",
                    None,
                    self.rank,
                    &format!("{n} {} lost to failed writes", kind.noun()),
                    data,
                ));
            }
        }
        let mut log = lock(&self.event_log);
        for (i, line) in lines.iter().enumerate() {
            if log.append(line).is_err() {
                // still failing: keep it for the next try (a partial report is not repeated)
                if i == 0 {
                    drop(log);
                    lock(&self.health).restore(outage);
                }
                return;
            }
            self.counters.writer.events_written.fetch_add(1, Relaxed);
        }
    }

    /// An error that is no write failure (a caught panic, a failed compaction): an event,
    /// the last error, and stderr.
    fn record_error(&self, message: String) {
        let line = event_line("recorder_error", None, self.rank, &message, json!({}));
        let _ = self.write_events(Some(&line));
        if let Some(text) = lock(&self.health).line(format!(
            "rlprobe: recording {}: {message}",
            self.run_dir.display()
        )) {
            eprintln!("{text}");
        }
        lock(&self.control).last_error = Some(message);
    }
}

/// The producer half, owned by the training thread.
pub struct Recorder {
    producer: ring::Producer,
    shared: Arc<Shared>,
    writer: Thread,
    join: Option<JoinHandle<()>>,
    wake_every: u64,
    since_wake: Cell<u64>,
    run_dir: PathBuf,
    /// `Shared::loss_mark` when the last flush returned: a flush reports losses since.
    losses_at_last_flush: Cell<u64>,
}

impl Recorder {
    /// Opens (or resumes) a recording in `opts.run_dir` and starts the writer thread.
    pub fn open(opts: RecorderOptions) -> Result<Recorder> {
        std::fs::create_dir_all(&opts.run_dir).at("creating the run directory", &opts.run_dir)?;
        // first: a second writer must be refused before it touches anything
        let (writer_lock, unguarded) = match lock_run_for_writing(&opts.run_dir) {
            Ok(lock) => (Some(lock), None),
            Err(e) if lock::locks_unsupported(&e) => (
                None,
                Some(format!(
                    "the filesystem of {} has no advisory locks ({e}): recording without the one-writer guard, so a second recorder on this directory would not be refused",
                    opts.run_dir.display()
                )),
            ),
            Err(e) => return Err(e),
        };
        // part directories are created by their first part (a run killed before its
        // manifest is written holds no step directory)
        remove_stray_temps(&opts.run_dir.join(STEPS_PARTS_DIR), ".part-")?;
        remove_stray_temps(&samples_dir(&opts.run_dir), ".part-")?;
        remove_stray_temps(&opts.run_dir.join(SPANS_DIR), ".part-")?;
        remove_stray_temps(&opts.run_dir.join(STEPS_PARTS_DIR), ".columns")?;
        remove_stray_temps(&samples_dir(&opts.run_dir), ".columns")?;
        let next_parts = [
            next_part_index(&opts.run_dir)?,
            open_sample_sources(&opts.run_dir)?.next_part,
            next_span_part(&opts.run_dir)?,
        ];
        let event_log = EventLog::open(&opts.run_dir.join(EVENTS_FILE))?;
        let capacity = opts.queue_capacity.max(1);
        // room for at least one record of the JS fast path's reservation, however small
        // the queue (a queue of a few records must still take them)
        let slots = capacity
            .saturating_mul(SLOTS_PER_RECORD)
            .max(MIN_RING_SLOTS);
        let (producer, consumer) = ring::channel(capacity, slots);
        producer.memory().set_now(crate::events::now_unix_seconds());
        let shared = Arc::new(Shared {
            rank: opts.rank,
            run_dir: opts.run_dir.clone(),
            ring: producer.memory().clone(),
            event_queue_capacity: opts.event_queue_capacity.max(1),
            counters: Counters::default(),
            pending_events: Mutex::new(VecDeque::new()),
            event_log: Mutex::new(event_log),
            registry: RwLock::new(Registry::default()),
            control: Mutex::new(Control::default()),
            changed: Condvar::new(),
            reported_drops: Default::default(),
            samples: Mutex::new(ByteQueue::default()),
            sample_queue_bytes: opts.sample_queue_bytes.max(1),
            spans: Mutex::new(ByteQueue::default()),
            span_queue_bytes: opts.span_queue_bytes.max(1),
            health: Mutex::new(Health::default()),
        });
        if let Some(message) = unguarded {
            eprintln!("rlprobe: {message}");
            lock(&shared.pending_events).push_back(event_line(
                "recorder_error",
                None,
                opts.rank,
                &message,
                json!({}),
            ));
        }
        let steps = StepStream {
            consumer,
            registry: Registry::default(),
            batch: StepBatch::new(opts.rank),
            record: Vec::with_capacity(256),
            in_flight: 0,
        };
        let state = WriterThread {
            streams: [
                Box::new(steps),
                Box::<SampleStream>::default(),
                Box::<SpanStream>::default(),
            ],
            next_parts,
            heads: Default::default(),
            steps_resumed: false,
            shared: shared.clone(),
            last_publish: Instant::now(),
            run_dir: RunDirWatch::new(&opts.run_dir, writer_lock),
            opts: opts.clone(),
        };
        let join = thread::Builder::new()
            .name("rlprobe-writer".into())
            .spawn(move || state.run())
            .at("starting the writer thread of", &opts.run_dir)?;
        let writer = join.thread().clone();
        let wake_every = (opts.flush_steps as u64).min(capacity as u64 / 4).max(1);
        Ok(Recorder {
            producer,
            shared,
            writer,
            join: Some(join),
            wake_every,
            since_wake: Cell::new(0),
            run_dir: opts.run_dir,
            losses_at_last_flush: Cell::new(0),
        })
    }

    /// The queue's memory, for a producer that writes it directly (the JS encoder).
    pub fn ring_memory(&self) -> &Arc<RingMemory> {
        self.producer.memory()
    }

    /// Wakes the writer thread (a direct producer calls this every `flush_steps` records).
    pub fn wake(&self) {
        self.writer.unpark();
    }

    /// Records per wake-up a direct producer should use.
    pub fn wake_every(&self) -> u64 {
        self.wake_every
    }

    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Column id and kind for a record key (rare: once per new name).
    pub fn register(&self, key: &str) -> Result<(u32, ColumnKind)> {
        self.shared
            .registry
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register(key)
    }

    /// Registers every key of one accepted record at once, or none of them (a record past
    /// the column budget must not use the budget up for the records after it).
    pub fn register_all(&self, keys: &[String]) -> Result<Vec<(u32, ColumnKind)>> {
        self.shared
            .registry
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register_all(keys)
    }

    /// The hot path: enqueue one encoded step record. Never blocks; false when dropped.
    #[inline]
    pub fn push_step(&self, slots: &[f64]) -> bool {
        self.producer.count_logged();
        let result = if slots.len() >= 2 && slots[1].is_nan() {
            // stamp with the clock the writer publishes each tick (log time, to a tick)
            self.producer
                .push_with_header(&[slots[0], self.producer.memory().now()], &slots[2..])
        } else {
            self.producer.push(slots)
        };
        match result {
            Ok(()) => {
                let n = self.since_wake.get() + 1;
                if n >= self.wake_every {
                    self.since_wake.set(0);
                    self.writer.unpark();
                } else {
                    self.since_wake.set(n);
                }
                true
            }
            // counted as dropped by the ring
            Err(PushError::Full) | Err(PushError::TooLarge) => false,
        }
    }

    /// Enqueues one encoded `logSamples` call holding `count` samples. Never blocks;
    /// false (the samples counted as dropped) when the sample queue is full. The writer
    /// drains them at its next tick; a backlog past a quarter of the queue (at most
    /// `QUEUE_WAKE_BYTES`) wakes it early. Waking it every call cost the caller's thread
    /// more than the rest of the push.
    pub fn push_samples(&self, encoded: Vec<u8>, count: u64) -> bool {
        bump(&self.shared.counters.producer.samples_logged, count);
        let (queued, backlog) = {
            let mut q = lock(&self.shared.samples);
            (
                q.offer(encoded, count, self.shared.sample_queue_bytes),
                q.bytes,
            )
        };
        if !queued {
            bump(&self.shared.counters.producer.samples_dropped, count);
            // a full queue: the writer is behind, make sure it is draining
            self.writer.unpark();
            return false;
        }
        if backlog >= QUEUE_WAKE_BYTES.min(self.shared.sample_queue_bytes / 4) {
            self.writer.unpark();
        }
        true
    }

    /// Enqueues a batch of `count` encoded spans (spans/wire.rs). Never blocks; false (the
    /// spans counted as dropped) when the span queue is full. The writer publishes them
    /// on the steps' cadence; a backlog past `QUEUE_WAKE_BYTES` wakes it early.
    pub fn push_spans(&self, encoded: Vec<u8>, count: u64) -> bool {
        bump(&self.shared.counters.producer.spans_logged, count);
        let (queued, backlog) = {
            let mut q = lock(&self.shared.spans);
            (
                q.offer(encoded, count, self.shared.span_queue_bytes),
                q.bytes,
            )
        };
        if !queued {
            bump(&self.shared.counters.producer.spans_dropped, count);
        } else if backlog >= QUEUE_WAKE_BYTES {
            // a burst: drain now rather than at the next tick
            self.writer.unpark();
        }
        queued
    }

    /// A record the encoder refused: counted as logged and bad, its event queued.
    pub fn report_bad(&self, event_json: String) {
        self.producer.count_logged();
        bump(&self.shared.counters.producer.bad_reported, 1);
        self.log_event(event_json);
    }

    /// Queues an event line for the writer thread. False when the event queue is full.
    pub fn log_event(&self, event_json: String) -> bool {
        {
            let mut q = lock(&self.shared.pending_events);
            if q.len() >= self.shared.event_queue_capacity {
                self.shared.counters.events_dropped.fetch_add(1, Relaxed);
                return false;
            }
            q.push_back(event_json);
        }
        self.writer.unpark();
        true
    }

    /// Writes an event from the calling thread, after every queued one, and fsyncs:
    /// crash-class events must be on disk before a crash handler returns.
    pub fn write_event_now(&self, event_json: &str) -> Result<()> {
        self.shared.write_events(Some(event_json))?;
        lock(&self.shared.event_log).sync()
    }

    /// Asks the writer to publish everything queued so far and fsync events; waits at most
    /// `timeout`. True when done and nothing was lost since the previous flush (a failed
    /// write — a full disk —, a removed run directory, a caught panic: see
    /// `counters().write_failures`, `dropped` and `last_error`).
    pub fn flush(&self, timeout: Duration) -> bool {
        let target = {
            let mut c = lock(&self.shared.control);
            if c.finished.is_some() {
                return true;
            }
            c.flush_requested += 1;
            c.flush_requested
        };
        self.writer.unpark();
        let deadline = Instant::now() + timeout;
        let mut c = lock(&self.shared.control);
        while c.flush_done < target && c.finished.is_none() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            c = self
                .shared
                .changed
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(c);
        let losses = self.shared.loss_mark();
        losses == self.losses_at_last_flush.replace(losses)
    }

    /// Flushes, optionally compacts, and stops the writer. Waits at most `timeout`;
    /// Err when the writer did not finish in time (it keeps going in the background).
    pub fn close(&mut self, compact: bool, timeout: Duration) -> Result<CloseReport> {
        {
            let mut c = lock(&self.shared.control);
            if let Some(r) = &c.finished {
                return Ok(r.clone());
            }
            c.stop.get_or_insert(compact);
        }
        self.writer.unpark();
        let deadline = Instant::now() + timeout;
        let mut c = lock(&self.shared.control);
        while c.finished.is_none() {
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout {
                    ms: timeout.as_millis(),
                });
            }
            c = self
                .shared
                .changed
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let report = c.finished.clone().expect("finished");
        drop(c);
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
        Ok(report)
    }

    pub fn counters(&self) -> CountersSnapshot {
        self.shared.snapshot()
    }

    /// Close was asked for (it may still be running), or the writer has finished.
    pub fn is_stopping(&self) -> bool {
        let c = lock(&self.shared.control);
        c.stop.is_some() || c.finished.is_some()
    }

    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.control).last_error.clone()
    }
}

impl Drop for Recorder {
    /// Dropped without close (the JS object was collected): let the writer flush what it
    /// has and stop, without waiting for it.
    fn drop(&mut self) {
        lock(&self.shared.control).stop.get_or_insert(false);
        self.writer.unpark();
    }
}

/// The run directory as the writer first saw it, and what it needs to put it back: a run
/// directory removed (or moved away) mid-run is recreated with its manifest, its events
/// file and the writer lock, so what is recorded afterwards stays openable — never a bare
/// directory of part files nothing can read.
struct RunDirWatch {
    /// (device, inode) of the directory; None until first seen.
    identity: Option<(u64, u64)>,
    /// manifest.json's bytes, read once it exists (the facade writes it after `open`).
    manifest: Option<Vec<u8>>,
    lock: Option<WriterLock>,
    /// Set when the recreated directory turned out to be another recorder's: why nothing
    /// more is written (every row from then on is counted as lost).
    orphaned: Option<String>,
}

/// manifest.json's bytes once it exists and is a regular file (a FIFO there must not hang
/// the writer); at most 64 MiB.
fn read_manifest(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::regular_file::open_regular(path, None)
        .ok()?
        .take(64 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    (!bytes.is_empty()).then_some(bytes)
}

fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        meta.is_dir().then_some((0, 0))
    }
}

impl RunDirWatch {
    fn new(run_dir: &Path, lock: Option<WriterLock>) -> Self {
        RunDirWatch {
            identity: dir_identity(run_dir),
            manifest: None,
            lock,
            orphaned: None,
        }
    }
}

struct WriterThread {
    opts: RecorderOptions,
    shared: Arc<Shared>,
    /// Indexed by `Kind`: steps, samples, spans.
    streams: [Box<dyn RowStream>; 3],
    /// The next part file index per stream.
    next_parts: [u64; 3],
    /// What each stream's `columns.parquet` holds (steps and samples only).
    heads: [ColumnsHead; 3],
    /// Whether the first step part has dealt with a resumed run's `steps.parquet`.
    steps_resumed: bool,
    last_publish: Instant,
    run_dir: RunDirWatch,
}

impl WriterThread {
    fn run(mut self) {
        prewarm();
        loop {
            self.shared.ring.set_now(crate::events::now_unix_seconds());
            let (flush_target, stop) = {
                let c = lock(&self.shared.control);
                (c.flush_requested, c.stop)
            };
            let more = match catch_unwind(AssertUnwindSafe(|| {
                self.cycle(flush_target, stop.is_some())
            })) {
                Ok(more) => more,
                Err(panic) => {
                    for s in &mut self.streams {
                        let lost = s.discard();
                        bump(&self.shared.tally(s.kind()).lost, lost);
                    }
                    self.shared
                        .record_error(format!("writer panic: {}", panic_message(&panic)));
                    false
                }
            };
            if more {
                // a backlog: keep draining before looking at flush and close again
                continue;
            }
            let mut c = lock(&self.shared.control);
            if flush_target > c.flush_done {
                c.flush_done = flush_target;
                self.shared.changed.notify_all();
            }
            if let Some(compact) = stop {
                drop(c);
                let report = self.finish(compact);
                let mut c = lock(&self.shared.control);
                c.finished = Some(report);
                self.shared.changed.notify_all();
                return;
            }
            drop(c);
            thread::park_timeout(self.opts.tick);
        }
    }

    /// One pass: drain every stream in chunks (events written between chunks), publish
    /// every stream's part when any is due. True when input is left over (a backlog).
    fn cycle(&mut self, flush_target: u64, stopping: bool) -> bool {
        self.watch_run_dir();
        let _ = self.shared.write_events(None);
        let mut gathered = 0;
        let mut more = true;
        while more && gathered < MAX_PASS_ROWS.max(self.opts.flush_steps) {
            more = false;
            for s in &mut self.streams {
                let (moved, left) = s.drain(&self.shared, DRAIN_CHUNK);
                gathered += moved;
                more |= left;
            }
            // events go out as they come, interleaved with a backlog's chunks
            let _ = self.shared.write_events(None);
        }
        let forced = stopping || lock(&self.shared.control).flush_done < flush_target;
        if forced || self.due() {
            // steps last: a step on disk means the samples and spans logged before it are too
            for kind in [Kind::Samples, Kind::Spans, Kind::Steps] {
                self.publish(kind);
            }
            self.last_publish = Instant::now();
            self.report_drops();
        }
        let mut log = lock(&self.shared.event_log);
        let synced = if forced {
            log.sync()
        } else {
            log.sync_if_due(self.opts.events_fsync_every)
        };
        drop(log);
        if let Err(e) = synced {
            self.shared.write_failed(e.report(), Lost::default());
        }
        self.shared.report_recovery();
        more
    }

    /// A part is due when steps reach `flush_steps`, a stream's buffer its size bound, or
    /// anything has waited `flush_interval`: whatever the trigger, every stream goes out.
    fn due(&self) -> bool {
        let [steps, ..] = &self.streams;
        steps.buffered() >= self.opts.flush_steps.max(1)
            || self
                .streams
                .iter()
                .any(|s| s.buffered_bytes() >= self.opts.sample_part_bytes)
            || (self.streams.iter().any(|s| s.buffered() > 0)
                && self.last_publish.elapsed() >= self.opts.flush_interval)
    }

    /// Publishes one stream's buffered rows as its next part file, atomically.
    fn publish(&mut self, kind: Kind) {
        let first_steps = kind == Kind::Steps && !self.steps_resumed;
        if first_steps
            && self.streams[kind.index()].buffered() > 0
            && self.run_dir.orphaned.is_none()
        {
            self.steps_resumed = true;
            self.continue_in_parts();
        }
        let stream = &mut self.streams[kind.index()];
        let rows = stream.buffered() as u64;
        if rows == 0 {
            return;
        }
        let tally = self.shared.tally(kind);
        let part = match stream.take_part() {
            Ok(part) => part,
            Err(e) => {
                let lost = stream.discard();
                bump(&tally.lost, lost);
                self.shared.record_error(format!(
                    "{lost} {} lost: building their part failed: {}",
                    kind.noun(),
                    e.report()
                ));
                return;
            }
        };
        let dir = self.opts.run_dir.join(kind.dir());
        let name = part_name(self.next_parts[kind.index()]);
        if self.run_dir.orphaned.is_none() {
            if let Some(stream) = kind.with_columns_file() {
                let head = &mut self.heads[kind.index()];
                if let Err(e) = head.before_part(&dir, stream, &part.schema()) {
                    // the part still goes out: our readers do not need the file, other tools
                    // may take a narrower schema from the first part until it is put back
                    self.shared.record_error(format!(
                        "{}/{COLUMNS_FILE} not updated before {name}: {}",
                        kind.dir(),
                        e.report()
                    ));
                }
            }
        }
        // why the part is not on disk, in words
        let result = match &self.run_dir.orphaned {
            Some(why) => Err(why.clone()),
            None => write_part(&dir, &name, &part).map_err(|e| e.report()),
        };
        stream.settle();
        match result {
            Ok(()) => {
                self.next_parts[kind.index()] += 1;
                bump(&tally.written, rows);
                lock(&self.shared.health).part_published();
                if let (Part::Steps(table), Some(tap)) = (&part, &self.opts.step_tap) {
                    (tap.0)(table);
                }
            }
            Err(why) => {
                bump(&tally.lost, rows);
                let lost = match kind {
                    Kind::Steps => Lost {
                        steps: rows,
                        ..Lost::default()
                    },
                    Kind::Samples => Lost {
                        samples: rows,
                        ..Lost::default()
                    },
                    Kind::Spans => Lost {
                        spans: rows,
                        ..Lost::default()
                    },
                };
                self.shared.write_failed(
                    format!(
                        "{rows} {} lost: writing {}/{name} failed: {why}",
                        kind.noun(),
                        kind.dir()
                    ),
                    lost,
                );
            }
        }
    }

    /// A resumed compacted run continues in parts only (resume.rs), from its first step part:
    /// a session that logs no step leaves `steps.parquet` as it was (no rewrite at close).
    /// Without the writer lock a second writer could publish under the name the table would
    /// take, so it stays; either way of keeping it is said, as readers that take
    /// `steps.parquet` alone (Python rlprobe 0.1.0) then miss the new steps.
    fn continue_in_parts(&mut self) {
        let run_dir = &self.opts.run_dir;
        if !run_dir.join(STEPS_FILE).exists() {
            return;
        }
        const KEPT: &str = "resuming with steps.parquet kept beside the new parts (readers that take steps.parquet alone, such as Python rlprobe 0.1.0, miss the new steps until the run is compacted)";
        if self.run_dir.lock.is_none() {
            self.shared.record_error(format!(
                "{KEPT}: there is no writer lock to keep a second recorder from taking its part name"
            ));
            return;
        }
        let demoted = demote_compacted_steps(run_dir).and_then(|_| next_part_index(run_dir));
        match demoted {
            Ok(next) => {
                let steps = &mut self.next_parts[Kind::Steps.index()];
                *steps = (*steps).max(next);
            }
            Err(e) => self.shared.record_error(format!("{KEPT}: {}", e.report())),
        }
    }

    /// Notices the run directory gone (removed, or moved away) and puts back what makes it
    /// a readable run, with a `recorder_error` that says what was lost with it.
    fn watch_run_dir(&mut self) {
        let run_dir = &self.opts.run_dir;
        if self.run_dir.manifest.is_none() {
            self.run_dir.manifest = read_manifest(&run_dir.join(MANIFEST_FILE));
        }
        let now = dir_identity(run_dir);
        if now.is_some() && (now == self.run_dir.identity || self.run_dir.identity.is_none()) {
            self.run_dir.identity = now;
            return;
        }
        // gone or replaced: what was published there is no longer ours to count as written
        let mut gone = [0u64; 3];
        for kind in Kind::ALL {
            let tally = self.shared.tally(kind);
            gone[kind.index()] = tally.written.swap(0, AcqRel);
            bump(&tally.lost, gone[kind.index()]);
        }
        let what = if now.is_none() {
            "was removed (or moved away)"
        } else {
            "was replaced by another directory"
        };
        let lost_rows = format!(
            "{} steps, {} samples and {} spans published before are gone with it",
            gone[0], gone[1], gone[2]
        );
        let lost = Lost {
            steps: gone[0],
            samples: gone[1],
            spans: gone[2],
            events: 0,
        };
        if let Err(e) = std::fs::create_dir_all(run_dir) {
            self.shared.write_failed(format!("the run directory {} {what} while recording ({lost_rows}), and recreating it failed: {e}", run_dir.display()), lost);
            return;
        }
        // from here the directory at the path is the one we look at (a failure below must
        // not make the next pass take our own parts for another directory's)
        self.run_dir.identity = dir_identity(run_dir);
        // the old lock went with the old directory; another recorder may hold the new one
        // (a restarted job): then nothing of ours goes there, not even the manifest
        self.run_dir.lock = None;
        match lock_run_for_writing(run_dir) {
            Ok(l) => self.run_dir.lock = Some(l),
            Err(e) if lock::locks_unsupported(&e) => {} // unguarded from the start, said at open
            Err(e) => {
                let why = format!("the run directory {} {what} while recording ({lost_rows}); {e}; this recorder writes nothing more", run_dir.display());
                self.run_dir.orphaned = Some(why.clone());
                self.shared.write_failed(why, lost);
                return;
            }
        }
        let restore = || -> Result<()> {
            if let Some(manifest) = &self.run_dir.manifest {
                write_file_atomic(&run_dir.join(MANIFEST_FILE), manifest)?;
            }
            *lock(&self.shared.event_log) = EventLog::open(&run_dir.join(EVENTS_FILE))?;
            Ok(())
        };
        match restore() {
            Ok(()) => {
                // rows were lost: a flush spanning this must not report success
                self.shared
                    .counters
                    .writer
                    .write_failures
                    .fetch_add(1, AcqRel);
                self.shared.record_error(format!(
                    "the run directory {} {what} while recording: {lost_rows}; recreated it with {}manifest.json and events.jsonl so what is recorded from now on stays readable",
                    run_dir.display(),
                    if self.run_dir.manifest.is_some() { "" } else { "no " },
                ));
            }
            Err(e) => {
                self.shared.write_failed(format!("the run directory {} {what} while recording ({lost_rows}), and restoring its manifest and events failed: {}", run_dir.display(), e.report()), lost);
            }
        }
    }

    /// Emits `recorder_drops` events for queue-full drops not yet reported.
    fn report_drops(&self) {
        let c = &self.shared.counters.producer;
        let totals = [
            self.shared.ring.dropped(),
            c.samples_dropped.load(Acquire),
            c.spans_dropped.load(Acquire),
        ];
        for kind in Kind::ALL {
            let total = totals[kind.index()];
            let reported = &self.shared.reported_drops[kind.index()];
            let seen = reported.load(Relaxed);
            if total <= seen {
                continue;
            }
            let new = total - seen;
            let message = match kind {
                Kind::Steps => format!("{new} step records dropped: the queue was full, or a record was larger than the whole queue ({total} in total)"),
                _ => format!("{new} {} dropped: the {} queue was full ({total} in total)", kind.noun(), &kind.noun()[..kind.noun().len() - 1]),
            };
            let data =
                kind.with_record(json!({ "count": new, "total": total, "reason": "queue_full" }));
            let _ = self.shared.write_events(Some(&event_line(
                "recorder_drops",
                None,
                self.shared.rank,
                &message,
                data,
            )));
            reported.store(total, Relaxed);
        }
    }

    fn finish(&mut self, compact: bool) -> CloseReport {
        let compaction = if compact {
            let all = || {
                let steps = compact_steps(&self.opts.run_dir)?;
                let samples = compact_samples(&self.opts.run_dir)?;
                let spans = compact_spans(&self.opts.run_dir)?;
                Ok::<_, Error>(CompactReport {
                    sample_parts_merged: samples.parts_merged,
                    sample_rows: samples.rows,
                    span_parts_merged: spans.parts_merged,
                    span_rows: spans.rows,
                    ..steps
                })
            };
            match catch_unwind(AssertUnwindSafe(all)) {
                Ok(Ok(r)) => Some(r),
                Ok(Err(e)) => {
                    self.shared
                        .record_error(format!("compaction failed (parts kept): {}", e.report()));
                    None
                }
                Err(p) => {
                    self.shared.record_error(format!(
                        "compaction panicked (parts kept): {}",
                        panic_message(&p)
                    ));
                    None
                }
            }
        } else {
            None
        };
        // calls still queued (the last cycle failed before draining them) are lost
        for s in &mut self.streams {
            let stranded = s.strand(&self.shared);
            bump(&self.shared.tally(s.kind()).lost, stranded);
        }
        let _ = self.shared.write_events(None);
        self.shared.report_recovery();
        let _ = lock(&self.shared.event_log).sync();
        CloseReport {
            counters: self.shared.snapshot(),
            compaction,
            error: lock(&self.shared.control).last_error.clone(),
        }
    }
}

/// Publishes `part` as `dir/name`, atomically (the stream directory is created, never the
/// run directory: a run directory that vanished is `watch_run_dir`'s).
fn write_part(dir: &Path, name: &str, part: &Part) -> Result<()> {
    publish_in_stream_dir(dir, name, |file, tmp| Ok(((), part.write(file, tmp)?)))
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
