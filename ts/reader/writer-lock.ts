/**
 * Who holds a recording's writer lock. Our recorder holds `<run>/.writer.lock` (flock) for
 * its whole life and writes `pid <pid> on <host> since <seconds>` into it; the kernel drops
 * the lock when the process dies and the file stays behind (docs/format.md#locks). On the
 * same host the writer is alive exactly when that process is and started before it took
 * the lock (a reused pid is another process). The Python recorder takes no lock.
 */
import { closeSync, readFileSync, readSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { openRegularFile } from '../files/regular-file.js';
import { processAlive } from '../process/alive.js';

export interface LockHolder {
  pid: number;
  host: string;
  /** Unix seconds. */
  since: number;
}

export type WriterLock =
  /** No lock file: the writer takes none (Python rlprobe), or none ever ran here. */
  | { state: 'none' }
  /** A file not in our format: someone else's, or damaged. */
  | { state: 'unreadable' }
  | { state: 'held' | 'gone' | 'elsewhere'; holder: LockHolder };

/** Longest lock file read: ours is one short line. */
const MAX_LOCK_BYTES = 4096;

export function writerLock(runDir: string): WriterLock {
  const text = lockText(path.join(runDir, '.writer.lock'));
  if (text === null) return { state: 'none' };
  if (text === undefined) return { state: 'unreadable' };
  const m = /^pid (\d+) on (.+) since ([\d.]+)\s*$/.exec(text.trim());
  if (!m) return { state: 'unreadable' };
  const holder = { pid: Number(m[1]), host: m[2], since: Number(m[3]) };
  if (holder.host !== os.hostname()) return { state: 'elsewhere', holder };
  const started = processStart(holder.pid);
  // a second of slack: the start time is in clock ticks, the lock time in float seconds
  const alive = processAlive(holder.pid) && (started === null || started <= holder.since + 1);
  return { state: alive ? 'held' : 'gone', holder };
}

/**
 * The lock file's text: null when there is none, undefined when it is not a short regular
 * file (a FIFO, a device, a directory, a link loop, something huge). Read on every status
 * question (`probe info`, each look of `probe serve`), so it must never block or grow:
 * opened non-blocking as a regular file only, at most MAX_LOCK_BYTES read.
 */
function lockText(file: string): string | null | undefined {
  let fd: number | null;
  try {
    fd = openRegularFile(file, 'RLPROBE_IO', 'not a lock file');
  } catch {
    return undefined;
  }
  if (fd === null) return null;
  try {
    const buf = Buffer.alloc(MAX_LOCK_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return n > MAX_LOCK_BYTES ? undefined : buf.toString('utf8', 0, n);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** When process `pid` started (Unix seconds), from /proc; null where /proc cannot say. */
function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) can hold spaces and parentheses: fields count from the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    const boot = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    // USER_HZ is 100 on every Linux architecture Node runs on
    return boot && Number.isFinite(ticks) ? Number(boot[1]) + ticks / 100 : null;
  } catch {
    return null;
  }
}
