//! REPETITION_LOOPS: completions that repeat themselves (degenerate sampling loops, which
//! also run to the length cap).

use super::{need, Detector, Outcome, MIN_POINTS};
use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{early_baseline, graded, measured_levels, onset, smooth};

pub const DETECTOR: Detector = Detector {
    name: "repetition",
    codes: &["REPETITION_LOOPS"],
    reads: "repetition_rate",
    run,
};

/// Share of repeated n-grams (or of looping completions, per the trainer's definition):
/// above 0.3 and three times its early level is a warning, above 0.6 critical. Repetition
/// is the classic failure of likelihood-trained decoders (Holtzman et al. 2020, "The
/// Curious Case of Neural Text Degeneration").
const WARN: f64 = 0.3;
const WARN_REL: f64 = 3.0;
const CRIT: f64 = 0.6;

fn run(run: &RunInput) -> Outcome {
    let (name, xs) = match need(run, &["repetition_rate"], MIN_POINTS) {
        Ok(x) => x,
        Err(why) => return Outcome::Silent(why),
    };
    // loops from the first points must not become the run's level
    let Some(base) = early_baseline(xs, WARN_REL) else {
        return Outcome::Silent(format!("{name}: no baseline"));
    };
    let s = smooth(xs, 9);
    let m = base.median;
    let Some(g) = graded(
        &s,
        base.end,
        5,
        5,
        |_, x| x > WARN && x > WARN_REL * m,
        |_, x| x > CRIT && x > WARN_REL * m,
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
    let mut f = g.date(Finding::new(
        "REPETITION_LOOPS",
        g.severity,
        "completions repeat themselves".to_string(),
        "Completions are looping: add a repetition penalty or a reward term against repeated n-grams, check the sampling temperature (too low loops), and the EOS token handling.",
    ), &run.steps, at, now / WARN)
    .levels(measured_levels(xs, &run.steps, name, at, g.last))
    .column(name)
    .evidence("baseline", m)
    .evidence("latest (smoothed)", now);
    f.samples = super::length::longest(run, f.onset_step, f.last_step, false);
    Outcome::Ran(vec![f])
}
