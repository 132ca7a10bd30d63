/**
 * The read side of the capture store (run-store.ts writes it): where captures live, which
 * are finished, and their manifests. Apart from run-store.ts, so a reader listing a run's
 * trials (`probe info`) loads none of the capture machinery.
 */
import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { readRegularFile } from '../files/regular-file.js';
import { CAPTURE_FILE, FILES_DIR } from './manifest.js';
import type { CaptureManifest } from './manifest.js';
import { isCaptureKey } from './safe-path.js';

export const TRIALS_DIR = 'trials';

export function captureDir(runDir: string, key: string): string {
  return path.join(runDir, TRIALS_DIR, key);
}

export function captureFilesDir(runDir: string, key: string): string {
  return path.join(captureDir(runDir, key), FILES_DIR);
}

/** Reads one capture's manifest; throws RLPROBE_NOT_FOUND when it has none. */
export function readCaptureManifest(runDir: string, key: string): CaptureManifest {
  if (!isCaptureKey(key)) throw new RlprobeError('RLPROBE_NOT_FOUND', `no capture ${JSON.stringify(key)} in ${runDir} (not a capture key)`);
  const file = path.join(captureDir(runDir, key), CAPTURE_FILE);
  // a FIFO or /dev/zero in its place must not hang every trial listing: regular files only
  const text = readRegularFile(file, 'RLPROBE_BAD_MANIFEST', 'move the capture directory out of the run (or capture the trial again)');
  if (text === null) throw new RlprobeError('RLPROBE_NOT_FOUND', `no capture ${JSON.stringify(key)} in ${runDir}`);
  try {
    return JSON.parse(text) as CaptureManifest;
  } catch (e) {
    throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${file}: ${(e as Error).message}`);
  }
}

function presentAt(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Capture keys in `runDir`: finished ones (with a manifest) and unfinished ones. */
export function captureKeys(runDir: string): { finished: string[]; unfinished: string[] } {
  const dir = path.join(runDir, TRIALS_DIR);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return { finished: [], unfinished: [] };
  }
  const finished: string[] = [];
  const unfinished: string[] = [];
  for (const n of names) {
    if (n.startsWith('.')) continue;
    // lstat: anything at the manifest's name makes a finished capture, so a symlink loop or
    // a FIFO there is read (and reported as broken, by name) rather than taken for unfinished
    (presentAt(path.join(dir, n, CAPTURE_FILE)) ? finished : unfinished).push(n);
  }
  return { finished, unfinished };
}
