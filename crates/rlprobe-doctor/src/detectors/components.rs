//! REWARD_COMPONENT_DOMINANCE: with several reward functions, one of them stops meaning
//! anything. Three shapes:
//! - a dead component: constant for a long stretch after it used to vary (a regex that no
//!   longer matches, a verifier that always times out);
//! - opposite trends: one component climbs while another falls (a format reward gamed at
//!   the expense of correctness);
//! - dominance: one component comes to carry almost all of the reward magnitude.

use super::{num, Detector, Outcome, MIN_POINTS};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;
use crate::signal::{
    baseline_from, confidence, is_constant, measured_levels, ols_slope, onset, BASELINE_POINTS,
    BASELINE_SKIP,
};

pub const DETECTOR: Detector = Detector {
    name: "reward_components",
    codes: &["REWARD_COMPONENT_DOMINANCE"],
    reads: "reward_component.* (two or more)",
    run,
};

/// Points a component must stay exactly constant to count as dead.
const DEAD_POINTS: usize = 50;
/// Opposite trends: both least-squares slopes over the trailing window with |t| above this
/// (|t| = 4 is p ≈ 6e-5: a window evaluated every 25 points stays well clear of chance),
/// and each moving by more than 3 of its point-noise σ.
const TREND_WINDOW: usize = 100;
const TREND_EVERY: usize = 25;
const TREND_T: f64 = 4.0;
/// Dominance: one component's share of the summed |component| over the trailing window
/// above this, where its early share was below `SHARE_EARLY`.
const SHARE: f64 = 0.9;
const SHARE_EARLY: f64 = 0.6;
const SHARE_WINDOW: usize = 50;
const SHARE_EVERY: usize = 10;

fn run(run: &RunInput) -> Outcome {
    let comps: Vec<(&str, &[f64], Vec<usize>)> = run
        .with_prefix("reward_component.")
        .map(|(k, c)| {
            (
                k,
                c.values.as_slice(),
                (0..c.values.len())
                    .filter(|&i| !c.values[i].is_nan())
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, _, pts)| pts.len() >= MIN_POINTS)
        .collect();
    if comps.len() < 2 {
        return Outcome::Silent(format!(
            "{} reward_component.* column(s) with {MIN_POINTS}+ points, needs 2",
            comps.len()
        ));
    }
    let mut out = Vec::new();
    for (name, xs, pts) in &comps {
        if let Some(f) = dead(run, name, xs, pts) {
            out.push(f);
        }
    }
    if let Some(f) = opposite(run, &comps) {
        out.push(f);
    }
    if let Some(f) = dominance(run, &comps) {
        out.push(f);
    }
    Outcome::Ran(crate::finding::fold(out).into_iter().collect())
}

const REMEDY: &str = "One reward function no longer carries signal: check the dead or falling component's implementation on recent samples, rebalance the component weights, and make sure the rising one cannot be satisfied without the task.";

fn dead(run: &RunInput, name: &str, xs: &[f64], pts: &[usize]) -> Option<Finding> {
    let res = run.resolution(name).max(1e-12);
    // the longest constant tail
    let last = xs[*pts.last()?];
    let tail = pts
        .iter()
        .rev()
        .take_while(|&&i| (xs[i] - last).abs() <= res)
        .count();
    if tail < DEAD_POINTS || tail == pts.len() {
        return None;
    }
    let before: Vec<f64> = pts[..pts.len() - tail].iter().map(|&i| xs[i]).collect();
    if before.len() < 10 || is_constant(&before, res) {
        return None;
    }
    let at = pts[pts.len() - tail];
    let short = name.trim_start_matches("reward_component.");
    Some(
        Finding::new(
            "REWARD_COMPONENT_DOMINANCE",
            Severity::Warn,
            format!(
                "component {short} has been constant at {} for {tail} points (dead)",
                num(last)
            ),
            REMEDY,
        )
        .at(&run.steps, at, *pts.last()?)
        .confidence(confidence(tail as f64 / DEAD_POINTS as f64, 1.0))
        .levels(
            run.series(name)
                .and_then(|xs| measured_levels(xs, &run.steps, name, at, *pts.last()?)),
        )
        .column(name)
        .evidence(&format!("{short} constant points"), tail as f64),
    )
}

fn opposite(run: &RunInput, comps: &[(&str, &[f64], Vec<usize>)]) -> Option<Finding> {
    let n = run.len();
    let noise: Vec<f64> = comps
        .iter()
        .map(|(_, xs, _)| {
            baseline_from(xs, BASELINE_SKIP, BASELINE_POINTS)
                .map_or(f64::NAN, |b| b.sigma.max(1e-12))
        })
        .collect();
    let mut end = BASELINE_SKIP + TREND_WINDOW;
    while end <= n {
        let lo = end - TREND_WINDOW;
        // (component, t of its slope, how far it moved over the window)
        let mut trends: Vec<(usize, f64, f64)> = Vec::new();
        for (c, (_, xs, _)) in comps.iter().enumerate() {
            let Some((slope, se)) = ols_slope(&xs[lo..end]) else {
                continue;
            };
            let moved = slope * TREND_WINDOW as f64;
            if (slope / se).abs() > TREND_T && moved.abs() > 3.0 * noise[c] {
                trends.push((c, slope / se, moved));
            }
        }
        let up = trends
            .iter()
            .filter(|t| t.1 > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let down = trends
            .iter()
            .filter(|t| t.1 < 0.0)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(u), Some(d)) = (up, down) {
            let (uname, dname) = (comps[u.0].0, comps[d.0].0);
            let at = onset(comps[d.0].1, lo.saturating_sub(TREND_WINDOW), end - 1);
            let short = |s: &str| s.trim_start_matches("reward_component.").to_string();
            return Some(
                Finding::new(
                    "REWARD_COMPONENT_DOMINANCE",
                    Severity::Warn,
                    format!(
                        "{} rising ({:+}) while {} falls ({:+})",
                        short(uname),
                        num(u.2),
                        short(dname),
                        num(d.2)
                    ),
                    REMEDY,
                )
                .at(&run.steps, at, n - 1)
                .levels(measured_levels(comps[d.0].1, &run.steps, dname, at, n - 1))
                .confidence(confidence(u.1.abs().min(d.1.abs()) / TREND_T, 1.0))
                .column(uname)
                .column(dname)
                .evidence("rising t", u.1)
                .evidence("falling t", d.1),
            );
        }
        end += TREND_EVERY;
    }
    None
}

fn dominance(run: &RunInput, comps: &[(&str, &[f64], Vec<usize>)]) -> Option<Finding> {
    let n = run.len();
    let early_end = BASELINE_SKIP + BASELINE_POINTS;
    if n < early_end + SHARE_WINDOW {
        return None;
    }
    // prefix sums of |component| (missing as 0): any window's share in O(components)
    let prefix: Vec<Vec<f64>> = comps
        .iter()
        .map(|(_, xs, _)| {
            let mut p = vec![0.0; n + 1];
            for i in 0..n {
                p[i + 1] = p[i] + if xs[i].is_nan() { 0.0 } else { xs[i].abs() };
            }
            p
        })
        .collect();
    let share = |lo: usize, hi: usize| -> Vec<f64> {
        let sums: Vec<f64> = prefix.iter().map(|p| p[hi] - p[lo]).collect();
        let total: f64 = sums.iter().sum();
        sums.iter()
            .map(|s| if total > 0.0 { s / total } else { f64::NAN })
            .collect()
    };
    let early = share(BASELINE_SKIP, early_end);
    let mut end = early_end + SHARE_WINDOW;
    while end <= n {
        let now = share(end - SHARE_WINDOW, end);
        if let Some(c) = (0..comps.len()).find(|&c| now[c] > SHARE && early[c] < SHARE_EARLY) {
            let last_share = share(n - SHARE_WINDOW, n)[c];
            let short = comps[c].0.trim_start_matches("reward_component.");
            return Some(
                Finding::new(
                    "REWARD_COMPONENT_DOMINANCE",
                    Severity::Warn,
                    format!(
                        "component {short} carries {}% of the reward (early {}%)",
                        num(100.0 * now[c]),
                        num(100.0 * early[c])
                    ),
                    REMEDY,
                )
                .at(
                    &run.steps,
                    end - SHARE_WINDOW,
                    if last_share > SHARE { n - 1 } else { end - 1 },
                )
                .confidence(confidence(now[c] / SHARE, 0.5))
                .column(comps[c].0)
                .evidence("share", now[c])
                .evidence("share early", early[c]),
            );
        }
        end += SHARE_EVERY;
    }
    None
}
