//! `events.jsonl`: one JSON object per line, appended with one `write()` per line so a
//! crash tears at most the line being written. fsync runs on a cadence and on demand.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{IoContext, Result};

pub struct EventLog {
    path: PathBuf,
    file: File,
    line: Vec<u8>,
    dirty: bool,
    last_sync: Instant,
    /// A failed append (a full disk) may have left part of its line: the next line starts
    /// on a new one, so only the torn fragment is unreadable, not the line after it.
    torn: bool,
}

impl EventLog {
    /// Opens for append. A torn last line (no trailing newline, left by a crash) is closed
    /// with a newline first, so the next event starts on a line of its own and readers
    /// skip only the torn one.
    pub fn open(path: &Path) -> Result<EventLog> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .at("opening", path)?;
        let len = file.metadata().at("reading the metadata of", path)?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))
                .and_then(|_| file.read_exact(&mut last))
                .at("reading the last line of", path)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")
                    .at("closing the torn last line of", path)?;
            }
        }
        Ok(EventLog {
            path: path.to_path_buf(),
            file,
            line: Vec::with_capacity(512),
            dirty: false,
            last_sync: Instant::now(),
            torn: false,
        })
    }

    /// Appends one line (a newline is added) in a single write.
    pub fn append(&mut self, json: &str) -> Result<()> {
        self.line.clear();
        if self.torn {
            self.line.push(b'\n');
        }
        self.line
            .extend_from_slice(json.trim_end_matches('\n').as_bytes());
        self.line.push(b'\n');
        if let Err(e) = self.file.write_all(&self.line) {
            self.torn = true;
            return Err(crate::Error::io("appending to", &self.path, e));
        }
        self.torn = false;
        self.dirty = true;
        Ok(())
    }

    pub fn sync(&mut self) -> Result<()> {
        if self.dirty {
            self.file.sync_data().at("fsync of", &self.path)?;
            self.dirty = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// fsync if there are unsynced lines and `every` has passed since the last one.
    pub fn sync_if_due(&mut self, every: std::time::Duration) -> Result<()> {
        if self.dirty && self.last_sync.elapsed() >= every {
            self.sync()?;
        }
        Ok(())
    }
}

/// A string as a JSON string literal, escaped as `JSON.stringify` escapes it (so a pattern
/// built here matches text JS wrote).
pub fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Seconds since the Unix epoch, as the format's float timestamp.
pub fn now_unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An event line in the format's shape: timestamp, kind, step, rank, message, data (always
/// an object: a non-object `data` is kept under `value`).
pub fn event_line(
    kind: &str,
    step: Option<i64>,
    rank: i64,
    message: &str,
    data: serde_json::Value,
) -> String {
    let data = match data {
        serde_json::Value::Object(_) => data,
        other => serde_json::json!({ "value": other }),
    };
    serde_json::json!({
        "timestamp": now_unix_seconds(),
        "kind": kind,
        "step": step,
        "rank": rank,
        "message": message,
        "data": data,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_line_is_closed_before_appending() {
        let dir = crate::testutil::tempdir("events");
        let path = dir.join("events.jsonl");
        std::fs::write(&path, b"{\"kind\":\"a\"}\n{\"kind\":\"to").unwrap();
        let mut log = EventLog::open(&path).unwrap();
        log.append("{\"kind\":\"b\"}").unwrap();
        log.sync().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"kind\":\"a\"}\n{\"kind\":\"to\n{\"kind\":\"b\"}\n");
    }

    #[test]
    fn escapes_control_characters() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        let line = event_line(
            "recorder_drops",
            Some(3),
            0,
            "x\n\"y\"",
            serde_json::json!({ "count": 2 }),
        );
        assert!(line.starts_with("{\"timestamp\":"), "{line}");
        assert!(line.ends_with(",\"kind\":\"recorder_drops\",\"step\":3,\"rank\":0,\"message\":\"x\\n\\\"y\\\"\",\"data\":{\"count\":2}}"), "{line}");
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["message"], "x\n\"y\"");
    }
}
