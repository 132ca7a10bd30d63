//! The recorder's two halves: the producer the training thread calls (`Recorder`) and
//! the writer thread that owns all IO.
//!
//! The producer only copies a record into the lock-free ring and bumps counters. The
//! writer thread wakes on a short timer or when the producer has queued a flush's worth of
//! records, drains the ring into a columnar batch, and publishes a part file every
//! `flush_interval` or `flush_steps` rows. Events are appended as they arrive.
//! Invariant once flushed: `written + dropped + bad == logged`.

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::atomic::{publish, remove_stray_temps};
use crate::compact::{compact_steps, next_part_index, CompactReport};
use crate::encoding::StepBatch;
use crate::events::{event_line, EventLog};
use crate::layout::{part_name, EVENTS_FILE, STEPS_PARTS_DIR};
use crate::samples::batch::SampleBatch;
use crate::samples::compact_samples;
use crate::samples::files::{open_sample_sources, samples_dir};
use crate::samples::wire::{decode_batch, BadSample};
use crate::spans::batch::SpanBuilders;
use crate::spans::compact::{compact_spans, next_span_part};
use crate::spans::wire::{decode_views, BadSpan};
use crate::layout::SPANS_DIR;
use crate::parquet_io::{prewarm, write_table};
use crate::props::Codec;
use crate::ring::{self, PushError, RingMemory};
use crate::schema::{ColumnKind, Registry};

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

/// Queued span bytes past which a push wakes the writer instead of waiting for its tick.
const SPAN_WAKE_BYTES: usize = 1 << 20;

/// Slots reserved per queued record: the 40-field record of the benchmark needs ~82.
const SLOTS_PER_RECORD: usize = 96;

/// Written by the training thread only, on a cache line of its own. (`logged` and
/// `dropped` live in the ring's header, where the JS producer counts them.)
#[derive(Default)]
#[repr(align(128))]
struct ProducerCounters {
    bad_reported: AtomicU64,
    samples_logged: AtomicU64,
    samples_dropped: AtomicU64,
    spans_logged: AtomicU64,
    spans_dropped: AtomicU64,
}

/// Written by the writer thread only (events_written: under the event-log lock).
#[derive(Default)]
#[repr(align(128))]
struct WriterCounters {
    written: AtomicU64,
    bad_decoded: AtomicU64,
    lost_in_writer: AtomicU64,
    events_written: AtomicU64,
    samples_written: AtomicU64,
    samples_bad: AtomicU64,
    samples_lost: AtomicU64,
    spans_written: AtomicU64,
    spans_bad: AtomicU64,
    spans_lost: AtomicU64,
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
    ring: Arc<RingMemory>,
    event_queue_capacity: usize,
    counters: Counters,
    pending_events: Mutex<VecDeque<String>>,
    event_log: Mutex<EventLog>,
    registry: RwLock<Registry>,
    control: Mutex<Control>,
    changed: Condvar,
    reported_drops: AtomicU64,
    reported_sample_drops: AtomicU64,
    reported_span_drops: AtomicU64,
    samples: Mutex<ByteQueue>,
    sample_queue_bytes: usize,
    spans: Mutex<ByteQueue>,
    span_queue_bytes: usize,
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
    fn snapshot(&self) -> CountersSnapshot {
        let c = &self.counters;
        let logged = self.ring.logged();
        let written = c.writer.written.load(Acquire);
        let dropped = self.ring.dropped() + c.writer.lost_in_writer.load(Acquire);
        let bad = c.producer.bad_reported.load(Acquire) + c.writer.bad_decoded.load(Acquire);
        let samples_logged = c.producer.samples_logged.load(Acquire);
        let samples_written = c.writer.samples_written.load(Acquire);
        let samples_dropped = c.producer.samples_dropped.load(Acquire) + c.writer.samples_lost.load(Acquire);
        let samples_bad = c.writer.samples_bad.load(Acquire);
        let spans_logged = c.producer.spans_logged.load(Acquire);
        let spans_written = c.writer.spans_written.load(Acquire);
        let spans_dropped = c.producer.spans_dropped.load(Acquire) + c.writer.spans_lost.load(Acquire);
        let spans_bad = c.writer.spans_bad.load(Acquire);
        CountersSnapshot {
            logged,
            written,
            dropped,
            bad,
            pending: logged.saturating_sub(written + dropped + bad),
            events_written: c.writer.events_written.load(Acquire),
            events_dropped: c.events_dropped.load(Acquire),
            samples_logged,
            samples_written,
            samples_dropped,
            samples_bad,
            samples_pending: samples_logged.saturating_sub(samples_written + samples_dropped + samples_bad),
            spans_logged,
            spans_written,
            spans_dropped,
            spans_bad,
            spans_pending: spans_logged.saturating_sub(spans_written + spans_dropped + spans_bad),
        }
    }

    /// Writes queued events, then `extra` if given, under the log lock (keeps order).
    fn write_events(&self, extra: Option<&str>) -> std::io::Result<()> {
        let mut log = lock(&self.event_log);
        let queued: Vec<String> = lock(&self.pending_events).drain(..).collect();
        for line in queued.iter().map(String::as_str).chain(extra) {
            log.append(line)?;
            self.counters.writer.events_written.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// The oldest queued `logSamples` call (its bytes and sample count).
    fn pop_sample_call(&self) -> Option<(Vec<u8>, u64)> {
        lock(&self.samples).pop()
    }

    fn record_error(&self, message: String) {
        let line = event_line("recorder_error", None, self.rank, &message, "{}");
        let _ = self.write_events(Some(&line));
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
}

impl Recorder {
    /// Opens (or resumes) a recording in `opts.run_dir` and starts the writer thread.
    pub fn open(opts: RecorderOptions) -> std::io::Result<Recorder> {
        std::fs::create_dir_all(&opts.run_dir)?;
        let parts_dir = opts.run_dir.join(STEPS_PARTS_DIR);
        std::fs::create_dir_all(&parts_dir)?;
        remove_stray_temps(&parts_dir, ".part-")?;
        remove_stray_temps(&samples_dir(&opts.run_dir), ".part-")?;
        remove_stray_temps(&opts.run_dir.join(SPANS_DIR), ".part-")?;
        let next_part = next_part_index(&opts.run_dir)?;
        let next_sample_part = open_sample_sources(&opts.run_dir)?.next_part;
        let next_span_part = next_span_part(&opts.run_dir)?;
        let event_log = EventLog::open(&opts.run_dir.join(EVENTS_FILE))?;
        let capacity = opts.queue_capacity.max(1);
        let (producer, consumer) = ring::channel(capacity, capacity.saturating_mul(SLOTS_PER_RECORD));
        producer.memory().set_now(crate::events::now_unix_seconds());
        let shared = Arc::new(Shared {
            rank: opts.rank,
            ring: producer.memory().clone(),
            event_queue_capacity: opts.event_queue_capacity.max(1),
            counters: Counters::default(),
            pending_events: Mutex::new(VecDeque::new()),
            event_log: Mutex::new(event_log),
            registry: RwLock::new(Registry::default()),
            control: Mutex::new(Control::default()),
            changed: Condvar::new(),
            reported_drops: AtomicU64::new(0),
            reported_sample_drops: AtomicU64::new(0),
            reported_span_drops: AtomicU64::new(0),
            samples: Mutex::new(ByteQueue::default()),
            sample_queue_bytes: opts.sample_queue_bytes.max(1),
            spans: Mutex::new(ByteQueue::default()),
            span_queue_bytes: opts.span_queue_bytes.max(1),
        });
        let state = WriterThread {
            batch: StepBatch::new(opts.rank),
            registry: Registry::default(),
            consumer,
            shared: shared.clone(),
            next_part,
            samples: SampleBatch::default(),
            samples_in_flight: 0,
            next_sample_part,
            spans: SpanBuilders::default(),
            spans_in_flight: 0,
            next_span_part,
            last_publish: Instant::now(),
            record: Vec::with_capacity(256),
            opts: opts.clone(),
        };
        let join = thread::Builder::new().name("rlprobe-writer".into()).spawn(move || state.run())?;
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
    pub fn register(&self, key: &str) -> Result<(u32, ColumnKind), String> {
        self.shared.registry.write().unwrap_or_else(|p| p.into_inner()).register(key)
    }

    /// The hot path: enqueue one encoded step record. Never blocks; false when dropped.
    #[inline]
    pub fn push_step(&self, slots: &[f64]) -> bool {
        self.producer.count_logged();
        let result = if slots.len() >= 2 && slots[1].is_nan() {
            // stamp with the clock the writer publishes each tick (log time, to a tick)
            self.producer.push_with_header(&[slots[0], self.producer.memory().now()], &slots[2..])
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
    /// false (the samples counted as dropped) when the sample queue is full.
    pub fn push_samples(&self, encoded: Vec<u8>, count: u64) -> bool {
        bump(&self.shared.counters.producer.samples_logged, count);
        let queued = lock(&self.shared.samples).offer(encoded, count, self.shared.sample_queue_bytes);
        if !queued {
            bump(&self.shared.counters.producer.samples_dropped, count);
            return false;
        }
        self.writer.unpark();
        true
    }

    /// Enqueues a batch of `count` encoded spans (spans/wire.rs). Never blocks; false (the
    /// spans counted as dropped) when the span queue is full. The writer publishes them
    /// on the steps' cadence; a backlog past `SPAN_WAKE_BYTES` wakes it early.
    pub fn push_spans(&self, encoded: Vec<u8>, count: u64) -> bool {
        bump(&self.shared.counters.producer.spans_logged, count);
        let (queued, backlog) = {
            let mut q = lock(&self.shared.spans);
            (q.offer(encoded, count, self.shared.span_queue_bytes), q.bytes)
        };
        if !queued {
            bump(&self.shared.counters.producer.spans_dropped, count);
        } else if backlog >= SPAN_WAKE_BYTES {
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
    pub fn write_event_now(&self, event_json: &str) -> std::io::Result<()> {
        self.shared.write_events(Some(event_json))?;
        lock(&self.shared.event_log).sync()
    }

    /// Asks the writer to publish everything queued so far and fsync events; waits at most
    /// `timeout`. True when done.
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
            c = self.shared.changed.wait_timeout(c, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }

    /// Flushes, optionally compacts, and stops the writer. Waits at most `timeout`;
    /// Err when the writer did not finish in time (it keeps going in the background).
    pub fn close(&mut self, compact: bool, timeout: Duration) -> Result<CloseReport, String> {
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
                return Err(format!("the writer did not finish within {} ms", timeout.as_millis()));
            }
            c = self.shared.changed.wait_timeout(c, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
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

struct WriterThread {
    opts: RecorderOptions,
    consumer: ring::Consumer,
    shared: Arc<Shared>,
    /// Snapshot of the producer's registry, refreshed when an unknown id shows up.
    registry: Registry,
    batch: StepBatch,
    record: Vec<f64>,
    next_part: u64,
    samples: SampleBatch,
    /// Samples taken off the queue or out of the buffer and not yet counted as written,
    /// bad or lost: a panic in between counts them as lost, keeping the invariant.
    samples_in_flight: u64,
    next_sample_part: u64,
    /// Decoded spans, straight into column builders (no allocation per field).
    spans: SpanBuilders,
    /// As `samples_in_flight`, for spans.
    spans_in_flight: u64,
    next_span_part: u64,
    last_publish: Instant,
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
            let outcome = catch_unwind(AssertUnwindSafe(|| self.cycle(stop.is_some())));
            if let Err(panic) = outcome {
                let lost = self.batch.rows() as u64;
                self.batch.reset();
                bump(&self.shared.counters.writer.lost_in_writer, lost);
                let lost_samples = self.samples.rows() as u64 + self.samples_in_flight;
                self.samples.clear();
                self.samples_in_flight = 0;
                bump(&self.shared.counters.writer.samples_lost, lost_samples);
                let lost_spans = self.spans.rows() as u64 + self.spans_in_flight;
                self.spans = SpanBuilders::default();
                self.spans_in_flight = 0;
                bump(&self.shared.counters.writer.spans_lost, lost_spans);
                self.shared.record_error(format!("writer panic: {}", panic_message(&panic)));
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

    /// One pass: write events, drain the queue, publish a part when one is due.
    fn cycle(&mut self, stopping: bool) {
        if let Err(e) = self.shared.write_events(None) {
            lock(&self.shared.control).last_error = Some(format!("events.jsonl: {e}"));
        }
        self.drain();
        self.drain_samples();
        self.drain_spans();
        let buffered = self.batch.rows() > 0 || self.samples.rows() > 0 || self.spans.rows() > 0;
        let due = self.batch.rows() >= self.opts.flush_steps
            || (buffered && self.last_publish.elapsed() >= self.opts.flush_interval);
        let forced = {
            let c = lock(&self.shared.control);
            c.flush_requested > c.flush_done
        };
        if due || forced || stopping {
            // samples go out on the steps' cadence
            self.publish_part();
            self.publish_sample_part();
            self.publish_span_part();
            self.report_drops();
        }
        let mut log = lock(&self.shared.event_log);
        let synced = if forced || stopping { log.sync() } else { log.sync_if_due(self.opts.events_fsync_every) };
        drop(log);
        if let Err(e) = synced {
            lock(&self.shared.control).last_error = Some(format!("events.jsonl fsync: {e}"));
        }
    }

    fn drain(&mut self) {
        while self.consumer.pop_into(&mut self.record) {
            if self.batch.append(&self.record, &self.registry).is_err() {
                // maybe a column registered after our snapshot: refresh once and retry
                self.registry = self.shared.registry.read().unwrap_or_else(|p| p.into_inner()).clone();
                if let Err(reason) = self.batch.append(&self.record, &self.registry) {
                    bump(&self.shared.counters.writer.bad_decoded, 1);
                    let step = self.record.first().copied().unwrap_or(f64::NAN);
                    let line = event_line(
                        "bad_record",
                        (step >= 0.0 && step.fract() == 0.0).then_some(step as i64),
                        self.shared.rank,
                        &format!("step record dropped by the writer: {reason}"),
                        &format!("{{\"field\":\"record\",\"reason\":{}}}", crate::events::json_string(&reason)),
                    );
                    let _ = self.shared.write_events(Some(&line));
                }
            }
            if self.batch.rows() >= self.opts.flush_steps.max(1) {
                // a backlog is published in parts of `flush_steps` rows, never one huge part
                self.publish_part();
            }
        }
    }

    /// Decodes queued `logSamples` calls into the sample buffer; malformed samples become
    /// `bad_record` events. A buffer past `sample_part_bytes` is published at once.
    fn drain_samples(&mut self) {
        while let Some((encoded, count)) = self.shared.pop_sample_call() {
            self.samples_in_flight = count;
            match decode_batch(&encoded, self.shared.rank) {
                Ok((rows, bad)) => {
                    bump(&self.shared.counters.writer.samples_bad, bad.len() as u64);
                    self.samples_in_flight = 0;
                    for row in rows {
                        self.samples.push(row);
                    }
                    for b in &bad {
                        self.report_bad_sample(b);
                    }
                }
                Err(reason) => {
                    bump(&self.shared.counters.writer.samples_bad, count);
                    self.samples_in_flight = 0;
                    self.report_bad_batch(count, "samples", "", &reason);
                }
            }
            if self.samples.bytes() >= self.opts.sample_part_bytes {
                self.publish_sample_part();
            }
        }
    }

    /// A batch the writer could not decode at all (an encoder bug): one `bad_record` event
    /// for its `count` records.
    fn report_bad_batch(&self, count: u64, what: &str, extra_data: &str, reason: &str) {
        let line = event_line(
            "bad_record",
            None,
            self.shared.rank,
            &format!("{count} {what} dropped by the writer: {reason}"),
            &format!("{{\"field\":\"{what}\",\"reason\":{}{extra_data}}}", crate::events::json_string(reason)),
        );
        let _ = self.shared.write_events(Some(&line));
    }

    fn report_bad_sample(&self, b: &BadSample) {
        use crate::events::json_string;
        let line = event_line(
            "bad_record",
            b.step,
            self.shared.rank,
            &format!("sample {} dropped: `{}` {} (got {} {})", b.index, b.field, b.reason, b.value_type, b.value_preview),
            &format!(
                "{{\"record\":\"sample\",\"index\":{},\"field\":{},\"reason\":{},\"value_type\":{},\"value_preview\":{}}}",
                b.index,
                json_string(&b.field),
                json_string(&b.reason),
                json_string(&b.value_type),
                json_string(&b.value_preview)
            ),
        );
        let _ = self.shared.write_events(Some(&line));
    }

    fn publish_sample_part(&mut self) {
        if self.samples.rows() == 0 {
            return;
        }
        let rows = self.samples.rows() as u64;
        let name = part_name(self.next_sample_part);
        let dir = samples_dir(&self.opts.run_dir);
        self.samples_in_flight = rows;
        let result = publish_batch_part(&dir, &name, self.samples.take());
        self.samples_in_flight = 0;
        match result {
            Ok(()) => {
                self.next_sample_part += 1;
                bump(&self.shared.counters.writer.samples_written, rows);
            }
            Err(e) => {
                bump(&self.shared.counters.writer.samples_lost, rows);
                self.shared.record_error(format!("{rows} samples lost: writing samples/{name} failed: {e}"));
            }
        }
    }

    /// Decodes queued span batches into the span buffer; malformed spans become
    /// `bad_record` events.
    fn drain_spans(&mut self) {
        loop {
            let Some((encoded, count)) = lock(&self.shared.spans).pop() else { break };
            self.spans_in_flight = count;
            // all of a batch or none of it: a torn buffer counts whole as bad
            let mut views = Vec::with_capacity((count as usize).min(encoded.len() / 60));
            match decode_views(&encoded, |v| views.push(v)) {
                Ok(bad) => {
                    bump(&self.shared.counters.writer.spans_bad, bad.len() as u64);
                    // in flight: what is not yet in the builders (a panic counts both as lost)
                    self.spans_in_flight = views.len() as u64;
                    for v in &views {
                        self.spans.append(v, self.shared.rank);
                        self.spans_in_flight -= 1;
                    }
                    for b in &bad {
                        self.report_bad_span(b);
                    }
                }
                Err(reason) => {
                    bump(&self.shared.counters.writer.spans_bad, count);
                    self.spans_in_flight = 0;
                    self.report_bad_batch(count, "spans", ",\"record\":\"span\"", &reason);
                }
            }
            if self.spans.bytes() >= self.opts.sample_part_bytes {
                self.publish_span_part();
            }
        }
    }

    fn report_bad_span(&self, b: &BadSpan) {
        use crate::events::json_string;
        let line = event_line(
            "bad_record",
            None,
            self.shared.rank,
            &format!("span {} dropped: `{}` {}", b.span_id, b.field, b.reason),
            &format!(
                "{{\"record\":\"span\",\"span_id\":{},\"field\":{},\"reason\":{}}}",
                json_string(&b.span_id),
                json_string(b.field),
                json_string(&b.reason)
            ),
        );
        let _ = self.shared.write_events(Some(&line));
    }

    fn publish_span_part(&mut self) {
        if self.spans.rows() == 0 {
            return;
        }
        let n = self.spans.rows() as u64;
        let name = part_name(self.next_span_part);
        let dir = self.opts.run_dir.join(SPANS_DIR);
        let batch = self.spans.finish();
        // from here the rows are out of the builders: a panic counts them as lost
        self.spans_in_flight = n;
        let result = publish_batch_part(&dir, &name, batch);
        self.spans_in_flight = 0;
        match result {
            Ok(()) => {
                self.next_span_part += 1;
                bump(&self.shared.counters.writer.spans_written, n);
            }
            Err(e) => {
                bump(&self.shared.counters.writer.spans_lost, n);
                self.shared.record_error(format!("{n} spans lost: writing spans/{name} failed: {e}"));
            }
        }
    }

    fn publish_part(&mut self) {
        self.last_publish = Instant::now();
        if self.batch.rows() == 0 {
            return;
        }
        let table = self.batch.take();
        let rows = table.rows as u64;
        let dir = self.opts.run_dir.join(STEPS_PARTS_DIR);
        let name = part_name(self.next_part);
        let write = || {
            std::fs::create_dir_all(&dir)?;
            publish(&dir, &name, |file| {
                let file = write_table(file, &table, Codec::default(), Vec::new())?;
                Ok(((), file))
            })
        };
        // A compaction removes an empty steps/ directory; if it does so between our
        // create_dir_all and the temporary's creation, simply try again.
        let mut result = write();
        for _ in 0..3 {
            match &result {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => result = write(),
                _ => break,
            }
        }
        match result {
            Ok(()) => {
                self.next_part += 1;
                bump(&self.shared.counters.writer.written, rows);
                if let Some(tap) = &self.opts.step_tap {
                    (tap.0)(&table);
                }
            }
            Err(e) => {
                bump(&self.shared.counters.writer.lost_in_writer, rows);
                self.shared.record_error(format!("{rows} steps lost: writing {name} failed: {e}"));
            }
        }
    }

    /// Emits `recorder_drops` events for step and sample drops not yet reported.
    fn report_drops(&self) {
        self.report_new_drops(self.shared.ring.dropped(), &self.shared.reported_drops, |new, total| {
            (
                format!("{new} step records dropped: the queue was full, or a record was larger than the whole queue ({total} in total)"),
                String::new(),
            )
        });
        let samples = self.shared.counters.producer.samples_dropped.load(Acquire);
        self.report_new_drops(samples, &self.shared.reported_sample_drops, |new, total| {
            (format!("{new} samples dropped: the sample queue was full ({total} in total)"), ",\"record\":\"sample\"".into())
        });
        let spans = self.shared.counters.producer.spans_dropped.load(Acquire);
        self.report_new_drops(spans, &self.shared.reported_span_drops, |new, total| {
            (format!("{new} spans dropped: the span queue was full ({total} in total)"), ",\"record\":\"span\"".into())
        });
    }

    /// One `recorder_drops` event for the drops past `reported`; `describe` gives the
    /// message and extra data fields for `(new, total)`.
    fn report_new_drops(&self, total: u64, reported: &AtomicU64, describe: impl Fn(u64, u64) -> (String, String)) {
        let seen = reported.load(Relaxed);
        if total <= seen {
            return;
        }
        let new = total - seen;
        let (message, extra) = describe(new, total);
        let data = format!("{{\"count\":{new},\"total\":{total}{extra}}}");
        let _ = self.shared.write_events(Some(&event_line("recorder_drops", None, self.shared.rank, &message, &data)));
        reported.store(total, Relaxed);
    }

    fn finish(&mut self, compact: bool) -> CloseReport {
        let compaction = if compact {
            let both = || {
                let steps = compact_steps(&self.opts.run_dir)?;
                let samples = compact_samples(&self.opts.run_dir)?;
                let spans = compact_spans(&self.opts.run_dir)?;
                Ok::<_, std::io::Error>(CompactReport {
                    sample_parts_merged: samples.parts_merged,
                    sample_rows: samples.rows,
                    span_parts_merged: spans.parts_merged,
                    span_rows: spans.rows,
                    ..steps
                })
            };
            match catch_unwind(AssertUnwindSafe(both)) {
                Ok(Ok(r)) => Some(r),
                Ok(Err(e)) => {
                    self.shared.record_error(format!("compaction failed (parts kept): {e}"));
                    None
                }
                Err(p) => {
                    self.shared.record_error(format!("compaction panicked (parts kept): {}", panic_message(&p)));
                    None
                }
            }
        } else {
            None
        };
        // calls still queued (the last cycle failed before draining them) are lost
        let stranded: u64 = lock(&self.shared.samples).batches.drain(..).map(|(_, n)| n).sum();
        bump(&self.shared.counters.writer.samples_lost, stranded);
        let stranded_spans: u64 = lock(&self.shared.spans).batches.drain(..).map(|(_, n)| n).sum();
        bump(&self.shared.counters.writer.spans_lost, stranded_spans);
        let _ = self.shared.write_events(None);
        let _ = lock(&self.shared.event_log).sync();
        CloseReport {
            counters: self.shared.snapshot(),
            compaction,
            error: lock(&self.shared.control).last_error.clone(),
        }
    }
}

/// Publishes one Arrow batch as the part file `dir/name` (samples, spans), atomically.
fn publish_batch_part(dir: &Path, name: &str, batch: Result<arrow::array::RecordBatch, String>) -> std::io::Result<()> {
    let batch = batch.map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    publish(dir, name, |file| {
        let mut w = crate::parquet_io::arrow_writer(file, batch.schema(), Codec::default(), Vec::new())?;
        w.write(&batch).map_err(crate::parquet_io::to_io)?;
        Ok(((), w.into_inner().map_err(crate::parquet_io::to_io)?))
    })
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
