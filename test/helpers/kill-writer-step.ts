import type { StepRecord } from '../../ts/index.js';

/** The record test/children/kill-writer.ts logs for `step`, and test/sigkill.test.ts expects. */
export function killWriterStep(step: number): StepRecord {
  const r: StepRecord = { step, loss: 1 / (step + 1), reward_mean: step % 11, kl_mean: step * 1e-3, nan_count: step % 4 };
  if (step % 3 === 0) r.reward_components = { format: step % 5, correct: 0.25 };
  if (step % 5 === 0) r.kl_positional = [step, step + 0.5, step + 1];
  if (step % 2 === 0) r.extra = { foo: step, [`sparse_${step % 13}`]: 1 };
  return r;
}
