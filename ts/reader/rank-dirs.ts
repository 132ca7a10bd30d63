/**
 * The directories of a run's recordings: the run itself (rank 0) and each `rank-NNN/`
 * sub-recording. The readers of steps, samples, spans and trials all walk them.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** A directory holding a recording of one rank: the run itself (rank 0) or `rank-NNN/`. */
export interface RankDir {
  rank: number;
  dir: string;
}

/** Sub-recordings of non-zero ranks (`rank-NNN/` with a manifest), in rank order. */
export function rankSubdirs(runDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(runDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^rank-\d+$/.test(n) && existsSync(path.join(runDir, n, 'manifest.json')))
    .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)))
    .map((n) => path.join(runDir, n));
}

/** The run (rank 0) and its rank directories, optionally only `ranks`. */
export function recordingDirs(runDir: string, ranks: ReadonlySet<number> | null): RankDir[] {
  const all: RankDir[] = [{ rank: 0, dir: runDir }, ...rankSubdirs(runDir).map((dir) => ({ rank: Number(path.basename(dir).slice(5)), dir }))];
  return ranks === null ? all : all.filter((d) => ranks.has(d.rank));
}
