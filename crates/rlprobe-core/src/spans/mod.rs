//! Spans (docs/format.md#spans): named, typed, nested intervals of a run — rollouts, turns,
//! tool calls — written by the recorder as append-only parts and compacted into
//! `spans/spans.parquet`, where a span written twice keeps its last write.
//!
//! - `wire`: the batch the JS recorder encodes, decoded on the writer thread
//! - `batch`: rows → an Arrow batch with the span columns
//! - `compact`: parts → one deduplicated, step-sorted file
//! - `read`: each span once, filtered; counts per kind
//! - `capture_file`: the spans of one captured trial, replaced whole on recapture

pub mod batch;
pub mod capture_file;
pub mod compact;
pub mod read;
pub mod wire;

pub use capture_file::{
    capture_span_files, capture_span_paths, valid_capture_key, write_capture_spans,
};
pub use compact::compact_spans;
pub use read::{read_spans, span_counts, KindCount, SpanFilter, SpanRead};
pub use wire::{decode_spans, encode_spans, SpanRow, SpanStatus};
