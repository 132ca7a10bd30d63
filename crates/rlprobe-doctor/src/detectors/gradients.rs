//! GRAD_NORM_SPIKE, GRAD_EXPLOSION, GRAD_VANISHING on the pre-clip gradient norm.
//!
//! Gradient norms are heavy-tailed and positive, so spikes are scored on a log scale with
//! a causal robust z (trailing median and MAD). Explosion and vanishing are judged
//! against the run's own early level: healthy norms differ by orders of magnitude across
//! models, so no absolute level transfers.

use rlprobe_series::robust::{causal_robust_z, ZOptions};

use super::{need, num, resolved, Detector, Outcome, MIN_POINTS};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;
use crate::signal::{agreement, baseline, confidence, flags, last_flag, onset, sustained};

pub const DETECTOR: Detector = Detector {
    name: "gradients",
    codes: &["GRAD_NORM_SPIKE", "GRAD_EXPLOSION", "GRAD_VANISHING"],
    reads: "grad_norm",
    run,
};

/// A spike: ≥ 6 robust σ above the trailing 50 points on a log scale *and* ≥ 5× their
/// median. 6σ keeps the false-alarm rate of a Gaussian log-norm near 1e-9 per point; the
/// 5× floor follows the loss-spike heuristics of large-scale training (PaLM, Chowdhery et
/// al. 2022, §5.1, skipped batches around spikes of this size).
const SPIKE_Z: f64 = 6.0;
const SPIKE_RATIO: f64 = 5.0;
/// Spikes that recur: this many within `SPIKE_WINDOW` points is a warning, fewer is info
/// (isolated spikes are routine in RL fine-tuning and get clipped: TRL and verl default to
/// max_grad_norm = 1.0).
const SPIKE_REPEAT: usize = 3;
const SPIKE_WINDOW: usize = 100;
/// Explosion: a sustained level this many times the early baseline (warn, critical).
const EXPLODE_WARN: f64 = 5.0;
const EXPLODE_CRIT: f64 = 10.0;
/// Vanishing: a sustained level below 1/100 of the early baseline.
const VANISH: f64 = 0.01;

fn run(run: &RunInput) -> Outcome {
    let (name, g) = match need(run, &["grad_norm"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    let Some(base) = baseline(g) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    if let Err(why) = resolved(run, name, base.median) {
        return Outcome::Silent(why);
    }
    let res = run.resolution(name);
    let steps = &run.steps;
    let mut out = Vec::new();

    // explosion: sustained level against the early baseline
    let hi = |k: f64| flags(g, base.end, |_, x| x > k * base.median);
    let warn = hi(EXPLODE_WARN);
    let crit = hi(EXPLODE_CRIT);
    let explosion = sustained(&crit, 3, 5)
        .map(|e| (Severity::Critical, e))
        .or_else(|| sustained(&warn, 5, 5).map(|e| (Severity::Warn, e)));
    let mut explosion_from = usize::MAX;
    if let Some((sev, (_, trigger))) = explosion {
        let logs = crate::signal::ln_floor(g, 1e-300);
        let at = onset(
            &logs,
            trigger.saturating_sub(200).max(base.end.saturating_sub(10)),
            trigger,
        );
        let last = last_flag(&warn).unwrap_or(trigger);
        let peak = g[at..=last]
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .fold(0.0, f64::max);
        explosion_from = at;
        out.push(
            Finding::new(
                "GRAD_EXPLOSION",
                sev,
                format!("grad_norm {} → {} ({}× its early level)", num(base.median), num(peak), num(peak / base.median)),
                "Lower the learning rate (or restart warm-up), keep max_grad_norm at 1.0, and check for a bad batch or a reward-scale change at the onset; resume from a checkpoint before it.",
            )
            .at(steps, at, last)
            .confidence(confidence(peak / base.median / EXPLODE_WARN, agreement(&warn, trigger, last)))
            .column(name)
            .evidence("baseline", base.median)
            .evidence("peak", peak),
        );
    }

    // spikes: single-point excursions before any explosion
    let z = causal_robust_z(
        g,
        ZOptions {
            window: 50,
            min_points: 20,
            log_scale: true,
        },
    );
    let med = rlprobe_series::rolling::rolling_median(g, 50, 20);
    // the trailing median before each point (carried over missing points)
    let before = |i: usize| crate::signal::last_value(&med, i - 1);
    let spikes: Vec<usize> = (base.end.max(1)..g.len().min(explosion_from))
        .filter(|&i| {
            z[i] > SPIKE_Z && g[i] > SPIKE_RATIO * before(i) && g[i] - before(i) > 2.0 * res
        })
        .collect();
    if !spikes.is_empty() {
        // the densest run of spikes within SPIKE_WINDOW points
        let mut best = (0usize, 1usize);
        for a in 0..spikes.len() {
            let n = spikes[a..]
                .iter()
                .take_while(|&&s| s < spikes[a] + SPIKE_WINDOW)
                .count();
            if n > best.1 {
                best = (a, n);
            }
        }
        let (first, count) = (spikes[best.0], best.1);
        let sev = if count >= SPIKE_REPEAT {
            Severity::Warn
        } else {
            Severity::Info
        };
        let worst = spikes.iter().map(|&i| g[i] / before(i)).fold(0.0, f64::max);
        out.push(
            Finding::new(
                "GRAD_NORM_SPIKE",
                sev,
                format!("{} grad_norm spike(s) (up to {}× the trailing median), {count} within {SPIKE_WINDOW} points", spikes.len(), num(worst)),
                "Recurring spikes precede divergence: lower the learning rate or raise warm-up, keep gradient clipping on, and inspect the batches at the spike steps (outlier rewards, very long completions).",
            )
            .at(steps, first, spikes[best.0 + count - 1])
            .confidence(confidence(worst / SPIKE_RATIO, count as f64 / SPIKE_REPEAT as f64))
            .column(name)
            .evidence("spikes", spikes.len() as f64)
            .evidence("max ratio to trailing median", worst),
        );
    }

    // vanishing: a sustained collapse of the norm (exact zeros from a full-precision log
    // are worse: nothing is learning)
    let low = flags(g, base.end, |_, x| {
        x < VANISH * base.median && (res == 0.0 || x > res)
    });
    let zero = flags(g, base.end, |_, x| x == 0.0 && res == 0.0);
    let vanish = sustained(&zero, 5, 5)
        .map(|e| (Severity::Critical, e))
        .or_else(|| sustained(&low, 5, 5).map(|e| (Severity::Warn, e)));
    if let Some((sev, (_, trigger))) = vanish {
        let logs = crate::signal::ln_floor(g, base.median * 1e-6);
        let at = onset(
            &logs,
            trigger.saturating_sub(200).max(base.end.saturating_sub(10)),
            trigger,
        );
        let last = last_flag(&low)
            .into_iter()
            .chain(last_flag(&zero))
            .max()
            .unwrap_or(trigger);
        let now = crate::signal::last_value(g, last);
        out.push(
            Finding::new(
                "GRAD_VANISHING",
                sev,
                format!("grad_norm {} → {} (below 1/100 of its early level)", num(base.median), num(now)),
                "No gradient is reaching the weights: check for zero advantages (all-equal group rewards), a frozen or detached module, a zero learning rate, or a loss masked to nothing.",
            )
            .at(steps, at, last)
            .confidence(confidence(VANISH * base.median / now.max(1e-300), agreement(&low, trigger, last)))
            .column(name)
            .evidence("baseline", base.median)
            .evidence("latest", now),
        );
    }
    Outcome::Ran(out)
}
