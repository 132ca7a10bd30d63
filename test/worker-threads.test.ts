/**
 * A recorder in a worker thread (README: "Worker threads"). Its hooks are the worker's: the
 * worker's own end (its script ends, process.exit in the worker, an uncaught error) closes
 * and compacts the recording like the end of a process. When the main thread ends the
 * process, Node runs no more JavaScript in the worker; rlprobe loaded in the main thread
 * relays the ending, so the worker's recording is closed (process_exit, ended_by
 * main_thread) or, for a signal, flushed with a signal event, before the process ends.
 *
 * Each scenario runs with and without rlprobe (RLPROBE_TEST_DISABLE=1): the process must
 * end the same way.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { freshTempDir, range, spawnChild, waitForExit } from './helpers/child.js';
import type { ChildExit, RunningChild } from './helpers/child.js';

const STEPS = 537; // flushSteps is 200: two parts published while logging, the rest pending
const TEST_TIMEOUT = 180_000;

interface Case {
  name: string;
  scenario: string;
  exit: ChildExit;
  /** Event kinds in file order. */
  kinds: string[];
  layout: 'compacted' | 'readable';
  /** process_exit: data.code and data.ended_by. */
  exitEvent?: { code: number | null; endedBy: 'worker' | 'main_thread' | 'terminated' };
  signal?: NodeJS.Signals;
  /** The main thread's stdout lines (without rlprobe too). */
  mainSays?: string;
}

const CASES: Case[] = [
  {
    name: "the worker's script ends",
    scenario: 'worker-natural',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 0, endedBy: 'worker' },
    mainSays: 'worker exit 0',
  },
  {
    name: 'process.exit(5) in the worker',
    scenario: 'worker-exit5',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 5, endedBy: 'worker' },
    mainSays: 'worker exit 5',
  },
  {
    name: 'an uncaught exception in the worker',
    scenario: 'worker-throw',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'crash', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 1, endedBy: 'worker' },
    mainSays: 'worker error: boom-in-worker',
  },
  {
    name: 'process.exit(4) in the main thread while the worker records',
    scenario: 'main-exit4',
    exit: { code: 4, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 4, endedBy: 'main_thread' },
  },
  {
    name: 'the main thread ends naturally (the worker unref-ed) while the worker records',
    scenario: 'main-natural',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 0, endedBy: 'main_thread' },
  },
  {
    name: 'an uncaught exception in the main thread while the worker records',
    scenario: 'main-throw',
    exit: { code: 1, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: 1, endedBy: 'main_thread' },
  },
  {
    // no JS runs in the worker any more: the native environment teardown closes it
    name: 'worker.terminate() while the worker records',
    scenario: 'terminate',
    exit: { code: 0, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: null, endedBy: 'terminated' },
    mainSays: 'worker exit 1',
  },
  {
    name: 'process.exit(4) in a main thread that never loaded rlprobe',
    scenario: 'bare-main-exit4',
    exit: { code: 4, signal: null },
    kinds: ['checkpoint', 'process_exit'],
    layout: 'compacted',
    exitEvent: { code: null, endedBy: 'terminated' },
  },
  {
    name: 'SIGTERM to the process while the worker records',
    scenario: 'main-signal',
    exit: { code: null, signal: 'SIGTERM' },
    kinds: ['checkpoint', 'signal'],
    layout: 'readable',
    signal: 'SIGTERM',
  },
];

async function runChild(runDir: string, c: Case, disabled: boolean): Promise<{ exit: ChildExit; child: RunningChild }> {
  const child = spawnChild('worker-child.ts', [runDir, c.scenario, String(STEPS)], { env: { RLPROBE_TEST_DISABLE: disabled ? '1' : '0' } });
  if (c.signal) {
    await child.waitForLine(/^ready$/, 60_000);
    child.proc.kill(c.signal);
  }
  return { exit: await waitForExit(child, 90_000), child };
}

describe('a recorder in a worker thread', () => {
  for (const c of CASES) {
    test(c.name, { timeout: TEST_TIMEOUT }, async (t) => {
      const probeTmp = freshTempDir('worker');
      const plainTmp = freshTempDir('worker-plain');
      t.after(() => {
        probeTmp.cleanup();
        plainTmp.cleanup();
      });
      const runDir = path.join(probeTmp.dir, 'run');
      const [withProbe, without] = await Promise.all([runChild(runDir, c, false), runChild(path.join(plainTmp.dir, 'run'), c, true)]);
      const context = withProbe.child.describe();
      assert.deepEqual(without.exit, c.exit, `baseline without rlprobe\n${without.child.describe()}`);
      assert.deepEqual(withProbe.exit, c.exit, `with rlprobe the process must end as without it\n${context}`);
      if (c.mainSays) {
        assert.ok(without.child.lines.includes(c.mainSays), without.child.describe());
        assert.ok(withProbe.child.lines.includes(c.mainSays), context);
      }

      const r = RunReader.open(runDir);
      const { events, skippedLines } = r.eventsWithDiagnostics();
      assert.equal(skippedLines, 0);
      assert.deepEqual(events.map((e) => e.kind), c.kinds, `events\n${context}`);
      for (const e of events.filter((x) => x.kind !== 'checkpoint')) {
        assert.equal(typeof e.data.worker_thread_id, 'number', `${e.kind} names the worker thread: ${JSON.stringify(e.data)}`);
      }
      if (c.exitEvent) {
        const exit = events.find((e) => e.kind === 'process_exit')!;
        assert.equal(exit.data.code, c.exitEvent.code, 'process_exit data.code');
        assert.equal(exit.data.ended_by, c.exitEvent.endedBy, 'process_exit data.ended_by');
        assert.equal(exit.data.logged, STEPS);
      }
      if (c.signal) assert.equal(events.find((e) => e.kind === 'signal')!.data.signal, c.signal);
      assert.deepEqual(r.steps().map((s) => s.step).sort((a, b) => a - b), range(0, STEPS), 'every step exactly once');
      // a worker's recorder encodes samples in the call: no turn of its own follows
      assert.equal([...r.samples()].length, 8, `the 8 samples kept of the last call\n${context}`);
      if (c.layout === 'compacted') assert.equal(r.layout(), 'compacted', `layout\n${context}`);
    });
  }
});
