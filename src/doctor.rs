//! The doctor across the boundary: translation only. Reading and diagnosing a run, and the
//! live doctor's thread and its protocol, are `rlprobe_doctor::run` and `rlprobe_doctor::feed`.

use std::collections::HashMap;
use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_doctor::detectors::DETECTORS;
use rlprobe_doctor::{DiagnoseOptions, Finding, RunDiagnosis};

use crate::error::{guard, js, settle, Result};

pub use rlprobe_doctor::LiveFeed;

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

/// The start and end level a finding states (medians of raw points over inclusive steps).
#[napi(object)]
pub struct NativeLevels {
    pub column: String,
    pub start: f64,
    pub start_from_step: i64,
    pub start_to_step: i64,
    pub end: f64,
    pub end_from_step: i64,
    pub end_to_step: i64,
    pub ratio: f64,
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
    pub levels: Option<NativeLevels>,
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
            evidence: f
                .evidence
                .into_iter()
                .map(|(name, value)| NativeEvidence { name, value })
                .collect(),
            columns: f.columns,
            root_cause: f.root_cause.map(Into::into),
            samples: f
                .samples
                .into_iter()
                .map(|s| NativeEvidenceSample {
                    step: s.step,
                    sample_id: s.sample_id,
                    why: s.why,
                })
                .collect(),
            levels: f.levels.map(|l| NativeLevels {
                column: l.column,
                start: l.start,
                start_from_step: l.start_steps.0,
                start_to_step: l.start_steps.1,
                end: l.end,
                end_from_step: l.end_steps.0,
                end_to_step: l.end_steps.1,
                ratio: l.ratio,
            }),
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
    DETECTORS
        .iter()
        .map(|d| NativeDetectorInfo {
            name: d.name.into(),
            codes: d.codes.iter().map(|c| c.to_string()).collect(),
            reads: d.reads.into(),
        })
        .collect()
}

fn diagnose_options(o: Option<NativeDoctorOptions>) -> DiagnoseOptions {
    let d = DiagnoseOptions::default();
    let Some(o) = o else { return d };
    DiagnoseOptions {
        since: o.since,
        resolution: o.resolution.unwrap_or_default().into_iter().collect(),
        kl_per_token: o.kl_per_token.unwrap_or(d.kl_per_token),
        samples: o.samples.unwrap_or(d.samples),
        renames: o.renames.unwrap_or_default(),
        ..d
    }
}

impl From<RunDiagnosis> for NativeDiagnosis {
    fn from(r: RunDiagnosis) -> Self {
        let d = r.diagnosis;
        NativeDiagnosis {
            points: d.points as u32,
            samples: r.samples as u32,
            samples_error: r.samples_error,
            findings: d.findings.into_iter().map(Into::into).collect(),
            skipped: d
                .skipped
                .into_iter()
                .map(|s| NativeSkipped {
                    detector: s.detector.into(),
                    codes: s.codes.iter().map(|c| c.to_string()).collect(),
                    reason: s.reason,
                })
                .collect(),
            ran: d.ran.into_iter().map(Into::into).collect(),
        }
    }
}

fn diagnose_dir(dir: PathBuf, options: Option<NativeDoctorOptions>) -> Result<NativeDiagnosis> {
    rlprobe_doctor::diagnose_run(&dir, &diagnose_options(options))
        .map(Into::into)
        .map_err(js)
}

/// Diagnoses the run in `run_dir` (rank 0's steps and samples).
#[napi(catch_unwind)]
pub fn diagnose_run(
    run_dir: String,
    options: Option<NativeDoctorOptions>,
) -> Result<NativeDiagnosis> {
    guard(|| diagnose_dir(PathBuf::from(run_dir), options))
}

pub struct DiagnoseTask {
    dir: PathBuf,
    options: Option<NativeDoctorOptions>,
}

impl Task for DiagnoseTask {
    type Output = Result<NativeDiagnosis>;
    type JsValue = NativeDiagnosis;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (dir, options) = (self.dir.clone(), self.options.take());
        Ok(guard(|| diagnose_dir(dir, options)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        settle(env, output)
    }
}

/// `diagnoseRun` on the libuv pool: two runs (probe diff) diagnose side by side.
#[napi(ts_return_type = "Promise<NativeDiagnosis>")]
pub fn diagnose_run_async(
    run_dir: String,
    options: Option<NativeDoctorOptions>,
) -> AsyncTask<DiagnoseTask> {
    AsyncTask::new(DiagnoseTask {
        dir: PathBuf::from(run_dir),
        options,
    })
}

/// Starts a recorder's live doctor; returns it and the tap its writer feeds.
pub fn start_live(
    o: crate::recorder::NativeLiveDoctorOptions,
) -> Result<(LiveFeed, rlprobe_core::writer::StepTap)> {
    LiveFeed::start(
        o.min_every.max(1) as usize,
        o.resolution.unwrap_or_default(),
        o.kl_per_token.unwrap_or(true),
    )
    .map_err(js)
}
