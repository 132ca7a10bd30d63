//! KL_BLOWUP: the policy runs away from the reference model.
//!
//! Three ways in: an absolute level (only meaningful for a per-token KL, the format's
//! `kl_mean`; a sequence-level KL scales with length), a relative spike, and a runaway
//! trend (a sustained multiplication within a bounded number of points).

use rlprobe_series::robust::{causal_robust_z, ZOptions};

use super::{need, num, resolved, Detector, Outcome, MIN_POINTS};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;
use crate::signal::{
    agreement, confidence, early_baseline, flags, last_flag, measured_levels, merge_flags, onset,
    smooth, sustained,
};

pub const DETECTOR: Detector = Detector {
    name: "kl",
    codes: &["KL_BLOWUP"],
    reads: "kl_mean",
    run,
};

/// Per-token KL to the reference, in nats. Stable GRPO/PPO runs stay around 0.001–0.1
/// (TRL's GRPO β = 0.04 and verl's kl_coef 0.001 keep it there; InstructGPT, Ouyang et al.
/// 2022, reports policies drifting to ~10–20 nats per *sequence*, i.e. well under 0.1 per
/// token). Half a nat per token means most tokens are resampled; one nat is a different
/// model.
const ABS_WARN: f64 = 0.5;
const ABS_CRIT: f64 = 1.0;
/// Runaway: the smoothed KL multiplied by this within `RUNAWAY_SPAN` points, from a level
/// at which ratios mean something (below 0.01 nats, KL estimates are noise).
const RUNAWAY: f64 = 4.0;
const RUNAWAY_SPAN: usize = 50;
const RUNAWAY_FLOOR: f64 = 0.01;
/// Relative spike on a log scale (see gradients for the 6σ rationale), at least 3× the
/// trailing median.
const SPIKE_Z: f64 = 6.0;
const SPIKE_RATIO: f64 = 3.0;
/// A change of this factor inside the baseline window starts the run's failure, not its level.
const EARLY_CHANGE: f64 = 4.0;

fn run(run: &RunInput) -> Outcome {
    let (name, kl) = match need(run, &["kl_mean"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    // a runaway from the first points must not become the run's level
    let Some(base) = early_baseline(kl, EARLY_CHANGE) else {
        return Outcome::Silent("kl_mean: no baseline".into());
    };
    let res = run.resolution(name);
    let floor = RUNAWAY_FLOOR.max(10.0 * res);
    let steps = &run.steps;
    let s = smooth(kl, 5);

    let mut why: Vec<String> = Vec::new();
    let mut sev = Severity::Info;
    let mut trigger = usize::MAX;
    let mut flagged: Vec<Option<bool>> = vec![None; kl.len()];

    if run.kl_per_token {
        let warn = flags(&s, base.end, |_, x| x > ABS_WARN);
        let crit = flags(&s, base.end, |_, x| x > ABS_CRIT);
        if let Some((_, t)) = sustained(&crit, 3, 5) {
            sev = Severity::Critical;
            trigger = trigger.min(t);
            why.push(format!("above {ABS_CRIT} nats/token"));
            merge_flags(&mut flagged, &warn);
        } else if let Some((_, t)) = sustained(&warn, 3, 5) {
            sev = sev.max(Severity::Warn);
            trigger = trigger.min(t);
            why.push(format!("above {ABS_WARN} nats/token"));
            merge_flags(&mut flagged, &warn);
        }
    }

    let runaway = flags(&s, base.end + RUNAWAY_SPAN, |i, x| {
        let before = crate::signal::last_value(&s, i - RUNAWAY_SPAN);
        before >= floor && x > RUNAWAY * before && x > RUNAWAY * base.median.max(floor)
    });
    if let Some((_, t)) = sustained(&runaway, 5, 5) {
        let ratio = s[t] / base.median.max(floor);
        sev = sev.max(if ratio > 10.0 {
            Severity::Critical
        } else {
            Severity::Warn
        });
        trigger = trigger.min(t);
        why.push(format!(
            "×{} within {RUNAWAY_SPAN} points",
            num(s[t] / crate::signal::last_value(&s, t - RUNAWAY_SPAN))
        ));
        merge_flags(&mut flagged, &runaway);
    }

    let z = causal_robust_z(
        kl,
        ZOptions {
            window: 50,
            min_points: 20,
            log_scale: true,
        },
    );
    let med = rlprobe_series::rolling::rolling_median(kl, 50, 20);
    let before = |i: usize| crate::signal::last_value(&med, i.saturating_sub(1));
    let spike = flags(kl, base.end.max(1), |i, x| {
        z[i] > SPIKE_Z && x > SPIKE_RATIO * before(i) && x > floor
    });
    if let Some((_, t)) = sustained(&spike, 2, 3) {
        sev = sev.max(Severity::Warn);
        trigger = trigger.min(t);
        why.push(format!(
            "spike to {}× the trailing median",
            num(kl[t] / before(t))
        ));
        merge_flags(&mut flagged, &spike);
    }

    if why.is_empty() {
        return match resolved(
            run,
            name,
            base.median.max(
                s.iter()
                    .copied()
                    .filter(|v| !v.is_nan())
                    .fold(0.0, f64::max),
            ),
        ) {
            Err(w) => Outcome::Silent(w),
            Ok(()) => Outcome::Ran(Vec::new()),
        };
    }
    let logs = crate::signal::ln_floor(kl, 1e-12);
    let at = onset(
        &logs,
        // the last 200 points (bounded: the fit is quadratic in them), from the warm-up on so
        // a runaway from the first points can be dated there
        trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        trigger,
    );
    let last = last_flag(&flagged).unwrap_or(trigger);
    let peak = kl[at..=last]
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(0.0, f64::max);
    Outcome::Ran(vec![Finding::new(
        "KL_BLOWUP",
        sev,
        format!("KL blew up ({}; peak {})", why.join("; "), num(peak)),
        "Raise the KL coefficient (β) or lower the learning rate, check that the reference model and its tokenizer match the policy, and look for reward hacking driving the drift.",
    )
    .at(steps, at, last)
    .confidence(confidence(peak / base.median.max(floor) / RUNAWAY, agreement(&flagged, trigger, last)))
    .levels(measured_levels(kl, steps, name, at, last))
    .column(name)
    .evidence("baseline", base.median)
    .evidence("peak", peak)])
}
