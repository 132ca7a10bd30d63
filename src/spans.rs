//! Spans across the boundary: filtered reads (each span once, at its last write) handed
//! over as columns, counts per kind, compaction.

use std::collections::HashSet;
use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_core::spans::{
    read_spans as core_read_spans, span_counts as core_span_counts, SpanFilter,
};

use crate::error::{guard, js, Result};
use crate::samples::{to_js_with_dicts, NativeSampleBatch};
use crate::{damaged, skipped, NativeCompactReport, NativeSkippedFile};

#[napi(object)]
pub struct NativeSpanFilter {
    pub kinds: Option<Vec<String>>,
    pub step_min: Option<f64>,
    pub step_max: Option<f64>,
    pub span_ids: Option<Vec<String>>,
    pub root_ids: Option<Vec<String>>,
    pub parent_ids: Option<Vec<String>>,
    /// `[key, value]` pairs, all required.
    pub labels: Option<Vec<Vec<String>>>,
    pub statuses: Option<Vec<String>>,
    pub limit: Option<u32>,
}

#[napi(object)]
pub struct NativeSpanRead {
    /// The matching spans, earliest start first, as columns.
    pub batch: NativeSampleBatch,
    /// Distinct spans in the run.
    pub total: f64,
    /// Spans matching the filter before `limit`.
    pub matched: f64,
}

#[napi(object)]
pub struct NativeSpanKindCount {
    pub kind: String,
    pub spans: f64,
    pub open: f64,
    pub error: f64,
}

fn set(v: Option<Vec<String>>) -> Option<HashSet<String>> {
    v.map(|v| v.into_iter().collect())
}

/// A run directory's spans matching `filter` (this directory only; the reader merges ranks).
#[napi(catch_unwind)]
pub fn read_spans(run_dir: String, filter: NativeSpanFilter) -> Result<NativeSpanRead> {
    let f = SpanFilter {
        kinds: filter.kinds.unwrap_or_default(),
        step_min: filter.step_min.map(|x| x.ceil() as i64),
        step_max: filter.step_max.map(|x| x.floor() as i64),
        span_ids: set(filter.span_ids),
        root_ids: set(filter.root_ids),
        parent_ids: set(filter.parent_ids),
        labels: filter
            .labels
            .unwrap_or_default()
            .into_iter()
            .filter(|kv| kv.len() == 2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect(),
        statuses: filter.statuses.unwrap_or_default(),
        limit: filter.limit.map(|n| n as usize),
    };
    // text that repeats across a run's spans crosses once per distinct value
    const DICTS: &[&str] = &[
        "parent_id",
        "root_id",
        "kind",
        "name",
        "status",
        "error",
        "sample_id",
        "group_id",
        "labels",
        "key",
    ];
    guard(|| {
        let read = core_read_spans(&PathBuf::from(run_dir), &f).map_err(js)?;
        Ok(NativeSpanRead {
            batch: to_js_with_dicts(&read.batch, DICTS)?,
            total: read.total as f64,
            matched: read.matched as f64,
        })
    })
}

/// Spans per kind in a run directory, with how many are open and how many ended in error.
#[napi(catch_unwind)]
pub fn span_counts(run_dir: String) -> Result<Vec<NativeSpanKindCount>> {
    let counts = guard(|| core_span_counts(&PathBuf::from(run_dir)).map_err(js))?;
    Ok(counts
        .into_iter()
        .map(|c| NativeSpanKindCount {
            kind: c.kind,
            spans: c.spans as f64,
            open: c.open as f64,
            error: c.error as f64,
        })
        .collect())
}

#[napi(object)]
pub struct NativeSpanFiles {
    /// The span files read (compacted file, then live parts), without captured trials'.
    pub files: Vec<String>,
    /// The finished captures' span files, read after `files` (by capture key).
    pub captures: Vec<String>,
    /// Files in spans/ the recorder did not write (or copies): skipped.
    pub foreign: Vec<NativeSkippedFile>,
    /// Parts and capture span files that cannot be read: reading the spans fails on them.
    pub damaged: Vec<NativeSkippedFile>,
}

/// The files holding a run directory's spans, and the files skipped as foreign or damaged.
#[napi(catch_unwind)]
pub fn span_files(run_dir: String) -> Result<NativeSpanFiles> {
    let dir = PathBuf::from(run_dir);
    let s = guard(|| rlprobe_core::spans::read::open_sources(&dir).map_err(js))?;
    let c = guard(|| rlprobe_core::spans::capture_span_files(&dir).map_err(js))?;
    Ok(NativeSpanFiles {
        files: s
            .sources
            .iter()
            .map(|f| f.file.path.display().to_string())
            .collect(),
        captures: c.files.iter().map(|p| p.display().to_string()).collect(),
        foreign: skipped(&s.foreign),
        damaged: damaged(&s.damaged)
            .into_iter()
            .chain(damaged(&c.damaged))
            .collect(),
    })
}

/// Merges a run's span parts into `spans/spans.parquet`, each span once (atomic, idempotent).
#[napi(catch_unwind)]
pub fn compact_spans(run_dir: String) -> Result<NativeCompactReport> {
    guard(|| {
        rlprobe_core::spans::compact_spans(&PathBuf::from(run_dir))
            .map(Into::into)
            .map_err(js)
    })
}

/// Replaces the span file of one captured trial, `trials/<key>/spans.parquet`, with the
/// spans in `encoded` (the recorder's wire form). Returns how many it holds.
#[napi(catch_unwind)]
pub fn write_capture_spans(run_dir: String, key: String, encoded: Uint8Array) -> Result<u32> {
    guard(|| {
        rlprobe_core::spans::write_capture_spans(&PathBuf::from(run_dir), &key, &encoded)
            .map(|n| n as u32)
            .map_err(js)
    })
}
