/**
 * The scale benchmark behind `probe scale-bench` and benches/scale.ts: record a realistic
 * run through the real Recorder, then time every read surface and the same questions
 * asked of DuckDB (when `@duckdb/node-api` is installed), on the same files.
 *
 * The read phase runs in a child process of its own, so its peak RSS is not hidden by
 * the write phase's (maxRSS only grows).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';

import { diagnose } from '../doctor/diagnose.js';
import { RunWatcher } from '../doctor/watch.js';
import type { TickResult } from '../doctor/watch.js';
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
  /** Best of the repeats. */
  ms: number;
  /** Peak RSS of a fresh process after its first call of this surface (before DuckDB). */
  peakRssMiB: number;
  duckdbMs: number | null;
  /** ours / DuckDB */
  ratio: number | null;
  detail: string;
}

export interface ReadFigures {
  timings: ReadTiming[];
  /** The largest of the surfaces' peaks. */
  peakRssMiB: number;
  duckdb: boolean;
}

/**
 * This process's peak RSS in MiB. On Linux from VmHWM: `ru_maxrss` survives exec, so a
 * child would report its parent's peak at fork time as its own.
 */
export function processPeakRssMiB(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS / 1024;
}

/** A tiny deterministic PRNG (mulberry32), so every run of a benchmark is the same run. */
export function prng(seed: number): () => number {
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
    // 2 + 2 + 4 at 8; always exactly samplesPerStep kept of twice as many
    sampling: {
      topK: Math.ceil(samplesPerStep / 4),
      bottomK: Math.floor(samplesPerStep / 4),
      randomK: samplesPerStep - Math.ceil(samplesPerStep / 4) - Math.floor(samplesPerStep / 4),
    },
    queueCapacity: 65_536,
    sampleQueueBytes: 256 * 1024 * 1024,
    // compacting millions of samples takes minutes; the default bound is for exit paths
    closeTimeoutMs: 3_600_000,
  });
  const t0 = performance.now();
  const record: Record<string, number | Record<string, number> | number[]> = {};
  // what a GRPO trainer logs: noisy means and losses, fractions of a batch of 512
  // completions or 64 groups (few distinct values), a learning-rate schedule, integer
  // lengths, timings
  const batch = 512;
  const groups = 64;
  const frac = (p: number, n: number) => Math.round(Math.min(1, Math.max(0, p + (rand() - 0.5) * 0.05)) * n) / n;
  for (let step = 0; step < steps; step++) {
    const drift = step / Math.max(1, steps);
    STEP_SCALARS.forEach((k, i) => {
      record[k] = Math.sin(step * 0.01 + i) * 0.1 + drift + i * 0.01 + rand() * 0.01;
    });
    for (const k of ['clip_fraction', 'adv_zero_frac', 'max_len_hit_frac', 'eos_rate', 'repetition_rate', 'truncation_rate', 'value_clip_fraction'] as const) {
      record[k] = frac(k === 'eos_rate' ? 0.97 : 0.03, batch);
    }
    record.zero_variance_group_frac = frac(0.1 + drift * 0.2, groups);
    record.lr = 1e-6 * Math.min(1, step / 500) * (0.5 + 0.5 * Math.cos((Math.PI * step) / steps));
    record.completion_len_max = 1024 - Math.floor(rand() * 64);
    record.completion_len_p95 = 600 + Math.floor(rand() * 200);
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
    peakRssMiB: processPeakRssMiB(),
  };
}

class Sink extends Writable {
  _write(_c: unknown, _e: BufferEncoding, cb: () => void): void {
    cb();
  }
}

/**
 * Runs one `probe` command line with its output sent to `stdout` / `stderr`; resolves to
 * its exit code. The CLI passes itself in: the benchmark is library code, below the CLI.
 */
export type ProbeRunner = (args: string[], io: { stdout: Writable; stderr: Writable }) => Promise<number>;

async function timeIt<T>(f: () => T | Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const out = await f();
  return [performance.now() - t, out];
}

/** An in-memory DuckDB that materialises every value of a query, or null if not installed. */
async function openDuckDb(): Promise<{ run: (sql: string) => Promise<number> } | null> {
  try {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const con = await (await DuckDBInstance.create(':memory:')).connect();
    return {
      run: async (sql: string) => {
        const cols = (await con.runAndReadAll(sql)).getColumns();
        return cols.length ? cols[0].length : 0;
      },
    };
  } catch {
    return null;
  }
}

const SURFACES = 9;
const SAMPLE_SURFACES = 2;

/** How many read surfaces `readScaleSurface` knows for this run (samples ones need samples). */
export function surfaceCount(dir: string): number {
  return RunReader.open(dir).sampleFiles().length === 0 ? SURFACES - SAMPLE_SURFACES : SURFACES;
}

/**
 * Times read surface `index` (best of `repeat`), then DuckDB answering the same question
 * on the same files. Meant for a fresh process: the peak RSS it reports is that process's
 * after the first call, so one surface's garbage does not count against the next.
 */
export async function readScaleSurface(dir: string, index: number, probe: ProbeRunner, repeat = 3): Promise<ReadTiming & { duckdb: boolean }> {
  const steps = path.join(dir, 'steps.parquet').replaceAll("'", "''");
  const samples = path.join(dir, 'samples', '*.parquet').replaceAll("'", "''");
  const reader = RunReader.open(dir);
  const n = reader.view(['step']).length;
  const mid = Math.floor(n / 2);
  const all: Array<{ name: string; needsSamples?: boolean; ours: () => unknown; sql: string | null; detail: (r: unknown) => string }> = [
    {
      name: 'probe info',
      ours: async () => probe(['info', dir], { stdout: new Sink(), stderr: new Sink() }),
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
      needsSamples: true,
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
      needsSamples: true,
      name: 'samples: 100 steps in full (texts)',
      ours: () => {
        let k = 0;
        for (const _ of RunReader.open(dir).samples({ stepRange: [mid, mid + 99] })) k++;
        return k;
      },
      sql: `SELECT * FROM read_parquet('${samples}', union_by_name=true) WHERE step BETWEEN ${mid} AND ${mid + 99}`,
      detail: (k) => `${k} samples`,
    },
    {
      name: 'probe doctor',
      ours: async () => {
        const out = new Sink();
        await probe(['doctor', dir], { stdout: out, stderr: new Sink() });
        return out;
      },
      sql: null,
      detail: () => `${diagnose(RunReader.open(dir)).findings.length} findings, ${n} points`,
    },
    {
      name: 'probe diff (the run against itself)',
      ours: async () => {
        const out = new Sink();
        await probe(['diff', dir, dir], { stdout: out, stderr: new Sink() });
        return out;
      },
      sql: null,
      detail: () => `${n} steps × 2, every shared metric`,
    },
    {
      name: 'probe report (HTML, without the browser)',
      ours: async () => {
        const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-report-')), 'report.html');
        try {
          const code = await probe(['report', dir, '--out', out], { stdout: new Sink(), stderr: new Sink() });
          if (code !== 0) throw new Error(`probe report exited ${code}`);
          return statSync(out).size;
        } finally {
          rmSync(path.dirname(out), { recursive: true, force: true });
        }
      },
      sql: null,
      detail: (size) => `${n} steps, ${((size as number) / 1024).toFixed(0)} KiB of HTML`,
    },
    {
      name: 'probe watch: catching up',
      ours: () => new RunWatcher(dir, { haltOn: 'never', minConfidence: 1 }).tick(),
      sql: null,
      detail: (r) => `first look: ${(r as TickResult).points} points, ${(r as TickResult).findings.length} findings`,
    },
  ];
  const hasSamples = reader.sampleFiles().length > 0;
  const s = all.filter((x) => hasSamples || !x.needsSamples)[index];
  if (!s) throw new Error(`no read surface ${index}`);
  let best = Infinity;
  let out: unknown;
  let peakRssMiB = 0;
  for (let i = 0; i < repeat; i++) {
    const [ms, r] = await timeIt(s.ours);
    if (i === 0) peakRssMiB = processPeakRssMiB();
    best = Math.min(best, ms);
    out = r;
  }
  // DuckDB only now: its module and buffers must not count in rlprobe's peak
  const duck = await openDuckDb();
  let duckdbMs: number | null = null;
  if (duck && s.sql) {
    duckdbMs = Infinity;
    for (let k = 0; k < repeat; k++) duckdbMs = Math.min(duckdbMs, (await timeIt(() => duck!.run(s.sql!)))[0]);
  }
  return {
    surface: s.name,
    ms: best,
    peakRssMiB,
    duckdbMs,
    ratio: duckdbMs ? best / duckdbMs : null,
    detail: s.detail(out),
    duckdb: duck !== null,
  };
}

/**
 * Runs the read phase, one fresh process per surface (each its own peak RSS):
 * `argsFor(i)` starts the caller's entry that prints `readScaleSurface(dir, i)` as its
 * last line of JSON.
 */
export function readInChildren(dir: string, argsFor: (index: number) => string[], execArgv: string[] = process.execArgv): ReadFigures {
  const timings: ReadTiming[] = [];
  let duckdb = false;
  for (let i = 0; i < surfaceCount(dir); i++) {
    const r = spawnSync(process.execPath, [...execArgv, ...argsFor(i)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`read surface ${i} failed (exit ${r.status}): ${r.stderr}${r.stdout.slice(-2000)}`);
    const { duckdb: d, ...t } = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as ReadTiming & { duckdb: boolean };
    duckdb = d;
    timings.push(t);
  }
  return { timings, peakRssMiB: Math.max(...timings.map((t) => t.peakRssMiB)), duckdb };
}

/** Wall time of one command line, each run a fresh process. */
export interface StartupTiming {
  /** What ran, as a person would type it: `node -e ""`, `probe --version`, `probe info <run>`. */
  command: string;
  /** The first process (cold file cache for the CLI's modules, if anything is cold). */
  firstMs: number;
  /** The median of the processes after the first. */
  medianMs: number;
  /** How many processes the median is of. */
  runs: number;
}

/** The CLI's start-up figures, and how busy the machine was while they were taken. */
export interface StartupFigures {
  timings: StartupTiming[];
  /** os.loadavg() (1, 5 and 15 minutes) just before the first process: a shared machine's noise. */
  loadAverage: number[];
  cpus: number;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * How long `probe` takes to start and answer: `probe --version` (the CLI alone) and `probe
 * info <dir>` (the CLI, the reader and the native addon), each a fresh process, next to
 * `node -e ""` (Node's own start, the floor). `probe` is the command line that starts the
 * CLI (`[...execArgv, entry]`). The three take turns in each round, so a burst of load on a
 * shared machine falls on all three alike. A probe that fails is an error, never a figure.
 */
export function timeStartup(dir: string, probe: string[], rounds = 8): StartupFigures {
  const loadAverage = os.loadavg();
  const lines: Array<{ command: string; args: string[] }> = [
    { command: 'node -e ""', args: ['-e', ''] },
    { command: 'probe --version', args: [...probe, '--version'] },
    { command: 'probe info <run>', args: [...probe, 'info', dir] },
  ];
  const times = lines.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    lines.forEach(({ command, args }, i) => {
      const t = performance.now();
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
      times[i].push(performance.now() - t);
      if (r.status !== 0) throw new Error(`${command} failed (exit ${r.status}, signal ${r.signal}): ${r.stderr}`);
    });
  }
  const timings = lines.map(({ command }, i) => ({ command, firstMs: times[i][0], medianMs: median(times[i].slice(1)), runs: rounds - 1 }));
  return { timings, loadAverage, cpus: os.availableParallelism() };
}

export function formatReport(w: WriteFigures, r: ReadFigures, startup?: StartupFigures): string {
  const mib = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
  const lines = [
    `scale benchmark: ${w.steps} steps, ${w.samplesPerStep} samples kept per step (of ${w.candidatesPerStep} candidates)`,
    `  write       ${w.seconds.toFixed(1)} s in all; ${Math.round(w.stepsPerSecond)} steps/s logged; close + compaction ${w.closeSeconds.toFixed(1)} s`,
    `  kept        ${w.samplesWritten} samples written, ${w.samplesDropped} samples and ${w.stepsDropped} steps dropped`,
    `  on disk     steps.parquet ${mib(w.stepsBytes)}; samples ${mib(w.samplesBytes)} (synthetic text: compresses better than real); run ${mib(w.totalBytes)}`,
    `  peak RSS    write ${w.peakRssMiB.toFixed(0)} MiB; reads (largest, one fresh process per surface) ${r.peakRssMiB.toFixed(0)} MiB`,
    '',
    `  ${'surface'.padEnd(44)} ${'rlprobe'.padStart(10)} ${'DuckDB'.padStart(10)} ${'ratio'.padStart(7)} ${'peak RSS'.padStart(9)}`,
  ];
  for (const t of r.timings) {
    const duck = t.duckdbMs === null ? '—' : `${t.duckdbMs.toFixed(1)} ms`;
    const ratio = t.ratio === null ? '—' : `${t.ratio.toFixed(2)}×`;
    lines.push(`  ${t.surface.padEnd(44)} ${`${t.ms.toFixed(1)} ms`.padStart(10)} ${duck.padStart(10)} ${ratio.padStart(7)} ${`${t.peakRssMiB.toFixed(0)} MiB`.padStart(9)}   ${t.detail}`);
  }
  if (!r.duckdb) lines.push('  (DuckDB not installed: npm install @duckdb/node-api to compare)');
  if (startup?.timings.length) {
    const load = `load average ${startup.loadAverage.map((l) => l.toFixed(2)).join(' ')} on ${startup.cpus} CPUs`;
    lines.push('', `  ${'CLI start (a fresh process each, wall time)'.padEnd(44)} ${'first'.padStart(10)} ${`median of ${startup.timings[0].runs}`.padStart(13)}   ${load}`);
    for (const t of startup.timings) lines.push(`  ${t.command.padEnd(44)} ${`${t.firstMs.toFixed(0)} ms`.padStart(10)} ${`${t.medianMs.toFixed(0)} ms`.padStart(13)}`);
  }
  return lines.join('\n');
}
