/**
 * The late-columns run (test/helpers/late-columns.ts) recorded by our Recorder in each layout
 * a run can be found in, and what each layout holds:
 *   live       a child recorder that published every chunk as parts and is still running
 *   crashed    the same, SIGKILLed after its last flush (parts, no close)
 *   closed     recorded in this process and closed (compacted)
 *   resumed    closed at step 150, then resumed from step 140 (generation 1: steps 140-149
 *              logged again) by a child that is SIGKILLed after its last flush
 *   multirank  rank 0 and rank 1 (recordAllRanks) in one child, SIGKILLed; rank 1 was closed
 *              at step 120 and resumed, so rank-001/ is a resumed run too
 */
import path from 'node:path';

import { Recorder } from '../../ts/index.js';
import { REPO_ROOT, spawnChild, waitForExit } from './child.js';
import type { RunningChild } from './child.js';
import { lateSampleRows, lateSteps, recordLateRun } from './late-columns.js';
import type { LoggedStep } from './late-columns.js';

export const LAYOUTS = ['live', 'crashed', 'closed', 'resumed', 'multirank'] as const;
export type LayoutName = (typeof LAYOUTS)[number];

export const STEPS = 240;
/** The resumed layout: the first recorder logs [0, RESUME_CLOSE), the second [RESUME_FROM, STEPS). */
export const RESUME_CLOSE = 150;
export const RESUME_FROM = 140;

const CHILD = path.join(REPO_ROOT, 'test', 'helpers', 'late-columns-child.ts');
const OPTIONS = { algorithm: 'grpo', runId: 'late-columns', captureEnvironment: false, installHandlers: false, flushSteps: 1_000_000, flushIntervalMs: 3_600_000 } as const;

export interface LayoutExpectation {
  /** Each recording's steps, in write order, with the rank that wrote them: '.' is the run, 'rank-001' rank 1's. */
  steps: Record<string, Array<{ logged: LoggedStep; rank: number }>>;
  /** Every sample of every rank, in write order, as stored (select: false). */
  samples: ReturnType<typeof lateSampleRows>;
}

const ofRank = (rank: number, steps: LoggedStep[]) => steps.map((logged) => ({ logged, rank }));

export const EXPECTED: Record<LayoutName, LayoutExpectation> = {
  live: { steps: { '.': ofRank(0, lateSteps(0, STEPS)) }, samples: lateSampleRows(0, STEPS, 0) },
  crashed: { steps: { '.': ofRank(0, lateSteps(0, STEPS)) }, samples: lateSampleRows(0, STEPS, 0) },
  closed: { steps: { '.': ofRank(0, lateSteps(0, STEPS)) }, samples: lateSampleRows(0, STEPS, 0) },
  resumed: {
    steps: { '.': ofRank(0, [...lateSteps(0, RESUME_CLOSE), ...lateSteps(RESUME_FROM, STEPS, 1)]) },
    samples: [...lateSampleRows(0, RESUME_CLOSE, 0), ...lateSampleRows(RESUME_FROM, STEPS, 0, 1)],
  },
  multirank: {
    steps: { '.': ofRank(0, lateSteps(0, STEPS)), 'rank-001': ofRank(1, lateSteps(0, STEPS)) },
    samples: [...lateSampleRows(0, STEPS, 0), ...lateSampleRows(0, STEPS, 1)],
  },
};

export interface BuiltLayouts {
  dirs: Record<LayoutName, string>;
  /** Kills the live child (idempotent). */
  stopLive(): Promise<void>;
}

async function untilKilled(child: RunningChild, what: string): Promise<void> {
  const exit = await waitForExit(child, 60_000);
  if (exit.signal !== 'SIGKILL' || !child.lines.includes('flushed')) throw new Error(`${what}: expected a flush then SIGKILL, got ${JSON.stringify(exit)}\n${child.describe()}`);
}

/** Records every layout under `root` (children run concurrently); the live child is left running. */
export async function buildLayouts(root: string): Promise<BuiltLayouts> {
  const dirs = Object.fromEntries(LAYOUTS.map((name) => [name, path.join(root, name)])) as Record<LayoutName, string>;

  const closed = new Recorder(dirs.closed, OPTIONS);
  recordLateRun(closed, 0, STEPS);
  const closedSummary = closed.close();
  if (closedSummary.error) throw new Error(`closed layout: ${closedSummary.error}`);
  const first = new Recorder(dirs.resumed, OPTIONS);
  recordLateRun(first, 0, RESUME_CLOSE);
  const firstSummary = first.close();
  if (firstSummary.error) throw new Error(`resumed layout, first recorder: ${firstSummary.error}`);

  const live = spawnChild(CHILD, [dirs.live, '0', String(STEPS), '0', 'hold']);
  const stopLive = async () => {
    if (live.proc.exitCode === null && live.proc.signalCode === null) live.proc.kill('SIGKILL');
    await live.exited.catch(() => undefined);
  };
  try {
    await Promise.all([
      live.waitForLine(/^flushed$/, 60_000),
      untilKilled(spawnChild(CHILD, [dirs.crashed, '0', String(STEPS), '0', 'kill']), 'crashed layout'),
      untilKilled(spawnChild(CHILD, [dirs.resumed, String(RESUME_FROM), String(STEPS), '1', 'kill']), 'resumed layout'),
      untilKilled(spawnChild(CHILD, [dirs.multirank, '0', String(STEPS), '0', 'kill', '2']), 'multirank layout'),
    ]);
  } catch (error) {
    await stopLive();
    throw error;
  }
  return { dirs, stopLive };
}
