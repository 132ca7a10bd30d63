/**
 * Whether a run is live, closed cleanly, or ended without a close. The recorder's ending
 * events (ts/reader/run-status.ts) settle most runs; a run with none was either still being
 * written or killed (SIGKILL, the OOM killer, a power loss). The writer lock tells them
 * apart: the recorder holds `<run>/.writer.lock` for its whole life and writes `pid <pid>
 * on <host> since <seconds>` into it (docs/format.md#locks), so on the same host the
 * writer is alive exactly when that process is (and started before it took the lock: a
 * reused pid is another process).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { processAlive } from '../process/alive.js';
import type { RunStatus } from '../reader/run-status.js';

export const RUN_STATUSES = ['live', 'closed cleanly', 'ended without a close', 'unknown'] as const;
export type RunLiveness = (typeof RUN_STATUSES)[number];

export interface RunState {
  status: RunLiveness;
  /** One line: how it ended, or why it is thought live. */
  detail: string;
}

interface LockHolder {
  pid: number;
  host: string;
  since: number;
}

function lockHolder(runDir: string): LockHolder | null {
  let text: string;
  try {
    text = readFileSync(path.join(runDir, '.writer.lock'), 'utf8');
  } catch {
    return null;
  }
  const m = /^pid (\d+) on (.+) since ([\d.]+)\s*$/.exec(text.trim());
  return m ? { pid: Number(m[1]), host: m[2], since: Number(m[3]) } : null;
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

export function runState(runDir: string, ended: Pick<RunStatus, 'state' | 'summary'>): RunState {
  if (ended.state === 'closed') return { status: 'closed cleanly', detail: ended.summary };
  if (ended.state !== 'open') return { status: 'ended without a close', detail: ended.summary };
  const holder = lockHolder(runDir);
  if (holder === null) {
    return { status: 'unknown', detail: 'no end recorded, and no writer lock says who writes it (the Python recorder takes none): still live, or killed' };
  }
  if (holder.host !== os.hostname()) {
    return { status: 'unknown', detail: `no end recorded; its writer is pid ${holder.pid} on ${holder.host}, another host, which cannot be asked from here` };
  }
  const started = processStart(holder.pid);
  // a second of slack: the start time is in clock ticks, the lock time in float seconds
  if (processAlive(holder.pid) && (started === null || started <= holder.since + 1)) {
    return { status: 'live', detail: `being recorded by pid ${holder.pid} since ${new Date(holder.since * 1000).toISOString()}` };
  }
  return { status: 'ended without a close', detail: `no end recorded and its writer (pid ${holder.pid}) is gone: killed (SIGKILL, out of memory, power loss)` };
}
