//! Robust location and scale, and causal robust z-scores.
//!
//! A z-score from the trailing median and MAD (scaled by 1.4826, so it estimates σ for
//! Gaussian noise) resists the very spikes it is meant to find, where a mean and standard
//! deviation would be dragged along by them (Rousseeuw & Croux 1993; Leys et al. 2013).
//! "Causal": the window ends before the point scored, so a spike never hides itself.

/// Gaussian consistency constant of the MAD.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// Median of the non-NaN values (None if there are none). Sorts a copy.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = crate::present(xs);
    median_in_place(&mut v)
}

/// Median of `v` (no NaNs), reordering it.
pub fn median_in_place(v: &mut [f64]) -> Option<f64> {
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mid = n / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    let hi = *m;
    if n % 2 == 1 {
        return Some(hi);
    }
    let lo = v[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(lo + (hi - lo) / 2.0)
}

/// Median absolute deviation from the median (unscaled), of the non-NaN values.
pub fn mad(xs: &[f64]) -> Option<(f64, f64)> {
    let mut v = crate::present(xs);
    let med = median_in_place(&mut v)?;
    for x in v.iter_mut() {
        *x = (*x - med).abs();
    }
    Some((med, median_in_place(&mut v)?))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZOptions {
    /// Trailing points the median and MAD are taken over (NaNs skipped).
    pub window: usize,
    /// Fewer present points than this in the window: no score (NaN).
    pub min_points: usize,
    /// Score `ln(x)` instead of `x`: for positive heavy-tailed series (grad norm, KL, step
    /// time, value loss), where a doubling matters the same at every level. Points ≤ 0
    /// then have no score.
    pub log_scale: bool,
}

impl Default for ZOptions {
    fn default() -> Self {
        ZOptions { window: 50, min_points: 10, log_scale: false }
    }
}

/// Causal robust z-score of every point: `(x_i − median) / (1.4826 · MAD)` over the
/// `window` present points before i. NaN where x_i is missing or the window is too short.
/// A flat window (MAD 0) falls back to the mean absolute deviation (× 1.2533, also a σ
/// estimate); if that is 0 too, an equal point scores 0 and any other ±∞.
pub fn causal_robust_z(xs: &[f64], o: ZOptions) -> Vec<f64> {
    let vals: Vec<f64> = xs
        .iter()
        .map(|&x| if o.log_scale { if x > 0.0 { x.ln() } else { f64::NAN } } else { x })
        .collect();
    let mut out = vec![f64::NAN; xs.len()];
    // the trailing window of present values, oldest first
    let mut window: std::collections::VecDeque<f64> = std::collections::VecDeque::with_capacity(o.window + 1);
    let mut scratch = Vec::with_capacity(o.window);
    for (i, &x) in vals.iter().enumerate() {
        if !x.is_nan() && window.len() >= o.min_points.max(1) {
            scratch.clear();
            scratch.extend(window.iter().copied());
            let med = median_in_place(&mut scratch).unwrap();
            for v in scratch.iter_mut() {
                *v = (*v - med).abs();
            }
            let spread = median_in_place(&mut scratch).unwrap() * MAD_TO_SIGMA;
            let scale = if spread > 0.0 {
                spread
            } else {
                scratch.iter().sum::<f64>() / scratch.len() as f64 * 1.2533
            };
            out[i] = if scale > 0.0 {
                (x - med) / scale
            } else if x == med {
                0.0
            } else {
                f64::INFINITY.copysign(x - med)
            };
        }
        if !x.is_nan() {
            window.push_back(x);
            if window.len() > o.window {
                window.pop_front();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some((3.0, 1.0)));
    }

    #[test]
    fn a_spike_scores_high_and_does_not_hide_itself() {
        let mut xs: Vec<f64> = (0..100).map(|i| 1.0 + 0.01 * ((i * 7919) % 13) as f64).collect();
        xs[80] = 5.0;
        let z = causal_robust_z(&xs, ZOptions::default());
        assert!(z[..10].iter().all(|v| v.is_nan()), "too short a window: no score");
        assert!(z[80] > 50.0, "{}", z[80]);
        let calm = z[10..80].iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(calm < 4.0, "{calm}");
        // the spike enters the window but the median barely moves
        assert!(z[81].abs() < 4.0, "{}", z[81]);
    }

    #[test]
    fn missing_points_are_skipped_not_propagated() {
        let mut xs = vec![2.0; 40];
        xs[20] = f64::NAN;
        xs[30] = 3.0;
        let z = causal_robust_z(&xs, ZOptions { window: 20, min_points: 5, log_scale: false });
        assert!(z[20].is_nan());
        assert_eq!(z[21], 0.0, "a flat window scores an equal point 0");
        assert_eq!(z[30], f64::INFINITY, "and any other point as infinitely far");
    }

    #[test]
    fn log_scale_treats_a_doubling_alike_at_every_level() {
        let base = |level: f64| -> Vec<f64> {
            let mut v: Vec<f64> = (0..60).map(|i| level * (1.0 + 0.05 * ((i % 5) as f64 - 2.0))).collect();
            v[59] = level * 2.0;
            v
        };
        let o = ZOptions { log_scale: true, ..ZOptions::default() };
        let (a, b) = (causal_robust_z(&base(0.01), o)[59], causal_robust_z(&base(100.0), o)[59]);
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        assert!(causal_robust_z(&[0.0, -1.0], o).iter().all(|z| z.is_nan()));
    }
}
