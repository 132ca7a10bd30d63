/**
 * `node --disallow-code-generation-from-strings` (a common hardening flag) forbids
 * `new Function`, which the step encoder uses to compile record shapes. Under it the
 * recorder must still write every step, through the checked (generic) encoder, blame no
 * record, and say once in events.jsonl that it fell back.
 *
 * Each case runs the same child script with and without the flag.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { freshTempDir, spawnChild, waitForExit } from './helpers/child.js';

const CHILD = 'codegen-steps.ts';
const STEPS = 1000;
const NO_CODEGEN = '--disallow-code-generation-from-strings';

interface Outcome {
  counters: Record<string, number>;
  badRecords: Array<{ step: number | null; message: string; data: Record<string, unknown> }>;
  fallbacks: Array<{ message: string; data: Record<string, unknown> }>;
  stepsRead: number;
  mismatches: number;
}

async function record(flagged: boolean, withBad: boolean, cleanups: (() => void)[]): Promise<Outcome> {
  const tmp = freshTempDir('codegen');
  cleanups.push(tmp.cleanup);
  const args = [path.join(tmp.dir, 'run'), String(STEPS), ...(withBad ? ['bad'] : [])];
  // NODE_OPTIONS reaches the child's own V8 flags (spawnChild passes only --import tsx)
  const child = spawnChild(CHILD, args, { env: { NODE_OPTIONS: flagged ? NO_CODEGEN : '' } });
  const exit = await waitForExit(child, 90_000);
  assert.deepEqual(exit, { code: 0, signal: null }, child.describe());
  return JSON.parse(child.lines.at(-1)!) as Outcome;
}

async function withCleanup(body: (cleanups: (() => void)[]) => Promise<void>): Promise<void> {
  const cleanups: (() => void)[] = [];
  try {
    await body(cleanups);
  } finally {
    for (const c of cleanups) c();
  }
}

describe('recording with code generation from strings disallowed', () => {
  test(`${STEPS} steps: all written, no bad_record, no drop, one recorder_fallback event`, () =>
    withCleanup(async (cleanups) => {
      const [hardened, plain] = await Promise.all([record(true, false, cleanups), record(false, false, cleanups)]);
      for (const [name, o] of [['hardened', hardened], ['plain', plain]] as const) {
        assert.deepEqual(o.badRecords, [], `${name}: no record is blamed`);
        assert.equal(o.counters.logged, STEPS, name);
        assert.equal(o.counters.written, STEPS, name);
        assert.equal(o.counters.bad, 0, name);
        assert.equal(o.counters.dropped, 0, name);
        assert.equal(o.counters.pending, 0, name);
        assert.equal(o.stepsRead, STEPS, name);
        assert.equal(o.mismatches, 0, `${name}: every step reads back as logged`);
      }
      // the fallback is reported once, and only where it happened
      assert.equal(hardened.fallbacks.length, 1, JSON.stringify(hardened.fallbacks));
      assert.equal(hardened.fallbacks[0].data.fallback, 'checked_step_encoder');
      assert.match(hardened.fallbacks[0].message, /checked encoder, without compiled shapes .*refuses code generation from strings \(EvalError: /);
      assert.match(String(hardened.fallbacks[0].data.error), /^EvalError: Code generation from strings disallowed/);
      assert.deepEqual(plain.fallbacks, []);
    }));

  test('a malformed record is still refused, naming its own field', () =>
    withCleanup(async (cleanups) => {
      const o = await record(true, true, cleanups);
      assert.equal(o.counters.logged, STEPS + 1);
      assert.equal(o.counters.written, STEPS);
      assert.equal(o.counters.bad, 1);
      assert.equal(o.badRecords.length, 1, JSON.stringify(o.badRecords));
      assert.equal(o.badRecords[0].step, STEPS);
      assert.equal(o.badRecords[0].data.field, 'loss');
      assert.equal(o.badRecords[0].data.reason, 'expected a number');
    }));
});
