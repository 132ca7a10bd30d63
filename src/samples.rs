//! Samples across the boundary: stratified selection (sync, or on the libuv pool for a
//! large batch), compaction, and a streaming cursor that hands JS one bounded batch of
//! columns at a time.

use std::path::PathBuf;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type};
use napi::bindgen_prelude::*;
use napi::Task;
use napi_derive::napi;
use rlprobe_core::samples::select::call_seed;
use rlprobe_core::samples::{
    select_samples, ColumnValues, PrefetchCursor, SampleCursor, SampleFilter, SamplingConfig,
};

use crate::error::{guard, js, settle, Result};
use crate::typed_arrays::{accounted_f64, accounted_u32, accounted_u8};
use crate::{damaged, skipped, NativeCompactReport, NativeSkippedFile};

#[napi(object)]
pub struct NativeSampling {
    pub top_k: u32,
    pub bottom_k: u32,
    pub random_k: u32,
    /// The recorder's seed; mixed with `call` into this call's draw.
    pub seed: f64,
    pub call: f64,
}

fn run_selection(rewards: &[f64], s: &NativeSampling) -> Vec<u32> {
    let cfg = SamplingConfig {
        top_k: s.top_k as usize,
        bottom_k: s.bottom_k as usize,
        random_k: s.random_k as usize,
    };
    let seed = call_seed(s.seed as u64, s.call as u64);
    let mut out = Vec::new();
    for (i, r) in select_samples(rewards, cfg, seed) {
        out.push(i);
        out.push(r.code() as u32);
    }
    out
}

/// Picks the samples to keep from their rewards (NaN = missing): `[index, reason, …]`
/// pairs in index order, reason codes 1 top_k, 2 bottom_k, 3 random, 4 all.
#[napi(catch_unwind)]
pub fn select_samples_sync(rewards: Float64Array, sampling: NativeSampling) -> Result<Uint32Array> {
    guard(|| Ok(Uint32Array::new(run_selection(&rewards, &sampling))))
}

pub struct SelectTask {
    rewards: Vec<f64>,
    sampling: NativeSampling,
}

impl Task for SelectTask {
    type Output = Result<Vec<u32>>;
    type JsValue = Uint32Array;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(guard(|| Ok(run_selection(&self.rewards, &self.sampling))))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        settle(env, output).map(Uint32Array::new)
    }
}

/// `selectSamplesSync` on the libuv thread pool, for batches large enough that the
/// selection itself would show in the training loop. Same seed, same answer.
#[napi(ts_return_type = "Promise<Uint32Array>")]
pub fn select_samples_async(
    rewards: Float64Array,
    sampling: NativeSampling,
) -> AsyncTask<SelectTask> {
    AsyncTask::new(SelectTask {
        rewards: rewards.to_vec(),
        sampling,
    })
}

/// Merges a run's sample parts into 4096-row shards (atomic, idempotent, crash-safe).
#[napi(catch_unwind)]
pub fn compact_samples(run_dir: String) -> Result<NativeCompactReport> {
    guard(|| {
        rlprobe_core::samples::compact_samples(&PathBuf::from(run_dir))
            .map(Into::into)
            .map_err(js)
    })
}

#[napi(object)]
pub struct NativeSampleFile {
    pub path: String,
    pub rows: f64,
    pub bytes: f64,
    pub shard: bool,
}

#[napi(object)]
pub struct NativeSampleFiles {
    pub files: Vec<NativeSampleFile>,
    /// Parts a finished compaction holds, still on disk.
    pub absorbed_leftovers: u32,
    /// Shards of a compaction that never finished (ignored by readers).
    pub incomplete_shards: u32,
    /// Files in samples/ the recorder did not write (or copies): skipped.
    pub foreign: Vec<NativeSkippedFile>,
    /// Parts that cannot be read: reading the samples fails on them.
    pub damaged: Vec<NativeSkippedFile>,
}

/// The files holding a run directory's samples (not its rank sub-directories), and the
/// files skipped as foreign or damaged.
#[napi(catch_unwind)]
pub fn sample_files(run_dir: String) -> Result<NativeSampleFiles> {
    let s = guard(|| {
        rlprobe_core::samples::files::open_sample_sources(&PathBuf::from(run_dir)).map_err(js)
    })?;
    let files = s
        .files
        .iter()
        .map(|f| NativeSampleFile {
            path: f.file.path.display().to_string(),
            rows: f.file.rows() as f64,
            bytes: f.file.len as f64,
            shard: f.shard,
        })
        .collect();
    Ok(NativeSampleFiles {
        files,
        absorbed_leftovers: s.absorbed_leftovers.len() as u32,
        incomplete_shards: s.incomplete_shards.len() as u32,
        foreign: skipped(&s.foreign),
        damaged: damaged(&s.damaged),
    })
}

#[napi(object)]
pub struct NativeSampleFilter {
    pub step_min: Option<f64>,
    pub step_max: Option<f64>,
    /// Only these steps (read in one pass).
    pub steps: Option<Vec<f64>>,
    pub reasons: Option<Vec<String>>,
    pub group: Option<String>,
    pub reward_min: Option<f64>,
    pub reward_max: Option<f64>,
    pub truncated: Option<bool>,
    /// Case-insensitive substring of the prompt or the completion.
    pub text: Option<String>,
    pub sample_id: Option<String>,
}

#[napi(object)]
pub struct NativeSampleColumn {
    pub name: String,
    /// "int", "float", "bool", "text", "dict", "int_list" or "float_list"
    pub kind: String,
    /// Numbers (int, float, bool as 0/1; null rows NaN), or a list column's items.
    pub values: Option<Float64Array>,
    /// 1 where the row has a value; absent when every row has one.
    pub valid: Option<Uint8Array>,
    /// For lists: rows + 1 offsets into `values`.
    pub offsets: Option<Int32Array>,
    /// For text: one entry per row (null where the row has none). For dict: the distinct
    /// values, which `codes` index.
    pub texts: Option<Vec<Option<String>>>,
    /// For dict: per row, an index into `texts` (u32::MAX for null). Repeated text (a
    /// span's kind, its root id, its labels) crosses the boundary once per distinct value.
    pub codes: Option<Uint32Array>,
}

#[napi(object)]
pub struct NativeSampleBatch {
    pub rows: u32,
    pub columns: Vec<NativeSampleColumn>,
}

fn filter_of(filter: NativeSampleFilter) -> SampleFilter {
    let f = SampleFilter {
        step_min: filter.step_min.map(|x| x.ceil() as i64),
        step_max: filter.step_max.map(|x| x.floor() as i64),
        reasons: filter.reasons.unwrap_or_default(),
        group: filter.group,
        reward_min: filter.reward_min,
        reward_max: filter.reward_max,
        truncated: filter.truncated,
        text: filter.text.filter(|t| !t.is_empty()),
        sample_id: filter.sample_id,
        steps: None,
    };
    match filter.steps {
        Some(steps) => f.with_steps(steps.into_iter().map(|s| s as i64)),
        None => f,
    }
}

/// A streaming read of one run directory's samples, filtered in Rust on threads of their
/// own a couple of batches ahead, while this thread turns batches into JS values.
#[napi]
pub struct NativeSampleCursor {
    cursor: PrefetchCursor,
}

#[napi]
impl NativeSampleCursor {
    #[napi(constructor, catch_unwind)]
    pub fn new(
        run_dir: String,
        filter: NativeSampleFilter,
        columns: Option<Vec<String>>,
        batch_rows: u32,
    ) -> Result<Self> {
        guard(|| Self::open(run_dir, filter, columns, batch_rows))
    }

    fn open(
        run_dir: String,
        filter: NativeSampleFilter,
        columns: Option<Vec<String>>,
        batch_rows: u32,
    ) -> Result<Self> {
        let f = filter_of(filter);
        let cursor = SampleCursor::open(&PathBuf::from(run_dir), f, columns, batch_rows as usize)
            .and_then(PrefetchCursor::start)
            .map_err(js)?;
        Ok(NativeSampleCursor { cursor })
    }

    /// The next batch of matching samples, or null when done.
    #[napi(catch_unwind)]
    pub fn next(&mut self) -> Result<Option<NativeSampleBatch>> {
        guard(|| match self.cursor.next_batch().map_err(js)? {
            None => Ok(None),
            Some(b) => to_js(&b).map(Some),
        })
    }

    /// Stops the read now (a loop left early): its threads end and let go of the files
    /// instead of waiting for the collector. `next` then returns null.
    #[napi]
    pub fn close(&mut self) {
        self.cursor.close();
    }

    /// Row groups skipped unread by their step statistics so far.
    #[napi(getter)]
    pub fn row_groups_skipped(&self) -> f64 {
        self.cursor.row_groups_skipped() as f64
    }
}

fn validity(a: &dyn Array) -> Option<Uint8Array> {
    (a.null_count() > 0)
        .then(|| Uint8Array::new((0..a.len()).map(|i| a.is_valid(i) as u8).collect()))
}

/// A batch as JS columns (numbers as Float64Array with NaN for null, texts as strings);
/// spans are handed over in the same form.
pub(crate) fn to_js(batch: &RecordBatch) -> Result<NativeSampleBatch> {
    to_js_with_dicts(batch, &[])
}

/// A text column as distinct values and per-row codes.
fn dict_column(s: &arrow::array::StringArray) -> (Vec<Option<String>>, Vec<u32>) {
    let mut index: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut values: Vec<Option<String>> = Vec::new();
    let codes = (0..s.len())
        .map(|i| {
            if !s.is_valid(i) {
                return u32::MAX;
            }
            let v = s.value(i);
            *index.entry(v).or_insert_with(|| {
                values.push(Some(v.to_string()));
                (values.len() - 1) as u32
            })
        })
        .collect();
    (values, codes)
}

/// `to_js`, with the text columns named in `dicts` sent as dictionaries.
pub(crate) fn to_js_with_dicts(batch: &RecordBatch, dicts: &[&str]) -> Result<NativeSampleBatch> {
    let mut columns = Vec::new();
    for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
        let a = array.as_ref();
        let dt = a.data_type();
        let col = |kind: &str| NativeSampleColumn {
            name: field.name().clone(),
            kind: kind.into(),
            values: None,
            valid: validity(a),
            offsets: None,
            texts: None,
            codes: None,
        };
        let numbers = |a: &dyn Array| -> Result<Vec<f64>> {
            let cast = arrow::compute::cast(a, &DataType::Float64).map_err(|e| {
                js(rlprobe_core::Error::arrow(
                    "handing a number column to JS",
                    e,
                ))
            })?;
            let f = cast.as_primitive::<Float64Type>();
            Ok((0..f.len())
                .map(|i| if f.is_valid(i) { f.value(i) } else { f64::NAN })
                .collect())
        };
        let out = match dt {
            // a column that was never set (pyarrow writes Arrow null): absent
            DataType::Null => continue,
            _ if dt.is_integer() || dt.is_floating() || dt == &DataType::Boolean => {
                let kind = if dt == &DataType::Boolean {
                    "bool"
                } else if dt.is_integer() {
                    "int"
                } else {
                    "float"
                };
                NativeSampleColumn {
                    values: Some(Float64Array::new(numbers(a)?)),
                    ..col(kind)
                }
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let cast = arrow::compute::cast(a, &DataType::Utf8).map_err(|e| {
                    js(rlprobe_core::Error::arrow("handing a text column to JS", e))
                })?;
                let s = cast.as_string::<i32>();
                if dicts.contains(&field.name().as_str()) {
                    let (values, codes) = dict_column(s);
                    NativeSampleColumn {
                        texts: Some(values),
                        codes: Some(Uint32Array::new(codes)),
                        valid: None,
                        ..col("dict")
                    }
                } else {
                    let texts = (0..s.len())
                        .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
                        .collect();
                    NativeSampleColumn {
                        texts: Some(texts),
                        ..col("text")
                    }
                }
            }
            DataType::List(inner) | DataType::LargeList(inner)
                if inner.data_type().is_integer()
                    || inner.data_type().is_floating()
                    || inner.data_type() == &DataType::Null =>
            {
                let kind = if inner.data_type().is_floating() {
                    "float_list"
                } else {
                    "int_list"
                };
                let cast = arrow::compute::cast(
                    a,
                    &DataType::List(std::sync::Arc::new(arrow::datatypes::Field::new(
                        "item",
                        DataType::Float64,
                        true,
                    ))),
                )
                .map_err(|e| js(rlprobe_core::Error::arrow("handing a list column to JS", e)))?;
                let l = cast.as_list::<i32>();
                let offsets: Vec<i32> = l.value_offsets().to_vec();
                let base = offsets[0];
                let values = numbers(l.values().as_ref())?;
                let end = *offsets.last().unwrap() as usize;
                NativeSampleColumn {
                    values: Some(Float64Array::new(values[base as usize..end].to_vec())),
                    offsets: Some(Int32Array::new(offsets.iter().map(|o| o - base).collect())),
                    ..col(kind)
                }
            }
            // unknown column types (structs, binaries…) are ignored, as the format says
            _ => continue,
        };
        columns.push(out);
    }
    Ok(NativeSampleBatch {
        rows: batch.num_rows() as u32,
        columns,
    })
}

#[napi(object)]
pub struct NativeRankDir {
    pub dir: String,
    pub rank: u32,
}

#[napi(object)]
pub struct NativeSampleTableColumn {
    pub name: String,
    /// "int", "float", "bool", "text", "int_list" or "float_list"
    pub kind: String,
    /// Numbers (bool as 0/1, NaN where null), or a list column's items.
    pub values: Option<Float64Array>,
    /// A text column's UTF-8 bytes.
    pub bytes: Option<Uint8Array>,
    /// For text and lists: rows + 1 offsets into `bytes` or `values`.
    pub offsets: Option<Uint32Array>,
    /// 1 where the row has a value; absent when every row has one.
    pub valid: Option<Uint8Array>,
}

#[napi(object)]
pub struct NativeSampleTable {
    pub rows: u32,
    pub columns: Vec<NativeSampleTableColumn>,
}

/// The matching samples of each directory in turn (its rank filled in where a row has
/// none) as one table of columns: buffers, not a value per cell.
#[napi(catch_unwind)]
pub fn read_sample_table(
    env: Env,
    dirs: Vec<NativeRankDir>,
    filter: NativeSampleFilter,
    columns: Option<Vec<String>>,
) -> Result<NativeSampleTable> {
    let dirs: Vec<(PathBuf, i64)> = dirs
        .into_iter()
        .map(|d| (PathBuf::from(d.dir), i64::from(d.rank)))
        .collect();
    let filter = filter_of(filter);
    let table = guard(|| {
        rlprobe_core::samples::read_sample_table(&dirs, &filter, columns.as_deref()).map_err(js)
    })?;
    let mut columns = Vec::with_capacity(table.columns.len());
    for c in table.columns {
        let valid = match c.nulls {
            0 => None,
            _ => Some(accounted_u8(&env, c.valid)?),
        };
        let (values, bytes, offsets) = match c.values {
            ColumnValues::Numbers(v) => (Some(accounted_f64(&env, v)?), None, None),
            ColumnValues::Text { bytes, offsets } => (
                None,
                Some(accounted_u8(&env, bytes)?),
                Some(accounted_u32(&env, offsets)?),
            ),
            ColumnValues::List { items, offsets } => (
                Some(accounted_f64(&env, items)?),
                None,
                Some(accounted_u32(&env, offsets)?),
            ),
        };
        columns.push(NativeSampleTableColumn {
            name: c.name,
            kind: c.kind.as_str().into(),
            values,
            bytes,
            offsets,
            valid,
        });
    }
    Ok(NativeSampleTable {
        rows: table.rows as u32,
        columns,
    })
}
