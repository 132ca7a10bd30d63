//! rlprobe's core: the recording format's writer, reader and compactor, free of Node.
//!
//! - `error`: the one error type, each variant with a stable code
//! - `writer`: the recorder (lock-free queue → writer thread → part files, events)
//! - `ring`: the bounded SPSC queue the hot path pushes into
//! - `encoding`: the slot encoding of a step record and the columnar batch it decodes to
//! - `schema`: the StepRecord vocabulary and the column-id registry
//! - `table`: columnar buffers shared by writer, reader and binding
//! - `props`: the single factory of Parquet writer properties
//! - `parquet_io`, `atomic`, `layout`: files on disk
//! - `regular_file`: opening nothing that is not a regular file (a FIFO would hang a read)
//! - `checksums`: block checksums written into, and verified from, every file we write
//! - `footer_cache`: verified, parsed Parquet footers, reused across reads
//! - `stream_files`: which files of a stream directory are ours, foreign or damaged
//! - `steps_files`: which files hold a run's steps (reads each step once)
//! - `compact`: atomic, crash-safe compaction of part files
//! - `events`: the append-only events.jsonl
//! - `samples`: per-sample forensics (selection, wire form, shards, filtered reads)
//! - `spans`: rollouts, turns, tool calls (wire form, parts, deduplicating compaction, reads)
//! - `wire_cursor`: bounds-checked reads of the JS encoders' wire batches
//! - `synth`: a realistic synthetic step table for benchmarks

pub mod atomic;
pub mod checksums;
pub mod columns_file;
pub mod compact;
pub mod direct_read;
pub mod encoding;
pub mod error;
pub mod events;
pub mod footer_cache;
pub mod layout;
pub mod memory;
pub mod parquet_io;
pub mod props;
pub mod regular_file;
pub mod resume;
pub mod ring;
pub mod samples;
pub mod schema;
pub mod spans;
pub mod steps_files;
pub mod stream_files;
pub mod synth;
pub mod table;
pub(crate) mod threads;
pub mod validity;
pub mod wire_cursor;
pub mod writer;

#[cfg(test)]
pub(crate) mod testutil;

pub use compact::{compact_steps, CompactReport};
pub use error::{Code, Error, Result};
pub use steps_files::{read_steps, read_steps_from, StepsTail};
pub use table::{ColumnBuf, ColumnValues, Table};
pub use writer::{CloseReport, CountersSnapshot, Recorder, RecorderOptions};
