import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';

import { Recorder } from '../../ts/index.js';
import type { RecorderOptions } from '../../ts/index.js';

/** A fresh temporary directory (not yet a run), removed when the test ends. */
export function tempRunDir(t: TestContext, label = 'run'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `rlprobe-${label}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A temporary run directory and a Recorder writing it. The recorder never installs process
 * hooks nor captures the environment; it is closed (idempotent) before the directory is
 * removed when the test ends.
 */
export function openRun(t: TestContext, label: string, options: RecorderOptions = {}): { dir: string; rec: Recorder } {
  const dir = mkdtempSync(path.join(os.tmpdir(), `rlprobe-${label}-`));
  const rec = new Recorder(dir, { ...options, installHandlers: false, captureEnvironment: false });
  t.after(() => {
    try {
      rec.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  return { dir, rec };
}
