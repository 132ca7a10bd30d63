/**
 * How a recording ended, read from its lifecycle events. Library code (the watcher, the
 * report) and the CLI (`probe info`) all ask, so it lives with the reader, below both.
 */
import type { RunEvent } from '../schema/event.js';
import { RECORDER_EVENT_KINDS } from '../schema/event-kinds.js';
import type { StepLayout } from './step-layout.js';
import type { WriterLock } from './writer-lock.js';

export type RunState = 'closed' | 'exited' | 'crashed' | 'signalled' | 'killed' | 'open';

export interface RunStatus {
  state: RunState;
  /** One line for a person. */
  summary: string;
  /** The event that decided it, if any. */
  event: RunEvent | null;
  /** Known to be written right now: its writer lock's holder is alive on this host. */
  live?: boolean;
}

/** The recorder's lifecycle events that say how a recording ended (or that it was resumed). */
export const ENDING_EVENT_KINDS: ReadonlySet<string> = new Set<string>([
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
    if (!ENDING_EVENT_KINDS.has(e.kind) || e.rank !== 0) continue;
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

/** What the run directory shows besides its events. */
export interface RunDisk {
  layout: StepLayout;
  lock: WriterLock;
}

/**
 * `runStatus`, settled by what the format guarantees when no ending event says it: a run
 * whose writer records no ending event (Python rlprobe 0.1.0) and takes no lock, with its
 * steps compacted and no part left, was closed cleanly (its writer compacts only on close);
 * a run whose writer lock's holder is gone was killed.
 */
export function settleRunStatus(fromEvents: RunStatus, disk: RunDisk): RunStatus {
  if (fromEvents.state !== 'open') return fromEvents;
  const { layout, lock } = disk;
  switch (lock.state) {
    case 'none':
      return layout === 'compacted'
        ? {
            state: 'closed',
            summary: 'closed cleanly: its steps are compacted with no part left and it has no writer lock (its writer, such as Python rlprobe, records no ending event)',
            event: null,
          }
        : { state: 'open', summary: 'no end recorded, and no writer lock says who writes it (the Python recorder takes none): still live, or killed', event: null };
    case 'held':
      return { state: 'open', live: true, summary: `live: being recorded by pid ${lock.holder.pid} since ${new Date(lock.holder.since * 1000).toISOString()}`, event: null };
    case 'gone':
      return {
        state: 'killed',
        summary: `no end recorded and its writer (pid ${lock.holder.pid}) is gone: killed (SIGKILL, out of memory, power loss)`,
        event: null,
      };
    case 'elsewhere':
      return { state: 'open', summary: `no end recorded; its writer is pid ${lock.holder.pid} on ${lock.holder.host}, another host, which cannot be asked from here`, event: null };
    case 'unreadable':
      return { ...fromEvents, summary: `${fromEvents.summary}; its .writer.lock is not ours` };
  }
}
