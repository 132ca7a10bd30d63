//! Reading a run's spans back: every span once, at its last write (a span is written again
//! when it ends after a flush caught it open, or when a keyed span is re-recorded), then
//! filtered. A run compacted and not resumed since reads only `spans/spans.parquet`, whose
//! rows are already unique and sorted by step, so a step filter skips row groups unread.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::Int64Type;
use parquet::arrow::arrow_reader::{ArrowPredicateFn, RowFilter};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::statistics::Statistics;

use super::batch::{conform_spans, span_schema};
use super::capture_file::{capture_span_paths, open_capture_source};
use crate::error::{Error, Result};
use crate::events::json_string;
use crate::layout::{SPANS_DIR, SPANS_FILE};
use crate::parquet_io::column_indices;
use crate::steps_files::{open_compacted_sources, TableSource, TableSources};
use crate::stream_files::Stream;

/// Which spans to return. Empty / None fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct SpanFilter {
    pub kinds: Vec<String>,
    pub step_min: Option<i64>,
    pub step_max: Option<i64>,
    pub span_ids: Option<HashSet<String>>,
    /// Spans of these trees (by root id).
    pub root_ids: Option<HashSet<String>>,
    pub parent_ids: Option<HashSet<String>>,
    /// Label key = value, all required (labels are a JSON object of strings).
    pub labels: Vec<(String, String)>,
    pub statuses: Vec<String>,
    /// At most this many spans (the earliest-starting ones).
    pub limit: Option<usize>,
}

impl SpanFilter {
    fn by_step(&self) -> bool {
        self.step_min.is_some() || self.step_max.is_some()
    }

    /// The columns the filter reads (none: it keeps every row).
    fn columns(&self) -> Vec<&'static str> {
        let mut c = Vec::new();
        if !self.kinds.is_empty() {
            c.push("kind");
        }
        if self.by_step() {
            c.push("step");
        }
        if self.span_ids.is_some() {
            c.push("span_id");
        }
        if self.root_ids.is_some() {
            c.push("root_id");
        }
        if self.parent_ids.is_some() {
            c.push("parent_id");
        }
        if !self.statuses.is_empty() {
            c.push("status");
        }
        if !self.labels.is_empty() {
            c.push("labels");
        }
        c
    }

    /// False when a row group's `step` statistics prove no row can match.
    fn may_match(&self, rg: &RowGroupMetaData, step_leaf: Option<usize>) -> bool {
        if !self.by_step() {
            return true;
        }
        let Some(i) = step_leaf else { return true };
        match rg.column(i).statistics() {
            Some(Statistics::Int64(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(lo), Some(hi)) => {
                    self.step_min.is_none_or(|m| *hi >= m) && self.step_max.is_none_or(|m| *lo <= m)
                }
                // only null steps in this group: none can match a step filter
                _ => s.null_count_opt().is_none_or(|n| n as i64 != rg.num_rows()),
            },
            _ => true,
        }
    }
}

/// Spans read back: the matching ones, sorted by start time, and what the run holds.
pub struct SpanRead {
    pub batch: RecordBatch,
    /// Distinct spans in the run.
    pub total: usize,
    /// Spans matching the filter before `limit`.
    pub matched: usize,
}

pub fn open_sources(run_dir: &Path) -> Result<TableSources> {
    open_compacted_sources(run_dir, SPANS_FILE, SPANS_DIR, Stream::Spans)
}

/// Whether a load reads the captured trials' span files too. Compaction must not: a
/// capture owns its spans, and a recapture that drops one would leave a stale copy behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Captures {
    Include,
    Exclude,
}

pub(super) struct Loaded {
    pub batches: Vec<RecordBatch>,
    pub unique: bool,
    pub complete: bool,
    pub footer_rows: usize,
}

/// The batches of every span file, conformed to the span columns, in write order: the
/// run's own files (compacted table, then live parts), then each captured trial's file.
/// When no live part is among them every row is unique (the second value): the compacted
/// table is deduplicated and capture ids never meet a recorder's. The filter is then applied
/// while reading (the third value is false: not every row was read): its step range skips
/// row groups by their statistics, and its other conditions are evaluated on their own
/// columns first, so the remaining columns are decoded only for the rows that match (a
/// tree, an id or a label among 1,000,000 spans). The fourth value is the rows all sources
/// hold, from their footers.
pub(super) fn load(
    run_dir: &Path,
    filter: &SpanFilter,
    columns: Option<&[&str]>,
    captures: Captures,
) -> Result<Loaded> {
    let sources = open_sources(run_dir)?;
    sources.require_readable()?;
    let sources = sources.sources;
    let unique = sources.iter().all(|s| s.compacted);
    // capture files are opened one at a time as they are read: a run may hold thousands
    let captures = if captures == Captures::Include {
        capture_span_paths(run_dir)?
    } else {
        Vec::new()
    };
    let mut batches = Vec::new();
    let mut complete = true;
    let mut footer_rows = 0usize;
    let mut read_source = |s: &TableSource| -> Result<()> {
        let mut b = s.file.reader(65_536)?;
        footer_rows += b.metadata().file_metadata().num_rows() as usize;
        if unique {
            let step_leaf = b
                .parquet_schema()
                .columns()
                .iter()
                .position(|c| c.path().string() == "step");
            let meta = b.metadata().clone();
            let groups: Vec<usize> = (0..meta.num_row_groups())
                .filter(|&i| filter.may_match(meta.row_group(i), step_leaf))
                .collect();
            complete &= groups.len() == meta.num_row_groups();
            b = b.with_row_groups(groups);
            let needed = filter.columns();
            let typed = needed.iter().all(|n| {
                let expected = span_schema()
                    .field_with_name(n)
                    .map(|f| f.data_type().clone())
                    .ok();
                b.schema()
                    .field_with_name(n)
                    .ok()
                    .map(|f| f.data_type().clone())
                    == expected
            });
            if !needed.is_empty() && typed && columns.is_none() {
                complete = false;
                let mask = ProjectionMask::roots(
                    b.parquet_schema(),
                    column_indices(b.schema(), |n| needed.contains(&n)),
                );
                let f = filter.clone();
                let patterns = label_patterns(&f);
                let predicate = ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                    Ok((0..batch.num_rows())
                        .map(|i| Some(row_matches(&batch, i, &f, &patterns)))
                        .collect::<BooleanArray>())
                });
                b = b.with_row_filter(RowFilter::new(vec![Box::new(predicate)]));
            }
        }
        if let Some(cols) = columns {
            let roots = column_indices(b.schema(), |n| cols.contains(&n));
            let mask = ProjectionMask::roots(b.parquet_schema(), roots);
            b = b.with_projection(mask);
        }
        for batch in b.build().map_err(|e| s.file.damaged(e))? {
            let batch = batch.map_err(|e| s.file.damaged(e))?;
            batches.push(conform_spans(&batch, s.path())?);
        }
        Ok(())
    };
    for s in &sources {
        read_source(s)?;
    }
    for path in captures {
        if let Some(s) = open_capture_source(path)? {
            read_source(&s)?;
        }
    }
    Ok(Loaded {
        batches,
        unique,
        complete,
        footer_rows,
    })
}

/// Per batch, which rows are the last write of their span id.
pub(super) fn last_writes(batches: &[RecordBatch]) -> Vec<Vec<bool>> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut keep: Vec<Vec<bool>> = batches.iter().map(|b| vec![false; b.num_rows()]).collect();
    for (bi, b) in batches.iter().enumerate().rev() {
        let ids = b.column_by_name("span_id").unwrap().as_string::<i32>();
        for i in (0..b.num_rows()).rev() {
            if ids.is_valid(i) && seen.insert(ids.value(i)) {
                keep[bi][i] = true;
            }
        }
    }
    keep
}

fn label_patterns(f: &SpanFilter) -> Vec<String> {
    f.labels
        .iter()
        .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
        .collect()
}

/// `"key":"value"` as one member of a JSON object written by `JSON.stringify`.
fn label_matches(labels: &str, pattern: &str) -> bool {
    labels.match_indices(pattern).any(|(at, _)| {
        matches!(
            labels.as_bytes().get(at.wrapping_sub(1)),
            Some(b'{') | Some(b',')
        )
    })
}

fn row_matches(b: &RecordBatch, i: usize, f: &SpanFilter, label_patterns: &[String]) -> bool {
    let text = |name: &str| {
        let a = b.column_by_name(name).unwrap().as_string::<i32>();
        a.is_valid(i).then(|| a.value(i))
    };
    if !f.kinds.is_empty() && !text("kind").is_some_and(|k| f.kinds.iter().any(|x| x == k)) {
        return false;
    }
    if f.by_step() {
        let steps = b
            .column_by_name("step")
            .unwrap()
            .as_primitive::<Int64Type>();
        if !steps.is_valid(i) {
            return false;
        }
        let s = steps.value(i);
        if f.step_min.is_some_and(|m| s < m) || f.step_max.is_some_and(|m| s > m) {
            return false;
        }
    }
    let in_set = |set: &Option<HashSet<String>>, name: &str| {
        set.as_ref()
            .is_none_or(|set| text(name).is_some_and(|v| set.contains(v)))
    };
    if !in_set(&f.span_ids, "span_id")
        || !in_set(&f.root_ids, "root_id")
        || !in_set(&f.parent_ids, "parent_id")
    {
        return false;
    }
    if !f.statuses.is_empty() && !text("status").is_some_and(|s| f.statuses.iter().any(|x| x == s))
    {
        return false;
    }
    if !label_patterns.is_empty() {
        let Some(labels) = text("labels") else {
            return false;
        };
        if !label_patterns.iter().all(|p| label_matches(labels, p)) {
            return false;
        }
    }
    true
}

/// The run's spans matching `filter`, each at its last write, sorted by start time.
pub fn read_spans(run_dir: &Path, filter: &SpanFilter) -> Result<SpanRead> {
    let Loaded {
        batches,
        unique,
        complete,
        footer_rows,
    } = load(run_dir, filter, None, Captures::Include)?;
    let keep = if unique {
        None
    } else {
        Some(last_writes(&batches))
    };
    let label_patterns = label_patterns(filter);
    let mut total = 0usize;
    let mut parts: Vec<RecordBatch> = Vec::new();
    for (bi, b) in batches.iter().enumerate() {
        let mask: BooleanArray = (0..b.num_rows())
            .map(|i| {
                let last = keep.as_ref().is_none_or(|k| k[bi][i]);
                total += last as usize;
                Some(last && row_matches(b, i, filter, &label_patterns))
            })
            .collect();
        let kept = arrow::compute::filter_record_batch(b, &mask)
            .map_err(|e| Error::arrow("filtering spans", e))?;
        if kept.num_rows() > 0 {
            parts.push(kept);
        }
    }
    if !complete {
        // skipped row groups still count towards the run's total (from the footers)
        total = footer_rows;
    }
    let all = arrow::compute::concat_batches(&span_schema(), &parts)
        .map_err(|e| Error::arrow("joining spans", e))?;
    let matched = all.num_rows();
    // earliest first; ties (same clock reading) keep write order
    let starts = all.column_by_name("start_time").unwrap().clone();
    let order = arrow::compute::sort_to_indices(&starts, None, filter.limit)
        .map_err(|e| Error::arrow("sorting spans", e))?;
    let batch = arrow::compute::take_record_batch(&all, &order)
        .map_err(|e| Error::arrow("sorting spans", e))?;
    Ok(SpanRead {
        batch,
        total,
        matched,
    })
}

/// Spans of one kind in a run: how many, how many still open, how many ended in error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindCount {
    pub kind: String,
    pub spans: u64,
    pub open: u64,
    pub error: u64,
}

/// Counts per kind (each span once, at its last write), kinds sorted by name.
pub fn span_counts(run_dir: &Path) -> Result<Vec<KindCount>> {
    let Loaded {
        batches, unique, ..
    } = load(
        run_dir,
        &SpanFilter::default(),
        Some(&["span_id", "kind", "status"]),
        Captures::Include,
    )?;
    let keep = if unique {
        None
    } else {
        Some(last_writes(&batches))
    };
    let mut counts: BTreeMap<String, KindCount> = BTreeMap::new();
    for (bi, b) in batches.iter().enumerate() {
        let kinds = b.column_by_name("kind").unwrap().as_string::<i32>();
        let status = b.column_by_name("status").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            if keep.as_ref().is_some_and(|k| !k[bi][i]) || !kinds.is_valid(i) {
                continue;
            }
            let kind = kinds.value(i);
            if !counts.contains_key(kind) {
                counts.insert(
                    kind.to_string(),
                    KindCount {
                        kind: kind.to_string(),
                        ..Default::default()
                    },
                );
            }
            let c = counts.get_mut(kind).unwrap();
            c.spans += 1;
            match status.is_valid(i).then(|| status.value(i)) {
                Some("open") => c.open += 1,
                Some("error") => c.error += 1,
                _ => {}
            }
        }
    }
    Ok(counts.into_values().collect())
}
