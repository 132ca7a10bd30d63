/**
 * Child for test/samples.test.ts: logs samples for a few steps, the last call in the same
 * synchronous stretch as the process's end, before the event loop turns again (so the
 * hand-over has not been encoded yet), then ends one way:
 *
 *   node --import tsx test/children/samples-exit.ts <runDir> <natural|exit3|throw|reject|sigterm|busy-sigkill>
 *
 * busy-sigkill: 40 × (logSamples, logStep) with the writer woken every 10 steps, then busy
 * without yielding; prints "ready" for the parent to send SIGKILL.
 */
import { Recorder } from '../../ts/index.js';

const [runDir, ending] = process.argv.slice(2);
if (!runDir || !ending) {
  console.error('usage: samples-exit.ts <runDir> <ending>');
  process.exit(64);
}
const STEPS = 3;
if (ending === 'busy-sigkill') {
  // steps published by the writer's wake every 10 steps while the loop never yields; then
  // the parent kills the process mid-stretch
  const rec = new Recorder(runDir, { captureEnvironment: false, flushSteps: 10, flushIntervalMs: 3_600_000 });
  for (let step = 0; step < 40; step++) {
    rec.logSamples(batchOf(step), { step });
    rec.logStep({ step, loss: 1 });
  }
  const until = Date.now() + 400;
  while (Date.now() < until) {
    // busy: the writer publishes what the wakes asked for
  }
  console.log('ready');
  for (;;) {
    // never yields: the parent's SIGKILL ends it
  }
}
const rec = new Recorder(runDir, { captureEnvironment: false });
function batchOf(step: number) {
  return Array.from({ length: 20 }, (_, i) => ({ reward_total: (i * 7) % 20, completion_text: `step ${step} sample ${i}` }));
}

for (let step = 0; step < STEPS - 1; step++) {
  rec.logStep({ step, loss: 1 });
  rec.logSamples(batchOf(step), { step });
}
setTimeout(() => {
  const step = STEPS - 1;
  rec.logStep({ step, loss: 1 });
  rec.logSamples(batchOf(step), { step });
  switch (ending) {
    case 'natural':
      return;
    case 'exit3':
      process.exit(3);
    case 'throw':
      throw new Error('boom-after-samples');
    case 'reject':
      void Promise.reject(new Error('boom-after-samples'));
      return;
    case 'sigterm':
      process.kill(process.pid, 'SIGTERM');
      // the handler runs when this stretch ends: keep the loop alive until then
      setTimeout(() => undefined, 10_000);
      return;
    default:
      console.error(`unknown ending ${ending}`);
      process.exit(64);
  }
}, 10);
