/**
 * What `logSamples` costs the training loop: 64 samples of about 2 KB a call (a GRPO
 * step's rollouts), each text a fresh string as a tokenizer's decode makes it, then a
 * `logStep` for the step. The recorder as users get it (exit hooks installed: the hand-over
 * waits for a turn only then).
 *
 * - a trainer that awaits between the two (its optimizer step): the logSamples call hands
 *   the batch over; selection and encoding run at the event loop's next turn;
 * - the whole cost to the thread a step: the loop's time with rlprobe minus the same loop
 *   with both calls no-ops, medians of interleaved rounds;
 * - logStep in the same turn as logSamples (a loop that does not yield between them):
 *   that logStep encodes the samples first, so a step never reaches disk before them;
 * - Python rlprobe's `log_samples` on the same batches, when the interop venv has it.
 *
 *   npm run bench:log-samples
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';

import { Recorder } from '../dist/index.js';

const STEPS = 3000;
const PER_CALL = 64;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const corpus = Buffer.from(Array.from({ length: 200_000 }, (_, i) => 'the of and to in is that for it reward proof answer step '.split(' ')[(i * 7919) % 14]).join(' '), 'latin1');

/** A fresh flat string of `n` characters from the corpus (as a decode produces). */
function fresh(n: number, seed: number): string {
  const at = (seed * 2654435761) % (corpus.length - n);
  return corpus.toString('latin1', at, at + n);
}

function batch(step: number): Array<Record<string, unknown>> {
  return Array.from({ length: PER_CALL }, (_, i) => ({
    sample_id: `s${step}-${i}`,
    group_id: `g${step}-${i >> 3}`,
    prompt_text: fresh(500, step * 131 + i),
    completion_text: fresh(1500, step * 977 + i * 13),
    reward_total: ((step * 31 + i * 17) % 101) / 50 - 1,
    advantage: ((i * 7) % 13) / 6 - 1,
    completion_len: 300 + i,
    truncated: i % 29 === 0,
    reward_components: { format: 1, correctness: (i % 5) / 4 },
  }));
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

interface LoopFigures {
  samplesMedianUs: number;
  samplesP99Us: number;
  stepMedianUs: number;
  stepP99Us: number;
  /** The loop's time a step, in µs. */
  stepUs: number;
}

/**
 * One loop of STEPS steps: rollouts (a turn), logSamples, the optimizer step (a turn unless
 * `sameTurn`), logStep. `log` false makes both calls no-ops (the baseline).
 */
async function loop(log: boolean, sameTurn: boolean): Promise<LoopFigures> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-bench-log-samples-'));
  const rec = new Recorder(dir, { captureEnvironment: false, sampleQueueBytes: 1024 * 1024 * 1024 });
  const samples: number[] = [];
  const steps: number[] = [];
  const t0 = performance.now();
  for (let step = 0; step < STEPS; step++) {
    await nextTurn();
    const b = batch(step);
    let t = performance.now();
    if (log) rec.logSamples(b as never, { step });
    samples.push((performance.now() - t) * 1000);
    if (!sameTurn) await nextTurn();
    t = performance.now();
    if (log) rec.logStep({ step, loss: 1 / (step + 1), reward_mean: b.length });
    steps.push((performance.now() - t) * 1000);
  }
  // what is still handed over is part of the loop's cost
  rec.flushSync(60_000);
  const stepUs = ((performance.now() - t0) * 1000) / STEPS;
  rec.close();
  rmSync(dir, { recursive: true, force: true });
  const s = samples.slice(100);
  const l = steps.slice(100);
  return { samplesMedianUs: quantile(s, 0.5), samplesP99Us: quantile(s, 0.99), stepMedianUs: quantile(l, 0.5), stepP99Us: quantile(l, 0.99), stepUs };
}

function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

/** Python rlprobe's log_samples on batches of the same shape, or null without the venv. */
function python(): { medianUs: number; p99Us: number } | null {
  const py = spawnSync(process.execPath, [path.join(import.meta.dirname, '..', 'scripts', 'setup-python.mjs')], { encoding: 'utf8' });
  const exe = py.stdout.trim().split('\n').at(-1) ?? '';
  if (py.status !== 0 || !exe) return null;
  const script = `
import json, tempfile, time
from rlprobe import Recorder
corpus = ' '.join('the of and to in is that for it reward proof answer step '.split(' ')[(i * 7919) % 14] for i in range(200000))
def fresh(n, seed):
    at = (seed * 2654435761) % (len(corpus) - n)
    return ''.join([corpus[at:at + n]])
rec = Recorder(tempfile.mkdtemp(), capture_env=False, install_handlers=False)
times = []
for step in range(${STEPS}):
    b = [dict(sample_id=f's{step}-{i}', group_id=f'g{step}-{i >> 3}', prompt_text=fresh(500, step * 131 + i), completion_text=fresh(1500, step * 977 + i * 13),
              reward_total=((step * 31 + i * 17) % 101) / 50 - 1, advantage=((i * 7) % 13) / 6 - 1, completion_len=300 + i, truncated=i % 29 == 0,
              reward_components=dict(format=1.0, correctness=(i % 5) / 4)) for i in range(${PER_CALL})]
    t = time.perf_counter_ns()
    rec.log_samples(step, b)
    times.append((time.perf_counter_ns() - t) / 1000)
rec.close()
w = sorted(times[100:])
print(json.dumps(dict(medianUs=w[len(w) // 2], p99Us=w[int(0.99 * len(w))])))
`;
  const r = spawnSync(exe, ['-c', script], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`Python rlprobe's benchmark failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? 'null') as { medianUs: number; p99Us: number };
}

const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
const awaiting: LoopFigures[] = [];
const sameTurn: LoopFigures[] = [];
const extra: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const base = await loop(false, false);
  const withRec = await loop(true, false);
  awaiting.push(withRec);
  extra.push(withRec.stepUs - base.stepUs);
  sameTurn.push(await loop(true, true));
}
const py = python();
const f = (x: number) => `${x.toFixed(1)} µs`;
const m = (xs: LoopFigures[], k: keyof LoopFigures) => f(median(xs.map((x) => x[k])));
console.log(`logSamples, ${PER_CALL} samples of ~2 KB a call, then logStep; ${STEPS} steps a loop, medians of ${ROUNDS} rounds (load average ${load} on ${os.availableParallelism()} CPUs)`);
console.log(`  awaiting between them   logSamples median ${m(awaiting, 'samplesMedianUs')}  p99 ${m(awaiting, 'samplesP99Us')}   logStep median ${m(awaiting, 'stepMedianUs')}  p99 ${m(awaiting, 'stepP99Us')}`);
console.log(`  whole cost a step        ${f(median(extra))}   (the loop's time a step with rlprobe, minus with both calls no-ops: the deferred selection and encoding included)`);
console.log(`  same turn                logSamples median ${m(sameTurn, 'samplesMedianUs')}  p99 ${m(sameTurn, 'samplesP99Us')}   logStep median ${m(sameTurn, 'stepMedianUs')}  p99 ${m(sameTurn, 'stepP99Us')}   (that logStep encodes the samples first)`);
console.log(py ? `  Python rlprobe log_samples median ${f(py.medianUs)}  p99 ${f(py.p99Us)}` : '  Python rlprobe: not measured (no interop venv: node scripts/setup-python.mjs)');
