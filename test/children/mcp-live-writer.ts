/**
 * Child for test/mcp-live.test.ts: records a run until it is killed.
 *
 *   node --import tsx test/children/mcp-live-writer.ts <dir>
 *
 * 20 steps every 100 ms, each with 4 samples; every 10th step's first sample inside a
 * rollout span with a turn. After each chunk the steps so far are published (flushSync)
 * and "flushed <n>" printed: steps below n are on disk.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { Recorder } from '../../ts/index.js';

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: mcp-live-writer.ts <dir>');
  process.exit(64);
}

const rec = new Recorder(dir, { algorithm: 'grpo', runId: 'live', captureEnvironment: false, flushIntervalMs: 100, flushSteps: 50 });

let step = 0;
for (;;) {
  for (let i = 0; i < 20; i++, step++) {
    rec.logStep({ step, reward_mean: Math.sin(step / 30), loss: 1 / (1 + step), kl_mean: 0.001 * step, entropy_mean: 0.8 });
    const samples = Array.from({ length: 4 }, (_, k) => ({ sample_id: `s${step}-${k}`, completion_text: `completion ${step}/${k}`, reward_total: (step + k) % 7 }));
    if (step % 10 === 0) {
      await rec.span('rollout', `rollout ${step}`, async () => {
        await rec.span('turn', 'turn 0', (turn) => turn.setAttribute('message', `step ${step}`));
        rec.logSamples(samples.slice(0, 1), { step, select: false });
      });
      rec.logSamples(samples.slice(1), { step, select: false });
    } else rec.logSamples(samples, { step, select: false });
  }
  if (!rec.flushSync(30_000)) {
    console.error(`flushSync timed out at ${step}`);
    process.exit(70);
  }
  console.log(`flushed ${step}`);
  await sleep(100);
}
