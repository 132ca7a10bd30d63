/**
 * Whether a run is live, closed cleanly, or ended without a close, for `probe mcp`: the
 * reader's settled status (ts/reader/run-status.ts: ending events, then the writer lock and
 * the step layout) in the words the MCP tools use.
 */
import type { RunStatus } from './run-status.js';

export const RUN_STATUSES = ['live', 'closed cleanly', 'ended without a close', 'unknown'] as const;
export type RunLiveness = (typeof RUN_STATUSES)[number];

export interface RunState {
  status: RunLiveness;
  /** One line: how it ended, or why it is thought live. */
  detail: string;
}

export function runState(settled: Pick<RunStatus, 'state' | 'summary' | 'live'>): RunState {
  switch (settled.state) {
    case 'closed':
      return { status: 'closed cleanly', detail: settled.summary };
    case 'open':
      // only a writer lock held by a live process says "live"; no lock, or one on another host, cannot tell
      return { status: settled.live ? 'live' : 'unknown', detail: settled.summary };
    default:
      return { status: 'ended without a close', detail: settled.summary };
  }
}
