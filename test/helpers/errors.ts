import assert from 'node:assert/strict';

import { RlprobeError } from '../../ts/index.js';
import type { RlprobeErrorCode } from '../../ts/index.js';

/** Checks what was thrown: an RlprobeError with `code` (and `message`). */
function assertCode(caught: unknown, code: RlprobeErrorCode, message?: RegExp): RlprobeError {
  assert.ok(caught instanceof RlprobeError, `expected RlprobeError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}

/** Runs `fn`, asserts it threw an RlprobeError with `code` (and `message`), returns it. */
export function throwsCode(fn: () => unknown, code: RlprobeErrorCode, message?: RegExp): RlprobeError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  return assertCode(caught, code, message);
}

/** Awaits `p`, asserts it rejected with an RlprobeError with `code` (and `message`), returns it. */
export async function rejectsCode(p: Promise<unknown>, code: RlprobeErrorCode, message?: RegExp): Promise<RlprobeError> {
  let caught: unknown;
  try {
    await p;
  } catch (error) {
    caught = error;
  }
  return assertCode(caught, code, message);
}
