/**
 * What does recording cost the training loop?
 *
 *   npm run bench:overhead            (uses the release addon that `npm ci` builds)
 *   npm run bench:overhead -- --live-doctor
 *
 * 1. ns per `logStep` of a realistic 40-field record, writer thread running: batches of
 *    fresh records (mean per call), single calls (timer cost subtracted) and a cold-cache
 *    burst, each with median and tail; then GCs during 400,000 calls on pre-built records
 *    (steady state allocates nothing).
 * 2. A mock training loop (busy 1 ms and 10 ms steps) with no recording, with rlprobe, and
 *    logging the same object with pino to a file (what a TypeScript user would reach for).
 * 3. Size on disk of 100,000 steps of that record after compaction.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';

import pino from 'pino';

import { Recorder } from '../dist/index.js'; // what users run (built by npm ci)
import type { StepRecord } from '../dist/index.js';
import { makeRecord } from './step-record.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-'));
// `-- --live-doctor`: the same figures with live diagnosis on (its thread competes for
// the cores the training loop uses)
const liveDoctor = process.argv.includes('--live-doctor');
const opts = { installHandlers: false, captureEnvironment: false, doctor: { live: liveDoctor } } as const;

function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function timerCost(): number {
  const samples = new Float64Array(200_000);
  for (let i = 0; i < samples.length; i++) {
    const t0 = performance.now();
    const t1 = performance.now();
    samples[i] = (t1 - t0) * 1e6;
  }
  samples.sort();
  return quantile(samples, 0.5);
}

function spin(untilMs: number): void {
  while (performance.now() < untilMs) {
    // the GPU step
  }
}

/** Times `calls` logStep calls one by one; `gapUs` of busy work before each (0: a burst). */
function timeCalls(rec: Recorder, records: StepRecord[], calls: number, gapUs: number, timer: number): Float64Array {
  const samples = new Float64Array(calls);
  const perBurst = 4000; // under the 8192-record queue: the writer drains between bursts
  for (let i = 0; i < calls; i++) {
    if (gapUs > 0) spin(performance.now() + gapUs / 1000);
    const r = gapUs > 0 ? makeRecord(i) : records[i % records.length];
    const t0 = performance.now();
    rec.logStep(r);
    const t1 = performance.now();
    samples[i] = (t1 - t0) * 1e6 - timer;
    if (i % perBurst === perBurst - 1) rec.flushSync(30_000); // not timed
  }
  return samples.sort();
}

/** Mean ns per call of `batches` batches of `size` calls, `gapUs` of busy work between batches. */
function batchMeans(rec: Recorder, records: StepRecord[], batches: number, size: number, gapUs: number): Float64Array {
  const means = new Float64Array(batches);
  const fresh: StepRecord[] = new Array(size);
  let k = 0;
  for (let b = 0; b < batches; b++) {
    spin(performance.now() + gapUs / 1000);
    // built just before logging, as a training loop does (a record from long ago would
    // be cold in the cache and measure memory, not rlprobe)
    for (let i = 0; i < size; i++) fresh[i] = makeRecord(k + i);
    const t0 = performance.now();
    for (let i = 0; i < size; i++) rec.logStep(fresh[i]);
    k += size;
    means[b] = ((performance.now() - t0) * 1e6) / size;
    if (k % 4000 < size) rec.flushSync(30_000); // not timed: stay under the queue bound
  }
  return means.sort();
}

function logStepLatency(): void {
  const rec = new Recorder(path.join(tmp, 'latency'), opts);
  const records = Array.from({ length: 4096 }, (_, i) => makeRecord(i));
  for (let i = 0; i < 20_000; i++) {
    rec.logStep(records[i % records.length]);
    if (i % 4000 === 3999) rec.flushSync(30_000);
  }
  rec.flushSync(30_000);
  const timer = timerCost();
  // batches of 32: two clock reads per 32 calls, so the clock does not distort the median
  const batched = batchMeans(rec, records, 10_000, 32, 50);
  // one by one: the tail (p99) needs per-call times; the timer's median cost is subtracted
  const paced = timeCalls(rec, records, 100_000, 20, timer);
  const burst = timeCalls(rec, records, 100_000, 0, timer);
  const c = rec.counters;
  rec.close();
  const line = (s: Float64Array) =>
    `median ${quantile(s, 0.5).toFixed(0)} ns   p90 ${quantile(s, 0.9).toFixed(0)} ns   p99 ${quantile(s, 0.99).toFixed(0)} ns   p99.9 ${quantile(s, 0.999).toFixed(0)} ns`;
  console.log(`\n## logStep, 40-field record, writer thread running${liveDoctor ? ', live doctor on' : ''}`);
  console.log(`  batches of 32 fresh records, 50 µs of work between batches (mean per call): ${line(batched)}`);
  console.log(`  one fresh record at a time, 20 µs of work between calls (timer cost ${timer.toFixed(0)} ns subtracted): ${line(paced)}`);
  console.log(`  back to back over 4096 pre-built records (cold in cache; the writer drains alongside): ${line(burst)}`);
  console.log(`  dropped: ${c.dropped}   bad: ${c.bad}`);
}

/** Garbage collections during logStep calls over pre-built records (nothing else allocates). */
async function allocationCheck(): Promise<void> {
  const rec = new Recorder(path.join(tmp, 'alloc'), opts);
  const records = Array.from({ length: 1024 }, (_, i) => makeRecord(i));
  for (let i = 0; i < 8000; i++) {
    rec.logStep(records[i % records.length]);
    if (i % 4000 === 3999) rec.flushSync(30_000);
  }
  rec.flushSync(30_000);
  let gcs = 0;
  const obs = new PerformanceObserver((list) => {
    gcs += list.getEntries().length;
  });
  obs.observe({ entryTypes: ['gc'] });
  const calls = 400_000;
  for (let i = 0; i < calls; i++) {
    rec.logStep(records[i & 1023]);
    if ((i & 4095) === 4095) rec.flushSync(30_000);
  }
  await new Promise((resolve) => setTimeout(resolve, 100)); // GC entries arrive asynchronously
  obs.disconnect();
  rec.close();
  console.log(`  garbage collections during ${calls} logStep calls on pre-built records: ${gcs} (the flushSync calls between bursts included)`);
}

type Sink = (r: StepRecord) => void;

function loop(stepMs: number, steps: number, sink: Sink | null): number {
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) {
    // a fixed amount of work per step, so whatever logging costs adds to the total
    spin(performance.now() + stepMs);
    // the record is built every step in all variants, as a trainer does
    const r = makeRecord(s);
    if (sink) sink(r);
  }
  return performance.now() - t0;
}

function trainingLoop(stepMs: number, steps: number, reps: number): void {
  const variants: Array<[string, () => { sink: Sink | null; done: () => void }]> = [
    ['no recording', () => ({ sink: null, done: () => {} })],
    ['rlprobe', () => {
      const rec = new Recorder(path.join(tmp, `loop-${stepMs}-${Math.random()}`), opts);
      return { sink: (r) => rec.logStep(r), done: () => void rec.close() };
    }],
    ['pino to a file', () => {
      const dest = pino.destination({ dest: path.join(tmp, `pino-${stepMs}-${Math.random()}.log`), sync: false, minLength: 4096 });
      const logger = pino(dest);
      return { sink: (r) => logger.info(r), done: () => dest.end() };
    }],
  ];
  const times = new Map<string, number[]>(variants.map(([n]) => [n, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const [name, make] of variants) {
      const v = make();
      times.get(name)!.push(loop(stepMs, steps, v.sink));
      v.done();
    }
  }
  const base = median(times.get('no recording')!);
  console.log(`\n## mock training loop: ${steps} steps of ${stepMs} ms, median of ${reps} alternating runs`);
  for (const [name] of variants) {
    const m = median(times.get(name)!);
    const extraPerStep = ((m - base) / steps) * 1e3;
    console.log(`  ${name.padEnd(16)} ${m.toFixed(1)} ms   overhead ${(((m - base) / base) * 100).toFixed(3)} %   (${extraPerStep.toFixed(2)} µs/step)`);
  }
}

function sizeOnDisk(steps: number): void {
  const dir = path.join(tmp, 'size');
  const rec = new Recorder(dir, opts);
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) {
    rec.logStep(makeRecord(s));
    if (s % 4000 === 3999) rec.flushSync(30_000); // stay under the queue bound: size, not drops, is measured
  }
  const summary = rec.close();
  const ms = performance.now() - t0;
  const bytes = statSync(path.join(dir, 'steps.parquet')).size;
  console.log(`\n## ${steps} steps of the 40-field record`);
  console.log(`  steps.parquet after compaction: ${(bytes / 1e6).toFixed(2)} MB (${(bytes / steps).toFixed(1)} B/step); written ${summary.counters.written}, dropped ${summary.counters.dropped}; record+flush+compact ${ms.toFixed(0)} ms`);
}

try {
  console.log(`rlprobe overhead benchmark — node ${process.version}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`);
  logStepLatency();
  await allocationCheck();
  trainingLoop(1, 2000, 5);
  trainingLoop(10, 300, 5);
  sizeOnDisk(100_000);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
