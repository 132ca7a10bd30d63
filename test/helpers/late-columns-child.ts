/**
 * Child process recording the late-columns run of test/helpers/late-columns.ts, for the tests
 * that need a live or a SIGKILLed recorder (test/tool-recipes.test.ts,
 * test/python-interop.test.ts).
 *
 *   node --import tsx test/helpers/late-columns-child.ts <runDir> <from> <to> <generation> <hold|kill> [ranks]
 *
 * Records steps [from, to) of `generation` into <runDir> (resumed when it holds a run), every
 * chunk flushed, then prints `flushed` and
 *   hold  keeps the recorder open (a live run) until it is killed (at most 120 s)
 *   kill  SIGKILLs itself (a crashed run: parts, no close)
 * With ranks = 2 it records rank 0 and rank 1 (recordAllRanks, world size 2) in this one
 * process; rank 1 is closed at the middle of the range and resumed by a second recorder, so
 * rank-001/ holds a demoted compacted file and shards beside its parts.
 */
import { Recorder } from '../../ts/index.js';
import type { RecorderOptions } from '../../ts/index.js';
import { recordLateRun } from './late-columns.js';

const [runDir, fromArg, toArg, generationArg, ending, ranksArg = '1'] = process.argv.slice(2);
if (!runDir || !fromArg || !toArg || !generationArg || (ending !== 'hold' && ending !== 'kill') || (ranksArg !== '1' && ranksArg !== '2')) {
  console.error('usage: late-columns-child.ts <runDir> <from> <to> <generation> <hold|kill> [1|2]');
  process.exit(64);
}
const [from, to, generation] = [Number(fromArg), Number(toArg), Number(generationArg)];

// parts only where the test flushes: no size or timer cadence in between
const options: RecorderOptions = {
  algorithm: 'grpo',
  runId: 'late-columns',
  captureEnvironment: false,
  installHandlers: false,
  flushSteps: 1_000_000,
  flushIntervalMs: 3_600_000,
};

/** The recorders left open, referenced until the process dies. */
const open: Recorder[] = [];
if (ranksArg === '2') {
  const ranked = { ...options, worldSize: 2, recordAllRanks: true };
  const mid = Math.floor((from + to) / 2);
  const first = new Recorder(runDir, { ...ranked, rank: 1 });
  recordLateRun(first, from, mid, generation);
  const closed = first.close();
  if (closed.error) throw new Error(`rank 1 close: ${closed.error}`);
  open.push(new Recorder(runDir, { ...ranked, rank: 1 }), new Recorder(runDir, { ...ranked, rank: 0 }));
  recordLateRun(open[0], mid, to, generation);
  recordLateRun(open[1], from, to, generation);
} else {
  open.push(new Recorder(runDir, options));
  recordLateRun(open[0], from, to, generation);
}
console.log('flushed');
if (ending === 'kill') process.kill(process.pid, 'SIGKILL');
setInterval(() => undefined, 1000);
setTimeout(() => {
  console.error('not killed within 120 s');
  process.exit(70);
}, 120_000).unref();
