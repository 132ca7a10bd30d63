/**
 * The scale benchmark behind `probe scale-bench` and benches/scale.ts: record a realistic
 * run through the real Recorder (or take an existing one), then time every read surface
 * and the same questions asked of DuckDB (when `@duckdb/node-api` is installed), on the
 * same files.
 *
 * Each surface runs in a fresh process of its own, and DuckDB's answer in another (see
 * fresh-process.ts): the first call, the warm median and the peak RSS are that process's,
 * not hidden by the write phase's or another surface's (VmHWM only grows), and neither
 * side's modules count in the other's memory.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
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
import { median, processPeakRssMiB, timeFreshCalls } from './fresh-process.js';
import type { CallFigures, ResultShape } from './fresh-process.js';
import type { DuckDbAnswer } from './scale-duckdb.js';

export { processPeakRssMiB } from './fresh-process.js';

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
  detail: string;
  /** rlprobe, in a fresh process of its own. */
  ours: CallFigures;
  /** DuckDB answering the same question on the same files, in a fresh process of its own; null when it has no counterpart or is not installed. */
  duckdb: (CallFigures & { openMs: number }) | null;
  /** The warm medians, ours / DuckDB. */
  ratio: number | null;
  /** What both sides answered with (checked equal), or null where there is nothing to compare. */
  shape: ResultShape | null;
}

export interface ReadFigures {
  /** The run read, its step and sample counts from the files' footers. */
  run: { dir: string; steps: number; samples: number };
  /** When the read phase started (ISO 8601). */
  date: string;
  /** os.loadavg() (1, 5 and 15 minutes) before and after the read phase: a shared machine's noise. */
  loadAverage: { before: number[]; after: number[] };
  cpus: number;
  /** Calls after the first in each process, of which each warm figure is the median. */
  warmRuns: number;
  timings: ReadTiming[];
  /** The largest of rlprobe's peaks after a first call. */
  peakRssMiB: number;
  /** `unavailable` is the line printed instead of DuckDB's figures. */
  duckdb: { available: boolean; version: string | null; unavailable: string | null };
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

class Collect extends Writable {
  text = '';
  _write(c: Buffer | string, _e: BufferEncoding, cb: () => void): void {
    this.text += String(c);
    cb();
  }
}

/**
 * Runs one `probe` command line with its output sent to `stdout` / `stderr`; resolves to
 * its exit code. The CLI passes itself in: the benchmark is library code, below the CLI.
 */
export type ProbeRunner = (args: string[], io: { stdout: Writable; stderr: Writable }) => Promise<number>;

/** Runs a probe command that must succeed: one that fails is an error, never a figure. */
async function runProbe(probe: ProbeRunner, args: string[]): Promise<void> {
  const stderr = new Collect();
  const code = await probe(args, { stdout: new Sink(), stderr });
  if (code !== 0) throw new Error(`probe ${args.join(' ')} exited ${code}: ${stderr.text.trim()}`);
}

/** The files a question reads, for DuckDB: those rlprobe's reader reads, as it lists them. */
interface RunFiles {
  steps: string[];
  samples: string[];
}

/** What a surface is asked, the same in rlprobe's process and in DuckDB's. */
interface Question {
  dir: string;
  /** The 100 steps whose samples are read in full, or null when the run has no samples. */
  window: [number, number] | null;
}

interface Surface {
  name: string;
  needsSamples?: boolean;
  ours: (q: Question, probe: ProbeRunner) => unknown;
  /** What DuckDB's answer must match, or null when there is nothing to compare. */
  shape: (out: unknown) => ResultShape | null;
  /** The same question as SQL on the same files, or null when DuckDB has no counterpart. */
  sql: ((files: RunFiles, q: Question) => string) | null;
  /** Said next to the figures; computed after the timed calls. */
  detail: (out: unknown, dir: string) => string;
  /** DuckDB's SQL answers less than ours does: its figure is shown, no ratio. */
  lessWork?: boolean;
}

function parquetFiles(paths: string[]): string {
  return `read_parquet([${paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')}], union_by_name = true)`;
}

const stepCount = (dir: string): number => RunReader.open(dir).view(['step']).length;

/** rlprobe's read surfaces; a child process is told one by its index here. */
const SURFACES: Surface[] = [
  {
    name: 'probe info',
    ours: (q, probe) => runProbe(probe, ['info', q.dir]),
    shape: () => null,
    sql: (f) => `SELECT count(*), min(step), max(step) FROM ${parquetFiles(f.steps)}`,
    detail: () => 'manifest, layout, step range, columns, events, samples (DuckDB: count, min and max of step)',
    // the whole command against three numbers from the footers: not the same work
    lessWork: true,
  },
  {
    // every column in both: `SELECT *` of the same files, checked by the column count
    name: 'all step columns',
    ours: (q) => RunReader.open(q.dir).stepTable(),
    shape: (t) => ({ rows: (t as { rows: number }).rows, columns: (t as { columns: unknown[] }).columns.length }),
    sql: (f) => `SELECT * FROM ${parquetFiles(f.steps)}`,
    detail: (t) => `${(t as { rows: number }).rows} rows × ${(t as { columns: unknown[] }).columns.length} columns`,
  },
  {
    // one column in both (a RunView would add the step column to align the series)
    name: 'one series (kl_mean)',
    ours: (q) => RunReader.open(q.dir).stepTable(['kl_mean']),
    shape: (t) => ({ rows: (t as { rows: number }).rows, columns: (t as { columns: unknown[] }).columns.length }),
    sql: (f) => `SELECT kl_mean FROM ${parquetFiles(f.steps)}`,
    detail: (t) => `${(t as { rows: number }).rows} values`,
  },
  {
    // the bulk read: columns, not a record per sample (as DuckDB's result stays columnar).
    // The table adds `rank` to a projection (a sample's identity), so DuckDB reads it too
    needsSamples: true,
    name: 'samples: top_k of the whole run (no texts)',
    ours: (q) => {
      const t = RunReader.open(q.dir).sampleTable({ reason: 'top_k', columns: ['step', 'sample_id', 'reward_total'] });
      return { rows: t.rows, columns: t.columns.length };
    },
    shape: (s) => s as ResultShape,
    sql: (f) => `SELECT step, sample_id, rank, reward_total FROM ${parquetFiles(f.samples)} WHERE capture_reason = 'top_k'`,
    detail: (s) => `${(s as ResultShape).rows} samples`,
  },
  {
    // every column in both; rows only are compared: a record nests the reward components
    // DuckDB returns as columns, and leaves out null fields
    needsSamples: true,
    name: 'samples: 100 steps in full (texts)',
    ours: (q) => {
      let rows = 0;
      for (const _ of RunReader.open(q.dir).samples({ stepRange: q.window! })) rows++;
      return { rows, columns: null };
    },
    shape: (s) => s as ResultShape,
    sql: (f, q) => `SELECT * FROM ${parquetFiles(f.samples)} WHERE step BETWEEN ${q.window![0]} AND ${q.window![1]}`,
    detail: (s) => `${(s as ResultShape).rows} samples`,
  },
  {
    name: 'probe doctor',
    ours: (q, probe) => runProbe(probe, ['doctor', q.dir]),
    shape: () => null,
    sql: null,
    detail: (_, dir) => `${diagnose(RunReader.open(dir)).findings.length} findings, ${stepCount(dir)} points`,
  },
  {
    name: 'probe diff (the run against itself)',
    ours: (q, probe) => runProbe(probe, ['diff', q.dir, q.dir]),
    shape: () => null,
    sql: null,
    detail: (_, dir) => `${stepCount(dir)} steps × 2, every shared metric`,
  },
  {
    name: 'probe report (HTML, without the browser)',
    ours: async (q, probe) => {
      const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-report-')), 'report.html');
      try {
        await runProbe(probe, ['report', q.dir, '--out', out]);
        return statSync(out).size;
      } finally {
        rmSync(path.dirname(out), { recursive: true, force: true });
      }
    },
    shape: () => null,
    sql: null,
    detail: (size, dir) => `${stepCount(dir)} steps, ${((size as number) / 1024).toFixed(0)} KiB of HTML`,
  },
  {
    name: 'probe watch: catching up',
    ours: (q) => new RunWatcher(q.dir, { haltOn: 'never', minConfidence: 1 }).tick(),
    shape: () => null,
    sql: null,
    detail: (r) => `first look: ${(r as TickResult).points} points, ${(r as TickResult).findings.length} findings`,
  },
];

/** What one of rlprobe's surfaces measured in its process (`probe scale-bench --read`). */
export interface OursAnswer {
  surface: string;
  detail: string;
  figures: CallFigures;
  shape: ResultShape | null;
}

/**
 * Times read surface `index` in this process, which should be a fresh one: the first call
 * (the first touch of the run here: nothing is read before it), then the median of `warm`
 * more. `window` is the samples' 100 steps (see planReads).
 */
export async function readScaleSurface(dir: string, index: number, probe: ProbeRunner, options: { warm: number; window: [number, number] | null }): Promise<OursAnswer> {
  const s = SURFACES[index];
  if (!s) throw new RangeError(`no read surface ${index} (there are ${SURFACES.length})`);
  if (s.needsSamples && options.window === null) throw new RangeError(`read surface ${index} (${s.name}) needs the samples' window`);
  const q: Question = { dir, window: options.window };
  const { figures, last, shape } = await timeFreshCalls(() => s.ours(q, probe), options.warm, s.shape);
  return { surface: s.name, detail: s.detail(last, dir), figures, shape };
}

/** The questions' inputs, from the run's listing (footers only): computed once, asked in every child. */
function planReads(dir: string): { files: RunFiles; window: [number, number] | null; steps: number; samples: number } {
  const reader = RunReader.open(dir);
  const steps = reader.stepFiles();
  const samples = reader.sampleFiles();
  // the middle sampled step and the 99 after it
  const sampled = samples.some((f) => f.rows > 0) ? reader.sampledSteps() : [];
  const from = sampled.length > 0 ? sampled[sampled.length >> 1] : null;
  return {
    files: { steps: steps.map((f) => f.path), samples: samples.map((f) => f.path) },
    window: from === null ? null : [from, from + 99],
    steps: steps.reduce((n, f) => n + f.rows, 0),
    samples: samples.reduce((n, f) => n + f.rows, 0),
  };
}

function shapeText(s: ResultShape): string {
  return s.columns === null ? `${s.rows} rows` : `${s.rows} rows × ${s.columns} columns`;
}

/** DuckDB must answer with what rlprobe answered: different work is no comparison. */
export function checkSameAnswer(surface: string, dir: string, ours: ResultShape | null, duckdb: ResultShape): void {
  if (ours === null) return;
  if (ours.rows === duckdb.rows && (ours.columns === null || ours.columns === duckdb.columns)) return;
  throw new Error(
    `scale-bench: "${surface}" on ${dir}: DuckDB answered ${shapeText(duckdb)}, rlprobe ${shapeText(ours)}; ` +
      'the two read different data, so their times are no comparison (was the run being written?)',
  );
}

export interface ReadOptions {
  /** Calls after the first in each process (default 5). */
  warm?: number;
  /** Node's options for the children (default: this process's, e.g. a TypeScript loader). */
  execArgv?: string[];
}

/**
 * Runs the read phase of `dir`, one fresh process per surface and side: `start(args)` is
 * the node command line (after `execArgv`) that runs `probe ...args`, e.g. `[cli, ...args]`.
 * rlprobe's process then DuckDB's, surface after surface, so a burst of load falls on both.
 * A child that fails, or a DuckDB answer of a different shape, is an error, never a figure.
 */
export function readInChildren(dir: string, start: (probeArgs: string[]) => string[], options: ReadOptions = {}): ReadFigures {
  const warm = options.warm ?? 5;
  const execArgv = options.execArgv ?? process.execArgv;
  const child = <T>(what: string, args: string[]): T => {
    const r = spawnSync(process.execPath, [...execArgv, ...start(args)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}${r.signal ? `, ${r.signal}` : ''}): ${r.stderr}${r.stdout.slice(-2000)}`);
    return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as T;
  };
  const plan = planReads(dir);
  const question: Question = { dir, window: plan.window };
  const date = new Date().toISOString();
  const before = os.loadavg();
  const timings: ReadTiming[] = [];
  const duckdb: ReadFigures['duckdb'] = { available: true, version: null, unavailable: null };
  SURFACES.forEach((s, index) => {
    if (s.needsSamples && plan.window === null) return;
    const windowArgs = plan.window ? ['--window', String(plan.window[0])] : [];
    const ours = child<OursAnswer>(`read surface ${index} (${s.name})`, ['scale-bench', '--read', dir, '--surface', String(index), '--warm', String(warm), ...windowArgs]);
    let theirs: ReadTiming['duckdb'] = null;
    if (s.sql && duckdb.available) {
      const answer = child<DuckDbAnswer>(`DuckDB for ${s.name}`, ['scale-bench', '--duckdb-sql', s.sql(plan.files, question), '--warm', String(warm)]);
      if (answer.available) {
        checkSameAnswer(s.name, dir, ours.shape, answer.shape);
        duckdb.version = answer.version;
        theirs = { ...answer.figures, openMs: answer.openMs };
      } else {
        Object.assign(duckdb, { available: false, unavailable: answer.unavailable });
      }
    }
    timings.push({
      surface: ours.surface,
      detail: ours.detail,
      ours: ours.figures,
      duckdb: theirs,
      ratio: theirs && !s.lessWork ? ours.figures.warmMedianMs / theirs.warmMedianMs : null,
      shape: ours.shape,
    });
  });
  return {
    run: { dir, steps: plan.steps, samples: plan.samples },
    date,
    loadAverage: { before, after: os.loadavg() },
    cpus: os.availableParallelism(),
    warmRuns: warm,
    timings,
    peakRssMiB: Math.max(...timings.map((t) => t.ours.peakRssFirstMiB)),
    duckdb,
  };
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


function ms(x: number): string {
  return x < 1000 ? `${x.toFixed(1)} ms` : `${(x / 1000).toFixed(2)} s`;
}

function loadText(l: number[]): string {
  return l.map((x) => x.toFixed(2)).join(' ');
}

/** The read phase as one table: each surface, ours next to DuckDB's, first call and warm. */
function readTable(r: ReadFigures): string[] {
  const columns = ['ours first', 'ours warm', 'DuckDB first', 'DuckDB warm', 'ratio', 'RSS ours', 'RSS DuckDB'];
  const row = (surface: string, cells: string[], detail = ''): string =>
    `  ${surface.padEnd(44)}${cells.map((c, i) => c.padStart(Math.max(columns[i].length, 9) + 2)).join('')}${detail ? `   ${detail}` : ''}`;
  const duckdb = r.duckdb.available ? `DuckDB ${r.duckdb.version ?? '(not run)'}` : 'no DuckDB';
  const theirs = r.timings.flatMap((t) => (t.duckdb ? [t.duckdb] : []));
  const lines = [
    `  read surfaces ${r.date.slice(0, 16).replace('T', ' ')} UTC; load average ${loadText(r.loadAverage.before)} before, ${loadText(r.loadAverage.after)} after, on ${r.cpus} CPUs; ${duckdb}`,
    `  each side of each surface a fresh process: first = its first call; warm = the median of the ${r.warmRuns === 1 ? 'call' : `${r.warmRuns} calls`} after it;`,
    '  ratio = warm, ours / DuckDB; RSS = peak (VmHWM) after the first call; DuckDB = its scan into its own columnar result',
    row('surface', columns),
  ];
  for (const t of r.timings) {
    const d = t.duckdb;
    lines.push(
      row(
        t.surface,
        [
          ms(t.ours.firstMs),
          ms(t.ours.warmMedianMs),
          d ? ms(d.firstMs) : '—',
          d ? ms(d.warmMedianMs) : '—',
          t.ratio === null ? '—' : `${t.ratio.toFixed(2)}×`,
          `${t.ours.peakRssFirstMiB.toFixed(0)} MiB`,
          d ? `${d.peakRssFirstMiB.toFixed(0)} MiB` : '—',
        ],
        t.detail,
      ),
    );
  }
  if (r.duckdb.unavailable !== null) lines.push(`  ${r.duckdb.unavailable}`);
  const startRss = `before the first call, peak RSS ${median(r.timings.map((t) => t.ours.startRssMiB)).toFixed(0)} MiB for ours`;
  if (theirs.length === 0) lines.push(`  ${startRss} (median of ${r.timings.length} processes)`);
  else {
    lines.push(
      `  ${startRss}, ${median(theirs.map((d) => d.startRssMiB)).toFixed(0)} MiB for DuckDB, which took ${ms(median(theirs.map((d) => d.openMs)))} ` +
        `to import and open (medians of ${r.timings.length} and ${theirs.length} processes)`,
    );
  }
  return lines;
}

export function formatReport(w: WriteFigures | null, r: ReadFigures, startup?: StartupFigures): string {
  const mib = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
  const lines = w
    ? [
        `scale benchmark: ${w.steps} steps, ${w.samplesPerStep} samples kept per step (of ${w.candidatesPerStep} candidates)`,
        `  write       ${w.seconds.toFixed(1)} s in all; ${Math.round(w.stepsPerSecond)} steps/s logged; close + compaction ${w.closeSeconds.toFixed(1)} s`,
        `  kept        ${w.samplesWritten} samples written, ${w.samplesDropped} samples and ${w.stepsDropped} steps dropped`,
        `  on disk     steps.parquet ${mib(w.stepsBytes)}; samples ${mib(w.samplesBytes)} (synthetic text: compresses better than real); run ${mib(w.totalBytes)}`,
        `  peak RSS    write ${w.peakRssMiB.toFixed(0)} MiB; reads (largest, one fresh process per surface) ${r.peakRssMiB.toFixed(0)} MiB`,
      ]
    : [
        `scale benchmark: the run at ${r.run.dir} (${r.run.steps} steps, ${r.run.samples} samples), read only`,
        `  peak RSS    reads (largest, one fresh process per surface) ${r.peakRssMiB.toFixed(0)} MiB`,
      ];
  lines.push('', ...readTable(r));
  if (startup?.timings.length) {
    const load = `load average ${loadText(startup.loadAverage)} on ${startup.cpus} CPUs`;
    lines.push('', `  ${'CLI start (a fresh process each, wall time)'.padEnd(44)} ${'first'.padStart(10)} ${`median of ${startup.timings[0].runs}`.padStart(13)}   ${load}`);
    for (const t of startup.timings) lines.push(`  ${t.command.padEnd(44)} ${`${t.firstMs.toFixed(0)} ms`.padStart(10)} ${`${t.medianMs.toFixed(0)} ms`.padStart(13)}`);
  }
  return lines.join('\n');
}
