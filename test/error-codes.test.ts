/**
 * One error model (issue 17): every error the native addon throws carries its RLPROBE_…
 * `code`, set natively (nothing parses "[CODE] message" back), and names the file it is
 * about; `RLPROBE_ERROR_CODES` lists exactly the codes the addon can produce and the ones
 * the TypeScript facade and the loader throw themselves.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { RLPROBE_ERROR_CODES, RlprobeError, foldNativeError } from '../ts/errors.js';
import { Recorder } from '../ts/index.js';
import { NativeRecorder, debugPanic, diagnoseRunAsync, errorCodes, readSteps, stepColumnKind, syncFilesystemAsync, writeCaptureSpans } from '../ts/native.js';
import { QUIET, ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

/** What was thrown, as the addon threw it (not folded). */
function thrown(fn: () => unknown): Error & { code?: unknown } {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof Error, `a JS Error, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a throw');
}

async function rejected(p: Promise<unknown>): Promise<Error & { code?: unknown }> {
  try {
    await p;
  } catch (error) {
    assert.ok(error instanceof Error, `a JS Error, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a rejection');
}

/** The code is on the error as the addon made it, and the message is plain text. */
function assertNative(error: Error & { code?: unknown }, code: string, mentions: string[]): void {
  assert.equal(error.code, code, error.message);
  assert.doesNotMatch(error.message, /^\[RLPROBE_/, 'no code prefix in the message');
  for (const m of mentions) assert.ok(error.message.includes(m), `mentions ${m}: ${error.message}`);
  const folded = foldNativeError(error);
  assert.ok(folded instanceof RlprobeError);
  assert.equal(folded.code, code);
  assert.equal(folded.message, error.message);
  assert.equal(folded.cause, error);
}

/** The quoted RLPROBE_… literals in `file`, or in the .ts/.js files under it, except `skip`. */
function codeLiterals(file: string, skip = ''): string[] {
  if (file === skip) return [];
  if (statSync(file).isDirectory()) return readdirSync(file).flatMap((f) => codeLiterals(path.join(file, f), skip));
  if (!/\.(ts|js)$/.test(file)) return [];
  return [...readFileSync(file, 'utf8').matchAll(/['"`](RLPROBE_[A-Z_]+)['"`]/g)].map((m) => m[1]);
}

/** A run with a few steps, compacted into steps.parquet. */
function recordedRun(): string {
  const dir = path.join(tempDir(), 'run');
  const rec = new Recorder(dir, QUIET);
  for (let step = 0; step < 20; step++) rec.logStep({ step, loss: 1 / (step + 1) });
  assert.equal(rec.close().error, null);
  return dir;
}

describe('the list of codes', () => {
  test("RLPROBE_ERROR_CODES is the addon's codes and the ones the facade and the loader throw, nothing else", () => {
    const fromAddon = errorCodes();
    assert.ok(fromAddon.includes('RLPROBE_PANIC') && fromAddon.includes('RLPROBE_CORRUPT_FILE'), fromAddon.join(', '));
    // every other place that names a code: the facade's sources (but the list itself) and the loader
    const elsewhere = [...codeLiterals(path.join(ROOT, 'ts'), path.join(ROOT, 'ts', 'errors.ts')), ...codeLiterals(path.join(ROOT, 'native', 'index.js'))];
    assert.ok(elsewhere.includes('RLPROBE_NATIVE_MISSING'), 'the loader\'s code is found');
    const expected = [...new Set([...fromAddon, ...elsewhere])].sort();
    assert.deepEqual([...RLPROBE_ERROR_CODES].sort(), expected);
    assert.equal(new Set(RLPROBE_ERROR_CODES).size, RLPROBE_ERROR_CODES.length, 'no code listed twice');
  });

  test('the README documents every code, and the package exports the list', async () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const undocumented = RLPROBE_ERROR_CODES.filter((code) => !readme.includes(`\`${code}\``));
    assert.deepEqual(undocumented, [], 'codes missing from the README');
    const pkg = await import('../ts/index.js');
    assert.equal(pkg.RLPROBE_ERROR_CODES, RLPROBE_ERROR_CODES);
  });
});

describe('a native failure carries its code natively and names what it is about', () => {
  test('a corrupt Parquet file: RLPROBE_CORRUPT_FILE, naming it and what to do', () => {
    const dir = recordedRun();
    const file = path.join(dir, 'steps.parquet');
    truncateSync(file, Math.floor(statSync(file).size / 2));
    assertNative(thrown(() => readSteps(dir)), 'RLPROBE_CORRUPT_FILE', [file, 'damaged Parquet file', 'move it out of the run directory']);
    writeFileSync(file, 'this is not parquet');
    assertNative(thrown(() => readSteps(dir)), 'RLPROBE_CORRUPT_FILE', [file, 'does not end in PAR1']);
  });

  test('the same through an async task: the promise rejects with the code', async () => {
    const dir = recordedRun();
    const file = path.join(dir, 'steps.parquet');
    writeFileSync(file, 'this is not parquet');
    assertNative(await rejected(diagnoseRunAsync(dir)), 'RLPROBE_CORRUPT_FILE', [file]);
    const missing = path.join(tempDir(), 'missing');
    assertNative(await rejected(syncFilesystemAsync(missing)), 'RLPROBE_IO', [missing]);
  });

  test('a run directory another recorder writes: RLPROBE_LOCKED, naming it and the holder', () => {
    const dir = path.join(tempDir(), 'run');
    const options = { runDir: dir, rank: 0, flushIntervalMs: 1000, flushSteps: 100, queueCapacity: 64 };
    const first = new NativeRecorder(options);
    try {
      assertNative(thrown(() => new NativeRecorder(options)), 'RLPROBE_LOCKED', [dir, `pid ${process.pid}`]);
    } finally {
      first.close(false, 10_000);
    }
  });

  test('a capture key that could leave the run directory: RLPROBE_INVALID, not an io error', () => {
    const dir = recordedRun();
    assertNative(thrown(() => writeCaptureSpans(dir, '../escape', new Uint8Array(0))), 'RLPROBE_INVALID', ['invalid capture key "../escape"']);
  });

  test('a step-record key that cannot be a column: RLPROBE_INVALID naming it', () => {
    assertNative(thrown(() => stepColumnKind('rank')), 'RLPROBE_INVALID', ['`rank`']);
  });

  test('a Rust panic: RLPROBE_PANIC with its message', () => {
    assertNative(thrown(() => debugPanic('boom at the boundary')), 'RLPROBE_PANIC', ['boom at the boundary']);
  });
});

describe('foldNativeError', () => {
  test('an error without a code of ours is RLPROBE_NATIVE, keeping the original as cause', () => {
    for (const original of [new Error('plain'), Object.assign(new Error('enoent'), { code: 'ENOENT' }), Object.assign(new Error('made up'), { code: 'RLPROBE_MADE_UP' })]) {
      const folded = foldNativeError(original);
      assert.equal(folded.code, 'RLPROBE_NATIVE', original.message);
      assert.match(folded.message, new RegExp(original.message));
      assert.equal(folded.cause, original);
    }
    // a message that looks like the old "[CODE] message" form is only a message now
    assert.equal(foldNativeError(new Error('[RLPROBE_IO] disk full')).code, 'RLPROBE_NATIVE');
    assert.equal(foldNativeError('a string').code, 'RLPROBE_NATIVE');
  });
});
