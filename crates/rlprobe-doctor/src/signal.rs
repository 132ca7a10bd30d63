//! Shared building blocks of the detectors: the run's own early baseline, smoothing,
//! persistence (k of the last n points) and onset estimation. All index by logged point.

use rlprobe_series::persist::persistent;
use rlprobe_series::robust::{median_in_place, MAD_TO_SIGMA};
use rlprobe_series::rolling::rolling_median;

/// Present points skipped before the baseline: the first logged points of a run are often
/// warm-up (learning-rate warm-up, empty caches) and not the run's normal level.
pub const BASELINE_SKIP: usize = 5;
/// Present points the baseline is taken over.
pub const BASELINE_POINTS: usize = 30;

/// The run's own early level of a series: relative detectors compare against it, because
/// absolute floors do not transfer across tasks and models.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Baseline {
    pub median: f64,
    /// Point-to-point noise σ, from first differences (so a trend inside the baseline
    /// window does not inflate it).
    pub sigma: f64,
    /// First point after the baseline window.
    pub end: usize,
}

/// The early baseline of `xs`, or None while fewer than `BASELINE_SKIP + BASELINE_POINTS`
/// points are present.
pub fn baseline(xs: &[f64]) -> Option<Baseline> {
    baseline_from(xs, BASELINE_SKIP, BASELINE_POINTS)
}

pub fn baseline_from(xs: &[f64], skip: usize, points: usize) -> Option<Baseline> {
    let idx: Vec<usize> = (0..xs.len())
        .filter(|&i| !xs[i].is_nan())
        .skip(skip)
        .take(points)
        .collect();
    if idx.len() < points {
        return None;
    }
    let mut v: Vec<f64> = idx.iter().map(|&i| xs[i]).collect();
    let mut d: Vec<f64> = v.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let median = median_in_place(&mut v)?;
    let sigma = median_in_place(&mut d).unwrap_or(0.0) * MAD_TO_SIGMA / std::f64::consts::SQRT_2;
    Some(Baseline {
        median,
        sigma,
        end: idx[idx.len() - 1] + 1,
    })
}

/// Present points a stated level is the median of.
pub const LEVEL_POINTS: usize = 10;

/// The run's actual start before a change at point `onset`: up to `BASELINE_POINTS`
/// present points before it, skipping the warm-up when enough remain after it (a change
/// within the first points leaves only the points before it). None when no point precedes it.
pub fn start_window(xs: &[f64], onset: usize) -> Option<(usize, usize)> {
    let before: Vec<usize> = (0..onset.min(xs.len()))
        .filter(|&i| !xs[i].is_nan())
        .collect();
    let skip = if before.len() >= BASELINE_SKIP + LEVEL_POINTS {
        BASELINE_SKIP
    } else {
        0
    };
    let w = &before[skip..];
    let w = &w[..w.len().min(BASELINE_POINTS)];
    Some((*w.first()?, *w.last()?))
}

/// The last `LEVEL_POINTS` present points up to and including `last` (not before `from`).
pub fn end_window(xs: &[f64], from: usize, last: usize) -> Option<(usize, usize)> {
    let hi = last.min(xs.len().saturating_sub(1));
    let w: Vec<usize> = (from.min(hi)..=hi)
        .rev()
        .filter(|&i| !xs[i].is_nan())
        .take(LEVEL_POINTS)
        .collect();
    Some((*w.last()?, *w.first()?))
}

/// The median of the present values of `xs` in points `a..=b`.
pub fn median_between(xs: &[f64], a: usize, b: usize) -> Option<f64> {
    let mut v: Vec<f64> = xs[a.min(xs.len())..(b + 1).min(xs.len())]
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .collect();
    median_in_place(&mut v)
}

/// The levels a finding about `column` states: its actual start (before `onset`) and where
/// it is by `last`, each a median of raw points so they can be re-derived from the run.
pub fn measured_levels(
    xs: &[f64],
    steps: &[i64],
    column: &str,
    onset: usize,
    last: usize,
) -> Option<crate::finding::Levels> {
    let (sa, sb) = start_window(xs, onset)?;
    let (ea, eb) = end_window(xs, onset, last.max(onset))?;
    let start = median_between(xs, sa, sb)?;
    let end = median_between(xs, ea, eb)?;
    Some(crate::finding::Levels {
        column: column.to_string(),
        start,
        start_steps: (steps[sa], steps[sb]),
        end,
        end_steps: (steps[ea], steps[eb]),
        ratio: if start != 0.0 {
            end / start
        } else {
            f64::INFINITY
        },
    })
}

/// `baseline`, unless a large change already happened inside its window (a failure from
/// the first points): then the level before that change, ending at it, so the detector
/// compares against the run's true start and flags from the change on. A change is a mean
/// shift of at least ×`factor` (either way) and 6 σ of the point noise.
pub fn early_baseline(xs: &[f64], factor: f64) -> Option<Baseline> {
    let b = baseline(xs)?;
    let idx: Vec<usize> = (0..xs.len())
        .filter(|&i| !xs[i].is_nan())
        .take(BASELINE_SKIP + 2 * BASELINE_POINTS)
        .collect();
    let pts: Vec<(f64, f64)> = idx.iter().map(|&i| (i as f64, xs[i])).collect();
    if pts.len() < 12 {
        return Some(b);
    }
    let (at, _) = best_shift(&pts);
    let c = idx.iter().position(|&i| i == at)?;
    // a shift within the warm-up points is the warm-up settling, not a failure
    if !(BASELINE_SKIP..BASELINE_SKIP + BASELINE_POINTS).contains(&c) {
        return Some(b);
    }
    let (sa, sb) = start_window(xs, at)?;
    let left = median_between(xs, sa, sb)?;
    let right_end = idx[(c + BASELINE_POINTS).min(idx.len() - 1)];
    let right = median_between(xs, at, right_end)?;
    let moved = if left.abs() > 0.0 && right.abs() > 0.0 {
        (right / left).abs().max((left / right).abs())
    } else {
        f64::INFINITY
    };
    if moved < factor || (right - left).abs() < 6.0 * b.sigma.max(1e-300) {
        return Some(b);
    }
    let mut d: Vec<f64> = (sa..=sb)
        .filter(|&i| !xs[i].is_nan())
        .map(|i| xs[i])
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .collect();
    let sigma =
        median_in_place(&mut d).unwrap_or(b.sigma) * MAD_TO_SIGMA / std::f64::consts::SQRT_2;
    Some(Baseline {
        median: left,
        sigma,
        end: at,
    })
}

/// Trailing rolling median over `w` points (NaN until half the window is present).
pub fn smooth(xs: &[f64], w: usize) -> Vec<f64> {
    rolling_median(xs, w, w / 2 + 1)
}

/// Flags from a predicate on the present values (None where missing).
pub fn flags(xs: &[f64], from: usize, pred: impl Fn(usize, f64) -> bool) -> Vec<Option<bool>> {
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            if i < from || x.is_nan() {
                None
            } else {
                Some(pred(i, x))
            }
        })
        .collect()
}

/// The first episode where `k` of the last `n` *present* points are flagged: (first
/// flagged point of that window, the point it triggered at). Missing points (None) are
/// skipped, not counted as healthy: a column logged every other row still persists.
pub fn sustained(flags: &[Option<bool>], k: usize, n: usize) -> Option<(usize, usize)> {
    let at: Vec<usize> = (0..flags.len()).filter(|&i| flags[i].is_some()).collect();
    let dense: Vec<Option<bool>> = at.iter().map(|&i| flags[i]).collect();
    persistent(&dense, k, n, usize::MAX / 2)
        .first()
        .map(|e| (at[e.onset], at[e.trigger]))
}

/// A two-level episode: the warn condition held for `k` of `n` points (or the critical one
/// did), dated by the warn flags.
#[derive(Debug, Clone)]
pub struct Graded {
    pub severity: crate::finding::Severity,
    /// Where the warn condition (or a worse one) first persisted.
    pub trigger: usize,
    /// The last point still flagged.
    pub last: usize,
    /// The warn-or-worse flags (for agreement).
    pub flags: Vec<Option<bool>>,
}

impl Graded {
    /// Dates `f` from `at` to the episode's last point, with a confidence from `ratio` (≥ 1
    /// at the threshold) and how many of the episode's points agree.
    pub fn date(
        &self,
        f: crate::finding::Finding,
        steps: &[i64],
        at: usize,
        ratio: f64,
    ) -> crate::finding::Finding {
        f.at(steps, at, self.last).confidence(confidence(
            ratio,
            agreement(&self.flags, self.trigger, self.last),
        ))
    }
}

/// Grades `xs` from point `from` on: critical when `crit` holds `k` of `n` points, else
/// warn when `warn` does. `crit` should imply `warn`.
pub fn graded(
    xs: &[f64],
    from: usize,
    k: usize,
    n: usize,
    warn: impl Fn(usize, f64) -> bool,
    crit: impl Fn(usize, f64) -> bool,
) -> Option<Graded> {
    use crate::finding::Severity;
    let mut w = flags(xs, from, &warn);
    let c = flags(xs, from, crit);
    merge_flags(&mut w, &c);
    // dated from the first persistence of the warn condition: a run that warns early and
    // crosses the critical line much later started at the warning, not at the crossing
    let trigger = sustained(&w, k, n)?.1;
    let severity = if sustained(&c, k, n).is_some() {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let last = last_flag(&w).unwrap_or(trigger);
    Some(Graded {
        severity,
        trigger,
        last,
        flags: w,
    })
}

/// `ln(max(x, floor))` with missing points kept missing (f64::max would turn NaN into the floor).
pub fn ln_floor(xs: &[f64], floor: f64) -> Vec<f64> {
    xs.iter()
        .map(|&x| {
            if x.is_nan() {
                f64::NAN
            } else {
                x.max(floor).ln()
            }
        })
        .collect()
}

/// Sets `into` wherever `from` is set (an either-of flag series).
pub fn merge_flags(into: &mut [Option<bool>], from: &[Option<bool>]) {
    for (a, b) in into.iter_mut().zip(from) {
        if *b == Some(true) {
            *a = Some(true);
        } else if a.is_none() {
            *a = *b;
        }
    }
}

/// The last flagged point.
pub fn last_flag(flags: &[Option<bool>]) -> Option<usize> {
    flags.iter().rposition(|f| *f == Some(true))
}

/// Where a change that is flagged at `trigger` most likely began, searched in
/// `[lo, trigger]`: the breakpoint of the better of two least-squares fits, a mean shift
/// (abrupt changes) and a continuous "level, then a new slope" hinge (drifts, which a mean
/// shift would date half-way down the slope).
pub fn onset(xs: &[f64], lo: usize, trigger: usize) -> usize {
    fitted_onset(xs, lo, trigger, &[]).0
}

/// Curved departures tried besides the straight hinge: an accelerating one (a sigmoid's
/// shoulder) and a decelerating one (an approach to a new level, steepest at its start).
const ACCELERATING: fn(f64) -> f64 = |h| h * h;
const DECELERATING: fn(f64) -> f64 = f64::sqrt;

/// `onset` with how well its model explains the points (R², 0..1).
fn fitted_onset(xs: &[f64], lo: usize, trigger: usize, curves: &[fn(f64) -> f64]) -> (usize, f64) {
    let hi = (trigger + 1).min(xs.len());
    let lo = lo.min(hi);
    let pts: Vec<(f64, f64)> = (lo..hi)
        .filter(|&i| !xs[i].is_nan())
        .map(|i| (i as f64, xs[i]))
        .collect();
    if pts.len() < 8 {
        return (lo.max(trigger.saturating_sub(pts.len())), 0.0);
    }
    let (step_at, step_sse) = best_shift(&pts);
    let (hinge_at, hinge_sse) = best_hinge(&pts);
    // a smooth departure is a curved hinge: its kink fitted by a straight one (or a mean
    // shift) lands well after the first sign
    let (curve_at, curve_sse) = curves
        .iter()
        .map(|c| best_hinge_with(&pts, c))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((hinge_at, f64::INFINITY));
    let (hinge_at, hinge_sse) = if curve_sse < hinge_sse * 0.8 {
        (curve_at, curve_sse)
    } else {
        (hinge_at, hinge_sse)
    };
    // the hinge has one more parameter: prefer it only when it fits clearly better
    let (at, sse) = if hinge_sse < step_sse * 0.9 {
        (hinge_at, hinge_sse)
    } else {
        (step_at, step_sse)
    };
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sst: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r2 = if sst > 0.0 { 1.0 - sse / sst } else { 0.0 };
    (at.min(trigger), r2)
}

/// The onset of a change in a positive series on whichever scale its shape fits better: a
/// linear decline bends on a log scale (dated late there) and an exponential decay looks
/// flat on a linear one until late, so both are fitted and the better explained one wins.
pub fn onset_scaled(xs: &[f64], lo: usize, trigger: usize) -> usize {
    let logs: Vec<f64> = xs
        .iter()
        .map(|&x| if x > 0.0 { x.ln() } else { f64::NAN })
        .collect();
    // no accelerating departure on the log scale: a linear decline is one there
    let (lin_at, lin_r2) = fitted_onset(xs, lo, trigger, &[ACCELERATING, DECELERATING]);
    let (log_at, log_r2) = fitted_onset(&logs, lo, trigger, &[DECELERATING]);
    if log_r2 > lin_r2 {
        first_sign(&logs, lo, log_at)
    } else {
        first_sign(xs, lo, lin_at)
    }
}

/// Walks a fitted onset `at` back to the first sign of the change: the earliest point from
/// which a centred 9-point median stays more than 2 σ off the line the series followed
/// before. A fitted kink sits where the change is most visible, which on a smooth shoulder
/// is well after a person would see it start.
fn first_sign(xs: &[f64], lo: usize, at: usize) -> usize {
    const GUARD: usize = 30;
    let pre_end = at.saturating_sub(GUARD);
    let pre_lo = lo.max(at.saturating_sub(200));
    if pre_end <= pre_lo {
        return at;
    }
    let pre: Vec<(f64, f64)> = (pre_lo..pre_end)
        .filter(|&i| !xs[i].is_nan())
        .map(|i| (i as f64, xs[i]))
        .collect();
    if pre.len() < 15 {
        return at;
    }
    let n = pre.len() as f64;
    let (mx, my) = (
        pre.iter().map(|p| p.0).sum::<f64>() / n,
        pre.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pre.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let b = pre.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx.max(1e-300);
    let line = |i: usize| my + b * (i as f64 - mx);
    let centred = |i: usize| {
        let a = i.saturating_sub(4);
        median_between(xs, a, (i + 4).min(xs.len() - 1)).unwrap_or(f64::NAN)
    };
    // the noise of the centred median about the line, before the change
    let mut dev: Vec<f64> = (pre_lo + 4..pre_end.saturating_sub(4))
        .map(|i| (centred(i) - line(i)).abs())
        .filter(|d| !d.is_nan())
        .collect();
    let Some(mad) = median_in_place(&mut dev) else {
        return at;
    };
    let sigma = mad * MAD_TO_SIGMA;
    // the direction of the change: where the series is just after the onset
    let after = centred((at + 4).min(xs.len() - 1)) - line(at + 4);
    if sigma <= 0.0 || after.is_nan() || after.abs() < 2.0 * sigma {
        return at;
    }
    let off = |i: usize| {
        let r = (centred(i) - line(i)) * after.signum();
        r > 2.0 * sigma
    };
    let mut p = at;
    while p > pre_end && off(p - 1) {
        p -= 1;
    }
    // the centred median sees a change 4 points before it happens
    if p < at {
        (p + 4).min(at)
    } else {
        at
    }
}

/// Where the slope of `xs` changes in `[lo, trigger]` (a continuous two-segment fit), for
/// changes of rate such as a rise that stops.
pub fn slope_change(xs: &[f64], lo: usize, trigger: usize) -> usize {
    let hi = (trigger + 1).min(xs.len());
    let pts: Vec<(f64, f64)> = (lo.min(hi)..hi)
        .filter(|&i| !xs[i].is_nan())
        .map(|i| (i as f64, xs[i]))
        .collect();
    if pts.len() < 8 {
        return onset(xs, lo, trigger);
    }
    best_hinge(&pts).0.min(trigger)
}

/// `onset` on a log scale: for multiplicative changes (decays toward zero, geometric
/// growth), which look flat on a linear scale until late. Points ≤ 0 are missing.
pub fn onset_log(xs: &[f64], lo: usize, trigger: usize) -> usize {
    let logs: Vec<f64> = xs
        .iter()
        .map(|&x| if x > 0.0 { x.ln() } else { f64::NAN })
        .collect();
    onset(&logs, lo, trigger)
}

fn best_shift(pts: &[(f64, f64)]) -> (usize, f64) {
    let n = pts.len();
    let total: f64 = pts.iter().map(|p| p.1).sum();
    let total_sq: f64 = pts.iter().map(|p| p.1 * p.1).sum();
    let (mut left, mut left_sq) = (0.0, 0.0);
    let mut best = (pts[0].0 as usize, f64::INFINITY);
    for c in 0..n - 1 {
        left += pts[c].1;
        left_sq += pts[c].1 * pts[c].1;
        let (nl, nr) = ((c + 1) as f64, (n - c - 1) as f64);
        if c < 2 || n - c - 1 < 2 {
            continue;
        }
        let (right, right_sq) = (total - left, total_sq - left_sq);
        let sse = (left_sq - left * left / nl) + (right_sq - right * right / nr);
        if sse < best.1 {
            best = (pts[c + 1].0 as usize, sse);
        }
    }
    best
}

/// Least squares of y = a + b·x + c·max(0, x − τ) for every τ at a point; returns the τ
/// (as an index) where the slope changes, and its SSE.
fn best_hinge(pts: &[(f64, f64)]) -> (usize, f64) {
    best_hinge_with(pts, |h| h)
}

/// `best_hinge` with the term after the kink shaped by `shape` (identity: a new slope;
/// square: a smooth, accelerating departure).
fn best_hinge_with(pts: &[(f64, f64)], shape: impl Fn(f64) -> f64) -> (usize, f64) {
    let n = pts.len();
    let mut best = (pts[0].0 as usize, f64::INFINITY);
    for t in 3..n.saturating_sub(3) {
        let tau = pts[t].0;
        // normal equations of the 3-column design [1, x, h], h = max(0, x - tau)
        let (mut s1, mut sx, mut sh, mut sxx, mut sxh, mut shh) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let (mut sy, mut sxy, mut shy, mut syy) = (0.0, 0.0, 0.0, 0.0);
        for &(x, y) in pts {
            let x = x - pts[0].0;
            let h = shape((x + pts[0].0 - tau).max(0.0));
            s1 += 1.0;
            sx += x;
            sh += h;
            sxx += x * x;
            sxh += x * h;
            shh += h * h;
            sy += y;
            sxy += x * y;
            shy += h * y;
            syy += y * y;
        }
        let m = [[s1, sx, sh], [sx, sxx, sxh], [sh, sxh, shh]];
        let r = [sy, sxy, shy];
        let Some(beta) = solve3(m, r) else { continue };
        // SSE = y'y − β'X'y for the least-squares β
        let sse = syy - (beta[0] * r[0] + beta[1] * r[1] + beta[2] * r[2]);
        if sse < best.1 {
            best = (tau as usize, sse.max(0.0));
        }
    }
    best
}

fn solve3(m: [[f64; 3]; 3], r: [f64; 3]) -> Option<[f64; 3]> {
    let det = |a: [[f64; 3]; 3]| {
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
            - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
            + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    };
    let d = det(m);
    if d.abs() < 1e-12 {
        return None;
    }
    let mut out = [0.0; 3];
    for (c, o) in out.iter_mut().enumerate() {
        let mut a = m;
        for row in 0..3 {
            a[row][c] = r[row];
        }
        *o = det(a) / d;
    }
    Some(out)
}

/// Least-squares slope per point over the present points of `w`, and its standard error.
pub fn ols_slope(w: &[f64]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = w
        .iter()
        .enumerate()
        .filter(|(_, y)| !y.is_nan())
        .map(|(i, &y)| (i as f64, y))
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 10 {
        return None;
    }
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let sse: f64 = pts
        .iter()
        .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
        .sum();
    Some((slope, (sse / (n - 2.0) / sxx).sqrt().max(1e-12)))
}

/// Confidence from how far a statistic went past its threshold (`ratio` ≥ 1 at the
/// threshold) and what share of the recent points agree (`agreement` in 0..1).
pub fn confidence(ratio: f64, agreement: f64) -> f64 {
    let margin = if ratio.is_finite() {
        (ratio.max(1.0)).ln()
    } else {
        3.0
    };
    let c = 0.55 + 0.3 * (1.0 - (-2.0 * margin).exp()) + 0.14 * agreement.clamp(0.0, 1.0);
    c.clamp(0.05, 0.99)
}

/// Share of the flags in `from..=to` that are set.
pub fn agreement(flags: &[Option<bool>], from: usize, to: usize) -> f64 {
    let to = to.min(flags.len().saturating_sub(1));
    if from > to {
        return 0.0;
    }
    let known = flags[from..=to].iter().filter(|f| f.is_some()).count();
    let set = flags[from..=to]
        .iter()
        .filter(|f| **f == Some(true))
        .count();
    if known == 0 {
        0.0
    } else {
        set as f64 / known as f64
    }
}

/// The last present value of `xs` at or before `i`.
pub fn last_value(xs: &[f64], i: usize) -> f64 {
    (0..=i.min(xs.len().saturating_sub(1)))
        .rev()
        .map(|j| xs[j])
        .find(|v| !v.is_nan())
        .unwrap_or(f64::NAN)
}

/// Whether every present value sits within `res` of the first (a constant series, e.g.
/// clip fraction ≡ 0 with one update per batch).
pub fn is_constant(xs: &[f64], res: f64) -> bool {
    let mut it = xs.iter().filter(|v| !v.is_nan());
    let Some(&first) = it.next() else { return true };
    it.all(|&v| (v - first).abs() <= res.max(1e-12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_skips_warm_up_and_measures_point_noise() {
        let mut xs = vec![10.0; 5];
        xs.extend((0..40).map(|i| 1.0 + if i % 2 == 0 { 0.1 } else { -0.1 }));
        let b = baseline(&xs).unwrap();
        assert!((b.median - 1.0).abs() < 0.11);
        assert!(b.sigma > 0.1 && b.sigma < 0.3, "{}", b.sigma);
        assert_eq!(b.end, 35);
        assert!(baseline(&xs[..30]).is_none());
    }

    #[test]
    fn stated_levels_come_from_the_segment_before_the_change() {
        // 0.39 for 20 points, then a fall to 0.023: the start is 0.39, not a median that
        // straddles the change
        let xs: Vec<f64> = (0..120)
            .map(|i| if i < 20 { 0.39 } else { 0.023 } + 0.001 * ((i % 3) as f64 - 1.0))
            .collect();
        let steps: Vec<i64> = (0..120).map(|i| 10 * i).collect();
        let l = measured_levels(&xs, &steps, "entropy_mean", 20, 119).unwrap();
        assert!((l.start - 0.39).abs() < 0.002, "{l:?}");
        assert_eq!(
            l.start_steps,
            (50, 190),
            "warm-up skipped, ends before the change"
        );
        assert!((l.end - 0.023).abs() < 0.002);
        assert_eq!(l.end_steps, (1100, 1190));
        assert!((l.ratio - 0.023 / 0.39).abs() < 0.01);
        assert!(l.describe().contains("steps 50–190"), "{}", l.describe());
        // a change at point 6 leaves only the points before it, warm-up included
        assert_eq!(start_window(&xs, 6), Some((0, 5)));
        assert_eq!(start_window(&xs, 0), None);
        // missing points are skipped, not counted
        let mut ys = xs.clone();
        ys[118] = f64::NAN;
        assert_eq!(end_window(&ys, 20, 119), Some((109, 119)));
    }

    #[test]
    fn an_early_change_moves_the_baseline_to_before_it() {
        let xs: Vec<f64> = (0..200)
            .map(|i| if i < 18 { 0.39 } else { 0.03 } * (1.0 + 0.02 * ((i * 7 % 5) as f64 - 2.0)))
            .collect();
        assert!(
            baseline(&xs).unwrap().median < 0.05,
            "the plain baseline straddles it"
        );
        let b = early_baseline(&xs, 2.0).unwrap();
        assert!((b.median - 0.39).abs() < 0.02, "{b:?}");
        assert_eq!(b.end, 18);
        // the warm-up settling (points 0–3 at 3×) is not a failure from the first points
        let ws: Vec<f64> = (0..200)
            .map(|i| if i < 4 { 3.0 } else { 1.0 } + 0.01 * ((i * 7 % 5) as f64 - 2.0))
            .collect();
        assert_eq!(early_baseline(&ws, 1.5), baseline(&ws));
        // a healthy 40 % drift over the run is no early change
        let ys: Vec<f64> = (0..400).map(|i| 1.0 - 0.001 * i as f64).collect();
        assert_eq!(early_baseline(&ys, 2.0), baseline(&ys));
    }

    #[test]
    fn onset_dates_drifts_and_jumps() {
        // flat, then a linear decline from point 60
        let xs: Vec<f64> = (0..120).map(|i| if i < 60 { 1.0 } else { 1.0 - 0.02 * (i - 60) as f64 } + 0.01 * ((i * 7 % 5) as f64 - 2.0)).collect();
        let at = onset(&xs, 0, 110);
        assert!((58..=63).contains(&at), "drift onset {at}");
        // a jump at 40
        let ys: Vec<f64> = (0..80)
            .map(|i| if i < 40 { 0.0 } else { 5.0 } + 0.1 * ((i * 3 % 7) as f64 - 3.0))
            .collect();
        assert_eq!(onset(&ys, 0, 70), 40);
    }

    #[test]
    fn sustained_skips_missing_points() {
        // flagged on every present point, missing every other row
        let f: Vec<Option<bool>> = (0..12)
            .map(|i| if i % 2 == 0 { Some(i >= 4) } else { None })
            .collect();
        assert_eq!(sustained(&f, 3, 3), Some((4, 8)));
    }

    #[test]
    fn sustained_needs_k_of_n() {
        let f: Vec<Option<bool>> = [0, 1, 0, 0, 1, 1, 1, 0]
            .iter()
            .map(|&v| Some(v == 1))
            .collect();
        assert_eq!(sustained(&f, 3, 3), Some((4, 6)));
        assert_eq!(last_flag(&f), Some(6));
        assert!(sustained(&f, 4, 4).is_none());
    }

    #[test]
    fn confidence_grows_with_margin_and_agreement() {
        assert!(confidence(1.0, 0.5) < confidence(3.0, 0.5));
        assert!(confidence(3.0, 0.2) < confidence(3.0, 1.0));
        assert!(confidence(f64::INFINITY, 1.0) <= 0.99);
    }
}
