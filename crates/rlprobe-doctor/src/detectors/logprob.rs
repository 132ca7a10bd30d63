//! LOGPROB_MISMATCH: the rollout engine (vLLM, SGLang) and the trainer disagree on the
//! probabilities of the same tokens, which silently turns on-policy RL off-policy (Yao et
//! al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training";
//! verl logs `training/rollout_probs_diff_*`). Read from `extra.*` when present.

use super::{Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{baseline, graded, measured_levels, onset, smooth};

pub const DETECTOR: Detector = Detector {
    name: "logprob_mismatch",
    codes: &["LOGPROB_MISMATCH"],
    reads: "extra.* rollout-vs-trainer probability or log-probability differences",
    run,
};

/// Sustained growth of the mismatch to this many times its early level, and past an
/// absolute floor (1e-3: below it the engines agree to the precision of bf16 sampling).
const WARN: f64 = 3.0;
const CRIT: f64 = 10.0;
const FLOOR: f64 = 1e-3;

/// Whether an extra column measures rollout-vs-trainer disagreement.
fn is_mismatch(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let engine = ["rollout", "inference", "vllm", "sglang", "sampler", "behav"]
        .iter()
        .any(|w| n.contains(w));
    let diff = ["diff", "mismatch", "kl", "gap"]
        .iter()
        .any(|w| n.contains(w));
    let prob = n.contains("prob");
    n.contains("logprob_mismatch") || (engine && diff && (prob || n.contains("kl")))
}

fn run(run: &RunInput) -> Outcome {
    let mut cols: Vec<(&str, &[f64])> = run
        .with_prefix("extra.")
        .filter(|(k, _)| is_mismatch(k))
        .map(|(k, c)| (k, c.values.as_slice()))
        .filter(|(_, v)| v.iter().filter(|x| !x.is_nan()).count() >= MIN_POINTS)
        .collect();
    if cols.is_empty() {
        return Outcome::Silent("no extra.* rollout-vs-trainer logprob difference column".into());
    }
    // prefer a mean over a max: maxima are dominated by single tokens
    cols.sort_by_key(|(k, _)| (!k.contains("mean"), k.contains("max"), k.len()));
    let (name, xs) = cols[0];
    let abs: Vec<f64> = xs.iter().map(|v| v.abs()).collect();
    let Some(base) = baseline(&abs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let floor = FLOOR.max(10.0 * run.resolution(name));
    let s = smooth(&abs, 9);
    let m = base.median.max(floor / WARN);
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > WARN * m && x > floor,
        |_, x| x > CRIT * m && x > floor,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        &abs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last);
    Outcome::Ran(vec![g.date(Finding::new(
        "LOGPROB_MISMATCH",
        g.severity,
        "rollout engine and trainer disagree".to_string(),
        "Rollout and trainer probabilities diverge: check weight sync after each update, matching dtypes and kernels (bf16 vs fp32 logits), the engine version, and apply truncated importance sampling (TIS) to correct the off-policy gap.",
    ), &run.steps, at, now / m / WARN)
    .levels(measured_levels(xs, &run.steps, name, at, g.last))
    .column(name)
    .evidence("baseline", base.median)
    .evidence("latest (smoothed)", now)])
}
