/**
 * Child for test/kill-cadence.test.ts: a training loop at a fixed rate that logs, per step,
 * a batch of samples (default selection), the step, and every 10th step an event; it
 * yields to the event loop every 10 steps, as an async training loop does. Runs until it
 * is SIGKILLed.
 *
 *   node --import tsx test/children/cadence-writer.ts <dir> <stepsPerSecond> <flushSteps> <flushIntervalMs>
 *
 * Prints "ready", then "logged <n>" after every step (steps below n were handed to logStep).
 */
import { Recorder } from '../../ts/index.js';

const [dir, rateArg, flushStepsArg, intervalArg] = process.argv.slice(2);
const rate = Number(rateArg);
const rec = new Recorder(dir, { algorithm: 'grpo', captureEnvironment: false, flushSteps: Number(flushStepsArg), flushIntervalMs: Number(intervalArg) });
console.log('ready');

const start = performance.now();
let step = 0;
function tenSteps(): void {
  for (let i = 0; i < 10; i++, step++) {
    // paced: step s is not logged before s / rate seconds have passed
    while (performance.now() - start < (step * 1000) / rate) {
      // a training step's work
    }
    rec.logSamples(
      Array.from({ length: 8 }, (_, k) => ({ prompt_text: `p${step}`, completion_text: `c${step}.${k}`, reward_total: k / 8, group_id: `g${k % 2}` })),
      { step },
    );
    rec.logStep({ step, loss: 1 / (step + 1), reward_mean: step % 7, kl_mean: 0.01 });
    if (step % 10 === 0) rec.logEvent('mark', { step, message: `mark ${step}` });
    console.log(`logged ${step + 1}`);
  }
  setImmediate(tenSteps);
}
tenSteps();
