//! Streaming, filtered reads of a run directory's samples: one bounded batch at a time,
//! so scanning a million samples with 100 KB completions never holds more than a batch.
//! Row groups whose `step` statistics miss the requested range are skipped unread.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::statistics::Statistics;

use super::files::{open_sample_sources, SampleFile};
use crate::error::{Error, Result};
use crate::parquet_io::column_indices;

/// A filter column of `path` whose values cannot be read as the filter needs them.
fn unfilterable(path: &Path, name: &str, to: &DataType, e: arrow::error::ArrowError) -> Error {
    Error::SchemaConflict {
        column: name.to_string(),
        detail: format!("cannot be read as {to} to filter on it"),
        path: Some(path.to_path_buf()),
        source: Some(Arc::new(e)),
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleFilter {
    /// Inclusive step range.
    pub step_min: Option<i64>,
    pub step_max: Option<i64>,
    /// Only these steps (sorted, no duplicates: see `with_steps`); None: any.
    pub steps: Option<Vec<i64>>,
    /// Keep only these capture reasons (empty: any).
    pub reasons: Vec<String>,
    pub group: Option<String>,
    /// Inclusive `reward_total` range (a sample without a reward never matches one).
    pub reward_min: Option<f64>,
    pub reward_max: Option<f64>,
    pub truncated: Option<bool>,
    /// Case-insensitive substring of the prompt or the completion.
    pub text: Option<String>,
    pub sample_id: Option<String>,
}

impl SampleFilter {
    /// Restricts the filter to a set of steps (read in one pass instead of one per step).
    pub fn with_steps(mut self, steps: impl IntoIterator<Item = i64>) -> Self {
        let mut v: Vec<i64> = steps.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        self.steps = Some(v);
        self
    }

    fn filters_rows(&self) -> bool {
        !self.columns().is_empty()
    }

    fn columns(&self) -> Vec<&'static str> {
        let mut c = Vec::new();
        if self.step_min.is_some() || self.step_max.is_some() || self.steps.is_some() {
            c.push("step");
        }
        if !self.reasons.is_empty() {
            c.push("capture_reason");
        }
        if self.group.is_some() {
            c.push("group_id");
        }
        if self.reward_min.is_some() || self.reward_max.is_some() {
            c.push("reward_total");
        }
        if self.truncated.is_some() {
            c.push("truncated");
        }
        if self.text.is_some() {
            c.extend(["prompt_text", "completion_text"]);
        }
        if self.sample_id.is_some() {
            c.push("sample_id");
        }
        c
    }

    fn step_in(&self, s: i64) -> bool {
        self.step_min.is_none_or(|m| s >= m)
            && self.step_max.is_none_or(|m| s <= m)
            && self
                .steps
                .as_ref()
                .is_none_or(|set| set.binary_search(&s).is_ok())
    }

    /// False when the row group's statistics prove no row can match the step range.
    fn may_match(&self, rg: &RowGroupMetaData, step_leaf: Option<usize>) -> bool {
        let Some(i) = step_leaf else { return true };
        let (lo, hi) = match rg.column(i).statistics() {
            Some(Statistics::Int64(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(a), Some(b)) => (*a, *b),
                _ => return true,
            },
            Some(Statistics::Int32(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(a), Some(b)) => (*a as i64, *b as i64),
                _ => return true,
            },
            _ => return true,
        };
        // with a step set: some listed step must fall inside [lo, hi]
        let listed = self.steps.as_ref().is_none_or(|set| {
            set.get(set.partition_point(|&s| s < lo))
                .is_some_and(|&s| s <= hi)
        });
        self.step_min.is_none_or(|m| hi >= m) && self.step_max.is_none_or(|m| lo <= m) && listed
    }
}

/// What a read asks for: the filter, the output columns and the batch size. Shared by the
/// threads that read files of one cursor in parallel (prefetch.rs).
pub(crate) struct Scan {
    filter: SampleFilter,
    columns: Option<Vec<String>>,
    batch_rows: usize,
}

/// One file being read: its reader yields the file's matching row groups, projected.
pub(crate) struct FileRead {
    file: SampleFile,
    reader: ParquetRecordBatchReader,
}

impl FileRead {
    /// The file's next non-empty batch of matching samples, or None when it is done.
    pub(crate) fn next_batch(&mut self, scan: &Scan) -> Result<Option<RecordBatch>> {
        for b in self.reader.by_ref() {
            let b = b.map_err(|e| self.file.file.damaged(e))?;
            let b = scan.apply(b, &self.file.file.path)?;
            if b.num_rows() > 0 {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }
}

impl Scan {
    /// A reader of `f`'s row groups that may match, projected to the output and filter
    /// columns, and how many row groups the statistics ruled out; None when all were.
    pub(crate) fn open_file(&self, f: SampleFile) -> Result<(Option<FileRead>, u64)> {
        let b = f.file.reader(self.batch_rows)?;
        let meta = b.metadata().clone();
        let parquet_schema = b.parquet_schema();
        let step_leaf = parquet_schema
            .columns()
            .iter()
            .position(|c| c.path().string() == "step");
        let groups: Vec<usize> = (0..meta.num_row_groups())
            .filter(|&i| self.filter.may_match(meta.row_group(i), step_leaf))
            .collect();
        let skipped = (meta.num_row_groups() - groups.len()) as u64;
        if groups.is_empty() {
            return Ok((None, skipped));
        }
        let mut b = b.with_row_groups(groups);
        if let Some(cols) = &self.columns {
            let needed = self.filter.columns();
            let roots = column_indices(b.schema(), |n| {
                cols.iter().any(|c| c == n) || needed.contains(&n)
            });
            let mask = ProjectionMask::roots(b.parquet_schema(), roots);
            b = b.with_projection(mask);
        }
        let reader = b.build().map_err(|e| f.file.damaged(e))?;
        Ok((Some(FileRead { file: f, reader }), skipped))
    }

    /// Filters rows of the file at `path`, then drops columns only the filter needed.
    fn apply(&self, batch: RecordBatch, path: &Path) -> Result<RecordBatch> {
        let mut batch = batch;
        if self.filter.filters_rows() {
            let mask = self.row_mask(&batch, path)?;
            batch = arrow::compute::filter_record_batch(&batch, &mask)
                .map_err(|e| Error::arrow("filtering samples", e))?;
        }
        if let Some(cols) = &self.columns {
            let keep = column_indices(&batch.schema(), |n| cols.iter().any(|c| c == n));
            batch = batch
                .project(&keep)
                .map_err(|e| Error::arrow("selecting sample columns", e))?;
        }
        Ok(batch)
    }

    fn row_mask(&self, batch: &RecordBatch, path: &Path) -> Result<BooleanArray> {
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        let f = &self.filter;
        let cast = |a: &arrow::array::ArrayRef, name: &str, to: &DataType| {
            arrow::compute::cast(a, to).map_err(|e| unfilterable(path, name, to, e))
        };
        if f.step_min.is_some() || f.step_max.is_some() || f.steps.is_some() {
            match batch
                .column_by_name("step")
                .filter(|a| a.data_type() != &DataType::Null)
            {
                None => keep.fill(false),
                Some(a) => {
                    let a = cast(a, "step", &DataType::Int64)?;
                    let a = a.as_primitive::<Int64Type>();
                    for (i, k) in keep.iter_mut().enumerate() {
                        *k &= a.is_valid(i) && f.step_in(a.value(i));
                    }
                }
            }
        }
        let mut text_filter = |name: &str, accept: &dyn Fn(&str) -> bool| -> Result<()> {
            match batch
                .column_by_name(name)
                .filter(|a| a.data_type() != &DataType::Null)
            {
                None => keep.fill(false),
                Some(a) => {
                    let a = cast(a, name, &DataType::Utf8)?;
                    let a = a.as_string::<i32>();
                    for (i, k) in keep.iter_mut().enumerate() {
                        *k &= a.is_valid(i) && accept(a.value(i));
                    }
                }
            }
            Ok(())
        };
        if !f.reasons.is_empty() {
            text_filter("capture_reason", &|s| f.reasons.iter().any(|r| r == s))?;
        }
        if let Some(g) = &f.group {
            text_filter("group_id", &|s| s == g)?;
        }
        if let Some(id) = &f.sample_id {
            text_filter("sample_id", &|s| s == id)?;
        }
        if f.reward_min.is_some() || f.reward_max.is_some() {
            match batch
                .column_by_name("reward_total")
                .filter(|a| a.data_type() != &DataType::Null)
            {
                None => keep.fill(false),
                Some(a) => {
                    let a = cast(a, "reward_total", &DataType::Float64)?;
                    let a = a.as_primitive::<Float64Type>();
                    for (i, k) in keep.iter_mut().enumerate() {
                        let r = a.value(i);
                        *k &= a.is_valid(i)
                            && f.reward_min.is_none_or(|m| r >= m)
                            && f.reward_max.is_none_or(|m| r <= m);
                    }
                }
            }
        }
        if let Some(want) = f.truncated {
            match batch
                .column_by_name("truncated")
                .filter(|a| a.data_type() != &DataType::Null)
            {
                None => keep.fill(false),
                Some(a) => {
                    let a = cast(a, "truncated", &DataType::Boolean)?;
                    let a = a.as_boolean();
                    for (i, k) in keep.iter_mut().enumerate() {
                        *k &= a.is_valid(i) && a.value(i) == want;
                    }
                }
            }
        }
        if let Some(needle) = &f.text {
            let needle = needle.to_lowercase();
            let mut hit = vec![false; n];
            for name in ["prompt_text", "completion_text"] {
                let Some(a) = batch
                    .column_by_name(name)
                    .filter(|a| a.data_type() != &DataType::Null)
                else {
                    continue;
                };
                let a = cast(a, name, &DataType::Utf8)?;
                let a = a.as_string::<i32>();
                for (i, h) in hit.iter_mut().enumerate() {
                    // only rows still in the running are searched: texts can be 100 KB
                    *h = *h
                        || (keep[i]
                            && a.is_valid(i)
                            && a.value(i).to_lowercase().contains(&needle));
                }
            }
            for (k, h) in keep.iter_mut().zip(hit) {
                *k &= h;
            }
        }
        Ok(BooleanArray::from(keep))
    }
}

pub struct SampleCursor {
    scan: Arc<Scan>,
    files: VecDeque<SampleFile>,
    /// The file being read (errors name the file).
    current: Option<FileRead>,
    /// Row groups skipped by statistics (for tests and `--verbose` output).
    pub row_groups_skipped: u64,
}

impl SampleCursor {
    /// Opens every sample file of `run_dir` (not its rank sub-directories) for reading.
    /// `columns` restricts the output columns (None: all).
    pub fn open(
        run_dir: &Path,
        filter: SampleFilter,
        columns: Option<Vec<String>>,
        batch_rows: usize,
    ) -> Result<Self> {
        let sources = open_sample_sources(run_dir)?;
        sources.require_readable()?;
        Ok(SampleCursor {
            scan: Arc::new(Scan {
                filter,
                columns,
                batch_rows: batch_rows.max(1),
            }),
            files: sources.files.into(),
            current: None,
            row_groups_skipped: 0,
        })
    }

    /// The next non-empty batch of matching samples, or None when done.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(f) = &mut self.current {
                match f.next_batch(&self.scan)? {
                    Some(b) => return Ok(Some(b)),
                    None => self.current = None,
                }
            }
            let Some(f) = self.files.pop_front() else {
                return Ok(None);
            };
            let (read, skipped) = self.scan.open_file(f)?;
            self.row_groups_skipped += skipped;
            self.current = read;
        }
    }

    /// Files not yet finished (the one being read counts).
    pub(crate) fn files_left(&self) -> usize {
        self.files.len() + usize::from(self.current.is_some())
    }

    /// What is left to read, in order: the file being read, then the files not yet opened.
    pub(crate) fn into_parts(self) -> (Arc<Scan>, Option<FileRead>, VecDeque<SampleFile>, u64) {
        (self.scan, self.current, self.files, self.row_groups_skipped)
    }

    pub(crate) fn from_parts(
        scan: Arc<Scan>,
        current: Option<FileRead>,
        files: VecDeque<SampleFile>,
        row_groups_skipped: u64,
    ) -> Self {
        SampleCursor {
            scan,
            files,
            current,
            row_groups_skipped,
        }
    }
}
