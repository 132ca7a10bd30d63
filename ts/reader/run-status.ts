/**
 * How a recording ended, read from its lifecycle events. Library code (the watcher, the
 * report) and the CLI (`probe info`) all ask, so it lives with the reader, below both.
 */
import type { RunEvent } from '../schema/event.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';

export type RunState = 'closed' | 'exited' | 'crashed' | 'signalled' | 'open';

export interface RunStatus {
  state: RunState;
  /** One line for a person. */
  summary: string;
  /** The event that decided it, if any. */
  event: RunEvent | null;
}

const ENDINGS = new Set<string>([
  RECORDER_EVENT_KINDS.close,
  RECORDER_EVENT_KINDS.processExit,
  RECORDER_EVENT_KINDS.crash,
  RECORDER_EVENT_KINDS.signal,
  RECORDER_EVENT_KINDS.resume,
]);

/**
 * How the (rank-0) recording ended, from the recorder's own lifecycle events: a crash or
 * signal outranks the exit that follows it; no ending event means the run is still live
 * or was killed (SIGKILL, power loss).
 */
export function runStatus(events: RunEvent[]): RunStatus {
  let crash: RunEvent | null = null;
  let last: RunEvent | null = null;
  for (const e of events) {
    if (!ENDINGS.has(e.kind) || e.rank !== 0) continue;
    if (e.kind === RECORDER_EVENT_KINDS.resume) {
      crash = null;
      last = null;
      continue;
    }
    if (e.kind === RECORDER_EVENT_KINDS.crash || e.kind === RECORDER_EVENT_KINDS.signal) crash = e;
    last = e;
  }
  if (crash) {
    const exit = last && last.kind === RECORDER_EVENT_KINDS.processExit ? ` (exit code ${String(last.data.code)})` : '';
    return crash.kind === RECORDER_EVENT_KINDS.crash
      ? { state: 'crashed', summary: `crashed: ${crash.message}${exit}`, event: crash }
      : { state: 'signalled', summary: `stopped by ${String(crash.data.signal ?? crash.message)}`, event: crash };
  }
  if (!last) return { state: 'open', summary: 'no end recorded: still live, or killed (SIGKILL, power loss)', event: null };
  if (last.kind === RECORDER_EVENT_KINDS.close) return { state: 'closed', summary: 'closed cleanly', event: last };
  return { state: 'exited', summary: `process exited (code ${String(last.data.code)}) without close(); flushed on exit`, event: last };
}
