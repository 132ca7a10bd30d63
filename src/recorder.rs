//! The recorder across the boundary: `NativeRecorder` (set-up, events, flush, close,
//! counters) and the hand-registered hot path `pushStep`.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_core::events::event_line;
use rlprobe_core::writer::{CloseReport, CountersSnapshot, Recorder, RecorderOptions};

use crate::doctor::{start_live, LiveFeed, NativeFinding};
use crate::error::{fail, guard, js, napi_failed, Result, STATE};
use crate::NativeCompactReport;

#[napi(object)]
pub struct NativeRecorderOptions {
    /// Directory this recorder writes (the rank sub-directory already applied).
    pub run_dir: String,
    pub rank: u32,
    pub flush_interval_ms: u32,
    pub flush_steps: u32,
    pub queue_capacity: u32,
    /// Bytes of encoded samples queued before `logSamples` calls drop.
    pub sample_queue_bytes: Option<u32>,
    /// Runs the doctor live on every published step part, on a thread of its own.
    pub live_doctor: Option<NativeLiveDoctorOptions>,
    /// A worker thread's recorder: when the thread's JS environment is torn down with the
    /// recorder still open (`worker.terminate()`, or the process ended with no rlprobe in
    /// the main thread to relay it), write a `process_exit` and close with compaction.
    pub close_on_teardown: Option<bool>,
    /// The worker's `threadId`, for that event.
    pub thread_id: Option<u32>,
}

#[napi(object)]
pub struct NativeLiveDoctorOptions {
    /// Evaluate at most every this many new logged points.
    pub min_every: u32,
    pub resolution: Option<std::collections::HashMap<String, f64>>,
    /// False for imports whose `kl_mean` is a sequence-level KL.
    pub kl_per_token: Option<bool>,
}

#[napi(object)]
pub struct NativeCounters {
    pub logged: f64,
    pub written: f64,
    pub dropped: f64,
    pub bad: f64,
    pub pending: f64,
    pub events_written: f64,
    pub events_dropped: f64,
    pub samples_logged: f64,
    pub samples_written: f64,
    pub samples_dropped: f64,
    pub samples_bad: f64,
    pub samples_pending: f64,
    pub spans_logged: f64,
    pub spans_written: f64,
    pub spans_dropped: f64,
    pub spans_bad: f64,
    pub spans_pending: f64,
    /// Failed writes (part files, event lines, a removed run directory) since open.
    pub write_failures: f64,
}

impl From<CountersSnapshot> for NativeCounters {
    fn from(c: CountersSnapshot) -> Self {
        NativeCounters {
            logged: c.logged as f64,
            written: c.written as f64,
            dropped: c.dropped as f64,
            bad: c.bad as f64,
            pending: c.pending as f64,
            events_written: c.events_written as f64,
            events_dropped: c.events_dropped as f64,
            samples_logged: c.samples_logged as f64,
            samples_written: c.samples_written as f64,
            samples_dropped: c.samples_dropped as f64,
            samples_bad: c.samples_bad as f64,
            samples_pending: c.samples_pending as f64,
            spans_logged: c.spans_logged as f64,
            spans_written: c.spans_written as f64,
            spans_dropped: c.spans_dropped as f64,
            spans_bad: c.spans_bad as f64,
            spans_pending: c.spans_pending as f64,
            write_failures: c.write_failures as f64,
        }
    }
}

#[napi(object)]
pub struct NativeCloseReport {
    pub counters: NativeCounters,
    pub compaction: Option<NativeCompactReport>,
    pub error: Option<String>,
}

impl From<CloseReport> for NativeCloseReport {
    fn from(r: CloseReport) -> Self {
        NativeCloseReport {
            counters: r.counters.into(),
            compaction: r.compaction.map(Into::into),
            error: r.error,
        }
    }
}

#[napi(object)]
pub struct NativeColumnId {
    pub id: u32,
    /// "f64", "i64" or "list_f64"
    pub kind: String,
}

/// The recorders of this JS thread, by handle. The hot path (`pushStep`) is a plain
/// function looking its recorder up here: napi-rs class methods pay for receiver
/// unwrapping and borrow tracking (a global lock), about a microsecond a call, which the
/// hot path cannot afford. Thread-local, because a recorder belongs to the JS thread (main
/// or worker) that created it, its queue's only producer.
struct Slot {
    /// Unique for the process's life: a handle is reused once its slot is freed, and a
    /// teardown hook must close the recorder it was registered for, not a later one.
    id: u64,
    recorder: Recorder,
    /// The JS encoder's reusable slot buffer; `pushStep(h, n)` reads its first n slots.
    scratch: Option<Float64Array>,
    doctor: Option<LiveFeed>,
}

thread_local! {
    static SLOTS: RefCell<Vec<Option<Slot>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on recorder `handle` of this thread (a panic in it: `RLPROBE_PANIC`).
fn with_slot<T>(handle: u32, f: impl FnOnce(&mut Slot) -> Result<T>) -> Result<T> {
    guard(|| {
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            match slots.get_mut(handle as usize).and_then(Option::as_mut) {
                Some(slot) => f(slot),
                None => Err(fail(
                    STATE,
                    format!("no recorder with handle {handle} on this thread"),
                )),
            }
        })
    })
}

/// A recorder's native half: owns the handle of its thread-local slot.
#[napi]
pub struct NativeRecorder {
    handle: u32,
}

#[napi]
impl NativeRecorder {
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, options: NativeRecorderOptions) -> Result<Self> {
        guard(|| open(env, options))
    }

    /// The handle `pushStep` takes.
    #[napi(getter)]
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Hands over the encoder's slot buffer (again whenever the encoder grows it).
    #[napi(catch_unwind)]
    pub fn bind_scratch(&self, scratch: Float64Array) -> Result<()> {
        with_slot(self.handle, |slot| {
            slot.scratch = Some(scratch);
            Ok(())
        })
    }

    /// The step queue's memory as a Float64Array (header + slots, see ring.rs): the JS
    /// encoder writes records into it directly. Where the runtime copies instead of
    /// sharing external memory, `ringMagic` will not see what JS wrote, and the recorder
    /// falls back to `pushStep`.
    #[napi(catch_unwind)]
    pub fn shared_ring(&self) -> Result<Float64Array> {
        with_slot(self.handle, |slot| {
            let memory = slot.recorder.ring_memory().clone();
            let (ptr, bytes) = memory.as_bytes_ptr();
            // SAFETY: the memory lives as long as the Arc the finalizer holds, and the
            // words are atomics, so JS and the writer thread may both touch them.
            Ok(unsafe {
                Float64Array::with_external_data(ptr.cast::<f64>(), bytes / 8, move |_, _| {
                    drop(memory)
                })
            })
        })
    }

    /// The magic word of the ring header as Rust sees it (the sharing check).
    #[napi(catch_unwind)]
    pub fn ring_magic(&self) -> Result<f64> {
        with_slot(self.handle, |slot| Ok(slot.recorder.ring_memory().magic()))
    }

    /// Wakes the writer thread (the JS producer calls this every `wakeEvery` records).
    #[napi(catch_unwind)]
    pub fn wake(&self) -> Result<()> {
        with_slot(self.handle, |slot| {
            slot.recorder.wake();
            Ok(())
        })
    }

    /// Records per wake-up.
    #[napi(catch_unwind)]
    pub fn wake_every(&self) -> Result<u32> {
        with_slot(self.handle, |slot| {
            Ok(slot.recorder.wake_every().min(u32::MAX as u64) as u32)
        })
    }

    /// The queue's bound in records.
    #[napi(catch_unwind)]
    pub fn ring_max_records(&self) -> Result<u32> {
        with_slot(self.handle, |slot| {
            Ok(slot.recorder.ring_memory().max_records())
        })
    }

    /// The column id for a record key; unknown top-level keys map to `extra.<key>`.
    #[napi(catch_unwind)]
    pub fn register(&self, key: String) -> Result<NativeColumnId> {
        with_slot(self.handle, |slot| {
            let (id, kind) = slot.recorder.register(&key).map_err(js)?;
            Ok(NativeColumnId {
                id,
                kind: kind.as_str().into(),
            })
        })
    }

    /// Registers the new keys of one accepted record together, or none of them.
    #[napi(catch_unwind)]
    pub fn register_all(&self, keys: Vec<String>) -> Result<Vec<NativeColumnId>> {
        with_slot(self.handle, |slot| {
            let cols = slot.recorder.register_all(&keys).map_err(js)?;
            Ok(cols
                .into_iter()
                .map(|(id, kind)| NativeColumnId {
                    id,
                    kind: kind.as_str().to_string(),
                })
                .collect())
        })
    }

    /// Enqueues one encoded `logSamples` call (`count` samples; the bytes are copied).
    /// False when the sample queue was full and the call was dropped (counted).
    #[napi(catch_unwind)]
    pub fn push_samples(&self, encoded: &[u8], count: u32) -> Result<bool> {
        with_slot(self.handle, |slot| {
            Ok(slot.recorder.push_samples(encoded.to_vec(), count as u64))
        })
    }

    /// Enqueues a batch of `count` encoded spans (the bytes are copied). False when the
    /// span queue was full and the batch was dropped (counted).
    #[napi(catch_unwind)]
    pub fn push_spans(&self, encoded: &[u8], count: u32) -> Result<bool> {
        with_slot(self.handle, |slot| {
            Ok(slot.recorder.push_spans(encoded.to_vec(), count as u64))
        })
    }

    /// A record the encoder refused: counted, and its `bad_record` event queued.
    #[napi(catch_unwind)]
    pub fn report_bad(&self, event_json: String) -> Result<()> {
        with_slot(self.handle, |slot| {
            slot.recorder.report_bad(event_json);
            Ok(())
        })
    }

    /// Queues an event line for the writer thread. False when the event queue was full.
    #[napi(catch_unwind)]
    pub fn log_event(&self, event_json: String) -> Result<bool> {
        with_slot(self.handle, |slot| Ok(slot.recorder.log_event(event_json)))
    }

    /// Writes an event line from this thread and fsyncs it (crash-class events).
    #[napi(catch_unwind)]
    pub fn write_event_now(&self, event_json: String) -> Result<()> {
        with_slot(self.handle, |slot| {
            slot.recorder.write_event_now(&event_json).map_err(js)
        })
    }

    /// Publishes everything queued and fsyncs events, waiting at most `timeout_ms`.
    #[napi(catch_unwind)]
    pub fn flush(&self, timeout_ms: u32) -> Result<bool> {
        with_slot(self.handle, |slot| {
            Ok(slot
                .recorder
                .flush(Duration::from_millis(timeout_ms as u64)))
        })
    }

    /// Flushes, optionally compacts, stops the writer; waits at most `timeout_ms`.
    #[napi(catch_unwind)]
    pub fn close(&self, compact: bool, timeout_ms: u32) -> Result<NativeCloseReport> {
        with_slot(self.handle, |slot| {
            slot.scratch = None;
            slot.recorder
                .close(compact, Duration::from_millis(timeout_ms as u64))
                .map(Into::into)
                .map_err(js)
        })
    }

    /// Live findings not taken yet (empty without a live doctor).
    #[napi(catch_unwind)]
    pub fn take_findings(&self) -> Result<Vec<NativeFinding>> {
        with_slot(self.handle, |slot| {
            Ok(slot
                .doctor
                .as_ref()
                .map(|d| d.take())
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect())
        })
    }

    /// Has the live doctor evaluate everything published so far (call after `flush`), and
    /// returns the findings not taken yet.
    #[napi(catch_unwind)]
    pub fn finish_doctor(&self, timeout_ms: u32) -> Result<Vec<NativeFinding>> {
        with_slot(self.handle, |slot| match &slot.doctor {
            Some(d) => Ok(d
                .finish(Duration::from_millis(timeout_ms as u64))
                .into_iter()
                .map(Into::into)
                .collect()),
            None => Ok(Vec::new()),
        })
    }

    #[napi(catch_unwind)]
    pub fn counters(&self) -> Result<NativeCounters> {
        with_slot(self.handle, |slot| Ok(slot.recorder.counters().into()))
    }

    #[napi(catch_unwind)]
    pub fn last_error(&self) -> Result<Option<String>> {
        with_slot(self.handle, |slot| Ok(slot.recorder.last_error()))
    }
}

/// Opens the recorder and gives it a slot of this thread (the constructor's body).
fn open(env: Env, options: NativeRecorderOptions) -> Result<NativeRecorder> {
    let mut o = RecorderOptions::new(PathBuf::from(options.run_dir));
    o.rank = options.rank as i64;
    o.flush_interval = Duration::from_millis(options.flush_interval_ms.max(1) as u64);
    o.flush_steps = options.flush_steps.max(1) as usize;
    o.queue_capacity = options.queue_capacity.max(1) as usize;
    if let Some(bytes) = options.sample_queue_bytes {
        o.sample_queue_bytes = bytes.max(1) as usize;
    }
    let doctor = match options.live_doctor {
        Some(d) => {
            let (feed, tap) = start_live(d)?;
            o.step_tap = Some(tap);
            Some(feed)
        }
        None => None,
    };
    let recorder = Recorder::open(o).map_err(js)?;
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let handle = SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        let slot = Some(Slot {
            id,
            recorder,
            scratch: None,
            doctor,
        });
        match slots.iter().position(Option::is_none) {
            Some(free) => {
                slots[free] = slot;
                free
            }
            None => {
                slots.push(slot);
                slots.len() - 1
            }
        }
    });
    if options.close_on_teardown == Some(true) {
        let what = (
            handle as u32,
            id,
            options.rank as i64,
            options.thread_id.unwrap_or(0),
        );
        // no JS runs after teardown: this is the last moment the recording can be closed
        env.add_env_cleanup_hook(what, |(handle, id, rank, thread_id)| {
            close_on_teardown(handle, id, rank, thread_id)
        })
        .map_err(napi_failed)?;
    }
    Ok(NativeRecorder {
        handle: handle as u32,
    })
}

/// The environment of a worker is going away with its recorder open: record why, then
/// flush and compact within a bound (Node joins the worker's thread before it exits).
fn close_on_teardown(handle: u32, id: u64, rank: i64, thread_id: u32) {
    let _ = SLOTS.try_with(|slots| {
        let Ok(mut slots) = slots.try_borrow_mut() else { return };
        let Some(Some(slot)) = slots.get_mut(handle as usize) else { return };
        if slot.id != id || slot.recorder.is_stopping() {
            return; // closed by the facade (its own exit hooks, or the main thread's relay)
        }
        let c = slot.recorder.counters();
        let data = serde_json::json!({
            "code": null,
            "ended_by": "terminated",
            "worker_thread_id": thread_id,
            "logged": c.logged,
            "dropped": c.dropped,
            "bad": c.bad,
        });
        let message = "worker thread torn down with the recorder open (worker.terminate(), or the process ended with no rlprobe in the main thread): closed on teardown";
        slot.recorder.log_event(event_line("process_exit", None, rank, message, data));
        let _ = slot.recorder.close(true, Duration::from_secs(15));
    });
}

impl Drop for NativeRecorder {
    /// The JS object was collected: free the slot (the recorder stops its writer).
    fn drop(&mut self) {
        let _ = SLOTS.try_with(|slots| {
            if let Ok(mut slots) = slots.try_borrow_mut() {
                if let Some(slot) = slots.get_mut(self.handle as usize) {
                    *slot = None;
                }
            }
        });
    }
}

/// The hot path: enqueue the record encoded in the first `len` slots of the scratch buffer
/// of recorder `handle`; returns undefined. Registered by hand on the raw Node-API (see
/// `register_raw_exports`): the generated napi-rs wrapper costs ~0.4 µs a call on its
/// own, more than the whole budget of `logStep`. Never throws: a missing recorder or a
/// panic drops the record (counted by the recorder when it can be found).
unsafe extern "C" fn push_step_raw(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let mut argc = 2usize;
    let mut argv = [std::ptr::null_mut(); 2];
    let mut handle = u32::MAX;
    let mut len = 0u32;
    unsafe {
        if sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        ) != sys::Status::napi_ok
            || argc < 2
            || sys::napi_get_value_uint32(env, argv[0], &mut handle) != sys::Status::napi_ok
            || sys::napi_get_value_uint32(env, argv[1], &mut len) != sys::Status::napi_ok
        {
            return std::ptr::null_mut();
        }
    }
    let _ = std::panic::catch_unwind(|| push_into_slot(handle, len));
    std::ptr::null_mut()
}

fn push_into_slot(handle: u32, len: u32) -> bool {
    SLOTS.with(|slots| {
        let slots = slots.borrow();
        match slots.get(handle as usize) {
            Some(Some(Slot {
                recorder,
                scratch: Some(scratch),
                ..
            })) => recorder.push_step(&scratch[..(len as usize).min(scratch.len())]),
            _ => false,
        }
    })
}

/// The kind of the column a step-record key lands in ("f64", "i64", "list_f64"),
/// registering nothing; an `RLPROBE_INVALID` error for a key that cannot be a column.
#[napi(catch_unwind)]
pub fn step_column_kind(key: String) -> Result<String> {
    guard(|| {
        rlprobe_core::schema::resolve_step_key(&key)
            .map(|(_, kind)| kind.as_str().to_string())
            .map_err(js)
    })
}

/// Typed declaration of `pushStep` (so the loader and the .d.ts export it). At load time
/// `register_raw_exports` replaces it with `push_step_raw`, same behaviour, a tenth of the
/// call cost.
#[napi(catch_unwind)]
pub fn push_step(handle: u32, len: u32) -> Result<()> {
    push_into_slot(handle, len);
    Ok(())
}

/// Adds the hand-registered functions to the module's exports.
#[napi(module_exports)]
pub fn register_raw_exports(exports: Object, env: Env) -> napi::Result<()> {
    let name = "pushStep";
    let mut function = std::ptr::null_mut();
    unsafe {
        let status = sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(push_step_raw),
            std::ptr::null_mut(),
            &mut function,
        );
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(
                "rlprobe: could not create pushStep",
            ));
        }
        let status =
            sys::napi_set_named_property(env.raw(), exports.raw(), c"pushStep".as_ptr(), function);
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(
                "rlprobe: could not export pushStep",
            ));
        }
    }
    Ok(())
}
