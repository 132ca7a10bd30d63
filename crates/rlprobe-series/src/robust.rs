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
        ZOptions {
            window: 50,
            min_points: 10,
            log_scale: false,
        }
    }
}

/// Causal robust z-score of every point: `(x_i − median) / (1.4826 · MAD)` over the
/// `window` present points before i. NaN where x_i is missing or the window is too short.
/// A flat window (MAD 0) falls back to the mean absolute deviation (× 1.2533, also a σ
/// estimate); if that is 0 too, an equal point scores 0 and any other ±∞.
///
/// The window is kept sorted (O(window) per point, no copy): the median is read off it, and
/// the MAD is the middle of the absolute deviations, which are two sorted runs (below and
/// above the median) merged from the median outwards. Same values as selecting on a copy.
pub fn causal_robust_z(xs: &[f64], o: ZOptions) -> Vec<f64> {
    let mut out = vec![f64::NAN; xs.len()];
    // the trailing window of present values: oldest first, and sorted
    let mut fifo: std::collections::VecDeque<f64> =
        std::collections::VecDeque::with_capacity(o.window + 1);
    let mut sorted: Vec<f64> = Vec::with_capacity(o.window + 1);
    for (i, &raw) in xs.iter().enumerate() {
        let x = if o.log_scale {
            if raw > 0.0 {
                raw.ln()
            } else {
                f64::NAN
            }
        } else {
            raw
        };
        if x.is_nan() {
            continue;
        }
        if sorted.len() >= o.min_points.max(1) {
            let (med, mad) = sorted_median_mad(&sorted);
            let spread = mad * MAD_TO_SIGMA;
            let scale = if spread > 0.0 {
                spread
            } else {
                sorted.iter().map(|v| (v - med).abs()).sum::<f64>() / sorted.len() as f64 * 1.2533
            };
            out[i] = if scale > 0.0 {
                (x - med) / scale
            } else if x == med {
                0.0
            } else {
                f64::INFINITY.copysign(x - med)
            };
        }
        fifo.push_back(x);
        sorted.insert(sorted.partition_point(|v| v.total_cmp(&x).is_lt()), x);
        if fifo.len() > o.window {
            let old = fifo.pop_front().unwrap();
            sorted.remove(sorted.partition_point(|v| v.total_cmp(&old).is_lt()));
        }
    }
    out
}

/// Median and MAD of sorted, NaN-free, non-empty `v`, as `median_in_place` computes them
/// (the upper middle, averaged with the lower one for an even count).
fn sorted_median_mad(v: &[f64]) -> (f64, f64) {
    let n = v.len();
    let mid = n / 2;
    let med = if n % 2 == 1 {
        v[mid]
    } else {
        v[mid - 1] + (v[mid] - v[mid - 1]) / 2.0
    };
    // deviations grow walking down from the last value ≤ med and up from the first > med:
    // take the mid + 1 smallest, keeping the last two
    let split = v.partition_point(|&x| x <= med);
    let (mut lo, mut hi) = (split, split);
    let (mut prev, mut cur) = (0.0, 0.0);
    for _ in 0..=mid {
        let down = if lo > 0 {
            (v[lo - 1] - med).abs()
        } else {
            f64::INFINITY
        };
        let up = if hi < n {
            (v[hi] - med).abs()
        } else {
            f64::INFINITY
        };
        prev = cur;
        if down <= up {
            cur = down;
            lo -= 1;
        } else {
            cur = up;
            hi += 1;
        }
    }
    let mad = if n % 2 == 1 {
        cur
    } else {
        prev + (cur - prev) / 2.0
    };
    (med, mad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward version: copy the window, select the median, then the MAD.
    fn reference_z(xs: &[f64], o: ZOptions) -> Vec<f64> {
        let vals: Vec<f64> = xs
            .iter()
            .map(|&x| {
                if o.log_scale {
                    if x > 0.0 {
                        x.ln()
                    } else {
                        f64::NAN
                    }
                } else {
                    x
                }
            })
            .collect();
        let mut out = vec![f64::NAN; xs.len()];
        let mut window: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
        for (i, &x) in vals.iter().enumerate() {
            if !x.is_nan() && window.len() >= o.min_points.max(1) {
                let mut w: Vec<f64> = window.iter().copied().collect();
                let med = median_in_place(&mut w).unwrap();
                let mut d: Vec<f64> = w.iter().map(|v| (v - med).abs()).collect();
                let spread = median_in_place(&mut d).unwrap() * MAD_TO_SIGMA;
                let mut sorted_d = d.clone();
                sorted_d.sort_by(f64::total_cmp);
                let scale = if spread > 0.0 {
                    spread
                } else {
                    sorted_d.iter().sum::<f64>() / d.len() as f64 * 1.2533
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

    #[test]
    fn the_sorted_window_scores_exactly_as_selecting_on_a_copy() {
        // ties, flat stretches, NaNs, negative values, spikes; odd and even windows
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..60 {
            let n = 300;
            let xs: Vec<f64> = (0..n)
                .map(|i| {
                    let u = next();
                    if u < 0.05 {
                        f64::NAN
                    } else if case % 3 == 0 && (100..160).contains(&i) {
                        2.0 // flat: MAD 0
                    } else if case % 3 == 1 {
                        (u * 8.0).floor() - 3.0 // heavy ties
                    } else if u > 0.98 {
                        50.0 * u
                    } else {
                        u - 0.5
                    }
                })
                .collect();
            for (window, min_points) in [(50, 20), (7, 3), (8, 1), (1, 1)] {
                for log_scale in [false, true] {
                    let o = ZOptions {
                        window,
                        min_points,
                        log_scale,
                    };
                    let (got, want) = (causal_robust_z(&xs, o), reference_z(&xs, o));
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            g.to_bits() == w.to_bits() || (g - w).abs() <= 1e-12 * w.abs(),
                            "case {case} {o:?} point {i}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

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
        let mut xs: Vec<f64> = (0..100)
            .map(|i| 1.0 + 0.01 * ((i * 7919) % 13) as f64)
            .collect();
        xs[80] = 5.0;
        let z = causal_robust_z(&xs, ZOptions::default());
        assert!(
            z[..10].iter().all(|v| v.is_nan()),
            "too short a window: no score"
        );
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
        let z = causal_robust_z(
            &xs,
            ZOptions {
                window: 20,
                min_points: 5,
                log_scale: false,
            },
        );
        assert!(z[20].is_nan());
        assert_eq!(z[21], 0.0, "a flat window scores an equal point 0");
        assert_eq!(
            z[30],
            f64::INFINITY,
            "and any other point as infinitely far"
        );
    }

    #[test]
    fn log_scale_treats_a_doubling_alike_at_every_level() {
        let base = |level: f64| -> Vec<f64> {
            let mut v: Vec<f64> = (0..60)
                .map(|i| level * (1.0 + 0.05 * ((i % 5) as f64 - 2.0)))
                .collect();
            v[59] = level * 2.0;
            v
        };
        let o = ZOptions {
            log_scale: true,
            ..ZOptions::default()
        };
        let (a, b) = (
            causal_robust_z(&base(0.01), o)[59],
            causal_robust_z(&base(100.0), o)[59],
        );
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        assert!(causal_robust_z(&[0.0, -1.0], o).iter().all(|z| z.is_nan()));
    }
}
