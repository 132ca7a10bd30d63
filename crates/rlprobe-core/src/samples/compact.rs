//! Sample compaction: live part files → `samples/shard-*.parquet` of 4096 rows each.
//!
//! Streaming: parts are read batch by batch and shards written row group by row group,
//! with row groups also cut by size, so 100 KB completions never make a shard's worth
//! of rows sit in memory. Crash safety is in files.rs: the shards of one compaction share
//! an id and a count, and count only when all are published; parts are deleted after.
//! Existing shards are never rewritten; a later compaction appends new ones.

use std::fs;
use std::io;
use std::path::Path;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::file::metadata::KeyValue;

use super::files::{open_sample_sources, samples_dir, SampleFile};
use super::schema::union_sample_schema;
use crate::atomic::{publish, remove_stray_temps, sync_dir};
use crate::compact::{conform, lock_run, CompactReport};
use crate::error::{Error, IoContext, Result};
use crate::layout::{
    shard_name, META_COMPACTED_IDS, META_COMPACTED_PARTS, META_COMPACTION, META_COMPACTION_SHARDS,
    META_NEXT_PART, SAMPLE_SHARD_ROWS,
};
use crate::parquet_io::{arrow_writer, ParquetWriter};
use crate::props::Codec;
use crate::steps_files::PartRef;
use crate::stream_files::name_list_json;

/// A row group is closed early once its buffered pages pass this size (long texts).
const ROW_GROUP_BYTES: usize = 32 << 20;
/// Rows per read batch: bounded so 100 KB texts stay a few tens of MB at a time.
const READ_BATCH_ROWS: usize = 256;

/// Merges the run's sample parts into new shards. Idempotent; safe while a recorder still
/// writes parts (they go into the next compaction).
pub fn compact_samples(run_dir: &Path) -> Result<CompactReport> {
    let dir = samples_dir(run_dir);
    let mut report = CompactReport::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    let _lock = lock_run(run_dir)?;
    // only our own kind: a live writer may be mid-publish of a `.part-` temporary
    remove_stray_temps(&dir, ".shard-")?;
    // Shards of a compaction that died half-way: their rows are still in the parts.
    for path in open_sample_sources(run_dir)?.incomplete_shards {
        remove_if_present(&path)?;
    }
    let sources = open_sample_sources(run_dir)?;
    // a damaged part is neither merged nor deleted: the error names it, to be moved aside
    sources.require_readable()?;
    let parts: Vec<&SampleFile> = sources.files.iter().filter(|f| !f.shard).collect();
    let absorbed: Vec<PartRef> = parts
        .iter()
        .map(|p| PartRef {
            path: p.file.path.clone(),
            file_id: p.file.file_id(),
        })
        .chain(sources.absorbed_leftovers.iter().cloned())
        .collect();
    if !parts.is_empty() {
        let schemas: Vec<SchemaRef> = parts.iter().map(|p| p.file.schema()).collect();
        let total: u64 = parts.iter().map(|p| p.file.rows()).sum();
        let schema = union_sample_schema(&schemas)?;
        let names: Vec<String> = absorbed
            .iter()
            .map(|p| p.path.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        let ids: Vec<String> = absorbed
            .iter()
            .map(|p| p.file_id.clone().unwrap_or_default())
            .collect();
        let shards = total.div_ceil(SAMPLE_SHARD_ROWS as u64).max(1);
        let id = shard_name(sources.next_shard);
        let metadata = vec![
            KeyValue::new(META_COMPACTION.to_string(), id.clone()),
            KeyValue::new(META_COMPACTION_SHARDS.to_string(), shards.to_string()),
            KeyValue::new(META_COMPACTED_PARTS.to_string(), name_list_json(&names)),
            KeyValue::new(META_COMPACTED_IDS.to_string(), name_list_json(&ids)),
            KeyValue::new(META_NEXT_PART.to_string(), sources.next_part.to_string()),
        ];
        let mut stream = BatchStream::new(&parts, schema.clone());
        for s in 0..shards {
            let name = shard_name(sources.next_shard + s);
            let rows = publish(&dir, &name, |file, tmp| {
                let mut w = arrow_writer(
                    file,
                    tmp,
                    schema.clone(),
                    Codec::default(),
                    metadata.clone(),
                )?;
                let rows = fill_shard(&mut w, &mut stream, SAMPLE_SHARD_ROWS)?;
                // checked before the last shard completes the group: rows the footers did not
                // count (impossible for published files) must not end up in absorbed parts
                if s + 1 == shards && stream.next(1)?.is_some() {
                    return Err(Error::Internal {
                        what: format!(
                            "compacting {}: the sample parts hold more rows than their footers say",
                            dir.display()
                        ),
                    });
                }
                Ok((rows, w.into_inner()?))
            })?;
            report.rows += rows as u64;
            let shard = dir.join(&name);
            report.bytes += fs::metadata(&shard)
                .at("reading the metadata of", &shard)?
                .len();
        }
        report.parts_merged = parts.len();
    }
    for p in &absorbed {
        remove_if_present(&p.path)?;
    }
    report.leftovers_removed = sources.absorbed_leftovers.len();
    sync_dir(&dir)?;
    Ok(report)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("removing", path, e)),
        _ => Ok(()),
    }
}

fn fill_shard(
    w: &mut ParquetWriter<fs::File>,
    stream: &mut BatchStream,
    rows: usize,
) -> Result<usize> {
    let mut written = 0;
    while written < rows {
        let Some(batch) = stream.next(rows - written)? else {
            break;
        };
        written += batch.num_rows();
        w.write(&batch)?;
        if w.in_progress_size() >= ROW_GROUP_BYTES {
            w.flush()?;
        }
    }
    Ok(written)
}

/// The parts' rows as one stream of batches conformed to the union schema.
struct BatchStream<'a> {
    parts: std::slice::Iter<'a, &'a SampleFile>,
    reader: Option<(
        &'a SampleFile,
        parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    )>,
    pending: Option<RecordBatch>,
    schema: SchemaRef,
}

impl<'a> BatchStream<'a> {
    fn new(parts: &'a [&'a SampleFile], schema: SchemaRef) -> Self {
        BatchStream {
            parts: parts.iter(),
            reader: None,
            pending: None,
            schema,
        }
    }

    /// The next batch of at most `max` rows, or None at the end.
    fn next(&mut self, max: usize) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.pending.take() {
                if b.num_rows() > max {
                    self.pending = Some(b.slice(max, b.num_rows() - max));
                    return Ok(Some(b.slice(0, max)));
                }
                return Ok(Some(b));
            }
            if let Some((part, r)) = &mut self.reader {
                match r.next() {
                    Some(b) => {
                        let b = b.map_err(|e| part.file.damaged(e))?;
                        if b.num_rows() > 0 {
                            self.pending = Some(conform(&b, &self.schema, &part.file.path)?);
                        }
                        continue;
                    }
                    None => self.reader = None,
                }
            }
            let Some(part) = self.parts.next() else {
                return Ok(None);
            };
            let reader = part
                .file
                .reader(READ_BATCH_ROWS)?
                .build()
                .map_err(|e| part.file.damaged(e))?;
            self.reader = Some((part, reader));
        }
    }
}
