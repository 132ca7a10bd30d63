//! LR_ANOMALY: a learning rate that drops to zero mid-schedule (the run trains nothing),
//! or jumps back up after the warm-up (a resume that restarted the scheduler instead of
//! restoring it — HF Trainer restores scheduler state from the checkpoint; a fresh
//! scheduler re-warms).

use super::{num, Detector, Outcome};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;

pub const DETECTOR: Detector = Detector {
    name: "learning_rate",
    codes: &["LR_ANOMALY"],
    reads: "lr",
    run,
};

/// A drop to zero counts as abrupt when the previous value was above this share of the
/// peak so far: schedules that decay to zero get there through small values.
const ABRUPT: f64 = 0.05;
/// An upward jump after the warm-up by more than this factor, between values above 1 %
/// of the peak. Warm-up-then-decay schedules (linear, cosine: TRL, verl, OpenRLHF
/// defaults) never rise again; cyclic schedules (SGDR) do by design and read as a warning.
const JUMP: f64 = 1.2;
/// Zero for this many points is critical (the run is burning compute).
const ZERO_CRIT: usize = 3;

fn run(run: &RunInput) -> Outcome {
    let Some(lr) = run.series("lr") else {
        return Outcome::Silent("no lr column".into());
    };
    let res = run.resolution("lr");
    let pts: Vec<usize> = (0..lr.len()).filter(|&i| !lr[i].is_nan()).collect();
    if pts.len() < 10 {
        return Outcome::Silent(format!("lr has {} points, needs 10", pts.len()));
    }
    let mut out = Vec::new();
    let mut peak = 0.0f64;
    let mut warmed = false;
    let mut zero: Option<(usize, usize, f64)> = None; // (first zero point, last, value before)
    let mut jump: Option<(usize, f64, f64)> = None;
    for w in pts.windows(2) {
        let (a, b) = (lr[w[0]], lr[w[1]]);
        peak = peak.max(a);
        if b < a {
            warmed = true;
        }
        let is_zero = b <= res;
        if is_zero && a > ABRUPT * peak && a > res && zero.is_none() {
            zero = Some((w[1], w[1], a));
        } else if let Some(z) = zero.as_mut().filter(|z| z.1 == w[0] && is_zero) {
            z.1 = w[1];
        }
        if warmed && jump.is_none() && a > 0.01 * peak && b > JUMP * a && b - a > res {
            jump = Some((w[1], a, b));
        }
    }
    if let Some((first, last, before)) = zero {
        let n = pts.iter().filter(|&&i| i >= first && i <= last).count();
        let ended = last == *pts.last().unwrap();
        let sev = if n >= ZERO_CRIT {
            Severity::Critical
        } else {
            Severity::Warn
        };
        out.push(
            Finding::new(
                "LR_ANOMALY",
                sev,
                format!("learning rate fell from {} to 0 at step {} ({n} point(s){})", num(before), run.steps[first], if ended { ", still 0" } else { "" }),
                "A zero learning rate trains nothing: check the scheduler's total steps (a too-short schedule ends early), a resume that lost the scheduler state, or an optimizer rebuilt without its parameter groups.",
            )
            .at(&run.steps, first, last)
            .confidence(if n >= ZERO_CRIT { 0.95 } else { 0.7 })
            .column("lr")
            .evidence("before", before)
            .evidence("zero points", n as f64),
        );
    }
    if let Some((at, a, b)) = jump {
        out.push(
            Finding::new(
                "LR_ANOMALY",
                Severity::Warn,
                format!("learning rate jumped {} → {} (×{}) after the warm-up", num(a), num(b), num(b / a)),
                "A mid-run jump usually means a resume restarted the schedule: restore the scheduler state with the optimizer, or set the resumed schedule's starting step.",
            )
            .at(&run.steps, at, at)
            .confidence(crate::signal::confidence(b / a / JUMP, 1.0))
            .column("lr")
            .evidence("before", a)
            .evidence("after", b),
        );
    }
    Outcome::Ran(crate::finding::fold(out).into_iter().collect())
}
