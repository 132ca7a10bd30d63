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

// ---------------------------------------------------------------------------------------
// Out of sample: runs from `holdout`, a generator the thresholds were never tuned on.

use crate::finding::{Finding, Levels};
use crate::holdout;
use crate::input::RunInput;

/// Signatures whose finding is a change of one column's level: each must state its
/// levels (start, end, ratio) so a person can check them against the raw series.
pub const LEVEL_CODES: &[&str] = &[
    "GRAD_EXPLOSION",
    "GRAD_VANISHING",
    "KL_BLOWUP",
    "ENTROPY_COLLAPSE",
    "ENTROPY_EXPLOSION",
    "ZERO_VARIANCE_GROUPS",
    "ADVANTAGE_COLLAPSE",
    "CLIP_FRACTION_HIGH",
    "RATIO_EXPLOSION",
    "VALUE_FUNCTION_FAILURE",
    "REWARD_COLLAPSE",
    "LENGTH_EXPLOITATION",
    "TRUNCATION_COLLAPSE",
    "REPETITION_LOOPS",
    "THROUGHPUT_REGRESSION",
    "LOGPROB_MISMATCH",
];

/// Relative difference past which a stated number does not match the series.
pub const NUMBERS_TOLERANCE: f64 = 0.05;

#[derive(Debug, Clone)]
pub struct HoldoutRow {
    pub code: &'static str,
    pub variant: &'static str,
    pub runs: usize,
    /// Runs where the code was reported at warn or critical, active after the injection.
    pub detected: usize,
    /// |reported onset − injected onset| in logged points, per detected run.
    pub onset_errors: Vec<usize>,
    /// Detected level-type findings that state their levels / that do not.
    pub levels_stated: usize,
    pub levels_missing: usize,
    /// Stated start levels checked against the true pre-injection level, and those more
    /// than 5 % off it from a start window that reaches past the true onset (straddling).
    pub start_checked: usize,
    pub start_off: usize,
    /// Detected runs with an expected severity, and those reported at another one.
    pub severity_checked: usize,
    pub severity_wrong: usize,
    /// Detected runs with a root cause that must not be named, and those naming it.
    pub root_checked: usize,
    pub wrong_root: usize,
}

impl HoldoutRow {
    pub fn recall(&self) -> f64 {
        self.detected as f64 / self.runs as f64
    }
    pub fn median_onset_error(&self) -> f64 {
        quantile(&self.onset_errors, 0.5)
    }
    pub fn p90_onset_error(&self) -> f64 {
        quantile(&self.onset_errors, 0.9)
    }
}

/// The `q` quantile (nearest rank; the median averages the middle two).
fn quantile(xs: &[usize], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if q == 0.5 && n.is_multiple_of(2) {
        return (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0;
    }
    v[((q * n as f64).ceil() as usize).clamp(1, n) - 1] as f64
}

/// False alarms on one set of healthy runs.
#[derive(Debug, Clone, Default)]
pub struct AlarmRow {
    pub name: &'static str,
    pub runs: usize,
    pub runs_with_critical: usize,
    /// Runs with a warn-or-worse finding whose code the set does not accept.
    pub runs_with_warn: usize,
    pub codes: Vec<(&'static str, usize)>,
}

impl AlarmRow {
    pub fn warn_rate(&self) -> f64 {
        self.runs_with_warn as f64 / self.runs as f64
    }
}

/// Whether the numbers findings state match the series they are about.
#[derive(Debug, Clone, Default)]
pub struct NumbersCheck {
    /// Findings (any run, any severity) that state levels.
    pub stated: usize,
    /// Of those, findings whose start, end or ratio is more than 5 % off the medians of the
    /// column's present values at the stated steps.
    pub mismatched: usize,
    /// Warn-or-worse findings of a `LEVEL_CODES` signature that state no levels, by code.
    pub missing: Vec<(&'static str, usize)>,
    /// The first mismatches, described.
    pub examples: Vec<String>,
}

impl NumbersCheck {
    pub fn missing_total(&self) -> usize {
        self.missing.iter().map(|(_, n)| n).sum()
    }
}

pub struct HoldoutEvaluation {
    pub rows: Vec<HoldoutRow>,
    /// Generic healthy runs first, then the negatives.
    pub alarms: Vec<AlarmRow>,
    pub numbers: NumbersCheck,
    pub first_seed: u64,
}

/// `seeds` labelled runs per case of `holdout::cases()`, `healthy` healthy runs and
/// `seeds` runs per negative, all drawn from seeds `first..`.
pub fn evaluate_holdout(first: u64, seeds: u64, healthy: u64) -> HoldoutEvaluation {
    let mut numbers = NumbersCheck::default();
    let mut rows = Vec::new();
    for (w, (code, variant, _)) in holdout::cases().into_iter().enumerate() {
        let mut row = HoldoutRow {
            code,
            variant,
            runs: 0,
            detected: 0,
            onset_errors: Vec::new(),
            levels_stated: 0,
            levels_missing: 0,
            start_checked: 0,
            start_off: 0,
            severity_checked: 0,
            severity_wrong: 0,
            root_checked: 0,
            wrong_root: 0,
        };
        for seed in first..first + seeds {
            let l = holdout::labelled(w, seed);
            let d = diagnose(&l.run, None);
            check_numbers(&l.run, &d.findings, &mut numbers);
            row.runs += 1;
            let t0 = l.onset;
            let Some(f) = d
                .findings
                .iter()
                .filter(|f| {
                    f.code == code && f.severity >= Severity::Warn && f.last_step >= l.run.steps[t0]
                })
                .min_by_key(|f| f.onset_index.abs_diff(t0))
            else {
                continue;
            };
            row.detected += 1;
            row.onset_errors.push(f.onset_index.abs_diff(t0));
            if LEVEL_CODES.contains(&code) {
                match &f.levels {
                    Some(lv) => {
                        row.levels_stated += 1;
                        if let Some((_, truth)) = l.levels.iter().find(|(c, _)| *c == lv.column) {
                            row.start_checked += 1;
                            let straddles = lv.start_steps.1 >= l.run.steps[t0];
                            if straddles && off(lv.start, *truth) {
                                row.start_off += 1;
                            }
                        }
                    }
                    None => row.levels_missing += 1,
                }
            }
            if let Some(s) = l.severity {
                row.severity_checked += 1;
                if f.severity != s {
                    row.severity_wrong += 1;
                }
            }
            if l.not_root.is_some() {
                row.root_checked += 1;
                if f.root_cause == l.not_root {
                    row.wrong_root += 1;
                }
            }
        }
        rows.push(row);
    }
    let mut alarms = Vec::new();
    let mut generic = AlarmRow {
        name: "healthy runs",
        ..Default::default()
    };
    for seed in first..first + healthy {
        let run = holdout::healthy_run(seed);
        tally(&mut generic, &run, &[], &mut numbers);
    }
    alarms.push(generic);
    for (w, neg) in holdout::NEGATIVES.iter().enumerate() {
        let mut row = AlarmRow {
            name: neg.name,
            ..Default::default()
        };
        for seed in first..first + seeds {
            let run = holdout::negative(w, seed);
            tally(&mut row, &run, neg.accepts, &mut numbers);
        }
        alarms.push(row);
    }
    HoldoutEvaluation {
        rows,
        alarms,
        numbers,
        first_seed: first,
    }
}

fn tally(row: &mut AlarmRow, run: &RunInput, accepts: &[&str], numbers: &mut NumbersCheck) {
    let d = diagnose(run, None);
    check_numbers(run, &d.findings, numbers);
    row.runs += 1;
    let alarms: Vec<&Finding> = d
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warn && !accepts.contains(&f.code))
        .collect();
    if alarms.iter().any(|f| f.severity == Severity::Critical) {
        row.runs_with_critical += 1;
    }
    if !alarms.is_empty() {
        row.runs_with_warn += 1;
    }
    for f in alarms {
        count(&mut row.codes, f.code);
    }
}

fn count(codes: &mut Vec<(&'static str, usize)>, code: &'static str) {
    match codes.iter_mut().find(|(c, _)| *c == code) {
        Some(e) => e.1 += 1,
        None => codes.push((code, 1)),
    }
}

/// More than `NUMBERS_TOLERANCE` apart, relative to the larger magnitude.
fn off(a: f64, b: f64) -> bool {
    if a == b {
        return false;
    }
    if !a.is_finite() || !b.is_finite() {
        return true;
    }
    (a - b).abs() > NUMBERS_TOLERANCE * a.abs().max(b.abs())
}

/// The median of `column`'s present values at steps `from..=to`, re-derived from the run.
fn median_at_steps(run: &RunInput, column: &str, (from, to): (i64, i64)) -> Option<f64> {
    let xs = run.series(column)?;
    let v: Vec<f64> = run
        .steps
        .iter()
        .zip(xs)
        .filter(|(s, x)| **s >= from && **s <= to && !x.is_nan())
        .map(|(_, x)| *x)
        .collect();
    rlprobe_series::robust::median(&v)
}

/// Why `l` does not match the run's series, if it does not.
pub fn levels_mismatch(run: &RunInput, l: &Levels) -> Option<String> {
    let (Some(start), Some(end)) = (
        median_at_steps(run, &l.column, l.start_steps),
        median_at_steps(run, &l.column, l.end_steps),
    ) else {
        return Some(format!(
            "{}: no present values at steps {:?} / {:?}",
            l.column, l.start_steps, l.end_steps
        ));
    };
    let ratio = end / start;
    let mut bad = Vec::new();
    if off(l.start, start) {
        bad.push(format!("start {} vs {start}", l.start));
    }
    if off(l.end, end) {
        bad.push(format!("end {} vs {end}", l.end));
    }
    if off(l.ratio, ratio) {
        bad.push(format!("ratio {} vs {ratio}", l.ratio));
    }
    (!bad.is_empty()).then(|| format!("{}: {}", l.column, bad.join(", ")))
}

fn check_numbers(run: &RunInput, findings: &[Finding], numbers: &mut NumbersCheck) {
    for f in findings {
        match &f.levels {
            Some(l) => {
                numbers.stated += 1;
                if let Some(why) = levels_mismatch(run, l) {
                    numbers.mismatched += 1;
                    if numbers.examples.len() < 10 {
                        numbers.examples.push(format!("{} {why}", f.code));
                    }
                }
            }
            None if f.severity >= Severity::Warn && LEVEL_CODES.contains(&f.code) => {
                count(&mut numbers.missing, f.code)
            }
            None => {}
        }
    }
}

impl HoldoutEvaluation {
    /// The tables for docs/doctor.md, in Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        s.push_str("| signature | injected as | runs | recall | median onset error | p90 onset error | levels stated | start straddles | wrong severity | wrong root |\n");
        s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let frac = |a: usize, b: usize| {
            if b == 0 {
                "—".to_string()
            } else {
                format!("{a}/{b}")
            }
        };
        for r in &self.rows {
            let level = LEVEL_CODES.contains(&r.code);
            s.push_str(&format!(
                "| {} | {} | {} | {:.0} % | {} | {} | {} | {} | {} | {} |\n",
                r.code,
                r.variant,
                r.runs,
                100.0 * r.recall(),
                r.median_onset_error(),
                r.p90_onset_error(),
                if level {
                    frac(r.levels_stated, r.levels_stated + r.levels_missing)
                } else {
                    "—".into()
                },
                frac(r.start_off, r.start_checked),
                frac(r.severity_wrong, r.severity_checked),
                frac(r.wrong_root, r.root_checked),
            ));
        }
        s.push_str("\n| healthy set | runs | with a critical finding | with a warning | codes |\n");
        s.push_str("|---|---:|---:|---:|---|\n");
        for a in &self.alarms {
            let codes: Vec<String> = a.codes.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
            s.push_str(&format!(
                "| {} | {} | {} | {} ({:.1} %) | {} |\n",
                a.name,
                a.runs,
                a.runs_with_critical,
                a.runs_with_warn,
                100.0 * a.warn_rate(),
                if codes.is_empty() {
                    "—".into()
                } else {
                    codes.join(", ")
                }
            ));
        }
        let missing: Vec<String> = self
            .numbers
            .missing
            .iter()
            .map(|(c, n)| format!("{c} ×{n}"))
            .collect();
        s.push_str(&format!(
            "\nStated numbers: {} findings state levels, {} of them more than 5 % off the series at the stated steps; {} level-type findings state no levels{}.\n",
            self.numbers.stated,
            self.numbers.mismatched,
            self.numbers.missing_total(),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" ({})", missing.join(", "))
            }
        ));
        for e in &self.numbers.examples {
            s.push_str(&format!("- {e}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::measured_levels;

    fn run() -> RunInput {
        // 0.4 for 40 points, then 0.1; logged every 5 steps, one point missing
        let mut xs: Vec<f64> = (0..100)
            .map(|i| if i < 40 { 0.4 } else { 0.1 } + 0.001 * (i % 3) as f64)
            .collect();
        xs[50] = f64::NAN;
        RunInput::new((0..100).map(|i| 5 * i).collect()).with("entropy_mean", xs)
    }

    #[test]
    fn levels_measured_from_the_series_match_it() {
        let r = run();
        let xs = r.series("entropy_mean").unwrap();
        let l = measured_levels(xs, &r.steps, "entropy_mean", 40, 99).unwrap();
        assert_eq!(levels_mismatch(&r, &l), None, "{l:?}");
    }

    #[test]
    fn levels_that_do_not_match_the_series_are_named() {
        let r = run();
        let xs = r.series("entropy_mean").unwrap();
        let good = measured_levels(xs, &r.steps, "entropy_mean", 40, 99).unwrap();
        // a start window that straddles the change states a start the series does not have
        let straddling = Levels {
            start: 0.4,
            start_steps: (150, 350),
            ..good.clone()
        };
        let why = levels_mismatch(&r, &straddling).expect("a mismatch");
        assert!(why.contains("start 0.4"), "{why}");
        // a ratio that is not end / start
        let ratio = Levels {
            ratio: good.ratio * 1.1,
            ..good.clone()
        };
        assert!(levels_mismatch(&r, &ratio).unwrap().contains("ratio"));
        // 4 % off is within the tolerance, a column the run lacks is not
        let close = Levels {
            end: good.end * 1.04,
            ..good.clone()
        };
        assert_eq!(levels_mismatch(&r, &close), None);
        let elsewhere = Levels {
            column: "kl_mean".into(),
            ..good
        };
        assert!(levels_mismatch(&r, &elsewhere)
            .unwrap()
            .contains("no present values"));
    }

    #[test]
    fn quantiles_of_onset_errors() {
        assert_eq!(quantile(&[4, 1, 3, 2], 0.5), 2.5);
        assert_eq!(quantile(&[5, 1, 3], 0.5), 3.0);
        assert_eq!(quantile(&(1..=10).collect::<Vec<_>>(), 0.9), 9.0);
        assert!(quantile(&[], 0.9).is_nan());
    }
}
