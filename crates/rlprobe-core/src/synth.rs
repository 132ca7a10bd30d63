//! A realistic synthetic step table for benchmarks: 37 StepRecord metrics, 3 reward
//! components, 3 extras and an 8-bucket kl_positional, with the value shapes real GRPO
//! logs have (random walks, schedules, fractions of a batch, integer-valued lengths,
//! mostly-zero counts). Half the float metrics pass through f32, as values computed on a
//! GPU in float32 and logged as doubles do.

use crate::encoding::{FieldValue, StepBatch};
use crate::schema::{Registry, STEP_FIELDS};
use crate::table::Table;

/// xorshift64*: deterministic and dependency-free.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Approximately standard normal (sum of uniforms).
    pub fn normal(&mut self) -> f64 {
        (0..4).map(|_| self.unit()).sum::<f64>() * 1.732_050_8 - 3.464_101_6
    }
}

const BATCH: f64 = 256.0;

/// Values of every synthetic field at `step`, in the encoder's field form.
pub struct SynthRun {
    rng: Rng,
    walk: Vec<f64>,
    pub steps: u64,
}

impl SynthRun {
    pub fn new(seed: u64, steps: u64) -> SynthRun {
        SynthRun {
            rng: Rng::new(seed),
            walk: vec![0.0; STEP_FIELDS.len()],
            steps,
        }
    }

    /// One record's fields (name, value), kl_positional last.
    pub fn fields(&mut self, step: u64) -> (Vec<(String, f64)>, Vec<f64>) {
        let t = step as f64 / self.steps.max(1) as f64;
        let mut out = Vec::with_capacity(48);
        for (i, (name, _)) in STEP_FIELDS.iter().enumerate() {
            if *name == "kl_positional" {
                continue;
            }
            self.walk[i] += self.rng.normal() * 0.01;
            let noise = self.rng.normal();
            let v = match *name {
                "lr" => 1e-6 * 0.5 * (1.0 + (std::f64::consts::PI * t).cos()),
                "nan_count" | "inf_count" => (self.rng.unit() < 0.001) as u8 as f64,
                n if n.ends_with("_frac") || n.ends_with("_rate") || n.ends_with("fraction") => {
                    ((0.1 + 0.05 * self.walk[i] + 0.02 * noise).clamp(0.0, 1.0) * BATCH).round()
                        / BATCH
                }
                n if n.starts_with("completion_len") => {
                    let mean = 300.0 + 100.0 * self.walk[i] + 20.0 * noise;
                    if n == "completion_len_mean" {
                        (mean * BATCH).round() / BATCH
                    } else {
                        mean.round().max(1.0)
                    }
                }
                n if n.ends_with("_time_s") => 12.0 + 0.5 * noise,
                _ => 0.5 + self.walk[i] + 0.05 * noise,
            };
            // half the float metrics were float32 on the GPU
            let v = if i % 2 == 0 { v as f32 as f64 } else { v };
            out.push((name.to_string(), v));
        }
        for c in ["format", "correctness", "length_penalty"] {
            out.push((
                format!("reward_component.{c}"),
                (self.rng.unit() * 2.0 - 0.5) as f32 as f64,
            ));
        }
        for e in ["tokens_per_s", "gpu_mem_gb", "queue_depth"] {
            out.push((
                format!("extra.{e}"),
                (1000.0 + 100.0 * self.rng.normal()).round(),
            ));
        }
        let kl: Vec<f64> = (0..8)
            .map(|b| (0.01 * (b + 1) as f64 * (1.0 + 0.1 * self.rng.normal())) as f32 as f64)
            .collect();
        (out, kl)
    }

    /// The whole run as one table.
    pub fn table(&mut self) -> Table {
        let mut registry = Registry::default();
        let mut batch = StepBatch::new(0);
        let mut slots = Vec::with_capacity(128);
        let mut clock = 1.8e9;
        for step in 0..self.steps {
            clock += 12.0 + 0.5 * self.rng.normal();
            let (fields, kl) = self.fields(step);
            let mut values: Vec<FieldValue<'_>> =
                fields.iter().map(|(n, v)| FieldValue::Num(n, *v)).collect();
            values.push(FieldValue::List("kl_positional", &kl));
            crate::encoding::encode_step(
                &mut registry,
                step as i64,
                Some(clock),
                &values,
                &mut slots,
            )
            .expect("synthetic fields are valid");
            batch
                .append(&slots, &registry)
                .expect("synthetic record is valid");
        }
        batch.take()
    }
}
