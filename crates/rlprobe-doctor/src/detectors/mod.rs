//! The detectors, one module per family of signatures. A detector is a pure function of
//! the columns it declares: it returns its findings, or says why it could not run (a
//! missing column, too few points, a constant or below-resolution input). Missing is not
//! healthy, so the engine lists the detectors that could not run.
//!
//! Every default threshold names its source in a comment; docs/doctor.md tabulates them.

use crate::finding::Finding;
use crate::input::RunInput;
use crate::signal::{BASELINE_POINTS, BASELINE_SKIP};

mod clipping;
mod components;
mod entropy;
mod gradients;
mod groups;
mod hacking;
mod kl;
mod length;
mod logprob;
mod lr;
mod nan_inf;
mod repetition;
mod reward;
mod throughput;
mod value;

pub enum Outcome {
    Ran(Vec<Finding>),
    /// Could not run, and why.
    Silent(String),
}

pub struct Detector {
    pub name: &'static str,
    /// The signature codes it can report.
    pub codes: &'static [&'static str],
    /// The columns it reads, as shown to users.
    pub reads: &'static str,
    pub run: fn(&RunInput) -> Outcome,
}

pub static DETECTORS: &[Detector] = &[
    nan_inf::DETECTOR,
    gradients::DETECTOR,
    kl::DETECTOR,
    entropy::DETECTOR,
    groups::ZERO_VARIANCE,
    groups::ADVANTAGES,
    clipping::CLIP,
    clipping::RATIO,
    value::DETECTOR,
    lr::DETECTOR,
    reward::DETECTOR,
    hacking::DETECTOR,
    length::LENGTH,
    length::TRUNCATION,
    repetition::DETECTOR,
    components::DETECTOR,
    throughput::DETECTOR,
    logprob::DETECTOR,
];

/// Points a baseline needs: fewer and a relative detector has nothing to compare against.
pub const MIN_POINTS: usize = BASELINE_SKIP + BASELINE_POINTS;

/// The first of `names` the run has, with its values; or why there is none usable.
pub(crate) fn need<'a>(
    run: &'a RunInput,
    names: &[&'static str],
    min_points: usize,
) -> Result<(&'static str, &'a [f64]), String> {
    let Some((name, xs)) = names.iter().find_map(|n| run.series(n).map(|xs| (*n, xs))) else {
        return Err(format!("no {} column", names.join(" / ")));
    };
    let present = xs.iter().filter(|v| !v.is_nan()).count();
    if present < min_points {
        return Err(format!("{name} has {present} points, needs {min_points}"));
    }
    Ok((name, xs))
}

/// Below-resolution guard: a series whose level sits within a few printing steps of zero
/// cannot show relative changes (verl's console rounds to 3 decimals).
pub(crate) fn resolved(run: &RunInput, name: &str, level: f64) -> Result<(), String> {
    let res = run.resolution(name);
    if res > 0.0 && level.abs() < 10.0 * res {
        return Err(format!(
            "{name} sits below its log's printing resolution ({res})"
        ));
    }
    Ok(())
}

/// Formats a number for a message: 3 significant digits.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        return format!("{x:.2e}");
    }
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
