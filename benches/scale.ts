/**
 * The scale benchmark (also `probe scale-bench`): records a realistic run, then times
 * every read surface against DuckDB on the same files (each side of each surface in a
 * fresh process: the first call, the median of --warm calls after it, the peak RSS), with
 * size on disk, write throughput and peak RSS of the write.
 *
 *   npm run bench:scale -- [--steps 100000] [--samples-per-step 8] [--warm 5] [--keep DIR]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { formatReport, readInChildren, writeScaleRun } from '../dist/bench/scale.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const keepAt = process.argv.indexOf('--keep');
const dir = keepAt > 0 ? process.argv[keepAt + 1] : mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-'));
try {
  const w = writeScaleRun(dir, arg('--steps', 100_000), arg('--samples-per-step', 8), (s: string) => console.error(s));
  // the reads run in the built CLI, as users run them (no TypeScript loader in the RSS)
  const cli = fileURLToPath(new URL('../dist/cli/bin.js', import.meta.url));
  const r = readInChildren(dir, (args: string[]) => [cli, ...args], { warm: arg('--warm', 5), execArgv: [] });
  console.log(formatReport(w, r));
} finally {
  if (keepAt < 0) rmSync(dir, { recursive: true, force: true });
}
