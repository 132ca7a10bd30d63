//! ZERO_VARIANCE_GROUPS and ADVANTAGE_COLLAPSE: the same physics seen twice. A GRPO group
//! whose completions all get the same reward has zero advantage and contributes no
//! gradient (DAPO, Yu et al. 2025, §3.2 "dynamic sampling" filters such groups; TRL logs
//! their share as `frac_reward_zero_std`). The engine names zero-variance groups as the
//! root cause of a simultaneous advantage collapse.

use super::{need, num, resolved, Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{baseline, graded, measured_levels, onset, onset_log, smooth};

pub const ZERO_VARIANCE: Detector = Detector {
    name: "zero_variance_groups",
    codes: &["ZERO_VARIANCE_GROUPS"],
    reads: "zero_variance_group_frac (or group_reward_std_mean)",
    run: run_groups,
};

pub const ADVANTAGES: Detector = Detector {
    name: "advantages",
    codes: &["ADVANTAGE_COLLAPSE"],
    reads: "adv_zero_frac (or adv_std)",
    run: run_advantages,
};

/// Share of groups with zero reward variance: above 60 % most of each batch is wasted
/// compute (warn); above 90 % the run has all but stopped learning (critical).
const ZV_WARN: f64 = 0.6;
const ZV_CRIT: f64 = 0.9;
/// Relative floors when only a standard deviation is logged (of its early level).
const STD_WARN: f64 = 0.2;
const STD_CRIT: f64 = 0.05;

fn run_groups(run: &RunInput) -> Outcome {
    let first = need(run, &["zero_variance_group_frac"], MIN_POINTS);
    if let Ok((name, xs)) = first {
        return fraction_high(
            run,
            name,
            xs,
            "ZERO_VARIANCE_GROUPS",
            "of GRPO groups have zero reward variance",
            ZV_REMEDY,
        );
    }
    match need(run, &["group_reward_std_mean"], MIN_POINTS) {
        Ok((name, xs)) => std_low(
            run,
            name,
            xs,
            "ZERO_VARIANCE_GROUPS",
            "mean within-group reward std",
            ZV_REMEDY,
        ),
        // why neither could be used: a present but short column says so, not "no column"
        Err(second) => Outcome::Silent(format!("{}; {second}", first.err().unwrap_or_default())),
    }
}

fn run_advantages(run: &RunInput) -> Outcome {
    let first = need(run, &["adv_zero_frac"], MIN_POINTS);
    if let Ok((name, xs)) = first {
        return fraction_high(
            run,
            name,
            xs,
            "ADVANTAGE_COLLAPSE",
            "of advantages are zero",
            ADV_REMEDY,
        );
    }
    match need(run, &["adv_std"], MIN_POINTS) {
        Ok((name, xs)) => std_low(
            run,
            name,
            xs,
            "ADVANTAGE_COLLAPSE",
            "advantage std",
            ADV_REMEDY,
        ),
        // why neither could be used: a present but short column says so, not "no column"
        Err(second) => Outcome::Silent(format!("{}; {second}", first.err().unwrap_or_default())),
    }
}

const ZV_REMEDY: &str = "Most groups carry no learning signal: filter them (DAPO dynamic sampling), raise the group size or the sampling temperature, or rebalance prompt difficulty (all-correct or all-wrong prompts).";
const ADV_REMEDY: &str = "Advantages carry no signal: check reward variance within groups, the advantage normalisation (a std of ~0 divides to nothing), and for PPO a value head that has absorbed the reward.";

fn fraction_high(
    run: &RunInput,
    name: &'static str,
    xs: &[f64],
    code: &'static str,
    what: &str,
    remedy: &str,
) -> Outcome {
    let Some(base) = baseline(xs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(xs, 9);
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > ZV_WARN && x > base.median + 0.15,
        |_, x| x > ZV_CRIT,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset(
        xs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last);
    Outcome::Ran(vec![g
        .date(
            Finding::new(
                code,
                g.severity,
                format!("{}% {what} (smoothed)", num(100.0 * now)),
                remedy,
            ),
            &run.steps,
            at,
            now / ZV_WARN,
        )
        .levels(measured_levels(xs, &run.steps, name, at, g.last))
        .column(name)
        .evidence("baseline", base.median)
        .evidence("latest (smoothed)", now)])
}

fn std_low(
    run: &RunInput,
    name: &'static str,
    xs: &[f64],
    code: &'static str,
    what: &str,
    remedy: &str,
) -> Outcome {
    let Some(base) = baseline(xs) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    if base.median <= 0.0 {
        return Outcome::Silent(format!("{name} is 0 from the start: not informative"));
    }
    if let Err(why) = resolved(run, name, base.median) {
        return Outcome::Silent(why);
    }
    let s = smooth(xs, 9);
    let m = base.median;
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x < STD_WARN * m,
        |_, x| x < STD_CRIT * m,
    ) else {
        return Outcome::Ran(Vec::new());
    };
    let at = onset_log(
        xs,
        g.trigger
            .saturating_sub(200)
            .max(crate::signal::BASELINE_SKIP),
        g.trigger,
    );
    let now = crate::signal::last_value(&s, g.last);
    Outcome::Ran(vec![g
        .date(
            Finding::new(code, g.severity, format!("{what} fell"), remedy),
            &run.steps,
            at,
            STD_WARN * m / now.max(1e-12),
        )
        .levels(measured_levels(xs, &run.steps, name, at, g.last))
        .column(name)
        .evidence("baseline", base.median)
        .evidence("latest (smoothed)", now)])
}

#[cfg(test)]
mod tests {
    use crate::engine::diagnose;
    use crate::input::RunInput;

    /// A 20-step import has the column, too short to judge: the reason says so.
    #[test]
    fn a_short_column_is_named_as_short_not_missing() {
        let run = RunInput::new((0..20).collect()).with("zero_variance_group_frac", vec![0.1; 20]);
        let d = diagnose(&run, None);
        let s = d
            .skipped
            .iter()
            .find(|s| s.detector == "zero_variance_groups")
            .unwrap();
        assert_eq!(
            s.reason,
            "zero_variance_group_frac has 20 points, needs 35; no group_reward_std_mean column"
        );
    }
}
