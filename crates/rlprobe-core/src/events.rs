//! `events.jsonl`: one JSON object per line, appended with one `write()` per line so a
//! crash tears at most the line being written. fsync runs on a cadence and on demand.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

pub struct EventLog {
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
    pub fn open(path: &Path) -> io::Result<EventLog> {
        let mut file = OpenOptions::new().create(true).append(true).read(true).open(path)?;
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(EventLog { file, line: Vec::with_capacity(512), dirty: false, last_sync: Instant::now(), torn: false })
    }

    /// Appends one line (a newline is added) in a single write.
    pub fn append(&mut self, json: &str) -> io::Result<()> {
        self.line.clear();
        if self.torn {
            self.line.push(b'\n');
        }
        self.line.extend_from_slice(json.trim_end_matches('\n').as_bytes());
        self.line.push(b'\n');
        if let Err(e) = self.file.write_all(&self.line) {
            self.torn = true;
            return Err(e);
        }
        self.torn = false;
        self.dirty = true;
        Ok(())
    }

    pub fn sync(&mut self) -> io::Result<()> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// fsync if there are unsynced lines and `every` has passed since the last one.
    pub fn sync_if_due(&mut self, every: std::time::Duration) -> io::Result<()> {
        if self.dirty && self.last_sync.elapsed() >= every {
            self.sync()?;
        }
        Ok(())
    }
}

/// Minimal JSON string escaping for events the Rust side composes itself.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // as JSON.stringify writes them, so a pattern built here matches text JS wrote
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Seconds since the Unix epoch, as the format's float timestamp.
pub fn now_unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An event line in the format's shape: timestamp, kind, step, rank, message, data.
/// `data_json` must already be a JSON object.
pub fn event_line(kind: &str, step: Option<i64>, rank: i64, message: &str, data_json: &str) -> String {
    let step = step.map_or("null".to_string(), |s| s.to_string());
    format!(
        "{{\"timestamp\":{},\"kind\":{},\"step\":{},\"rank\":{},\"message\":{},\"data\":{}}}",
        now_unix_seconds(),
        json_string(kind),
        step,
        rank,
        json_string(message),
        data_json
    )
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
        let line = event_line("recorder_drops", Some(3), 0, "x", "{\"count\":2}");
        assert!(line.contains("\"kind\":\"recorder_drops\",\"step\":3,\"rank\":0"));
    }
}
