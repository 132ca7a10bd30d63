//! VALUE_FUNCTION_FAILURE: a PPO critic that explains nothing or whose loss diverges,
//! judged only after a warm-up grace (a fresh value head starts at negative explained
//! variance and a high loss). Explained variance ≤ 0 means the critic predicts returns no
//! better than a constant (the diagnostic CleanRL and Stable-Baselines3 log as
//! `explained_variance`, verl as `critic/vf_explained_var`).

use super::{need, num, Detector, Outcome};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{
    agreement, baseline_from, confidence, graded, measured_levels, onset, smooth, Graded,
};

pub const DETECTOR: Detector = Detector {
    name: "value_head",
    codes: &["VALUE_FUNCTION_FAILURE"],
    reads: "value_explained_variance, value_loss",
    run,
};

/// Points of grace before a critic is judged.
const GRACE: usize = 50;
/// Explained variance, smoothed: below 0 the critic is useless (warn), below −1 it is
/// actively harmful to the advantages (critical).
const EV_WARN: f64 = 0.0;
const EV_CRIT: f64 = -1.0;
/// Value loss against its post-grace level.
const LOSS_WARN: f64 = 4.0;
const LOSS_CRIT: f64 = 10.0;

/// One failing signal of the critic.
struct Part {
    graded: Graded,
    what: String,
    /// How far past its threshold (≥ 1).
    ratio: f64,
    column: &'static str,
}

fn run(run: &RunInput) -> Outcome {
    let ev = need(run, &["value_explained_variance"], GRACE + 20);
    let vl = need(run, &["value_loss"], GRACE + 30);
    if let (Err(a), Err(b)) = (&ev, &vl) {
        return Outcome::Silent(format!("{a}; {b}"));
    }
    let mut parts: Vec<Part> = Vec::new();
    if let Ok((name, xs)) = ev {
        let s = smooth(xs, 15);
        if let Some(g) = graded(&s, GRACE, 10, 10, |_, x| x < EV_WARN, |_, x| x < EV_CRIT) {
            let now = crate::signal::last_value(&s, g.last);
            parts.push(Part {
                graded: g,
                what: format!("explained variance {}", num(now)),
                ratio: (EV_WARN - now + 1.0).max(1.0),
                column: name,
            });
        }
    }
    if let Ok((name, xs)) = vl {
        if let Some(base) = baseline_from(xs, GRACE, 30).filter(|b| b.median > 0.0) {
            let s = smooth(xs, 9);
            let m = base.median;
            if let Some(g) = graded(
                &s,
                base.end,
                5,
                5,
                |_, x| x > LOSS_WARN * m,
                |_, x| x > LOSS_CRIT * m,
            ) {
                let now = crate::signal::last_value(&s, g.last);
                parts.push(Part {
                    graded: g,
                    what: format!("value loss {} → {}", num(m), num(now)),
                    ratio: now / m / LOSS_WARN,
                    column: name,
                });
            }
        }
    }
    let Some(first) = parts.iter().min_by_key(|p| p.graded.trigger) else {
        return Outcome::Ran(Vec::new());
    };
    let g = &first.graded;
    let severity = parts.iter().map(|p| p.graded.severity).max().unwrap();
    let at = onset(
        run.series(first.column).unwrap(),
        g.trigger.saturating_sub(200).max(GRACE),
        g.trigger,
    );
    let last = parts.iter().map(|p| p.graded.last).max().unwrap();
    let mut f = Finding::new(
        "VALUE_FUNCTION_FAILURE",
        severity,
        parts.iter().map(|p| p.what.as_str()).collect::<Vec<_>>().join("; "),
        "The critic is not tracking returns: lower the critic learning rate or raise its warm-up, clip the value loss, normalise rewards/returns, and check that the value head sees the same tokens as the policy.",
    )
    .at(&run.steps, at, last)
    .confidence(confidence(first.ratio, agreement(&g.flags, g.trigger, g.last)))
    .levels(measured_levels(run.series(first.column).unwrap(), &run.steps, first.column, at, g.last));
    for p in &parts {
        f = f.column(p.column);
    }
    Outcome::Ran(vec![f])
}
