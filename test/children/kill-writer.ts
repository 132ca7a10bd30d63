/**
 * Child for test/sigkill.test.ts: records steps until it is SIGKILLed.
 *
 *   node --import tsx test/children/kill-writer.ts <dir> <variant> [from] [to]
 *
 * Variants:
 *   loop     one recorder in <dir>, steps 0,1,2,… forever
 *   compact  the same, plus compactRun(<dir>) on the live run every 300 steps
 *   close    run after run: <dir>/run-<i> gets CLOSE_STEPS steps then close() (compaction),
 *            printing "closed <i>"; kills land in close() and compaction
 *   range    steps <from>..<to>-1 in <dir> (resumed if it exists), flushSync, print
 *            "flushed <to>", then wait to be killed
 *
 * "flushed <n>" (or "flushed <i> <n>" for close) is printed only after flushSync returned
 * true: steps below n are published and must survive the kill. Every 137 steps there is a
 * flushSync; events are logged every 97 steps ("checkpoint", step s, logged right after
 * step s).
 */
import path from 'node:path';

import { Recorder, compactRun } from '../../ts/index.js';
import { killWriterStep as stepRecord } from '../helpers/kill-writer-step.js';

const CLOSE_STEPS = 300;

const [dir, variant, fromArg, toArg] = process.argv.slice(2);
if (!dir || !variant) {
  console.error('usage: kill-writer.ts <dir> <variant> [from] [to]');
  process.exit(64);
}

const OPTIONS = { algorithm: 'grpo', flushSteps: 50, flushIntervalMs: 200, captureEnvironment: false } as const;

function fail(message: string): never {
  console.error(message);
  process.exit(70);
}

function logOne(rec: Recorder, step: number): void {
  rec.logStep(stepRecord(step));
  if (step % 97 === 0) rec.logEvent('checkpoint', { step, message: `checkpoint at ${step}`, data: { step, path: `ckpt-${step}` } });
}

/** Steps forever in `runDir`, in chunks so the event loop keeps turning. */
function loopForever(withCompaction: boolean): void {
  const rec = new Recorder(dir, OPTIONS);
  console.log('ready');
  let step = 0;
  const chunk = () => {
    for (let i = 0; i < 40; i++) {
      logOne(rec, step);
      step++;
      if (step % 137 === 0) {
        if (!rec.flushSync(30_000)) fail(`flushSync timed out at ${step}`);
        console.log(`flushed ${step}`);
      }
      if (withCompaction && step % 300 === 0) {
        console.log(`compacting ${step}`);
        compactRun(dir);
        console.log(`compacted ${step}`);
      }
    }
    setImmediate(chunk);
  };
  chunk();
}

function closeLoop(): void {
  console.log('ready');
  let i = 0;
  const next = () => {
    const rec = new Recorder(path.join(dir, `run-${i}`), OPTIONS);
    for (let step = 0; step < CLOSE_STEPS; ) {
      logOne(rec, step);
      step++;
      if (step % 137 === 0) {
        if (!rec.flushSync(30_000)) fail(`flushSync timed out at ${step}`);
        console.log(`flushed ${i} ${step}`);
      }
    }
    console.log(`closing ${i}`);
    const summary = rec.close();
    if (summary.error) fail(`close reported an error: ${summary.error}`);
    console.log(`closed ${i}`);
    i++;
    setImmediate(next);
  };
  next();
}

function rangeThenWait(): void {
  const from = Number(fromArg);
  const to = Number(toArg);
  const rec = new Recorder(dir, OPTIONS);
  for (let step = from; step < to; step++) logOne(rec, step);
  if (!rec.flushSync(30_000)) fail('flushSync timed out');
  console.log(`flushed ${to}`);
  setInterval(() => {}, 1000);
  setTimeout(() => fail('not killed within 120 s'), 120_000).unref();
}

switch (variant) {
  case 'loop':
    loopForever(false);
    break;
  case 'compact':
    loopForever(true);
    break;
  case 'close':
    closeLoop();
    break;
  case 'range':
    rangeThenWait();
    break;
  default:
    fail(`unknown variant ${variant}`);
}
