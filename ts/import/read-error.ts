import { openSync } from 'node:fs';

import { RlprobeError } from '../errors.js';

/** The importers' one error for a source that cannot be read: RLPROBE_IO, naming it, cause kept. */
export function readError(what: string, error: unknown): RlprobeError {
  return new RlprobeError('RLPROBE_IO', `cannot read ${what}: ${(error as Error).message}`, { cause: error });
}

/** Opens a source file read-only; a failure is `readError`. */
export function openSource(file: string): number {
  try {
    return openSync(file, 'r');
  } catch (error) {
    throw readError(file, error);
  }
}
