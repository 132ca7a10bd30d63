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
    // either way round, decided by the dates (`by_onset`): when nothing terminates (the EOS
    // rate collapses) lengths run to the cap, and the length growth is the effect; when
    // lengths grow for their own sake, truncation follows once they reach the cap. Listed
    // first: on a tie the truncation is the root (length growth alone cannot cut
    // completions before it has reached the cap)
    ("LENGTH_EXPLOITATION", "TRUNCATION_COLLAPSE"),
    ("TRUNCATION_COLLAPSE", "LENGTH_EXPLOITATION"),
    // an exploding update produces the NaNs and blows up the ratio and the KL
    ("NAN_INF", "GRAD_EXPLOSION"),
    ("RATIO_EXPLOSION", "GRAD_EXPLOSION"),
    ("CLIP_FRACTION_HIGH", "RATIO_EXPLOSION"),
    ("GRAD_NORM_SPIKE", "GRAD_EXPLOSION"),
    // a policy that ran away from the reference is off the reward model's support: the
    // held-out divergence is what the KL blow-up looks like from the outside
    ("REWARD_HACKING", "KL_BLOWUP"),
];

/// Diagnoses a run: every detector, findings sorted most severe first. `since` keeps only
/// findings whose onset is at or after that step.
pub fn diagnose(run: &RunInput, since: Option<i64>) -> Diagnosis {
    let mut out = Diagnosis {
        points: run.len(),
        ..Default::default()
    };
    for (d, outcome) in DETECTORS.iter().zip(run_all(run)) {
        match outcome {
            Ok(Outcome::Ran(f)) => {
                out.ran.push(d.name);
                out.findings.extend(f);
            }
            Ok(Outcome::Silent(reason)) => out.skipped.push(Skipped {
                detector: d.name,
                codes: d.codes,
                reason,
            }),
            Err(what) => out.skipped.push(Skipped {
                detector: d.name,
                codes: d.codes,
                reason: format!("detector failed: {what}"),
            }),
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
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Outcome, String>>>> =
        DETECTORS.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(d) = DETECTORS.get(i) else { break };
        // a bug in one detector must not take the whole diagnosis (or the host) down
        let r = catch_unwind(AssertUnwindSafe(|| (d.run)(run))).map_err(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default()
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
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err("not run".into()))
        })
        .collect()
}

/// Onsets this many points apart or closer are a tie for `by_onset`.
const ONSET_TIE: usize = 10;

/// For a pair CAUSES lists both ways round: whether `cause` is the cause of `effect` by the
/// dates (the earlier onset is the cause; on a tie, the direction listed first).
fn by_onset(cause: &Finding, effect: &Finding) -> bool {
    let listed = |a: &str, b: &str| CAUSES.iter().position(|&(e, c)| e == a && c == b);
    let Some(back) = listed(cause.code, effect.code) else {
        // one way only: the table decides, but a cause cannot begin after its effect did
        return cause.onset_index <= effect.onset_index + ONSET_TIE;
    };
    if cause.onset_index.abs_diff(effect.onset_index) <= ONSET_TIE {
        listed(effect.code, cause.code).is_some_and(|fwd| fwd < back)
    } else {
        cause.onset_index < effect.onset_index
    }
}

fn link_causes(findings: &mut [Finding]) {
    // the direct cause first (the first match in CAUSES order), then follow the chain to
    // its root (advantage ← zero variance ← saturation); a pair listed both ways links one
    // way only (`by_onset`), so no chain has a cycle
    let direct: Vec<Option<usize>> = (0..findings.len())
        .map(|e| {
            CAUSES
                .iter()
                .filter(|(effect, _)| *effect == findings[e].code)
                .find_map(|(_, cause)| {
                    findings.iter().position(|f| {
                        f.code == *cause && overlaps(f, &findings[e]) && by_onset(f, &findings[e])
                    })
                })
        })
        .collect();
    for e in 0..findings.len() {
        let mut at = direct[e];
        let mut root = None;
        for _ in 0..findings.len() {
            let Some(c) = at else { break };
            root = Some(findings[c].code);
            at = direct[c];
        }
        findings[e].root_cause = root;
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
        assert!(d
            .skipped
            .iter()
            .any(|s| s.detector == "entropy" && s.reason.contains("entropy_mean")));
    }

    #[test]
    fn a_nan_loss_is_critical_and_dated() {
        let mut loss = vec![0.5; 60];
        loss[40] = f64::NAN;
        let run = RunInput::new((0..60).map(|i| i * 10).collect()).with("loss", loss);
        let d = diagnose(&run, None);
        assert_eq!(d.findings.len(), 1);
        let f = &d.findings[0];
        assert_eq!(
            (f.code, f.severity, f.onset_step),
            ("NAN_INF", crate::Severity::Critical, 400)
        );
        assert!(
            diagnose(&run, Some(401)).findings.is_empty(),
            "--since drops earlier onsets"
        );
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

#[cfg(test)]
mod linking {
    use super::*;

    fn dated(code: &'static str, onset: usize, last: usize) -> Finding {
        Finding::new(code, crate::Severity::Warn, String::new(), "").at(
            &(0..1000).collect::<Vec<i64>>(),
            onset,
            last,
        )
    }

    /// A KL blow-up that starts long after the held-out fall cannot be what caused it.
    #[test]
    fn a_cause_cannot_begin_after_its_effect() {
        let mut f = vec![
            dated("REWARD_HACKING", 100, 900),
            dated("KL_BLOWUP", 300, 900),
        ];
        link_causes(&mut f);
        assert_eq!(f[0].root_cause, None);
        let mut f = vec![
            dated("REWARD_HACKING", 100, 900),
            dated("KL_BLOWUP", 95, 900),
        ];
        link_causes(&mut f);
        assert_eq!(f[0].root_cause, Some("KL_BLOWUP"));
    }
    use crate::synth::{labelled, INJECTIONS};

    fn injection(code: &str, variant: Option<&str>) -> usize {
        INJECTIONS
            .iter()
            .position(|i| i.0 == code && variant.is_none_or(|v| i.1 == v))
            .unwrap()
    }

    #[test]
    fn zero_advantages_name_zero_variance_groups_and_saturation_names_both() {
        let (run, _) = labelled(injection("ZERO_VARIANCE_GROUPS", None), 1);
        let d = diagnose(&run, None);
        let adv = d
            .findings
            .iter()
            .find(|f| f.code == "ADVANTAGE_COLLAPSE")
            .expect("advantages collapse too");
        assert_eq!(adv.root_cause, Some("ZERO_VARIANCE_GROUPS"));
        assert_eq!(
            d.findings
                .iter()
                .find(|f| f.code == "ZERO_VARIANCE_GROUPS")
                .unwrap()
                .root_cause,
            None
        );

        let (run, _) = labelled(injection("REWARD_SATURATION", None), 1);
        let d = diagnose(&run, None);
        for code in ["ZERO_VARIANCE_GROUPS", "ADVANTAGE_COLLAPSE"] {
            let f = d
                .findings
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("{code} found"));
            assert_eq!(
                f.root_cause,
                Some("REWARD_SATURATION"),
                "{code} ends at the root of the chain"
            );
        }
    }

    #[test]
    fn below_resolution_is_not_checked_and_constant_clip_is_not_informative() {
        let (mut run, _) = labelled(injection("GRAD_VANISHING", None), 2);
        // as an imported log printing 3 decimals would show a small gradient norm
        let g = run.columns.get_mut("grad_norm").unwrap();
        for v in g.values.iter_mut() {
            *v = (*v * 0.01 * 1000.0).round() / 1000.0;
        }
        run.resolution.insert("grad_norm".into(), 0.001);
        let d = diagnose(&run, None);
        assert!(
            d.findings.iter().all(|f| f.code != "GRAD_VANISHING"),
            "{:?}",
            d.findings
        );
        assert!(
            d.skipped
                .iter()
                .any(|s| s.detector == "gradients" && s.reason.contains("resolution")),
            "{:?}",
            d.skipped
        );

        let mut run = RunInput::new((0..100).collect()).with("clip_fraction", vec![0.0; 100]);
        run.kl_per_token = true;
        let d = diagnose(&run, None);
        assert!(d
            .skipped
            .iter()
            .any(|s| s.detector == "clip_fraction" && s.reason.contains("not informative")));
    }

    #[test]
    fn evidence_samples_are_the_longest_truncated() {
        let w = injection("TRUNCATION_COLLAPSE", None);
        let (mut run, _) = (0..20)
            .map(|seed| labelled(w, seed))
            .find(|(r, _)| r.samples.is_some())
            .expect("a shape with samples");
        crate::live::sort_samples(run.samples.as_mut().unwrap());
        let d = diagnose(&run, None);
        let f = d
            .findings
            .iter()
            .find(|f| f.code == "TRUNCATION_COLLAPSE")
            .unwrap();
        assert_eq!(f.samples.len(), 3);
        let s = run.samples.as_ref().unwrap();
        for e in &f.samples {
            let i = s.sample_id.iter().position(|id| id == e.sample_id).unwrap();
            assert_eq!(s.truncated[i], Some(true));
            assert!(e.step >= f.onset_step && e.step <= f.last_step);
        }
    }
}

#[cfg(test)]
mod patterns {
    use super::*;
    use crate::synth::Rng;

    #[test]
    fn a_kl_blow_up_is_named_as_the_root_of_the_held_out_divergence() {
        let mut rng = Rng::new(7);
        let n: usize = 600;
        // train reward creeping up; KL runs away from point 300; the held-out metric
        // (evaluated every 10–30 points) falls from 320 and stays down
        let reward = (0..n)
            .map(|i| 0.3 + 0.0003 * i as f64 + 0.02 * rng.normal())
            .collect();
        let kl = (0..n)
            .map(|i| {
                let d: f64 = i.saturating_sub(300) as f64;
                0.02 * (0.04 * d).exp().min(200.0) * (0.1 * rng.normal()).exp()
            })
            .collect();
        let mut val = vec![f64::NAN; n];
        let mut i = 7;
        while i < n {
            val[i] = 0.6 - 0.0005 * i.saturating_sub(320) as f64 + 0.006 * rng.normal();
            i += rng.range(10, 31);
        }
        let run = RunInput::new((0..n as i64).collect())
            .with("reward_mean", reward)
            .with("kl_mean", kl)
            .with("extra.val/accuracy", val);
        let d = diagnose(&run, None);
        let find = |code: &str| {
            d.findings
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("{code} found: {:?}", d.findings))
        };
        let (kl, hacking) = (find("KL_BLOWUP"), find("REWARD_HACKING"));
        assert!(
            kl.onset_index.abs_diff(300) <= 10,
            "KL onset {}",
            kl.onset_index
        );
        assert_eq!(hacking.root_cause, Some("KL_BLOWUP"), "{}", hacking.message);
        assert_eq!(kl.root_cause, None);
    }

    /// 600 points: reward creeping up, completion lengths capped at 1024; `eos` and `len`
    /// give the EOS rate (or None: a truncation_rate from `trunc`) and the mean length.
    fn truncation_run(
        rng: &mut Rng,
        len: impl Fn(f64) -> f64,
        trunc: impl Fn(f64) -> f64,
        as_eos: bool,
    ) -> RunInput {
        let n: usize = 600;
        let d = |i: usize| i.saturating_sub(300) as f64;
        let reward = (0..n)
            .map(|i| 0.3 + 0.0003 * i as f64 + 0.02 * rng.normal())
            .collect();
        let lens: Vec<f64> = (0..n)
            .map(|i| (len(d(i)) * (1.0 + 0.03 * rng.normal())).min(1024.0))
            .collect();
        let cut: Vec<f64> = (0..n)
            .map(|i| (trunc(d(i)) + 0.005 * rng.normal()).clamp(0.0, 1.0))
            .collect();
        let run = RunInput::new((0..n as i64).collect())
            .with("reward_mean", reward)
            .with("completion_len_mean", lens)
            .with("completion_len_max", vec![1024.0; n]);
        if as_eos {
            run.with("eos_rate", cut.iter().map(|t| 1.0 - t).collect())
        } else {
            run.with("truncation_rate", cut)
        }
    }

    fn pair(d: &Diagnosis) -> (&Finding, &Finding) {
        let find = |code: &str| {
            d.findings
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("{code} found: {:?}", d.findings))
        };
        (find("TRUNCATION_COLLAPSE"), find("LENGTH_EXPLOITATION"))
    }

    #[test]
    fn an_eos_collapse_is_the_root_of_the_length_running_to_the_cap() {
        let mut rng = Rng::new(8);
        // EOS rate 0.98 → 0.01 from point 300; lengths 300 → 1000 as nothing terminates
        let run = truncation_run(
            &mut rng,
            |d| 1000.0 - 700.0 * (-d / 15.0).exp(),
            |d| 0.02 + 0.97 * (1.0 - (-d / 5.0).exp()),
            true,
        );
        let d = diagnose(&run, None);
        let (trunc, len) = pair(&d);
        assert!(
            trunc.onset_index.abs_diff(300) <= 5,
            "{}",
            trunc.onset_index
        );
        assert_eq!(trunc.root_cause, None, "{}", trunc.message);
        assert_eq!(
            len.root_cause,
            Some("TRUNCATION_COLLAPSE"),
            "{}",
            len.message
        );
    }

    #[test]
    fn length_growth_that_runs_into_the_cap_is_the_root_of_truncation() {
        let mut rng = Rng::new(9);
        // length ×e^(0.015 d) from 300; truncation climbs once the mean nears the cap
        let grow = |d: f64| 250.0 * (0.015 * d).exp().min(4.0);
        let run = truncation_run(
            &mut rng,
            grow,
            move |d| 0.02 + 0.95 * ((grow(d) - 600.0) / 350.0).clamp(0.0, 1.0),
            false,
        );
        let d = diagnose(&run, None);
        let (trunc, len) = pair(&d);
        assert!(
            len.onset_index + 20 < trunc.onset_index,
            "length {} before truncation {}",
            len.onset_index,
            trunc.onset_index
        );
        assert_eq!(len.root_cause, None, "{}", len.message);
        assert_eq!(
            trunc.root_cause,
            Some("LENGTH_EXPLOITATION"),
            "{}",
            trunc.message
        );
    }
}

#[cfg(test)]
mod sparse {
    use super::*;
    use crate::synth::{labelled, INJECTIONS};

    /// Every third point of every column missing (metrics logged on different cadences):
    /// the persistent signatures must still be found, at the same onset.
    #[test]
    fn gaps_in_a_column_do_not_hide_a_problem() {
        for code in [
            "ENTROPY_COLLAPSE",
            "GRAD_EXPLOSION",
            "TRUNCATION_COLLAPSE",
            "KL_BLOWUP",
            "REWARD_COLLAPSE",
        ] {
            let w = INJECTIONS.iter().position(|i| i.0 == code).unwrap();
            let (mut run, t0) = labelled(w, 3);
            for c in run.columns.values_mut() {
                for i in (1..c.values.len()).step_by(3) {
                    c.values[i] = f64::NAN;
                }
            }
            let d = diagnose(&run, None);
            let f = d
                .findings
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("{code} not found with gaps: {:?}", d.findings));
            assert!(
                f.onset_index.abs_diff(t0) <= 12,
                "{code}: onset {} vs {t0}",
                f.onset_index
            );
        }
    }
}
