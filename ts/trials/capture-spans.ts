/**
 * The spans of a capture: a `rollout` span at the training step, a `trial_step` span per
 * step of a multi-step trial, and under them the turns and tool calls its trajectories
 * planned. Ids are keyed ids of (run, capture key, span path), so the same trial captured
 * again produces the same ids, and the whole set is written as one file that replaces the
 * previous capture's.
 */
import { KeyedIds } from '../recorder/span-id.js';
import { TrialFileReader } from './file-reader.js';
import { SPAN_ERROR, SPAN_OK, SPAN_OPEN, SpanEncoder } from '../recorder/span-encoder.js';
import type { SpanRowInput } from '../recorder/span-encoder.js';
import type { PlannedTrajectory } from './trajectories.js';
import { stepRewards, unixSeconds } from './trial-info.js';
import type { TrialInfo } from './trial-info.js';

export interface CaptureSpanInput {
  runId: string;
  key: string;
  step: number;
  sampleId: string | null;
  groupId: string | null;
  labels: Record<string, string>;
  info: TrialInfo;
  trajectories: readonly PlannedTrajectory[];
  /** Where the trial's files are (for per-step rewards). */
  filesRoot: string;
  /** Unix seconds: the time used when the trial recorded none. */
  now: number;
  context: Record<string, string>;
}

function bounds(ts: readonly PlannedTrajectory[]): [number | null, number | null] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of ts) {
    for (const s of t.plan?.spans ?? []) {
      if (s.start !== null && Number.isFinite(s.start)) lo = Math.min(lo, s.start);
      const e = s.end ?? s.start;
      if (e !== null && Number.isFinite(e)) hi = Math.max(hi, e);
    }
  }
  return [Number.isFinite(lo) ? lo : null, Number.isFinite(hi) ? hi : null];
}

/** Earliest start and latest end among phase timings, in Unix seconds. */
function timingBounds(timings: Record<string, { started_at: string | null; finished_at: string | null }>): [number | null, number | null] {
  let lo: number | null = null;
  let hi: number | null = null;
  for (const t of Object.values(timings)) {
    const a = unixSeconds(t.started_at);
    const b = unixSeconds(t.finished_at);
    if (a !== null) lo = lo === null ? a : Math.min(lo, a);
    if (b !== null) hi = hi === null ? b : Math.max(hi, b);
  }
  return [lo, hi];
}

function primaryReward(rewards: Record<string, number | null> | null): number | null {
  if (!rewards) return null;
  if ('reward' in rewards) return rewards.reward;
  const first = Object.values(rewards)[0];
  return first ?? null;
}

export function captureSpanRows(input: CaptureSpanInput): SpanRowInput[] {
  const { info, key } = input;
  const ids = new KeyedIds(input.runId);
  const idOf = (p: string) => ids.id(`trial/${key}/${p}`);
  const rolloutId = idOf('rollout');
  const labelsJson = Object.keys(input.labels).length > 0 ? JSON.stringify(input.labels) : null;
  const [planStart, planEnd] = bounds(input.trajectories);
  const start = unixSeconds(info.started_at) ?? planStart ?? input.now;
  const end = unixSeconds(info.finished_at) ?? (info.finished ? (planEnd ?? start) : null);
  const base = { rootId: rolloutId, step: input.step, sampleId: input.sampleId, groupId: input.groupId, labelsJson };
  // a multi-step trial records a failed step in its step_results, not in exception_info
  const failedStep = (info.step_results ?? []).find((o) => o.exception !== null);
  const ex = info.exception ?? (failedStep ? { ...failedStep.exception!, message: `step ${failedStep.name}: ${failedStep.exception!.message ?? ''}` } : null);
  const rows: SpanRowInput[] = [
    {
      ...base,
      spanId: rolloutId,
      parentId: null,
      kind: 'rollout',
      name: info.name,
      key: `trial/${key}`,
      startTime: start,
      endTime: end,
      status: ex ? SPAN_ERROR : end === null ? SPAN_OPEN : SPAN_OK,
      error: ex ? `${ex.type ?? 'Exception'}: ${ex.message ?? ''}`.slice(0, 2000) : null,
      attributesJson: JSON.stringify({
        source: 'harbor_trial',
        capture_key: key,
        trial_id: info.id,
        trial_name: info.name,
        task_name: info.task_name,
        agent: info.agent,
        model: info.model,
        reward: primaryReward(info.rewards),
        rewards: info.rewards,
        finished: info.finished,
        context: input.context,
      }),
    },
  ];
  const times = new Map<string, [number, number | null]>([[rolloutId, [start, end]]]);
  // one span per step of a multi-step trial, in the order they ran, with its outcome and
  // reward (from result.json `step_results`, else the step's reward files)
  const stepSpans = new Map<string, string>();
  const outcomes = new Map((info.step_results ?? []).map((o) => [o.name, o]));
  const stepNames = [...new Set([...info.steps, ...input.trajectories.map((t) => t.record.trial_step).filter((n): n is string => n !== null)])];
  const copy = new TrialFileReader(input.filesRoot, null);
  for (const name of stepNames) {
    const id = idOf(`step:${name}`);
    stepSpans.set(name, id);
    const o = outcomes.get(name);
    const [lo, hi] = bounds(input.trajectories.filter((x) => x.record.trial_step === name));
    const [tlo, thi] = timingBounds(o?.timings ?? {});
    const rewards = o?.rewards ?? stepRewards(copy, name).rewards;
    const st = lo ?? tlo ?? start;
    const en = hi ?? thi ?? st;
    times.set(id, [st, en]);
    const ex = o?.exception ?? null;
    rows.push({
      ...base,
      spanId: id,
      parentId: rolloutId,
      kind: 'trial_step',
      name,
      key: null,
      startTime: st,
      endTime: en,
      status: ex ? SPAN_ERROR : SPAN_OK,
      error: ex ? `${ex.type ?? 'Exception'}: ${ex.message ?? ''}`.slice(0, 2000) : null,
      attributesJson: JSON.stringify({ reward: primaryReward(rewards), rewards, ran: o !== undefined }),
    });
  }
  for (const t of input.trajectories) {
    if (!t.plan) continue;
    const top = t.record.trial_step === null ? rolloutId : (stepSpans.get(t.record.trial_step) ?? rolloutId);
    const pathId = (p: string) => idOf(`${t.record.path}#${p}`);
    for (const s of t.plan.spans) {
      const id = pathId(s.path);
      const parent = s.parentPath === null ? top : pathId(s.parentPath);
      const [ps, pe] = times.get(parent) ?? [start, end];
      const st = s.start ?? ps;
      const en = s.end ?? (s.start === null ? (pe ?? st) : st);
      times.set(id, [st, en]);
      rows.push({
        ...base,
        spanId: id,
        parentId: parent,
        kind: s.kind,
        name: s.name,
        key: null,
        startTime: st,
        endTime: en,
        status: s.status === 'error' ? SPAN_ERROR : SPAN_OK,
        error: s.error,
        attributesJson: JSON.stringify(s.attributes),
      });
    }
  }
  return rows;
}

/** The rows in the wire form the native writer decodes. */
export function encodeRows(rows: readonly SpanRowInput[]): Uint8Array {
  const enc = new SpanEncoder();
  for (const r of rows) enc.addRow(r);
  return enc.take().bytes;
}
