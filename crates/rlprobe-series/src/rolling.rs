//! Trailing rolling statistics (the window ends at, and includes, the current point).

use std::collections::VecDeque;

/// Linear-interpolated quantile `q` in [0, 1] of sorted, NaN-free `v` (type 7, as numpy's
/// default).
pub fn quantile_sorted(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

/// Rolling quantile `q` over the last `window` present points, for every point (NaN
/// until `min_points` are present, and at a missing point). The window is kept sorted:
/// O(window) per point, fine for the windows detectors use (tens to hundreds).
pub fn rolling_quantile(xs: &[f64], window: usize, q: f64, min_points: usize) -> Vec<f64> {
    let window = window.max(1);
    let mut order: VecDeque<f64> = VecDeque::with_capacity(window + 1);
    let mut sorted: Vec<f64> = Vec::with_capacity(window + 1);
    let mut out = vec![f64::NAN; xs.len()];
    for (i, &x) in xs.iter().enumerate() {
        if x.is_nan() {
            continue;
        }
        order.push_back(x);
        let at = sorted.partition_point(|v| v.total_cmp(&x).is_lt());
        sorted.insert(at, x);
        if order.len() > window {
            let old = order.pop_front().unwrap();
            let at = sorted.partition_point(|v| v.total_cmp(&old).is_lt());
            sorted.remove(at);
        }
        if sorted.len() >= min_points.max(1) {
            out[i] = quantile_sorted(&sorted, q).unwrap();
        }
    }
    out
}

/// Rolling median (see `rolling_quantile`).
pub fn rolling_median(xs: &[f64], window: usize, min_points: usize) -> Vec<f64> {
    rolling_quantile(xs, window, 0.5, min_points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(xs: &[f64], window: usize, q: f64, i: usize) -> f64 {
        let mut w: Vec<f64> = xs[..=i].iter().copied().filter(|x| !x.is_nan()).collect();
        let start = w.len().saturating_sub(window);
        let mut w = w.split_off(start);
        w.sort_by(f64::total_cmp);
        quantile_sorted(&w, q).unwrap()
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.5), Some(2.5));
        assert_eq!(quantile_sorted(&v, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&v, 1.0), Some(4.0));
        assert!((quantile_sorted(&v, 0.95).unwrap() - 3.85).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }

    #[test]
    fn rolling_matches_a_naive_window_with_missing_points_and_ties() {
        let xs: Vec<f64> = (0..300)
            .map(|i| {
                if i % 17 == 5 {
                    f64::NAN
                } else {
                    ((i * 7919) % 23) as f64 / 3.0
                }
            })
            .collect();
        for &(w, q) in &[(1, 0.5), (7, 0.5), (20, 0.9), (50, 0.1)] {
            let got = rolling_quantile(&xs, w, q, 1);
            for i in 0..xs.len() {
                if xs[i].is_nan() {
                    assert!(got[i].is_nan());
                } else {
                    assert!(
                        (got[i] - naive(&xs, w, q, i)).abs() < 1e-12,
                        "w={w} q={q} i={i}"
                    );
                }
            }
        }
        let m = rolling_median(&[1.0, 2.0, 3.0], 10, 3);
        assert!(m[0].is_nan() && m[1].is_nan());
        assert_eq!(m[2], 2.0);
    }
}
