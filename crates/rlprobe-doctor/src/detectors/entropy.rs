//! ENTROPY_COLLAPSE and ENTROPY_EXPLOSION, relative to the run's own early entropy:
//! absolute floors do not transfer across tasks, tokenizers and models.

use super::{need, num, resolved, Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{baseline, graded, onset, onset_log, smooth, Graded};

pub const DETECTOR: Detector = Detector {
    name: "entropy",
    codes: &["ENTROPY_COLLAPSE", "ENTROPY_EXPLOSION"],
    reads: "entropy_mean",
    run,
};

/// Collapse: the smoothed entropy below these fractions of its early level. Policy entropy
/// falls steeply and early in RL for reasoning (Cui et al. 2025, "The Entropy Mechanism of
/// Reinforcement Learning for Reasoning Language Models": most of the drop happens in the
/// first few hundred steps and caps performance); DAPO (Yu et al. 2025, §3.1) introduced
/// clip-higher against exactly this collapse. Healthy runs lose well under half of it.
const COLLAPSE_WARN: f64 = 0.35;
const COLLAPSE_CRIT: f64 = 0.15;
/// Explosion: sustained growth past these multiples (sampling turning to noise).
const EXPLODE_WARN: f64 = 2.0;
const EXPLODE_CRIT: f64 = 3.5;

fn run(run: &RunInput) -> Outcome {
    let (name, h) = match need(run, &["entropy_mean"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    let Some(base) = baseline(h) else {
        return Outcome::Silent("entropy_mean: no baseline".into());
    };
    if base.median <= 0.0 {
        return Outcome::Silent(format!(
            "entropy_mean's early level is {} (not a positive entropy)",
            num(base.median)
        ));
    }
    if let Err(why) = resolved(run, name, base.median) {
        return Outcome::Silent(why);
    }
    let s = smooth(h, 9);
    let mut out = Vec::new();
    let m = base.median;
    if let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x < COLLAPSE_WARN * m,
        |_, x| x < COLLAPSE_CRIT * m,
    ) {
        out.push(finding(run, h, &s, m, "ENTROPY_COLLAPSE", &g, COLLAPSE_WARN,
            "Entropy collapsed: exploration is gone. Use clip-higher (DAPO: ε_high 0.28), an entropy bonus or a lower learning rate, raise the sampling temperature, and resume from before the onset.", true));
    }
    if let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > EXPLODE_WARN * m,
        |_, x| x > EXPLODE_CRIT * m,
    ) {
        out.push(finding(run, h, &s, m, "ENTROPY_EXPLOSION", &g, EXPLODE_WARN,
            "Entropy is exploding: the policy is drifting toward noise. Lower the learning rate or the entropy bonus, check the sampling temperature and for NaN-adjacent logits, and tighten the KL penalty.", false));
    }
    Outcome::Ran(out)
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call per signature; a struct would only rename the same eight values"
)]
fn finding(
    run: &RunInput,
    h: &[f64],
    s: &[f64],
    base: f64,
    code: &'static str,
    g: &Graded,
    threshold: f64,
    remedy: &str,
    down: bool,
) -> Finding {
    let at = if down {
        onset_log(
            h,
            g.trigger
                .saturating_sub(200)
                .max(crate::signal::BASELINE_SKIP),
            g.trigger,
        )
    } else {
        onset(
            h,
            g.trigger
                .saturating_sub(200)
                .max(crate::signal::BASELINE_SKIP),
            g.trigger,
        )
    };
    let now = crate::signal::last_value(s, g.last);
    let ratio = if down {
        threshold * base / now.max(1e-12)
    } else {
        now / base / threshold
    };
    g.date(
        Finding::new(
            code,
            g.severity,
            format!(
                "entropy {} → {} ({}% of its early level)",
                num(base),
                num(now),
                num(100.0 * now / base)
            ),
            remedy,
        ),
        &run.steps,
        at,
        ratio,
    )
    .column("entropy_mean")
    .evidence("baseline", base)
    .evidence("latest (smoothed)", now)
}
