// A user's first program, run from a fresh project that installed rlprobe from a registry:
// record 1,000 steps with samples, close, read everything back. Prints one JSON line.
import { Recorder, RunReader } from 'rlprobe';

const runDir = process.argv[2];
const STEPS = 1000;
const rec = new Recorder(runDir, { algorithm: 'grpo', modelName: 'install-test', flushSteps: 100 });
for (let step = 0; step < STEPS; step++) {
  const reward = Math.sin(step / 50) * 0.5 + 0.5;
  rec.logStep({ step, loss: 1 / (step + 1), reward_mean: reward, kl_mean: 0.01 + step * 1e-5, entropy_mean: 2 - step * 1e-4 });
  if (step % 10 === 0) {
    const rollouts = Array.from({ length: 16 }, (_, i) => ({
      prompt_text: `prompt ${step}`,
      completion_text: `completion ${step}.${i}`,
      reward_total: reward + i / 100,
      group_id: `g${step}`,
    }));
    rec.logSamples(rollouts, { step });
  }
}
const summary = rec.close();

const run = RunReader.open(runDir);
const loss = run.view().series('loss');
let samples = 0;
for (const _ of run.samples()) samples++;
console.log(JSON.stringify({ steps: loss.length, lastLoss: loss[loss.length - 1], samples, closed: Boolean(summary) }));
