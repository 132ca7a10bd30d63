/**
 * Every way a training process can end, each run twice: with rlprobe recording and with
 * rlprobe disabled (same child script, RLPROBE_TEST_DISABLE=1, no Recorder at all).
 *
 * For each ending we check that
 *  - the process ends exactly as it does without rlprobe (exit code and signal),
 *  - the lifecycle events are the documented ones, in order, with the right data,
 *  - every step logged before the ending is readable exactly once,
 *  - the layout is compacted when the exit hook could run, readable otherwise.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import type { RunEvent } from '../ts/index.js';
import { freshTempDir, range, spawnChild, waitForExit } from './helpers/child.js';
import type { ChildExit, RunningChild } from './helpers/child.js';

const STEPS = 537; // flushSteps is 200: two parts published while logging, the rest pending
const CHILD = 'exit-child.ts';
const TEST_TIMEOUT = 180_000;

interface Scenario {
  ending: string;
  flush?: boolean;
  recorders?: number;
  /** Signal the parent sends once the child printed "ready". */
  signal?: NodeJS.Signals;
}

interface Outcome {
  exit: ChildExit;
  child: RunningChild;
}

async function runChild(runDir: string, s: Scenario, disabled: boolean): Promise<Outcome> {
  const child = spawnChild(CHILD, [runDir, s.ending, String(STEPS), s.flush ? 'flush' : 'noflush', String(s.recorders ?? 1)], {
    env: { RLPROBE_TEST_DISABLE: disabled ? '1' : '0' },
  });
  if (s.signal) {
    await child.waitForLine(/^ready$/, 60_000);
    child.proc.kill(s.signal);
  }
  const exit = await waitForExit(child, 90_000);
  return { exit, child };
}

/** Runs the scenario with and without rlprobe (in parallel) and checks they end alike. */
async function runBoth(s: Scenario, cleanups: (() => void)[]): Promise<{ runDir: string; withProbe: Outcome; without: Outcome }> {
  const probeTmp = freshTempDir('exit');
  const plainTmp = freshTempDir('exit-plain');
  cleanups.push(probeTmp.cleanup, plainTmp.cleanup);
  const runDir = path.join(probeTmp.dir, 'run');
  const plainDir = path.join(plainTmp.dir, 'run');
  const [withProbe, without] = await Promise.all([runChild(runDir, s, false), runChild(plainDir, s, true)]);
  assert.equal(existsSync(path.join(plainDir, 'manifest.json')), false, 'the disabled child must not record anything');
  assert.deepEqual(
    withProbe.exit,
    without.exit,
    `with rlprobe the process must end exactly as without it\n--- with rlprobe ---\n${withProbe.child.describe()}\n--- without ---\n${without.child.describe()}`,
  );
  return { runDir, withProbe, without };
}

/** Temp dirs are removed even when the test fails (set RLPROBE_KEEP_TMP=1 to keep them). */
async function withCleanup(body: (cleanups: (() => void)[]) => Promise<void>): Promise<void> {
  const cleanups: (() => void)[] = [];
  try {
    await body(cleanups);
  } finally {
    for (const c of cleanups) c();
  }
}

interface Expect {
  /** Event kinds in file order, checkpoint included. */
  kinds: string[];
  steps: number;
  layout: 'compacted' | 'readable';
  exitCode?: number;
  signal?: NodeJS.Signals;
  crashOrigin?: string;
  crashMessage?: string;
}

function eventOf(events: RunEvent[], kind: string): RunEvent {
  const e = events.find((x) => x.kind === kind);
  assert.ok(e, `no ${kind} event`);
  return e;
}

function checkRecording(dir: string, expect: Expect, context: string): void {
  const r = RunReader.open(dir);
  const diag = r.eventsWithDiagnostics();
  const events = diag.events;
  const kinds = events.map((e) => e.kind);
  assert.deepEqual(kinds, expect.kinds, `events of ${dir}\n${context}`);
  assert.equal(diag.skippedLines, 0, 'no torn or invalid event line');

  const checkpoint = eventOf(events, 'checkpoint');
  assert.equal(checkpoint.step, Math.floor(STEPS / 2));
  if (expect.exitCode !== undefined) {
    const exitEvent = eventOf(events, 'process_exit');
    assert.equal((exitEvent.data as { code?: unknown }).code, expect.exitCode, 'process_exit data.code');
    assert.equal((exitEvent.data as { logged?: unknown }).logged, expect.steps, 'process_exit data.logged');
  }
  if (kinds.includes('recorder_close')) {
    assert.equal((eventOf(events, 'recorder_close').data as { logged?: unknown }).logged, expect.steps);
  }
  // the signal sent is recorded unless the ending says it never reached the program
  if (expect.signal !== undefined && expect.kinds.includes('signal')) {
    assert.equal((eventOf(events, 'signal').data as { signal?: unknown }).signal, expect.signal, 'signal data.signal');
  }
  if (expect.crashOrigin !== undefined) {
    const crash = eventOf(events, 'crash');
    const data = crash.data as { origin?: unknown; stack?: unknown };
    assert.equal(data.origin, expect.crashOrigin, 'crash data.origin');
    assert.equal(typeof data.stack, 'string');
    assert.match(data.stack as string, new RegExp(expect.crashMessage!), 'crash data.stack');
    assert.match(crash.message, new RegExp(expect.crashMessage!));
  }

  const rows = r.steps();
  const stepNumbers = rows.map((s) => s.step);
  const sorted = [...stepNumbers].sort((a, b) => a - b);
  assert.deepEqual(sorted, range(0, expect.steps), `every logged step exactly once (got ${rows.length} rows) in ${dir}`);
  for (const row of rows) {
    assert.equal(row.extra?.foo, row.step, `extra.foo of step ${row.step}`);
    assert.equal(row.loss, 1 / (row.step + 1), `loss of step ${row.step}`);
    assert.equal(row.reward_mean, row.step % 7);
    if (row.step % 3 === 0) assert.deepEqual(row.reward_components, { format: 0.5, correct: row.step % 2 });
    else assert.equal(row.reward_components, undefined);
  }

  const layout = r.layout();
  if (expect.layout === 'compacted') assert.equal(layout, 'compacted', `layout of ${dir}`);
  else assert.ok(layout === 'parts' || layout === 'mixed' || layout === 'compacted', `layout ${layout} of ${dir}`);
}

interface Case extends Scenario, Omit<Expect, 'steps'> {
  name: string;
  exit: ChildExit;
  /** Extra steps the ending itself logs (the user's signal handler logs one). */
  extraSteps?: number;
  stderrMatch?: RegExp;
  /** Whether the user's signal handler prints "user-handler" (with and without rlprobe alike). */
  handlerRuns?: boolean;
  /** A known gap: the case runs and is reported, without failing the suite. */
  todo?: string;
}

const CASES: Case[] = [
  { name: 'natural end without close()', ending: 'natural', exit: { code: 0, signal: null }, kinds: ['checkpoint', 'process_exit'], layout: 'compacted', exitCode: 0 },
  { name: 'natural end with process.exitCode = 7', ending: 'exitcode', exit: { code: 7, signal: null }, kinds: ['checkpoint', 'process_exit'], layout: 'compacted', exitCode: 7 },
  { name: 'explicit close()', ending: 'close', exit: { code: 0, signal: null }, kinds: ['checkpoint', 'recorder_close'], layout: 'compacted' },
  { name: 'process.exit(3)', ending: 'exit3', exit: { code: 3, signal: null }, kinds: ['checkpoint', 'process_exit'], layout: 'compacted', exitCode: 3 },
  { name: 'process.exit(3) after flushSync', ending: 'exit3', flush: true, exit: { code: 3, signal: null }, kinds: ['checkpoint', 'process_exit'], layout: 'compacted', exitCode: 3 },
  {
    name: 'uncaught exception',
    ending: 'throw',
    exit: { code: 1, signal: null },
    kinds: ['checkpoint', 'crash', 'process_exit'],
    layout: 'compacted',
    exitCode: 1,
    crashOrigin: 'uncaughtException',
    crashMessage: 'boom-uncaught',
    stderrMatch: /Error: boom-uncaught/,
  },
  {
    name: 'unhandled rejection',
    ending: 'reject',
    exit: { code: 1, signal: null },
    kinds: ['checkpoint', 'crash', 'process_exit'],
    layout: 'compacted',
    exitCode: 1,
    crashOrigin: 'unhandledRejection',
    crashMessage: 'boom-rejected',
    stderrMatch: /Error: boom-rejected/,
  },
  { name: 'SIGTERM, steps not flushed', ending: 'wait', signal: 'SIGTERM', exit: { code: null, signal: 'SIGTERM' }, kinds: ['checkpoint', 'signal'], layout: 'readable' },
  { name: 'SIGTERM after flushSync', ending: 'wait', flush: true, signal: 'SIGTERM', exit: { code: null, signal: 'SIGTERM' }, kinds: ['checkpoint', 'signal'], layout: 'readable' },
  { name: 'SIGINT, steps not flushed', ending: 'wait', signal: 'SIGINT', exit: { code: null, signal: 'SIGINT' }, kinds: ['checkpoint', 'signal'], layout: 'readable' },
  { name: 'SIGHUP, steps not flushed', ending: 'wait', signal: 'SIGHUP', exit: { code: null, signal: 'SIGHUP' }, kinds: ['checkpoint', 'signal'], layout: 'readable' },
  {
    name: 'SIGTERM with a user listener (installed after the recorder) that exits 0',
    ending: 'user-sigterm',
    signal: 'SIGTERM',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'signal', 'process_exit'],
    layout: 'compacted',
    exitCode: 0,
    extraSteps: 1,
  },
  {
    // A graceful-shutdown listener registered with process.once() before the Recorder
    // exists: by the time rlprobe's listener runs, Node has already removed the once
    // wrapper, so rlprobe sees itself as the only listener and re-raises SIGTERM.
    name: 'SIGTERM with a user process.once listener (installed before the recorder) doing an async graceful shutdown',
    ending: 'user-sigterm-once-first',
    signal: 'SIGTERM',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'signal', 'process_exit'],
    layout: 'compacted',
    exitCode: 0,
    extraSteps: 1,
  },
  // A signal that arrives during synchronous code is held until the event loop runs (rlprobe
  // has a listener), while without rlprobe it kills at once: the program must still die by it.
  {
    name: 'SIGTERM during a long synchronous stretch, then the program ends naturally',
    ending: 'busy-natural',
    signal: 'SIGTERM',
    exit: { code: null, signal: 'SIGTERM' },
    kinds: ['checkpoint', 'signal'],
    layout: 'readable',
  },
  {
    name: 'SIGINT during a long synchronous stretch, then the program ends naturally',
    ending: 'busy-natural',
    signal: 'SIGINT',
    exit: { code: null, signal: 'SIGINT' },
    kinds: ['checkpoint', 'signal'],
    layout: 'readable',
  },
  {
    name: 'SIGTERM during a long synchronous stretch, then process.exitCode = 7',
    ending: 'busy-exitcode',
    signal: 'SIGTERM',
    exit: { code: null, signal: 'SIGTERM' },
    kinds: ['checkpoint', 'signal'],
    layout: 'readable',
  },
  {
    // Node's own behaviour with a listener: the loop ends before it delivers the signal, so
    // the user's handler never runs; rlprobe must not make it run either
    name: 'SIGTERM during a long synchronous stretch with a user SIGTERM listener, then the program ends naturally',
    ending: 'busy-user-sigterm',
    signal: 'SIGTERM',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitCode: 0,
    handlerRuns: false,
  },
  {
    name: 'SIGTERM during a long synchronous stretch, then process.exit(3)',
    // JavaScript cannot see a signal Node holds for the event loop before process.exit()
    // ends the process: the exit hook would need a native signal flag (see README)
    todo: 'needs the signal noted natively (a sigaction chained before libuv); process.exit(3) wins today',
    ending: 'busy-exit3',
    signal: 'SIGTERM',
    exit: { code: null, signal: 'SIGTERM' },
    kinds: ['checkpoint', 'signal'],
    layout: 'readable',
  },
];

describe('exit paths: one recorder', () => {
  for (const c of CASES) {
    test(c.name, { timeout: TEST_TIMEOUT, todo: c.todo }, () => withCleanup(async (cleanups) => {
      const { runDir, withProbe, without } = await runBoth(c, cleanups);
      const context = withProbe.child.describe();
      // the same as without rlprobe (checked in runBoth) and the documented Node behaviour
      assert.deepEqual(without.exit, c.exit, `baseline without rlprobe\n${without.child.describe()}`);
      assert.deepEqual(withProbe.exit, c.exit, context);
      if (c.stderrMatch) {
        assert.match(without.child.stderr(), c.stderrMatch);
        assert.match(withProbe.child.stderr(), c.stderrMatch, 'Node still prints the error');
      }
      if (c.extraSteps) {
        assert.ok(without.child.lines.includes('user-handler'), 'baseline ran the user handler');
        assert.ok(withProbe.child.lines.includes('user-handler'), `the user's handler ran\n${context}`);
      }
      if (c.handlerRuns === false) {
        assert.ok(!without.child.lines.includes('user-handler'), 'baseline: the held signal is never delivered');
        assert.ok(!withProbe.child.lines.includes('user-handler'), `rlprobe must not deliver it either\n${context}`);
      }
      checkRecording(runDir, { ...c, steps: STEPS + (c.extraSteps ?? 0) }, context);
    }));
  }
});

describe('exit paths: two recorders share the process hooks', () => {
  // the single-recorder cases that end the process each way, now with two recorders
  const TWO = CASES.filter((c) =>
    [
      'natural end without close()',
      'process.exit(3)',
      'uncaught exception',
      'unhandled rejection',
      'SIGTERM, steps not flushed',
      'SIGTERM during a long synchronous stretch, then the program ends naturally',
    ].includes(c.name),
  );
  assert.equal(TWO.length, 6, 'every two-recorder case found');
  for (const c of TWO) {
    test(c.name, { timeout: TEST_TIMEOUT }, () => withCleanup(async (cleanups) => {
      const { runDir, withProbe } = await runBoth({ ...c, recorders: 2 }, cleanups);
      assert.deepEqual(withProbe.exit, c.exit, withProbe.child.describe());
      for (const sub of ['rec-0', 'rec-1']) {
        checkRecording(path.join(runDir, sub), { ...c, steps: STEPS }, withProbe.child.describe());
      }
    }));
  }
});
