/**
 * Child for test/codegen-hardening.test.ts: records steps in a process that may run with
 * `--disallow-code-generation-from-strings`, and prints what the recording holds.
 *
 *   node [--disallow-code-generation-from-strings] --import tsx test/children/codegen-steps.ts <runDir> <steps> [bad]
 *
 * Records <steps> well-formed steps in three layouts (scalars, dicts, a list), then with
 * `bad` one malformed record (`loss: 'oops'` at step <steps>). Prints one JSON line: the
 * counters, the bad_record and recorder_fallback events, and the steps read back.
 */
import { Recorder, RunReader } from '../../ts/index.js';
import type { StepRecord } from '../../ts/index.js';

const [runDir, stepsArg, bad] = process.argv.slice(2);
const steps = Number(stepsArg);

function record(step: number): StepRecord {
  const base = { step, loss: 1 / (step + 1), reward_mean: step * 0.5, kl_mean: 0.01 };
  switch (step % 3) {
    case 0:
      return base;
    case 1:
      return { ...base, reward_components: { format: 0.25, correct: step % 2 }, extra: { lr: 1e-6 } };
    default:
      return { ...base, kl_positional: [0.1, 0.2, step] };
  }
}

const rec = new Recorder(runDir, { installHandlers: false, captureEnvironment: false, flushSteps: 250 });
for (let step = 0; step < steps; step++) rec.logStep(record(step));
if (bad === 'bad') rec.logStep({ step: steps, loss: 'oops' as never });
const { counters } = rec.close();

const reader = RunReader.open(runDir);
const events = reader.events();
const read = reader.steps();
console.log(JSON.stringify({
  counters,
  badRecords: events.filter((e) => e.kind === 'bad_record').map((e) => ({ step: e.step, message: e.message, data: e.data })),
  fallbacks: events.filter((e) => e.kind === 'recorder_fallback').map((e) => ({ message: e.message, data: e.data })),
  stepsRead: read.length,
  mismatches: read.filter((r) => {
    const want = record(r.step);
    return r.loss !== want.loss || r.reward_mean !== want.reward_mean || JSON.stringify(Array.from(r.kl_positional ?? [])) !== JSON.stringify(Array.from(want.kl_positional ?? []));
  }).length,
}));
