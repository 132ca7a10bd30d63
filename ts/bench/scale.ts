/**
 * The scale benchmark behind `probe scale-bench` and benches/scale.ts: record a realistic
 * run through the real Recorder, then time every read surface and the same questions
 * asked of DuckDB (when `@duckdb/node-api` is installed), on the same files.
 *
 * The read phase runs in a child process of its own, so its peak RSS is not hidden by
 * the write phase's (maxRSS only grows).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';

import { buildCli } from '../cli/main.js';
import { RunReader } from '../reader/run-reader.js';
import { Recorder } from '../recorder/recorder.js';
import type { SampleRecord } from '../schema/sample-record.js';
import type { StepRecord } from '../schema/step-record.js';

export interface WriteFigures {
  steps: number;
  samplesPerStep: number;
  candidatesPerStep: number;
  seconds: number;
  stepsPerSecond: number;
  samplesWritten: number;
  samplesDropped: number;
  stepsDropped: number;
  closeSeconds: number;
  stepsBytes: number;
  samplesBytes: number;
  totalBytes: number;
  peakRssMiB: number;
}

export interface ReadTiming {
  surface: string;
  ms: number;
  duckdbMs: number | null;
  /** ours / DuckDB */
  ratio: number | null;
  detail: string;
}

export interface ReadFigures {
  timings: ReadTiming[];
  peakRssMiB: number;
  duckdb: boolean;
}

/** A tiny deterministic PRNG (mulberry32), so every run of the benchmark is the same run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the of and to in is that for it as with was on be by this are or from at an which we can not have ' +
  'if then so let x y n sum proof answer step therefore because equation value number function return ' +
  'def import class self print loop while true false none error check result compute total each list'
).split(' ');

/** Synthetic prose of about `chars` characters. */
function prose(rand: () => number, chars: number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = WORDS[Math.floor(rand() * WORDS.length)];
    const sep = rand() < 0.08 ? '.\n' : ' ';
    parts.push(w, sep);
    n += w.length + sep.length;
  }
  return parts.join('');
}

const STEP_SCALARS = [
  'reward_mean', 'reward_std', 'reward_min', 'reward_max', 'kl_mean', 'kl_max', 'entropy_mean', 'logprob_mean',
  'ratio_mean', 'ratio_p95', 'clip_fraction', 'adv_mean', 'adv_std', 'adv_zero_frac', 'group_reward_std_mean',
  'zero_variance_group_frac', 'value_loss', 'value_explained_variance', 'value_clip_fraction', 'loss', 'lr',
  'grad_norm', 'grad_norm_post_clip', 'weight_update_ratio', 'completion_len_mean', 'completion_len_p95',
  'completion_len_max', 'max_len_hit_frac', 'eos_rate', 'repetition_rate', 'truncation_rate', 'step_time_s',
  'generation_time_s', 'optimization_time_s',
] as const;

/** Records the benchmark run into `dir`. */
export function writeScaleRun(dir: string, steps: number, samplesPerStep: number, log: (s: string) => void): WriteFigures {
  const rand = prng(42);
  // a pool of passages, each sample getting its own prefix: real completions compress
  // worse than this, so the samples' size on disk is optimistic (said in the report)
  const passages = Array.from({ length: 2048 }, () => prose(rand, Math.round(Math.exp(6.5 + rand() * 1.6))));
  const prompts = Array.from({ length: 256 }, () => prose(rand, 200 + Math.floor(rand() * 600)));
  const candidates = samplesPerStep * 2;
  const rec = new Recorder(dir, {
    algorithm: 'grpo',
    runId: 'scale-bench',
    installHandlers: false,
    captureEnvironment: false,
    sampling: { topK: Math.ceil(samplesPerStep / 4), bottomK: Math.ceil(samplesPerStep / 4), randomK: Math.max(0, samplesPerStep - 2 * Math.ceil(samplesPerStep / 4)) },
    queueCapacity: 65_536,
    sampleQueueBytes: 256 * 1024 * 1024,
  });
  const t0 = performance.now();
  const record: Record<string, number | Record<string, number> | number[]> = {};
  for (let step = 0; step < steps; step++) {
    const drift = step / Math.max(1, steps);
    STEP_SCALARS.forEach((k, i) => {
      record[k] = Math.sin(step * 0.01 + i) * 0.1 + drift + i * 0.01 + rand() * 0.01;
    });
    record.step = step;
    record.nan_count = 0;
    record.inf_count = 0;
    record.reward_components = { format: rand(), correctness: rand(), length_penalty: -rand() * 0.1, tool_use: rand() * 0.5 };
    record.extra = { tokens_per_s: 1000 + rand() * 100, gpu_mem_gb: 60 + rand(), rollout_queue: Math.floor(rand() * 32), eval_acc: drift };
    rec.logStep(record as unknown as StepRecord);
    if (candidates > 0) {
      const batch: SampleRecord[] = new Array(candidates);
      for (let i = 0; i < candidates; i++) {
        const passage = passages[(step * 31 + i * 7) % passages.length];
        batch[i] = {
          group_id: `g${step}-${i >> 2}`,
          prompt_id: `p${(step * 13 + i) % 5000}`,
          prompt_text: prompts[(step + i) % prompts.length],
          completion_text: `[${step}:${i}] ${passage}`,
          reward_total: rand() * 2 - 0.5,
          reward_components: { format: rand(), correctness: rand() },
          advantage: rand() * 2 - 1,
          logprob_mean: -rand(),
          kl_contribution: rand() * 0.01,
          completion_len: passage.length >> 2,
          truncated: rand() < 0.03,
        };
      }
      rec.logSamples(batch, { step });
    }
    // back-pressure for the benchmark only: a real loop is far slower than this one
    if (step % 5000 === 4999) {
      rec.flushSync(120_000);
      log(`  wrote ${step + 1} steps (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    }
  }
  const logged = performance.now();
  const summary = rec.close();
  const closed = performance.now();
  const size = (p: string): number => {
    try {
      const st = statSync(p);
      if (st.isFile()) return st.size;
      return readdirSync(p).reduce((a, n) => a + size(path.join(p, n)), 0);
    } catch {
      return 0;
    }
  };
  const stepsBytes = size(path.join(dir, 'steps.parquet'));
  const samplesBytes = size(path.join(dir, 'samples'));
  return {
    steps,
    samplesPerStep,
    candidatesPerStep: candidates,
    seconds: (closed - t0) / 1000,
    stepsPerSecond: steps / ((logged - t0) / 1000),
    samplesWritten: summary.counters.samplesWritten,
    samplesDropped: summary.counters.samplesDropped,
    stepsDropped: summary.counters.dropped,
    closeSeconds: (closed - logged) / 1000,
    stepsBytes,
    samplesBytes,
    totalBytes: size(dir),
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

class Sink extends Writable {
  _write(_c: unknown, _e: BufferEncoding, cb: () => void): void {
    cb();
  }
}

async function timeIt<T>(f: () => T | Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const out = await f();
  return [performance.now() - t, out];
}

/** Times each read surface (best of `repeat`), ours and DuckDB's. */
export async function readScaleRun(dir: string, repeat = 3): Promise<ReadFigures> {
  let duck: { run: (sql: string) => Promise<number> } | null = null;
  try {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    duck = {
      run: async (sql: string) => {
        const r = await con.runAndReadAll(sql);
        // materialise every value, as our reader does
        const cols = r.getColumns();
        return cols.length ? cols[0].length : 0;
      },
    };
  } catch {
    duck = null;
  }
  const steps = path.join(dir, 'steps.parquet').replaceAll("'", "''");
  const samples = path.join(dir, 'samples', '*.parquet').replaceAll("'", "''");
  const reader = RunReader.open(dir);
  const n = reader.view(['step']).length;
  const mid = Math.floor(n / 2);
  const surfaces: Array<{ name: string; ours: () => unknown; sql: string | null; detail: (r: unknown) => string }> = [
    {
      name: 'probe info',
      ours: async () => buildCli().run(['info', dir], { stdout: new Sink(), stderr: new Sink(), stdin: process.stdin, env: process.env, colorDepth: 1 }),
      sql: `SELECT count(*), min(step), max(step) FROM read_parquet('${steps}')`,
      detail: () => 'manifest, layout, step range, columns, events, samples',
    },
    {
      name: 'all step columns',
      ours: () => RunReader.open(dir).stepTable(),
      sql: `SELECT * FROM read_parquet('${steps}')`,
      detail: (t) => `${(t as { rows: number }).rows} rows × ${(t as { columns: unknown[] }).columns.length} columns`,
    },
    {
      name: 'one series (kl_mean)',
      ours: () => RunReader.open(dir).view(['kl_mean']).series('kl_mean'),
      sql: `SELECT kl_mean FROM read_parquet('${steps}')`,
      detail: (s) => `${(s as Float64Array).length} values`,
    },
    {
      name: 'samples: top_k of the whole run (no texts)',
      ours: () => {
        let k = 0;
        for (const _ of RunReader.open(dir).samples({ reason: 'top_k', columns: ['step', 'sample_id', 'reward_total'] })) k++;
        return k;
      },
      sql: `SELECT step, sample_id, reward_total FROM read_parquet('${samples}', union_by_name=true) WHERE capture_reason = 'top_k'`,
      detail: (k) => `${k} samples`,
    },
    {
      name: 'samples: 100 steps in full (texts)',
      ours: () => {
        let k = 0;
        for (const _ of RunReader.open(dir).samples({ stepRange: [mid, mid + 99] })) k++;
        return k;
      },
      sql: `SELECT * FROM read_parquet('${samples}', union_by_name=true) WHERE step BETWEEN ${mid} AND ${mid + 99}`,
      detail: (k) => `${k} samples`,
    },
  ];
  const timings: ReadTiming[] = [];
  for (const s of surfaces) {
    let best = Infinity;
    let out: unknown;
    for (let i = 0; i < repeat; i++) {
      const [ms, r] = await timeIt(s.ours);
      best = Math.min(best, ms);
      out = r;
    }
    let duckBest: number | null = null;
    if (duck && s.sql) {
      duckBest = Infinity;
      for (let i = 0; i < repeat; i++) duckBest = Math.min(duckBest, (await timeIt(() => duck!.run(s.sql!)))[0]);
    }
    timings.push({ surface: s.name, ms: best, duckdbMs: duckBest, ratio: duckBest ? best / duckBest : null, detail: s.detail(out) });
  }
  return { timings, peakRssMiB: process.resourceUsage().maxRSS / 1024, duckdb: duck !== null };
}

/**
 * Runs the read phase in a fresh process (its own peak RSS): `args` start the caller's
 * `--read DIR` entry, which prints `readScaleRun`'s figures as its last line of JSON.
 */
export function readInChild(args: string[]): ReadFigures {
  const r = spawnSync(process.execPath, [...process.execArgv, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`read phase failed (exit ${r.status}): ${r.stderr}`);
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as ReadFigures;
}

export function formatReport(w: WriteFigures, r: ReadFigures): string {
  const mib = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
  const lines = [
    `scale benchmark: ${w.steps} steps, ${w.samplesPerStep} samples kept per step (of ${w.candidatesPerStep} candidates)`,
    `  write       ${w.seconds.toFixed(1)} s in all; ${Math.round(w.stepsPerSecond)} steps/s logged; close + compaction ${w.closeSeconds.toFixed(1)} s`,
    `  kept        ${w.samplesWritten} samples written, ${w.samplesDropped} samples and ${w.stepsDropped} steps dropped`,
    `  on disk     steps.parquet ${mib(w.stepsBytes)}; samples ${mib(w.samplesBytes)} (synthetic text: compresses better than real); run ${mib(w.totalBytes)}`,
    `  peak RSS    write ${w.peakRssMiB.toFixed(0)} MiB; read ${r.peakRssMiB.toFixed(0)} MiB`,
    '',
    `  ${'surface'.padEnd(44)} ${'rlprobe'.padStart(10)} ${'DuckDB'.padStart(10)} ${'ratio'.padStart(7)}`,
  ];
  for (const t of r.timings) {
    const duck = t.duckdbMs === null ? '—' : `${t.duckdbMs.toFixed(1)} ms`;
    const ratio = t.ratio === null ? '—' : `${t.ratio.toFixed(2)}×`;
    lines.push(`  ${t.surface.padEnd(44)} ${`${t.ms.toFixed(1)} ms`.padStart(10)} ${duck.padStart(10)} ${ratio.padStart(7)}   ${t.detail}`);
  }
  if (!r.duckdb) lines.push('  (DuckDB not installed: npm install @duckdb/node-api to compare)');
  return lines.join('\n');
}
