/**
 * Links from the report's samples to the trials captured at their steps: a sample whose
 * `sample_id` a capture was labelled with shows that trial (outcome, rewards, trajectory)
 * on its card, and each shown step lists every trial captured there.
 */
import path from 'node:path';

import type { RunReader } from '../reader/run-reader.js';
import type { TrialCapture } from '../reader/trial-reader.js';

export interface ReportTrial {
  capture_key: string;
  name: string;
  /** The rank directory holding it (ranks reuse sample ids). */
  rank: number;
  step: number;
  sample_id: string | null;
  group_id: string | null;
  outcome: string;
  rewards: Record<string, number | null> | null;
  turns: number;
  tool_calls: number;
  /**
   * The capture directory, absolute: the page links it relative to where the report is
   * written (see file-links.ts), so the report opens offline next to the run.
   */
  dir: string;
  /** Its main trajectory file (absolute), when one was collected. */
  trajectory: string | null;
  rollout_span_id: string;
}

export interface ReportTrials {
  /** Captures in the run. */
  total: number;
  /** The captures at the shown steps, by step. */
  at: Record<string, ReportTrial[]>;
}

function linkOf(t: TrialCapture): ReportTrial {
  const ex = t.trial.exception;
  const failedStep = (t.trial.step_results ?? []).find((o) => o.exception !== null);
  const main = t.trajectories[0];
  return {
    capture_key: t.capture_key,
    name: t.trial.name,
    rank: t.rank,
    step: t.step,
    sample_id: t.sample_id,
    group_id: t.group_id,
    outcome: ex ? `failed: ${ex.type ?? 'exception'}` : failedStep ? `failed in step ${failedStep.name}: ${failedStep.exception?.type ?? 'exception'}` : t.trial.finished ? 'finished' : 'unfinished',
    rewards: t.trial.rewards,
    turns: t.trajectories.reduce((n, x) => n + x.turns, 0),
    tool_calls: t.trajectories.reduce((n, x) => n + x.tool_calls, 0),
    dir: path.resolve(t.dir),
    trajectory: main ? path.resolve(t.files_dir, main.path) : null,
    rollout_span_id: t.spans.rollout_span_id,
  };
}

export function trialLinks(reader: RunReader, steps: Iterable<number>): ReportTrials {
  const all = reader.trials();
  const wanted = new Set(steps);
  const at: Record<string, ReportTrial[]> = {};
  for (const t of all) {
    if (!wanted.has(t.step)) continue;
    (at[String(t.step)] ??= []).push(linkOf(t));
  }
  return { total: all.length, at };
}

/** The trial captured for sample `sampleId` of `rank` at `step`, if any. */
export function trialOfSample(trials: ReportTrials, step: number, sampleId: string | undefined, rank = 0): ReportTrial | undefined {
  if (sampleId === undefined) return undefined;
  return trials.at[String(step)]?.find((t) => t.sample_id === sampleId && t.rank === rank);
}
