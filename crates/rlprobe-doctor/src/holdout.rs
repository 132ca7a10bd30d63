//! Out-of-sample labelled runs: a generator written apart from `synth` (whose shapes the
//! thresholds were tuned on), so the evaluation in `tests/out_of_sample.rs` measures the
//! detectors on runs nobody tuned them for.
//!
//! - Healthy shapes: GRPO and PPO, 300–3,000 points, logged every step or every 2–10,
//!   noise from 0.4× to 2.5×, sigmoid / log-like / noisy-plateau reward curves that keep
//!   creeping up, entropy falling 20–60 % smoothly, KL growing, length drifting up with the
//!   reward, log-normal gradient norms with isolated spikes, warm-up then cosine, linear or
//!   no decay, a held-out metric every 10–50 points with missing stretches, eval spikes in
//!   step time.
//! - Every signature of `synth::INJECTIONS` (same codes and variants) with other functional
//!   forms, magnitudes from just past to well past the documented thresholds, and onsets
//!   8–70 % into the run, a quarter of them within the first 15–50 points; plus the
//!   patterns of issue 19 (`ISSUE_CASES`) and its healthy negatives (`NEGATIVES`).

use std::collections::BTreeMap;

use rlprobe_series::robust::median;

use crate::finding::Severity;
use crate::input::{Column, RunInput, Samples};
use crate::synth::{Algo, Rng, INJECTIONS};

/// The issue-19 patterns, labelled like `INJECTIONS`: (code, variant, only for this algorithm).
pub const ISSUE_CASES: &[(&str, &str, Option<Algo>)] = &[
    (
        "GRAD_NORM_SPIKE",
        "200× spikes recurring from a point",
        None,
    ),
    ("TRUNCATION_COLLAPSE", "early rise 60–80 % → 100 %", None),
    ("ENTROPY_COLLAPSE", "early fall 0.39 → 0.023", None),
    (
        "LENGTH_EXPLOITATION",
        "×2.2, 37 % cap hits, reward rising",
        None,
    ),
    ("TRUNCATION_COLLAPSE", "EOS collapse 0.98 → 0.01", None),
    ("ENTROPY_COLLAPSE", "linear decline", None),
    ("ENTROPY_COLLAPSE", "exponential decline", None),
    ("ENTROPY_COLLAPSE", "sigmoid decline", None),
];

/// The labelled cases: every `INJECTIONS` entry, then `ISSUE_CASES`.
pub fn cases() -> Vec<(&'static str, &'static str, Option<Algo>)> {
    INJECTIONS.iter().chain(ISSUE_CASES).copied().collect()
}

/// A healthy run that must not raise a warning, except for the codes it accepts.
pub struct Negative {
    pub name: &'static str,
    /// Codes that are true statements about this run (not false alarms).
    pub accepts: &'static [&'static str],
}

pub const NEGATIVES: &[Negative] = &[
    Negative {
        name: "held-out wobbles 2–4 % and recovers",
        accepts: &[],
    },
    Negative {
        name: "held-out dips while its window mean rises",
        accepts: &[],
    },
    Negative {
        name: "train reward saturated at 0.97 of max 1.0",
        // all-correct groups carry no variance: true, and not a stall
        accepts: &[
            "REWARD_SATURATION",
            "ZERO_VARIANCE_GROUPS",
            "ADVANTAGE_COLLAPSE",
        ],
    },
];

/// A labelled run and what the doctor should say about it.
pub struct Labelled {
    pub run: RunInput,
    pub code: &'static str,
    pub variant: &'static str,
    /// The point the injected change starts at.
    pub onset: usize,
    /// For level-type signatures: each changed column and its true start level (the median
    /// of its present points in the run's start segment before the onset).
    pub levels: Vec<(String, f64)>,
    /// The severity the true ratio calls for, where it is clearly on one side of a line.
    pub severity: Option<Severity>,
    /// A code that must not be named as the finding's root cause.
    pub not_root: Option<&'static str>,
}

/// The run's actual start before a change at `onset`: the median of up to 30 present
/// points before it, after the first 5 when at least 15 precede it.
pub fn start_level(xs: &[f64], onset: usize) -> Option<f64> {
    let before: Vec<f64> = xs[..onset.min(xs.len())]
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .collect();
    let skip = if before.len() >= 15 { 5 } else { 0 };
    let w: Vec<f64> = before.into_iter().skip(skip).take(30).collect();
    median(&w)
}

/// The level just before `onset` (median of the 9 present points before it).
fn local_level(xs: &[f64], onset: usize) -> f64 {
    let w: Vec<f64> = xs[..onset.min(xs.len())]
        .iter()
        .rev()
        .copied()
        .filter(|v| !v.is_nan())
        .take(9)
        .collect();
    median(&w).unwrap_or(xs[onset])
}

fn between(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.uniform()
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.range(0, xs.len())]
}

/// How an injected change unfolds: the share of it done `d` points after the onset.
#[derive(Debug, Clone, Copy)]
enum Ramp {
    Step,
    Linear(f64),
    Approach(f64),
    FastStart(f64),
    /// A logistic that is 5 % done at the onset (a smooth decline from a given point).
    Sigmoid(f64),
}

impl Ramp {
    fn at(self, d: f64) -> f64 {
        let logistic = |x: f64| 1.0 / (1.0 + (-x).exp());
        match self {
            Ramp::Step => 1.0,
            Ramp::Linear(l) => (d / l).min(1.0),
            Ramp::Approach(tau) => 1.0 - (-d / tau).exp(),
            Ramp::FastStart(l) => 1.0 - (1.0 - (d / l).min(1.0)).powi(2),
            Ramp::Sigmoid(w) => (logistic(d / w - 3.0) - logistic(-3.0)) / (1.0 - logistic(-3.0)),
        }
    }

    /// An abrupt-to-gradual shape whose change begins at the onset, done within `longest`.
    fn draw(rng: &mut Rng, longest: f64) -> Ramp {
        match rng.range(0, 4) {
            0 => Ramp::Step,
            1 => Ramp::Linear(between(rng, 5.0, longest)),
            2 => Ramp::Approach(between(rng, 2.0, longest / 3.0)),
            _ => Ramp::FastStart(between(rng, 5.0, longest)),
        }
    }
}

/// A run under construction: columns by name (NaN = missing), and the latent curves the
/// derived columns follow.
struct Draft {
    algo: Algo,
    n: usize,
    every: i64,
    nz: f64,
    /// Reward scale (1 for GRPO's 0–1 rewards, 1–3 for a PPO reward model's scores).
    scale: f64,
    cap: f64,
    cols: BTreeMap<String, Vec<f64>>,
    nonfinite: Vec<(String, usize)>,
    evals: Vec<usize>,
    eval_col: &'static str,
    eval_offset: f64,
    eval_share: f64,
    eval_noise: Vec<f64>,
    r0: f64,
    reward_clean: Vec<f64>,
    reward_noise: Vec<f64>,
    components: bool,
    format0: f64,
    format_share: f64,
    format_noise: Vec<f64>,
    samples_per_step: usize,
    /// From this point on, per-sample reward follows length with this correlation.
    length_reward: Option<(usize, f64, Ramp)>,
    /// Share of points dropped from the step columns (metrics logged on other cadences).
    missing: f64,
}

impl Draft {
    fn col(&mut self, name: &str) -> &mut Vec<f64> {
        let n = self.n;
        self.cols
            .entry(name.to_string())
            .or_insert_with(|| vec![f64::NAN; n])
    }

    fn get(&self, name: &str) -> &[f64] {
        self.cols.get(name).map(|v| v.as_slice()).unwrap_or(&[])
    }

    fn has(&self, name: &str) -> bool {
        self.cols.contains_key(name)
    }

    /// `f(value, points since t0)` from t0 on.
    fn apply(&mut self, name: &str, t0: usize, f: impl Fn(f64, f64) -> f64) {
        for (i, v) in self.col(name).iter_mut().enumerate().skip(t0) {
            if !v.is_nan() {
                *v = f(*v, (i - t0) as f64);
            }
        }
    }

    /// Multiplies `name` from t0 so it ends at `ratio` × its true start level.
    fn scale_to(&mut self, name: &str, t0: usize, ratio: f64, ramp: Ramp) {
        let xs = self.get(name);
        let start = start_level(xs, t0).unwrap_or(xs[t0]);
        let f = (start * ratio / local_level(xs, t0)).ln();
        self.apply(name, t0, |v, d| v * (f * ramp.at(d)).exp());
    }

    /// Shifts `name` from t0 so it ends at `target` (noise and drift kept).
    fn shift_to(&mut self, name: &str, t0: usize, target: f64, ramp: Ramp, lo: f64, hi: f64) {
        let by = target - local_level(self.get(name), t0);
        self.apply(name, t0, |v, d| (v + by * ramp.at(d)).clamp(lo, hi));
    }

    /// Reward and everything that follows the clean reward curve: components, the held-out
    /// metric, GRPO's reward spread.
    fn set_reward(&mut self, rng: &mut Rng) {
        let n = self.n;
        let grpo = self.algo == Algo::Grpo;
        let r: Vec<f64> = (0..n)
            .map(|i| {
                let v = self.reward_clean[i] + self.reward_noise[i];
                if grpo {
                    v.clamp(0.0, 1.0)
                } else {
                    v
                }
            })
            .collect();
        if grpo {
            let sd: Vec<f64> = (0..n)
                .map(|i| {
                    let p = self.reward_clean[i].clamp(0.02, 0.98);
                    (p * (1.0 - p)).sqrt() * (1.0 + 0.03 * self.nz * rng.normal())
                })
                .collect();
            *self.col("reward_std") = sd;
        }
        if self.components {
            let format: Vec<f64> = (0..n)
                .map(|i| {
                    self.format0
                        + self.format_share * (self.reward_clean[i] - self.r0)
                        + self.format_noise[i]
                })
                .collect();
            let correctness: Vec<f64> = (0..n).map(|i| r[i] - format[i]).collect();
            *self.col("reward_component.format") = format;
            *self.col("reward_component.correctness") = correctness;
        }
        let mut eval = vec![f64::NAN; n];
        for &i in &self.evals {
            eval[i] = self.eval_offset
                + self.eval_share * (self.reward_clean[i] - self.r0)
                + self.eval_noise[i];
        }
        *self.col(self.eval_col) = eval;
        *self.col("reward_mean") = r;
    }

    /// Held-out evaluations every `every` points, with `gaps` missing stretches of 3–8.
    fn set_evals(&mut self, rng: &mut Rng, every: usize, gaps: usize) {
        let mut evals: Vec<usize> = (every - 1..self.n).step_by(every).collect();
        for _ in 0..gaps {
            if evals.len() < 15 {
                break;
            }
            let len = rng.range(3, 9).min(evals.len() / 5);
            let at = rng.range(2, evals.len() - len);
            evals.drain(at..at + len);
        }
        self.evals = evals;
    }
}

/// The reward curve's progress (0 → 1) at `u` in 0..1.
fn progress(kind: usize, u: f64, a: f64, b: f64) -> f64 {
    match kind {
        // sigmoid, midpoint a, width b
        0 => {
            let s = |x: f64| 1.0 / (1.0 + (-(x - a) / b).exp());
            (s(u) - s(0.0)) / (s(1.0) - s(0.0))
        }
        // log-like
        1 => (1.0 + u / a).ln() / (1.0 + 1.0 / a).ln(),
        // fast rise into a (noisy) plateau
        _ => (1.0 - (-u / a).exp()) / (1.0 - (-1.0 / a).exp()),
    }
}

/// A healthy run of `algo` with `n` points.
fn healthy(rng: &mut Rng, algo: Algo, n: usize) -> Draft {
    let every = if rng.uniform() < 0.5 {
        1
    } else {
        rng.range(2, 11) as i64
    };
    let nz = between(rng, 0.4, 2.5);
    let grpo = algo == Algo::Grpo;
    let components = grpo || rng.uniform() < 0.3;
    let scale = if grpo { 1.0 } else { between(rng, 1.0, 3.0) };
    let kind = rng.range(0, 3);
    let (a, b) = match kind {
        0 => (between(rng, 0.15, 0.5), between(rng, 0.04, 0.12)),
        1 => (between(rng, 0.02, 0.3), 0.0),
        _ => (between(rng, 0.05, 0.15), 0.0),
    };
    // noisier on a plateau; never so noisy that a 3,000-point run cannot keep improving
    let sigma_r = 0.015 * nz * scale * if kind == 2 { 1.3 } else { 1.0 };
    // a slow creep that keeps every 300-point window improving by 1.5 σ (a real plateau
    // of 300 points is a stall, which the doctor rightly reports)
    let drift = 1.5 * sigma_r * n as f64 / 300.0;
    let r0 = if components || grpo {
        between(rng, 0.05, 0.3) * scale
    } else {
        between(rng, -0.5, 0.3) * scale
    };
    let gain = (between(rng, 0.2, 0.5) * scale)
        .min(0.92 * scale - r0 - drift)
        .max(0.05 * scale);
    let mut ar = 0.0;
    let mut reward_clean = Vec::with_capacity(n);
    let mut reward_noise = Vec::with_capacity(n);
    let mut prog = Vec::with_capacity(n);
    for i in 0..n {
        let u = i as f64 / n as f64;
        let p = progress(kind, u, a, b);
        prog.push(p);
        reward_clean.push(r0 + gain * p + drift * u);
        ar = 0.9 * ar + 0.15 * sigma_r * rng.normal();
        reward_noise.push(ar + sigma_r * rng.normal());
    }
    let eval_every = rng.range(10, 51);
    let eval_col = pick(
        rng,
        &[
            "extra.eval/reward",
            "extra.val/score",
            "extra.val-core/acc",
            "extra.eval_accuracy",
            "extra.val/test_score",
        ],
    );
    let eval_sigma = between(rng, 0.004, 0.012) * nz * scale;
    let mut d = Draft {
        algo,
        n,
        every,
        nz,
        scale,
        cap: 0.0,
        cols: BTreeMap::new(),
        nonfinite: Vec::new(),
        evals: Vec::new(),
        eval_col,
        eval_offset: r0 + between(rng, -0.05, 0.1) * scale,
        eval_share: between(rng, 0.6, 1.0),
        eval_noise: (0..n).map(|_| eval_sigma * rng.normal()).collect(),
        r0,
        reward_clean,
        reward_noise,
        components,
        format0: r0.abs() * between(rng, 0.25, 0.45),
        format_share: between(rng, 0.15, 0.4),
        format_noise: (0..n).map(|_| 0.01 * nz * scale * rng.normal()).collect(),
        samples_per_step: if n <= 1500 && rng.uniform() < 0.5 {
            rng.range(8, 17)
        } else {
            0
        },
        length_reward: None,
        missing: if rng.uniform() < 0.3 {
            between(rng, 0.01, 0.03)
        } else {
            0.0
        },
    };
    let gaps = rng.range(1, 4);
    d.set_evals(rng, eval_every, gaps);
    d.set_reward(rng);
    if grpo {
        d.col("reward_max").fill(1.0);
    }

    // learning rate: warm-up, then cosine, linear or no decay
    let peak = 10f64.powf(between(rng, -6.5, -5.5));
    let warm = if rng.uniform() < 0.7 {
        (n as f64 * between(rng, 0.03, 0.08)) as usize + 1
    } else {
        0
    };
    let decay = rng.range(0, 5); // 0–1 cosine, 2–3 linear, 4 constant
    let floor = if rng.uniform() < 0.5 {
        0.0
    } else {
        between(rng, 0.05, 0.1)
    };
    let lr: Vec<f64> = (0..n)
        .map(|i| {
            if i < warm {
                return peak * (i + 1) as f64 / warm as f64;
            }
            let p = (i - warm) as f64 / (n - 1 - warm).max(1) as f64;
            match decay {
                0 | 1 => {
                    peak * (floor + (1.0 - floor) * 0.5 * (1.0 + (std::f64::consts::PI * p).cos()))
                }
                2 | 3 => peak * (floor + (1.0 - floor) * (1.0 - p)),
                _ => peak,
            }
        })
        .collect();
    *d.col("lr") = lr;

    let h0 = if grpo {
        between(rng, 0.3, 0.9)
    } else {
        between(rng, 0.8, 2.0)
    };
    let h_fall = between(rng, 0.2, 0.6);
    let h_c = between(rng, 0.15, 1.0);
    let k0 = between(rng, 0.002, 0.015);
    let k_gain = between(rng, 3.0, 12.0);
    let g0 = 10f64.powf(between(rng, -1.5, 1.0));
    let g_trend = between(rng, -0.3, 0.5);
    let g_sigma = 0.15 + 0.08 * nz;
    let len0 = between(rng, 120.0, 700.0);
    let len_gain = between(rng, 0.15, 0.7);
    d.cap = [512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0]
        .into_iter()
        .find(|&c| c >= 2.6 * len0 * (1.0 + len_gain))
        .unwrap_or(16384.0);
    let t_base = between(rng, 0.002, 0.03);
    let rep0 = between(rng, 0.005, 0.05);
    let st0 = between(rng, 8.0, 120.0);
    let spike = between(rng, 1.5, 3.0);
    let diff0 = between(rng, 0.0015, 0.006);
    let z0 = between(rng, 0.05, 0.25);
    let one_update = grpo && rng.uniform() < 0.2;
    let clip0 = if grpo {
        between(rng, 0.02, 0.12)
    } else {
        between(rng, 0.05, 0.18)
    };
    let p95 = between(rng, 1.05, 1.3);
    let a0 = between(rng, 0.3, 1.2);
    let v0 = between(rng, 0.3, 3.0);
    let v_tau = n as f64 * between(rng, 0.1, 0.33);
    let (ev0, ev1, ev_tau) = (
        between(rng, -0.6, -0.1),
        between(rng, 0.4, 0.85),
        between(rng, 8.0, 25.0),
    );
    let adv_zero = grpo && rng.uniform() < 0.5;
    let mut last_spike = 0usize;
    let eval_at: std::collections::HashSet<usize> = d.evals.iter().copied().collect();
    for (i, &p) in prog.iter().enumerate() {
        let u = i as f64 / n as f64;
        let t = i as f64;
        let h = h0
            * (1.0 - h_fall * (1.0 - (-u / h_c).exp()) / (1.0 - (-1.0 / h_c).exp()))
            * (1.0 + 0.025 * nz * rng.normal());
        let kl = k0 * (1.0 + k_gain * u.powf(0.7)) * (0.08 * nz * rng.normal()).exp();
        let mut g = g0 * (1.0 + g_trend * u) * (g_sigma * rng.normal()).exp();
        // isolated spikes, at least 150 points apart
        if i > last_spike + 150 && rng.uniform() < 0.004 {
            g *= between(rng, 3.0, 10.0);
            last_spike = i;
        }
        let len = len0 * (1.0 + len_gain * (0.6 * p + 0.4 * u)) * (1.0 + 0.04 * nz * rng.normal());
        let trunc = (t_base + 0.01 * u + 0.006 * nz * rng.normal()).max(0.0);
        let slow = if eval_at.contains(&i) { spike } else { 1.0 };
        let st = st0 * (1.0 + 0.15 * u) * (0.03 * nz * rng.normal()).exp() * slow;
        d.col("entropy_mean")[i] = h;
        d.col("kl_mean")[i] = kl;
        d.col("grad_norm")[i] = g;
        d.col("loss")[i] = 0.02 * rng.normal();
        d.col("completion_len_mean")[i] = len;
        d.col("completion_len_max")[i] = d.cap.min(len * between(rng, 2.0, 3.0));
        d.col("truncation_rate")[i] = trunc;
        d.col("repetition_rate")[i] = rep0 * (0.1 * nz * rng.normal()).exp();
        d.col("step_time_s")[i] = st;
        d.col("extra.training/rollout_probs_diff_mean")[i] =
            diff0 * (0.1 * nz * rng.normal()).exp();
        if grpo {
            let zv = (z0 + 0.2 * p + 0.03 * nz * rng.normal()).clamp(0.0, 1.0);
            d.col("zero_variance_group_frac")[i] = zv;
            if adv_zero {
                d.col("adv_zero_frac")[i] = (zv + 0.01 * rng.normal()).clamp(0.0, 1.0);
            }
            d.col("adv_std")[i] = 0.9 * (1.0 - zv).sqrt() * (1.0 + 0.03 * rng.normal());
        } else {
            d.col("adv_std")[i] = a0 * (1.0 - 0.2 * u) * (1.0 + 0.04 * nz * rng.normal());
            d.col("value_loss")[i] =
                v0 * (0.25 + 0.75 * (-t / v_tau).exp()) * (0.08 * nz * rng.normal()).exp();
            d.col("value_explained_variance")[i] =
                ev1 + (ev0 - ev1) * (-t / ev_tau).exp() + 0.04 * nz * rng.normal();
        }
        if one_update {
            d.col("clip_fraction")[i] = 0.0;
            d.col("ratio_mean")[i] = 1.0;
            d.col("ratio_p95")[i] = 1.0;
        } else {
            d.col("clip_fraction")[i] = (clip0 + 0.012 * nz * rng.normal()).max(0.0);
            d.col("ratio_mean")[i] = 1.0 + 0.003 * rng.normal();
            d.col("ratio_p95")[i] = p95 + 0.02 * nz * rng.normal();
        }
    }
    if rng.uniform() < 0.5 {
        d.col("nan_count").fill(0.0);
    }
    d
}

/// The finished run: steps, missing points, per-sample records.
fn finish(mut d: Draft, rng: &mut Rng) -> RunInput {
    let n = d.n;
    let steps: Vec<i64> = (0..n as i64).map(|i| i * d.every).collect();
    let samples = (d.samples_per_step > 0).then(|| samples(&d, &steps, rng));
    if d.missing > 0.0 {
        for (name, values) in d.cols.iter_mut() {
            if name == "lr" || name.starts_with("extra.val") || name.starts_with("extra.eval") {
                continue;
            }
            for v in values.iter_mut() {
                if rng.uniform() < d.missing {
                    *v = f64::NAN;
                }
            }
        }
    }
    let mut run = RunInput::new(steps);
    for (name, mut values) in d.cols {
        let nonfinite: Vec<usize> = d
            .nonfinite
            .iter()
            .filter(|(c, _)| *c == name)
            .map(|(_, i)| *i)
            .collect();
        for &i in &nonfinite {
            values[i] = f64::NAN;
        }
        run.insert(&name, Column { values, nonfinite });
    }
    run.samples = samples;
    run
}

fn samples(d: &Draft, steps: &[i64], rng: &mut Rng) -> Samples {
    let mut s = Samples::default();
    let len = d.get("completion_len_mean");
    let reward = d.get("reward_mean");
    let sd = d.get("reward_std");
    let trunc: Vec<f64> = if d.has("truncation_rate") {
        d.get("truncation_rate").to_vec()
    } else {
        d.get("eos_rate").iter().map(|e| 1.0 - e).collect()
    };
    for i in 0..d.n {
        let rho = match d.length_reward {
            Some((t0, rho, ramp)) if i >= t0 => rho * ramp.at((i - t0) as f64),
            _ => 0.0,
        };
        let spread = sd.get(i).copied().filter(|v| !v.is_nan()).unwrap_or(0.3);
        for k in 0..d.samples_per_step {
            let z = rng.normal();
            let mut l = (len[i] * (0.3 * z).exp()).clamp(1.0, d.cap);
            if rng.uniform() < trunc[i] {
                l = d.cap;
            }
            let r = reward[i] + spread * (rho * z + (1.0 - rho * rho).sqrt() * rng.normal());
            s.push(
                steps[i],
                &format!("{}-{k}", steps[i]),
                r,
                l.round(),
                Some(l >= d.cap),
            );
        }
    }
    s
}

/// What a case needs from its run: lengths, the earliest onset, points after the onset.
struct Plan {
    points: (usize, usize),
    earliest: usize,
    room: usize,
}

fn plan(code: &str, variant: &str) -> Plan {
    let base = Plan {
        points: (300, 3001),
        earliest: 15,
        room: 100,
    };
    match (code, variant) {
        ("REWARD_STALL", _) => Plan {
            points: (700, 3001),
            room: 420,
            ..base
        },
        ("REWARD_HACKING", "length-driven reward") => Plan {
            points: (300, 1501),
            earliest: 30,
            ..base
        },
        // documented: a 50-point grace, then the critic's post-grace level
        ("VALUE_FUNCTION_FAILURE", _) => Plan {
            earliest: 90,
            ..base
        },
        ("REWARD_COMPONENT_DOMINANCE", _) | ("LENGTH_EXPLOITATION", _) => {
            Plan { room: 140, ..base }
        }
        ("ENTROPY_COLLAPSE", "linear decline" | "sigmoid decline") => Plan { room: 200, ..base },
        _ => base,
    }
}

/// Labelled run `seed` of case `which` (an index into `cases()`).
pub fn labelled(which: usize, seed: u64) -> Labelled {
    let (code, variant, only) = cases()[which];
    let mut rng = Rng::new(
        seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ (which as u64 + 1).wrapping_mul(0x8CB9_2BA7),
    );
    let algo = only.unwrap_or(if rng.uniform() < 0.5 {
        Algo::Grpo
    } else {
        Algo::Ppo
    });
    let p = plan(code, variant);
    let n = rng.range(p.points.0, p.points.1);
    let mut d = healthy(&mut rng, algo, n);
    let hi = (n * 7 / 10).min(n - p.room).max(p.earliest + 1);
    let mut t0 = if rng.uniform() < 0.25 {
        rng.range(15, 51).max(p.earliest)
    } else {
        rng.range(
            (n * 8 / 100).max(p.earliest),
            hi.max((n * 8 / 100).max(p.earliest) + 1),
        )
    };
    t0 = t0.min(n - 30);
    let mut severity = None;
    let mut not_root = None;
    let columns: Vec<&'static str> = match (code, variant) {
        ("GRAD_NORM_SPIKE", "200× spikes recurring from a point") => {
            spikes(&mut d, &mut rng, t0, 34, (150.0, 250.0), (2, 4));
            vec![]
        }
        ("TRUNCATION_COLLAPSE", "early rise 60–80 % → 100 %") => {
            t0 = rng.range(15, 41);
            severity = Some(Severity::Critical);
            early_truncation(&mut d, &mut rng, t0);
            vec!["truncation_rate"]
        }
        ("ENTROPY_COLLAPSE", "early fall 0.39 → 0.023") => {
            t0 = rng.range(15, 41);
            severity = Some(Severity::Critical);
            let h = d.get("entropy_mean");
            let f = 0.39 / local_level(h, t0);
            d.apply("entropy_mean", 0, |v, _| v * f);
            let ramp = pick(
                &mut rng,
                &[
                    Ramp::Approach(4.0),
                    Ramp::Linear(12.0),
                    Ramp::FastStart(15.0),
                ],
            );
            d.scale_to("entropy_mean", t0, 0.023 / 0.39, ramp);
            vec!["entropy_mean"]
        }
        ("LENGTH_EXPLOITATION", "×2.2, 37 % cap hits, reward rising") => {
            length_with_reward(&mut d, &mut rng, t0);
            vec!["completion_len_mean"]
        }
        ("TRUNCATION_COLLAPSE", "EOS collapse 0.98 → 0.01") => {
            severity = Some(Severity::Critical);
            not_root = Some("LENGTH_EXPLOITATION");
            eos_collapse(&mut d, &mut rng, t0);
            vec!["eos_rate"]
        }
        ("ENTROPY_COLLAPSE", smooth) if smooth.ends_with("decline") => {
            let r = between(&mut rng, 0.05, 0.3);
            severity = entropy_severity(r);
            let room = (n - t0 - 30) as f64;
            let ramp = match smooth {
                "linear decline" => Ramp::Linear(between(&mut rng, 80.0, 400.0).min(room)),
                "exponential decline" => {
                    Ramp::Approach(between(&mut rng, 15.0, 120.0).min(room / 3.0))
                }
                _ => Ramp::Sigmoid(between(&mut rng, 5.0, 30.0).min(room / 6.0)),
            };
            d.scale_to("entropy_mean", t0, r, ramp);
            vec!["entropy_mean"]
        }
        ("REWARD_HACKING", "held-out falls") => {
            t0 = held_out_falls(&mut d, &mut rng, t0);
            vec![]
        }
        ("LR_ANOMALY", "schedule restarted") => {
            t0 = lr_restart(&mut d, &mut rng, t0);
            vec![]
        }
        ("ENTROPY_COLLAPSE", _) => {
            let r = between(&mut rng, 0.04, 0.28);
            severity = entropy_severity(r);
            let ramp = Ramp::draw(&mut rng, 80.0);
            d.scale_to("entropy_mean", t0, r, ramp);
            vec!["entropy_mean"]
        }
        ("TRUNCATION_COLLAPSE", _) => {
            not_root = Some("LENGTH_EXPLOITATION");
            inject(&mut d, &mut rng, code, variant, t0)
        }
        _ => inject(&mut d, &mut rng, code, variant, t0),
    };
    let run = finish(d, &mut rng);
    // the healthy drift goes on under the injected fall, so the true ratio (end against the
    // run's start, what the thresholds are documented on) is read off the finished series
    if code == "ENTROPY_COLLAPSE" && severity.is_some() {
        if let Some(xs) = run.series("entropy_mean") {
            let tail: Vec<f64> = xs
                .iter()
                .rev()
                .copied()
                .filter(|v| !v.is_nan())
                .take(10)
                .collect();
            if let (Some(end), Some(start)) = (median(&tail), start_level(xs, t0)) {
                severity = entropy_severity(end / start);
            }
        }
    }
    let levels = columns
        .iter()
        .filter_map(|c| {
            let xs = run.series(c)?;
            Some((c.to_string(), start_level(xs, t0)?))
        })
        .collect();
    Labelled {
        run,
        code,
        variant,
        onset: t0,
        levels,
        severity,
        not_root,
    }
}

/// Critical below 10 % of the start, warn above 20 % (35 % and 15 % are the lines).
fn entropy_severity(ratio: f64) -> Option<Severity> {
    if ratio <= 0.1 {
        Some(Severity::Critical)
    } else if ratio >= 0.2 {
        Some(Severity::Warn)
    } else {
        None
    }
}

/// `count` grad-norm spikes of ×lo–hi from t0, `gaps` points apart, never three within
/// five points (that would be a sustained level, not spikes).
fn spikes(
    d: &mut Draft,
    rng: &mut Rng,
    t0: usize,
    count: usize,
    (lo, hi): (f64, f64),
    gaps: (usize, usize),
) {
    let base = local_level(d.get("grad_norm"), t0);
    let mut at = t0;
    let mut prev_gap = 3;
    for _ in 0..count {
        if at >= d.n {
            break;
        }
        d.col("grad_norm")[at] = base * between(rng, lo, hi);
        let gap = rng.range(if prev_gap == 2 { 3 } else { gaps.0 }, gaps.1 + 1);
        prev_gap = gap;
        at += gap;
    }
}

fn early_truncation(d: &mut Draft, rng: &mut Rng, t0: usize) {
    let start = between(rng, 0.6, 0.8);
    let end = between(rng, 0.985, 1.0);
    let ramp = Ramp::Linear(between(rng, 8.0, (50 - t0).max(10) as f64));
    let nz = d.nz;
    let cap = d.cap;
    for i in 0..d.n {
        let r = if i < t0 {
            0.0
        } else {
            ramp.at((i - t0) as f64)
        };
        let share = start + (end - start) * r;
        let v = (share + 0.02 * nz * (1.0 - r * 0.9) * rng.normal()).clamp(0.0, 1.0);
        d.col("truncation_rate")[i] = v;
        d.col("completion_len_mean")[i] = cap * (0.6 + 0.35 * v) * (1.0 + 0.02 * rng.normal());
        d.col("completion_len_max")[i] = cap;
    }
}

fn length_with_reward(d: &mut Draft, rng: &mut Rng, t0: usize) {
    let ratio = between(rng, 2.1, 2.4);
    let shapes = [
        Ramp::Step,
        Ramp::Linear(between(rng, 10.0, 60.0)),
        Ramp::Approach(between(rng, 3.0, 15.0)),
    ];
    let ramp = pick(rng, &shapes);
    let local = local_level(d.get("completion_len_mean"), t0);
    // the cap sits where 37 % of completions reach it
    d.cap = (local * ratio / between(rng, 0.6, 0.7)).round();
    let cap = d.cap;
    let f = ratio.ln();
    d.apply("completion_len_mean", t0, |v, k| v * (f * ramp.at(k)).exp());
    d.apply("completion_len_max", 0, |v, _| v.min(cap));
    d.apply("completion_len_max", t0, |_, _| cap);
    let hits = between(rng, 0.33, 0.42);
    d.shift_to("truncation_rate", t0, hits, ramp, 0.0, 1.0);
    // the reward rises by a healthy amount over the same points
    let sigma = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / d.n as f64).sqrt();
    let gain = between(rng, 4.0, 8.0) * sigma;
    for i in t0..d.n {
        d.reward_clean[i] += gain * ramp.at((i - t0) as f64);
    }
    d.set_reward(rng);
}

fn eos_collapse(d: &mut Draft, rng: &mut Rng, t0: usize) {
    let trunc = d.cols.remove("truncation_rate").unwrap_or_default();
    let eos: Vec<f64> = trunc
        .iter()
        .map(|t| (1.0 - t - 0.005).clamp(0.0, 1.0))
        .collect();
    *d.col("eos_rate") = eos;
    let ramp = Ramp::draw(rng, 30.0);
    d.shift_to("eos_rate", t0, between(rng, 0.005, 0.02), ramp, 0.0, 1.0);
    let cap = d.cap;
    let target = cap * between(rng, 0.9, 0.99);
    let local = local_level(d.get("completion_len_mean"), t0);
    let f = (target / local).ln();
    d.apply("completion_len_mean", t0, |v, k| {
        (v * (f * ramp.at(k)).exp()).min(cap)
    });
    d.apply("completion_len_max", t0, |_, _| cap);
}

/// The held-out metric falls from an evaluation point while the train reward keeps rising;
/// returns the onset (that evaluation).
fn held_out_falls(d: &mut Draft, rng: &mut Rng, t0: usize) -> usize {
    // enough evaluations before the fall to know the metric's noise, and after it to see it
    let every = rng.range(10, 51).min(d.n / 40).max(10);
    let gaps = if d.n / every >= 45 {
        rng.range(0, 3)
    } else {
        0
    };
    d.set_evals(rng, every, gaps);
    let e = d.evals.len();
    let k = d
        .evals
        .iter()
        .position(|&i| i >= t0)
        .unwrap_or(e)
        .clamp(16, e.saturating_sub(10).max(16))
        .min(e - 1);
    let t0 = d.evals[k];
    let sigma = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / d.n as f64).sqrt();
    let boost = between(rng, 1.0, 3.0) * sigma;
    let ramp_r = Ramp::Linear(between(rng, 20.0, 100.0));
    for i in t0..d.n {
        d.reward_clean[i] += boost * ramp_r.at((i - t0) as f64);
    }
    d.set_reward(rng);
    let col = d.eval_col;
    let xs = d.get(col);
    let before: Vec<f64> = d.evals[..k].iter().map(|&i| xs[i]).collect();
    let noise = {
        let diffs: Vec<f64> = before.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
        median(&diffs).unwrap_or(0.0) * 1.4826 / std::f64::consts::SQRT_2
    };
    let at_t0 = xs[t0];
    let gained = at_t0 - before[..3].iter().sum::<f64>() / 3.0;
    let fall = (between(rng, 6.0, 12.0) * noise).max(between(rng, 0.5, 1.0) * gained.max(0.0));
    // from the onset the held-out metric no longer follows the train reward: it declines
    // from its level there and stays down
    let ramp = Ramp::Linear(every as f64 * between(rng, 2.0, 8.0));
    let level = d.eval_offset + d.eval_share * (d.reward_clean[t0] - d.r0);
    let evals: Vec<usize> = d.evals.iter().copied().filter(|&i| i > t0).collect();
    for i in evals {
        let v = level - fall * ramp.at((i - t0) as f64) + d.eval_noise[i];
        d.col(col)[i] = v;
    }
    t0
}

/// The schedule restarts from its peak (or re-warms) once the rate has decayed to ≤ 60 %
/// of it; returns the onset.
fn lr_restart(d: &mut Draft, rng: &mut Rng, t0: usize) -> usize {
    let lr = d.get("lr").to_vec();
    let peak = lr.iter().copied().fold(0.0, f64::max);
    let decayed = (1..d.n).find(|&i| lr[i] < lr[i - 1] && lr[i] <= 0.6 * peak);
    let t0 = match decayed {
        Some(p) => t0.max(p),
        None => {
            // no decay in this shape: give it a linear one
            let n = d.n;
            let l = d.col("lr");
            for (i, v) in l.iter_mut().enumerate() {
                *v = peak * (1.0 - 0.9 * i as f64 / n as f64);
            }
            t0.max(n / 2)
        }
    }
    .min(d.n - 20);
    let rewarm = if rng.uniform() < 0.5 {
        0
    } else {
        rng.range(3, 21)
    };
    let rest = (d.n - t0) as f64;
    d.apply("lr", t0, |_, k| {
        let w = if rewarm > 0 {
            ((k + 1.0) / rewarm as f64).min(1.0)
        } else {
            1.0
        };
        peak * w * (0.1 + 0.9 * (1.0 - k / rest))
    });
    t0
}

/// The signatures of `synth::INJECTIONS`, each with forms of its own; returns the
/// level-type columns the injection changes.
fn inject(d: &mut Draft, rng: &mut Rng, code: &str, variant: &str, t0: usize) -> Vec<&'static str> {
    let n = d.n;
    match code {
        "NAN_INF" => {
            match rng.range(0, 3) {
                0 => {
                    d.nonfinite.push(("loss".into(), t0));
                    for _ in 0..rng.range(0, 5) {
                        let at = t0 + rng.range(1, 20);
                        if at < n {
                            d.nonfinite.push(("loss".into(), at));
                        }
                    }
                }
                1 => {
                    d.nonfinite.push(("grad_norm".into(), t0));
                    for k in 1..rng.range(2, 6) {
                        if t0 + k < n {
                            d.nonfinite.push(("kl_mean".into(), t0 + k));
                        }
                    }
                }
                _ => {
                    let c = d.col("nan_count");
                    for v in c.iter_mut() {
                        *v = 0.0;
                    }
                    c[t0] = rng.range(1, 50) as f64;
                    for _ in 0..rng.range(0, 4) {
                        let at = t0 + rng.range(1, 40);
                        if at < n {
                            c[at] = rng.range(1, 10) as f64;
                        }
                    }
                }
            }
            vec![]
        }
        "GRAD_NORM_SPIKE" => {
            let count = rng.range(3, 13);
            spikes(d, rng, t0, count, (8.0, 60.0), (3, 12));
            vec![]
        }
        "GRAD_EXPLOSION" => {
            let r = between(rng, 8.0, 60.0);
            let ramp = Ramp::draw(rng, 40.0);
            d.scale_to("grad_norm", t0, r, ramp);
            vec!["grad_norm"]
        }
        "GRAD_VANISHING" => {
            let r = 10f64.powf(between(rng, -4.0, -2.4));
            let ramp = Ramp::draw(rng, 40.0);
            d.scale_to("grad_norm", t0, r, ramp);
            vec!["grad_norm"]
        }
        "KL_BLOWUP" => {
            let kl = d.get("kl_mean");
            let (start, local) = (start_level(kl, t0).unwrap_or(kl[t0]), local_level(kl, t0));
            let mut target = local * between(rng, 5.0, 40.0);
            if local < 0.0125 {
                // below the runaway floor the documented line is the absolute one
                target = target.max(between(rng, 0.6, 2.0));
            }
            let shapes = [
                Ramp::Step,
                Ramp::Linear(between(rng, 10.0, 45.0)),
                Ramp::Approach(between(rng, 3.0, 12.0)),
            ];
            let ramp = pick(rng, &shapes);
            d.scale_to("kl_mean", t0, target / start, ramp);
            vec!["kl_mean"]
        }
        "ENTROPY_EXPLOSION" => {
            let r = between(rng, 2.4, 6.0);
            let ramp = Ramp::draw(rng, 80.0);
            d.scale_to("entropy_mean", t0, r, ramp);
            vec!["entropy_mean"]
        }
        "ZERO_VARIANCE_GROUPS" => {
            let local = local_level(d.get("zero_variance_group_frac"), t0);
            let target = between(rng, (local + 0.3).max(0.68), 0.99);
            let ramp = Ramp::draw(rng, 50.0);
            d.shift_to("zero_variance_group_frac", t0, target, ramp, 0.0, 1.0);
            if d.has("adv_zero_frac") {
                d.shift_to("adv_zero_frac", t0, target, ramp, 0.0, 1.0);
            }
            let f = ((1.0 - target) / (1.0 - local)).sqrt().ln();
            d.apply("adv_std", t0, |v, k| v * (f * ramp.at(k)).exp());
            vec!["zero_variance_group_frac", "adv_zero_frac"]
        }
        "ADVANTAGE_COLLAPSE" => {
            let r = between(rng, 0.01, 0.15);
            let ramp = Ramp::draw(rng, 50.0);
            d.scale_to("adv_std", t0, r, ramp);
            vec!["adv_std"]
        }
        "CLIP_FRACTION_HIGH" => {
            let target = between(rng, 0.36, 0.8);
            let ramp = Ramp::draw(rng, 30.0);
            d.shift_to("clip_fraction", t0, target, ramp, 0.0, 1.0);
            vec!["clip_fraction"]
        }
        "RATIO_EXPLOSION" => {
            let target = between(rng, 1.8, 6.0);
            let ramp = Ramp::draw(rng, 30.0);
            d.shift_to("ratio_p95", t0, target, ramp, 0.0, f64::INFINITY);
            d.shift_to(
                "ratio_mean",
                t0,
                1.0 + 0.15 * (target - 1.0),
                ramp,
                0.0,
                f64::INFINITY,
            );
            vec!["ratio_p95"]
        }
        "VALUE_FUNCTION_FAILURE" => {
            let form = rng.range(0, 3);
            let ramp = Ramp::draw(rng, 40.0);
            if form != 1 {
                let target = between(rng, -2.0, -0.25);
                d.shift_to("value_explained_variance", t0, target, ramp, -10.0, 1.0);
            }
            if form != 0 {
                // against the documented post-grace level (points 50–80)
                let vl = d.get("value_loss");
                let post = median(&vl[50..80]).unwrap_or(vl[t0]);
                let f = (post * between(rng, 6.0, 40.0) / local_level(vl, t0)).ln();
                d.apply("value_loss", t0, |v, k| v * (f * ramp.at(k)).exp());
            }
            vec![]
        }
        "LR_ANOMALY" => {
            // zero mid-schedule: for the rest of the run, or a stretch of 3–40 points
            let until = if rng.uniform() < 0.5 {
                n
            } else {
                (t0 + rng.range(3, 41)).min(n)
            };
            for v in &mut d.col("lr")[t0..until] {
                *v = 0.0;
            }
            vec![]
        }
        "REWARD_STALL" => {
            // a steady climb that stops dead at t0 (quiet enough for the climb to be seen)
            let gain = between(rng, 0.3, 0.7) * if d.algo == Algo::Grpo { 1.0 } else { 1.5 };
            let slope = gain / t0 as f64;
            let sigma = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
            let quiet = (slope * 100.0 / 3.0 / sigma).min(1.0);
            let r0 = d.r0.min(0.25);
            d.r0 = r0;
            for i in 0..n {
                d.reward_clean[i] = r0 + slope * i.min(t0) as f64;
                d.reward_noise[i] *= quiet;
            }
            d.set_reward(rng);
            vec![]
        }
        "REWARD_SATURATION" => {
            let ramp = Ramp::draw(rng, 40.0);
            let top = between(rng, 0.99, 1.0);
            let local = d.reward_clean[t0];
            for i in t0..n {
                let r = ramp.at((i - t0) as f64);
                d.reward_clean[i] = local + (top - local) * r;
                d.reward_noise[i] *= 1.0 - 0.9 * r;
            }
            d.set_reward(rng);
            let sd = d.get("reward_std");
            let early = start_level(sd, t0).unwrap_or(0.4);
            let keep = between(rng, 0.02, 0.1) * early / local_level(sd, t0);
            d.apply("reward_std", t0, |v, k| v * keep.powf(ramp.at(k)));
            let zv = between(rng, 0.93, 1.0);
            d.shift_to("zero_variance_group_frac", t0, zv, ramp, 0.0, 1.0);
            if d.has("adv_zero_frac") {
                d.shift_to("adv_zero_frac", t0, zv, ramp, 0.0, 1.0);
            }
            d.apply("adv_std", t0, |v, k| v * (0.15f64.ln() * ramp.at(k)).exp());
            vec![]
        }
        "REWARD_COLLAPSE" => {
            let ramp = Ramp::draw(rng, 40.0);
            let sigma = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
            let local = d.reward_clean[t0];
            let start = d.reward_clean[5..t0.max(6)]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let mut drop = (between(rng, 0.6, 1.2) * (local - start))
                .max(between(rng, 7.0, 12.0) * sigma)
                .max(0.1 * local.abs());
            if d.algo == Algo::Grpo {
                drop = drop.min(local - 0.01);
                // a 0–1 reward near its floor cannot fall 8 σ/√3 of a noisy run: quieter
                // noise keeps the fall past the documented line
                let line = 8.0 * sigma / 3f64.sqrt();
                if drop < 1.3 * line {
                    let q = drop / (1.3 * line);
                    for v in d.reward_noise.iter_mut() {
                        *v *= q;
                    }
                }
            }
            for i in t0..n {
                d.reward_clean[i] = local - drop * ramp.at((i - t0) as f64);
            }
            d.set_reward(rng);
            vec!["reward_mean"]
        }
        "REWARD_HACKING" => {
            // length-driven reward (the held-out fall is `held_out_falls`)
            d.samples_per_step = rng.range(12, 17);
            let ramp = Ramp::Linear(between(rng, 5.0, 20.0));
            d.length_reward = Some((t0, between(rng, 0.75, 0.95), ramp));
            let longer = between(rng, 0.1, 0.3);
            d.apply("completion_len_mean", t0, |v, k| {
                v * (1.0 + longer * ramp.at(k))
            });
            let sigma = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
            let rise = between(rng, 1.0, 3.0) * sigma;
            for i in t0..n {
                d.reward_clean[i] += rise * ramp.at((i - t0) as f64);
            }
            d.set_reward(rng);
            vec![]
        }
        "LENGTH_EXPLOITATION" => {
            let r = between(rng, 2.8, 5.0);
            let shapes = [
                Ramp::Linear(between(rng, 15.0, 70.0)),
                Ramp::Approach(between(rng, 4.0, 20.0)),
                Ramp::FastStart(between(rng, 15.0, 60.0)),
            ];
            let ramp = pick(rng, &shapes);
            let local = local_level(d.get("completion_len_mean"), t0);
            let peak = local * r * 1.3;
            while d.cap < peak {
                d.cap *= 2.0;
            }
            let f = r.ln();
            d.apply("completion_len_mean", t0, |v, k| v * (f * ramp.at(k)).exp());
            let cap = d.cap;
            d.apply("completion_len_max", t0, |v, k| {
                (v * (f * ramp.at(k)).exp()).min(cap)
            });
            let hits = between(rng, 0.02, 0.1);
            d.apply("truncation_rate", t0, |v, k| v + hits * ramp.at(k));
            vec!["completion_len_mean"]
        }
        "TRUNCATION_COLLAPSE" => {
            let ramp = Ramp::draw(rng, 30.0);
            let target = between(rng, 0.6, 1.0);
            d.shift_to("truncation_rate", t0, target, ramp, 0.0, 1.0);
            let cap = d.cap;
            let local = local_level(d.get("completion_len_mean"), t0);
            let f = (cap * between(rng, 0.8, 0.97) / local).ln();
            d.apply("completion_len_mean", t0, |v, k| {
                (v * (f * ramp.at(k)).exp()).min(cap)
            });
            d.apply("completion_len_max", t0, |_, _| cap);
            vec!["truncation_rate"]
        }
        "REPETITION_LOOPS" => {
            let start = start_level(d.get("repetition_rate"), t0).unwrap_or(0.02);
            let target = between(rng, 0.35, 0.9).max(3.5 * start);
            let ramp = Ramp::draw(rng, 50.0);
            d.shift_to("repetition_rate", t0, target, ramp, 0.0, 1.0);
            let loops = between(rng, 0.1, 0.3);
            d.apply("truncation_rate", t0, |v, k| {
                (v + loops * ramp.at(k)).min(1.0)
            });
            vec!["repetition_rate"]
        }
        "REWARD_COMPONENT_DOMINANCE" if variant == "dead component" => {
            d.components = true;
            d.set_reward(rng);
            let name = pick(
                rng,
                &["reward_component.format", "reward_component.correctness"],
            );
            let value = match rng.range(0, 3) {
                0 => 0.0,
                1 => (d.get(name)[t0] * 100.0).round() / 100.0,
                _ => 1.0,
            };
            d.apply(name, t0, |_, _| value);
            let (f, c) = (
                d.get("reward_component.format").to_vec(),
                d.get("reward_component.correctness").to_vec(),
            );
            d.apply("reward_mean", t0, |_, _| 0.0);
            let r = d.col("reward_mean");
            for i in t0..n {
                r[i] = f[i] + c[i];
            }
            vec![]
        }
        "REWARD_COMPONENT_DOMINANCE" => {
            // opposite trends: format climbs while correctness falls, 4–12 σ per 100 points
            d.components = true;
            d.set_reward(rng);
            let sf = 0.01 * d.nz * d.scale;
            let sr = (d.reward_noise.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
            let sc = (sf * sf + sr * sr).sqrt();
            let end = (t0 + rng.range(120, 300)).min(n);
            let healthy_rise = (d.reward_clean[end - 1] - d.reward_clean[t0])
                * (1.0 - d.format_share)
                / (end - t0) as f64
                * 100.0;
            let up = between(rng, 4.0, 12.0) * sf / 100.0;
            let down = (healthy_rise.max(0.0) + between(rng, 4.0, 12.0) * sc) / 100.0;
            for i in t0..n {
                let k = (i.min(end) - t0) as f64;
                d.col("reward_component.format")[i] += up * k;
                d.col("reward_component.correctness")[i] -= down * k;
                let s =
                    d.get("reward_component.format")[i] + d.get("reward_component.correctness")[i];
                d.col("reward_mean")[i] = s;
            }
            vec![]
        }
        "THROUGHPUT_REGRESSION" => {
            let r = between(rng, 1.8, 5.0);
            let ramp = Ramp::draw(rng, 60.0);
            let f = r.ln();
            d.apply("step_time_s", t0, |v, k| v * (f * ramp.at(k)).exp());
            vec!["step_time_s"]
        }
        "LOGPROB_MISMATCH" => {
            let col = "extra.training/rollout_probs_diff_mean";
            let start = start_level(d.get(col), t0).unwrap_or(0.003);
            let r = between(rng, 4.0, 30.0).max(3e-3 / start);
            let ramp = Ramp::draw(rng, 40.0);
            d.scale_to(col, t0, r, ramp);
            vec!["extra.training/rollout_probs_diff_mean"]
        }
        _ => panic!("no out-of-sample injection for {code} / {variant}"),
    }
}

/// A healthy run drawn from `seed` (the evaluation's negatives).
pub fn healthy_run(seed: u64) -> RunInput {
    let mut rng = Rng::new(
        seed.wrapping_mul(0xA24B_AED4_963E_E407)
            .wrapping_add(0x5851_F42D),
    );
    let algo = if rng.uniform() < 0.5 {
        Algo::Grpo
    } else {
        Algo::Ppo
    };
    let n = rng.range(300, 3001);
    let d = healthy(&mut rng, algo, n);
    finish(d, &mut rng)
}

/// Issue-19 negative `which` of `NEGATIVES`, drawn from `seed`.
pub fn negative(which: usize, seed: u64) -> RunInput {
    let mut rng = Rng::new(
        seed.wrapping_mul(0x9FB2_1C65_1E98_DF25) ^ (which as u64 + 11).wrapping_mul(0xC2B2_AE35),
    );
    let algo = if which == 2 || rng.uniform() < 0.5 {
        Algo::Grpo
    } else {
        Algo::Ppo
    };
    let n = rng.range(if which == 2 { 700 } else { 400 }, 3001);
    let mut d = healthy(&mut rng, algo, n);
    match which {
        0 | 1 => {
            // a held-out metric with ~1 % spread, evaluated every 10–20 points
            let every = rng.range(10, 21);
            d.set_evals(&mut rng, every, 0);
            let e0 = between(&mut rng, 0.3, 0.7);
            let rise = if which == 0 {
                between(&mut rng, 0.02, 0.05)
            } else {
                between(&mut rng, 0.1, 0.2)
            };
            let depth = between(&mut rng, 0.02, 0.04) * e0;
            let width = if which == 0 {
                between(&mut rng, 30.0, 60.0)
            } else {
                between(&mut rng, 20.0, 40.0)
            };
            let at = rng.range(
                (n * 3 / 10).max(16 * every),
                (n * 7 / 10).max(16 * every + 1),
            );
            let spread = 0.01 * e0 * between(&mut rng, 0.8, 1.2);
            let mut eval = vec![f64::NAN; n];
            for &i in &d.evals {
                let u = i as f64 / n as f64;
                let k = i as f64 - at as f64;
                let dip = if (0.0..=width).contains(&k) {
                    depth * (std::f64::consts::PI * k / width).sin()
                } else {
                    0.0
                };
                eval[i] =
                    e0 * (1.0 + rise * (1.0 - (-3.0 * u).exp())) - dip + spread * rng.normal();
            }
            *d.col(d.eval_col) = eval;
        }
        _ => {
            // rises to 0.97 of its maximum of 1.0 by 20–40 % of the run and stays there
            let to = n as f64 * between(&mut rng, 0.2, 0.4);
            let r0 = d.r0;
            let sigma = between(&mut rng, 0.004, 0.01);
            for i in 0..n {
                d.reward_clean[i] = 0.97 - (0.97 - r0) * (-(i as f64) / (to / 4.0)).exp();
                d.reward_noise[i] = sigma * rng.normal();
            }
            d.set_reward(&mut rng);
            // groups of 8 at p = 0.97 are mostly all-correct
            for i in 0..n {
                let p = d.reward_clean[i].clamp(0.0, 1.0);
                let zv = (p.powi(8) + (1.0 - p).powi(8) + 0.02 * rng.normal()).clamp(0.0, 1.0);
                d.col("zero_variance_group_frac")[i] = zv;
                if d.has("adv_zero_frac") {
                    d.col("adv_zero_frac")[i] = zv;
                }
                d.col("adv_std")[i] = 0.9 * (1.0 - zv).sqrt() * (1.0 + 0.03 * rng.normal());
            }
        }
    }
    finish(d, &mut rng)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_span_the_promised_ranges() {
        let runs: Vec<RunInput> = (0..40).map(healthy_run).collect();
        let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
        assert!(lens.iter().all(|&n| (300..=3000).contains(&n)), "{lens:?}");
        assert!(lens.iter().any(|&n| n < 800) && lens.iter().any(|&n| n > 2000));
        let cadences: Vec<i64> = runs.iter().map(|r| r.steps[1] - r.steps[0]).collect();
        assert!(cadences.contains(&1) && cadences.iter().any(|&c| c > 1));
        assert!(
            runs.iter().any(|r| r.columns.contains_key("value_loss")),
            "PPO shapes"
        );
        assert!(
            runs.iter()
                .any(|r| r.columns.contains_key("zero_variance_group_frac")),
            "GRPO shapes"
        );
        // held-out metrics on their own cadence, with gaps (where there are enough)
        let mut with_gaps = 0;
        for r in &runs {
            let (_, c) = r
                .columns
                .iter()
                .find(|(k, _)| k.starts_with("extra.val") || k.starts_with("extra.eval"))
                .expect("a held-out metric");
            let at: Vec<usize> = (0..r.len()).filter(|&i| !c.values[i].is_nan()).collect();
            let gaps: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
            let step = *gaps.iter().min().unwrap();
            assert!((10..=50).contains(&step), "{step}");
            if gaps.iter().any(|&g| g > step) {
                with_gaps += 1;
            }
        }
        assert!(
            with_gaps >= 30,
            "{with_gaps} of 40 runs with missing evaluations"
        );
    }

    #[test]
    fn injections_start_at_their_onset_and_early_onsets_occur() {
        let all = cases();
        let mut early = 0;
        for (w, (code, variant, _)) in all.iter().enumerate() {
            for seed in 0..8 {
                let l = labelled(w, 7000 + seed);
                assert_eq!((l.code, l.variant), (*code, *variant));
                assert!(l.onset < l.run.len(), "{code} {variant}");
                if l.onset <= 50 {
                    early += 1;
                }
                for (c, start) in &l.levels {
                    assert!(start.is_finite(), "{code}: {c} start");
                }
            }
        }
        assert!(early > all.len(), "{early} early onsets");
    }

    #[test]
    fn the_issue_cases_carry_the_issue_numbers() {
        let at = |v: &str| cases().iter().position(|c| c.1 == v).unwrap();
        let l = labelled(at("early fall 0.39 → 0.023"), 7001);
        let h = l.run.series("entropy_mean").unwrap();
        assert!((l.levels[0].1 - 0.39).abs() < 0.03, "{:?}", l.levels);
        let end = median(&h[h.len() - 20..]).unwrap();
        assert!((end / 0.39 - 0.059).abs() < 0.03, "{end}");
        assert!(l.onset <= 40);

        let l = labelled(at("EOS collapse 0.98 → 0.01"), 7002);
        assert!(l.run.series("truncation_rate").is_none());
        let eos = l.run.series("eos_rate").unwrap();
        assert!(l.levels[0].1 > 0.95 && median(&eos[eos.len() - 20..]).unwrap() < 0.03);
        assert_eq!(l.not_root, Some("LENGTH_EXPLOITATION"));

        let l = labelled(at("early rise 60–80 % → 100 %"), 7003);
        assert!((0.55..0.85).contains(&l.levels[0].1), "{:?}", l.levels);
    }
}
