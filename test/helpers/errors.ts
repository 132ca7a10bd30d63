import assert from 'node:assert/strict';

import { RlprobeError } from '../../ts/index.js';
import type { RlprobeErrorCode } from '../../ts/index.js';

/** Runs `fn`, asserts it threw an RlprobeError with `code` (and `message`), returns it. */
export function throwsCode(fn: () => unknown, code: RlprobeErrorCode, message?: RegExp): RlprobeError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof RlprobeError, `expected RlprobeError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}
