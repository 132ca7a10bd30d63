//! CLIP_FRACTION_HIGH and RATIO_EXPLOSION: the PPO-style importance ratio leaving its
//! trust region. PPO clips the ratio at 1 ± ε with ε = 0.2 (Schulman et al. 2017); DAPO
//! raises the upper side to 0.28. Healthy clip fractions sit around 0.05–0.2 (the range
//! "The 37 Implementation Details of PPO", Huang et al. 2022, reports as normal).

use super::{need, num, Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{baseline, graded, is_constant, measured_levels, onset, smooth};

pub const CLIP: Detector = Detector {
    name: "clip_fraction",
    codes: &["CLIP_FRACTION_HIGH"],
    reads: "clip_fraction",
    run: run_clip,
};
pub const RATIO: Detector = Detector {
    name: "ratio",
    codes: &["RATIO_EXPLOSION"],
    reads: "ratio_p95 (or ratio_mean)",
    run: run_ratio,
};

/// Sustained clip fractions: 0.3 is past any healthy range (updates too large for the
/// trust region, warn); 0.5 means half the tokens get no gradient (critical).
const CLIP_WARN: f64 = 0.3;
const CLIP_CRIT: f64 = 0.5;
/// ratio_p95: 1.5 is well beyond the 1 + ε clip; 3 is verl's and OpenRLHF's dual-clip
/// bound c = 3 (Ye et al. 2020, "Mastering Complex Control in MOBA Games"), past which
/// even dual clipping stops trusting the sample.
const P95_WARN: f64 = 1.5;
const P95_CRIT: f64 = 3.0;
/// ratio_mean should stay within a few percent of 1 (on-policy data).
const MEAN_WARN: f64 = 0.1;
const MEAN_CRIT: f64 = 0.3;

fn run_clip(run: &RunInput) -> Outcome {
    let (name, xs) = match need(run, &["clip_fraction"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    if is_constant(xs, run.resolution(name)) {
        // one policy update per batch keeps the ratio at exactly 1: nothing can clip
        return Outcome::Silent(format!(
            "{name} is constant ({}): not informative (one update per batch?)",
            num(xs.iter().copied().find(|v| !v.is_nan()).unwrap_or(0.0))
        ));
    }
    let Some(base) = baseline(xs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(xs, 9);
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > CLIP_WARN,
        |_, x| x > CLIP_CRIT,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        xs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last);
    Outcome::Ran(vec![g.date(Finding::new(
        "CLIP_FRACTION_HIGH",
        g.severity,
        "clip fraction above the healthy 0.05–0.2".to_string(),
        "Policy updates are too large for the trust region: lower the learning rate, use fewer PPO epochs or mini-batches per batch, or check for stale (off-policy) rollouts.",
    ), &run.steps, at, now / CLIP_WARN)
    .levels(measured_levels(xs, &run.steps, name, at, g.last))
    .column(name)
    .evidence("baseline", base.median)
    .evidence("latest (smoothed)", now)])
}

fn run_ratio(run: &RunInput) -> Outcome {
    let (name, xs) = match need(run, &["ratio_p95", "ratio_mean"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    if is_constant(xs, run.resolution(name).max(1e-9)) {
        return Outcome::Silent(format!(
            "{name} is constant: not informative (one update per batch?)"
        ));
    }
    let Some(base) = baseline(xs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(xs, 5);
    let p95 = name == "ratio_p95";
    let dev = |x: f64| if p95 { x } else { (x - 1.0).abs() };
    let (w, c) = if p95 {
        (P95_WARN, P95_CRIT)
    } else {
        (MEAN_WARN, MEAN_CRIT)
    };
    let Some(g) = graded(&s, base.end, 3, 5, |_, x| dev(x) > w, |_, x| dev(x) > c) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        xs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let peak = (at..=g.last)
        .map(|i| xs[i])
        .filter(|v| !v.is_nan())
        .fold(
            f64::NAN,
            |a: f64, v| if a.is_nan() || dev(v) > dev(a) { v } else { a },
        );
    Outcome::Ran(vec![g.date(Finding::new(
        "RATIO_EXPLOSION",
        g.severity,
        format!("the importance ratio left the trust region ({name} peak {})", num(peak)),
        "The importance ratio left the trust region: the rollouts are off-policy or the update is too large. Check that rollout and trainer weights are in sync, lower the learning rate, and keep dual-clip (c = 3) on.",
    ), &run.steps, at, dev(peak) / w)
    .levels(measured_levels(xs, &run.steps, name, at, g.last))
    .column(name)
    .evidence("baseline", base.median)
    .evidence("peak", peak)])
}
