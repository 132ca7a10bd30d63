//! NAN_INF: a NaN or ±Inf in a quantity training depends on, or a trainer-reported NaN/Inf
//! count. Always critical: one non-finite loss or gradient poisons the weights it touches
//! (mixed-precision overflow, a reward function returning NaN, log of zero).

use super::{Detector, Outcome};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;

pub const DETECTOR: Detector = Detector {
    name: "nan_inf",
    codes: &["NAN_INF"],
    reads: "loss, grad_norm, reward_*, kl_*, entropy_mean, logprob_mean, ratio_mean, adv_*, value_loss, lr, nan_count, inf_count",
    run,
};

/// Columns whose non-finite values mean the update itself is broken.
const WATCHED: &[&str] = &[
    "loss",
    "grad_norm",
    "grad_norm_post_clip",
    "reward_mean",
    "reward_std",
    "kl_mean",
    "kl_max",
    "entropy_mean",
    "logprob_mean",
    "ratio_mean",
    "adv_mean",
    "adv_std",
    "value_loss",
    "lr",
    "weight_update_ratio",
];

fn run(run: &RunInput) -> Outcome {
    let mut hits: Vec<(String, Vec<usize>)> = Vec::new();
    for &name in WATCHED {
        if let Some(c) = run.column(name).filter(|c| !c.nonfinite.is_empty()) {
            hits.push((name.to_string(), c.nonfinite.clone()));
        }
    }
    for (name, c) in run.with_prefix("reward_component.") {
        if !c.nonfinite.is_empty() {
            hits.push((name.to_string(), c.nonfinite.clone()));
        }
    }
    for name in ["nan_count", "inf_count"] {
        if let Some(xs) = run.series(name) {
            let at: Vec<usize> = (0..xs.len()).filter(|&i| xs[i] > 0.0).collect();
            if !at.is_empty() {
                hits.push((name.to_string(), at));
            }
        }
    }
    if hits.is_empty() {
        return Outcome::Ran(Vec::new());
    }
    let mut points: Vec<usize> = hits.iter().flat_map(|(_, at)| at.iter().copied()).collect();
    points.sort_unstable();
    points.dedup();
    let (first, last) = (points[0], *points.last().unwrap());
    hits.sort_by_key(|(_, at)| at[0]);
    let names: Vec<&str> = hits.iter().map(|(n, _)| n.as_str()).collect();
    let mut f = Finding::new(
        "NAN_INF",
        Severity::Critical,
        format!("non-finite values in {} at {} logged point(s), first at step {}", names.join(", "), points.len(), run.steps[first]),
        "Resume from the last checkpoint before the onset; lower the learning rate, keep gradient clipping on (max_grad_norm 1.0), compute the loss and logits in fp32 or bf16 rather than fp16, and check the reward functions for NaN.",
    )
    .at(&run.steps, first, last)
    .confidence(0.99)
    .evidence("points", points.len() as f64);
    for (name, at) in &hits {
        f = f
            .column(name)
            .evidence(&format!("{name} non-finite points"), at.len() as f64);
    }
    f.message
        .push_str(&format!(" (last at step {})", run.steps[last]));
    Outcome::Ran(vec![f])
}
