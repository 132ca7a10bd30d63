/**
 * Seeded, realistic GRPO runs for the doctor tests: a healthy shape (modelled on
 * crates/rlprobe-doctor/src/synth.rs) and injections of one problem from a given step,
 * recorded through the public `Recorder`.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Recorder, SampleRecord, StepRecord } from '../../ts/index.js';
import { prng } from './prng.js';

/** The completion-length cap (max_new_tokens) of the generated runs. */
export const LEN_CAP = 1024;

/** One logged point: its step record and the samples logged with it (if any). */
export interface RunPoint {
  record: StepRecord;
  samples?: SampleRecord[];
}

export interface HealthyOptions {
  /** Logged steps 0..steps-1 (400). */
  steps?: number;
  seed?: number;
  /** Samples per step through `logSamples` (0: none). */
  samplesPerStep?: number;
}

/** Box–Muller normals from a uniform source. */
function normals(seed: number): { u: () => number; n: () => number } {
  const u = prng(seed);
  return {
    u,
    n: () => {
      const a = Math.max(u(), 1e-300);
      return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * u());
    },
  };
}

/**
 * A healthy GRPO run: reward rising noisily toward a plateau, reward_std shrinking a little,
 * KL growing slowly from ~0.002, entropy declining gently (≈25 %), lognormal grad norms,
 * a 20-step warm-up then cosine learning rate, clip fraction ~0.08, a fifth of the groups
 * with zero variance, lengths growing slowly, ~2 % truncated, ~30 s steps with an eval
 * spike every 50 steps.
 */
export function healthyGrpo(options: HealthyOptions = {}): RunPoint[] {
  const n = options.steps ?? 400;
  const perStep = options.samplesPerStep ?? 0;
  const { u: uniform, n: normal } = normals(options.seed ?? 1);
  const r0 = 0.25;
  const gain = 0.3;
  const tau = n / 4;
  const peakLr = 1e-6;
  const warmup = 20;
  const h0 = 0.8;
  const g0 = 0.4;
  const len0 = 240;
  const points: RunPoint[] = [];
  for (let step = 0; step < n; step++) {
    const u = step / n;
    const lr =
      step < warmup
        ? (peakLr * (step + 1)) / warmup
        : peakLr * (0.1 + 0.9 * 0.5 * (1 + Math.cos((Math.PI * (step - warmup)) / (n - warmup))));
    const reward = r0 + gain * (1 - Math.exp(-step / tau)) + 0.12 * u + 0.03 * normal();
    const rewardStd = (0.3 - 0.05 * u) * (1 + 0.05 * normal());
    const len = len0 * (1 + 0.4 * u) * (1 + 0.05 * normal());
    const record: StepRecord = {
      step,
      loss: 0.01 * normal(),
      reward_mean: reward,
      reward_std: rewardStd,
      kl_mean: (0.002 + 0.04 * Math.sqrt(u)) * Math.exp(0.1 * normal()),
      entropy_mean: h0 * (0.7 + 0.3 * Math.exp(-step / (n / 3))) * (1 + 0.03 * normal()),
      grad_norm: g0 * (1 + 0.3 * u) * Math.exp(0.25 * normal()),
      lr,
      clip_fraction: Math.max(0, 0.08 + 0.02 * normal()),
      zero_variance_group_frac: Math.min(1, Math.max(0, 0.2 + 0.04 * normal())),
      completion_len_mean: len,
      completion_len_max: Math.min(LEN_CAP, Math.round(len * 2.5 * (1 + 0.05 * normal()))),
      truncation_rate: Math.max(0, 0.02 + 0.01 * normal()),
      step_time_s: 30 * (1 + 0.1 * u) * Math.exp(0.05 * normal()) * (step % 50 === 49 ? 1.8 : 1),
    };
    const point: RunPoint = { record };
    if (perStep > 0) {
      point.samples = [];
      for (let k = 0; k < perStep; k++) {
        const truncated = uniform() < 0.02;
        const l = truncated ? LEN_CAP : Math.min(LEN_CAP - 1, Math.round(len * Math.exp(0.3 * normal())));
        point.samples.push({
          sample_id: `s${step}-${k}`,
          group_id: `g${step}-${k >> 2}`,
          prompt_text: `prompt ${step}/${k >> 2}`,
          completion_text: `completion ${step}/${k}`,
          reward_total: truncated ? 0 : Math.min(1, Math.max(0, reward + rewardStd * normal())),
          completion_len: l,
          truncated,
        });
      }
    }
    points.push(point);
  }
  return points;
}

function approach(v: number, target: number, d: number, tau: number): number {
  return v + (target - v) * (1 - Math.exp(-d / tau));
}

/** Entropy decays exponentially (τ = 12 steps) to 3 % of its level from `fromStep` on. */
export function injectEntropyCollapse(points: RunPoint[], fromStep: number): RunPoint[] {
  for (const p of points) {
    const d = p.record.step - fromStep;
    if (d >= 0 && typeof p.record.entropy_mean === 'number') p.record.entropy_mean *= 0.03 + 0.97 * Math.exp(-d / 12);
  }
  return points;
}

/** The loss is logged as NaN at `step`. */
export function injectNanLoss(points: RunPoint[], step: number): RunPoint[] {
  const p = points.find((q) => q.record.step === step);
  if (!p) throw new Error(`no step ${step}`);
  p.record.loss = NaN;
  return points;
}

/** The loss is not logged at all at these steps (a missing value, not a NaN). */
export function dropLoss(points: RunPoint[], steps: Iterable<number>): RunPoint[] {
  const drop = new Set(steps);
  for (const p of points) if (drop.has(p.record.step)) delete p.record.loss;
  return points;
}

/**
 * From `fromStep` on, completions stop terminating: the truncation rate goes to 0.97, the
 * mean length toward the cap, and 9 in 10 samples are cut at the cap (reward 0).
 */
export function injectTruncationCollapse(points: RunPoint[], fromStep: number, seed = 7): RunPoint[] {
  const uniform = prng(seed);
  for (const p of points) {
    const d = p.record.step - fromStep;
    if (d < 0) continue;
    const r = p.record;
    r.truncation_rate = approach(r.truncation_rate as number, 0.97, d, 10);
    r.completion_len_mean = approach(r.completion_len_mean as number, 0.98 * LEN_CAP, d, 10);
    r.completion_len_max = Math.round(approach(r.completion_len_max as number, LEN_CAP, d, 5));
    for (const s of p.samples ?? []) {
      if (uniform() < 0.9) {
        s.completion_len = LEN_CAP;
        s.truncated = true;
        s.reward_total = 0;
      }
    }
  }
  return points;
}

export interface RecordPointsOptions {
  /** Sleep this long every `every` steps (0: never yield). */
  delayMs?: number;
  every?: number;
  /** Stop logging once `rec.haltSignal` aborts (a training loop honouring the halt). */
  stopOnHalt?: boolean;
  /** Stop logging once this returns true (checked before each step). */
  stopWhen?: () => boolean;
}

/** Logs the points (and their samples) through `rec`; returns the steps logged. */
export async function recordPoints(rec: Recorder, points: RunPoint[], options: RecordPointsOptions = {}): Promise<number> {
  const every = options.every ?? 1;
  let logged = 0;
  for (const p of points) {
    if (options.stopOnHalt && rec.haltSignal.aborted) break;
    if (options.stopWhen?.()) break;
    rec.logStep(p.record);
    if (p.samples) rec.logSamples(p.samples, { step: p.record.step });
    logged++;
    if (options.delayMs !== undefined && logged % every === 0) await sleep(options.delayMs);
  }
  return logged;
}

/** Logs the points synchronously (no yielding). */
export function recordPointsSync(rec: Recorder, points: RunPoint[]): void {
  for (const p of points) {
    rec.logStep(p.record);
    if (p.samples) rec.logSamples(p.samples, { step: p.record.step });
  }
}
