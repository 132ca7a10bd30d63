/**
 * Finding the runs under the roots: every directory holding a manifest.json, searched
 * breadth-first to a bounded depth and count, without entering a run (its rank-NNN/ and
 * trials/ are part of it) or following a symbolic link (which could lead out of the
 * roots). What is not searched is counted and the first such paths listed, with why.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Levels below a root searched for runs (a root itself is level 0). */
export const SEARCH_DEPTH = 6;
/** Directories looked at in one search, at most: a root holding a whole disk stays quick. */
export const SEARCH_DIRECTORIES = 20_000;
/** Paths listed per search among those not searched (all are counted). */
const LISTED_NOT_SEARCHED = 20;

export interface NotSearched {
  path: string;
  reason: string;
}

export interface RunSearch {
  /** Real paths of the run directories, sorted, each once. */
  runs: string[];
  directories: number;
  not_searched: NotSearched[];
  not_searched_total: number;
}

const SKIPPED_NAMES: Record<string, string> = {
  node_modules: 'node_modules (packages, not runs)',
  '.git': 'a git directory',
};

export function findRuns(roots: readonly string[]): RunSearch {
  const runs = new Set<string>();
  const notSearched: NotSearched[] = [];
  let notSearchedTotal = 0;
  let directories = 0;
  const skip = (p: string, reason: string) => {
    notSearchedTotal++;
    if (notSearched.length < LISTED_NOT_SEARCHED) notSearched.push({ path: p, reason });
  };
  const queue: Array<{ dir: string; depth: number }> = roots.map((dir) => ({ dir, depth: 0 }));
  const seen = new Set<string>();
  while (queue.length > 0) {
    const { dir, depth } = queue.shift()!;
    if (seen.has(dir)) continue;
    seen.add(dir);
    if (directories === SEARCH_DIRECTORIES) {
      skip(dir, `not searched: the search stops after ${SEARCH_DIRECTORIES} directories (pass a narrower --root)`);
      continue;
    }
    directories++;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      skip(dir, `unreadable: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      continue;
    }
    if (entries.some((e) => e.name === 'manifest.json' && (e.isFile() || e.isSymbolicLink()))) {
      runs.add(dir);
      continue;
    }
    for (const e of entries) {
      const child = path.join(dir, e.name);
      if (e.isSymbolicLink()) {
        // a link to a directory is named; a link to a file is no concern of the search
        if (leadsToDirectory(child)) skip(child, 'a symbolic link to a directory (not followed: it could lead out of the roots; pass its target as a --root)');
        continue;
      }
      if (!e.isDirectory()) continue;
      const named = SKIPPED_NAMES[e.name];
      if (named !== undefined) skip(child, `not searched: ${named}`);
      else if (depth + 1 > SEARCH_DEPTH) skip(child, `not searched: deeper than ${SEARCH_DEPTH} levels below its root (pass it, or a directory nearer, as a --root)`);
      else queue.push({ dir: child, depth: depth + 1 });
    }
  }
  return { runs: [...runs].sort(), directories, not_searched: notSearched, not_searched_total: notSearchedTotal };
}

/** Whether `p` (a link) leads to a directory. */
function leadsToDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
