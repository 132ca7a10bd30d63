/**
 * The spans of a capture: a `rollout` span at the training step, a `trial_step` span per
 * step of a multi-step trial, and under them the turns and tool calls its trajectories
 * planned. Ids are keyed ids of (run, capture key, span path), so the same trial captured
 * again produces the same ids, and the whole set is written as one file that replaces the
 * previous capture's. Rows are produced one at a time and encoded as they come: a long
 * trajectory is never held as rows and their encoding at once.
 *
 * A planned span without a time (a trajectory that records none) is given one from its
 * parent, flagged `time_estimated`: siblings are laid end to end over the parent's range in
 * plan order, so turns keep their order and none claims the whole trial; a tool call
 * shares its turn's range (one step's calls may run in parallel).
 */
import { KeyedIds } from '../wire/span-id.js';
import { TrialFileReader } from './file-reader.js';
import { SPAN_ERROR, SPAN_OK, SPAN_OPEN, SpanEncoder } from '../wire/span-encoder.js';
import type { SpanRowInput } from '../wire/span-encoder.js';
import type { PlannedTrajectory } from './trajectories.js';
import type { PlannedSpan } from './trajectory/plan.js';
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
  /** Planned spans cut at the capture's limit (trajectories.ts), shown on the rollout. */
  spansCut: number;
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

/** The id of a capture's rollout span: the keyed id of `trial/<key>/rollout`. */
export function rolloutSpanId(runId: string, key: string): string {
  return new KeyedIds(runId).id(`trial/${key}/rollout`);
}

/** The multi-step step names a capture has a `trial_step` span for, in the order they ran. */
export function trialStepNames(info: TrialInfo, trajectories: readonly PlannedTrajectory[]): string[] {
  return [...new Set([...info.steps, ...trajectories.map((t) => t.record.trial_step).filter((n): n is string => n !== null)])];
}

/** For each untimed planned span (not a tool call): its place among its untimed siblings. */
function untimedSlots(spans: readonly PlannedSpan[]): Map<string, { index: number; of: number }> {
  const byParent = new Map<string | null, string[]>();
  for (const s of spans) {
    if (s.start !== null || s.kind === 'tool_call') continue;
    const list = byParent.get(s.parentPath) ?? [];
    list.push(s.path);
    byParent.set(s.parentPath, list);
  }
  const out = new Map<string, { index: number; of: number }>();
  for (const list of byParent.values()) list.forEach((p, index) => out.set(p, { index, of: list.length }));
  return out;
}

export function* captureSpanRows(input: CaptureSpanInput): Generator<SpanRowInput> {
  const { info, key } = input;
  const ids = new KeyedIds(input.runId);
  const idOf = (p: string) => ids.id(`trial/${key}/${p}`);
  const rolloutId = rolloutSpanId(input.runId, key);
  const labelsJson = Object.keys(input.labels).length > 0 ? JSON.stringify(input.labels) : null;
  const [planStart, planEnd] = bounds(input.trajectories);
  const start = unixSeconds(info.started_at) ?? planStart ?? input.now;
  const end = unixSeconds(info.finished_at) ?? (info.finished ? (planEnd ?? start) : null);
  const base = { rootId: rolloutId, step: input.step, sampleId: input.sampleId, groupId: input.groupId, labelsJson };
  // a multi-step trial records a failed step in its step_results, not in exception_info
  const failedStep = (info.step_results ?? []).find((o) => o.exception !== null);
  const ex = info.exception ?? (failedStep ? { ...failedStep.exception!, message: `step ${failedStep.name}: ${failedStep.exception!.message ?? ''}` } : null);
  yield {
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
      ...(input.spansCut > 0 ? { spans_cut: input.spansCut } : {}),
    }),
  };
  const times = new Map<string, [number, number | null]>([[rolloutId, [start, end]]]);
  // one span per step of a multi-step trial, in the order they ran, with its outcome and
  // reward (from result.json `step_results`, else the step's reward files)
  const stepSpans = new Map<string, string>();
  const outcomes = new Map((info.step_results ?? []).map((o) => [o.name, o]));
  const stepNames = trialStepNames(info, input.trajectories);
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
    yield {
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
    };
  }
  for (const t of input.trajectories) {
    if (!t.plan) continue;
    const top = t.record.trial_step === null ? rolloutId : (stepSpans.get(t.record.trial_step) ?? rolloutId);
    const pathId = (p: string) => idOf(`${t.record.path}#${p}`);
    const slots = untimedSlots(t.plan.spans);
    for (const s of t.plan.spans) {
      const id = pathId(s.path);
      const parent = s.parentPath === null ? top : pathId(s.parentPath);
      const [ps, pe] = times.get(parent) ?? [start, end];
      let st: number;
      let en: number;
      if (s.start !== null) {
        st = s.start;
        en = s.end ?? st;
      } else {
        // laid end to end over the parent's range (an open parent: all at its start)
        const slot = slots.get(s.path);
        const width = (Math.max(pe ?? ps, ps) - ps) / (slot?.of ?? 1);
        st = slot === undefined ? ps : ps + width * slot.index;
        en = slot === undefined ? (pe ?? ps) : st + width;
      }
      times.set(id, [st, en]);
      const attributes = s.start === null ? { ...s.attributes, time_estimated: true } : s.attributes;
      yield {
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
        attributesJson: JSON.stringify(attributes),
      };
    }
  }
}

/** The rows in the wire form the native writer decodes, with their count per kind. */
export function encodeRows(rows: Iterable<SpanRowInput>): { bytes: Uint8Array; count: number; byKind: Record<string, number> } {
  const enc = new SpanEncoder();
  const byKind: Record<string, number> = {};
  let count = 0;
  for (const r of rows) {
    enc.addRow(r);
    byKind[r.kind] = (byKind[r.kind] ?? 0) + 1;
    count++;
  }
  return { bytes: enc.take().bytes, count, byKind };
}
