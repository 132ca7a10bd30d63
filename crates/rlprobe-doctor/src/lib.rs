//! The doctor: detectors that read a run's step series (and, where they exist, its
//! per-sample records) and say what is going wrong, from which step, with evidence and a
//! remedy. Free of Node: [`run`] reads a run directory into a [`RunInput`]; [`diagnose`]
//! (offline) and [`LiveDoctor`] (incremental) run the same detectors over it; the binding
//! only translates options and results.
//!
//! - `input`: the columns a diagnosis reads, missing and non-finite points kept apart
//! - `finding`: what a detector reports
//! - `signal`: baselines, persistence and onset estimation shared by the detectors
//! - `detectors/`: one module per family of signatures
//! - `engine`: runs every detector, records which could not run, links root causes
//! - `live`: the incremental doctor behind the recorder's `doctor: { live: true }`
//! - `feed`: that doctor on a thread of its own, fed by the recorder's writer
//! - `run`: a run directory as the doctor's input (each step once, samples capped)
//! - `synth`: labelled synthetic runs (healthy shapes and injected signatures) for evaluation

pub mod detectors;
pub mod engine;
pub mod evaluation;
pub mod feed;
pub mod finding;
pub mod holdout;
pub mod input;
pub mod live;
pub mod run;
pub mod signal;
pub mod synth;

pub use engine::{diagnose, Diagnosis, Skipped};
pub use feed::LiveFeed;
pub use finding::{EvidenceSample, Finding, Severity};
pub use input::{Column, RunInput, Samples};
pub use live::LiveDoctor;
pub use run::{diagnose_run, DiagnoseOptions, RunDiagnosis};
