//! Change detection: CUSUM alarms on a live series (Page 1954), and an offline
//! change-point search for mean shifts (least squares, binary segmentation with a
//! penalty, Scott & Knott 1974). Indices are positions (logged points); NaNs are skipped.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CusumAlarm {
    /// Where the sum crossed `h`.
    pub index: usize,
    /// Where it last left zero: the estimated start of the shift.
    pub onset: usize,
    pub direction: Direction,
}

/// Two-sided tabular CUSUM of `(x − target) / sigma` with slack `k` and threshold `h`
/// (both in σ; k = 0.5, h = 5 detect a 1σ shift with an in-control run length of about
/// 465 points, Montgomery, *Statistical Quality Control*). One alarm per excursion: a
/// side alarms again only after its sum has returned to zero (the shift ended).
pub fn cusum(xs: &[f64], target: f64, sigma: f64, k: f64, h: f64) -> Vec<CusumAlarm> {
    let mut alarms = Vec::new();
    if sigma.is_nan() || sigma <= 0.0 {
        return alarms;
    }
    let (mut up, mut down) = (0.0f64, 0.0f64);
    let (mut up_start, mut down_start) = (0usize, 0usize);
    let (mut up_armed, mut down_armed) = (true, true);
    for (i, &x) in xs.iter().enumerate() {
        if x.is_nan() {
            continue;
        }
        let z = (x - target) / sigma;
        if up == 0.0 {
            up_start = i;
        }
        if down == 0.0 {
            down_start = i;
        }
        up = (up + z - k).max(0.0);
        down = (down - z - k).max(0.0);
        up_armed |= up == 0.0;
        down_armed |= down == 0.0;
        if up > h && up_armed {
            alarms.push(CusumAlarm {
                index: i,
                onset: up_start,
                direction: Direction::Up,
            });
            up_armed = false;
        }
        if down > h && down_armed {
            alarms.push(CusumAlarm {
                index: i,
                onset: down_start,
                direction: Direction::Down,
            });
            down_armed = false;
        }
    }
    alarms
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// First position of the second segment.
    pub index: usize,
    /// Reduction of the sum of squared errors from splitting here.
    pub gain: f64,
    pub mean_before: f64,
    pub mean_after: f64,
}

/// The single mean-shift split of `xs[lo..hi]` (positions) that most reduces the sum of
/// squared errors, each side holding at least `min_segment` present points. O(n).
pub fn best_split(xs: &[f64], lo: usize, hi: usize, min_segment: usize) -> Option<Split> {
    let pts: Vec<(usize, f64)> = (lo..hi.min(xs.len()))
        .filter(|&i| !xs[i].is_nan())
        .map(|i| (i, xs[i]))
        .collect();
    let n = pts.len();
    let m = min_segment.max(1);
    if n < 2 * m {
        return None;
    }
    let total: f64 = pts.iter().map(|p| p.1).sum();
    let total_sq: f64 = pts.iter().map(|p| p.1 * p.1).sum();
    let sse_all = total_sq - total * total / n as f64;
    let (mut left, mut left_sq) = (0.0, 0.0);
    let mut best: Option<Split> = None;
    for (c, p) in pts.iter().enumerate().take(n - m) {
        left += p.1;
        left_sq += p.1 * p.1;
        let nl = (c + 1) as f64;
        if c + 1 < m {
            continue;
        }
        let nr = n as f64 - nl;
        let (right, right_sq) = (total - left, total_sq - left_sq);
        let sse = (left_sq - left * left / nl) + (right_sq - right * right / nr);
        let gain = sse_all - sse;
        if best.is_none_or(|b| gain > b.gain) {
            best = Some(Split {
                index: pts[c + 1].0,
                gain,
                mean_before: left / nl,
                mean_after: right / nr,
            });
        }
    }
    best
}

/// Mean-shift change points by binary segmentation: split where the gain exceeds
/// `penalty`, recurse on both sides. Returns split positions in order.
pub fn change_points(xs: &[f64], min_segment: usize, penalty: f64) -> Vec<Split> {
    let mut out = Vec::new();
    let mut stack = vec![(0usize, xs.len())];
    while let Some((lo, hi)) = stack.pop() {
        if let Some(s) = best_split(xs, lo, hi, min_segment).filter(|s| s.gain > penalty) {
            out.push(s);
            stack.push((lo, s.index));
            stack.push((s.index, hi));
        }
    }
    out.sort_by_key(|s| s.index);
    out
}

/// A BIC-style penalty for `change_points` on `n` points of noise σ: 2σ²·ln(n)
/// (Yao 1988), with σ estimated robustly from first differences so the shifts themselves
/// do not inflate it.
pub fn bic_penalty(xs: &[f64]) -> f64 {
    let v = crate::present(xs);
    if v.len() < 3 {
        return f64::INFINITY;
    }
    let diffs: Vec<f64> = v.windows(2).map(|w| w[1] - w[0]).collect();
    let sigma = crate::robust::mad(&diffs).map_or(0.0, |(_, m)| m * crate::robust::MAD_TO_SIGMA)
        / std::f64::consts::SQRT_2;
    2.0 * sigma * sigma * (v.len() as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise, uniform in [-0.5, 0.5) (a SplitMix64 hash of the position).
    fn noise(i: usize) -> f64 {
        let mut z = (i as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }

    #[test]
    fn cusum_catches_a_one_sigma_shift_and_dates_it() {
        let xs: Vec<f64> = (0..400)
            .map(|i| noise(i) * 0.6 + if i >= 250 { 0.6 } else { 0.0 })
            .collect();
        // σ of uniform(-0.3, 0.3) ≈ 0.173; the shift is about 3.5σ
        let alarms = cusum(&xs, 0.0, 0.173, 0.5, 5.0);
        assert_eq!(
            alarms.len(),
            1,
            "one alarm for one sustained shift: {alarms:?}"
        );
        let a = alarms[0];
        assert_eq!(a.direction, Direction::Up);
        assert!((250..260).contains(&a.index), "{a:?}");
        assert!((245..=252).contains(&a.onset), "{a:?}");
        let down: Vec<f64> = xs.iter().map(|x| -x).collect();
        assert_eq!(
            cusum(&down, 0.0, 0.173, 0.5, 5.0)[0].direction,
            Direction::Down
        );
        assert!(cusum(&xs, 0.0, 0.0, 0.5, 5.0).is_empty());
    }

    #[test]
    fn change_points_find_the_shifts_and_nothing_in_noise() {
        let xs: Vec<f64> = (0..600)
            .map(|i| {
                noise(i)
                    + if i >= 400 {
                        -3.0
                    } else if i >= 150 {
                        2.0
                    } else {
                        0.0
                    }
            })
            .collect();
        let cps = change_points(&xs, 10, bic_penalty(&xs));
        let at: Vec<usize> = cps.iter().map(|s| s.index).collect();
        assert_eq!(at, vec![150, 400], "{cps:?}");
        assert!((cps[0].mean_after - cps[0].mean_before - 2.0).abs() < 0.2);
        let flat: Vec<f64> = (0..600).map(noise).collect();
        assert!(change_points(&flat, 10, bic_penalty(&flat)).is_empty());
        let mut gappy = xs.clone();
        for i in (0..600).step_by(7) {
            gappy[i] = f64::NAN;
        }
        let at: Vec<usize> = change_points(&gappy, 10, bic_penalty(&gappy))
            .iter()
            .map(|s| s.index)
            .collect();
        assert!(
            at.len() == 2 && at[0].abs_diff(150) <= 1 && at[1].abs_diff(400) <= 1,
            "{at:?}"
        );
    }
}
