//! Runs every detector over a run, records which could not run and why, and links
//! findings that share a root cause.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::detectors::{Outcome, DETECTORS};
use crate::finding::{sort_findings, Finding};
use crate::input::RunInput;

/// A detector that had no usable input (missing is not healthy).
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub detector: &'static str,
    pub codes: &'static [&'static str],
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
    /// Most severe first.
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    /// Detectors that ran (whether or not they found anything).
    pub ran: Vec<&'static str>,
    pub points: usize,
}

/// Root-cause links: (effect, cause). When both are found over overlapping steps, the
/// effect names the cause instead of being a second, independent problem.
const CAUSES: &[(&str, &str)] = &[
    // zero-variance groups *are* zero advantages, and zero advantages give no gradient
    ("ADVANTAGE_COLLAPSE", "ZERO_VARIANCE_GROUPS"),
    ("GRAD_VANISHING", "ADVANTAGE_COLLAPSE"),
    // all-correct (or all-wrong) groups have no variance
    ("ZERO_VARIANCE_GROUPS", "REWARD_SATURATION"),
    ("ZERO_VARIANCE_GROUPS", "REWARD_COLLAPSE"),
    // looping completions run to the cap
    ("TRUNCATION_COLLAPSE", "REPETITION_LOOPS"),
    ("TRUNCATION_COLLAPSE", "LENGTH_EXPLOITATION"),
    // an exploding update produces the NaNs and blows up the ratio and the KL
    ("NAN_INF", "GRAD_EXPLOSION"),
    ("RATIO_EXPLOSION", "GRAD_EXPLOSION"),
    ("CLIP_FRACTION_HIGH", "RATIO_EXPLOSION"),
    ("GRAD_NORM_SPIKE", "GRAD_EXPLOSION"),
];

/// Diagnoses a run: every detector, findings sorted most severe first. `since` keeps only
/// findings whose onset is at or after that step.
pub fn diagnose(run: &RunInput, since: Option<i64>) -> Diagnosis {
    let mut out = Diagnosis { points: run.len(), ..Default::default() };
    for (d, outcome) in DETECTORS.iter().zip(run_all(run)) {
        match outcome {
            Ok(Outcome::Ran(f)) => {
                out.ran.push(d.name);
                out.findings.extend(f);
            }
            Ok(Outcome::Silent(reason)) => out.skipped.push(Skipped { detector: d.name, codes: d.codes, reason }),
            Err(what) => out.skipped.push(Skipped { detector: d.name, codes: d.codes, reason: format!("detector failed: {what}") }),
        }
    }
    link_causes(&mut out.findings);
    if let Some(s) = since {
        out.findings.retain(|f| f.onset_step >= s);
    }
    sort_findings(&mut out.findings);
    out
}

/// Runs every detector, on up to 4 threads (detectors are independent and the slowest
/// ones dominate at 100,000 points), in `DETECTORS` order.
fn run_all(run: &RunInput) -> Vec<Result<Outcome, String>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Outcome, String>>>> = DETECTORS.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(d) = DETECTORS.get(i) else { break };
        // a bug in one detector must not take the whole diagnosis (or the host) down
        let r = catch_unwind(AssertUnwindSafe(|| (d.run)(run))).map_err(|panic| {
            panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default()
        });
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    };
    if workers == 1 || run.len() < 5_000 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(work);
            }
            work();
        });
    }
    slots.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(|| Err("not run".into()))).collect()
}

fn link_causes(findings: &mut [Finding]) {
    for _ in 0..3 {
        // repeated so a chain (advantage ← zero variance ← saturation) ends at its root
        for e in 0..findings.len() {
            let cause = findings[e].root_cause.unwrap_or(findings[e].code);
            for &(effect, c) in CAUSES {
                if effect != cause && effect != findings[e].code {
                    continue;
                }
                if let Some(cf) = findings.iter().find(|f| f.code == c && overlaps(f, &findings[e])) {
                    let root = cf.root_cause.unwrap_or(cf.code);
                    if root != findings[e].code {
                        findings[e].root_cause = Some(root);
                    }
                }
            }
        }
    }
}

fn overlaps(a: &Finding, b: &Finding) -> bool {
    a.onset_step <= b.last_step && b.onset_step <= a.last_step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_with_only_steps_lists_every_detector_as_not_run() {
        let run = RunInput::new((0..100).collect());
        let d = diagnose(&run, None);
        assert!(d.findings.is_empty());
        // nan_inf and the learning rate can run on any run; everything else needs input
        assert!(d.skipped.len() >= DETECTORS.len() - 2, "{:?}", d.skipped);
        assert!(d.skipped.iter().any(|s| s.detector == "entropy" && s.reason.contains("entropy_mean")));
    }

    #[test]
    fn a_nan_loss_is_critical_and_dated() {
        let mut loss = vec![0.5; 60];
        loss[40] = f64::NAN;
        let run = RunInput::new((0..60).map(|i| i * 10).collect()).with("loss", loss);
        let d = diagnose(&run, None);
        assert_eq!(d.findings.len(), 1);
        let f = &d.findings[0];
        assert_eq!((f.code, f.severity, f.onset_step), ("NAN_INF", crate::Severity::Critical, 400));
        assert!(diagnose(&run, Some(401)).findings.is_empty(), "--since drops earlier onsets");
    }

    #[test]
    fn missing_points_are_not_nan() {
        let mut c = crate::Column::from_raw(vec![0.5; 60], Some(&[true; 60]));
        c.values[10] = f64::NAN; // missing, not logged as NaN
        let mut run = RunInput::new((0..60).collect());
        run.insert("loss", c);
        assert!(diagnose(&run, None).findings.is_empty());
    }
}
