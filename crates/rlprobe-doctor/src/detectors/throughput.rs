//! THROUGHPUT_REGRESSION: steps getting slower. Periodic evaluation and checkpoint steps
//! are excluded: they are isolated spikes, which a robust spike mask and a 21-point
//! rolling median both ignore, so only a sustained slowdown counts.

use rlprobe_series::robust::{causal_robust_z, ZOptions};

use super::{need, num, Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{baseline, graded, measured_levels, onset, smooth};

pub const DETECTOR: Detector = Detector {
    name: "throughput",
    codes: &["THROUGHPUT_REGRESSION"],
    reads: "step_time_s (or generation_time_s + optimization_time_s)",
    run,
};

/// Sustained slowdown against the early level: 1.5× is a warning (a memory leak,
/// fragmentation, a growing KV cache or longer completions), 3× critical.
const WARN: f64 = 1.5;
const CRIT: f64 = 3.0;
/// A point this many robust σ above its trailing window is a periodic spike (eval,
/// checkpoint), masked before the level is judged.
const SPIKE_Z: f64 = 4.0;

fn run(run: &RunInput) -> Outcome {
    let summed: Vec<f64>;
    let (name, t) = match need(run, &["step_time_s"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => match (
            run.series("generation_time_s"),
            run.series("optimization_time_s"),
        ) {
            (Some(g), Some(o)) => {
                summed = g.iter().zip(o).map(|(a, b)| a + b).collect();
                if summed.iter().filter(|v| !v.is_nan()).count() < MIN_POINTS {
                    return Outcome::Silent(why);
                }
                ("generation_time_s + optimization_time_s", summed.as_slice())
            }
            _ => return Outcome::Silent(why),
        },
    };
    let logs: Vec<f64> = t
        .iter()
        .map(|x| if *x > 0.0 { x.ln() } else { f64::NAN })
        .collect();
    let z = causal_robust_z(
        &logs,
        ZOptions {
            window: 50,
            min_points: 15,
            log_scale: false,
        },
    );
    // isolated spikes only: the next point is back to normal (a sustained slowdown's first
    // points also score high, and must stay to date its onset)
    let next_normal = |i: usize| {
        (i + 1..z.len())
            .find(|&j| !z[j].is_nan())
            .is_none_or(|j| z[j] < SPIKE_Z / 2.0)
    };
    let masked: Vec<f64> = (0..logs.len())
        .map(|i| {
            if z[i] > SPIKE_Z && next_normal(i) {
                f64::NAN
            } else {
                logs[i]
            }
        })
        .collect();
    let Some(base) = baseline(&masked) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(&masked, 21);
    let m = base.median;
    let Some(g) = graded(
        &s,
        base.end,
        10,
        10,
        |_, x| x > m + WARN.ln(),
        |_, x| x > m + CRIT.ln(),
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        &masked,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last).exp();
    let was = m.exp();
    let col = if name == "step_time_s" {
        "step_time_s"
    } else {
        "generation_time_s"
    };
    Outcome::Ran(vec![g.date(Finding::new(
        "THROUGHPUT_REGRESSION",
        g.severity,
        format!("step time ×{} (rolling median, eval/checkpoint spikes excluded)", num(now / was)),
        "Steps are getting slower: look for a memory leak or fragmentation (torch.cuda.memory_stats), growing completions or KV cache, a slower node, or data loading; compare generation and optimization time.",
    ), &run.steps, at, now / was / WARN)
    .levels(measured_levels(t, &run.steps, name, at, g.last))
    .column(col)
    .evidence("baseline s", was)
    .evidence("latest s (rolling median)", now)])
}
