//! What the writer tells the user when writing fails. A failed part or event write is
//! counted at once, printed to stderr (rate-limited: a full disk fails every publish), and
//! summed into an outage that is written to `events.jsonl` as soon as writing works again —
//! during a full disk the event log cannot take it either.

use std::time::{Duration, Instant};

use crate::events::now_unix_seconds;

/// At most one stderr line per this long; the lines held back are counted in the next.
const STDERR_EVERY: Duration = Duration::from_secs(10);

/// Rows and events lost while writing failed, per stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    pub steps: u64,
    pub samples: u64,
    pub spans: u64,
    pub events: u64,
}

impl Lost {
    fn add(&mut self, o: Lost) {
        self.steps += o.steps;
        self.samples += o.samples;
        self.spans += o.spans;
        self.events += o.events;
    }
}

/// Failed writes not yet written down in `events.jsonl`.
#[derive(Debug, Clone)]
pub struct Outage {
    pub since: f64,
    pub until: f64,
    pub failures: u64,
    pub first_error: String,
    pub last_error: String,
    pub lost: Lost,
}

impl Outage {
    /// The `recorder_error` event's message and data.
    pub fn describe(&self) -> (String, serde_json::Value) {
        let l = &self.lost;
        let message = format!(
            "writing failed {} time{} over {:.1} s ({}): {} steps, {} samples, {} spans and {} events lost; writing works again",
            self.failures,
            if self.failures == 1 { "" } else { "s" },
            (self.until - self.since).max(0.0),
            self.last_error,
            l.steps,
            l.samples,
            l.spans,
            l.events
        );
        let data = serde_json::json!({
            "failures": self.failures,
            "since": self.since,
            "until": self.until,
            "first_error": self.first_error,
            "last_error": self.last_error,
            "lost": { "steps": l.steps, "samples": l.samples, "spans": l.spans, "events": l.events },
        });
        (message, data)
    }
}

#[derive(Default)]
pub struct Health {
    outage: Option<Outage>,
    /// A part file was published since the outage's last failure. An event line that goes
    /// through proves little (a full disk still takes a line in a file's last page), so an
    /// outage that lost rows is over only once a part is published again.
    part_since_failure: bool,
    last_stderr: Option<Instant>,
    held_back: u64,
}

impl Health {
    /// Notes a failed write; returns the stderr line to print now, if the rate allows one.
    pub fn failed(&mut self, run_dir: &str, error: &str, lost: Lost) -> Option<String> {
        self.part_since_failure = false;
        let now = now_unix_seconds();
        let o = self.outage.get_or_insert_with(|| Outage {
            since: now,
            until: now,
            failures: 0,
            first_error: error.to_string(),
            last_error: String::new(),
            lost: Lost::default(),
        });
        o.failures += 1;
        o.until = now;
        o.last_error = error.to_string();
        o.lost.add(lost);
        self.line(format!("rlprobe: recording {run_dir}: {error}"))
    }

    /// A line for stderr unless one was printed within `STDERR_EVERY`.
    pub fn line(&mut self, text: String) -> Option<String> {
        if self.last_stderr.is_some_and(|t| t.elapsed() < STDERR_EVERY) {
            self.held_back += 1;
            return None;
        }
        self.last_stderr = Some(Instant::now());
        let held = std::mem::take(&mut self.held_back);
        Some(if held > 0 {
            format!("{text} ({held} more such messages held back)")
        } else {
            text
        })
    }

    /// A part file was published.
    pub fn part_published(&mut self) {
        self.part_since_failure = true;
    }

    /// The outage to write down now, once writing works again (put it back with
    /// `restore` if that write fails): for lost rows, a part published since the last
    /// failure; for lost events only, the report's own line going through.
    pub fn take_outage(&mut self) -> Option<Outage> {
        let o = self.outage.as_ref()?;
        let rows_lost = o.lost.steps + o.lost.samples + o.lost.spans > 0;
        if rows_lost && !self.part_since_failure {
            return None;
        }
        self.outage.take()
    }

    pub fn restore(&mut self, o: Outage) {
        match &mut self.outage {
            // failures met while the report was out: fold them in
            Some(newer) => {
                newer.since = o.since;
                newer.first_error = o.first_error;
                newer.failures += o.failures;
                newer.lost.add(o.lost);
            }
            None => self.outage = Some(o),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_accumulate_into_one_outage_and_stderr_is_rate_limited() {
        let mut h = Health::default();
        let first = h.failed(
            "/r",
            "disk full",
            Lost {
                steps: 200,
                ..Lost::default()
            },
        );
        assert!(first.unwrap().contains("/r: disk full"));
        assert!(
            h.failed(
                "/r",
                "disk full again",
                Lost {
                    samples: 3,
                    ..Lost::default()
                }
            )
            .is_none(),
            "rate-limited"
        );
        assert!(
            h.take_outage().is_none(),
            "rows lost: not over until a part is published"
        );
        h.part_published();
        let o = h.take_outage().unwrap();
        assert_eq!((o.failures, o.lost.steps, o.lost.samples), (2, 200, 3));
        assert_eq!(o.first_error, "disk full");
        let (message, data) = o.describe();
        assert!(message.contains("200 steps, 3 samples"), "{message}");
        assert_eq!(
            data["lost"],
            serde_json::json!({ "steps": 200, "samples": 3, "spans": 0, "events": 0 }),
            "{data}"
        );
        assert_eq!(
            (data["failures"].as_u64(), data["first_error"].as_str()),
            (Some(2), Some("disk full")),
            "{data}"
        );
        h.failed(
            "/r",
            "later",
            Lost {
                steps: 1,
                ..Lost::default()
            },
        );
        h.restore(o);
        assert!(
            h.take_outage().is_none(),
            "a new failure: wait for a part again"
        );
        h.part_published();
        let merged = h.take_outage().unwrap();
        assert_eq!(
            (
                merged.failures,
                merged.lost.steps,
                merged.first_error.as_str()
            ),
            (3, 201, "disk full")
        );
    }

    #[test]
    fn an_outage_that_lost_only_events_is_over_when_its_report_goes_through() {
        let mut h = Health::default();
        h.failed(
            "/r",
            "events.jsonl: disk full",
            Lost {
                events: 2,
                ..Lost::default()
            },
        );
        assert_eq!(h.take_outage().map(|o| o.lost.events), Some(2));
    }
}
