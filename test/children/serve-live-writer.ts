/**
 * Child for the probe serve tests: records a GRPO run chunk by chunk until it has logged
 * `steps` steps (then closes, or with `--hang` waits to be killed).
 *
 *   node --import tsx test/children/serve-live-writer.ts <dir> <steps> [--collapse-at N] [--live-doctor] [--hang] [--chunk N] [--pause MS]
 *
 * Entropy collapses from step N when asked. After each chunk the steps so far are
 * published (flushSync) and "flushed <n> <ms>" printed: steps below n are on disk, at
 * Date.now() = ms (the same clock as the server's and the page's, for latency figures).
 * Each step has 4 samples; every 10th step's first sample is inside a rollout span.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { Recorder } from '../../ts/index.js';
import { healthyGrpo, injectEntropyCollapse } from '../helpers/doctor-runs.js';

const args = process.argv.slice(2);
const [dir, stepsText] = args;
const flag = (name: string) => args.includes(name);
const value = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
if (!dir || !stepsText) {
  console.error('usage: serve-live-writer.ts <dir> <steps> [--collapse-at N] [--live-doctor] [--hang] [--chunk N] [--pause MS]');
  process.exit(64);
}
const steps = Number(stepsText);
const chunk = value('--chunk', 20);
const pause = value('--pause', 150);
const collapseAt = value('--collapse-at', -1);

let points = healthyGrpo({ steps, samplesPerStep: 4, seed: 5 });
if (collapseAt >= 0) points = injectEntropyCollapse(points, collapseAt);
const rec = new Recorder(dir, {
  algorithm: 'grpo',
  runId: 'live-writer',
  modelName: 'tiny-live',
  captureEnvironment: false,
  flushIntervalMs: 3_600_000,
  flushSteps: 1_000_000,
  ...(flag('--live-doctor') ? { doctor: { live: true, haltOn: 'never' as const, evaluateEvery: 10, pollMs: 50 } } : {}),
});

for (let at = 0; at < points.length; at += chunk) {
  for (const p of points.slice(at, at + chunk)) {
    rec.logStep(p.record);
    const step = p.record.step;
    const samples = p.samples ?? [];
    if (step % 10 === 0 && samples.length) {
      await rec.span('rollout', `rollout ${step}`, async () => {
        await rec.span('turn', 'turn 0', (turn) => turn.setAttribute('message', `step ${step} thinks`));
        rec.logSamples(samples.slice(0, 1), { step, select: false });
      });
      rec.logSamples(samples.slice(1), { step, select: false });
    } else if (samples.length) rec.logSamples(samples, { step, select: false });
  }
  if (!rec.flushSync(30_000)) {
    console.error(`flushSync timed out at ${at}`);
    process.exit(70);
  }
  console.log(`flushed ${Math.min(points.length, at + chunk)} ${Date.now()}`);
  await sleep(pause);
}
if (flag('--hang')) {
  console.log('hanging');
  await sleep(3_600_000);
}
rec.close();
console.log('closed');
