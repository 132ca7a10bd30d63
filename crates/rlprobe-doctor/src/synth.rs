//! Labelled synthetic runs for evaluating the detectors: healthy GRPO and PPO shapes
//! (noisy rewards, warm-up schedules, periodic eval spikes in step time, logging every
//! step or every 10) and each signature injected at a known point with realistic noise.
//! Used by `tests/evaluation.rs` and by `examples/evaluate.rs`, which prints the table in
//! docs/doctor.md.

use crate::input::{Column, RunInput, Samples};

/// SplitMix64 with Box–Muller normals: deterministic per seed, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo) as u64) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Grpo,
    Ppo,
}

/// One healthy run's shape.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub algo: Algo,
    pub points: usize,
    pub log_every: i64,
    /// Noise multiplier (1 = typical, ~2 = a noisy small-batch run).
    pub noise: f64,
    /// Learning-rate warm-up, in points (0: none).
    pub warmup: usize,
    /// A slow eval/checkpoint step every this many points (0: none).
    pub eval_every: usize,
    /// One policy update per batch: clip fraction ≡ 0 and ratio ≡ 1 (GRPO only).
    pub one_update: bool,
    pub samples: bool,
}

impl Shape {
    /// The `i`-th of a spread of healthy shapes.
    pub fn variant(i: u64, rng: &mut Rng) -> Shape {
        let algo = if i % 3 == 2 { Algo::Ppo } else { Algo::Grpo };
        Shape {
            algo,
            points: [400, 600, 800][(i / 3 % 3) as usize],
            log_every: if i % 4 == 1 { 10 } else { 1 },
            noise: if i % 5 == 3 {
                1.8
            } else {
                1.0 + 0.3 * rng.uniform()
            },
            warmup: if i.is_multiple_of(2) { 20 } else { 0 },
            eval_every: if i.is_multiple_of(3) { 50 } else { 0 },
            one_update: algo == Algo::Grpo && i % 7 == 4,
            samples: i % 2 == 1,
        }
    }
}

/// A run under construction: columns by name, one value per point, NaN = missing.
pub struct Builder {
    pub shape: Shape,
    pub cols: Vec<(String, Vec<f64>)>,
    pub nonfinite: Vec<(String, usize)>,
    pub samples: Option<Samples>,
}

impl Builder {
    pub fn col(&mut self, name: &str) -> &mut Vec<f64> {
        let pos = match self.cols.iter().position(|(n, _)| n == name) {
            Some(p) => p,
            None => {
                self.cols
                    .push((name.to_string(), vec![f64::NAN; self.shape.points]));
                self.cols.len() - 1
            }
        };
        &mut self.cols[pos].1
    }

    pub fn has(&self, name: &str) -> bool {
        self.cols.iter().any(|(n, _)| n == name)
    }

    /// Applies `f(value, points since t0)` from point t0 on.
    pub fn from(&mut self, name: &str, t0: usize, f: impl Fn(f64, f64) -> f64) {
        let c = self.col(name);
        for (i, v) in c.iter_mut().enumerate().skip(t0) {
            if !v.is_nan() {
                *v = f(*v, (i - t0) as f64);
            }
        }
    }

    pub fn build(self) -> RunInput {
        let steps: Vec<i64> = (0..self.shape.points as i64)
            .map(|i| i * self.shape.log_every)
            .collect();
        let mut run = RunInput::new(steps);
        for (name, values) in self.cols {
            let nonfinite: Vec<usize> = self
                .nonfinite
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, i)| *i)
                .collect();
            let mut c = Column { values, nonfinite };
            for &i in &c.nonfinite {
                c.values[i] = f64::NAN;
            }
            run.insert(&name, c);
        }
        run.samples = self.samples;
        run
    }
}

/// A healthy run of `shape`.
pub fn healthy(shape: Shape, rng: &mut Rng) -> Builder {
    let n = shape.points;
    let nz = shape.noise;
    let mut b = Builder {
        shape,
        cols: Vec::new(),
        nonfinite: Vec::new(),
        samples: None,
    };
    let r0 = 0.2 + 0.15 * rng.uniform();
    let gain = 0.25 + 0.1 * rng.uniform();
    let tau = n as f64 / 4.0;
    let peak_lr = 1e-6 * (1.0 + rng.uniform());
    let h0 = if shape.algo == Algo::Ppo {
        1.2
    } else {
        0.6 + 0.4 * rng.uniform()
    };
    let g0 = 0.2 + 0.6 * rng.uniform();
    let len0 = 180.0 + 150.0 * rng.uniform();
    let t0 = 20.0 + 20.0 * rng.uniform();
    let mut samples = Samples::default();
    for i in 0..n {
        let u = i as f64 / n as f64;
        let t = i as f64;
        let lr = if shape.warmup > 0 && i < shape.warmup {
            peak_lr * (i + 1) as f64 / shape.warmup as f64
        } else {
            let p = (i - shape.warmup.min(i)) as f64 / (n - shape.warmup) as f64;
            peak_lr * (0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * p).cos()))
        };
        let reward = r0 + gain * (1.0 - (-t / tau).exp()) + 0.12 * u + 0.03 * nz * rng.normal();
        let reward_std = (0.3 - 0.05 * u) * (1.0 + 0.05 * nz * rng.normal());
        let zvf = (0.15 + 0.1 * u + 0.04 * nz * rng.normal()).clamp(0.0, 1.0);
        let kl = (0.002 + 0.04 * u.sqrt()) * (0.1 * nz * rng.normal()).exp();
        let entropy =
            h0 * (0.6 + 0.4 * (-t / (n as f64 / 3.0)).exp()) * (1.0 + 0.03 * nz * rng.normal());
        let spike = if rng.uniform() < 0.005 { 3.0 } else { 1.0 };
        let grad = g0 * (1.0 + 0.3 * u) * (0.25 * rng.normal()).exp() * spike;
        let len = len0 * (1.0 + 0.6 * u) * (1.0 + 0.05 * nz * rng.normal());
        let trunc = (0.02 + 0.02 * u + 0.01 * nz * rng.normal()).max(0.0);
        let eval = shape.eval_every > 0 && i % shape.eval_every == shape.eval_every - 1;
        let step_time =
            30.0 * (1.0 + 0.1 * u) * (0.05 * rng.normal()).exp() * if eval { 1.8 } else { 1.0 };
        let format = 0.15 + 0.05 * u + 0.01 * nz * rng.normal();
        b.col("lr")[i] = lr;
        b.col("reward_mean")[i] = reward;
        b.col("reward_std")[i] = reward_std;
        b.col("reward_max")[i] = 1.0;
        b.col("reward_component.format")[i] = format;
        b.col("reward_component.correctness")[i] = reward - format;
        b.col("kl_mean")[i] = kl;
        b.col("entropy_mean")[i] = entropy;
        b.col("grad_norm")[i] = grad;
        b.col("loss")[i] = 0.01 * rng.normal();
        b.col("completion_len_mean")[i] = len;
        b.col("completion_len_max")[i] = 1024.0_f64.min(len * 2.5 * (1.0 + 0.05 * rng.normal()));
        b.col("truncation_rate")[i] = trunc;
        b.col("repetition_rate")[i] = (0.02 + 0.005 * nz * rng.normal()).max(0.0);
        b.col("step_time_s")[i] = step_time;
        b.col("nan_count")[i] = 0.0;
        b.col("extra.training/rollout_probs_diff_mean")[i] =
            0.004 * (0.1 * nz * rng.normal()).exp();
        if i % 10 == 9 {
            b.col("extra.val/accuracy")[i] = r0
                + 0.1
                + 0.8 * gain * (1.0 - (-t / tau).exp())
                + 0.05 * u
                + 0.015 * nz * rng.normal();
        }
        match shape.algo {
            Algo::Grpo => {
                b.col("zero_variance_group_frac")[i] = zvf;
                b.col("adv_zero_frac")[i] = zvf;
                b.col("adv_std")[i] = 0.95 * (1.0 - zvf).sqrt() * (1.0 + 0.03 * rng.normal());
                let (clip, ratio, p95) = if shape.one_update {
                    (0.0, 1.0, 1.0)
                } else {
                    (
                        (0.08 + 0.02 * nz * rng.normal()).max(0.0),
                        1.0 + 0.005 * rng.normal(),
                        1.15 + 0.02 * nz * rng.normal(),
                    )
                };
                b.col("clip_fraction")[i] = clip;
                b.col("ratio_mean")[i] = ratio;
                b.col("ratio_p95")[i] = p95;
            }
            Algo::Ppo => {
                b.col("adv_std")[i] = 0.5 * (1.0 - 0.2 * u) * (1.0 + 0.05 * nz * rng.normal());
                b.col("clip_fraction")[i] = (0.12 + 0.02 * nz * rng.normal()).max(0.0);
                b.col("ratio_mean")[i] = 1.0 + 0.005 * rng.normal();
                b.col("ratio_p95")[i] = 1.2 + 0.03 * nz * rng.normal();
                b.col("value_loss")[i] =
                    (1.0 * (-t / (n as f64 / 5.0)).exp() + 0.2) * (0.1 * nz * rng.normal()).exp();
                b.col("value_explained_variance")[i] =
                    (-0.5 + 1.2 * (1.0 - (-t / t0).exp())).min(0.75) + 0.05 * nz * rng.normal();
            }
        }
        if shape.samples {
            let step = i as i64 * shape.log_every;
            for k in 0..8 {
                let l = (len * (0.3 * rng.normal()).exp()).min(1024.0);
                let r = (reward + reward_std * rng.normal()).clamp(0.0, 1.0);
                samples.push(
                    step,
                    &format!("{step}-{k}"),
                    r,
                    l.round(),
                    Some(l >= 1024.0),
                );
            }
        }
    }
    if shape.samples {
        b.samples = Some(samples);
    }
    b
}

/// The signatures the evaluation injects: (code, variant, only for this algorithm).
pub const INJECTIONS: &[(&str, &str, Option<Algo>)] = &[
    ("NAN_INF", "nan loss", None),
    ("GRAD_NORM_SPIKE", "repeated spikes", None),
    ("GRAD_EXPLOSION", "geometric growth", None),
    ("GRAD_VANISHING", "decay to nothing", None),
    ("KL_BLOWUP", "runaway", None),
    ("ENTROPY_COLLAPSE", "exponential decay", None),
    ("ENTROPY_EXPLOSION", "growth", None),
    ("ZERO_VARIANCE_GROUPS", "groups go flat", Some(Algo::Grpo)),
    ("ADVANTAGE_COLLAPSE", "advantages vanish", Some(Algo::Ppo)),
    ("CLIP_FRACTION_HIGH", "large updates", Some(Algo::Ppo)),
    ("RATIO_EXPLOSION", "off-policy ratio", Some(Algo::Ppo)),
    ("VALUE_FUNCTION_FAILURE", "critic diverges", Some(Algo::Ppo)),
    ("LR_ANOMALY", "zero mid-schedule", None),
    ("LR_ANOMALY", "schedule restarted", None),
    ("REWARD_STALL", "learning stops", None),
    ("REWARD_SATURATION", "all correct", Some(Algo::Grpo)),
    ("REWARD_COLLAPSE", "reward falls", None),
    ("REWARD_HACKING", "held-out falls", None),
    ("REWARD_HACKING", "length-driven reward", None),
    ("LENGTH_EXPLOITATION", "length runs away", None),
    ("TRUNCATION_COLLAPSE", "nothing terminates", None),
    ("REPETITION_LOOPS", "loops", None),
    ("REWARD_COMPONENT_DOMINANCE", "dead component", None),
    ("REWARD_COMPONENT_DOMINANCE", "opposite trends", None),
    ("THROUGHPUT_REGRESSION", "steps slow down", None),
    ("LOGPROB_MISMATCH", "engine drift", None),
];

/// A labelled run: injection `which` of `INJECTIONS` into a healthy shape drawn from
/// `seed`. Returns the run and the injection's onset point.
pub fn labelled(which: usize, seed: u64) -> (RunInput, usize) {
    let (code, variant, only) = INJECTIONS[which];
    let mut rng = Rng::new(seed.wrapping_mul(1000).wrapping_add(which as u64));
    let mut shape = Shape::variant(seed, &mut rng);
    if let Some(a) = only {
        shape.algo = a;
    }
    shape.one_update = false;
    if variant == "length-driven reward" {
        shape.samples = true;
    }
    let mut b = healthy(shape, &mut rng);
    let n = shape.points;
    // late enough for a baseline, early enough to leave room to persist
    let t0 = match code {
        "REWARD_STALL" => rng.range(n / 8, n / 5),
        _ => rng.range(n * 35 / 100, n * 60 / 100),
    };
    inject(&mut b, code, variant, t0, &mut rng);
    (b.build(), t0)
}

fn approach(target: f64, tau: f64) -> impl Fn(f64, f64) -> f64 {
    move |v, d| v + (target - v) * (1.0 - (-d / tau).exp())
}

/// Injects one signature from point t0.
pub fn inject(b: &mut Builder, code: &str, variant: &str, t0: usize, rng: &mut Rng) {
    let n = b.shape.points;
    match (code, variant) {
        ("NAN_INF", _) => {
            for k in [0, 3, 4, 9] {
                if t0 + k < n {
                    b.nonfinite.push(("loss".into(), t0 + k));
                }
            }
            b.nonfinite.push(("grad_norm".into(), t0));
        }
        ("GRAD_NORM_SPIKE", _) => {
            let g = b.col("grad_norm");
            for k in [0, 7, 19, 33, 50] {
                if t0 + k < n {
                    g[t0 + k] *= 8.0 + 12.0 * rng.uniform();
                }
            }
        }
        ("GRAD_EXPLOSION", _) => b.from("grad_norm", t0, |v, d| v * (0.12 * d).exp().min(100.0)),
        ("GRAD_VANISHING", _) => b.from("grad_norm", t0, |v, d| v * (-0.25 * d).exp().max(1e-4)),
        ("KL_BLOWUP", _) => b.from("kl_mean", t0, |v, d| v * (0.06 * d).exp().min(500.0)),
        ("ENTROPY_COLLAPSE", _) => b.from("entropy_mean", t0, |v, d| {
            v * (0.03 + 0.97 * (-d / 12.0).exp())
        }),
        ("ENTROPY_EXPLOSION", _) => b.from("entropy_mean", t0, |v, d| {
            v * (1.0 + 3.0 * (1.0 - (-d / 15.0).exp()))
        }),
        ("ZERO_VARIANCE_GROUPS", _) => {
            b.from("zero_variance_group_frac", t0, approach(0.97, 10.0));
            b.from("adv_zero_frac", t0, approach(0.97, 10.0));
            b.from("adv_std", t0, |v, d| v * (0.15 + 0.85 * (-d / 10.0).exp()));
        }
        ("ADVANTAGE_COLLAPSE", _) => {
            b.from("adv_std", t0, |v, d| v * (0.02 + 0.98 * (-d / 10.0).exp()))
        }
        ("CLIP_FRACTION_HIGH", _) => b.from("clip_fraction", t0, approach(0.55, 8.0)),
        ("RATIO_EXPLOSION", _) => {
            b.from("ratio_p95", t0, approach(4.0, 8.0));
            b.from("ratio_mean", t0, approach(1.4, 8.0));
        }
        ("VALUE_FUNCTION_FAILURE", _) => {
            b.from("value_explained_variance", t0, |v, d| {
                v - 1.5 * (1.0 - (-d / 10.0).exp())
            });
            b.from("value_loss", t0, |v, d| {
                v * (1.0 + 10.0 * (1.0 - (-d / 10.0).exp()))
            });
        }
        ("LR_ANOMALY", "zero mid-schedule") => b.from("lr", t0, |_, _| 0.0),
        ("LR_ANOMALY", _) => {
            let peak = b
                .col("lr")
                .iter()
                .copied()
                .filter(|v| !v.is_nan())
                .fold(0.0, f64::max);
            let rest = (n - t0) as f64;
            b.from("lr", t0, move |_, d| {
                peak * (0.1 + 0.45 * (1.0 + (std::f64::consts::PI * d / rest).cos()))
            });
        }
        ("REWARD_STALL", _) => {
            let r = b.col("reward_mean");
            let level = (t0.saturating_sub(5)..t0).map(|i| r[i]).sum::<f64>() / 5.0;
            let noise: Vec<f64> = (0..n)
                .map(|_| 0.03 * b.shape.noise * rng.normal())
                .collect();
            let r = b.col("reward_mean");
            for i in t0..n {
                r[i] = level + noise[i];
            }
        }
        ("REWARD_SATURATION", _) => {
            b.from("reward_mean", t0, approach(0.99, 10.0));
            b.from("reward_std", t0, |v, d| {
                v * (0.02 + 0.98 * (-d / 10.0).exp())
            });
            b.from("zero_variance_group_frac", t0, approach(0.98, 10.0));
            b.from("adv_zero_frac", t0, approach(0.98, 10.0));
            b.from("adv_std", t0, |v, d| v * (0.1 + 0.9 * (-d / 10.0).exp()));
        }
        ("REWARD_COLLAPSE", _) => {
            b.from("reward_mean", t0, |v, d| v * (0.3 + 0.7 * (-d / 5.0).exp()));
            b.from("reward_component.correctness", t0, |v, d| {
                v * (0.2 + 0.8 * (-d / 5.0).exp())
            });
        }
        ("REWARD_HACKING", "held-out falls") => {
            b.from("extra.val/accuracy", t0, |v, d| v - 0.004 * d);
            b.from("reward_mean", t0, |v, d| v + 0.001 * d);
        }
        ("REWARD_HACKING", _) => {
            // reward now follows length within each step, and the mean climbs with it
            b.from("reward_mean", t0, |v, d| {
                v + 0.1 * (1.0 - (-d / 30.0).exp())
            });
            b.from("completion_len_mean", t0, |v, d| {
                v * (1.0 + 0.3 * (1.0 - (-d / 30.0).exp()))
            });
            let step0 = t0 as i64 * b.shape.log_every;
            if let Some(s) = b.samples.as_mut() {
                for k in 0..s.len() {
                    if s.step[k] >= step0 {
                        let z = (s.completion_len[k] / 250.0).ln();
                        s.reward[k] = (0.5 + 0.4 * z + 0.05 * rng.normal()).clamp(0.0, 1.0);
                    }
                }
            }
        }
        ("LENGTH_EXPLOITATION", _) => b.from("completion_len_mean", t0, |v, d| {
            v * (0.02 * d).exp().min(4.0)
        }),
        ("TRUNCATION_COLLAPSE", _) => {
            b.from("truncation_rate", t0, approach(0.97, 10.0));
            b.from("completion_len_mean", t0, approach(1000.0, 10.0));
            b.from("completion_len_max", t0, approach(1024.0, 5.0));
            if let Some(s) = b.samples.as_mut() {
                let step0 = t0 as i64 * b.shape.log_every;
                for k in 0..s.len() {
                    if s.step[k] >= step0 && rng.uniform() < 0.9 {
                        s.completion_len[k] = 1024.0;
                        s.truncated[k] = Some(true);
                    }
                }
            }
        }
        ("REPETITION_LOOPS", _) => {
            b.from("repetition_rate", t0, approach(0.72, 12.0));
            b.from("truncation_rate", t0, approach(0.3, 12.0));
        }
        ("REWARD_COMPONENT_DOMINANCE", "dead component") => {
            b.from("reward_component.format", t0, |_, _| 0.0)
        }
        ("REWARD_COMPONENT_DOMINANCE", _) => {
            b.from("reward_component.format", t0, |v, d| {
                v + 0.5 * (1.0 - (-d / 30.0).exp())
            });
            b.from("reward_component.correctness", t0, |v, d| {
                v - 0.3 * (1.0 - (-d / 30.0).exp())
            });
            b.from("reward_mean", t0, |v, d| {
                v + 0.2 * (1.0 - (-d / 30.0).exp())
            });
        }
        ("THROUGHPUT_REGRESSION", _) => b.from("step_time_s", t0, |v, d| {
            v * (1.0 + 1.5 * (1.0 - (-d / 20.0).exp()))
        }),
        ("LOGPROB_MISMATCH", _) => b.from("extra.training/rollout_probs_diff_mean", t0, |v, d| {
            v * (1.0 + 15.0 * (1.0 - (-d / 5.0).exp()))
        }),
        _ => panic!("no injection for {code} / {variant}"),
    }
}

/// A healthy run drawn from `seed` (the evaluation's negatives).
pub fn healthy_run(seed: u64) -> RunInput {
    let mut rng = Rng::new(seed.wrapping_mul(7919).wrapping_add(17));
    let shape = Shape::variant(seed, &mut rng);
    healthy(shape, &mut rng).build()
}
