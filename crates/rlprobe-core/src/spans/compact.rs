//! Span compaction: the live parts (and an earlier `spans.parquet`) → one
//! `spans/spans.parquet` holding each span once, at its last write, sorted by step then
//! start time so a step query reads only the row groups that hold that step.
//!
//! Crash safety is the steps' (compact.rs): the new file is published atomically, its
//! footer lists the parts it absorbed, parts are deleted after; readers skip listed parts
//! that a crash left behind. Unlike steps, the table is held in memory while it is
//! deduplicated (two copies of it at the peak).

use std::path::Path;

use arrow::array::BooleanArray;
use arrow::compute::{lexsort_to_indices, SortColumn, SortOptions};

use super::batch::span_schema;
use super::read::{last_writes, load, open_sources, Captures, SpanFilter};
use crate::atomic::{publish, remove_stray_temps};
use crate::compact::{absorbed_metadata, lock_run, remove_absorbed_parts, CompactReport};
use crate::error::{Error, Result};
use crate::layout::{SPANS_DIR, SPANS_FILE};
use crate::parquet_io::{arrow_writer, ParquetFile};
use crate::props::Codec;

/// Merges the run's span parts into `spans/spans.parquet`. Idempotent; safe while a
/// recorder still writes parts (they go into the next compaction). In the report,
/// `parts_merged` and `rows` are the spans'.
pub fn compact_spans(run_dir: &Path) -> Result<CompactReport> {
    let dir = run_dir.join(SPANS_DIR);
    let mut report = CompactReport::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    let _lock = lock_run(run_dir)?;
    remove_stray_temps(&dir, ".spans")?;
    let sources = open_sources(run_dir)?;
    // a damaged part is neither merged nor deleted: the error names it, to be moved aside
    sources.require_readable()?;
    let (parts, absorbed) = sources.parts_to_merge();
    if !parts.is_empty() {
        // each stage drops the one before it: at most two copies of the table at a time
        let unique = {
            let batches = load(run_dir, &SpanFilter::default(), None, Captures::Exclude)?.batches;
            let keep = last_writes(&batches);
            let mut unique = Vec::with_capacity(batches.len());
            for (b, k) in batches.iter().zip(keep) {
                unique.push(
                    arrow::compute::filter_record_batch(b, &BooleanArray::from(k))
                        .map_err(|e| Error::arrow("keeping each span's last write", e))?,
                );
            }
            unique
        };
        let all = arrow::compute::concat_batches(&span_schema(), &unique)
            .map_err(|e| Error::arrow("joining the spans", e))?;
        drop(unique);
        let sort = |name: &str| SortColumn {
            values: all.column_by_name(name).unwrap().clone(),
            options: Some(SortOptions {
                descending: false,
                nulls_first: false,
            }),
        };
        let order = lexsort_to_indices(&[sort("step"), sort("start_time")], None)
            .map_err(|e| Error::arrow("sorting the spans", e))?;
        let sorted = arrow::compute::take_record_batch(&all, &order)
            .map_err(|e| Error::arrow("sorting the spans", e))?;
        drop(all);
        let metadata = absorbed_metadata(&absorbed, sources.next_part);
        // kinds, names, statuses and labels repeat: dictionary-encode the text columns
        let codec = Codec {
            dictionary: true,
            ..Codec::default()
        };
        let file_name = Path::new(SPANS_FILE)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        publish(&dir, &file_name, |file, tmp| {
            let mut w = arrow_writer(file, tmp, sorted.schema(), codec, metadata)?;
            w.write(&sorted)?;
            Ok(((), w.into_inner()?))
        })?;
        report.parts_merged = parts.len();
    }
    report.leftovers_removed = sources.absorbed_leftovers.len();
    remove_absorbed_parts(&dir, absorbed.iter().map(|p| &p.path), false)?;
    if let Ok(meta) = std::fs::metadata(run_dir.join(SPANS_FILE)) {
        report.bytes = meta.len();
        report.rows = ParquetFile::open(&run_dir.join(SPANS_FILE))?.rows();
    }
    Ok(report)
}

/// The part index the next writer of `run_dir` should start its span parts at.
pub fn next_span_part(run_dir: &Path) -> Result<u64> {
    Ok(open_sources(run_dir)?.next_part)
}
