//! REWARD_HACKING: the train reward rises for the wrong reason. A composite of three
//! independent signs; one is a warning, two or more are critical:
//! - held-out divergence: a held-out metric falls while the train reward does not (the
//!   classic overoptimisation signature, Gao et al. 2023, "Scaling Laws for Reward Model
//!   Overoptimization");
//! - KL outrunning reward: the policy moves away from the reference fast while the reward
//!   barely moves;
//! - length-driven reward: within a step, reward correlates with completion length
//!   (Singhal et al. 2023, "A Long Way to Go: Investigating Length Correlations in RLHF").

use rlprobe_series::robust::median;

use super::{num, Detector, Outcome, MIN_POINTS};
use crate::finding::{EvidenceSample, Finding, Severity};
use crate::input::RunInput;
use crate::signal::{baseline, baseline_from, confidence, flags, onset, smooth, sustained};

pub const DETECTOR: Detector = Detector {
    name: "reward_hacking",
    codes: &["REWARD_HACKING"],
    reads:
        "reward_mean with extra.val*/eval* held-out metrics, kl_mean, per-sample reward and length",
    run,
};

/// Held-out metric names (verl `val/…`, `val-core/…`; TRL/HF `eval_…`).
pub const HELD_OUT_PREFIXES: &[&str] = &[
    "extra.val/",
    "extra.val-core/",
    "extra.val-aux/",
    "extra.val_",
    "extra.eval/",
    "extra.eval_",
];
/// Held-out evaluations needed before a fall is judged.
const HELD_OUT_MIN: usize = 12;
/// A held-out fall from its best of at least this many σ (of its own evaluation noise)
/// and this share of what it had gained.
const HELD_OUT_SIGMA: f64 = 4.0;
const HELD_OUT_SHARE: f64 = 0.3;
/// KL outrunning reward: KL multiplied by this over the span while the reward moved by
/// less than its point noise.
const KL_RATIO: f64 = 3.0;
const KL_SPAN: usize = 100;
/// Per-step Pearson correlation of reward with length (smoothed over 10 steps) above
/// this, where it started below `CORR_EARLY`.
const CORR: f64 = 0.6;
const CORR_EARLY: f64 = 0.3;

struct Sign {
    what: String,
    onset: usize,
    last: usize,
    strength: f64,
}

fn run(run: &RunInput) -> Outcome {
    let Some(r) = run.series("reward_mean") else {
        return Outcome::Silent("no reward_mean column".into());
    };
    if r.iter().filter(|v| !v.is_nan()).count() < MIN_POINTS {
        return Outcome::Silent(format!(
            "reward_mean has too few points (needs {MIN_POINTS})"
        ));
    }
    let held: Vec<(&str, &[f64])> = run
        .columns
        .iter()
        .filter(|(k, _)| HELD_OUT_PREFIXES.iter().any(|p| k.starts_with(p)))
        .map(|(k, c)| (k.as_str(), c.values.as_slice()))
        .collect();
    let has_kl = run.series("kl_mean").is_some();
    let has_samples = run.samples.as_ref().is_some_and(|s| {
        s.completion_len.iter().any(|v| !v.is_nan()) && s.reward.iter().any(|v| !v.is_nan())
    });
    if held.is_empty() && !has_kl && !has_samples {
        return Outcome::Silent(
            "no held-out metric (extra.val*/eval*), kl_mean or per-sample lengths".into(),
        );
    }
    let mut signs: Vec<Sign> = Vec::new();
    let mut columns = vec!["reward_mean".to_string()];
    for (name, xs) in held {
        if let Some(s) = held_out(r, name, xs) {
            columns.push(name.to_string());
            signs.push(s);
        }
    }
    if let Some(kl) = run.series("kl_mean") {
        if let Some(s) = kl_outruns(r, kl) {
            columns.push("kl_mean".into());
            signs.push(s);
        }
    }
    let mut corr_steps: Option<(i64, i64)> = None;
    if has_samples {
        if let Some((s, span)) = length_driven(run) {
            corr_steps = Some(span);
            signs.push(s);
        }
    }
    if signs.is_empty() {
        return Outcome::Ran(Vec::new());
    }
    signs.sort_by_key(|s| s.onset);
    let sev = if signs.len() >= 2 {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let last = signs.iter().map(|s| s.last).max().unwrap();
    let strength = signs.iter().map(|s| s.strength).fold(1.0, f64::max);
    let mut f = Finding::new(
        "REWARD_HACKING",
        sev,
        signs.iter().map(|s| s.what.as_str()).collect::<Vec<_>>().join("; "),
        "The reward is being gamed: read the top-reward samples, fix the reward function or the reward model's blind spot (length, format), add a length penalty or KL, and select checkpoints on the held-out metric.",
    )
    .at(&run.steps, signs[0].onset, last)
    .confidence(confidence(strength, (signs.len() as f64 / 2.0).min(1.0)))
    .evidence("signs", signs.len() as f64);
    for c in columns {
        f = f.column(&c);
    }
    if let (Some(samples), Some((a, b))) = (
        &run.samples,
        corr_steps.or(Some((run.steps[signs[0].onset], run.steps[last]))),
    ) {
        let mut idx: Vec<usize> = (0..samples.len())
            .filter(|&i| {
                samples.step[i] >= a && samples.step[i] <= b && !samples.reward[i].is_nan()
            })
            .collect();
        idx.sort_by(|&x, &y| {
            samples.reward[y]
                .total_cmp(&samples.reward[x])
                .then(samples.completion_len[y].total_cmp(&samples.completion_len[x]))
        });
        f.samples = idx
            .iter()
            .take(3)
            .map(|&i| EvidenceSample {
                step: samples.step[i],
                sample_id: samples.sample_id[i].clone(),
                why: "top reward".into(),
            })
            .collect();
    }
    Outcome::Ran(vec![f])
}

fn held_out(r: &[f64], name: &str, xs: &[f64]) -> Option<Sign> {
    let pts: Vec<usize> = (0..xs.len()).filter(|&i| !xs[i].is_nan()).collect();
    if pts.len() < HELD_OUT_MIN {
        return None;
    }
    let lower_is_better = ["loss", "error", "perplexity", "ppl"]
        .iter()
        .any(|w| name.contains(w));
    let v: Vec<f64> = pts
        .iter()
        .map(|&i| if lower_is_better { -xs[i] } else { xs[i] })
        .collect();
    let sm = smooth(&v, 3);
    // its evaluation noise from the first evaluations' point-to-point differences
    let base = baseline_from(&v, 0, HELD_OUT_MIN)?;
    let noise = base.sigma.max(1e-9);
    let rs = smooth(r, 9);
    let mut best = (f64::NEG_INFINITY, 0usize);
    let mut run_len = 0;
    for j in 2..v.len() {
        if sm[j] > best.0 {
            best = (sm[j], j);
            run_len = 0;
            continue;
        }
        if j < HELD_OUT_MIN {
            // the noise estimate comes from these first evaluations: judge only after them
            continue;
        }
        let fall = best.0 - sm[j];
        let gained = (best.0 - base.median).max(0.0);
        // the train reward at this evaluation is no lower than at the held-out best
        let (now, then) = (
            crate::signal::last_value(&rs, pts[j]),
            crate::signal::last_value(&rs, pts[best.1]),
        );
        let train_holds = now >= then - 1e-12;
        if fall > HELD_OUT_SIGMA * noise && fall > HELD_OUT_SHARE * gained && train_holds {
            run_len += 1;
            if run_len >= 3 {
                let last = (j..v.len())
                    .take_while(|&k| best.0 - sm[k] > HELD_OUT_SIGMA * noise)
                    .last()
                    .unwrap_or(j);
                return Some(Sign {
                    what: format!(
                        "held-out {} fell {} → {} while train reward held",
                        name.trim_start_matches("extra."),
                        num(signed(best.0, lower_is_better)),
                        num(signed(sm[j], lower_is_better))
                    ),
                    onset: pts[best.1],
                    last: pts[last],
                    strength: fall / (HELD_OUT_SIGMA * noise),
                });
            }
        } else {
            run_len = 0;
        }
    }
    None
}

fn signed(x: f64, flip: bool) -> f64 {
    if flip {
        -x
    } else {
        x
    }
}

fn kl_outruns(r: &[f64], kl: &[f64]) -> Option<Sign> {
    let kb = baseline(kl)?;
    let rb = baseline(r)?;
    let (ks, rs) = (smooth(kl, 9), smooth(r, 15));
    let start = kb.end.max(rb.end) + KL_SPAN;
    let carried = |v: &[f64], i: usize| crate::signal::last_value(v, i);
    let fl = flags(&ks, start, |i, x| {
        let before = carried(&ks, i - KL_SPAN);
        let gain = carried(&rs, i) - carried(&rs, i - KL_SPAN);
        before >= 0.01 && x > KL_RATIO * before && gain < rb.sigma
    });
    let (_, t) = sustained(&fl, 10, 10)?;
    let logs = crate::signal::ln_floor(kl, 1e-12);
    let at = onset(&logs, t.saturating_sub(KL_SPAN + 50), t);
    let last = crate::signal::last_flag(&fl).unwrap_or(t);
    Some(Sign {
        what: format!(
            "KL ×{} over {KL_SPAN} points while reward moved {}",
            num(ks[t] / carried(&ks, t - KL_SPAN)),
            num(carried(&rs, t) - carried(&rs, t - KL_SPAN))
        ),
        onset: at,
        last,
        strength: ks[t] / carried(&ks, t - KL_SPAN) / KL_RATIO,
    })
}

fn length_driven(run: &RunInput) -> Option<(Sign, (i64, i64))> {
    let s = run.samples.as_ref()?;
    // per-step correlation over the samples of that step (the point of its step)
    let mut corr = vec![f64::NAN; run.steps.len()];
    let mut i = 0;
    while i < s.len() {
        let mut j = i;
        while j < s.len() && s.step[j] == s.step[i] {
            j += 1;
        }
        if let (Ok(p), Some(c)) = (
            run.steps.binary_search(&s.step[i]),
            pearson(&s.reward[i..j], &s.completion_len[i..j]),
        ) {
            corr[p] = c;
        }
        i = j;
    }
    let present = corr.iter().filter(|v| !v.is_nan()).count();
    if present < MIN_POINTS {
        return None;
    }
    let early = median(
        &corr
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .take(20)
            .collect::<Vec<_>>(),
    )?;
    if early >= CORR_EARLY {
        return None;
    }
    let sm = smooth(&corr, 10);
    let from = (0..corr.len()).filter(|&i| !corr[i].is_nan()).nth(20)?;
    let fl = flags(&sm, from, |_, x| x > CORR);
    let (_, t) = sustained(&fl, 5, 5)?;
    let at = onset(&corr, t.saturating_sub(150).max(from.saturating_sub(20)), t);
    let last = crate::signal::last_flag(&fl).unwrap_or(t);
    Some((
        Sign {
            what: format!(
                "reward tracks completion length (per-step correlation {} → {})",
                num(early),
                num(sm[t])
            ),
            onset: at,
            last,
            strength: sm[t] / CORR,
        },
        (run.steps[at], run.steps[last]),
    ))
}

/// Pearson correlation of the pairs where both are present (None under 4 pairs or with
/// no spread).
fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .map(|(x, y)| (*x, *y))
        .collect();
    let n = pairs.len() as f64;
    if pairs.len() < 4 {
        return None;
    }
    let (ma, mb) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    if saa <= 0.0 || sbb <= 0.0 {
        return None;
    }
    Some(sab / (saa * sbb).sqrt())
}
