//! The doctor's evaluation on labelled synthetic runs: recall and onset error per
//! injected signature, false positives on healthy runs.

use crate::engine::diagnose;
use crate::finding::Severity;
use crate::synth::{healthy_run, labelled, INJECTIONS};

#[derive(Debug, Clone)]
pub struct SignatureRow {
    pub code: &'static str,
    pub variant: &'static str,
    pub runs: usize,
    /// Runs where the code was reported at warn or critical, active after the injection.
    pub detected: usize,
    /// |reported onset − injected onset| in logged points, per detected run.
    pub onset_errors: Vec<usize>,
}

impl SignatureRow {
    pub fn recall(&self) -> f64 {
        self.detected as f64 / self.runs as f64
    }
    pub fn median_onset_error(&self) -> f64 {
        let mut v = self.onset_errors.clone();
        v.sort_unstable();
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2] as f64,
            n => (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct HealthyRow {
    pub runs: usize,
    pub runs_with_critical: usize,
    pub runs_with_warn: usize,
    /// (code, count) of warn-or-worse findings on healthy runs.
    pub codes: Vec<(&'static str, usize)>,
}

pub struct Evaluation {
    pub signatures: Vec<SignatureRow>,
    pub healthy: HealthyRow,
}

impl Evaluation {
    pub fn overall_recall(&self) -> f64 {
        let (d, r) = self
            .signatures
            .iter()
            .fold((0, 0), |(d, r), s| (d + s.detected, r + s.runs));
        d as f64 / r as f64
    }
    pub fn median_onset_error(&self) -> f64 {
        let mut all: Vec<usize> = self
            .signatures
            .iter()
            .flat_map(|s| s.onset_errors.iter().copied())
            .collect();
        all.sort_unstable();
        all.get(all.len() / 2)
            .map(|&v| v as f64)
            .unwrap_or(f64::NAN)
    }
    pub fn warn_fp_rate(&self) -> f64 {
        self.healthy.runs_with_warn as f64 / self.healthy.runs as f64
    }
}

/// `seeds` labelled runs per injected signature and `healthy` healthy runs, drawn from
/// seeds `first..` (a different `first` gives runs the thresholds were never looked at on).
pub fn evaluate(first: u64, seeds: u64, healthy: u64) -> Evaluation {
    let mut signatures = Vec::new();
    for (w, &(code, variant, _)) in INJECTIONS.iter().enumerate() {
        let mut row = SignatureRow {
            code,
            variant,
            runs: 0,
            detected: 0,
            onset_errors: Vec::new(),
        };
        for seed in first..first + seeds {
            let (run, t0) = labelled(w, seed);
            row.runs += 1;
            let d = diagnose(&run, None);
            let hit = d
                .findings
                .iter()
                .filter(|f| {
                    f.code == code && f.severity >= Severity::Warn && f.last_step >= run.steps[t0]
                })
                .min_by_key(|f| f.onset_index.abs_diff(t0));
            if let Some(f) = hit {
                row.detected += 1;
                row.onset_errors.push(f.onset_index.abs_diff(t0));
            }
        }
        signatures.push(row);
    }
    let mut h = HealthyRow::default();
    for seed in first..first + healthy {
        let run = healthy_run(1_000_000 + seed);
        let d = diagnose(&run, None);
        h.runs += 1;
        if d.findings.iter().any(|f| f.severity == Severity::Critical) {
            h.runs_with_critical += 1;
        }
        if d.findings.iter().any(|f| f.severity >= Severity::Warn) {
            h.runs_with_warn += 1;
        }
        for f in d.findings.iter().filter(|f| f.severity >= Severity::Warn) {
            match h.codes.iter_mut().find(|(c, _)| *c == f.code) {
                Some(e) => e.1 += 1,
                None => h.codes.push((f.code, 1)),
            }
        }
    }
    Evaluation {
        signatures,
        healthy: h,
    }
}
