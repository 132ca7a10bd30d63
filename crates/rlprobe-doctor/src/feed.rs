//! The live doctor of one recorder: a thread of its own that owns a [`LiveDoctor`], fed by
//! the writer's step tap with every published step part, its findings waiting until the
//! recorder takes them. The writer thread only hands a part over (a channel send); the
//! conversion and the detectors run here, off both the writer and the training thread.
//!
//! Protocol on the channel: `Rows(part)` appends the part's rows (each step once, at its
//! last write within the part; a step re-logged across parts merges in `LiveDoctor::push`)
//! and evaluates when due; `Finish(ack)` evaluates now and acknowledges, so `finish` returns
//! only after everything sent before it was evaluated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rlprobe_core::table::Table;
use rlprobe_core::writer::StepTap;

use crate::finding::Finding;
use crate::input::RunInput;
use crate::live::LiveDoctor;
use crate::run::run_input;

enum Msg {
    /// A published part, converted on the doctor thread (not the writer's).
    Rows(Table),
    /// Evaluate now and acknowledge.
    Finish(Sender<()>),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a panic while holding the lock must not wedge the feed
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the doctor thread found, and what it could not evaluate.
#[derive(Default)]
struct Found {
    findings: Mutex<Vec<Finding>>,
    /// Messages the thread could not handle (a panic in it): counted, the last one kept.
    failures: AtomicU64,
    last_failure: Mutex<Option<String>>,
}

pub struct LiveFeed {
    tx: Mutex<Option<Sender<Msg>>>,
    found: Arc<Found>,
    thread: Option<JoinHandle<()>>,
}

impl LiveFeed {
    /// Starts the doctor thread; returns it and the tap to give the recorder's writer.
    pub fn start(
        min_every: usize,
        resolution: HashMap<String, f64>,
        kl_per_token: bool,
    ) -> rlprobe_core::Result<(LiveFeed, StepTap)> {
        let (tx, rx) = channel::<Msg>();
        let found: Arc<Found> = Arc::default();
        let sink = found.clone();
        let thread = std::thread::Builder::new()
            .name("rlprobe-doctor".into())
            .spawn(move || {
                let mut doctor = LiveDoctor::new(min_every);
                doctor.set_kl_per_token(kl_per_token);
                for (c, r) in &resolution {
                    doctor.set_resolution(c, *r);
                }
                while let Ok(msg) = rx.recv() {
                    let (fresh, ack) = match msg {
                        Msg::Rows(table) => (
                            guarded(&sink, || {
                                push_rows(&mut doctor, &run_input(table));
                                doctor.poll()
                            }),
                            None,
                        ),
                        Msg::Finish(ack) => (guarded(&sink, || doctor.evaluate()), Some(ack)),
                    };
                    lock(&sink.findings).extend(fresh);
                    if let Some(ack) = ack {
                        // the caller may have stopped waiting (its timeout): nothing to tell
                        let _ = ack.send(());
                    }
                }
            })
            .map_err(|e| rlprobe_core::Error::System {
                action: "starting the live doctor's thread",
                source: Arc::new(e),
            })?;
        let tap_tx = Mutex::new(tx.clone());
        let tap = StepTap(Arc::new(move |table: &Table| {
            // fails only once the doctor thread is gone, and it goes with the feed
            let _ = lock(&tap_tx).send(Msg::Rows(table.clone()));
        }));
        Ok((
            LiveFeed {
                tx: Mutex::new(Some(tx)),
                found,
                thread: Some(thread),
            },
            tap,
        ))
    }

    /// Findings not yet taken.
    pub fn take(&self) -> Vec<Finding> {
        std::mem::take(&mut *lock(&self.found.findings))
    }

    /// Evaluates everything fed so far (waiting at most `timeout`), then returns the
    /// findings not yet taken (on a timeout, those found before it: never lost).
    pub fn finish(&self, timeout: Duration) -> Vec<Finding> {
        let (ack, done) = channel();
        if let Some(tx) = lock(&self.tx).as_ref() {
            if tx.send(Msg::Finish(ack)).is_ok() {
                let _ = done.recv_timeout(timeout);
            }
        }
        self.take()
    }

    /// Messages the doctor thread failed on (a caught panic), and the last such failure.
    pub fn failures(&self) -> (u64, Option<String>) {
        (
            self.found.failures.load(Ordering::Acquire),
            lock(&self.found.last_failure).clone(),
        )
    }
}

/// Runs one step of the doctor thread; a panic (a detector bug is contained by the engine,
/// this guards the feed itself) is counted and kept instead of ending the thread.
fn guarded(found: &Found, step: impl FnOnce() -> Vec<Finding>) -> Vec<Finding> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
        Ok(fresh) => fresh,
        Err(p) => {
            found.failures.fetch_add(1, Ordering::AcqRel);
            *lock(&found.last_failure) = Some(rlprobe_core::writer::panic_message(&p));
            Vec::new()
        }
    }
}

impl Drop for LiveFeed {
    fn drop(&mut self) {
        // the writer's tap holds a sender too; the thread ends once the recorder (and its
        // writer) is gone. Detach rather than block the JS thread on it.
        lock(&self.tx).take();
        drop(self.thread.take());
    }
}

/// Appends a part's rows to the doctor: present values, and logged NaN/±Inf as NaN (the
/// doctor tells a logged non-finite value from a missing one).
fn push_rows(doctor: &mut LiveDoctor, rows: &RunInput) {
    let mut values: Vec<(&str, f64)> = Vec::with_capacity(rows.columns.len());
    for (i, &step) in rows.steps.iter().enumerate() {
        values.clear();
        for (name, c) in &rows.columns {
            let v = c.values[i];
            if !v.is_nan() {
                values.push((name.as_str(), v));
            } else if c.nonfinite.binary_search(&i).is_ok() {
                values.push((name.as_str(), f64::NAN));
            }
        }
        doctor.push(step, &values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::diagnose;
    use crate::synth::{labelled, INJECTIONS};
    use rlprobe_core::schema::ColumnKind;

    /// Rows `range` of a run as the step part the writer would publish.
    fn part(run: &RunInput, range: std::ops::Range<usize>) -> Table {
        let mut t = Table::default();
        for (r, i) in range.enumerate() {
            t.column_mut("step", ColumnKind::I64)
                .unwrap()
                .push_number(run.steps[i] as f64);
            for (name, c) in &run.columns {
                let v = if c.nonfinite.contains(&i) {
                    Some(f64::NAN)
                } else {
                    Some(c.values[i]).filter(|v| !v.is_nan())
                };
                if let Some(v) = v {
                    let col = t.column_mut(name, ColumnKind::F64).unwrap();
                    col.pad_to(r);
                    col.push_number(v);
                }
            }
            t.finish_rows(r + 1);
        }
        t
    }

    #[test]
    fn parts_fed_through_the_tap_are_diagnosed_and_finish_waits_for_them() {
        let which = INJECTIONS.iter().position(|i| i.0 == "NAN_INF").unwrap();
        let (run, _) = labelled(which, 3);
        let (feed, tap) = LiveFeed::start(10, HashMap::new(), true).unwrap();
        for start in (0..run.len()).step_by(25) {
            (tap.0)(&part(&run, start..(start + 25).min(run.len())));
        }
        let found = feed.finish(Duration::from_secs(60));
        let codes: Vec<&str> = found.iter().map(|f| f.code).collect();
        assert!(codes.contains(&"NAN_INF"), "{codes:?}");
        let offline: Vec<&str> = diagnose(&run, None)
            .findings
            .iter()
            .map(|f| f.code)
            .collect();
        assert!(
            offline.iter().all(|c| codes.contains(c)),
            "live {codes:?} vs offline {offline:?}"
        );
        assert!(feed.take().is_empty(), "finish handed them over");
        assert!(
            feed.finish(Duration::from_secs(60)).is_empty(),
            "each finding once"
        );
        assert_eq!(feed.failures(), (0, None));
    }

    #[test]
    fn a_step_relogged_within_a_part_counts_once_at_its_last_write() {
        let (feed, tap) = LiveFeed::start(1, HashMap::new(), true).unwrap();
        let mut t = Table::default();
        // step 5 logged with a NaN loss, then re-logged with a finite one: no NaN remains
        for (r, loss) in [f64::NAN, 0.5].into_iter().enumerate() {
            t.column_mut("step", ColumnKind::I64)
                .unwrap()
                .push_number(5.0);
            t.column_mut("loss", ColumnKind::F64)
                .unwrap()
                .push_number(loss);
            t.finish_rows(r + 1);
        }
        (tap.0)(&t);
        let found = feed.finish(Duration::from_secs(60));
        assert!(
            !found.iter().any(|f| f.code == "NAN_INF"),
            "{:?}",
            found.iter().map(|f| f.code).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_feed_with_nothing_fed_finishes_empty_and_drops_without_blocking() {
        let (feed, tap) =
            LiveFeed::start(10, HashMap::from([("kl_mean".to_string(), 0.001)]), false).unwrap();
        assert!(feed.finish(Duration::from_secs(60)).is_empty());
        drop(feed);
        // the writer may still hold the tap: a part after the feed is gone is not an error
        (tap.0)(&Table::default());
    }
}
