import { existsSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError, native } from './errors.js';
import { compactRun as nativeCompactRun } from './native.js';

export interface CompactResult {
  /** Part files merged into steps.parquet by this call. */
  partsMerged: number;
  /** Parts a previous, interrupted compaction had absorbed, deleted now. */
  leftoversRemoved: number;
  rows: number;
  bytes: number;
}

/**
 * Compacts a run's step parts into steps.parquet: atomic, idempotent, safe on a crashed
 * run and on one a recorder is still writing. Only merges part files; never rewrites data.
 */
export function compactRun(runDir: string): CompactResult {
  const dir = path.resolve(runDir);
  if (!existsSync(path.join(dir, 'manifest.json'))) {
    throw new RlprobeError('RLPROBE_NOT_A_RUN', `not a run directory (no manifest.json): ${dir}`);
  }
  return native(() => nativeCompactRun(dir));
}
