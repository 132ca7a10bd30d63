//! Span rows → one Arrow batch with the format's column names and types (docs/format.md#spans),
//! and reshaping a batch read from any file to those columns. Every column is always
//! written, null where unset, so parts and the compacted file share one schema.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Builder, Int64Builder, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::wire::{SpanRow, SpanView};
use crate::error::{Error, Result};

/// The span columns, in order. `duration_s` is `end_time - start_time` (null while open),
/// stored so any Parquet tool can sort by it without arithmetic.
pub const SPAN_COLUMNS: &[(&str, DataType)] = &[
    ("span_id", DataType::Utf8),
    ("parent_id", DataType::Utf8),
    ("root_id", DataType::Utf8),
    ("kind", DataType::Utf8),
    ("name", DataType::Utf8),
    ("step", DataType::Int64),
    ("start_time", DataType::Float64),
    ("end_time", DataType::Float64),
    ("duration_s", DataType::Float64),
    ("status", DataType::Utf8),
    ("error", DataType::Utf8),
    ("sample_id", DataType::Utf8),
    ("group_id", DataType::Utf8),
    ("labels", DataType::Utf8),
    ("attributes", DataType::Utf8),
    ("key", DataType::Utf8),
    ("rank", DataType::Int64),
];

pub fn span_schema() -> SchemaRef {
    Arc::new(Schema::new(
        SPAN_COLUMNS
            .iter()
            .map(|(n, t)| Field::new(*n, t.clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// Column builders the writer appends decoded spans to, between two part files.
pub struct SpanBuilders {
    texts: Vec<StringBuilder>,
    step: Int64Builder,
    start_time: Float64Builder,
    end_time: Float64Builder,
    duration: Float64Builder,
    rank: Int64Builder,
    rows: usize,
    bytes: usize,
}

/// Indices into `SpanBuilders::texts`, in the order `append` fills them.
const TEXT_COLUMNS: [&str; 12] = [
    "span_id",
    "parent_id",
    "root_id",
    "kind",
    "name",
    "status",
    "error",
    "sample_id",
    "group_id",
    "labels",
    "attributes",
    "key",
];

impl Default for SpanBuilders {
    fn default() -> Self {
        SpanBuilders {
            texts: TEXT_COLUMNS.iter().map(|_| StringBuilder::new()).collect(),
            step: Int64Builder::new(),
            start_time: Float64Builder::new(),
            end_time: Float64Builder::new(),
            duration: Float64Builder::new(),
            rank: Int64Builder::new(),
            rows: 0,
            bytes: 0,
        }
    }
}

impl SpanBuilders {
    pub fn append(&mut self, v: &SpanView<'_>, rank: i64) {
        let values = [
            Some(v.span_id),
            v.parent_id,
            Some(v.root_id),
            Some(v.kind),
            Some(v.name),
            Some(v.status.as_str()),
            v.error,
            v.sample_id,
            v.group_id,
            v.labels,
            v.attributes,
            v.key,
        ];
        for (b, x) in self.texts.iter_mut().zip(values) {
            b.append_option(x);
        }
        self.step.append_option(v.step);
        self.start_time.append_value(v.start_time);
        self.end_time.append_option(v.end_time);
        self.duration
            .append_option(v.end_time.map(|e| e - v.start_time));
        self.rank.append_value(rank);
        self.rows += 1;
        self.bytes += v.approx_bytes();
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Empties the builders into one batch with the span columns.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let mut text: Vec<Option<ArrayRef>> = self
            .texts
            .iter_mut()
            .map(|b| Some(Arc::new(b.finish()) as ArrayRef))
            .collect();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(SPAN_COLUMNS.len());
        for (name, _) in SPAN_COLUMNS {
            arrays.push(match *name {
                "step" => Arc::new(self.step.finish()),
                "start_time" => Arc::new(self.start_time.finish()),
                "end_time" => Arc::new(self.end_time.finish()),
                "duration_s" => Arc::new(self.duration.finish()),
                "rank" => Arc::new(self.rank.finish()),
                other => {
                    let broken = |what: &str| Error::Internal {
                        what: format!("span column {other}: {what}"),
                    };
                    let i = TEXT_COLUMNS
                        .iter()
                        .position(|c| *c == other)
                        .ok_or_else(|| broken("no builder"))?;
                    text[i].take().ok_or_else(|| broken("listed twice"))?
                }
            });
        }
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(span_schema(), arrays)
            .map_err(|e| Error::arrow("building a batch of spans", e))
    }
}

/// Owned rows → one batch (tests, and anything holding `SpanRow`s).
pub fn to_record_batch(rows: &[SpanRow]) -> Result<RecordBatch> {
    let mut b = SpanBuilders::default();
    for r in rows {
        b.append(&r.view(), r.rank);
    }
    b.finish()
}

/// Reshapes a batch read from the span file at `path` to the span columns: a missing column
/// becomes nulls (an older writer), an unknown one is left out, a castable type is cast.
pub fn conform_spans(batch: &RecordBatch, path: &std::path::Path) -> Result<RecordBatch> {
    crate::compact::conform(batch, &span_schema(), path)
}
