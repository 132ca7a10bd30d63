/**
 * The native boundary: a Rust panic surfaces as a JS error (and the process keeps
 * working), native errors fold into RlprobeError codes, and the Rust step vocabulary
 * matches the TypeScript one.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { RlprobeError, foldNativeError, native } from '../ts/errors.js';
import { Recorder, RunReader } from '../ts/index.js';
import { debugPanic, readSteps, stepFieldSpecs } from '../ts/native.js';
import { FIXED_STEP_COLUMNS, STEP_FIELDS } from '../ts/schema/step-record.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail('expected a throw');
}

describe('Rust panics', () => {
  test('debugPanic throws a JS Error carrying the panic message', () => {
    const error = catchError(() => debugPanic('boom'));
    assert.ok(error instanceof Error, `a JS Error, got ${String(error)}`);
    assert.match(error.message, /boom/);
  });

  test('the process survives repeated panics and keeps recording', () => {
    for (let i = 0; i < 5; i++) {
      assert.throws(() => debugPanic(`panic ${i}`), (e: unknown) => e instanceof Error && e.message.includes(`panic ${i}`));
    }
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, QUIET);
    rec.logStep({ step: 0, loss: 0.5 });
    rec.logStep({ step: 1, loss: 0.25 });
    assert.equal(rec.flushSync(), true);
    assert.throws(() => debugPanic('while a recorder is live'));
    rec.logStep({ step: 2, loss: 0.125 });
    const summary = rec.close();
    assert.equal(summary.error, null);
    assert.equal(summary.counters.written, 3);
    assert.deepEqual(RunReader.open(dir).steps().map((s) => [s.step, s.loss]), [[0, 0.5], [1, 0.25], [2, 0.125]]);
  });
});

describe('foldNativeError', () => {
  test('a panic becomes RLPROBE_PANIC, keeping the original as cause', () => {
    const original = catchError(() => debugPanic('boom'));
    const folded = foldNativeError(original);
    assert.ok(folded instanceof RlprobeError);
    assert.ok(folded instanceof Error);
    assert.equal(folded.name, 'RlprobeError');
    assert.equal(folded.code, 'RLPROBE_PANIC');
    assert.match(folded.message, /boom/);
    assert.equal(folded.cause, original);
    // the same through the `native()` wrapper every binding call goes through
    const wrapped = catchError(() => native(() => debugPanic('wrapped boom')));
    assert.ok(wrapped instanceof RlprobeError);
    assert.equal(wrapped.code, 'RLPROBE_PANIC');
    assert.match(wrapped.message, /wrapped boom/);
  });

  test('an error carrying an rlprobe code keeps it and its message', () => {
    const original = Object.assign(new Error('No space left on device (os error 28)'), { code: 'RLPROBE_IO' });
    const folded = foldNativeError(original);
    assert.equal(folded.code, 'RLPROBE_IO');
    assert.equal(folded.message, 'No space left on device (os error 28)');
    assert.equal(folded.cause, original);
    const timeout = foldNativeError(Object.assign(new Error('close timed out\nafter 5s'), { code: 'RLPROBE_TIMEOUT' }));
    assert.equal(timeout.code, 'RLPROBE_TIMEOUT');
    assert.equal(timeout.message, 'close timed out\nafter 5s');
  });

  test('other inputs', () => {
    const already = new RlprobeError('RLPROBE_STATE', 'closed');
    assert.equal(foldNativeError(already), already, 'an RlprobeError passes through');
    const fromString = foldNativeError('plain string');
    assert.equal(fromString.code, 'RLPROBE_NATIVE');
    assert.match(fromString.message, /plain string/);
    // a prefix not at the start is not a code
    assert.equal(foldNativeError(new Error('see [RLPROBE_IO] x')).code, 'RLPROBE_NATIVE');
    assert.equal(native(() => 42), 42);
  });

  test('a real native error (corrupt steps.parquet) surfaces as RLPROBE_CORRUPT_FILE, its code set natively', () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ schema_version: 1, run_id: 'corrupt', created_at: '2024-01-01T00:00:00Z', algorithm: 'grpo' }),
    );
    writeFileSync(path.join(dir, 'steps.parquet'), 'this is not parquet');
    const raw = catchError(() => readSteps(dir));
    assert.ok(raw instanceof Error);
    assert.equal((raw as { code?: unknown }).code, 'RLPROBE_CORRUPT_FILE');
    assert.ok(raw.message.startsWith(`${path.join(dir, 'steps.parquet')}: damaged Parquet file`), raw.message);
    const reader = RunReader.open(dir);
    for (const call of [() => reader.steps(), () => reader.layout(), () => reader.view()]) {
      const e = catchError(call);
      assert.ok(e instanceof RlprobeError, String(e));
      assert.equal(e.code, 'RLPROBE_CORRUPT_FILE');
      assert.equal(e.message, raw.message);
    }
  });
});

describe('stepFieldSpecs', () => {
  test('the Rust vocabulary equals step, timestamp, rank, ...STEP_FIELDS', () => {
    const specs = stepFieldSpecs();
    assert.deepEqual(specs.map((s) => s.name), ['step', 'timestamp', 'rank', ...STEP_FIELDS]);
    assert.deepEqual(specs.slice(0, 3).map((s) => s.name), [...FIXED_STEP_COLUMNS]);
  });

  test('kinds: i64 for step/rank/nan_count/inf_count, list_f64 for kl_positional, f64 otherwise', () => {
    const ints = new Set(['step', 'rank', 'nan_count', 'inf_count']);
    for (const { name, kind } of stepFieldSpecs()) {
      const expected = ints.has(name) ? 'i64' : name === 'kl_positional' ? 'list_f64' : 'f64';
      assert.equal(kind, expected, `${name} is ${expected}`);
    }
  });

  test('the read-back table uses the same kinds', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, QUIET);
    rec.logStep({ step: 1, nan_count: 2, inf_count: 0, kl_positional: [1, 2], loss: 3 });
    rec.close();
    const kinds = Object.fromEntries(readSteps(dir).columns.map((c) => [c.name, c.kind]));
    assert.deepEqual(kinds, { step: 'i64', timestamp: 'f64', rank: 'i64', kl_positional: 'list_f64', loss: 'f64', nan_count: 'i64', inf_count: 'i64' });
  });
});
