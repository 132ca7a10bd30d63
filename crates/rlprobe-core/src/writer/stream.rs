//! The three kinds of rows the writer publishes as part files — steps, samples, spans —
//! behind one interface, so they share one cadence: the writer drains every stream, and
//! whatever makes one stream's part due publishes all of them (writer/mod.rs `cycle`).
//! Each stream only knows how to take its queued input into a buffer and turn the buffer
//! into a part; counting, file publication and failure reporting are the writer's, once.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use serde_json::json;

use super::{bump, Shared};
use crate::encoding::StepBatch;
use crate::error::Result;
use crate::events::event_line;
use crate::layout::{SAMPLES_DIR, SPANS_DIR, STEPS_PARTS_DIR};
use crate::parquet_io::{arrow_writer, write_table};
use crate::props::Codec;
use crate::ring;
use crate::samples::batch::SampleBatch;
use crate::samples::wire::{decode_batch, BadSample};
use crate::schema::Registry;
use crate::spans::batch::SpanBuilders;
use crate::spans::wire::{decode_views, BadSpan};
use crate::stream_files::Stream;
use crate::table::Table;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Steps,
    Samples,
    Spans,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Steps, Kind::Samples, Kind::Spans];

    /// Plural noun for messages, and the directory of its part files.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Steps => "steps",
            Kind::Samples => "samples",
            Kind::Spans => "spans",
        }
    }

    pub fn dir(self) -> &'static str {
        match self {
            Kind::Steps => STEPS_PARTS_DIR,
            Kind::Samples => SAMPLES_DIR,
            Kind::Spans => SPANS_DIR,
        }
    }

    /// The `record` field of this stream's `bad_record` and `recorder_drops` events
    /// (steps carry none, as they always have).
    pub fn record(self) -> Option<&'static str> {
        match self {
            Kind::Steps => None,
            Kind::Samples => Some("sample"),
            Kind::Spans => Some("span"),
        }
    }

    /// `data` with this stream's `record` field added (steps: unchanged).
    pub fn with_record(self, mut data: serde_json::Value) -> serde_json::Value {
        if let (Some(record), Some(map)) = (self.record(), data.as_object_mut()) {
            map.insert("record".into(), record.into());
        }
        data
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The stream whose directory keeps a `columns.parquet` (its columns vary by part);
    /// spans have a fixed schema and keep none.
    pub fn with_columns_file(self) -> Option<Stream> {
        match self {
            Kind::Steps => Some(Stream::Steps),
            Kind::Samples => Some(Stream::Samples),
            Kind::Spans => None,
        }
    }
}

/// The rows of one part file, ready to write.
pub enum Part {
    Steps(Table),
    Arrow(RecordBatch),
}

impl Part {
    /// The part's columns.
    pub fn schema(&self) -> SchemaRef {
        match self {
            Part::Steps(table) => Arc::new(table.schema()),
            Part::Arrow(batch) => batch.schema(),
        }
    }

    /// Writes the part into `file`, the temporary at `path`.
    pub fn write(&self, file: File, path: &Path) -> Result<File> {
        match self {
            Part::Steps(table) => write_table(file, path, table, Codec::default(), Vec::new()),
            Part::Arrow(batch) => {
                let mut w = arrow_writer(file, path, batch.schema(), Codec::default(), Vec::new())?;
                w.write(batch)?;
                w.into_inner()
            }
        }
    }
}

pub trait RowStream: Send {
    fn kind(&self) -> Kind;
    /// Moves queued input into the buffer, about `budget` rows at most; returns the rows
    /// moved and whether input is left (the budget ran out first).
    fn drain(&mut self, shared: &Shared, budget: usize) -> (usize, bool);
    fn buffered(&self) -> usize;
    /// Buffered bytes past which the part goes out whatever the clock says.
    fn buffered_bytes(&self) -> usize;
    /// Empties the buffer into a part. Its rows count as in flight until `settle`.
    fn take_part(&mut self) -> Result<Part>;
    /// The part left the writer (published or lost): nothing is in flight any more.
    fn settle(&mut self);
    /// After a caught panic: empties the buffer; returns the rows buffered or in flight.
    fn discard(&mut self) -> u64;
    /// At stop: input still queued is lost; returns how many rows.
    fn strand(&mut self, shared: &Shared) -> u64;
}

/// Writes a `bad_record` event for rows the writer could not decode. (A failure to write it
/// is counted and reported by `write_events` itself.)
fn report_bad(shared: &Shared, step: Option<i64>, message: String, data: serde_json::Value) {
    let _ = shared.write_events(Some(&event_line(
        "bad_record",
        step,
        shared.rank,
        &message,
        data,
    )));
}

/// A batch the writer could not decode at all (an encoder bug): one event for its rows.
fn report_bad_batch(shared: &Shared, kind: Kind, count: u64, reason: &str) {
    report_bad(
        shared,
        None,
        format!("{count} {} dropped by the writer: {reason}", kind.noun()),
        kind.with_record(json!({ "field": kind.noun(), "reason": reason })),
    );
}

/// Takes queued calls (encoded `logSamples` calls, span batches) off `queue` until about
/// `budget` rows were moved; `take` decodes one call and returns the rows it buffered.
/// Returns the rows moved and whether calls are left.
fn drain_calls(
    queue: &std::sync::Mutex<super::ByteQueue>,
    budget: usize,
    mut take: impl FnMut(Vec<u8>, u64) -> usize,
) -> (usize, bool) {
    let mut moved = 0;
    while moved < budget {
        let Some((encoded, count)) = super::lock(queue).pop() else {
            return (moved, false);
        };
        // a call of no rows still counts as progress, so the budget ends the loop
        moved += take(encoded, count).max(1);
    }
    (moved, !super::lock(queue).batches.is_empty())
}

/// Step records: the lock-free ring the JS encoder writes → a columnar batch.
pub struct StepStream {
    pub consumer: ring::Consumer,
    /// Snapshot of the producer's registry, refreshed when an unknown id shows up.
    pub registry: Registry,
    pub batch: StepBatch,
    pub record: Vec<f64>,
    /// Rows taken out of the batch into a part not yet settled.
    pub in_flight: u64,
}

impl RowStream for StepStream {
    fn kind(&self) -> Kind {
        Kind::Steps
    }

    fn drain(&mut self, shared: &Shared, budget: usize) -> (usize, bool) {
        let mut moved = 0;
        while moved < budget {
            if !self.consumer.pop_into(&mut self.record) {
                return (moved, false);
            }
            moved += 1;
            if self.batch.append(&self.record, &self.registry).is_ok() {
                continue;
            }
            // maybe a column registered after our snapshot: refresh once and retry
            self.registry = shared
                .registry
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if let Err(e) = self.batch.append(&self.record, &self.registry) {
                bump(&shared.counters.writer.tally[Kind::Steps.index()].bad, 1);
                let step = self.record.first().copied().unwrap_or(f64::NAN);
                let reason = e.to_string();
                report_bad(
                    shared,
                    (step >= 0.0 && step.fract() == 0.0).then_some(step as i64),
                    format!("step record dropped by the writer: {reason}"),
                    json!({ "field": "record", "reason": reason }),
                );
            }
        }
        (moved, !self.consumer.is_empty())
    }

    fn buffered(&self) -> usize {
        self.batch.rows()
    }

    fn buffered_bytes(&self) -> usize {
        0 // bounded by flush_steps and the queue, not by size
    }

    fn take_part(&mut self) -> Result<Part> {
        self.in_flight = self.batch.rows() as u64;
        Ok(Part::Steps(self.batch.take()))
    }

    fn settle(&mut self) {
        self.in_flight = 0;
    }

    fn discard(&mut self) -> u64 {
        let lost = self.batch.rows() as u64 + std::mem::take(&mut self.in_flight);
        self.batch.reset();
        lost
    }

    fn strand(&mut self, _shared: &Shared) -> u64 {
        0 // what is left in the ring is counted as pending, never as lost
    }
}

/// `logSamples` calls (already selected and encoded on the JS side) → sample rows.
#[derive(Default)]
pub struct SampleStream {
    pub buffer: SampleBatch,
    /// Samples taken off the queue or out of the buffer and not yet counted as written,
    /// bad or lost: a panic in between counts them as lost, keeping the invariant.
    pub in_flight: u64,
}

impl SampleStream {
    fn report_bad_sample(shared: &Shared, b: &BadSample) {
        report_bad(
            shared,
            b.step,
            format!(
                "sample {} dropped: `{}` {} (got {} {})",
                b.index, b.field, b.reason, b.value_type, b.value_preview
            ),
            json!({
                "record": "sample",
                "index": b.index,
                "field": b.field,
                "reason": b.reason,
                "value_type": b.value_type,
                "value_preview": b.value_preview,
            }),
        );
    }
}

impl RowStream for SampleStream {
    fn kind(&self) -> Kind {
        Kind::Samples
    }

    fn drain(&mut self, shared: &Shared, budget: usize) -> (usize, bool) {
        let tally = &shared.counters.writer.tally[Kind::Samples.index()];
        drain_calls(&shared.samples, budget, |encoded, count| {
            self.in_flight = count;
            let decoded = decode_batch(&encoded, shared.rank);
            self.in_flight = 0;
            match decoded {
                Ok((rows, bad)) => {
                    bump(&tally.bad, bad.len() as u64);
                    let n = rows.len();
                    for row in rows {
                        self.buffer.push(row);
                    }
                    for b in &bad {
                        Self::report_bad_sample(shared, b);
                    }
                    n
                }
                Err(reason) => {
                    bump(&tally.bad, count);
                    report_bad_batch(shared, Kind::Samples, count, &reason);
                    0
                }
            }
        })
    }

    fn buffered(&self) -> usize {
        self.buffer.rows()
    }

    fn buffered_bytes(&self) -> usize {
        self.buffer.bytes()
    }

    fn take_part(&mut self) -> Result<Part> {
        self.in_flight = self.buffer.rows() as u64;
        self.buffer.take().map(Part::Arrow)
    }

    fn settle(&mut self) {
        self.in_flight = 0;
    }

    fn discard(&mut self) -> u64 {
        let lost = self.buffer.rows() as u64 + std::mem::take(&mut self.in_flight);
        self.buffer.clear();
        lost
    }

    fn strand(&mut self, shared: &Shared) -> u64 {
        super::lock(&shared.samples)
            .batches
            .drain(..)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Span batches (spans/wire.rs) → span column builders (no allocation per field).
#[derive(Default)]
pub struct SpanStream {
    pub builders: SpanBuilders,
    /// As `SampleStream::in_flight`, for spans.
    pub in_flight: u64,
}

impl SpanStream {
    fn report_bad_span(shared: &Shared, b: &BadSpan) {
        report_bad(
            shared,
            None,
            format!("span {} dropped: `{}` {}", b.span_id, b.field, b.reason),
            json!({ "record": "span", "span_id": b.span_id, "field": b.field, "reason": b.reason }),
        );
    }
}

impl RowStream for SpanStream {
    fn kind(&self) -> Kind {
        Kind::Spans
    }

    fn drain(&mut self, shared: &Shared, budget: usize) -> (usize, bool) {
        let tally = &shared.counters.writer.tally[Kind::Spans.index()];
        drain_calls(&shared.spans, budget, |encoded, count| {
            self.in_flight = count;
            // all of a batch or none of it: a torn buffer counts whole as bad
            let mut views = Vec::with_capacity((count as usize).min(encoded.len() / 60));
            match decode_views(&encoded, |v| views.push(v)) {
                Ok(bad) => {
                    bump(&tally.bad, bad.len() as u64);
                    // in flight: what is not yet in the builders (a panic counts both as lost)
                    self.in_flight = views.len() as u64;
                    for v in &views {
                        self.builders.append(v, shared.rank);
                        self.in_flight -= 1;
                    }
                    for b in &bad {
                        Self::report_bad_span(shared, b);
                    }
                    views.len()
                }
                Err(reason) => {
                    bump(&tally.bad, count);
                    self.in_flight = 0;
                    report_bad_batch(shared, Kind::Spans, count, &reason);
                    0
                }
            }
        })
    }

    fn buffered(&self) -> usize {
        self.builders.rows()
    }

    fn buffered_bytes(&self) -> usize {
        self.builders.bytes()
    }

    fn take_part(&mut self) -> Result<Part> {
        // from here the rows are out of the builders: a panic counts them as lost
        self.in_flight = self.builders.rows() as u64;
        let part = self.builders.finish();
        if part.is_err() {
            self.builders = SpanBuilders::default(); // half-finished builders hold nothing usable
        }
        part.map(Part::Arrow)
    }

    fn settle(&mut self) {
        self.in_flight = 0;
    }

    fn discard(&mut self) -> u64 {
        let lost = self.builders.rows() as u64 + std::mem::take(&mut self.in_flight);
        self.builders = SpanBuilders::default();
        lost
    }

    fn strand(&mut self, shared: &Shared) -> u64 {
        super::lock(&shared.spans)
            .batches
            .drain(..)
            .map(|(_, n)| n)
            .sum()
    }
}
