/**
 * The `run` column's values when several runs are queried together: each run's directory
 * name, with as many parent directories as it takes to tell apart runs that share one
 * (`a/exp1`, `b/exp1`).
 */
import path from 'node:path';

import { RlprobeError } from '../errors.js';

/** Names for `dirs` (in order), unique; throws RLPROBE_INVALID_QUERY for a run given twice. */
export function runNames(dirs: readonly string[]): string[] {
  const resolved = dirs.map((d) => path.resolve(d));
  const seen = new Map<string, string>();
  resolved.forEach((dir, i) => {
    const before = seen.get(dir);
    if (before !== undefined) throw new RlprobeError('RLPROBE_INVALID_QUERY', `the run ${dir} is given twice (as ${JSON.stringify(before)} and ${JSON.stringify(dirs[i])})`);
    seen.set(dir, dirs[i]);
  });
  const segments = resolved.map((dir) => dir.split(path.sep).filter((s) => s !== ''));
  const depth = segments.map(() => 1);
  // lengthen the names of runs that share one until every name is unique; distinct
  // resolved paths always differ within their full length
  for (;;) {
    const names = segments.map((s, i) => s.slice(-depth[i]).join('/'));
    const clashing = names.map((n, i) => names.some((m, j) => j !== i && m === n));
    if (!clashing.includes(true)) return names.map((n, i) => (n === '' ? resolved[i] : n));
    let grew = false;
    clashing.forEach((clash, i) => {
      if (clash && depth[i] < segments[i].length) {
        depth[i]++;
        grew = true;
      }
    });
    if (!grew) return resolved;
  }
}
