/**
 * The runs under the served folders, found again every `rescanMs` (nested, as TensorBoard's
 * --logdir; reader/run-finder.ts: bounded, no symbolic link followed), each under an opaque
 * key: requests name runs by key only, never by path, so no request can reach a file the
 * index did not find inside a folder.
 */
import { createHash } from 'node:crypto';
import { readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { inside } from '../files/inside.js';
import { findRuns } from '../reader/run-finder.js';
import type { NotSearched } from '../reader/run-finder.js';
import { RunEntry } from './run-entry.js';

export interface ScanChange {
  added: RunEntry[];
  removed: string[];
}

/** A run's key: the first 16 hex digits of the SHA-256 of its real path (the same across restarts). */
export function runKey(realDir: string): string {
  return createHash('sha256').update(realDir).digest('hex').slice(0, 16);
}

export const KEY_PATTERN = /^[0-9a-f]{16}$/;

export class RunIndex {
  /** The folders, every link followed. */
  readonly roots: string[];
  readonly entries = new Map<string, RunEntry>();
  notSearched: NotSearched[] = [];
  notSearchedTotal = 0;

  /** Throws RLPROBE_INVALID_OPTION naming a folder that is not one. */
  constructor(roots: readonly string[]) {
    this.roots = roots.map((r) => {
      let real: string;
      try {
        real = realpathSync(path.resolve(r));
      } catch (error) {
        throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid serve option roots: ${JSON.stringify(r)} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      }
      if (!statSync(real).isDirectory()) throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid serve option roots: ${JSON.stringify(r)} is not a directory`);
      return real;
    });
  }

  get(key: string): RunEntry | undefined {
    return KEY_PATTERN.test(key) ? this.entries.get(key) : undefined;
  }

  /** Searches the folders again: runs that appeared are added, runs that are gone removed. */
  scan(): ScanChange {
    const search = findRuns(this.roots);
    this.notSearched = [...search.not_searched];
    this.notSearchedTotal = search.not_searched_total;
    const found = new Map<string, { dir: string; shown: string }>();
    for (const dir of search.runs) {
      const real = this.admitted(dir);
      if (real === null) continue;
      found.set(runKey(real), { dir: real, shown: this.shownPath(real) });
    }
    const added: RunEntry[] = [];
    for (const [key, run] of found) {
      if (this.entries.has(key)) continue;
      const entry = new RunEntry(key, run.dir, run.shown);
      this.entries.set(key, entry);
      added.push(entry);
    }
    const removed = [...this.entries.keys()].filter((k) => !found.has(k));
    for (const k of removed) this.entries.delete(k);
    return { added, removed };
  }

  /**
   * The run's real path when it and its manifest lie inside a folder (a manifest.json that
   * is a link out of the folders is not served), else null.
   */
  private admitted(dir: string): string | null {
    try {
      const real = realpathSync(dir);
      const root = this.roots.find((r) => inside(r, real));
      if (root === undefined) return null;
      const out = linkOut(real, root);
      if (out !== null) {
        this.refuse(dir, out);
        return null;
      }
      return real;
    } catch {
      return null;
    }
  }

  private refuse(dir: string, reason: string): void {
    this.notSearchedTotal++;
    if (this.notSearched.length < 20) this.notSearched.push({ path: dir, reason });
  }

  /** `folder/sub/run`: the folder's own name, then the run's path below it. */
  private shownPath(real: string): string {
    const root = this.roots.find((r) => inside(r, real))!;
    const rel = path.relative(root, real);
    return rel === '' ? path.basename(root) : `${path.basename(root)}/${rel.split(path.sep).join('/')}`;
  }
}

/** Entries of a run looked at for links, at most: past it the run is not served (said why). */
const MAX_RUN_ENTRIES = 200_000;

/**
 * Why run `dir` cannot be served whole from inside `root`, or null: a symbolic link anywhere
 * in it (its manifest, steps/, a sample shard, a rank directory, a trial's files) that
 * resolves outside the root would let the server read what it was not given. The readers
 * follow links, so the run is refused rather than read in part.
 */
function linkOut(dir: string, root: string): string | null {
  const stack = [dir];
  const visited = new Set([dir]);
  let seen = 0;
  while (stack.length > 0) {
    const d = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (++seen > MAX_RUN_ENTRIES) return `not served: more than ${MAX_RUN_ENTRIES} files to check for links out of the folder`;
      const p = path.join(d, e.name);
      if (e.isSymbolicLink()) {
        let target: string;
        try {
          target = realpathSync(p);
        } catch {
          continue; // a dangling link reads as a missing file
        }
        if (!inside(root, target)) return `not served: ${path.relative(dir, p)} is a symbolic link out of the folder (to ${target})`;
        // a link to a directory inside the folder is read through: what it holds is checked too
        if (!visited.has(target) && statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
          visited.add(target);
          stack.push(target);
        }
      } else if (e.isDirectory()) {
        stack.push(p);
      }
    }
  }
  return null;
}
