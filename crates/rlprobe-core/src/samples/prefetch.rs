//! A sample cursor read ahead on threads of its own: each thread decodes and filters whole
//! files, several files at once, while the caller takes the batches in the cursor's order
//! and turns them into values (JS strings and numbers). On 2 cores the files' decoding
//! (zstd, then the filter) is most of a read; one thread left a core idle.
//!
//! The caller hands out files as jobs, each with a small channel of its own, and keeps one
//! more file in flight than there are threads; it reads the channels in file order. Memory
//! stays bounded: at most (threads + 1) files × `AHEAD` batches wait. A worker blocked on a later file's full
//! channel cannot stall an earlier one: jobs are taken in order, so every earlier file is
//! already with a worker (or done).

use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;

use arrow::array::RecordBatch;

use super::cursor::{FileRead, SampleCursor, Scan};
use super::files::SampleFile;
use crate::error::{Error, Result};

/// Batches decoded ahead per file: bounds what a slow caller lets pile up (a batch of
/// 100 KB completions is megabytes).
const AHEAD: usize = 2;
/// The most threads one read uses; decoding gains little past 4.
const MAX_WORKERS: usize = 4;

/// One batch of a file, its end (None), or its error; Err: a panic on the worker.
type Message = thread::Result<Result<Option<RecordBatch>>>;

enum Unit {
    Opened(FileRead),
    File(SampleFile),
}

struct Job {
    unit: Unit,
    tx: SyncSender<Message>,
}

pub struct PrefetchCursor {
    /// Jobs for the workers; None once every file is handed out (or after an error), which
    /// lets idle workers end.
    jobs: Option<Sender<Job>>,
    pending: VecDeque<Unit>,
    /// The channels of the files in flight, in file order.
    in_flight: VecDeque<Receiver<Message>>,
    window: usize,
    /// Set when the calling thread reads the files itself (no worker could start).
    inline: Option<SampleCursor>,
    skipped: Arc<AtomicU64>,
    finished: bool,
    thread_ended: Arc<AtomicBool>,
}

fn system(action: &'static str, e: std::io::Error) -> Error {
    Error::System {
        action,
        source: Arc::new(e),
    }
}

fn worker_count(files: usize) -> usize {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    cores.clamp(1, MAX_WORKERS).min(files.max(1))
}

/// Reads one file into its channel. False when the caller has gone (stop reading).
fn read_unit(scan: &Scan, unit: Unit, tx: &SyncSender<Message>, skipped: &AtomicU64) -> bool {
    let read = catch_unwind(AssertUnwindSafe(|| match unit {
        Unit::Opened(f) => Ok(Some(f)),
        Unit::File(f) => scan.open_file(f).map(|(read, n)| {
            // before any send: the caller that receives this file's end reads the count
            skipped.fetch_add(n, Ordering::AcqRel);
            read
        }),
    }));
    let mut file = match read {
        Ok(Ok(Some(f))) => f,
        Ok(Ok(None)) => return tx.send(Ok(Ok(None))).is_ok(),
        Ok(Err(e)) => return tx.send(Ok(Err(e))).is_ok(),
        Err(panic) => return tx.send(Err(panic)).is_ok(),
    };
    loop {
        let next = catch_unwind(AssertUnwindSafe(|| file.next_batch(scan)));
        let last = !matches!(next, Ok(Ok(Some(_))));
        if tx.send(next).is_err() {
            return false;
        }
        if last {
            return true;
        }
    }
}

impl PrefetchCursor {
    /// Starts reading what is left of `cursor` ahead, on up to 4 threads (one per core).
    /// The threads end after the last file, or as soon as this cursor is dropped. If no
    /// thread can start, the caller's thread reads as the plain cursor does.
    pub fn start(cursor: SampleCursor) -> Result<PrefetchCursor> {
        let files = cursor.files_left();
        Self::start_on(cursor, worker_count(files))
    }

    /// `start` on `workers` threads; 0 reads on the caller's thread, as when no thread can
    /// start (for tests of every path).
    #[doc(hidden)]
    pub fn start_on(cursor: SampleCursor, workers: usize) -> Result<PrefetchCursor> {
        let (scan, current, files, skipped_so_far) = cursor.into_parts();
        let mut pending: VecDeque<Unit> = current.into_iter().map(Unit::Opened).collect();
        pending.extend(files.into_iter().map(Unit::File));
        let skipped = Arc::new(AtomicU64::new(skipped_so_far));
        let thread_ended = Arc::new(AtomicBool::new(false));
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let alive = Arc::new(AtomicUsize::new(workers));
        let mut started = 0;
        if workers == 0 {
            thread_ended.store(true, Ordering::Release);
            return Ok(PrefetchCursor::inline(scan, pending, skipped, thread_ended));
        }
        for i in 0..workers {
            let (w_scan, w_jobs, w_skipped) = (
                Arc::clone(&scan),
                Arc::clone(&jobs_rx),
                Arc::clone(&skipped),
            );
            let (w_alive, w_ended) = (Arc::clone(&alive), Arc::clone(&thread_ended));
            let spawned = thread::Builder::new()
                .name(format!("rlprobe-sample-read-{i}"))
                .spawn(move || {
                    loop {
                        // the lock is held only to take a job, never while reading one
                        let job = match w_jobs.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => break,
                        };
                        let Ok(Job { unit, tx }) = job else { break };
                        if !read_unit(&w_scan, unit, &tx, &w_skipped) {
                            break;
                        }
                    }
                    if w_alive.fetch_sub(1, Ordering::AcqRel) == 1 {
                        w_ended.store(true, Ordering::Release);
                    }
                });
            match spawned {
                Ok(_) => started += 1,
                Err(_) if started == 0 => {
                    // not one thread: read here, as the plain cursor does
                    thread_ended.store(true, Ordering::Release);
                    return Ok(PrefetchCursor::inline(scan, pending, skipped, thread_ended));
                }
                Err(_) => {
                    // fewer threads than asked for: the ones that started read everything
                    if alive.fetch_sub(1, Ordering::AcqRel) == 1 {
                        thread_ended.store(true, Ordering::Release);
                    }
                }
            }
        }
        let mut c = PrefetchCursor {
            jobs: Some(jobs_tx),
            pending,
            in_flight: VecDeque::new(),
            // one file per thread, and the next one ready as the front one ends
            window: started + 1,
            inline: None,
            skipped,
            finished: false,
            thread_ended,
        };
        c.dispatch()?;
        Ok(c)
    }

    fn inline(
        scan: Arc<Scan>,
        pending: VecDeque<Unit>,
        skipped: Arc<AtomicU64>,
        thread_ended: Arc<AtomicBool>,
    ) -> PrefetchCursor {
        let mut current = None;
        let mut files = VecDeque::new();
        for u in pending {
            match u {
                Unit::Opened(f) => current = Some(f),
                Unit::File(f) => files.push_back(f),
            }
        }
        let cursor =
            SampleCursor::from_parts(scan, current, files, skipped.load(Ordering::Acquire));
        PrefetchCursor {
            jobs: None,
            pending: VecDeque::new(),
            in_flight: VecDeque::new(),
            window: 0,
            inline: Some(cursor),
            skipped,
            finished: false,
            thread_ended,
        }
    }

    /// Hands out files until `window` are in flight; drops the job queue after the last.
    fn dispatch(&mut self) -> Result<()> {
        while self.in_flight.len() < self.window {
            let Some(unit) = self.pending.pop_front() else {
                break;
            };
            let (tx, rx) = sync_channel::<Message>(AHEAD);
            let sent = self
                .jobs
                .as_ref()
                .is_some_and(|jobs| jobs.send(Job { unit, tx }).is_ok());
            if !sent {
                return Err(system(
                    "reading samples",
                    std::io::Error::other("the reading threads ended before the last file"),
                ));
            }
            self.in_flight.push_back(rx);
        }
        if self.pending.is_empty() {
            self.jobs = None;
        }
        Ok(())
    }

    /// Stops reading: the threads end at their next batch, and let go of their files.
    pub fn close(&mut self) {
        self.stop();
        self.inline = None;
    }

    fn stop(&mut self) {
        self.finished = true;
        self.jobs = None;
        self.pending.clear();
        self.in_flight.clear();
    }

    /// The next non-empty batch of matching samples, or None when done. After an error,
    /// None: the reading has stopped. A panic on a reading thread is raised here, on the
    /// caller's thread, where the binding turns panics into errors.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.finished {
            return Ok(None);
        }
        if let Some(c) = &mut self.inline {
            let next = c.next_batch();
            self.skipped.store(c.row_groups_skipped, Ordering::Release);
            if !matches!(next, Ok(Some(_))) {
                self.finished = true;
            }
            return next;
        }
        loop {
            let Some(rx) = self.in_flight.front() else {
                self.stop();
                return Ok(None);
            };
            match rx.recv() {
                Ok(Ok(Ok(Some(batch)))) => return Ok(Some(batch)),
                Ok(Ok(Ok(None))) => {
                    self.in_flight.pop_front();
                    if let Err(e) = self.dispatch() {
                        self.stop();
                        return Err(e);
                    }
                }
                Ok(Ok(Err(e))) => {
                    self.stop();
                    return Err(e);
                }
                Ok(Err(panic)) => {
                    self.stop();
                    resume_unwind(panic)
                }
                // a worker sends a file's end or error before it lets go of its channel
                Err(_) => {
                    self.stop();
                    return Err(system(
                        "reading samples",
                        std::io::Error::other(
                            "a reading thread ended without its file's last batch",
                        ),
                    ));
                }
            }
        }
    }

    /// Row groups skipped unread by their step statistics. The threads count a file's as
    /// they open it, ahead of the caller: final once the cursor is done.
    pub fn row_groups_skipped(&self) -> u64 {
        self.skipped.load(Ordering::Acquire)
    }

    /// Set when every reading thread has ended and closed its files (for tests).
    #[doc(hidden)]
    pub fn thread_ended(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.thread_ended)
    }
}
