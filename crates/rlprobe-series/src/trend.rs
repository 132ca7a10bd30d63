//! Trend: the Theil–Sen slope (median of pairwise slopes; robust to 29 % outliers, Sen
//! 1968) and the Mann–Kendall test for a monotonic trend (Mann 1945, Kendall 1975), with
//! the tie correction of the variance. Both index by position (logged point), NaNs
//! skipped.

/// Theil–Sen slope per point of the present values (None with fewer than 2).
/// O(n²) pairs: meant for windows of up to a few hundred points.
pub fn theil_sen(xs: &[f64]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = xs
        .iter()
        .enumerate()
        .filter(|(_, y)| !y.is_nan())
        .map(|(i, &y)| (i as f64, y))
        .collect();
    let mut slopes = Vec::with_capacity(pts.len() * pts.len().saturating_sub(1) / 2);
    for a in 0..pts.len() {
        for b in a + 1..pts.len() {
            slopes.push((pts[b].1 - pts[a].1) / (pts[b].0 - pts[a].0));
        }
    }
    slopes.retain(|s| !s.is_nan());
    crate::robust::median_in_place(&mut slopes)
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannKendall {
    /// Σ sign(x_j − x_i) over pairs i < j.
    pub s: f64,
    /// Variance of S under no trend, corrected for ties.
    pub var_s: f64,
    /// Continuity-corrected normal score.
    pub z: f64,
    /// Two-sided p-value (normal approximation; fine from about 10 points).
    pub p: f64,
    /// Kendall's tau-a: S over the number of pairs, in [-1, 1].
    pub tau: f64,
}

/// The Mann–Kendall test on the present values (None with fewer than 3).
pub fn mann_kendall(xs: &[f64]) -> Option<MannKendall> {
    let v = crate::present(xs);
    let n = v.len();
    if n < 3 {
        return None;
    }
    let mut s = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            s += (v[j] - v[i]).signum() * ((v[j] != v[i]) as u8 as f64);
        }
    }
    // tie groups: Σ t(t−1)(2t+5)
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut run = 1.0;
    for k in 1..=n {
        if k < n && sorted[k] == sorted[k - 1] {
            run += 1.0;
        } else {
            ties += run * (run - 1.0) * (2.0 * run + 5.0);
            run = 1.0;
        }
    }
    let nf = n as f64;
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let z = if var_s <= 0.0 {
        0.0
    } else if s > 0.0 {
        (s - 1.0) / var_s.sqrt()
    } else if s < 0.0 {
        (s + 1.0) / var_s.sqrt()
    } else {
        0.0
    };
    let p = erfc(z.abs() / std::f64::consts::SQRT_2);
    Some(MannKendall {
        s,
        var_s,
        z,
        p,
        tau: s / (nf * (nf - 1.0) / 2.0),
    })
}

/// Complementary error function (W. J. Cody's rational approximations via the
/// Numerical Recipes `erfcc` form; relative error < 1.2e-7, plenty for a p-value).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theil_sen_ignores_outliers_and_missing_points() {
        let mut xs: Vec<f64> = (0..40).map(|i| 3.0 + 0.5 * i as f64).collect();
        xs[5] = 1000.0;
        xs[17] = -1000.0;
        xs[30] = f64::NAN;
        assert!((theil_sen(&xs).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(theil_sen(&[1.0]), None);
    }

    #[test]
    fn mann_kendall_finds_a_trend_and_not_noise() {
        let up: Vec<f64> = (0..30).map(|i| i as f64 + ((i * 7) % 5) as f64).collect();
        let r = mann_kendall(&up).unwrap();
        assert!(r.z > 4.0 && r.p < 1e-4 && r.tau > 0.7, "{r:?}");
        // a fixed pseudo-random sequence with no trend
        let noise: Vec<f64> = (0..30).map(|i| ((i * 7919 + 13) % 31) as f64).collect();
        let r = mann_kendall(&noise).unwrap();
        assert!(r.p > 0.05, "{r:?}");
        // S and its tie-corrected variance on a small textbook case
        let r = mann_kendall(&[1.0, 2.0, 2.0, 3.0]).unwrap();
        assert_eq!(r.s, 5.0);
        assert!((r.var_s - (4.0 * 3.0 * 13.0 - 2.0 * 1.0 * 9.0) / 18.0).abs() < 1e-12);
        assert_eq!(mann_kendall(&[1.0, 1.0, 1.0]).unwrap().z, 0.0);
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (-1.0, 1.842_700_793),
        ] {
            assert!((erfc(x) - want).abs() < 2e-7, "erfc({x}) = {}", erfc(x));
        }
    }
}
