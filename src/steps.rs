//! Steps across the boundary: the step table as typed-array columns, the files that hold
//! it, its columns from the footers, and compaction.

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rlprobe_core::schema::{ColumnKind, FIXED_STEP_COLUMNS, STEP_FIELDS};
use rlprobe_core::steps_files::open_step_sources;
use rlprobe_core::table::ColumnValues;

use crate::error::{guard, js, Result};
use crate::typed_arrays::{accounted_f64, accounted_i32, accounted_u8};
use crate::{damaged, skipped, NativeCompactReport, NativeSkippedFile};

/// Merges a run's step parts into steps.parquet (atomic, idempotent, crash-safe).
#[napi(catch_unwind)]
pub fn compact_steps(run_dir: String) -> Result<NativeCompactReport> {
    guard(|| {
        rlprobe_core::compact_steps(&PathBuf::from(run_dir))
            .map(Into::into)
            .map_err(js)
    })
}

#[napi(object)]
pub struct NativeColumn {
    pub name: String,
    /// "f64", "i64" or "list_f64"
    pub kind: String,
    /// One value per row (null rows hold NaN); for lists, the flattened items.
    pub values: Float64Array,
    /// 1 where the row has a value; absent when every row has one.
    pub valid: Option<Uint8Array>,
    /// For lists: rows + 1 offsets into `values`.
    pub offsets: Option<Int32Array>,
}

#[napi(object)]
pub struct NativeStepTable {
    pub rows: u32,
    pub columns: Vec<NativeColumn>,
}

/// Reads a run's steps (each exactly once, whatever the layout), optionally only `columns`.
#[napi(catch_unwind)]
pub fn read_steps(
    env: Env,
    run_dir: String,
    columns: Option<Vec<String>>,
) -> Result<NativeStepTable> {
    guard(|| {
        steps_to_js(
            &env,
            rlprobe_core::read_steps(&PathBuf::from(run_dir), columns.as_deref()).map_err(js)?,
        )
    })
}

#[napi(object)]
pub struct NativeStepsTail {
    /// The row of the whole table that `table`'s first row is (at most the row asked for).
    pub first_row: u32,
    /// Rows of the whole table as this read listed them.
    pub total_rows: u32,
    pub table: NativeStepTable,
}

/// Reads the steps from the row group holding row `fromRow` to the end (a live reader's
/// new rows), optionally only `columns`.
#[napi(catch_unwind)]
pub fn read_steps_from(
    env: Env,
    run_dir: String,
    from_row: u32,
    columns: Option<Vec<String>>,
) -> Result<NativeStepsTail> {
    guard(|| {
        let tail = rlprobe_core::read_steps_from(
            &PathBuf::from(run_dir),
            from_row as usize,
            columns.as_deref(),
        )
        .map_err(js)?;
        Ok(NativeStepsTail {
            first_row: tail.first_row as u32,
            total_rows: tail.total_rows as u32,
            table: steps_to_js(&env, tail.table)?,
        })
    })
}

fn steps_to_js(env: &Env, table: rlprobe_core::Table) -> Result<NativeStepTable> {
    let rows = table.rows as u32;
    let mut out = Vec::with_capacity(table.columns.len());
    for (name, col) in table.names.into_iter().zip(table.columns) {
        let kind = col.kind().as_str().to_string();
        let valid = match col.null_count() {
            0 => None,
            _ => Some(accounted_u8(env, col.valid.iter().map(u8::from).collect())?),
        };
        let (values, offsets) = match col.values {
            ColumnValues::F64(v) => (v, None),
            // null rows read as NaN, like float columns
            ColumnValues::I64(v) => (
                v.into_iter()
                    .zip(col.valid.iter())
                    .map(|(x, ok)| if ok { x as f64 } else { f64::NAN })
                    .collect(),
                None,
            ),
            ColumnValues::ListF64 { offsets, values } => {
                (values, Some(accounted_i32(env, offsets)?))
            }
        };
        out.push(NativeColumn {
            name,
            kind,
            values: accounted_f64(env, values)?,
            valid,
            offsets,
        });
    }
    Ok(NativeStepTable { rows, columns: out })
}

#[napi(object)]
pub struct NativeStepFile {
    pub path: String,
    pub rows: f64,
    pub bytes: f64,
    pub compacted: bool,
}

#[napi(object)]
pub struct NativeStepFiles {
    pub files: Vec<NativeStepFile>,
    /// Parts already inside steps.parquet but still on disk (an interrupted compaction).
    pub absorbed_leftovers: u32,
    /// Files in steps/ the recorder did not write (or copies): skipped.
    pub foreign: Vec<NativeSkippedFile>,
    /// Parts that cannot be read: reading the steps fails on them.
    pub damaged: Vec<NativeSkippedFile>,
}

/// The files that hold a run's steps, with row counts from their (verified) footers, and
/// the files skipped as foreign or damaged.
#[napi(catch_unwind)]
pub fn step_files(run_dir: String) -> Result<NativeStepFiles> {
    guard(|| step_files_of(open_step_sources(&PathBuf::from(run_dir)).map_err(js)?))
}

fn step_files_of(sources: rlprobe_core::steps_files::TableSources) -> Result<NativeStepFiles> {
    let files = sources
        .sources
        .iter()
        .map(|s| NativeStepFile {
            path: s.file.path.display().to_string(),
            rows: s.file.rows() as f64,
            bytes: s.file.len as f64,
            compacted: s.compacted,
        })
        .collect();
    Ok(NativeStepFiles {
        files,
        absorbed_leftovers: sources.absorbed_leftovers.len() as u32,
        foreign: skipped(&sources.foreign),
        damaged: damaged(&sources.damaged),
    })
}

/// The run's step columns (union over its files, from the footers alone), in table order.
#[napi(catch_unwind)]
pub fn step_columns(run_dir: String) -> Result<Vec<NativeFieldSpec>> {
    let schema =
        guard(|| rlprobe_core::steps_files::step_schema(&PathBuf::from(run_dir)).map_err(js))?;
    Ok(schema
        .fields()
        .iter()
        .filter_map(|f| {
            rlprobe_core::table::kind_of_arrow(f.data_type()).map(|k| NativeFieldSpec {
                name: f.name().clone(),
                kind: k.as_str().into(),
            })
        })
        .collect())
}

#[napi(object)]
pub struct NativeFieldSpec {
    pub name: String,
    pub kind: String,
}

/// The step table's fixed and known columns, in format order (the TS types are checked
/// against this list in the tests).
#[napi(catch_unwind)]
pub fn step_field_specs() -> Result<Vec<NativeFieldSpec>> {
    Ok(FIXED_STEP_COLUMNS
        .iter()
        .chain(STEP_FIELDS)
        .map(|(n, k): &(&str, ColumnKind)| NativeFieldSpec {
            name: n.to_string(),
            kind: k.as_str().into(),
        })
        .collect())
}
