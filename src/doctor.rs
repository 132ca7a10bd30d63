//! The doctor across the boundary: offline diagnosis of a run directory, and the live
//! doctor fed by the recorder's writer thread (a step tap) and run on a thread of its own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_core::samples::cursor::{SampleCursor, SampleFilter};
use rlprobe_core::table::{ColumnValues, Table};
use rlprobe_core::writer::StepTap;
use rlprobe_doctor::detectors::DETECTORS;
use rlprobe_doctor::{Column, Finding, LiveDoctor, RunInput, Samples};

use crate::io_err;

#[napi(object)]
pub struct NativeEvidence {
    pub name: String,
    pub value: f64,
}

#[napi(object)]
pub struct NativeEvidenceSample {
    pub step: i64,
    pub sample_id: String,
    pub why: String,
}

#[napi(object)]
pub struct NativeFinding {
    pub code: String,
    /// "info", "warn" or "critical"
    pub severity: String,
    pub onset_step: i64,
    pub last_step: i64,
    pub confidence: f64,
    pub message: String,
    pub remedy: String,
    pub evidence: Vec<NativeEvidence>,
    pub columns: Vec<String>,
    pub root_cause: Option<String>,
    pub samples: Vec<NativeEvidenceSample>,
}

impl From<Finding> for NativeFinding {
    fn from(f: Finding) -> Self {
        NativeFinding {
            code: f.code.into(),
            severity: f.severity.as_str().into(),
            onset_step: f.onset_step,
            last_step: f.last_step,
            confidence: f.confidence,
            message: f.message,
            remedy: f.remedy,
            evidence: f.evidence.into_iter().map(|(name, value)| NativeEvidence { name, value }).collect(),
            columns: f.columns,
            root_cause: f.root_cause.map(Into::into),
            samples: f.samples.into_iter().map(|s| NativeEvidenceSample { step: s.step, sample_id: s.sample_id, why: s.why }).collect(),
        }
    }
}

#[napi(object)]
pub struct NativeSkipped {
    pub detector: String,
    pub codes: Vec<String>,
    pub reason: String,
}

#[napi(object)]
pub struct NativeDiagnosis {
    /// Logged points (step rows) diagnosed.
    pub points: u32,
    pub samples: u32,
    /// Why the samples could not be read (a damaged file, named), when they could not: the
    /// diagnosis then has no sample evidence, and says so.
    pub samples_error: Option<String>,
    pub findings: Vec<NativeFinding>,
    pub skipped: Vec<NativeSkipped>,
    pub ran: Vec<String>,
}

#[napi(object)]
pub struct NativeDoctorOptions {
    /// Keep findings whose onset is at or after this step.
    pub since: Option<i64>,
    /// Printing resolution of imported columns (manifest `extra.source.resolution`).
    pub resolution: Option<HashMap<String, f64>>,
    /// False for imports whose `kl_mean` is a sequence-level KL.
    pub kl_per_token: Option<bool>,
    /// Read per-sample records for evidence (default true).
    pub samples: Option<bool>,
    /// Stored column name → current name, for recordings read through a migration.
    pub renames: Option<HashMap<String, String>>,
}

#[napi(object)]
pub struct NativeDetectorInfo {
    pub name: String,
    pub codes: Vec<String>,
    pub reads: String,
}

/// The detectors and the columns they read.
#[napi(catch_unwind)]
pub fn doctor_detectors() -> Vec<NativeDetectorInfo> {
    DETECTORS.iter().map(|d| NativeDetectorInfo { name: d.name.into(), codes: d.codes.iter().map(|c| c.to_string()).collect(), reads: d.reads.into() }).collect()
}

/// Samples read for evidence at most (the most recent are kept): the doctor needs reward
/// and length per sample, and a bound keeps memory flat on very long runs (8 samples a
/// step × 250,000 steps).
const MAX_SAMPLES: usize = 2_000_000;

/// Diagnoses the run in `run_dir` (rank 0's steps and samples).
#[napi(catch_unwind)]
pub fn diagnose_run(run_dir: String, options: Option<NativeDoctorOptions>) -> Result<NativeDiagnosis> {
    diagnose_dir(PathBuf::from(run_dir), options)
}

pub struct DiagnoseTask {
    dir: PathBuf,
    options: Option<NativeDoctorOptions>,
}

impl Task for DiagnoseTask {
    type Output = NativeDiagnosis;
    type JsValue = NativeDiagnosis;

    fn compute(&mut self) -> Result<Self::Output> {
        let (dir, options) = (self.dir.clone(), self.options.take());
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| diagnose_dir(dir, options)))
            .map_err(|p| crate::err("RLPROBE_PANIC", rlprobe_core::writer::panic_message(&p)))?
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// `diagnoseRun` on the libuv pool: two runs (probe diff) diagnose side by side.
#[napi(ts_return_type = "Promise<NativeDiagnosis>")]
pub fn diagnose_run_async(run_dir: String, options: Option<NativeDoctorOptions>) -> AsyncTask<DiagnoseTask> {
    AsyncTask::new(DiagnoseTask { dir: PathBuf::from(run_dir), options })
}

fn diagnose_dir(dir: PathBuf, options: Option<NativeDoctorOptions>) -> Result<NativeDiagnosis> {
    let o = options.unwrap_or(NativeDoctorOptions { since: None, resolution: None, kl_per_token: None, samples: None, renames: None });
    // samples decode on another core while the steps are read (they cost about as much)
    let (table, samples) = std::thread::scope(|scope| {
        let samples = o.samples.unwrap_or(true).then(|| scope.spawn(|| read_samples(&dir)));
        let table = rlprobe_core::read_steps(&dir, None);
        let samples = samples.map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("reading samples panicked"))));
        (table, samples)
    });
    let mut table = table.map_err(io_err)?;
    for name in table.names.iter_mut() {
        if let Some(current) = o.renames.as_ref().and_then(|r| r.get(name.as_str())) {
            *name = current.clone();
        }
    }
    let mut run = run_input(&table);
    drop(table);
    run.resolution = o.resolution.unwrap_or_default().into_iter().collect();
    run.kl_per_token = o.kl_per_token.unwrap_or(true);
    // samples are evidence, not the diagnosis: an unreadable sample file degrades to none,
    // and the diagnosis says which file and why
    let mut samples_error = None;
    match samples {
        Some(Ok(mut s)) => {
            rlprobe_doctor::live::sort_samples(&mut s);
            run.samples = Some(s);
        }
        Some(Err(e)) => samples_error = Some(e.to_string()),
        None => {}
    }
    let samples = run.samples.as_ref().map_or(0, |s| s.len()) as u32;
    let d = rlprobe_doctor::diagnose(&run, o.since);
    Ok(NativeDiagnosis {
        points: d.points as u32,
        samples,
        samples_error,
        findings: d.findings.into_iter().map(Into::into).collect(),
        skipped: d.skipped.into_iter().map(|s| NativeSkipped { detector: s.detector.into(), codes: s.codes.iter().map(|c| c.to_string()).collect(), reason: s.reason }).collect(),
        ran: d.ran.into_iter().map(Into::into).collect(),
    })
}

/// Columns that are bookkeeping, not metrics.
fn is_metric(name: &str) -> bool {
    !matches!(name, "step" | "timestamp" | "rank")
}

/// A scalar column as f64 values and validity (None for list columns).
fn scalars(values: &ColumnValues) -> Option<Vec<f64>> {
    match values {
        ColumnValues::F64(v) => Some(v.clone()),
        ColumnValues::I64(v) => Some(v.iter().map(|x| *x as f64).collect()),
        ColumnValues::ListF64 { .. } => None,
    }
}

/// The step table as the doctor's input: rows ordered by step, a re-logged step kept once
/// (its last write), so no detector sees a step twice.
fn run_input(table: &Table) -> RunInput {
    let Some(step_col) = table.column("step") else { return RunInput::new(Vec::new()) };
    let steps: Vec<i64> = match &step_col.values {
        ColumnValues::I64(v) => v.clone(),
        ColumnValues::F64(v) => v.iter().map(|x| *x as i64).collect(),
        ColumnValues::ListF64 { .. } => Vec::new(),
    };
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| (steps[i], i));
    order.dedup_by(|later, earlier| {
        // dedup_by keeps the first of a run; make it the last write instead
        if steps[*later] == steps[*earlier] {
            *earlier = *later;
            true
        } else {
            false
        }
    });
    let mut run = RunInput::new(order.iter().map(|&i| steps[i]).collect());
    for (name, col) in table.names.iter().zip(&table.columns) {
        if !is_metric(name) {
            continue;
        }
        let Some(values) = scalars(&col.values) else { continue };
        let raw: Vec<f64> = order.iter().map(|&i| values.get(i).copied().unwrap_or(f64::NAN)).collect();
        let valid: Vec<bool> = order.iter().map(|&i| col.valid.get(i).copied().unwrap_or(false)).collect();
        run.insert(name, Column::from_raw(raw, Some(&valid)));
    }
    run
}

/// Rank 0's samples: step, id, reward, length and truncation.
fn read_samples(dir: &Path) -> std::io::Result<Samples> {
    let cols = ["step", "sample_id", "reward_total", "completion_len", "truncated"].map(String::from).to_vec();
    let mut cursor = SampleCursor::open(dir, SampleFilter::default(), Some(cols), 16_384)?;
    let mut out = Samples::default();
    let f64s = |b: &arrow::record_batch::RecordBatch, name: &str| -> Vec<f64> {
        match b.column_by_name(name).and_then(|a| arrow::compute::cast(a, &DataType::Float64).ok()) {
            Some(a) => {
                let a = a.as_primitive::<Float64Type>();
                (0..a.len()).map(|i| if a.is_null(i) { f64::NAN } else { a.value(i) }).collect()
            }
            None => vec![f64::NAN; b.num_rows()],
        }
    };
    while let Some(b) = cursor.next_batch()? {
        let n = b.num_rows();
        let step = b.column_by_name("step").and_then(|a| arrow::compute::cast(a, &DataType::Int64).ok());
        let Some(step) = step else { continue };
        let step = step.as_primitive::<Int64Type>();
        let ids = b.column_by_name("sample_id").and_then(|a| arrow::compute::cast(a, &DataType::Utf8).ok());
        let truncated = b.column_by_name("truncated").and_then(|a| arrow::compute::cast(a, &DataType::Boolean).ok());
        let (reward, len) = (f64s(&b, "reward_total"), f64s(&b, "completion_len"));
        if out.len() >= 2 * MAX_SAMPLES {
            out.keep_last(MAX_SAMPLES);
        }
        for i in 0..n {
            if step.is_null(i) {
                continue;
            }
            let id = ids.as_ref().map(|a| a.as_string::<i32>()).filter(|a| !a.is_null(i)).map_or(String::new(), |a| a.value(i).to_string());
            let t = truncated.as_ref().map(|a| a.as_boolean()).filter(|a| !a.is_null(i)).map(|a| a.value(i));
            out.push(step.value(i), id, reward[i], len[i], t);
        }
    }
    out.keep_last(MAX_SAMPLES);
    Ok(out)
}

// ---- live ----

enum Msg {
    /// A published part, converted on the doctor thread (not the writer's).
    Rows(Table),
    /// Evaluate now and acknowledge.
    Finish(Sender<()>),
}

/// The live doctor of one recorder: a thread that owns a `LiveDoctor`, fed by the
/// writer's step tap; findings wait in `found` until JS takes them.
pub struct LiveFeed {
    tx: Mutex<Option<Sender<Msg>>>,
    found: Arc<Mutex<Vec<Finding>>>,
    thread: Option<JoinHandle<()>>,
}

impl LiveFeed {
    /// Starts the doctor thread; returns it and the tap to give the writer.
    pub fn start(min_every: usize, resolution: HashMap<String, f64>, kl_per_token: bool) -> std::io::Result<(LiveFeed, StepTap)> {
        let (tx, rx) = channel::<Msg>();
        let found: Arc<Mutex<Vec<Finding>>> = Arc::default();
        let sink = found.clone();
        let thread = std::thread::Builder::new().name("rlprobe-doctor".into()).spawn(move || {
            let mut doctor = LiveDoctor::new(min_every);
            doctor.set_kl_per_token(kl_per_token);
            for (c, r) in &resolution {
                doctor.set_resolution(c, *r);
            }
            let keep = |fresh: Vec<Finding>| {
                if !fresh.is_empty() {
                    sink.lock().unwrap_or_else(|e| e.into_inner()).extend(fresh);
                }
            };
            while let Ok(msg) = rx.recv() {
                // a detector bug is contained by the engine; this guards the feed itself
                let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match msg {
                    Msg::Rows(table) => {
                        push_rows(&mut doctor, &run_input(&table));
                        (doctor.poll(), None)
                    }
                    Msg::Finish(ack) => (doctor.evaluate(), Some(ack)),
                }));
                if let Ok((fresh, ack)) = step {
                    keep(fresh);
                    if let Some(ack) = ack {
                        let _ = ack.send(());
                    }
                }
            }
        })?;
        let tap_tx = Mutex::new(tx.clone());
        let tap = StepTap(Arc::new(move |table: &Table| {
            let _ = tap_tx.lock().unwrap_or_else(|e| e.into_inner()).send(Msg::Rows(table.clone()));
        }));
        Ok((LiveFeed { tx: Mutex::new(Some(tx)), found, thread: Some(thread) }, tap))
    }

    /// Findings not yet taken.
    pub fn take(&self) -> Vec<Finding> {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Evaluates everything fed so far (waiting at most `timeout`), then returns the
    /// findings not yet taken (on a timeout, those found before it).
    pub fn finish(&self, timeout: Duration) -> Vec<Finding> {
        let (ack, done) = channel();
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            // on a timeout, what was found so far is still returned (never lost)
            if tx.send(Msg::Finish(ack)).is_ok() {
                let _ = done.recv_timeout(timeout);
            }
        }
        self.take()
    }
}

impl Drop for LiveFeed {
    fn drop(&mut self) {
        // the writer's tap holds a sender too; the thread ends once the recorder (and its
        // writer) is gone. Detach rather than block the JS thread on it.
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(self.thread.take());
    }
}

fn push_rows(doctor: &mut LiveDoctor, rows: &RunInput) {
    let mut values: Vec<(&str, f64)> = Vec::with_capacity(rows.columns.len());
    for (i, &step) in rows.steps.iter().enumerate() {
        values.clear();
        for (name, c) in &rows.columns {
            let v = c.values[i];
            if !v.is_nan() {
                values.push((name.as_str(), v));
            } else if c.nonfinite.binary_search(&i).is_ok() {
                values.push((name.as_str(), f64::NAN));
            }
        }
        doctor.push(step, &values);
    }
}
