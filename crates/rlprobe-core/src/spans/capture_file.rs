//! The spans of one captured trial, `trials/<capture key>/spans.parquet`. A capture is
//! rewritten whole when the trial is captured again, so its span file is replaced, never
//! appended to: capturing twice leaves one copy of each span, and spans a recapture no
//! longer produces disappear with the old file. Its ids are derived from the run, the
//! capture key and the span's path in the trajectory, so they never meet a recorder's ids
//! and its rows are unique without the last-write pass the live parts need.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::batch::to_record_batch;
use super::wire::decode_spans;
use crate::atomic::publish;
use crate::error::{Error, IoContext, Result};
use crate::layout::{CAPTURE_MANIFEST_FILE, CAPTURE_SPANS_FILE, TRIALS_DIR};
use crate::parquet_io::{arrow_writer, ParquetFile};
use crate::props::Codec;
use crate::steps_files::TableSource;
use crate::stream_files::DamagedFile;

/// A capture key names one directory under `trials/`: letters, digits, `.`, `_`, `-`,
/// not starting with a dot, at most 200 bytes. Anything else could leave the run directory.
pub fn valid_capture_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Replaces the span file of capture `key` with the spans in `wire` (the recorder's wire
/// form). Returns how many spans it holds. Published atomically: a reader sees the old
/// file or the new one.
pub fn write_capture_spans(run_dir: &Path, key: &str, wire: &[u8]) -> Result<usize> {
    if !valid_capture_key(key) {
        return Err(Error::InvalidCaptureKey {
            key: key.to_string(),
        });
    }
    let what = || format!("the spans of capture {key}");
    let (rows, bad) = decode_spans(wire, 0).map_err(|reason| Error::MalformedInput {
        what: what(),
        reason,
    })?;
    if let Some(b) = bad.first() {
        let reason = format!(
            "{} of them are malformed (span {}: `{}` {})",
            bad.len(),
            b.span_id,
            b.field,
            b.reason
        );
        return Err(Error::MalformedInput {
            what: what(),
            reason,
        });
    }
    let batch = to_record_batch(&rows)?;
    let dir = run_dir.join(TRIALS_DIR).join(key);
    fs::create_dir_all(&dir).at("creating the capture directory", &dir)?;
    publish(&dir, CAPTURE_SPANS_FILE, |file, tmp| {
        let mut w = arrow_writer(file, tmp, batch.schema(), Codec::default(), Vec::new())?;
        w.write(&batch)?;
        Ok(((), w.into_inner()?))
    })?;
    Ok(rows.len())
}

/// The span files of every finished capture in the run (one with its manifest), by capture
/// key. An unfinished capture — being written, or interrupted — is not read: its spans may
/// belong to files not yet delivered, and the trial readers skip it too.
pub fn capture_span_paths(run_dir: &Path) -> Result<Vec<PathBuf>> {
    let trials = run_dir.join(TRIALS_DIR);
    let entries = match fs::read_dir(&trials) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("listing", trials, e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.at("listing", &trials)?;
        let name = entry.file_name().to_string_lossy().to_string();
        if !valid_capture_key(&name) {
            continue;
        }
        let path = entry.path().join(CAPTURE_SPANS_FILE);
        // a finished capture (its manifest written last) with anything at its span file's
        // name: a FIFO or a directory there is opened and reported by name, never skipped
        if path.symlink_metadata().is_ok() && entry.path().join(CAPTURE_MANIFEST_FILE).is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// The span files of the finished captures that a span read takes, and the ones it would
/// fail on (a FIFO, a damaged footer): for a caller that reads them with another tool.
#[derive(Debug, Default)]
pub struct CaptureSpanFiles {
    pub files: Vec<PathBuf>,
    pub damaged: Vec<DamagedFile>,
}

pub fn capture_span_files(run_dir: &Path) -> Result<CaptureSpanFiles> {
    let mut out = CaptureSpanFiles::default();
    for path in capture_span_paths(run_dir)? {
        match open_capture_source(path.clone()) {
            Ok(Some(_)) => out.files.push(path),
            // replaced or removed since the listing: nothing to read
            Ok(None) => {}
            Err(error) => out.damaged.push(DamagedFile { path, error }),
        }
    }
    Ok(out)
}

/// Opens one capture span file as a source beside the run's own span files: `None` when it
/// was removed since the listing (a recapture or a delivery replacing it).
pub(super) fn open_capture_source(path: PathBuf) -> Result<Option<TableSource>> {
    match ParquetFile::open(&path) {
        Ok(file) => Ok(Some(TableSource {
            file,
            compacted: true,
        })),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}
