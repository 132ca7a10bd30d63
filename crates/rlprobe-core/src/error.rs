//! The core's one error type. Every failure a caller can meet is a variant of [`Error`] that
//! says what happened, to which file, field or value, and what to do about it, keeping the
//! io, Parquet or Arrow error underneath as its source. Each variant has a stable [`Code`]:
//! the binding sets it as the JavaScript error's `code` (src/error.rs), and ts/errors.ts
//! lists every code a user can meet.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::error::ArrowError;
use parquet::errors::ParquetError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Declares `Code` and its list from one table, so a code cannot be added without being
/// listed (the binding exports the list; the TypeScript tests compare it with theirs).
macro_rules! codes {
    ($($(#[doc = $doc:literal])* $variant:ident => $text:literal,)*) => {
        /// The stable code of an error, as JavaScript sees it (`error.code`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Code {
            /// Every code the core can produce.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }
        }
    };
}

codes! {
    /// The operating system refused a read or write (permissions, a full disk, a path that
    /// is not a regular file), naming the path.
    Io => "RLPROBE_IO",
    /// A file of the run cannot be read as what it should be (truncated, a checksum
    /// mismatch, malformed footer metadata); the message names it and what to do.
    CorruptFile => "RLPROBE_CORRUPT_FILE",
    /// The files of one table disagree on a column's type, so they cannot be read or
    /// compacted together.
    SchemaConflict => "RLPROBE_SCHEMA_CONFLICT",
    /// Another recorder writes the run directory (one writer per directory).
    Locked => "RLPROBE_LOCKED",
    /// A value the caller passed cannot be used: a step-record key, a record, a capture
    /// key, an option.
    Invalid => "RLPROBE_INVALID",
    /// The writer did not finish within the time given.
    Timeout => "RLPROBE_TIMEOUT",
    /// A failure no input explains: a bug in rlprobe (please report it).
    Native => "RLPROBE_NATIVE",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a user can do about an unreadable file, said after the problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// A part, shard or capture file: the rest of the run reads without it.
    MoveAside,
    /// A compacted file, whose footer says which parts it holds: without it no part of
    /// its table can be placed.
    RestoreCompacted,
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Remedy::MoveAside => {
                "move it out of the run directory to read the rest, and to let `probe compact <run>` merge the other parts (its rows are lost unless you have a copy)"
            }
            Remedy::RestoreCompacted => {
                "it lists the part files it holds, so no part of its table can be placed without it: restore it from a copy, or move it out of the run directory to read the parts it does not hold (its own rows are lost unless you have a copy)"
            }
        })
    }
}

/// Everything that can go wrong in the core. `Clone` (sources are shared), so the error of
/// a damaged file can be listed and returned by every read that meets it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An operation on a file or directory failed (`action` is what was being done).
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<io::Error>,
    },

    /// The operating system refused something that is not about a file (starting a thread).
    #[error("{action}: {source}")]
    System {
        action: &'static str,
        #[source]
        source: Arc<io::Error>,
    },

    /// Something other than a regular file where a file is expected: a FIFO would hang a
    /// read, `/dev/zero` never ends.
    #[error("{}: {what}, not a regular file{}", path.display(), remedy.map(|r| format!("; {r}")).unwrap_or_default())]
    NotRegularFile {
        path: PathBuf,
        what: String,
        remedy: Option<Remedy>,
    },

    /// Writing a Parquet file failed (the source is usually an io error: a full disk).
    #[error("writing {}: {source}", path.display())]
    WriteParquet {
        path: PathBuf,
        #[source]
        source: Arc<ParquetError>,
    },

    /// A Parquet file that cannot be read: truncated, a checksum mismatch, a bad footer.
    #[error("{}: damaged Parquet file ({detail}); {remedy}", path.display())]
    CorruptFile {
        path: PathBuf,
        detail: String,
        remedy: Remedy,
        /// The decoder's error (Parquet or Arrow), when it found the damage.
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },

    /// A footer key of ours that does not hold what it must (the parts a compaction
    /// absorbed, the next part number): guessing would reuse part names or read rows twice.
    #[error("{}: its footer key `{key}` {problem} (got {value:?}); {remedy}", path.display(), remedy = Remedy::RestoreCompacted)]
    CorruptMetadata {
        path: PathBuf,
        key: &'static str,
        value: String,
        problem: String,
    },

    /// Several damaged files in one directory: the first, and how many more.
    #[error("{first} ({more} more damaged file(s) in this directory)")]
    DamagedFiles { first: Box<Error>, more: usize },

    /// A column whose type differs between files (or cannot be read as the format's type).
    #[error("column `{column}` {detail}{}", path.as_ref().map(|p| format!(" (in {})", p.display())).unwrap_or_default())]
    SchemaConflict {
        column: String,
        detail: String,
        path: Option<PathBuf>,
        #[source]
        source: Option<Arc<ArrowError>>,
    },

    /// Another recorder holds the run directory's writer lock.
    #[error(
        "{} is already being recorded by {holder}; two recorders on one directory would overwrite each other's part files. \
         Give each process its own directory (set RANK, or pass `rank`), or close the other recorder first (lock: {})",
        run_dir.display(),
        lock_file.display()
    )]
    Locked {
        run_dir: PathBuf,
        holder: String,
        lock_file: PathBuf,
    },

    /// A step-record key that cannot be a column (`reason` names the key).
    #[error("{reason}")]
    InvalidStepKey { key: String, reason: String },

    /// A new column past the run's column budget.
    #[error("too many distinct columns (limit {limit}); `{name}` not added")]
    TooManyColumns { name: String, limit: usize },

    /// A record whose new keys would pass the column budget: none of them was registered.
    #[error("the record would add {adding} new columns to the {have} the run has (limit {limit}); nothing of it was added")]
    ColumnBudget {
        adding: usize,
        have: usize,
        limit: usize,
    },

    /// An encoded step record whose structure is wrong.
    #[error("{reason}")]
    InvalidRecord { reason: String },

    /// A capture key that does not name one directory under `trials/`.
    #[error("invalid capture key {key:?}: expected letters, digits, `.`, `_` or `-`, not starting with a dot, at most 200 bytes")]
    InvalidCaptureKey { key: String },

    /// An option value that cannot be used.
    #[error("invalid {option} {value}: {reason}")]
    InvalidOption {
        option: &'static str,
        value: String,
        reason: String,
    },

    /// Encoded input from the caller (the recorder's wire form) that does not decode.
    #[error("{what}: {reason}")]
    MalformedInput { what: String, reason: String },

    /// The writer did not finish in time (it keeps going in the background).
    #[error("the writer did not finish within {ms} ms")]
    Timeout { ms: u128 },

    /// An Arrow operation on data rlprobe built itself failed: a bug.
    #[error("{what}: {source}")]
    Arrow {
        what: &'static str,
        #[source]
        source: Arc<ArrowError>,
    },

    /// An invariant of rlprobe's own broke: a bug.
    #[error("{what}")]
    Internal { what: String },
}

impl Error {
    pub fn code(&self) -> Code {
        match self {
            Error::Io { .. }
            | Error::System { .. }
            | Error::NotRegularFile { .. }
            | Error::WriteParquet { .. } => Code::Io,
            Error::CorruptFile { .. } | Error::CorruptMetadata { .. } => Code::CorruptFile,
            Error::DamagedFiles { first, .. } => first.code(),
            Error::SchemaConflict { .. } => Code::SchemaConflict,
            Error::Locked { .. } => Code::Locked,
            Error::InvalidStepKey { .. }
            | Error::TooManyColumns { .. }
            | Error::ColumnBudget { .. }
            | Error::InvalidRecord { .. }
            | Error::InvalidCaptureKey { .. }
            | Error::InvalidOption { .. }
            | Error::MalformedInput { .. } => Code::Invalid,
            Error::Timeout { .. } => Code::Timeout,
            Error::Arrow { .. } | Error::Internal { .. } => Code::Native,
        }
    }

    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            action,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A damaged Parquet file; `detail` says what is wrong with it.
    pub fn corrupt(path: &Path, detail: impl Into<String>) -> Error {
        Error::CorruptFile {
            path: path.to_path_buf(),
            detail: detail.into(),
            remedy: Remedy::MoveAside,
            source: None,
        }
    }

    /// Decoding `path` failed (a Parquet or Arrow error). A failure that is already this
    /// file's damage report (a checksum mismatch found under the decoder) comes back as it was.
    pub fn reading(path: &Path, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        let e: Box<dyn std::error::Error + Send + Sync> = e.into();
        if let Some(own) = own_error_in(e.as_ref()) {
            return own.clone();
        }
        let detail = bare(&e.to_string()).to_string();
        Error::CorruptFile {
            path: path.to_path_buf(),
            detail,
            remedy: Remedy::MoveAside,
            source: Some(Arc::from(e)),
        }
    }

    /// An Arrow operation on rlprobe's own data failed.
    pub fn arrow(what: &'static str, e: ArrowError) -> Error {
        Error::Arrow {
            what,
            source: Arc::new(e),
        }
    }

    /// The error with the file it came from, when it names none yet (a column conflict met
    /// while reading that file).
    pub fn in_file(self, file: &Path) -> Error {
        match self {
            Error::SchemaConflict {
                column,
                detail,
                path: None,
                source,
            } => Error::SchemaConflict {
                column,
                detail,
                path: Some(file.to_path_buf()),
                source,
            },
            other => other,
        }
    }

    /// A file or directory that is not there. Readers retry on it: a compaction may have
    /// moved the file between a listing and its open.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The OS error underneath, if any (lock support is judged by it).
    pub fn io_source(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The message with every source that adds something appended (`: `-separated): what a
    /// user reads. Sources whose text the message already holds are not repeated.
    pub fn report(&self) -> String {
        let mut out = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            let text = s.to_string();
            if !bare(&text).is_empty() && !out.contains(bare(&text)) {
                out.push_str(": ");
                out.push_str(&text);
            }
            source = s.source();
        }
        out
    }
}

/// A decoder's message without the wrapper names it starts with.
fn bare(mut text: &str) -> &str {
    for prefix in ["External: ", "Parquet error: ", "Arrow error: "] {
        text = text.trim_start_matches(prefix);
    }
    text
}

/// One of our errors inside a decoder's error chain (as it came back from the file reader,
/// possibly inside the io error that carried it through `Read`).
fn own_error_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Error> {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(own) = e.downcast_ref::<Error>() {
            return Some(own);
        }
        if let Some(own) = e
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<Error>())
        {
            return Some(own);
        }
        at = e.source();
    }
    None
}

/// Attaches the action and the path to an io error.
pub trait IoContext<T> {
    fn at(self, action: &'static str, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, action: &'static str, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(action, path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_listed_once_and_spelled_as_javascript_sees_them() {
        let texts: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        let unique: std::collections::HashSet<&&str> = texts.iter().collect();
        assert_eq!(unique.len(), texts.len(), "{texts:?}");
        assert!(
            texts.iter().all(|t| t.starts_with("RLPROBE_")
                && t[8..].chars().all(|c| c.is_ascii_uppercase() || c == '_')),
            "{texts:?}"
        );
    }

    #[test]
    fn an_io_error_names_the_path_and_keeps_its_source() {
        let e = Error::io(
            "opening",
            "/r/steps.parquet",
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert_eq!(e.code(), Code::Io);
        assert!(e.is_not_found());
        assert!(
            e.to_string().starts_with("opening /r/steps.parquet: "),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn a_decoder_failure_that_is_already_the_files_report_is_not_wrapped_again() {
        let path = Path::new("/r/steps/part-00001.parquet");
        let own = Error::corrupt(path, "checksum mismatch in bytes 0..65536");
        let through_decoder = ParquetError::External(Box::new(own.clone()));
        assert_eq!(
            Error::reading(path, through_decoder).to_string(),
            own.to_string()
        );
        let through_read = ParquetError::from(io::Error::other(own.clone()));
        assert_eq!(
            Error::reading(path, through_read).to_string(),
            own.to_string()
        );
        let plain = Error::reading(
            path,
            ParquetError::General("Invalid Parquet file. Corrupt footer".into()),
        );
        assert_eq!(plain.code(), Code::CorruptFile);
        let text = plain.report();
        assert!(text.starts_with("/r/steps/part-00001.parquet: damaged Parquet file (Invalid Parquet file. Corrupt footer); move it out"), "{text}");
        assert_eq!(
            text.matches("Corrupt footer").count(),
            1,
            "the source is not repeated: {text}"
        );
    }

    #[test]
    fn several_damaged_files_take_the_first_ones_code() {
        let first = Error::NotRegularFile {
            path: "/r/spans/part-00000.parquet".into(),
            what: "a FIFO (named pipe)".into(),
            remedy: Some(Remedy::MoveAside),
        };
        let e = Error::DamagedFiles {
            first: Box::new(first),
            more: 2,
        };
        assert_eq!(e.code(), Code::Io);
        assert!(
            e.to_string()
                .ends_with("(2 more damaged file(s) in this directory)"),
            "{e}"
        );
    }
}
