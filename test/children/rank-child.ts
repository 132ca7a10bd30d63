/**
 * Child for test/ranks.test.ts: one rank of a distributed run, as a launcher would start it
 * (RANK and WORLD_SIZE in the environment, the same run directory for every rank).
 *
 *   RANK=<r> WORLD_SIZE=<n> node --import tsx test/children/rank-child.ts <runDir> <ending> <steps> [all|rank0]
 *
 * Every value it logs encodes the rank, so a rank's data showing up as another's (or twice)
 * is visible to the parent:
 *   steps    step s: loss = rank * 1000 + s, extra.rank_marker = rank
 *   samples  per step, SAMPLES_PER_STEP samples (select: false), sample_id `r<rank>-s<step>-<i>`,
 *            reward_total = rank * 100 + i, group_id `g<rank>`
 *   events   `rank_start`, `rank_checkpoint` every CHECKPOINT_EVERY steps, `rank_done`; each
 *            with data {rank, seq} (seq counts this rank's events from 0)
 *
 * The 4th argument: `all` (default) sets recordAllRanks, `rank0` leaves it unset.
 * Endings:
 *   close   rec.close(), print `closed <summary JSON>`, exit 0
 *   kill    rec.flushSync(), print `flushed`, then SIGKILL itself (parts left, no close)
 *
 * It prints `active <true|false> <recorder runDir>` first.
 */
import { Recorder } from '../../ts/index.js';

const SAMPLES_PER_STEP = 3;
const CHECKPOINT_EVERY = 10;

const [runDir, ending, stepsArg, allArg = 'all'] = process.argv.slice(2);
if (!runDir || !ending || !stepsArg || (ending !== 'close' && ending !== 'kill') || (allArg !== 'all' && allArg !== 'rank0')) {
  console.error('usage: rank-child.ts <runDir> <close|kill> <steps> [all|rank0]');
  process.exit(64);
}
const steps = Number(stepsArg);

const rec = new Recorder(runDir, {
  algorithm: 'grpo',
  recordAllRanks: allArg === 'all',
  captureEnvironment: false,
  installHandlers: false,
  flushSteps: 16,
  flushIntervalMs: 3_600_000,
});
// the rank and world size come from RANK / WORLD_SIZE alone
const rank = rec.options.rank;
console.log(`active ${rec.active} ${rec.runDir}`);

let seq = 0;
const event = (kind: string, step: number | null, message: string) => {
  rec.logEvent(kind, { step: step ?? undefined, message, data: { rank, seq: seq++ } });
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

event('rank_start', null, `rank ${rank} starting`);
for (let step = 0; step < steps; step++) {
  rec.logStep({ step, loss: rank * 1000 + step, extra: { rank_marker: rank } });
  const samples = [];
  for (let i = 0; i < SAMPLES_PER_STEP; i++) {
    samples.push({
      sample_id: `r${rank}-s${step}-${i}`,
      group_id: `g${rank}`,
      reward_total: rank * 100 + i,
      completion_text: `rank ${rank} step ${step} sample ${i}`,
    });
  }
  rec.logSamples(samples, { step, select: false });
  if (step % CHECKPOINT_EVERY === 0) {
    event('rank_checkpoint', step, `rank ${rank} checkpoint at step ${step}`);
    // let the other ranks' events interleave with this one's
    await sleep(15);
  }
}
event('rank_done', steps - 1, `rank ${rank} done`);

if (ending === 'close') {
  const summary = rec.close();
  console.log(`closed ${JSON.stringify(summary)}`);
} else {
  if (!rec.flushSync(30_000)) {
    console.error('flushSync timed out');
    process.exit(70);
  }
  console.log('flushed');
  process.kill(process.pid, 'SIGKILL');
}
