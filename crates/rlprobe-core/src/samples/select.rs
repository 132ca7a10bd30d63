//! Stratified sample selection (docs/format.md#samples): keep the top-k and bottom-k by
//! `reward_total`, where reward hacking and reward bugs live, plus a seeded random draw from
//! the rest so the typical distribution stays visible.
//!
//! Defined behaviour, in order:
//! - A batch no larger than `top_k + bottom_k + random_k` is kept whole, every sample
//!   tagged `all` (as the Python package does).
//! - Only samples with a reward that is not NaN are ranked (±inf rank as the extremes they
//!   are). A missing or NaN reward cannot be "top" or "bottom"; such samples join the pool
//!   of the random draw, where an unscorable sample is as typical as any.
//! - Top first: the `top_k` largest rewards; then the `bottom_k` smallest of the ranked
//!   samples left. With fewer ranked samples than `top_k + bottom_k`, top is filled first.
//! - Ties are broken by arrival order, the earlier sample first, at both ends.
//! - The random draw takes `random_k` distinct samples, uniformly, from everything not
//!   already kept; the same seed and batch always give the same draw.
//! - The result is in arrival order.
//!
//! Cost: O(n) selection (no full sort), so a large batch is cheap wherever it runs.

use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureReason {
    TopK,
    BottomK,
    Random,
    All,
}

impl CaptureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureReason::TopK => "top_k",
            CaptureReason::BottomK => "bottom_k",
            CaptureReason::Random => "random",
            CaptureReason::All => "all",
        }
    }

    /// The wire code the JS encoder and the binding use.
    pub fn code(self) -> u8 {
        match self {
            CaptureReason::TopK => 1,
            CaptureReason::BottomK => 2,
            CaptureReason::Random => 3,
            CaptureReason::All => 4,
        }
    }

    pub fn from_code(code: u8) -> Option<CaptureReason> {
        Some(match code {
            1 => CaptureReason::TopK,
            2 => CaptureReason::BottomK,
            3 => CaptureReason::Random,
            4 => CaptureReason::All,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplingConfig {
    pub top_k: usize,
    pub bottom_k: usize,
    pub random_k: usize,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            top_k: 2,
            bottom_k: 2,
            random_k: 4,
        }
    }
}

impl SamplingConfig {
    pub fn budget(&self) -> usize {
        self.top_k
            .saturating_add(self.bottom_k)
            .saturating_add(self.random_k)
    }
}

/// Picks samples from a batch given each one's reward (NaN = missing); returns
/// `(index, reason)` in index order.
pub fn select_samples(
    rewards: &[f64],
    cfg: SamplingConfig,
    seed: u64,
) -> Vec<(u32, CaptureReason)> {
    let n = rewards.len();
    if n <= cfg.budget() {
        return (0..n as u32).map(|i| (i, CaptureReason::All)).collect();
    }
    let mut ranked: Vec<u32> = (0..n as u32)
        .filter(|&i| !rewards[i as usize].is_nan())
        .collect();
    let mut reason: Vec<Option<CaptureReason>> = vec![None; n];

    // (reward desc, index asc): the first `top_k` are the top.
    let top_order = |a: &u32, b: &u32| -> Ordering {
        rewards[*b as usize]
            .partial_cmp(&rewards[*a as usize])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    };
    let top = cfg.top_k.min(ranked.len());
    take_first(&mut ranked, top, top_order);
    for &i in &ranked[..top] {
        reason[i as usize] = Some(CaptureReason::TopK);
    }
    let rest = &mut ranked[top..];
    // (reward asc, index asc): the first `bottom_k` of the rest are the bottom.
    let bottom_order = |a: &u32, b: &u32| -> Ordering {
        rewards[*a as usize]
            .partial_cmp(&rewards[*b as usize])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    };
    let bottom = cfg.bottom_k.min(rest.len());
    take_first(rest, bottom, bottom_order);
    for &i in &rest[..bottom] {
        reason[i as usize] = Some(CaptureReason::BottomK);
    }

    // The random pool, in index order so the draw depends only on the batch and the seed.
    let mut pool: Vec<u32> = (0..n as u32)
        .filter(|&i| reason[i as usize].is_none())
        .collect();
    let draws = cfg.random_k.min(pool.len());
    let mut rng = SplitMix64(seed);
    for k in 0..draws {
        // partial Fisher–Yates: pool[..k] holds the draws so far
        let j = k + rng.below((pool.len() - k) as u64) as usize;
        pool.swap(k, j);
        reason[pool[k] as usize] = Some(CaptureReason::Random);
    }

    reason
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| r.map(|r| (i as u32, r)))
        .collect()
}

/// Moves the `k` first elements under `order` to the front (in no particular order).
fn take_first(v: &mut [u32], k: usize, order: impl Fn(&u32, &u32) -> Ordering) {
    if k == 0 || k >= v.len() {
        return;
    }
    v.select_nth_unstable_by(k - 1, order);
}

/// The per-call seed a recorder uses when the caller gives none: the recorder's seed mixed
/// with the call's ordinal, so calls draw independently and a rerun draws the same.
pub fn call_seed(recorder_seed: u64, call: u64) -> u64 {
    let mut s = SplitMix64(recorder_seed ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    s.next_u64()
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for a sample draw
/// (and for the tests' seeded damage).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (Lemire's multiply-shift; the bias is below 2^-32 for the
    /// batch sizes we see).
    fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CaptureReason::*;

    fn cfg(top_k: usize, bottom_k: usize, random_k: usize) -> SamplingConfig {
        SamplingConfig {
            top_k,
            bottom_k,
            random_k,
        }
    }

    fn with(reason: CaptureReason, picks: &[(u32, CaptureReason)]) -> Vec<u32> {
        picks
            .iter()
            .filter(|p| p.1 == reason)
            .map(|p| p.0)
            .collect()
    }

    #[test]
    fn small_batches_are_kept_whole() {
        let r = [0.1, f64::NAN, 0.3];
        assert_eq!(
            select_samples(&r, cfg(1, 1, 1), 7),
            vec![(0, All), (1, All), (2, All)]
        );
        assert!(select_samples(&[], SamplingConfig::default(), 7).is_empty());
        // exactly the budget: still all
        let r: Vec<f64> = (0..8).map(f64::from).collect();
        assert!(select_samples(&r, SamplingConfig::default(), 1)
            .iter()
            .all(|p| p.1 == All));
    }

    #[test]
    fn extremes_and_a_random_middle() {
        let r: Vec<f64> = (0..100).map(|i| ((i * 37) % 100) as f64).collect();
        let picks = select_samples(&r, SamplingConfig::default(), 42);
        assert_eq!(picks.len(), 8);
        let mut top: Vec<f64> = with(TopK, &picks).iter().map(|&i| r[i as usize]).collect();
        top.sort_by(f64::total_cmp);
        assert_eq!(top, vec![98.0, 99.0]);
        let mut bottom: Vec<f64> = with(BottomK, &picks)
            .iter()
            .map(|&i| r[i as usize])
            .collect();
        bottom.sort_by(f64::total_cmp);
        assert_eq!(bottom, vec![0.0, 1.0]);
        let random = with(Random, &picks);
        assert_eq!(random.len(), 4);
        assert!(random.iter().all(|&i| (2.0..98.0).contains(&r[i as usize])));
        // arrival order
        assert!(picks.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn ties_go_to_the_earlier_sample_at_both_ends() {
        let r = [5.0, 1.0, 5.0, 1.0, 5.0, 3.0, 1.0, 3.0, 3.0, 3.0];
        let picks = select_samples(&r, cfg(2, 2, 0), 0);
        assert_eq!(with(TopK, &picks), vec![0, 2]);
        assert_eq!(with(BottomK, &picks), vec![1, 3]);
    }

    #[test]
    fn missing_and_nan_rewards_are_never_extremes_but_can_be_drawn() {
        let mut r = vec![f64::NAN; 20];
        r[3] = 1.0;
        r[9] = -1.0;
        r[15] = 0.0;
        let picks = select_samples(&r, cfg(2, 2, 10), 3);
        // 3 ranked: top takes two, bottom the one left, the draw comes from the NaNs
        assert_eq!(with(TopK, &picks), vec![3, 15]);
        assert_eq!(with(BottomK, &picks), vec![9]);
        assert_eq!(with(Random, &picks).len(), 10);
        // nothing ranked at all: only the random draw
        let picks = select_samples(&[f64::NAN; 30], SamplingConfig::default(), 9);
        assert_eq!(picks.len(), 4);
        assert!(picks.iter().all(|p| p.1 == Random));
    }

    #[test]
    fn infinities_rank_as_extremes() {
        let mut r: Vec<f64> = (0..50).map(f64::from).collect();
        r[10] = f64::INFINITY;
        r[20] = f64::NEG_INFINITY;
        let picks = select_samples(&r, cfg(1, 1, 0), 0);
        assert_eq!(picks, vec![(10, TopK), (20, BottomK)]);
    }

    #[test]
    fn fewer_samples_than_k_in_one_stratum() {
        // four ranked samples for top 3 + bottom 3: top is filled first
        let mut r = vec![f64::NAN; 14];
        for (i, x) in [(2, 0.5), (5, 0.1), (8, 0.9), (11, 0.3)] {
            r[i] = x;
        }
        let picks = select_samples(&r, cfg(3, 3, 1), 0);
        assert_eq!(with(TopK, &picks), vec![2, 8, 11]);
        assert_eq!(with(BottomK, &picks), vec![5]);
        assert_eq!(with(Random, &picks).len(), 1);
        // zero everywhere keeps nothing (budget 0 < n)
        assert!(select_samples(&r, cfg(0, 0, 0), 0).is_empty());
    }

    #[test]
    fn the_draw_is_seeded_and_roughly_uniform() {
        let r: Vec<f64> = (0..40).map(f64::from).collect();
        let a = select_samples(&r, cfg(0, 0, 5), 11);
        assert_eq!(a, select_samples(&r, cfg(0, 0, 5), 11));
        assert_ne!(a, select_samples(&r, cfg(0, 0, 5), 12));
        let mut hits = [0u32; 40];
        for call in 0..20_000 {
            for (i, _) in select_samples(&r, cfg(0, 0, 4), call_seed(5, call)) {
                hits[i as usize] += 1;
            }
        }
        // expected 2000 per index; 5 sigma is about ±210
        assert!(hits.iter().all(|&h| (1700..2300).contains(&h)), "{hits:?}");
    }
}
