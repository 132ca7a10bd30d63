//! GRAD_NORM_SPIKE, GRAD_EXPLOSION, GRAD_VANISHING on the pre-clip gradient norm.
//!
//! Gradient norms are heavy-tailed and positive, so spikes are scored on a log scale with
//! a causal robust z (trailing median and MAD). Explosion and vanishing are judged
//! against the run's own early level: healthy norms differ by orders of magnitude across
//! models, so no absolute level transfers.

use rlprobe_series::robust::{causal_robust_z, ZOptions};

use super::{need, num, resolved, Detector, Outcome, MIN_POINTS};
use crate::finding::{Finding, Severity};
use crate::input::RunInput;
use crate::signal::{
    agreement, confidence, early_baseline, flags, last_flag, measured_levels, onset, smooth,
    sustained, BASELINE_SKIP,
};

pub const DETECTOR: Detector = Detector {
    name: "gradients",
    codes: &["GRAD_NORM_SPIKE", "GRAD_EXPLOSION", "GRAD_VANISHING"],
    reads: "grad_norm",
    run,
};

/// A spike: ≥ 6 robust σ above the trailing 50 points on a log scale *and* ≥ 5× their
/// median. 6σ keeps the false-alarm rate of a Gaussian log-norm near 1e-9 per point; the
/// 5× floor follows the loss-spike heuristics of large-scale training (PaLM, Chowdhery et
/// al. 2022, §5.1, skipped batches around spikes of this size).
const SPIKE_Z: f64 = 6.0;
const SPIKE_RATIO: f64 = 5.0;
/// Spikes that recur: this many within `SPIKE_WINDOW` points is a warning, fewer is info
/// (isolated spikes are routine in RL fine-tuning and get clipped: TRL and verl default to
/// max_grad_norm = 1.0).
const SPIKE_REPEAT: usize = 3;
const SPIKE_WINDOW: usize = 100;
/// Explosion: a sustained level this many times the early baseline (warn, critical).
const EXPLODE_WARN: f64 = 5.0;
const EXPLODE_CRIT: f64 = 10.0;
/// Points the explosion's level is the rolling median of: it rises only when most of them
/// are up, which recurring spikes with normal points between them are not.
const LEVEL_WINDOW: usize = 9;
/// Vanishing: a sustained level below 1/100 of the early baseline.
const VANISH: f64 = 0.01;

/// A spike whose gap to the next is this many times the episode's typical gap (and over
/// half `SPIKE_WINDOW`) is a lone spike ahead of the episode, not its start.
const LONE_GAP: f64 = 3.0;

/// The first persistent episode of `spikes` (point indices, ascending), as indices into
/// it: it starts at the first spike whose next `SPIKE_WINDOW` points hold `SPIKE_REPEAT`
/// spikes (a lone spike far ahead of the rest skipped) and lasts while the next spike
/// comes within `SPIKE_WINDOW` points. None when no window reaches `SPIKE_REPEAT`.
fn episode(spikes: &[usize]) -> Option<(usize, usize)> {
    let within = |a: usize| {
        spikes[a..]
            .iter()
            .take_while(|&&s| s < spikes[a] + SPIKE_WINDOW)
            .count()
    };
    let mut a = (0..spikes.len()).find(|&a| within(a) >= SPIKE_REPEAT)?;
    while a + 1 < spikes.len() && within(a + 1) >= SPIKE_REPEAT {
        let n = within(a + 1);
        let mut gaps: Vec<f64> = spikes[a + 1..a + 1 + n]
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64)
            .collect();
        let typical = rlprobe_series::robust::median_in_place(&mut gaps).unwrap_or(0.0);
        // a gap within half the window is part of the episode however fast it then
        // accelerates (spikes ever closer together date from their first, not their densest)
        let lone = (LONE_GAP * typical).max(SPIKE_WINDOW as f64 / 2.0);
        if ((spikes[a + 1] - spikes[a]) as f64) <= lone {
            break;
        }
        a += 1;
    }
    let mut b = a;
    while b + 1 < spikes.len() && spikes[b + 1] < spikes[b] + SPIKE_WINDOW {
        b += 1;
    }
    Some((a, b))
}

fn run(run: &RunInput) -> Outcome {
    let (name, g) = match need(run, &["grad_norm"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    // the run's start before an explosion or a collapse within the first points
    let Some(base) = early_baseline(g, EXPLODE_WARN) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    if let Err(why) = resolved(run, name, base.median) {
        return Outcome::Silent(why);
    }
    let res = run.resolution(name);
    let steps = &run.steps;
    let mut out = Vec::new();

    // explosion: a sustained level against the early baseline. Judged on the rolling
    // median of `LEVEL_WINDOW` points, not on k of n raw points: recurring spikes with
    // normal points between them (three can fall within five logged points when some are
    // missing) are spikes, and only a level that holds for most points moves the median
    let level = smooth(g, LEVEL_WINDOW);
    let warn = flags(&level, base.end, |_, x| x > EXPLODE_WARN * base.median);
    let explosion = sustained(&warn, 5, 5);
    let mut explosion_from = usize::MAX;
    if let Some((_, trigger)) = explosion {
        let logs = crate::signal::ln_floor(g, 1e-300);
        // searched from the warm-up on: a change inside the baseline window is dated there
        let at = onset(
            &logs,
            trigger.saturating_sub(200).max(BASELINE_SKIP),
            trigger,
        );
        let last = last_flag(&warn).unwrap_or(trigger);
        let peak = g[at..=last]
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .fold(0.0, f64::max);
        explosion_from = at;
        let levels = measured_levels(g, steps, name, at, last);
        // severity follows the stated ratio (the level sustained at the end, not the peak)
        let ratio = levels.as_ref().map_or(peak / base.median, |l| l.ratio);
        let sev = if ratio >= EXPLODE_CRIT {
            Severity::Critical
        } else {
            Severity::Warn
        };
        out.push(
            Finding::new(
                "GRAD_EXPLOSION",
                sev,
                format!("grad_norm exploded (peak {}, {}× its start)", num(peak), num(peak / levels.as_ref().map_or(base.median, |l| l.start))),
                "Lower the learning rate (or restart warm-up), keep max_grad_norm at 1.0, and check for a bad batch or a reward-scale change at the onset; resume from a checkpoint before it.",
            )
            .at(steps, at, last)
            .confidence(confidence(ratio / EXPLODE_WARN, agreement(&warn, trigger, last)))
            .levels(levels)
            .column(name)
            .evidence("baseline", base.median)
            .evidence("peak", peak),
        );
    }

    // spikes: single-point excursions before any explosion
    let z = causal_robust_z(
        g,
        ZOptions {
            window: 50,
            min_points: 20,
            log_scale: true,
        },
    );
    let med = rlprobe_series::rolling::rolling_median(g, 50, 20);
    // the trailing median before each point (carried over missing points)
    let before = |i: usize| crate::signal::last_value(&med, i - 1);
    let spikes: Vec<usize> = (base.end.max(1)..g.len().min(explosion_from))
        .filter(|&i| {
            z[i] > SPIKE_Z && g[i] > SPIKE_RATIO * before(i) && g[i] - before(i) > 2.0 * res
        })
        .collect();
    if let Some(&lone) = spikes.first() {
        // dated by the first spike of the persistent episode, not by its busiest window:
        // the onset is where the anomaly began
        let (a, b) = episode(&spikes).unwrap_or((0, 0));
        let persistent = b > a;
        let (first, count) = if persistent {
            (spikes[a], b - a + 1)
        } else {
            (lone, 1)
        };
        let last = spikes[b];
        let sev = if persistent {
            Severity::Warn
        } else {
            Severity::Info
        };
        let worst = spikes.iter().map(|&i| g[i] / before(i)).fold(0.0, f64::max);
        let trailing = before(first);
        let what = if persistent {
            format!(
                "{count} grad_norm spikes recurring over steps {}–{}",
                steps[first], steps[last]
            )
        } else {
            format!("isolated grad_norm spike(s), none recurring {SPIKE_REPEAT} within {SPIKE_WINDOW} points")
        };
        out.push(
            Finding::new(
                "GRAD_NORM_SPIKE",
                sev,
                format!(
                    "{what}; the first at step {} is {} ({}× the trailing 50-point median {}); {} in the run, up to {}× the trailing median",
                    steps[first], num(g[first]), num(g[first] / trailing), num(trailing), spikes.len(), num(worst)
                ),
                "Recurring spikes precede divergence: lower the learning rate or raise warm-up, keep gradient clipping on, and inspect the batches at the spike steps (outlier rewards, very long completions).",
            )
            .at(steps, first, last)
            .confidence(confidence(worst / SPIKE_RATIO, count as f64 / SPIKE_REPEAT as f64))
            .column(name)
            .evidence("first spike step", steps[first] as f64)
            .evidence("first spike value", g[first])
            .evidence("trailing median at first spike", trailing)
            .evidence("spikes in episode", count as f64)
            .evidence("spikes", spikes.len() as f64)
            .evidence("max ratio to trailing median", worst),
        );
    }

    // vanishing: a sustained collapse of the norm (exact zeros from a full-precision log
    // are worse: nothing is learning)
    let low = flags(g, base.end, |_, x| {
        x < VANISH * base.median && (res == 0.0 || x > res)
    });
    let zero = flags(g, base.end, |_, x| x == 0.0 && res == 0.0);
    let vanish = sustained(&zero, 5, 5).or_else(|| sustained(&low, 5, 5));
    if let Some((_, trigger)) = vanish {
        let logs = crate::signal::ln_floor(g, base.median * 1e-6);
        let at = onset(
            &logs,
            trigger.saturating_sub(200).max(BASELINE_SKIP),
            trigger,
        );
        let last = last_flag(&low)
            .into_iter()
            .chain(last_flag(&zero))
            .max()
            .unwrap_or(trigger);
        let levels = measured_levels(g, steps, name, at, last);
        let now = levels
            .as_ref()
            .map_or(crate::signal::last_value(g, last), |l| l.end);
        // severity follows the stated end level: exact zeros (from a full-precision log)
        // mean nothing is learning at all
        let sev = if now == 0.0 && res == 0.0 {
            Severity::Critical
        } else {
            Severity::Warn
        };
        out.push(
            Finding::new(
                "GRAD_VANISHING",
                sev,
                "grad_norm vanished (below 1/100 of its start)".to_string(),
                "No gradient is reaching the weights: check for zero advantages (all-equal group rewards), a frozen or detached module, a zero learning rate, or a loss masked to nothing.",
            )
            .at(steps, at, last)
            .confidence(confidence(VANISH * base.median / now.max(1e-300), agreement(&low, trigger, last)))
            .levels(levels)
            .column(name)
            .evidence("baseline", base.median)
            .evidence("latest", now),
        );
    }
    Outcome::Ran(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    /// A healthy pre-clip norm: 0.5 with log-normal noise (σ 0.25 on a log scale).
    fn norm(n: usize, rng: &mut Rng) -> Vec<f64> {
        (0..n).map(|_| 0.5 * (0.25 * rng.normal()).exp()).collect()
    }

    /// Multiplies the points at `at` by `factor`.
    fn spike(g: &mut [f64], at: &[usize], factor: f64) {
        for &i in at {
            g[i] *= factor;
        }
    }

    /// `count` points from `from` with gaps cycling through `gaps`.
    fn every(from: usize, count: usize, gaps: &[usize]) -> Vec<usize> {
        let mut at = vec![from];
        for k in 1..count {
            at.push(at[k - 1] + gaps[(k - 1) % gaps.len()]);
        }
        at
    }

    fn spike_finding(g: Vec<f64>) -> Option<Finding> {
        let n = g.len() as i64;
        let run = RunInput::new((0..n).collect()).with("grad_norm", g);
        let Outcome::Ran(f) = super::run(&run) else {
            panic!("the detector runs")
        };
        assert!(
            f.iter().all(|f| f.code != "GRAD_EXPLOSION"),
            "no 3 spikes in 5 points: not an explosion: {f:?}"
        );
        f.into_iter().find(|f| f.code == "GRAD_NORM_SPIKE")
    }

    /// Spikes ever closer together (gaps 45, 30, 20, 12, 8, 5, 3…): the episode is dated by
    /// its first spike, not where it is densest.
    #[test]
    fn an_accelerating_episode_is_dated_by_its_first_spike() {
        let mut rng = Rng::new(31);
        let mut g = norm(600, &mut rng);
        let at = [200, 245, 275, 295, 307, 315, 320, 323, 326, 329];
        spike(&mut g, &at, 50.0);
        let f = spike_finding(g).expect("spikes found");
        assert_eq!(
            (f.severity, f.onset_index),
            (Severity::Warn, 200),
            "{}",
            f.message
        );
    }

    #[test]
    fn spikes_are_dated_by_the_first_spike_of_the_persistent_episode() {
        let mut rng = Rng::new(19);
        // 200× spikes from point 252, 34 in the next 100 points, recurring sparser after,
        // and a busier burst (40 in 100) from 432
        let mut g = norm(700, &mut rng);
        let first = every(252, 34, &[2, 4]);
        let sparse = every(360, 7, &[11]);
        let busy = every(432, 40, &[2, 3]);
        for at in [&first, &sparse, &busy] {
            spike(&mut g, at, 200.0);
        }
        let f = spike_finding(g).expect("spikes found");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.onset_index, 252, "{}", f.message);
        let ev = |k: &str| f.evidence.iter().find(|e| e.0 == k).map(|e| e.1);
        assert_eq!(ev("first spike step"), Some(252.0), "{:?}", f.evidence);
        assert!(ev("trailing median at first spike").is_some_and(|m| (m - 0.5).abs() < 0.1));

        // a real run's shape: a first 15× spike at 102, then spikes every 25–45 points,
        // and a busier stretch from 431
        let mut g = norm(800, &mut rng);
        let mut at = vec![102];
        while *at.last().unwrap() < 400 {
            let next = at.last().unwrap() + rng.range(25, 46);
            at.push(next);
        }
        at.extend(every(431, 8, &[6, 9]));
        spike(&mut g, &at, 15.0);
        let f = spike_finding(g).expect("spikes found");
        assert_eq!(
            (f.severity, f.onset_index),
            (Severity::Warn, 102),
            "{}",
            f.message
        );
    }

    #[test]
    fn spikes_with_missing_points_between_them_are_spikes_not_an_explosion() {
        let mut rng = Rng::new(29);
        // 200× spikes every 2–3 points from 300 (never two gaps of 2 in a row); the normal
        // points between some of them were not logged, so three spikes sit within five
        // logged points here and there: still a run of isolated spikes, not a level
        let mut g = norm(800, &mut rng);
        let at = every(300, 34, &[2, 3]);
        spike(&mut g, &at, 200.0);
        for k in [0, 8, 16, 24] {
            // the normal points between spikes k, k+1 and k+2
            let between = (at[k] + 1..at[k + 2]).filter(|i| !at.contains(i));
            for i in between.collect::<Vec<_>>() {
                g[i] = f64::NAN;
            }
        }
        let f = spike_finding(g).expect("spikes found");
        assert_eq!(
            (f.severity, f.onset_index),
            (Severity::Warn, 300),
            "{}",
            f.message
        );
    }

    #[test]
    fn an_explosion_within_the_first_points_is_judged_against_the_level_before_it() {
        let mut rng = Rng::new(31);
        // ×20 from point 19, inside the usual baseline window (points 5–34)
        let mut g = norm(600, &mut rng);
        let late: Vec<usize> = (19..600).collect();
        spike(&mut g, &late, 20.0);
        let run = RunInput::new((0..600).collect()).with("grad_norm", g);
        let Outcome::Ran(f) = super::run(&run) else {
            panic!("the detector runs")
        };
        let f = f
            .iter()
            .find(|f| f.code == "GRAD_EXPLOSION")
            .unwrap_or_else(|| panic!("GRAD_EXPLOSION found: {f:?}"));
        assert!(f.onset_index.abs_diff(19) <= 2, "onset {}", f.onset_index);
    }

    fn findings(g: Vec<f64>) -> Vec<Finding> {
        let n = g.len() as i64;
        let run = RunInput::new((0..n).collect()).with("grad_norm", g);
        let Outcome::Ran(f) = super::run(&run) else {
            panic!("the detector runs")
        };
        f
    }

    #[test]
    fn explosion_and_vanishing_state_their_levels_and_grade_by_the_stated_ratio() {
        let mut rng = Rng::new(37);
        // (factor from point 300, the code, the severity its ratio calls for)
        let cases = [
            (7.0, "GRAD_EXPLOSION", Severity::Warn),
            (30.0, "GRAD_EXPLOSION", Severity::Critical),
            (0.001, "GRAD_VANISHING", Severity::Warn),
            (0.0, "GRAD_VANISHING", Severity::Critical),
        ];
        for (factor, code, sev) in cases {
            let mut g = norm(600, &mut rng);
            let late: Vec<usize> = (300..600).collect();
            spike(&mut g, &late, factor);
            let all = findings(g);
            let f = all
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("×{factor}: {code} found: {all:?}"));
            let l = f.levels.as_ref().expect("states its levels");
            assert!((l.start - 0.5).abs() < 0.05, "×{factor}: {l:?}");
            assert!(l.start_steps.1 < 300, "×{factor}: {l:?}");
            // medians of 10 log-normal points (σ 0.25 on a log scale): within 30 %
            assert!((l.ratio - factor).abs() <= 0.3 * factor, "×{factor}: {l:?}");
            assert_eq!(f.severity, sev, "×{factor}: {}", f.message);
        }
    }

    #[test]
    fn isolated_spikes_stay_info_and_do_not_move_a_later_episode() {
        let mut rng = Rng::new(23);
        let mut g = norm(700, &mut rng);
        spike(&mut g, &[60, 130], 20.0);
        let f = spike_finding(g.clone()).expect("spikes found");
        assert_eq!((f.severity, f.onset_index), (Severity::Info, 60));
        // a lone spike at 330 and a recurring episode from 420
        spike(&mut g, &[330], 20.0);
        spike(&mut g, &every(420, 12, &[15, 25, 20]), 20.0);
        let f = spike_finding(g).expect("spikes found");
        assert_eq!(
            (f.severity, f.onset_index),
            (Severity::Warn, 420),
            "{}",
            f.message
        );
    }
}
