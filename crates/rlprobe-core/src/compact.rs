//! Compaction: merge a run's step part files into one `steps.parquet`, atomically.
//!
//! Crash safety, step by step: the merged table is published under a temporary name and
//! renamed into place (a crash before the rename leaves the old layout untouched); its
//! footer lists the parts it absorbed, so a crash after the rename but before the parts
//! are deleted leaves a mix that readers resolve by skipping those parts; the deletion is
//! finished by the next compaction. A file lock keeps two compactions apart.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::file::metadata::KeyValue;

use crate::atomic::{publish, remove_stray_temps, sync_dir};
use crate::error::{Error, IoContext, Result};
use crate::layout::{
    list_stream_dir, COMPACT_LOCK_FILE, META_COMPACTED_IDS, META_COMPACTED_PARTS, META_NEXT_PART,
    STEPS_FILE, STEPS_PARTS_DIR,
};
use crate::parquet_io::{arrow_writer, ParquetFile};
use crate::props::Codec;
use crate::schema::column_order_key;
use crate::steps_files::{open_step_sources, PartRef};
use crate::stream_files::name_list_json;
use crate::table::{kind_of_arrow, unify_kinds, ColumnBuf};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CompactReport {
    /// Part files merged into `steps.parquet` by this call.
    pub parts_merged: usize,
    /// Parts an interrupted compaction had already absorbed, deleted now.
    pub leftovers_removed: usize,
    /// Rows in `steps.parquet` afterwards (0 when there is none).
    pub rows: u64,
    /// Size of `steps.parquet` afterwards (for samples: of the shards this call wrote).
    pub bytes: u64,
    /// When steps and samples are compacted together: sample parts merged, and rows in
    /// the shards written.
    pub sample_parts_merged: usize,
    pub sample_rows: u64,
    /// Likewise for spans: span parts merged, and spans in `spans/spans.parquet` afterwards.
    pub span_parts_merged: usize,
    pub span_rows: u64,
}

/// Holds the compaction lock of a run directory until dropped.
pub struct CompactLock {
    _file: File,
}

pub fn lock_run(run_dir: &Path) -> Result<CompactLock> {
    let path = run_dir.join(COMPACT_LOCK_FILE);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .at("opening the compaction lock", &path)?;
    f.lock().at("taking the compaction lock", &path)?;
    Ok(CompactLock { _file: f })
}

/// The union of the sources' columns: types unified (ints widen to floats), canonical order.
/// A column of a type we do not read (text, structs… written by another tool) is carried
/// through unchanged, so compaction never loses data; if its type differs between files
/// the compaction refuses (the parts stay) rather than guess.
pub fn union_schema(schemas: &[SchemaRef]) -> Result<SchemaRef> {
    let mut types: BTreeMap<String, DataType> = BTreeMap::new();
    for schema in schemas {
        for f in schema.fields() {
            let t = f.data_type();
            let merged = match types.get(f.name()) {
                None => t.clone(),
                Some(have) if have == t || t == &DataType::Null => have.clone(),
                Some(DataType::Null) => t.clone(),
                Some(have) => match (kind_of_arrow(have), kind_of_arrow(t)) {
                    (Some(a), Some(b)) => ColumnBuf::data_type(
                        unify_kinds(a, b).ok_or_else(|| incompatible(f.name(), have, t))?,
                    ),
                    _ => return Err(incompatible(f.name(), have, t)),
                },
            };
            types.insert(f.name().clone(), merged);
        }
    }
    let mut fields: Vec<Field> = types
        .into_iter()
        .filter(|(_, t)| t != &DataType::Null)
        .map(|(n, t)| {
            // our own kinds are written with our canonical types (int64, float64, list<float64>)
            let t = kind_of_arrow(&t).map(ColumnBuf::data_type).unwrap_or(t);
            Field::new(n, t, true)
        })
        .collect();
    fields.sort_by(|a, b| column_order_key(a.name()).cmp(&column_order_key(b.name())));
    Ok(Arc::new(Schema::new(fields)))
}

fn incompatible(name: &str, a: &DataType, b: &DataType) -> Error {
    let detail = format!("is {a} in one file and {b} in another (a file the recorder did not write? move it out of the run directory)");
    Error::SchemaConflict {
        column: name.to_string(),
        detail,
        path: None,
        source: None,
    }
}

/// Reshapes a batch of the file at `path` to `schema`: missing columns become nulls,
/// types are cast (a value that does not cast fails, naming the column and the file).
pub fn conform(batch: &RecordBatch, schema: &SchemaRef, path: &Path) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(a) if a.data_type() == f.data_type() => Ok(a.clone()),
            Some(a) if a.data_type() == &DataType::Null => {
                Ok(new_null_array(f.data_type(), batch.num_rows()))
            }
            Some(a) => arrow::compute::cast(a, f.data_type()).map_err(|e| Error::SchemaConflict {
                column: f.name().clone(),
                detail: format!(
                    "cannot be read as {} (it is {})",
                    f.data_type(),
                    a.data_type()
                ),
                path: Some(path.to_path_buf()),
                source: Some(Arc::new(e)),
            }),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<_>>()?;
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| Error::arrow("conforming a batch to the union schema", e))
}

/// Merges the run's step parts into `steps.parquet`. Idempotent: a compact run is left as
/// it is; a live or crashed one ends compact. Safe to run while a recorder still writes
/// parts (they are picked up by the next compaction).
pub fn compact_steps(run_dir: &Path) -> Result<CompactReport> {
    let _lock = lock_run(run_dir)?;
    remove_stray_temps(run_dir, ".steps")?;
    let sources = open_step_sources(run_dir)?;
    // a damaged part is neither merged nor deleted: the error names it, to be moved aside
    sources.require_readable()?;
    let mut report = CompactReport::default();
    let (parts, absorbed) = sources.parts_to_merge();

    if !parts.is_empty() {
        let schemas: Vec<SchemaRef> = sources.sources.iter().map(|s| s.file.schema()).collect();
        let schema = union_schema(&schemas)?;
        let metadata = absorbed_metadata(&absorbed, sources.next_part);
        publish(run_dir, STEPS_FILE, |file, tmp| {
            let mut w = arrow_writer(file, tmp, schema.clone(), Codec::default(), metadata)?;
            for s in &sources.sources {
                s.file.for_each_batch(65_536, |batch| {
                    w.write(&conform(&batch, &schema, &s.file.path)?)
                })?;
            }
            let file = w.into_inner()?;
            Ok(((), file))
        })?;
        report.parts_merged = parts.len();
    }

    // Delete what steps.parquet now holds: this call's parts and an earlier call's leftovers.
    let parts_dir = run_dir.join(STEPS_PARTS_DIR);
    remove_absorbed_parts(&parts_dir, absorbed.iter().map(|p| &p.path), true)?;
    report.leftovers_removed = sources.absorbed_leftovers.len();
    let compacted = run_dir.join(STEPS_FILE);
    if let Ok(meta) = fs::metadata(&compacted) {
        report.bytes = meta.len();
        report.rows = ParquetFile::open(&compacted)?.rows();
    }
    Ok(report)
}

/// The footer of a compacted table: the part files it absorbed (this compaction's parts
/// and an earlier one's leftovers), their file ids, and the next part index a writer may use.
pub fn absorbed_metadata(absorbed: &[PartRef], next_part: u64) -> Vec<KeyValue> {
    let names: Vec<String> = absorbed
        .iter()
        .map(|p| p.path.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    let ids: Vec<String> = absorbed
        .iter()
        .map(|p| p.file_id.clone().unwrap_or_default())
        .collect();
    vec![
        KeyValue::new(META_COMPACTED_PARTS.to_string(), name_list_json(&names)),
        KeyValue::new(META_COMPACTED_IDS.to_string(), name_list_json(&ids)),
        KeyValue::new(META_NEXT_PART.to_string(), next_part.to_string()),
    ]
}

/// Deletes part files a published compacted table now holds (missing ones are fine) and
/// makes that durable; `remove_empty_dir` also removes `dir` once empty (steps/ goes, as
/// in the Python package; a live writer recreates it).
pub fn remove_absorbed_parts<'a>(
    dir: &Path,
    paths: impl Iterator<Item = &'a std::path::PathBuf>,
    remove_empty_dir: bool,
) -> Result<()> {
    for path in paths {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing the compacted part", path, e)),
        }
    }
    if dir.is_dir() {
        if remove_empty_dir {
            // the columns file describes the parts: with the last of them it goes too
            let left = list_stream_dir(dir)?;
            if left.parts.is_empty() && left.shards.is_empty() {
                // a killed writer's temporary of it would keep the directory forever
                remove_stray_temps(dir, ".columns")?;
                if let Some(columns) = left.columns {
                    match fs::remove_file(&columns) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io("removing", &columns, e)),
                    }
                }
            }
        }
        sync_dir(dir)?;
        if remove_empty_dir {
            let _ = fs::remove_dir(dir);
        }
    }
    Ok(())
}

/// The part index the next writer of `run_dir` should start at.
pub fn next_part_index(run_dir: &Path) -> Result<u64> {
    Ok(open_step_sources(run_dir)?.next_part)
}
