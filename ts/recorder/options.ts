import { z } from 'zod';

import { RlprobeError } from '../errors.js';
import { SamplingSchema } from './sampling.js';

/**
 * Recorder options, validated before anything reaches Rust. A bad option is a set-up
 * error: it throws, naming the option and the value.
 */
export const RecorderOptionsSchema = z.strictObject({
  /** Defaults to `run-YYYYMMDD-HHMMSS-xxxxxx`. */
  runId: z.string().min(1).optional(),
  /** grpo, ppo, rloo, dapo, … */
  algorithm: z.string().min(1).default('unknown'),
  modelName: z.string().nullable().default(null),
  /** The full trainer configuration; stored in the manifest. Must be JSON-serialisable. */
  trainerConfig: z.record(z.string(), z.unknown()).default({}),
  notes: z.string().nullable().default(null),
  /** Extra manifest metadata (e.g. `source` for imported runs). Must be JSON-serialisable. */
  manifestExtra: z.record(z.string(), z.unknown()).default({}),
  /** Defaults to the WORLD_SIZE environment variable, else 1. */
  worldSize: z.number().int().min(1).optional(),
  /** Defaults to the RANK environment variable, else 0. */
  rank: z.number().int().min(0).optional(),
  /** Non-zero ranks write `rank-NNN/` sub-recordings instead of being inert. */
  recordAllRanks: z.boolean().default(false),
  /** Git sha and dirty flag, package versions, Node and OS, GPUs. */
  captureEnvironment: z.boolean().default(true),
  /** Publish a part file at least this often while steps arrive. */
  flushIntervalMs: z.number().int().min(1).max(3_600_000).default(5000),
  /** Publish a part file every this many steps. */
  flushSteps: z.number().int().min(1).max(1_000_000).default(200),
  /** Step records the queue holds before it drops (and counts) further ones. */
  queueCapacity: z.number().int().min(1).max(1 << 20).default(8192),
  /** Per-sample selection for `logSamples` (each call may override it). */
  sampling: SamplingSchema.default({ topK: 2, bottomK: 2, randomK: 4 }),
  /** Seed of the random part of sample selection: the same seed and calls draw the same. */
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  /** Bytes of samples queued for the writer before further `logSamples` calls drop. */
  sampleQueueBytes: z.number().int().min(1024).max(2 ** 31).default(64 * 1024 * 1024),
  /**
   * Live diagnosis on the recording rank: the doctor runs off the JS thread as parts are
   * published; findings become `finding` events and `onFinding` callbacks, and `haltOn`
   * sets when `haltSignal` aborts (with an `auto_halt` event).
   */
  doctor: z
    .strictObject({
      live: z.boolean().default(false),
      /** The least severe finding that halts; 'never' only reports. */
      haltOn: z.enum(['critical', 'warn', 'never']).default('critical'),
      /** A finding below this confidence never halts. */
      minConfidence: z.number().min(0).max(1).default(0.7),
      /** Evaluate at most every this many new logged steps (more often costs CPU, not latency). */
      evaluateEvery: z.number().int().min(1).max(1_000_000).default(10),
      /** How often the JS side collects findings. */
      pollMs: z.number().int().min(10).max(60_000).default(500),
    })
    .default({ live: false, haltOn: 'critical', minConfidence: 0.7, evaluateEvery: 10, pollMs: 500 }),
  /** Flush on exit, record crashes and signals. */
  installHandlers: z.boolean().default(true),
  /** How long `close()` waits for the final flush and compaction. */
  closeTimeoutMs: z.number().int().min(1).default(60_000),
});

export type RecorderOptions = z.input<typeof RecorderOptionsSchema>;
export type ResolvedRecorderOptions = z.output<typeof RecorderOptionsSchema> & { rank: number; worldSize: number };

function showValue(value: unknown): string {
  try {
    const s = typeof value === 'string' ? JSON.stringify(value) : typeof value === 'bigint' ? `${value}n` : JSON.stringify(value) ?? String(value);
    return s.length > 80 ? `${s.slice(0, 80)}…` : s;
  } catch {
    return String(value);
  }
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v: unknown = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `environment variable ${name}=${JSON.stringify(raw)} is not a non-negative integer`);
  }
  return n;
}

/** Validates and completes recorder options; throws RlprobeError naming the bad option. */
export function resolveRecorderOptions(input: RecorderOptions | undefined): ResolvedRecorderOptions {
  const parsed = RecorderOptionsSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue.code === 'unrecognized_keys') {
      const path = [...issue.path, issue.keys[0]];
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `unknown recorder option "${path.map(String).join('.')}" (value ${showValue(valueAt(input, path))})`);
    }
    const name = issue.path.map(String).join('.') || 'options';
    throw new RlprobeError(
      'RLPROBE_INVALID_OPTION',
      `invalid recorder option ${name}: ${issue.message} (got ${showValue(valueAt(input, issue.path))})`,
    );
  }
  const o = parsed.data;
  try {
    JSON.stringify(o.trainerConfig);
  } catch (error) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid recorder option trainerConfig: not JSON-serialisable (${(error as Error).message})`);
  }
  try {
    JSON.stringify(o.manifestExtra);
  } catch (error) {
    throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid recorder option manifestExtra: not JSON-serialisable (${(error as Error).message})`);
  }
  const rank = o.rank ?? envInt('RANK') ?? 0;
  const worldSize = o.worldSize ?? envInt('WORLD_SIZE') ?? 1;
  return { ...o, rank, worldSize };
}
