//! A sample cursor read ahead on a thread of its own: decoding and filtering the files
//! overlaps with the caller turning each batch into values (JS strings and numbers), the
//! two halves of a read that otherwise take turns on one core.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread;

use arrow::array::RecordBatch;

use super::cursor::SampleCursor;
use crate::error::{Error, Result};

/// Batches decoded ahead of the caller: bounds what a slow caller lets pile up (a batch of
/// 100 KB completions is megabytes).
const AHEAD: usize = 2;

type Message = thread::Result<Result<Option<RecordBatch>>>;

pub struct PrefetchCursor {
    rx: Receiver<Message>,
    skipped: Arc<AtomicU64>,
    finished: bool,
    thread_ended: Arc<AtomicBool>,
}

impl PrefetchCursor {
    /// Starts reading `cursor` ahead. The thread ends after the last batch, the first
    /// error, or as soon as this cursor is dropped (its next send fails).
    pub fn start(mut cursor: SampleCursor) -> Result<PrefetchCursor> {
        let (tx, rx) = sync_channel::<Message>(AHEAD);
        let skipped = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&skipped);
        let thread_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&thread_ended);
        thread::Builder::new()
            .name("rlprobe-sample-read".into())
            .spawn(move || {
                loop {
                    let next = catch_unwind(AssertUnwindSafe(|| cursor.next_batch()));
                    // before the send: the caller that receives the end reads the final count
                    seen.store(cursor.row_groups_skipped, Ordering::Release);
                    let last = !matches!(next, Ok(Ok(Some(_))));
                    if tx.send(next).is_err() || last {
                        break;
                    }
                }
                drop(cursor);
                ended.store(true, Ordering::Release);
            })
            .map_err(|e| Error::System {
                action: "starting a thread to read samples",
                source: Arc::new(e),
            })?;
        Ok(PrefetchCursor {
            rx,
            skipped,
            finished: false,
            thread_ended,
        })
    }

    /// The next non-empty batch of matching samples, or None when done. After an error,
    /// None: the reading thread has stopped. A panic there is raised here, on the caller's
    /// thread, where the binding turns panics into errors.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.finished {
            return Ok(None);
        }
        match self.rx.recv() {
            Ok(Ok(Ok(Some(batch)))) => Ok(Some(batch)),
            Ok(Ok(end)) => {
                self.finished = true;
                end
            }
            Ok(Err(panic)) => {
                self.finished = true;
                resume_unwind(panic)
            }
            // the thread sends its last message before it ends; never seen, but not a panic
            Err(_) => {
                self.finished = true;
                Err(Error::System {
                    action: "reading samples",
                    source: Arc::new(std::io::Error::other(
                        "the reading thread ended without its last batch",
                    )),
                })
            }
        }
    }

    /// Row groups skipped unread by their step statistics, by the reading thread so far.
    pub fn row_groups_skipped(&self) -> u64 {
        self.skipped.load(Ordering::Acquire)
    }

    /// Set when the reading thread has ended and closed its files (for tests).
    #[doc(hidden)]
    pub fn thread_ended(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.thread_ended)
    }
}
