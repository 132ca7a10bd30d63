//! LENGTH_EXPLOITATION and TRUNCATION_COLLAPSE: completions that grow for their own sake,
//! and completions that no longer terminate.

use super::{need, num, Detector, Outcome, MIN_POINTS};
use crate::finding::{EvidenceSample, Finding};
use crate::input::RunInput;
use crate::signal::{baseline, graded, onset, onset_log, smooth};

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

fn run_length(run: &RunInput) -> Outcome {
    let (name, len) = match need(run, &["completion_len_mean"], MIN_POINTS + LEN_SPAN) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    let Some(base) = baseline(len) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(len, 9);
    let reward = run
        .series("reward_mean")
        .map(|r| (smooth(r, 15), baseline(r).map(|b| b.sigma).unwrap_or(0.0)));
    // the reward gain over the span is not keeping up with the length
    let carried = |v: &[f64], i: usize| crate::signal::last_value(v, i);
    // an unknown gain (no reward yet) counts as idle
    let idle = |i: usize| {
        reward.as_ref().is_none_or(|(r, sigma)| {
            let gain = carried(r, i) - carried(r, i - LEN_SPAN);
            gain.is_nan() || gain < 2.0 * sigma
        })
    };
    let from = base.end + LEN_SPAN;
    let Some(g) = graded(
        &s,
        from,
        10,
        10,
        |i, x| {
            (x > LEN_RATIO * carried(&s, i - LEN_SPAN) && idle(i))
                || x > LEN_ALONE * carried(&s, i - LEN_SPAN)
        },
        |i, x| x > LEN_CRIT * carried(&s, i - LEN_SPAN) && idle(i),
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset_log(len, g.trigger.saturating_sub(LEN_SPAN + 50), g.trigger);
    let now = crate::signal::last_value(&s, g.last);
    let before = crate::signal::last_value(&s, at.saturating_sub(1));
    let mut f = g.date(Finding::new(
        "LENGTH_EXPLOITATION",
        g.severity,
        format!("completion length {} → {} (×{}) without a matching reward gain", num(before), num(now), num(now / before)),
        "Length is being rewarded for itself: use token-level loss normalisation (Dr. GRPO / DAPO), add an overlong penalty, and check the reward model for a length bias.",
    ), &run.steps, at, now / before / LEN_RATIO)
    .column(name)
    .evidence("before (smoothed)", before)
    .evidence("latest (smoothed)", now);
    f.samples = longest(run, f.onset_step, f.last_step, false);
    Outcome::Ran(vec![f])
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
    let Some(base) = baseline(&xs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(&xs, 5);
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > TRUNC_WARN && x > base.median + 0.2,
        |_, x| x > TRUNC_CRIT,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        &xs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last);
    let what = if inverted {
        "of completions end without EOS"
    } else {
        "of completions truncated at the length cap"
    };
    let mut f = g.date(Finding::new(
        "TRUNCATION_COLLAPSE",
        g.severity,
        format!("{}% {what} (early level {}%)", num(100.0 * now), num(100.0 * base.median)),
        "Completions stop terminating: raise the max completion length or add an overlong penalty (DAPO), mask truncated samples from the loss, and look for repetition loops in the longest completions.",
    ), &run.steps, at, now / TRUNC_WARN)
    .column(name)
    .evidence("baseline", base.median)
    .evidence("latest (smoothed)", now);
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
            sample_id: s.sample_id[i].clone(),
            why: why.into(),
        })
        .collect()
}
