/**
 * Child for test/spans.test.ts: records two finished spans, then crashes (an uncaught
 * exception thrown from a timer) while a rollout span and a turn span inside it are still
 * running. The crash hooks are installed (default options).
 *
 *   node --import tsx test/children/span-crash.ts <runDir>
 *
 * Prints "in-flight <rolloutId> <turnId>" just before the crash.
 */
import { Recorder } from '../../ts/index.js';

const [runDir] = process.argv.slice(2);
if (!runDir) {
  console.error('usage: span-crash.ts <runDir>');
  process.exit(64);
}

const rec = new Recorder(runDir, { runId: 'span-crash', algorithm: 'grpo', captureEnvironment: false });
for (let step = 0; step < 3; step++) rec.logStep({ step, loss: 1 / (step + 1) });

// finished before the crash: a rollout with one turn
rec.span('rollout', 'done', () => rec.span('turn', 'done-turn', () => 1), { step: 1 });

// in flight at the crash: the promise below never settles
void rec.span(
  'rollout',
  'inflight',
  () =>
    rec.span('turn', 'inflight-turn', async (turn) => {
      console.log(`in-flight ${rec.currentSpan()?.parentId ?? ''} ${turn.id}`);
      setTimeout(() => {
        throw new Error('boom-in-span');
      }, 20);
      await new Promise<never>(() => {});
    }),
  { step: 2 },
);
