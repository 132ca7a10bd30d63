//! REWARD_COLLAPSE, REWARD_SATURATION, REWARD_STALL on the mean reward.
//!
//! - collapse: the smoothed reward falls far below its own best so far and stays there;
//! - saturation: every sample already earns the top reward, so groups stop carrying a
//!   learning signal (the reward spread collapses at the reward's ceiling);
//! - stall: no significant upward trend over a long trailing window, and a slope that
//!   moves the reward by less than its own noise.

use super::{need, num, Detector, Outcome, MIN_POINTS};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;
use crate::signal::{
    agreement, baseline, confidence, flags, last_flag, measured_levels, ols_slope, onset,
    slope_change, smooth, sustained, Baseline, BASELINE_SKIP,
};
use rlprobe_series::robust::{median, MAD_TO_SIGMA};
use rlprobe_series::rolling::rolling_median;

pub const DETECTOR: Detector = Detector {
    name: "reward",
    codes: &["REWARD_COLLAPSE", "REWARD_SATURATION", "REWARD_STALL"],
    reads: "reward_mean (reward_std, reward_max, zero_variance_group_frac)",
    run,
};

/// Collapse: a fall from the best smoothed level of at least this many point-noise σ
/// *and* this share of the gain made since the start.
const COLLAPSE_SIGMA: f64 = 8.0;
const COLLAPSE_SHARE: f64 = 0.4;
/// Saturation: the reward spread below this share of its early level while the mean sits
/// at the top of everything the run has seen.
const SAT_STD: f64 = 0.15;
/// At the ceiling: within this share of the reward's range below its ceiling (the
/// reward_max column's highest value, or 1 for a reward bounded in [0, 1]). A GRPO group of
/// 8 at a 0.95 mean is all-correct 66 % of the time: most groups carry no signal.
const SAT_HEADROOM: f64 = 0.05;
/// Stall: over the trailing window (evaluated every `STALL_EVERY` points) the least-squares
/// slope is not significantly positive (t < 2, about the one-sided 2.5 % level) and moves
/// the reward by less than half its point noise. The window is long because a slow but
/// real improvement (a third of the noise per hundred points, typical late in a run) is
/// only told apart from none over a few hundred points.
const STALL_WINDOW: usize = 300;
const STALL_EVERY: usize = 25;
const STALL_T: f64 = 2.0;
const STALL_MOVE: f64 = 0.5;
/// Points of the trailing rolling median the reward's level is read from.
const SMOOTH: usize = 9;

fn run(run: &RunInput) -> Outcome {
    let (_, r) = match need(run, &["reward_mean"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    let Some(base) = baseline(r) else {
        return Outcome::Silent("reward_mean: no baseline".into());
    };
    let res = run.resolution("reward_mean");
    let noise = base.sigma.max(res).max(1e-9);
    let s = smooth(r, SMOOTH);
    let mut out = Vec::new();
    // the collapse is judged against the level's noise, which autocorrelated noise makes
    // larger than point-to-point differences tell
    // (a larger noise only raises the bar, so the run-long rolling median is computed only
    // when the point-to-point noise already finds a collapse: most runs have none)
    let collapse = collapse(run, r, &s, &base, noise).and_then(|_| {
        let level_noise = noise.max(level_noise(r).unwrap_or(0.0));
        collapse(run, r, &s, &base, level_noise)
    });
    let collapse_from = collapse
        .as_ref()
        .map(|f| f.onset_index)
        .unwrap_or(usize::MAX);
    out.extend(collapse);
    let ceiling = ceiling(run, r);
    let saturated = saturation(run, r, &s, &base)
        .or_else(|| ceiling.and_then(|c| saturation_by_level(run, r, &s, &base, c)));
    out.extend(saturated);
    if collapse_from == usize::MAX {
        out.extend(stall(run, r, noise, ceiling));
    }
    Outcome::Ran(out)
}

/// Points of the centred rolling median the level noise is measured about: longer than
/// the wander of autocorrelated noise, short enough to follow a healthy learning curve.
const LEVEL_NOISE_WINDOW: usize = 61;

/// The noise of the reward's level: the robust spread (MAD, as a σ) of the present points
/// about their centred rolling median over `LEVEL_NOISE_WINDOW` points, over the whole run.
/// First differences see only the point-to-point part of the noise; real training metrics
/// also wander over tens of points (autocorrelated noise), which a 9-point median does not
/// average out. A collapse's own transition touches few of the points, so the median of
/// the deviations is not moved by it. None under two windows of points.
fn level_noise(r: &[f64]) -> Option<f64> {
    let v: Vec<f64> = r.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.len() < 2 * LEVEL_NOISE_WINDOW {
        return None;
    }
    let med = rolling_median(&v, LEVEL_NOISE_WINDOW, LEVEL_NOISE_WINDOW);
    let dev: Vec<f64> = (LEVEL_NOISE_WINDOW - 1..v.len())
        .map(|j| (v[j - LEVEL_NOISE_WINDOW / 2] - med[j]).abs())
        .collect();
    Some(median(&dev)? * MAD_TO_SIGMA)
}

fn collapse(run: &RunInput, r: &[f64], s: &[f64], base: &Baseline, noise: f64) -> Option<Finding> {
    let mut peak = f64::NEG_INFINITY;
    let mut peaks = vec![f64::NAN; s.len()];
    for i in base.end.saturating_sub(10)..s.len() {
        if !s[i].is_nan() {
            peak = peak.max(s[i]);
        }
        peaks[i] = peak;
    }
    let start = base.median;
    let fl = flags(s, base.end, |i, x| {
        let drop = peaks[i] - x;
        drop > COLLAPSE_SIGMA * noise / 3.0_f64.sqrt()
            && drop > COLLAPSE_SHARE * (peaks[i] - start).max(0.0)
            && drop > 0.05 * peaks[i].abs().max(noise)
    });
    let (_, t) = sustained(&fl, 5, 5)?;
    // searched from the warm-up on: a fall inside the baseline window is dated there, and
    // its stated start is not taken across it
    let at = onset(r, t.saturating_sub(150).max(BASELINE_SKIP), t);
    let last = last_flag(&fl).unwrap_or(t);
    // the values of the first episode (a later one may start from a new best)
    let now = s[t];
    let best = peaks[t];
    // the level it fell from ends at that best (or at the onset, if earlier): an onset
    // dated a few points late would otherwise take the first of the fall into the start.
    // The best of a trailing 9-point median is the raw level about 4 points before it
    let best_at = (0..=t).find(|&i| s[i] == best).unwrap_or(at);
    let from = at.min((best_at + 1).saturating_sub(SMOOTH / 2)).max(1);
    let levels = levels_fallen_from(r, &run.steps, "reward_mean", from, last);
    Some(
        Finding::new(
            "REWARD_COLLAPSE",
            Severity::Critical,
            format!("reward collapsed (best so far {}, smoothed)", num(best)),
            "The policy has lost what it learned: resume from the checkpoint before the onset with a lower learning rate, and look at the samples around it for a reward-function or data change.",
        )
        .at(&run.steps, at, last)
        .confidence(confidence((best - now) / (COLLAPSE_SIGMA * noise / 3.0_f64.sqrt()), agreement(&fl, t, last)))
        .levels(levels)
        .column("reward_mean")
        .evidence("best (smoothed)", best)
        .evidence("at trigger (smoothed)", now),
    )
}

/// The levels of a fall: `measured_levels` over the stretch that begins
/// `BASELINE_SKIP + BASELINE_POINTS` present points before the onset, so the start is the
/// level the reward fell from (the `BASELINE_POINTS` points just before the onset), not
/// the run's start it may have risen far from.
fn levels_fallen_from(
    xs: &[f64],
    steps: &[i64],
    column: &str,
    onset: usize,
    last: usize,
) -> Option<crate::finding::Levels> {
    let lo = (0..onset.min(xs.len()))
        .rev()
        .filter(|&i| !xs[i].is_nan())
        .nth(BASELINE_SKIP + crate::signal::BASELINE_POINTS - 1)
        .unwrap_or(0);
    measured_levels(
        &xs[lo..],
        &steps[lo..],
        column,
        onset - lo,
        last.max(onset) - lo,
    )
}

fn saturation(run: &RunInput, r: &[f64], s: &[f64], base: &Baseline) -> Option<Finding> {
    let spread = run
        .series("reward_std")
        .and_then(|sd| baseline(sd).filter(|b| b.median > 0.0).map(|b| (sd, b)));
    let zv = run.series("zero_variance_group_frac");
    if spread.is_none() && zv.is_none() {
        return None;
    }
    let ceiling = run.series("reward_max");
    let sd_s = spread.map(|(sd, _)| smooth(sd, 9));
    let zv_s = zv.map(|z| smooth(z, 9));
    let mut top = f64::NEG_INFINITY;
    let mut tops = vec![f64::NAN; r.len()];
    for i in 0..r.len() {
        let c = ceiling
            .map(|m| m[i])
            .filter(|v| !v.is_nan())
            .unwrap_or(r[i]);
        if !c.is_nan() {
            top = top.max(c);
        }
        tops[i] = top;
    }
    let fl = flags(s, base.end, |i, x| {
        let at_top = x >= tops[i] - 0.02 * tops[i].abs().max(1e-9) - 2.0 * base.sigma;
        let flat = match (&sd_s, spread) {
            (Some(sd), Some((_, b))) => sd[i] < SAT_STD * b.median,
            _ => zv_s.as_ref().is_some_and(|z| z[i] > 0.9),
        };
        at_top && flat && x > base.median + 3.0 * base.sigma
    });
    let (_, t) = sustained(&fl, 10, 10)?;
    let at = onset(r, t.saturating_sub(150).max(base.end.saturating_sub(10)), t);
    let last = last_flag(&fl).unwrap_or(t);
    let now = crate::signal::last_value(s, last);
    let mut f = Finding::new(
        "REWARD_SATURATION",
        Severity::Warn,
        format!("reward saturated at {} with no spread left", num(now)),
        "Every sample already earns the top reward: the task is solved for this policy. Move to harder prompts (curriculum), or stop and evaluate.",
    )
    .at(&run.steps, at, last)
    .confidence(confidence(2.0, agreement(&fl, t, last)))
    .levels(measured_levels(r, &run.steps, "reward_mean", at, last))
    .column("reward_mean")
    .evidence("reward (smoothed)", now);
    if let Some(sd) = &sd_s {
        f = f
            .column("reward_std")
            .evidence("reward_std (smoothed)", crate::signal::last_value(sd, last));
    }
    Some(f)
}

/// The reward's known ceiling and floor, and where the ceiling comes from: the highest
/// reward_max logged, else 1 for a reward whose values all lie in [0, 1]. None when
/// unknown: a mean reward's own maximum is no ceiling.
#[derive(Debug, Clone, Copy)]
struct Ceiling {
    top: f64,
    floor: f64,
    from: &'static str,
}

impl Ceiling {
    /// How far below the ceiling `x` is, as a share of the reward's range.
    fn headroom(&self, x: f64) -> f64 {
        (self.top - x) / (self.top - self.floor).max(1e-12)
    }
}

fn ceiling(run: &RunInput, r: &[f64]) -> Option<Ceiling> {
    let present = || r.iter().copied().filter(|v| !v.is_nan());
    let lowest = present().fold(f64::INFINITY, f64::min);
    if let Some(m) = run.series("reward_max") {
        let top = m
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .fold(f64::NEG_INFINITY, f64::max);
        let floor = lowest.min(0.0);
        if top.is_finite() && top > floor {
            return Some(Ceiling {
                top,
                floor,
                from: "the highest reward_max",
            });
        }
    }
    present()
        .all(|v| (0.0..=1.0).contains(&v))
        .then_some(Ceiling {
            top: 1.0,
            floor: 0.0,
            from: "a reward bounded in [0, 1]",
        })
}

/// Saturation told from the reward's level alone, when no spread column says it (or the
/// spread has not collapsed yet): a reward within `SAT_HEADROOM` of its ceiling has nowhere
/// to go, and calling it a stall ("not learning") would point the remedy the wrong way.
/// Reported rather than left silent because the user's next move is the same either way
/// (harder prompts or stop); at lower confidence, since how many groups still carry a
/// signal is not measured.
fn saturation_by_level(
    run: &RunInput,
    r: &[f64],
    s: &[f64],
    base: &Baseline,
    c: Ceiling,
) -> Option<Finding> {
    let fl = flags(s, base.end, |_, x| c.headroom(x) <= SAT_HEADROOM);
    let (_, t) = sustained(&fl, 10, 10)?;
    let at = onset(r, t.saturating_sub(150).max(base.end.saturating_sub(10)), t);
    let last = last_flag(&fl).unwrap_or(t);
    let levels = measured_levels(r, &run.steps, "reward_mean", at, last);
    let end = levels
        .as_ref()
        .map_or(crate::signal::last_value(s, last), |l| l.end);
    let spread =
        if run.series("reward_std").is_some() || run.series("zero_variance_group_frac").is_some() {
            "the logged spread has not collapsed yet"
        } else {
            "no reward_std or zero_variance_group_frac logged to tell how many groups still vary"
        };
    Some(
        Finding::new(
            "REWARD_SATURATION",
            Severity::Warn,
            format!(
                "reward at {}% of its ceiling {} ({}); {spread}",
                num(100.0 * end / c.top),
                num(c.top),
                c.from
            ),
            "Nearly every sample already earns the top reward, so most groups carry no learning signal: move to harder prompts (curriculum), or stop and evaluate. Log reward_std or zero_variance_group_frac to see how many groups still vary.",
        )
        .at(&run.steps, at, last)
        .confidence(0.8 * confidence(1.0, agreement(&fl, t, last)))
        .levels(levels)
        .column("reward_mean")
        .evidence("ceiling", c.top)
        .evidence("headroom share", c.headroom(end)),
    )
}

fn stall(run: &RunInput, r: &[f64], noise: f64, ceiling: Option<Ceiling>) -> Option<Finding> {
    let pts: Vec<usize> = (0..r.len()).filter(|&i| !r[i].is_nan()).collect();
    if pts.len() < STALL_WINDOW + crate::signal::BASELINE_SKIP {
        return None;
    }
    // evaluated every STALL_EVERY points on the trailing window, O(W) each
    let mut hits: Vec<usize> = Vec::new();
    let mut end = STALL_WINDOW + crate::signal::BASELINE_SKIP;
    while end <= pts.len() {
        let w: Vec<f64> = pts[end - STALL_WINDOW..end].iter().map(|&i| r[i]).collect();
        let Some((slope, se)) = ols_slope(&w) else {
            break;
        };
        // a reward flat at its ceiling is saturated (reported as such), not stalled
        let at_ceiling =
            ceiling.is_some_and(|c| median(&w).is_some_and(|m| c.headroom(m) <= SAT_HEADROOM));
        let flat = !at_ceiling
            && slope / se < STALL_T
            && slope * (STALL_WINDOW as f64) < STALL_MOVE * noise;
        if flat {
            hits.push(end - 1);
        } else if hits.len() >= 2 {
            break; // the first stall episode, ended
        } else {
            hits.clear(); // one flat window alone is noise: keep looking
        }
        end += STALL_EVERY;
    }
    if hits.len() < 2 {
        return None;
    }
    let from = pts[(hits[0] + 1).saturating_sub(STALL_WINDOW + STALL_WINDOW / 3)];
    let at = slope_change(r, from, pts[hits[0]]);
    let last = pts[*hits.last().unwrap()];
    let level = crate::signal::last_value(&smooth(r, 15), last);
    let span = pts.iter().filter(|&&i| i >= at && i <= last).count();
    Some(
        Finding::new(
            "REWARD_STALL",
            Severity::Warn,
            format!("no reward improvement over {span} logged points, steps {}–{} (level {})", run.steps[at], run.steps[last], num(level)),
            "The run is not learning: check that rewards vary within groups, the learning rate is not tiny, and the reward function can be satisfied; consider stopping to save compute.",
        )
        .at(&run.steps, at, last)
        .confidence(confidence(1.0 + (hits.len() as f64 - 2.0) / 4.0, 1.0))
        .levels(measured_levels(r, &run.steps, "reward_mean", at, last))
        .column("reward_mean")
        .evidence("points without improvement", span as f64)
        .evidence("level (smoothed)", level),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    const N: usize = 600;

    /// A reward climbing from 0.5 to `top` (time constant 30 points) and staying there,
    /// with 0.01 noise, kept within [0, 1].
    fn climbing_to(top: f64, rng: &mut Rng) -> Vec<f64> {
        (0..N)
            .map(|i| {
                let up = 1.0 - (-(i as f64) / 30.0).exp();
                (0.5 + (top - 0.5) * up + 0.01 * rng.normal()).clamp(0.0, 1.0)
            })
            .collect()
    }

    fn codes(run: &RunInput) -> Vec<Finding> {
        let Outcome::Ran(f) = super::run(run) else {
            panic!("the detector runs")
        };
        f
    }

    fn steps() -> Vec<i64> {
        (0..N as i64).collect()
    }

    #[test]
    fn a_collapse_states_the_level_it_fell_from() {
        let mut rng = Rng::new(7);
        // 0.2 rising to 0.8 by point 200, held, then falling to 0.3 from point 400
        let r: Vec<f64> = (0..N)
            .map(|i| {
                let up = 0.6 * (i as f64 / 200.0).min(1.0);
                let down = if i >= 400 { 0.5 } else { 0.0 };
                0.2 + up - down + 0.01 * rng.normal()
            })
            .collect();
        let f = codes(&RunInput::new(steps()).with("reward_mean", r));
        let c = f
            .iter()
            .find(|f| f.code == "REWARD_COLLAPSE")
            .unwrap_or_else(|| panic!("REWARD_COLLAPSE found: {f:?}"));
        assert!(c.onset_index.abs_diff(400) <= 2, "onset {}", c.onset_index);
        let l = c.levels.as_ref().expect("states its levels");
        // from the level just before the fall, not the run's start it had risen from
        assert!((l.start - 0.8).abs() < 0.01, "{l:?}");
        assert!(l.start_steps.0 >= 200 && l.start_steps.1 < 400, "{l:?}");
        assert!((l.end - 0.3).abs() < 0.01, "{l:?}");
    }

    #[test]
    fn a_flat_start_with_autocorrelated_noise_is_no_collapse() {
        // a PPO reward flat around −0.5 for 1,600 points, its noise partly autocorrelated as
        // real training metrics are (an AR(0.9) wander under white noise): the level wanders
        // more than point-to-point differences tell, and no wander is a collapse
        let n = 1600;
        for seed in 0..12 {
            let mut rng = Rng::new(100 + seed);
            let mut ar = 0.0;
            let r: Vec<f64> = (0..n)
                .map(|i| {
                    ar = 0.9 * ar + 0.008 * rng.normal();
                    -0.5 + 0.00002 * i as f64 + ar + 0.02 * rng.normal()
                })
                .collect();
            let run = RunInput::new((0..n as i64).collect()).with("reward_mean", r);
            let f = codes(&run);
            assert!(
                f.iter().all(|f| f.code != "REWARD_COLLAPSE"),
                "seed {seed}: {f:?}"
            );
        }
    }

    #[test]
    fn a_reward_at_its_ceiling_is_saturation_not_a_stall() {
        let mut rng = Rng::new(5);
        let r = climbing_to(0.97, &mut rng);
        // the ceiling from the reward_max column, from values bounded in [0, 1], and with
        // the spread logged (it shrinks as nearly every sample earns 1)
        let with_max = RunInput::new(steps())
            .with("reward_mean", r.clone())
            .with("reward_max", vec![1.0; N]);
        let bounded = RunInput::new(steps()).with("reward_mean", r.clone());
        let sd: Vec<f64> = r
            .iter()
            .map(|m| (m * (1.0 - m)).sqrt() * (1.0 + 0.05 * rng.normal()))
            .collect();
        let with_spread = RunInput::new(steps())
            .with("reward_mean", r)
            .with("reward_std", sd);
        for (what, run) in [
            ("reward_max", with_max),
            ("bounded", bounded),
            ("spread", with_spread),
        ] {
            let f = codes(&run);
            assert!(
                f.iter().all(|f| f.code != "REWARD_STALL"),
                "{what}: a reward at 97 % of its ceiling is not 'not learning': {f:?}"
            );
            let sat = f
                .iter()
                .find(|f| f.code == "REWARD_SATURATION")
                .unwrap_or_else(|| panic!("{what}: saturation stated: {f:?}"));
            assert!(sat.onset_index < 150, "{what}: onset {}", sat.onset_index);
            let l = sat.levels.as_ref().expect("states its levels");
            assert!((l.end - 0.97).abs() < 0.01, "{what}: {l:?}");
        }
    }

    #[test]
    fn a_reward_flat_below_its_ceiling_still_stalls() {
        let mut rng = Rng::new(6);
        let run = RunInput::new(steps())
            .with("reward_mean", climbing_to(0.6, &mut rng))
            .with("reward_max", vec![1.0; N]);
        let f = codes(&run);
        assert!(f.iter().any(|f| f.code == "REWARD_STALL"), "{f:?}");
        assert!(f.iter().all(|f| f.code != "REWARD_SATURATION"), "{f:?}");
    }
}
