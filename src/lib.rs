//! The Node binding: a thin layer over `rlprobe-core` and `rlprobe-doctor`. Every export
//! catches panics (they become JS errors, never a dead process); every error is thrown with
//! its `RLPROBE_…` code set natively (`error`), which the TypeScript facade folds into one
//! `RlprobeError` type.
//!
//! - `error`: core errors and panics as coded JS errors, and the list of codes
//! - `recorder`: `NativeRecorder` and the hand-registered hot path `pushStep`
//! - `steps`: reading steps as typed-array columns, their files and columns, compaction
//! - `samples`: sample selection, compaction and the streaming sample cursor
//! - `spans`: reading spans back (deduplicated, filtered), counts per kind, compaction
//! - `doctor`: diagnosing a run, and the live doctor fed by the recorder's writer

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_core::compact::CompactReport;

mod doctor;
mod error;
mod recorder;
mod samples;
mod spans;
mod steps;
mod typed_arrays;

use error::{guard, js, settle, Result};

/// A file readers skip (foreign) or cannot read (damaged), and why.
#[napi(object)]
pub struct NativeSkippedFile {
    pub path: String,
    pub reason: String,
}

pub(crate) fn skipped(files: &[rlprobe_core::stream_files::SkippedFile]) -> Vec<NativeSkippedFile> {
    files
        .iter()
        .map(|f| NativeSkippedFile {
            path: f.path.display().to_string(),
            reason: f.reason.clone(),
        })
        .collect()
}

pub(crate) fn damaged(files: &[rlprobe_core::stream_files::DamagedFile]) -> Vec<NativeSkippedFile> {
    files
        .iter()
        .map(|f| NativeSkippedFile {
            path: f.path.display().to_string(),
            reason: f.reason(),
        })
        .collect()
}

#[napi(object)]
pub struct NativeCompactReport {
    pub parts_merged: u32,
    pub leftovers_removed: u32,
    pub rows: f64,
    pub bytes: f64,
    pub sample_parts_merged: u32,
    pub sample_rows: f64,
    pub span_parts_merged: u32,
    pub span_rows: f64,
}

impl From<CompactReport> for NativeCompactReport {
    fn from(r: CompactReport) -> Self {
        NativeCompactReport {
            parts_merged: r.parts_merged as u32,
            leftovers_removed: r.leftovers_removed as u32,
            rows: r.rows as f64,
            bytes: r.bytes as f64,
            sample_parts_merged: r.sample_parts_merged as u32,
            sample_rows: r.sample_rows as f64,
            span_parts_merged: r.span_parts_merged as u32,
            span_rows: r.span_rows as f64,
        }
    }
}

/// Writes a file atomically (temporary, fsync, rename, fsync of the directory).
#[napi(catch_unwind)]
pub fn write_file_atomic(path: String, contents: String) -> Result<()> {
    guard(|| {
        rlprobe_core::atomic::write_file_atomic(&PathBuf::from(path), contents.as_bytes())
            .map_err(js)
    })
}

pub struct SyncFilesystemTask {
    dir: PathBuf,
}

impl Task for SyncFilesystemTask {
    type Output = Result<()>;
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(guard(|| {
            rlprobe_core::atomic::sync_filesystem(&self.dir).map_err(js)
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<()> {
        settle(env, output)
    }
}

/// Commits every written file of `dir`'s filesystem to disk in one syncfs(2), on the libuv
/// pool (Linux; elsewhere it rejects and callers fsync each file).
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn sync_filesystem_async(dir: String) -> AsyncTask<SyncFilesystemTask> {
    AsyncTask::new(SyncFilesystemTask {
        dir: PathBuf::from(dir),
    })
}

/// Panics on purpose, so the tests can show a Rust panic surfaces as a JS error.
#[napi(catch_unwind)]
pub fn debug_panic(message: String) -> Result<()> {
    guard(|| panic!("{message}"))
}
