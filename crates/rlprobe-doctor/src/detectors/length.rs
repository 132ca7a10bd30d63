//! LENGTH_EXPLOITATION and TRUNCATION_COLLAPSE: completions that grow for their own sake,
//! and completions that no longer terminate.

use super::{need, num, Detector, Outcome, MIN_POINTS};
use crate::finding::{EvidenceSample, Finding, Severity};
use crate::input::RunInput;
use crate::signal::{
    baseline, early_baseline, graded, measured_levels, onset, onset_log, smooth, BASELINE_SKIP,
};

pub const LENGTH: Detector = Detector {
    name: "length",
    codes: &["LENGTH_EXPLOITATION"],
    reads: "completion_len_mean (reward_mean)",
    run: run_length,
};

pub const TRUNCATION: Detector = Detector {
    name: "truncation",
    codes: &["TRUNCATION_COLLAPSE"],
    reads:
        "truncation_rate (or max_len_hit_frac, eos_rate), completion_len_mean / completion_len_max",
    run: run_truncation,
};

/// Length doubling within this many points (healthy reasoning runs do lengthen, but over
/// the whole run: DeepSeek-R1's response length grows steadily over thousands of steps),
/// while the reward gains less than its own noise over the same span. Dr. GRPO (Liu et al.
/// 2025, §3.1) shows GRPO's per-response length normalisation rewards long wrong answers.
const LEN_SPAN: usize = 100;
const LEN_RATIO: f64 = 2.0;
/// Growth this fast is a warning whatever the reward does.
const LEN_ALONE: f64 = 2.5;
const LEN_CRIT: f64 = 3.0;
/// Truncated share: half of all completions cut at the cap is a warning; nine in ten means
/// no completion terminates (critical). DAPO (Yu et al. 2025, §3.4) filters and softly
/// penalises overlong samples because truncated ones carry a misleading reward.
const TRUNC_WARN: f64 = 0.5;
const TRUNC_CRIT: f64 = 0.9;
/// A shift of the truncated share by this factor within the first points is a change the
/// baseline must not straddle (60–80 % rising to 100 % is ×1.25 to ×1.7).
const TRUNC_EARLY_CHANGE: f64 = 1.2;

/// Cap hits climbing: the truncated share at least this, and up by this much over the span.
const CAP_SHARE: f64 = 0.2;
const CAP_CLIMB: f64 = 0.15;
/// A rising reward justifies length growth when its relative gain is at least this share of
/// the length's relative growth (+120 % length needs +60 % reward): longer reasoning that
/// pays off raises the reward about as fast as the length, exploitation far slower.
const LEN_JUSTIFY: f64 = 0.5;
/// Points the length and the truncated share are smoothed over (a rolling median).
const LEN_SMOOTH: usize = 9;

fn run_length(run: &RunInput) -> Outcome {
    let (name, len) = match need(run, &["completion_len_mean"], MIN_POINTS + LEN_SPAN) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    if baseline(len).is_none() {
        return Outcome::Silent(format!("{name}: no baseline"));
    }
    let s = smooth(len, LEN_SMOOTH);
    let raw_reward = run.series("reward_mean");
    let reward = raw_reward.map(|r| (smooth(r, 15), baseline(r).map(|b| b.sigma).unwrap_or(0.0)));
    // growth within the span is measured from the span's start, but never from the warm-up:
    // a change in the first points is judged from the points after the warm-up and before
    // it, not missed because the span would reach back to before the run began
    let span_start = |i: usize| i.saturating_sub(LEN_SPAN).max(BASELINE_SKIP);
    // the reward gain over the span is not keeping up with the length
    let carried = |v: &[f64], i: usize| crate::signal::last_value(v, i);
    // an unknown gain (no reward yet) counts as idle
    let idle = |i: usize| {
        reward.as_ref().is_none_or(|(r, sigma)| {
            let gain = carried(r, i) - carried(r, span_start(i));
            gain.is_nan() || gain < 2.0 * sigma
        })
    };
    // judged once a smoothing window past the warm-up, not after the baseline window: the
    // growth is measured against the length within the span, not against the baseline
    let from = BASELINE_SKIP + LEN_SMOOTH;
    let low = running_lowest(&s, span_start);
    let grew = |i: usize, x: f64, k: f64| x > k * low[i];
    let plain = graded(
        &s,
        from,
        10,
        10,
        |i, x| (grew(i, x, LEN_RATIO) && idle(i)) || grew(i, x, LEN_ALONE),
        |i, x| grew(i, x, LEN_CRIT) && idle(i),
    );
    // a reward that rises too hides nothing when completions pile up at the cap: judged
    // below against the reward gain over the whole episode
    let cap = truncated_share(run).map(|(n, xs)| {
        let c = smooth(&xs, LEN_SMOOTH);
        let low = running_lowest(&c, span_start);
        (n, c, low)
    });
    let climbing = |i: usize| {
        cap.as_ref().is_some_and(|(_, c, low)| {
            let now = carried(c, i);
            now >= CAP_SHARE && now - low[i] >= CAP_CLIMB
        })
    };
    let (g, by_cap) = match plain {
        Some(g) => (g, false),
        None => match graded(
            &s,
            from,
            10,
            10,
            |i, x| grew(i, x, LEN_RATIO) && climbing(i),
            |i, x| grew(i, x, LEN_CRIT) && climbing(i),
        ) {
            Some(g) => (g, true),
            None => return Outcome::Ran(Vec::new()),
        },
    };
    let at = onset_log(len, g.trigger.saturating_sub(LEN_SPAN + 50), g.trigger);
    let levels = measured_levels(len, &run.steps, name, at, g.last);
    let ratio = levels.as_ref().map_or(f64::NAN, |l| l.ratio);
    // the reward over the same steps: just before the onset (a reward that rose all run
    // long has long left its start), and where the length is by the episode's end
    let reward_span = raw_reward.and_then(|r| {
        let (ea, eb) = crate::signal::end_window(r, at, g.last.max(at))?;
        Some((
            level_before(r, at)?,
            crate::signal::median_between(r, ea, eb)?,
        ))
    });
    let reward_gain = reward_span.map(|(then, now)| {
        let sigma = reward.as_ref().map_or(0.0, |r| r.1);
        (now - then) / then.abs().max(10.0 * sigma).max(1e-9)
    });
    // the length's growth over those same steps (the stated levels start at the run's
    // start, which a reward that rose all run long has long left)
    let episode_growth = match (level_before(len, at), levels.as_ref()) {
        (Some(then), Some(l)) if then > 0.0 => l.end / then,
        _ => ratio,
    };
    if by_cap && reward_gain.is_some_and(|rel| rel >= LEN_JUSTIFY * (episode_growth - 1.0)) {
        return Outcome::Ran(Vec::new());
    }
    let mut why = match (reward_span, reward_gain) {
        (Some((then, now)), Some(rel)) if by_cap => format!(
            "the length outran the reward: ×{} while reward_mean moved only {} → {} ({}%) over the same steps (medians of the {} points before the onset and the last {})",
            num(episode_growth),
            num(then),
            num(now),
            num(100.0 * rel),
            crate::signal::BASELINE_POINTS,
            crate::signal::LEVEL_POINTS
        ),
        _ => format!(
            "the length grew past what the reward explains (×{LEN_RATIO} within {LEN_SPAN} points with a reward gain under 2 σ, or ×{LEN_ALONE} whatever the reward)"
        ),
    };
    if let Some((cname, c, _)) = &cap {
        let (now, then) = (carried(c, g.last), carried(c, at.saturating_sub(1)));
        if now >= CAP_SHARE {
            why.push_str(&format!(
                "; {}% of completions hit the length cap ({cname}, {}% before)",
                num(100.0 * now),
                num(100.0 * then)
            ));
        }
    }
    // severity follows the stated ratio
    let sev = if ratio >= LEN_CRIT {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let mut f = g
        .date(
            Finding::new(
                "LENGTH_EXPLOITATION",
                sev,
                why,
                "Length is being rewarded for itself: use token-level loss normalisation (Dr. GRPO / DAPO), add an overlong penalty, and check the reward model for a length bias.",
            ),
            &run.steps,
            at,
            ratio / LEN_RATIO,
        )
        .levels(levels)
        .column(name);
    if let Some(rel) = reward_gain {
        f = f
            .column("reward_mean")
            .evidence("reward relative gain", rel);
    }
    if let Some((cname, c, _)) = &cap {
        f = f
            .column(cname)
            .evidence("cap hits (smoothed)", carried(c, g.last));
    }
    f.samples = longest(run, f.onset_step, f.last_step, false);
    Outcome::Ran(vec![f])
}

/// The lowest present value of `xs` in points `a..=b` (NaN when none is present).
/// `lowest(xs, start(i), i)` for every point in one pass (a monotone queue; `start` must
/// not decrease): rescanning the span at every point cost a second at a million points.
fn running_lowest(xs: &[f64], start: impl Fn(usize) -> usize) -> Vec<f64> {
    let mut q: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let mut out = vec![f64::NAN; xs.len()];
    for (i, slot) in out.iter_mut().enumerate() {
        if !xs[i].is_nan() {
            while q.back().is_some_and(|&j| xs[j] >= xs[i]) {
                q.pop_back();
            }
            q.push_back(i);
        }
        let a = start(i);
        while q.front().is_some_and(|&j| j < a) {
            q.pop_front();
        }
        *slot = q.front().map_or(f64::NAN, |&j| xs[j]);
    }
    out
}

/// The median of the last `BASELINE_POINTS` present points before point `at`.
fn level_before(xs: &[f64], at: usize) -> Option<f64> {
    let w: Vec<usize> = (0..at.min(xs.len()))
        .rev()
        .filter(|&i| !xs[i].is_nan())
        .take(crate::signal::BASELINE_POINTS)
        .collect();
    crate::signal::median_between(xs, *w.last()?, *w.first()?)
}

/// The truncated share: truncation_rate or max_len_hit_frac, else 1 − eos_rate; with the
/// name it came from. Whether it came from the EOS rate is `name == "eos_rate"`.
fn truncated_share(run: &RunInput) -> Option<(&'static str, Vec<f64>)> {
    ["truncation_rate", "max_len_hit_frac"]
        .iter()
        .find_map(|n| run.series(n).map(|xs| (*n, xs.to_vec())))
        .or_else(|| {
            run.series("eos_rate")
                .map(|xs| ("eos_rate", xs.iter().map(|v| 1.0 - v).collect()))
        })
}

fn run_truncation(run: &RunInput) -> Outcome {
    let (name, xs, inverted) = match need(run, &["truncation_rate", "max_len_hit_frac"], MIN_POINTS)
    {
        Ok((n, xs)) => (n, xs.to_vec(), false),
        Err(why) => match need(run, &["eos_rate"], MIN_POINTS) {
            Ok((n, xs)) => (n, xs.iter().map(|v| 1.0 - v).collect(), true),
            Err(_) => return Outcome::Silent(why.replace("no ", "no eos_rate / ")),
        },
    };
    // the share before a change within the first points, not a window straddling it
    let Some(base) = early_baseline(&xs, TRUNC_EARLY_CHANGE) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(&xs, 5);
    // flagged from the warm-up on, not from the baseline window's end: the lines are
    // absolute shares, and a rise within the first points must be dated where it starts
    let Some(g) = graded(
        &s,
        BASELINE_SKIP,
        5,
        5,
        |_, x| x > TRUNC_WARN && x > base.median + 0.2,
        |_, x| x > TRUNC_CRIT,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        &xs,
        g.trigger.saturating_sub(200).max(BASELINE_SKIP),
        g.trigger,
    );
    // the levels of the logged column itself (the EOS rate, not its complement), so they
    // can be checked against it
    let raw = run.series(name).unwrap_or(&xs);
    let levels = measured_levels(raw, &run.steps, name, at, g.last);
    let now = levels.as_ref().map_or_else(
        || crate::signal::last_value(&s, g.last),
        |l| if inverted { 1.0 - l.end } else { l.end },
    );
    // severity follows the stated end level
    let sev = if now > TRUNC_CRIT {
        Severity::Critical
    } else {
        Severity::Warn
    };
    let what = if inverted {
        "of completions end without EOS"
    } else {
        "of completions truncated at the length cap"
    };
    let mut f = g.date(Finding::new(
        "TRUNCATION_COLLAPSE",
        sev,
        format!("{}% {what}", num(100.0 * now)),
        "Completions stop terminating: raise the max completion length or add an overlong penalty (DAPO), mask truncated samples from the loss, and look for repetition loops in the longest completions.",
    ), &run.steps, at, now / TRUNC_WARN)
    .levels(levels)
    .column(name)
    .evidence("baseline", base.median)
    .evidence("latest", now);
    // cross-check: the mean length presses against the cap
    if let (Some(mean), Some(cap)) = (
        run.series("completion_len_mean"),
        run.series("completion_len_max"),
    ) {
        let (m, c) = (
            crate::signal::last_value(mean, g.last),
            crate::signal::last_value(cap, g.last),
        );
        if m > 0.0 && c > 0.0 {
            f = f
                .column("completion_len_mean")
                .evidence("mean length / max length", m / c);
            if m / c > 0.9 {
                f.message
                    .push_str(&format!("; mean length {} of max {}", num(m), num(c)));
                f.confidence = (f.confidence + 0.05).min(0.99);
            }
        }
    }
    f.samples = longest(run, f.onset_step, f.last_step, true);
    Outcome::Ran(vec![f])
}

/// The three longest completions (truncated ones only, if asked) within the steps.
pub(crate) fn longest(
    run: &RunInput,
    from: i64,
    to: i64,
    truncated_only: bool,
) -> Vec<EvidenceSample> {
    let Some(s) = &run.samples else {
        return Vec::new();
    };
    let mut idx: Vec<usize> = (0..s.len())
        .filter(|&i| {
            s.step[i] >= from
                && s.step[i] <= to
                && !s.completion_len[i].is_nan()
                && (!truncated_only || s.truncated[i] == Some(true))
        })
        .collect();
    idx.sort_by(|&a, &b| {
        s.completion_len[b]
            .total_cmp(&s.completion_len[a])
            .then(s.step[a].cmp(&s.step[b]))
    });
    let why = if truncated_only {
        "longest truncated completion"
    } else {
        "longest completion"
    };
    idx.iter()
        .take(3)
        .map(|&i| EvidenceSample {
            step: s.step[i],
            sample_id: s.sample_id[i].to_string(),
            why: why.into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    /// 600 points: length ×`grow` from point 300 on, cap hits to `cap`, and a reward that
    /// rises all run long (0.08 per 100 points, 4× its 0.02 noise) and by `gain` more over
    /// the 20 points after 300.
    fn run(grow: f64, cap: f64, gain: f64, rng: &mut Rng) -> RunInput {
        run_from(300, grow, cap, gain, rng)
    }

    /// `run` with the change from point `t0`.
    fn run_from(t0: usize, grow: f64, cap: f64, gain: f64, rng: &mut Rng) -> RunInput {
        let n = 600;
        let after = |i: usize| i >= t0;
        let len = (0..n)
            .map(|i| 300.0 * if after(i) { grow } else { 1.0 } * (1.0 + 0.05 * rng.normal()))
            .collect();
        let trunc = (0..n)
            .map(|i| (if after(i) { cap } else { 0.02 } + 0.01 * rng.normal()).max(0.0))
            .collect();
        let reward = (0..n)
            .map(|i| {
                let d = i.saturating_sub(t0) as f64;
                let up = if after(i) {
                    gain * (1.0 - (-d / 20.0).exp())
                } else {
                    0.0
                };
                0.2 + 0.0008 * i as f64 + up + 0.02 * rng.normal()
            })
            .collect();
        RunInput::new((0..n as i64).collect())
            .with("completion_len_mean", len)
            .with("truncation_rate", trunc)
            .with("reward_mean", reward)
    }

    fn length_finding(run: &RunInput) -> Option<Finding> {
        let Outcome::Ran(f) = run_length(run) else {
            panic!("the detector runs")
        };
        f.into_iter().next()
    }

    #[test]
    fn length_outrunning_a_rising_reward_with_cap_hits_is_exploitation() {
        let mut rng = Rng::new(3);
        // ×2.2 from point 300, 37 % of completions at the cap, the reward still rising
        // (+18 % over the next 100 points)
        let r = run(2.2, 0.37, 0.0, &mut rng);
        let f = length_finding(&r).expect("LENGTH_EXPLOITATION found");
        assert_eq!(f.severity, Severity::Warn, "{}", f.message);
        assert!(f.onset_index.abs_diff(300) <= 3, "onset {}", f.onset_index);
        let l = f.levels.as_ref().expect("states its levels");
        assert!((l.ratio - 2.2).abs() < 0.15, "{l:?}");
        assert!(f.message.contains("length cap"), "{}", f.message);
    }

    #[test]
    fn length_growth_from_the_first_points_is_judged_against_the_points_before_it() {
        let mut rng = Rng::new(5);
        // the same ×2.2 with 37 % cap hits, from point 25: inside the usual baseline window
        let r = run_from(25, 2.2, 0.37, 0.0, &mut rng);
        let f = length_finding(&r).expect("LENGTH_EXPLOITATION found");
        assert!(f.onset_index.abs_diff(25) <= 3, "onset {}", f.onset_index);
        let l = f.levels.as_ref().expect("states its levels");
        assert!(l.start_steps.1 < 25, "start taken before the change: {l:?}");
        assert!((l.ratio - 2.2).abs() < 0.15, "{l:?}");
    }

    fn truncation_finding(column: &str, xs: Vec<f64>) -> Finding {
        let run = RunInput::new((0..xs.len() as i64).collect()).with(column, xs);
        let Outcome::Ran(f) = run_truncation(&run) else {
            panic!("the detector runs")
        };
        f.into_iter().next().expect("TRUNCATION_COLLAPSE found")
    }

    #[test]
    fn truncation_states_the_share_before_an_early_rise() {
        let mut rng = Rng::new(6);
        // 70 % truncated for the first 20 points, rising to 100 % by point 35
        let xs: Vec<f64> = (0..400)
            .map(|i| {
                let up = ((i as f64 - 20.0) / 15.0).clamp(0.0, 1.0);
                (0.7 + 0.3 * up + 0.02 * (1.0 - up) * rng.normal()).clamp(0.0, 1.0)
            })
            .collect();
        let f = truncation_finding("truncation_rate", xs);
        assert_eq!(f.severity, Severity::Critical, "{}", f.message);
        assert!(f.onset_index.abs_diff(20) <= 3, "onset {}", f.onset_index);
        let l = f.levels.as_ref().expect("states its levels");
        assert!(l.start_steps.1 < 20, "{l:?}");
        assert!((l.start - 0.7).abs() < 0.02, "{l:?}");
        assert!((l.end - 1.0).abs() < 0.01, "{l:?}");
    }

    #[test]
    fn an_eos_collapse_states_the_eos_rate_and_is_critical_by_it() {
        let mut rng = Rng::new(7);
        let xs: Vec<f64> = (0..500)
            .map(|i| {
                let v = if i < 200 { 0.98 } else { 0.01 };
                (v + 0.005 * rng.normal()).clamp(0.0, 1.0)
            })
            .collect();
        let f = truncation_finding("eos_rate", xs);
        assert_eq!(f.severity, Severity::Critical, "{}", f.message);
        assert!(f.onset_index.abs_diff(200) <= 2, "onset {}", f.onset_index);
        let l = f.levels.as_ref().expect("states its levels");
        assert_eq!(l.column, "eos_rate");
        assert!(
            (l.start - 0.98).abs() < 0.01 && (l.end - 0.01).abs() < 0.01,
            "{l:?}"
        );
    }

    #[test]
    fn length_growth_a_reward_gain_justifies_or_without_cap_hits_stays_quiet() {
        let mut rng = Rng::new(4);
        // the reward doubles along with the length: longer reasoning that pays off
        assert_eq!(length_finding(&run(2.2, 0.37, 0.35, &mut rng)), None);
        // the same steady reward rise, but completions still terminate
        assert_eq!(length_finding(&run(2.2, 0.03, 0.0, &mut rng)), None);
    }
}

#[cfg(test)]
mod running_lowest_tests {
    use super::running_lowest;

    /// The lowest present value of `xs` in points `a..=b`, by rescanning.
    fn lowest(xs: &[f64], a: usize, b: usize) -> f64 {
        xs[a.min(xs.len())..(b + 1).min(xs.len())]
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .fold(f64::NAN, f64::min)
    }

    #[test]
    fn the_one_pass_minimum_is_the_rescanned_one() {
        let mut rng = crate::synth::Rng::new(5);
        let xs: Vec<f64> = (0..2000)
            .map(|i| {
                if rng.uniform() < 0.1 {
                    f64::NAN
                } else {
                    (i as f64 / 300.0).sin() + 0.3 * rng.normal()
                }
            })
            .collect();
        let start = |i: usize| i.saturating_sub(100).max(5);
        let fast = running_lowest(&xs, start);
        for (i, &got) in fast.iter().enumerate().skip(5) {
            let slow = lowest(&xs, start(i), i);
            assert!(
                got == slow || (got.is_nan() && slow.is_nan()),
                "point {i}: {got} vs {slow}"
            );
        }
    }
}
