/**
 * What does recording cost the training loop?
 *
 *   npm run bench:overhead                  (uses the release addon that `npm ci` builds)
 *   npm run bench:overhead -- --live-doctor (the same with live diagnosis on)
 *   npm run bench:overhead -- --hot-path    (sections 1 and 2 only)
 *
 * 1. `logStep` of a realistic 40-field record in a tight loop, writer thread running: the
 *    whole call (mean per call over batches of fresh records, and per call with its tail),
 *    and where the time goes — each stage of the same code (shape check; validation and field
 *    copy into ring memory; publish) timed on its own over the same records, on a private
 *    ring no writer reads, with the sum of the stages checked against the whole call on that
 *    ring; the whole call on the recorder's own ring then shows what sharing it with the
 *    writer thread adds. Then paced calls, a cold-cache burst, and the GCs of 400,000 calls.
 * 2. `logStep` once per step after 1 ms and 10 ms of other work, against a no-op and a
 *    floor called the same way: the other work either only spins or also writes through
 *    64 MB, as a training step's host work does (every cache level is cold afterwards). The
 *    no-op's rise over its back-to-back time is what the timer and a call cost from cold
 *    caches; the floor's (the record's values copied into a small reused array) is what
 *    reading the record costs any recorder; logStep's rise is compared with both.
 * 3. A mock training loop (busy 1 ms and 10 ms steps) with no recording, with rlprobe, and
 *    logging the same object with pino to a file (what a TypeScript user would reach for).
 * 4. Size on disk of 100,000 steps of that record after compaction.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';

import pino from 'pino';

import { Recorder } from '../dist/index.js'; // what users run (built by npm ci)
import type { StepRecord } from '../dist/index.js';
import { stepColumnKind } from '../dist/native.js';
import type { NativeRecorder } from '../dist/native.js';
import { EventLines } from '../dist/recorder/event-lines.js';
import { StepLogger } from '../dist/recorder/step-logger.js';
import { makeRecord } from './step-record.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-'));
// `-- --live-doctor`: the same figures with live diagnosis on (its thread competes for
// the cores the training loop uses)
const liveDoctor = process.argv.includes('--live-doctor');
const hotPathOnly = process.argv.includes('--hot-path');
const opts = { installHandlers: false, captureEnvironment: false, doctor: { live: liveDoctor } } as const;

function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const ns = (x: number) => `${x.toFixed(0)} ns`;
const tail = (s: ArrayLike<number>) =>
  `median ${ns(quantile(s, 0.5))}   p90 ${ns(quantile(s, 0.9))}   p99 ${ns(quantile(s, 0.99))}   p99.9 ${ns(quantile(s, 0.999))}`;

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
function timeCalls(rec: Recorder, records: StepRecord[] | null, calls: number, gapUs: number, timer: number): Float64Array {
  const samples = new Float64Array(calls);
  const perBurst = 4000; // under the 8192-record queue: the writer drains between bursts
  for (let i = 0; i < calls; i++) {
    if (gapUs > 0) spin(performance.now() + gapUs / 1000);
    const r = records === null ? makeRecord(i) : records[i % records.length];
    const t0 = performance.now();
    rec.logStep(r);
    const t1 = performance.now();
    samples[i] = (t1 - t0) * 1e6 - timer;
    if (i % perBurst === perBurst - 1) rec.flushSync(30_000); // not timed
  }
  return samples.sort();
}

/** Mean ns per call of `batches` batches of `size` calls, `gapUs` of busy work between batches. */
function batchMeans(rec: Recorder, batches: number, size: number, gapUs: number): Float64Array {
  const means = new Float64Array(batches);
  const fresh: StepRecord[] = new Array(size);
  let k = 0;
  for (let b = 0; b < batches; b++) {
    if (gapUs > 0) spin(performance.now() + gapUs / 1000);
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

// ---- 1. the stages of the hot path

/**
 * A `StepLogger` over a private ring of the recorder's size that no writer thread reads: the
 * production code, with the native side reduced to what the hot path asks of it (column ids
 * from a local registry, the addon's own column kinds).
 */
function privateLogger(slots: number): { logger: StepLogger; drain: () => void } {
  const memory = new Float64Array(32 + slots);
  const ids = new Map<string, number>();
  const native = {
    handle: 0,
    sharedRing: () => memory,
    ringMagic: () => memory[4],
    ringMaxRecords: () => 1 << 30,
    wakeEvery: () => 200,
    wake: () => {},
    registerAll: (keys: string[]) =>
      keys.map((key) => {
        if (!ids.has(key)) ids.set(key, ids.size);
        return { id: ids.get(key)!, kind: stepColumnKind(key) };
      }),
    bindScratch: () => {},
    reportBad: () => {},
    logEvent: () => true,
  } as unknown as NativeRecorder;
  const logger = new StepLogger(native, new EventLines(0), () => {});
  const i32 = new Int32Array(memory.buffer);
  // the consumer's part, minus reading: every record published so far counts as taken
  const drain = () => {
    Atomics.store(i32, 32, Atomics.load(i32, 0));
    Atomics.store(i32, 34, Atomics.load(i32, 2));
  };
  return { logger, drain };
}

/** The ring's slot count for the default queue (8192 records × 96 slots, a power of two). */
const RING_SLOTS = 1 << 20;

interface StageFigures {
  shape: number;
  copy: number;
  publish: number;
  whole: number;
  wholeShared: number;
}

/**
 * Each stage of `logStep` timed on its own over the same batch of fresh records (mean per
 * record, median over batches), the whole call on the same private ring, and the whole call
 * on `rec`'s ring. The stages are the very functions `log` runs (`StepLogger.stages()`).
 */
function stageBreakdown(rec: Recorder, batches: number, size: number): StageFigures {
  const { logger, drain } = privateLogger(RING_SLOTS);
  const stages = logger.stages();
  if (stages === null) throw new Error('the private ring is not shared');
  const { encoder, ring, limit, publish } = stages;
  const f64 = ring.f64;
  const fresh: StepRecord[] = new Array(size);
  const shapes: Array<ReturnType<typeof encoder.shapeFor>> = new Array(size);
  const lengths = new Int32Array(size);
  for (let i = 0; i < 2000; i++) logger.log(makeRecord(i)); // learn the shape, warm up
  drain();
  const per = { shape: [] as number[], copy: [] as number[], publish: [] as number[], whole: [] as number[], wholeShared: [] as number[] };
  let sink = 0;
  let pos = 0; // where the copy stage writes: the same walk through ring memory as the ring's
  let k = 0;
  for (let b = 0; b < batches; b++) {
    for (let i = 0; i < size; i++) fresh[i] = makeRecord(k + i);
    k += size;
    // stage 1: the shape check
    let t0 = performance.now();
    for (let i = 0; i < size; i++) shapes[i] = encoder.shapeFor(fresh[i]);
    per.shape.push(((performance.now() - t0) * 1e6) / size);
    // stage 2: validation and field copy, into ring memory the way the ring walks it
    t0 = performance.now();
    for (let i = 0; i < size; i++) {
      const n = shapes[i]!.encode(fresh[i], f64, 33 + pos, limit);
      lengths[i] = n;
      pos = pos + n + 1 + limit < RING_SLOTS ? pos + n + 1 : 0;
    }
    per.copy.push(((performance.now() - t0) * 1e6) / size);
    // stage 3: reserve, stamp, count, publish, wake-up count
    t0 = performance.now();
    for (let i = 0; i < size; i++) {
      const offset = ring.reserve(limit);
      if (offset < 0) throw new Error('the private ring is full');
      publish(offset, lengths[i]);
    }
    per.publish.push(((performance.now() - t0) * 1e6) / size);
    drain();
    // the whole call, on the same ring
    t0 = performance.now();
    for (let i = 0; i < size; i++) logger.log(fresh[i]);
    per.whole.push(((performance.now() - t0) * 1e6) / size);
    drain();
    // the whole call on the recorder's ring, which its writer thread drains
    t0 = performance.now();
    for (let i = 0; i < size; i++) rec.logStep(fresh[i]);
    per.wholeShared.push(((performance.now() - t0) * 1e6) / size);
    if (k % 4000 < size) rec.flushSync(30_000); // not timed: stay under the queue bound
    sink += lengths[0];
  }
  if (sink <= 0) throw new Error('the copy stage wrote nothing');
  return { shape: median(per.shape), copy: median(per.copy), publish: median(per.publish), whole: median(per.whole), wholeShared: median(per.wholeShared) };
}

function printStages(s: StageFigures): void {
  const sum = s.shape + s.copy + s.publish;
  const share = (x: number) => `${((x / sum) * 100).toFixed(0).padStart(3)} %`;
  console.log('  stages, each timed alone over the same batches of 64 fresh records (mean per record, median of batches), on a private ring:');
  console.log(`    shape check (key count, shape lookup)                   ${ns(s.shape).padStart(7)}  ${share(s.shape)}`);
  console.log(`    validation + field copy into ring memory (one pass)     ${ns(s.copy).padStart(7)}  ${share(s.copy)}`);
  console.log(`    publish (reserve, stamp, count, commit, wake-up count)  ${ns(s.publish).padStart(7)}  ${share(s.publish)}`);
  console.log(`    sum ${ns(sum)}; the whole logStep on that ring ${ns(s.whole)} (sum/whole ${(sum / s.whole).toFixed(2)})`);
  console.log(`  the whole logStep on the recorder's ring, which the writer thread drains alongside: ${ns(s.wholeShared)} (sharing the ring: ${s.wholeShared >= s.whole ? '+' : ''}${ns(s.wholeShared - s.whole)})`);
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
  console.log(`\n## logStep, 40-field record, writer thread running${liveDoctor ? ', live doctor on' : ''}`);
  // back to back: mean per call over batches of 64 (two clock reads per batch), then per
  // call for the tail (the timer's median cost subtracted)
  const tight = batchMeans(rec, 4000, 64, 0);
  const tightCalls = timeCalls(rec, null, 100_000, 0, timer);
  console.log(`  tight loop, batches of 64 fresh records (mean per call): ${tail(tight)}`);
  console.log(`  tight loop, one call at a time (timer cost ${ns(timer)} subtracted): ${tail(tightCalls)}`);
  printStages(stageBreakdown(rec, 3000, 64));
  const batched = batchMeans(rec, 10_000, 32, 50);
  const paced = timeCalls(rec, null, 100_000, 20, timer);
  const burst = timeCalls(rec, records, 100_000, 0, timer);
  const c = rec.counters;
  rec.close();
  console.log(`  batches of 32 fresh records, 50 µs of work between batches (mean per call): ${tail(batched)}`);
  console.log(`  one fresh record at a time, 20 µs of work between calls: ${tail(paced)}`);
  console.log(`  back to back over 4096 pre-built records (cold in cache; the writer drains alongside): ${tail(burst)}`);
  console.log(`  dropped: ${c.dropped}   bad: ${c.bad}`);
}

// ---- 2. after other work

/** 64 MB written one cache line at a time: what evicts every cache level. */
const evictor = new Float64Array(8 << 20);
let evictAt = 0;

function otherWork(ms: number, touchMemory: boolean): void {
  const until = performance.now() + ms;
  if (!touchMemory) {
    spin(until);
    return;
  }
  while (performance.now() < until) {
    for (let i = 0; i < 4096; i++) {
      evictor[evictAt] += 1;
      evictAt = (evictAt + 8) & (evictor.length - 1);
    }
  }
}

interface GapFigures {
  log: Float64Array;
  noop: Float64Array;
  floor: Float64Array;
}

/** Where the floor's copy goes: a small array, reused (warm unless the work evicted it). */
const floorSlots = new Float64Array(64);

/**
 * The floor of any recorder: every value of the record (numbers, the dicts' numbers, the
 * list's items) read and written into a small array that is used again and again.
 */
function copyValues(r: StepRecord): void {
  let k = 0;
  const rec = r as unknown as Record<string, unknown>;
  for (const key in rec) {
    const v = rec[key];
    if (typeof v === 'number') {
      floorSlots[k++ & 63] = v;
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) floorSlots[k++ & 63] = v[i] as number;
    } else if (v !== null && typeof v === 'object') {
      const o = v as Record<string, number>;
      for (const inner in o) floorSlots[k++ & 63] = o[inner];
    }
  }
}

/**
 * `calls` logStep calls, as many no-op calls and as many floor copies through the same call
 * site, in rotating order, each after `ms` of other work (0: back to back). The record is
 * built after the work, as a training loop does.
 */
function afterWork(rec: Recorder, calls: number, ms: number, touchMemory: boolean): GapFigures {
  let noopSink = 0;
  const noop = (r: StepRecord) => {
    noopSink += r.step;
  };
  const log = (r: StepRecord) => rec.logStep(r);
  const kinds = [log, noop, copyValues];
  const times = { log: new Float64Array(calls), noop: new Float64Array(calls), floor: new Float64Array(calls) };
  const into = [times.log, times.noop, times.floor];
  for (let i = 0; i < 3 * calls; i++) {
    // rotate the order in each triple, so no call always follows the same one
    const round = Math.floor(i / 3);
    const which = (i + round) % 3;
    if (ms > 0) otherWork(ms, touchMemory);
    const r = makeRecord(round);
    const call = kinds[which];
    const t0 = performance.now();
    call(r);
    const t1 = performance.now();
    into[which][round] = (t1 - t0) * 1e6;
    if (ms === 0 && i % 6000 === 5999) rec.flushSync(30_000);
  }
  if (noopSink < 0) throw new Error('unreachable');
  for (const t of into) t.sort();
  return times;
}

function gapOverhead(): void {
  const rec = new Recorder(path.join(tmp, 'gaps'), opts);
  for (let i = 0; i < 20_000; i++) {
    rec.logStep(makeRecord(i));
    if (i % 4000 === 3999) rec.flushSync(30_000);
  }
  rec.flushSync(30_000);
  const warm = afterWork(rec, 20_000, 0, false);
  rec.flushSync(30_000);
  const warmLog = quantile(warm.log, 0.5);
  const warmNoop = quantile(warm.noop, 0.5);
  const warmFloor = quantile(warm.floor, 0.5);
  console.log(`\n## logStep once per step after other work, against a no-op and the floor called the same way (timer not subtracted)`);
  console.log(`  the floor: the record's 47 values read (for…in, as a recorder that is not told the fields must) into a small reused array`);
  console.log(`  back to back: logStep median ${ns(warmLog)}, no-op median ${ns(warmNoop)}, floor median ${ns(warmFloor)}`);
  for (const touchMemory of [false, true]) {
    for (const ms of [1, 10]) {
      const g = afterWork(rec, ms === 1 ? 1000 : 200, ms, touchMemory);
      const logRise = quantile(g.log, 0.5) - warmLog;
      const noopRise = quantile(g.noop, 0.5) - warmNoop;
      const floorRise = quantile(g.floor, 0.5) - warmFloor;
      const what = touchMemory ? 'writing through 64 MB' : 'spinning';
      const times = (x: number, of: number) => `${(x / Math.max(1, of)).toFixed(1)}×`;
      console.log(
        `  after ${String(ms).padStart(2)} ms ${what.padEnd(21)}: logStep median ${ns(quantile(g.log, 0.5))} (p90 ${ns(quantile(g.log, 0.9))}), ` +
          `no-op ${ns(quantile(g.noop, 0.5))}, floor ${ns(quantile(g.floor, 0.5))}; ` +
          `rise ${ns(logRise)}: ${times(logRise, noopRise)} the no-op's, ${times(logRise, floorRise)} the floor's`,
      );
    }
  }
  const c = rec.counters;
  rec.close();
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

// ---- 3. a mock training loop

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

// ---- 4. size on disk

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
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`rlprobe overhead benchmark — node ${process.version}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}; load average ${load}`);
  logStepLatency();
  await allocationCheck();
  gapOverhead();
  if (!hotPathOnly) {
    trainingLoop(1, 2000, 5);
    trainingLoop(10, 300, 5);
    sizeOnDisk(100_000);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
