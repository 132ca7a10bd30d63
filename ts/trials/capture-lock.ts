/**
 * One writer per capture at a time. Two captures (or deliveries, or expands) of the same
 * trial into the same run would remove each other's temporary files and publish a mix, so
 * each holds `trials/.<key>.lock` (created exclusively, holding pid, host and time) while it
 * rewrites the capture. A lock left by a process that died on this host (a SIGKILLed
 * delivery) is taken over; one held on another host is respected — the message says how to
 * clear it if that process is gone.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { processAlive } from '../process/alive.js';

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

function readOwner(file: string): LockOwner | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LockOwner;
  } catch {
    return null;
  }
}

/** Takes the capture lock of `key` in `runDir` (see the module comment); returns its file. */
function acquire(runDir: string, key: string): string {
  const dir = path.join(runDir, 'trials');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `.${key}.lock`);
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, JSON.stringify(me), { flag: 'wx' });
      return file;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const owner = readOwner(file);
    // stale: its owner died on this host, or it stayed unreadable (a crash between creating
    // and writing it); an unreadable one may also be being written right now: wait a little
    const stale = owner === null ? attempt >= 2 : owner.host === me.host && !processAlive(owner.pid);
    if (attempt < 5 && (stale || owner === null)) {
      if (stale) rmSync(file, { force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      continue;
    }
    const who = owner ? `pid ${owner.pid} on ${owner.host} since ${owner.since}` : 'an unknown process';
    throw new RlprobeError('RLPROBE_STATE', `capture ${key} is being written by ${who}; if that process is gone, remove ${file}`);
  }
}

/** Runs `fn` holding the capture lock of `key` in `runDir`; throws RLPROBE_STATE when another live writer holds it. */
export async function withCaptureLock<T>(runDir: string, key: string, fn: () => Promise<T>): Promise<T> {
  const file = acquire(runDir, key);
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}

/** `withCaptureLock` for a synchronous `fn`. */
export function withCaptureLockSync<T>(runDir: string, key: string, fn: () => T): T {
  const file = acquire(runDir, key);
  try {
    return fn();
  } finally {
    rmSync(file, { force: true });
  }
}
