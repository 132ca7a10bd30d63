//! Series math for the doctor's detectors, free of Node and of any recording format.
//!
//! Every function indexes by logged point, not by step number (many trainers log every
//! 10 steps), and treats NaN as a missing point: it is skipped, never propagated into a
//! neighbour's statistic.
//!
//! - `robust`: median, MAD, causal robust z-scores (trailing window, current point excluded)
//! - `rolling`: trailing rolling median and quantiles
//! - `trend`: Theil–Sen slope and the Mann–Kendall trend test
//! - `change`: CUSUM alarms and an offline change-point search
//! - `persist`: k-of-n persistence with cooldown

pub mod change;
pub mod persist;
pub mod robust;
pub mod rolling;
pub mod trend;

/// The finite (non-NaN) values of `xs`, in order.
pub(crate) fn present(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| !x.is_nan()).collect()
}
