/**
 * The event files of a TensorBoard source: the file itself, or every
 * `events.out.tfevents.*` under a log directory. TensorBoard calls each directory that
 * holds event files a run; several files in one directory are one run (a writer restarted,
 * a resumed run).
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { readError } from './read-error.js';

/** The name TensorBoard's writers give event files (tensorboardX, torch, TF, tensorboard). */
export const EVENT_FILE_PREFIX = 'events.out.tfevents.';


/** Event files under `dir`, recursively, sorted by path. Symlinked directories are not followed (no loops). */
function walk(dir: string, out: string[]): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    throw readError(dir, error);
  }
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.name.startsWith(EVENT_FILE_PREFIX) && (entry.isFile() || (entry.isSymbolicLink() && statSync(full, { throwIfNoEntry: false })?.isFile()))) {
      out.push(full);
    }
  }
  return out;
}

/** The event files `source` names (a file, or a log directory searched recursively); absolute paths. */
export function eventFilesOf(source: string): { files: string[]; isDir: boolean } {
  let isDir: boolean;
  try {
    isDir = statSync(source).isDirectory();
  } catch (error) {
    throw readError(source, error);
  }
  if (!isDir) return { files: [source], isDir };
  const files = walk(source, []);
  if (files.length === 0) {
    throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${source}: no ${EVENT_FILE_PREFIX}* file in it or below it; is this a TensorBoard log directory?`);
  }
  return { files, isDir };
}

/** What a run directory's files hold, for telling one run from several. */
export interface RunFolder {
  dir: string;
  files: number;
  tags: Set<string>;
  firstStep: number;
  lastStep: number;
}

/**
 * Throws when the folders are several runs: folders sharing a tag are (two runs, or one run
 * twice); folders whose tags are disjoint are one run written by several writers (say, a
 * training and an evaluation writer) and merge.
 */
export function checkOneRun(source: string, folders: RunFolder[]): void {
  if (folders.length < 2) return;
  const owner = new Map<string, string>();
  let shared: { tag: string; a: string; b: string } | null = null;
  for (const f of folders) {
    for (const tag of f.tags) {
      const first = owner.get(tag);
      if (first !== undefined && shared === null) shared = { tag, a: first, b: f.dir };
      owner.set(tag, f.dir);
    }
  }
  if (shared === null) return;
  const rel = (dir: string) => path.relative(source, dir) || '.';
  const listed = folders
    .map((f) => {
      const steps = f.tags.size === 0 ? 'no scalars' : `steps ${f.firstStep} … ${f.lastStep}, ${f.tags.size} tag${f.tags.size === 1 ? '' : 's'}`;
      return `${rel(f.dir)} (${f.files} file${f.files === 1 ? '' : 's'}, ${steps})`;
    })
    .join('; ');
  throw new RlprobeError(
    'RLPROBE_IMPORT_FAILED',
    `${source}: event files of ${folders.length} runs: ${listed}. They share tags (e.g. "${shared.tag}" in ${rel(shared.a)} and ${rel(shared.b)}), ` +
      `so they are not one run: import one run folder at a time (probe import tensorboard ${path.join(source, rel(folders[0].dir))} OUT), or one event file`,
  );
}
