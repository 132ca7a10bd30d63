//! Per-sample forensics (docs/format.md#samples): which samples to keep, their wire form from
//! the JS encoder, the part files the writer publishes, their compaction into shards, and
//! filtered streaming reads.
//!
//! - `select`: stratified top-k / bottom-k / random selection
//! - `wire`: decoding and validating one `logSamples` call
//! - `batch`: rows → an Arrow batch with the format's column types
//! - `schema`: unifying sample tables from any writer
//! - `files`: which files hold the samples (each read once, whatever the layout)
//! - `compact`: parts → 4096-row shards, crash-safe and streaming
//! - `cursor`: filtered, bounded-memory reads
//! - `prefetch`: a cursor read ahead on threads of its own
//! - `table`: a filtered read gathered into columns (bulk reads without a record per row)

pub mod batch;
pub mod compact;
pub mod cursor;
pub mod files;
pub mod prefetch;
pub mod schema;
pub mod select;
pub mod table;
pub mod wire;

pub use compact::compact_samples;
pub use cursor::{SampleCursor, SampleFilter};
pub use prefetch::PrefetchCursor;
pub use select::{select_samples, CaptureReason, SamplingConfig};
pub use table::{read_sample_table, ColumnKind, ColumnValues, SampleTable, TableColumn};
