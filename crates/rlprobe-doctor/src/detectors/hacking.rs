//! REWARD_HACKING: the train reward rises for the wrong reason. A composite of three
//! independent signs; one is a warning, two or more are critical:
//! - held-out divergence: a held-out metric falls while the train reward does not (the
//!   classic overoptimisation signature, Gao et al. 2023, "Scaling Laws for Reward Model
//!   Overoptimization");
//! - KL outrunning reward: the policy moves away from the reference fast while the reward
//!   barely moves;
//! - length-driven reward: within a step, reward correlates with completion length
//!   (Singhal et al. 2023, "A Long Way to Go: Investigating Length Correlations in RLHF").

use rlprobe_series::robust::{median, MAD_TO_SIGMA};

use super::{num, Detector, Outcome, MIN_POINTS};
use crate::finding::{EvidenceSample, Finding, Levels, Severity};
use crate::input::RunInput;
use crate::signal::{baseline, confidence, flags, onset, smooth, sustained};

pub const DETECTOR: Detector = Detector {
    name: "reward_hacking",
    codes: &["REWARD_HACKING"],
    reads:
        "reward_mean with extra.val*/eval* held-out metrics, kl_mean, per-sample reward and length",
    run,
};

/// Held-out metric names (verl `val/…`, `val-core/…`; TRL/HF `eval_…`).
pub const HELD_OUT_PREFIXES: &[&str] = &[
    "extra.val/",
    "extra.val-core/",
    "extra.val-aux/",
    "extra.val_",
    "extra.eval/",
    "extra.eval_",
];
/// Held-out evaluations needed before a fall is judged.
const HELD_OUT_MIN: usize = 12;
/// A held-out fall from the level before its change point to the level at the end (medians
/// of `HELD_OUT_LEVEL` evaluations each) of at least this many σ of the series' own
/// evaluation noise and this share of what it had gained; the last `HELD_OUT_LAST`
/// evaluations must all still be down (a 2–4 % wobble that recovers is evaluation noise).
const HELD_OUT_SIGMA: f64 = 4.0;
const HELD_OUT_SHARE: f64 = 0.3;
const HELD_OUT_LEVEL: usize = 5;
const HELD_OUT_LAST: usize = 3;
/// Evaluations the change point is searched over (the most recent).
const HELD_OUT_SEARCH: usize = 300;
/// KL outrunning reward: KL multiplied by this over the span while the reward moved by
/// less than its point noise.
const KL_RATIO: f64 = 3.0;
const KL_SPAN: usize = 100;
/// Per-step Pearson correlation of reward with length (smoothed over 10 steps) above
/// this, where it started below `CORR_EARLY`.
const CORR: f64 = 0.6;
const CORR_EARLY: f64 = 0.3;

struct Sign {
    what: String,
    onset: usize,
    last: usize,
    strength: f64,
    /// The levels the sign states (the held-out metric's, before and after its fall).
    levels: Option<Levels>,
}

fn run(run: &RunInput) -> Outcome {
    let Some(r) = run.series("reward_mean") else {
        return Outcome::Silent("no reward_mean column".into());
    };
    if r.iter().filter(|v| !v.is_nan()).count() < MIN_POINTS {
        return Outcome::Silent(format!(
            "reward_mean has too few points (needs {MIN_POINTS})"
        ));
    }
    let held: Vec<(&str, &[f64])> = run
        .columns
        .iter()
        .filter(|(k, _)| HELD_OUT_PREFIXES.iter().any(|p| k.starts_with(p)))
        .map(|(k, c)| (k.as_str(), c.values.as_slice()))
        .collect();
    let has_kl = run.series("kl_mean").is_some();
    let has_samples = run.samples.as_ref().is_some_and(|s| {
        s.completion_len.iter().any(|v| !v.is_nan()) && s.reward.iter().any(|v| !v.is_nan())
    });
    if held.is_empty() && !has_kl && !has_samples {
        return Outcome::Silent(
            "no held-out metric (extra.val*/eval*), kl_mean or per-sample lengths".into(),
        );
    }
    let mut signs: Vec<Sign> = Vec::new();
    let mut columns = vec!["reward_mean".to_string()];
    for (name, xs) in held {
        if let Some(s) = held_out(run, r, name, xs) {
            columns.push(name.to_string());
            signs.push(s);
        }
    }
    if let Some(kl) = run.series("kl_mean") {
        if let Some(s) = kl_outruns(r, kl) {
            columns.push("kl_mean".into());
            signs.push(s);
        }
    }
    let mut corr_steps: Option<(i64, i64)> = None;
    if has_samples {
        if let Some((s, span)) = length_driven(run) {
            corr_steps = Some(span);
            signs.push(s);
        }
    }
    if signs.is_empty() {
        return Outcome::Ran(Vec::new());
    }
    signs.sort_by_key(|s| s.onset);
    let sev = if signs.len() >= 2 {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let last = signs.iter().map(|s| s.last).max().unwrap();
    // the held-out metric's levels are the checkable numbers; stated against the level
    // before its change point (the run's start is not what the fall is measured from)
    let levels = signs.iter().find_map(|s| s.levels.clone());
    let strength = signs.iter().map(|s| s.strength).fold(1.0, f64::max);
    let mut f = Finding::new(
        "REWARD_HACKING",
        sev,
        signs.iter().map(|s| s.what.as_str()).collect::<Vec<_>>().join("; "),
        "The reward is being gamed: read the top-reward samples, fix the reward function or the reward model's blind spot (length, format), add a length penalty or KL, and select checkpoints on the held-out metric.",
    )
    .at(&run.steps, signs[0].onset, last)
    .confidence(confidence(strength, (signs.len() as f64 / 2.0).min(1.0)))
    .levels(levels)
    .evidence("signs", signs.len() as f64);
    for c in columns {
        f = f.column(&c);
    }
    if let (Some(samples), Some((a, b))) = (
        &run.samples,
        corr_steps.or(Some((run.steps[signs[0].onset], run.steps[last]))),
    ) {
        let mut idx: Vec<usize> = (0..samples.len())
            .filter(|&i| {
                samples.step[i] >= a && samples.step[i] <= b && !samples.reward[i].is_nan()
            })
            .collect();
        idx.sort_by(|&x, &y| {
            samples.reward[y]
                .total_cmp(&samples.reward[x])
                .then(samples.completion_len[y].total_cmp(&samples.completion_len[x]))
        });
        f.samples = idx
            .iter()
            .take(3)
            .map(|&i| EvidenceSample {
                step: samples.step[i],
                sample_id: samples.sample_id[i].to_string(),
                why: "top reward".into(),
            })
            .collect();
    }
    Outcome::Ran(vec![f])
}

fn held_out(run: &RunInput, r: &[f64], name: &str, xs: &[f64]) -> Option<Sign> {
    // evaluations come every 10–50 points, with gaps: work on the present ones
    let pts: Vec<usize> = (0..xs.len()).filter(|&i| !xs[i].is_nan()).collect();
    if pts.len() < HELD_OUT_MIN {
        return None;
    }
    let lower_is_better = ["loss", "error", "perplexity", "ppl"]
        .iter()
        .any(|w| name.contains(w));
    let v: Vec<f64> = pts
        .iter()
        .map(|&i| if lower_is_better { -xs[i] } else { xs[i] })
        .collect();
    let noise = eval_noise(&v)?.max(1e-9);
    let n = v.len();
    let (peak, trigger) = lasting_fall(&v, noise)?;
    // dated at the metric's last evaluation before it turned down (the checkpoint to
    // select), fitted over the evaluations around the peak on their own positions
    // (evaluations are unevenly spaced). A running best alone is a noise maximum; one change
    // point over the whole series lands inside a rise that came before the fall
    let c = apex(
        &pts,
        &v,
        peak.saturating_sub(2 * HELD_OUT_LEVEL),
        (trigger + HELD_OUT_LEVEL).min(n - 1),
    );
    if c + 1 < HELD_OUT_LEVEL || n - c <= HELD_OUT_LAST {
        return None;
    }
    // the level up to and including that evaluation, and the level at the end
    let (sa, sb) = (c + 1 - HELD_OUT_LEVEL, c);
    let (ea, eb) = ((n - HELD_OUT_LEVEL).max(c + 1), n - 1);
    let before = median(&v[sa..=sb])?;
    let end = median(&v[ea..=eb])?;
    let early = median(&v[..HELD_OUT_MIN])?;
    let fall = before - end;
    let gained = (before - early).max(0.0);
    // a fall that recovered, even in part, by the last evaluations is evaluation noise
    let stays_down = v[n - HELD_OUT_LAST..]
        .iter()
        .all(|&x| x < before - 2.0 * noise);
    // the train reward holds (within its own noise) or rises over the same steps
    let rs = smooth(r, 9);
    let r_noise = baseline(r).map_or(0.0, |b| b.sigma);
    let (then, now) = (
        crate::signal::last_value(&rs, pts[c]),
        crate::signal::last_value(&rs, pts[n - 1]),
    );
    let train_holds = now >= then - r_noise;
    if !(fall > HELD_OUT_SIGMA * noise
        && fall > HELD_OUT_SHARE * gained
        && stays_down
        && train_holds)
    {
        return None;
    }
    let raw = |a: usize, b: usize| median(&pts[a..=b].iter().map(|&i| xs[i]).collect::<Vec<_>>());
    let (start_level, end_level) = (raw(sa, sb)?, raw(ea, eb)?);
    let steps = &run.steps;
    let levels = Levels {
        column: name.to_string(),
        start: start_level,
        start_steps: (steps[pts[sa]], steps[pts[sb]]),
        end: end_level,
        end_steps: (steps[pts[ea]], steps[pts[eb]]),
        ratio: if start_level != 0.0 {
            end_level / start_level
        } else {
            f64::INFINITY
        },
    };
    Some(Sign {
        what: format!(
            "held-out {} fell by {} ({}× its evaluation-to-evaluation noise σ {}) and stayed down through the last {HELD_OUT_LAST} evaluations, while train reward held ({} → {})",
            name.trim_start_matches("extra."),
            num(fall),
            num(fall / noise),
            num(noise),
            num(then),
            num(now)
        ),
        onset: pts[c],
        last: pts[n - 1],
        strength: fall / (HELD_OUT_SIGMA * noise),
        levels: Some(levels),
    })
}

/// The held-out fall that lasts to the end of `v` (oriented: higher is better), as (the
/// evaluation of its best before the fall, the evaluation where the fall had persisted):
/// a fall is `HELD_OUT_LAST` evaluations in a row (median of three) more than
/// `HELD_OUT_SIGMA` σ under the best so far; it is over when the metric comes back within
/// 2 σ of that best, and the scan goes on (a wobble that recovers is not the fall).
fn lasting_fall(v: &[f64], noise: f64) -> Option<(usize, usize)> {
    let n = v.len();
    let lo = n.saturating_sub(HELD_OUT_SEARCH);
    let sm: Vec<f64> = (0..n)
        .map(|j| {
            let w = &v[j.saturating_sub(1)..(j + 2).min(n)];
            median(w).unwrap_or(v[j])
        })
        .collect();
    let mut best = (sm[lo], lo);
    let mut below = 0;
    let mut fall: Option<(usize, usize)> = None;
    for (j, &x) in sm.iter().enumerate().skip(lo + 1) {
        if x > best.0 {
            best = (x, j);
        }
        if fall.is_some() && x >= best.0 - 2.0 * noise {
            fall = None;
        }
        if best.0 - x > HELD_OUT_SIGMA * noise {
            below += 1;
        } else {
            below = 0;
        }
        if below >= HELD_OUT_LAST && fall.is_none() {
            fall = Some((best.1, j));
        }
    }
    fall
}

/// Where a fall began in the evaluations `lo..=hi` of `v` (positions `pts`): the apex of
/// the least-squares shape "a line (a level or a rise), a straight fall, a new level" (the
/// fall may also run to the end). A single kink fitted across the fall and the level after
/// it would be pulled early by that level.
fn apex(pts: &[usize], v: &[f64], lo: usize, hi: usize) -> usize {
    let p: Vec<(f64, f64)> = (lo..=hi).map(|k| (pts[k] as f64, v[k])).collect();
    let m = p.len();
    let mut best = (f64::INFINITY, hi.saturating_sub(1));
    for c in 2..m.saturating_sub(1) {
        // the line before the fall, through the evaluations up to and including the apex
        let pre = &p[..=c];
        let k = pre.len() as f64;
        let (mx, my) = (
            pre.iter().map(|q| q.0).sum::<f64>() / k,
            pre.iter().map(|q| q.1).sum::<f64>() / k,
        );
        let sxx: f64 = pre.iter().map(|q| (q.0 - mx).powi(2)).sum();
        let b = pre.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum::<f64>() / sxx.max(1e-300);
        let line = |x: f64| my + b * (x - mx);
        let pre_sse: f64 = pre.iter().map(|q| (q.1 - line(q.0)).powi(2)).sum();
        let (xc, yc) = (p[c].0, line(p[c].0));
        for d in c + 1..m {
            // the new level: the mean from the fall's end `d` on
            let end = p[d..].iter().map(|q| q.1).sum::<f64>() / (m - d) as f64;
            let ramp = |x: f64| yc + (end - yc) * (x - xc) / (p[d].0 - xc);
            let sse = pre_sse
                + p[c + 1..d]
                    .iter()
                    .map(|q| (q.1 - ramp(q.0)).powi(2))
                    .sum::<f64>()
                + p[d..].iter().map(|q| (q.1 - end).powi(2)).sum::<f64>();
            if sse < best.0 {
                best = (sse, lo + c);
            }
        }
    }
    best.1
}

/// A held-out series' own noise: the robust spread of its evaluation-to-evaluation
/// differences, centred on their median so a trend (or the fall itself) is not noise.
fn eval_noise(v: &[f64]) -> Option<f64> {
    let d: Vec<f64> = v.windows(2).map(|w| w[1] - w[0]).collect();
    let mid = median(&d)?;
    let dev: Vec<f64> = d.iter().map(|x| (x - mid).abs()).collect();
    Some(median(&dev)? * MAD_TO_SIGMA / std::f64::consts::SQRT_2)
}

fn kl_outruns(r: &[f64], kl: &[f64]) -> Option<Sign> {
    let kb = baseline(kl)?;
    let rb = baseline(r)?;
    let (ks, rs) = (smooth(kl, 9), smooth(r, 15));
    let start = kb.end.max(rb.end) + KL_SPAN;
    let carried = |v: &[f64], i: usize| crate::signal::last_value(v, i);
    let fl = flags(&ks, start, |i, x| {
        let before = carried(&ks, i - KL_SPAN);
        let gain = carried(&rs, i) - carried(&rs, i - KL_SPAN);
        before >= 0.01 && x > KL_RATIO * before && gain < rb.sigma
    });
    let (_, t) = sustained(&fl, 10, 10)?;
    let logs = crate::signal::ln_floor(kl, 1e-12);
    let at = onset(&logs, t.saturating_sub(KL_SPAN + 50), t);
    let last = crate::signal::last_flag(&fl).unwrap_or(t);
    Some(Sign {
        what: format!(
            "KL ×{} over {KL_SPAN} points while reward moved {}",
            num(ks[t] / carried(&ks, t - KL_SPAN)),
            num(carried(&rs, t) - carried(&rs, t - KL_SPAN))
        ),
        onset: at,
        last,
        strength: ks[t] / carried(&ks, t - KL_SPAN) / KL_RATIO,
        levels: None,
    })
}

fn length_driven(run: &RunInput) -> Option<(Sign, (i64, i64))> {
    let s = run.samples.as_ref()?;
    // per-step correlation over the samples of that step (the point of its step)
    let mut corr = vec![f64::NAN; run.steps.len()];
    let mut i = 0;
    while i < s.len() {
        let mut j = i;
        while j < s.len() && s.step[j] == s.step[i] {
            j += 1;
        }
        if let (Ok(p), Some(c)) = (
            run.steps.binary_search(&s.step[i]),
            pearson(&s.reward[i..j], &s.completion_len[i..j]),
        ) {
            corr[p] = c;
        }
        i = j;
    }
    let present = corr.iter().filter(|v| !v.is_nan()).count();
    if present < MIN_POINTS {
        return None;
    }
    let early = median(
        &corr
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .take(20)
            .collect::<Vec<_>>(),
    )?;
    if early >= CORR_EARLY {
        return None;
    }
    let sm = smooth(&corr, 10);
    let from = (0..corr.len()).filter(|&i| !corr[i].is_nan()).nth(20)?;
    let fl = flags(&sm, from, |_, x| x > CORR);
    let (_, t) = sustained(&fl, 5, 5)?;
    let at = onset(&corr, t.saturating_sub(150).max(from.saturating_sub(20)), t);
    let last = crate::signal::last_flag(&fl).unwrap_or(t);
    Some((
        Sign {
            what: format!(
                "reward tracks completion length (per-step correlation {} → {})",
                num(early),
                num(sm[t])
            ),
            onset: at,
            last,
            strength: sm[t] / CORR,
            levels: None,
        },
        (run.steps[at], run.steps[last]),
    ))
}

/// Pearson correlation of the pairs where both are present (None under 4 pairs or with
/// no spread).
fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .map(|(x, y)| (*x, *y))
        .collect();
    let n = pairs.len() as f64;
    if pairs.len() < 4 {
        return None;
    }
    let (ma, mb) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    if saa <= 0.0 || sbb <= 0.0 {
        return None;
    }
    Some(sab / (saa * sbb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    const N: usize = 800;

    /// Train reward rising slowly (0.3 → 0.54) with 0.02 noise: it holds throughout.
    fn reward(rng: &mut Rng) -> Vec<f64> {
        (0..N)
            .map(|i| 0.3 + 0.0003 * i as f64 + 0.02 * rng.normal())
            .collect()
    }

    /// A held-out metric evaluated every 10–50 points (missing in between), from `level(i)`
    /// plus noise of `sd(i)`.
    fn held_out(
        rng: &mut Rng,
        level: impl Fn(usize) -> f64,
        sd: impl Fn(usize) -> f64,
        gap: (usize, usize),
    ) -> Vec<f64> {
        let mut xs = vec![f64::NAN; N];
        let mut i = rng.range(5, 15);
        while i < N {
            xs[i] = level(i) + sd(i) * rng.normal();
            i += rng.range(gap.0, gap.1 + 1);
        }
        xs
    }

    fn hacking(r: Vec<f64>, val: Vec<f64>) -> Option<Finding> {
        let run = RunInput::new((0..N as i64).collect())
            .with("reward_mean", r)
            .with("extra.val/accuracy", val);
        let Outcome::Ran(f) = super::run(&run) else {
            panic!("the detector runs")
        };
        f.into_iter().next()
    }

    #[test]
    fn a_held_out_wobble_that_recovers_is_not_hacking() {
        let mut rng = Rng::new(41);
        // 0.6, a 3 % dip (0.018) over the 60 points from 400 and back; early evaluations
        // tight (0.3 %), later ones ~1 %
        let level = |i: usize| 0.6 - if (400..460).contains(&i) { 0.018 } else { 0.0 };
        let sd = |i: usize| if i < 300 { 0.002 } else { 0.006 };
        let val = held_out(&mut rng, level, sd, (10, 20));
        let r = reward(&mut rng);
        assert_eq!(hacking(r, val), None);
    }

    #[test]
    fn a_dip_in_a_rising_held_out_metric_is_not_hacking() {
        let mut rng = Rng::new(42);
        // creeping up 0.6 → 0.64 with ~1 % evaluation noise (tight early), the evaluations
        // of the last 80 points 2 % under the trend: still no lower than the metric was
        let level = |i: usize| 0.6 + 0.00005 * i as f64 - if i >= 720 { 0.013 } else { 0.0 };
        let sd = |i: usize| if i < 250 { 0.002 } else { 0.006 };
        let val = held_out(&mut rng, level, sd, (10, 20));
        let r = reward(&mut rng);
        assert_eq!(hacking(r, val), None);
    }

    #[test]
    fn a_held_out_fall_after_a_rise_is_dated_at_its_best_evaluation() {
        // the held-out metric rises with the train reward (0.3 → ~0.5, 1 % noise), is
        // evaluated every 20 points with a missing stretch, and from the evaluation at 419
        // falls by 8 σ over four evaluations and stays down while train reward keeps rising
        let mut rng = Rng::new(44);
        let mut exact = 0;
        for seed in 0..6 {
            let mut evals: Vec<usize> = (19..N).step_by(20).collect();
            evals.drain(4 + seed..9 + seed); // five evaluations missing
            let t0 = 419;
            assert!(evals.contains(&t0));
            let mut val = vec![f64::NAN; N];
            for &i in &evals {
                let rise = 0.2 * (1.0 - (-(i.min(t0) as f64) / 250.0).exp());
                let fall = 0.08 * ((i.saturating_sub(t0)) as f64 / 80.0).min(1.0);
                val[i] = 0.3 + rise - fall + 0.01 * rng.normal();
            }
            let r = reward(&mut rng);
            let f = hacking(r, val).expect("REWARD_HACKING found");
            // the last evaluation at the metric's best (the checkpoint to select), give or
            // take one evaluation where the fall's first step is within the noise
            let err = f.onset_index.abs_diff(t0);
            assert!(
                err <= 20,
                "seed {seed}: onset {}: {}",
                f.onset_index,
                f.message
            );
            exact += usize::from(err == 0);
        }
        assert!(exact >= 4, "dated exactly in {exact} of 6");
    }

    #[test]
    fn a_lasting_held_out_fall_against_its_own_noise_is_hacking() {
        let mut rng = Rng::new(43);
        // 0.6 with ~1 % noise, falling by 0.0004 a point from 400 (−0.16 by the end)
        let level = |i: usize| 0.6 - 0.0004 * i.saturating_sub(400) as f64;
        let val = held_out(&mut rng, level, |_| 0.006, (10, 50));
        let r = reward(&mut rng);
        let f = hacking(r, val).expect("REWARD_HACKING found");
        // dated on the evaluations' own positions: within an evaluation gap of 400
        assert!(
            f.onset_index.abs_diff(400) <= 25,
            "onset {}: {}",
            f.onset_index,
            f.message
        );
        let l = f.levels.as_ref().expect("states the held-out levels");
        assert!(l.end < l.start - 0.08, "{l:?}");
    }
}
