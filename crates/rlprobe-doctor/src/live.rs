//! The live doctor: rows arrive one at a time (from the recorder's writer thread or from
//! `probe watch` reading new parts); every so often the same detectors run over
//! everything seen so far and only findings not reported before come out.
//!
//! Re-running over the whole prefix keeps one code path for offline and live diagnosis.
//! Its cost stays bounded by spacing evaluations in proportion to the run's length
//! (every `max(min_every, points / 50)` points), so a 100,000-point run costs about 50
//! full diagnoses in total, off the training thread.

use std::collections::HashMap;

use crate::engine::diagnose;
use crate::finding::{Finding, Severity};
use crate::input::{RunInput, Samples};

pub struct LiveDoctor {
    run: RunInput,
    /// code → (worst severity reported, last step of that report)
    reported: HashMap<&'static str, (Severity, i64)>,
    evaluated_at: usize,
    min_every: usize,
}

impl Default for LiveDoctor {
    fn default() -> Self {
        LiveDoctor::new(10)
    }
}

impl LiveDoctor {
    /// Evaluates at most every `min_every` new points.
    pub fn new(min_every: usize) -> LiveDoctor {
        LiveDoctor {
            run: RunInput::new(Vec::new()),
            reported: HashMap::new(),
            evaluated_at: 0,
            min_every: min_every.max(1),
        }
    }

    pub fn set_resolution(&mut self, column: &str, resolution: f64) {
        self.run.resolution.insert(column.to_string(), resolution);
    }

    pub fn set_kl_per_token(&mut self, per_token: bool) {
        self.run.kl_per_token = per_token;
    }

    pub fn points(&self) -> usize {
        self.run.len()
    }

    /// Appends one logged point. A step equal to the last one is merged into its row (a
    /// trainer logging eval metrics at a train step): the later present value wins, as in
    /// the offline reader. An earlier step is ignored (a detector must not see a step twice).
    pub fn push(&mut self, step: i64, values: &[(&str, f64)]) {
        let i = match self.run.steps.last() {
            Some(&last) if step < last => return,
            Some(&last) if step == last => self.run.steps.len() - 1,
            _ => {
                self.run.steps.push(step);
                self.run.steps.len() - 1
            }
        };
        for &(name, v) in values {
            let col = match self.run.columns.get_mut(name) {
                Some(c) => c,
                None => self.run.columns.entry(name.to_string()).or_default(),
            };
            col.values.resize(i + 1, f64::NAN);
            col.nonfinite.retain(|&j| j != i);
            if v.is_finite() {
                col.values[i] = v;
            } else {
                col.values[i] = f64::NAN;
                col.nonfinite.push(i);
            }
        }
    }

    /// Appends per-sample records (reward, length, truncated) for evidence and statistics.
    pub fn push_sample(
        &mut self,
        step: i64,
        sample_id: String,
        reward: f64,
        len: f64,
        truncated: Option<bool>,
    ) {
        self.run
            .samples
            .get_or_insert_with(Samples::default)
            .push(step, &sample_id, reward, len, truncated);
    }

    /// Whether enough new points arrived for `poll` to evaluate.
    pub fn due(&self) -> bool {
        let n = self.run.len();
        n >= self.evaluated_at + self.min_every.max(n / 50)
    }

    /// Evaluates if due; returns the findings not reported before (a code is reported
    /// again when its severity rises or when a new episode starts after the last one).
    pub fn poll(&mut self) -> Vec<Finding> {
        if !self.due() {
            return Vec::new();
        }
        self.evaluate()
    }

    /// Evaluates now (e.g. at the end of a run).
    pub fn evaluate(&mut self) -> Vec<Finding> {
        let n = self.run.len();
        self.evaluated_at = n;
        for c in self.run.columns.values_mut() {
            c.values.resize(n, f64::NAN);
        }
        if let Some(s) = self.run.samples.as_mut() {
            sort_samples(s);
        }
        let mut fresh = Vec::new();
        for f in diagnose(&self.run, None).findings {
            let new = match self.reported.get(f.code) {
                None => true,
                Some(&(sev, last)) => f.severity > sev || f.onset_step > last,
            };
            let entry = self
                .reported
                .entry(f.code)
                .or_insert((f.severity, f.last_step));
            if new {
                *entry = (entry.0.max(f.severity), f.last_step);
                fresh.push(f);
            } else {
                entry.1 = entry.1.max(f.last_step);
            }
        }
        fresh
    }
}

/// Orders samples by step (stable), as the per-step statistics expect.
pub fn sort_samples(s: &mut Samples) {
    if s.step.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let mut idx: Vec<usize> = (0..s.len()).collect();
    idx.sort_by_key(|&i| s.step[i]);
    let take = |v: &Vec<f64>| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
    *s = Samples {
        step: idx.iter().map(|&i| s.step[i]).collect(),
        sample_id: idx.iter().map(|&i| &s.sample_id[i]).collect(),
        reward: take(&s.reward),
        completion_len: take(&s.completion_len),
        truncated: idx.iter().map(|&i| s.truncated[i]).collect(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{labelled, INJECTIONS};

    /// Feeds a run to a live doctor in parts of `part` points, as the writer would.
    fn live(run: &RunInput, part: usize) -> Vec<Finding> {
        let mut d = LiveDoctor::new(10);
        let mut all = Vec::new();
        for (i, &step) in run.steps.iter().enumerate() {
            let values: Vec<(&str, f64)> = run
                .columns
                .iter()
                .filter_map(|(n, c)| {
                    if !c.values[i].is_nan() {
                        Some((n.as_str(), c.values[i]))
                    } else if c.nonfinite.contains(&i) {
                        Some((n.as_str(), f64::NAN))
                    } else {
                        None
                    }
                })
                .collect();
            d.push(step, &values);
            if (i + 1) % part == 0 {
                all.extend(d.poll());
            }
        }
        all.extend(d.evaluate());
        all
    }

    #[test]
    fn live_reports_what_offline_finds_once_each() {
        for (w, &(code, _, _)) in INJECTIONS
            .iter()
            .enumerate()
            .filter(|(_, i)| i.1 != "length-driven reward")
        {
            let (run, _) = labelled(w, 7);
            let offline: std::collections::BTreeSet<&str> = diagnose(&run, None)
                .findings
                .iter()
                .map(|f| f.code)
                .collect();
            let found = live(&run, 20);
            let codes: std::collections::BTreeSet<&str> = found.iter().map(|f| f.code).collect();
            assert!(codes.contains(code), "{code}: live found {codes:?}");
            assert!(
                offline.is_subset(&codes),
                "{code}: offline {offline:?} vs live {codes:?}"
            );
            // at most one report per code and severity (a re-report needs a new episode or a worse severity)
            let mut seen = std::collections::BTreeSet::new();
            for f in &found {
                assert!(
                    seen.insert((f.code, f.severity, f.onset_step)),
                    "{code}: {} reported twice",
                    f.code
                );
            }
        }
    }

    #[test]
    fn a_relogged_step_merges_and_an_earlier_one_is_ignored() {
        let mut d = LiveDoctor::new(1);
        d.push(5, &[("loss", 1.0)]);
        d.push(5, &[("reward_mean", 0.5)]);
        d.push(4, &[("loss", f64::NAN)]);
        assert_eq!(d.points(), 1);
        assert_eq!(
            (
                d.run.columns["loss"].values[0],
                d.run.columns["reward_mean"].values[0]
            ),
            (1.0, 0.5)
        );
        assert!(d.evaluate().is_empty());
        d.push(5, &[("loss", f64::NAN)]);
        assert_eq!(d.evaluate()[0].code, "NAN_INF", "the later write wins");
    }
}
