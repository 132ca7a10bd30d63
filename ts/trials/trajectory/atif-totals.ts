/**
 * Token and cost totals for the ATIF parser: what one step's metrics say, how a document's
 * totals come from its own `final_metrics` or its steps and subagents, how a continuation
 * chain adds up (producers disagree on whether a continuation's totals are cumulative), and
 * the plan summary built from them. Kept apart because these rules are about numbers, not spans.
 */
import type { TrajectoryPlan } from './contract.js';
import { extraOf, isObject, putDefined, readNumber, str } from './atif-values.js';
import type { Json, Notes } from './atif-values.js';

export type Totals = Record<'prompt' | 'completion' | 'cached' | 'cost', number | null>;
const TOTALS: readonly (readonly [keyof Totals, string, string])[] = [
  ['prompt', 'prompt_tokens', 'total_prompt_tokens'],
  ['completion', 'completion_tokens', 'total_completion_tokens'],
  ['cached', 'cached_tokens', 'total_cached_tokens'],
  ['cost', 'cost_usd', 'total_cost_usd'],
];

const METRIC_KEYS = new Set(['prompt_tokens', 'completion_tokens', 'cached_tokens', 'cost_usd', 'prompt_token_ids', 'completion_token_ids', 'logprobs', 'extra']);

/** A document's totals and which of them came from its own final_metrics. */
export interface DocumentTotals {
  totals: Totals;
  final: Record<keyof Totals, boolean>;
}

/** Step metrics as flat attributes (arrays only as lengths) and the numbers the totals sum. */
export function readMetrics(notes: Notes, value: unknown, where: string): { attributes: Json; values: Totals } {
  const values = emptyTotals();
  if (value === undefined || value === null) return { attributes: {}, values };
  if (!isObject(value)) {
    notes.add('badmetrics', `${where}: metrics is not an object; ignored`);
    return { attributes: {}, values };
  }
  const a: Json = {};
  for (const [field, name] of TOTALS) {
    const n = readNumber(notes, value[name], `${where} metrics.${name}`);
    if (n === undefined) continue;
    a[name] = n;
    values[field] = n;
  }
  for (const name of ['prompt_token_ids', 'completion_token_ids', 'logprobs']) {
    const v = value[name];
    if (Array.isArray(v)) a[`${name}_count`] = v.length;
    else if (v !== undefined && v !== null) notes.add(`badarray:${name}`, `${where}: metrics.${name} is not an array; ignored`);
  }
  putDefined(a, 'metrics_extra', extraOf(notes, value, METRIC_KEYS, 'metrics', where));
  return { attributes: a, values };
}

export function emptyTotals(): Totals {
  return { prompt: null, completion: null, cached: null, cost: null };
}

export function addTotals(into: Totals, add: Totals): void {
  for (const [field] of TOTALS) {
    const v = add[field];
    if (v !== null) into[field] = (into[field] ?? 0) + v;
  }
}

/**
 * One document's totals: its `final_metrics` where present (Harbor's already include its
 * subagents: the subagents fixture's 7802 prompt tokens = 6502 in its steps + 1300 in its
 * three subagent files), else the sum of its new (not copied-context) steps plus its subagents.
 */
export function documentTotals(notes: Notes, frame: { doc: Json; label: string }, steps: Totals, subs: Totals): DocumentTotals {
  const fm = isObject(frame.doc.final_metrics) ? frame.doc.final_metrics : {};
  const totals = emptyTotals();
  const final = { prompt: false, completion: false, cached: false, cost: false };
  for (const [field, , total] of TOTALS) {
    const given = readNumber(notes, fm[total], `${frame.label} final_metrics.${total}`);
    if (typeof given === 'number') {
      totals[field] = given;
      final[field] = true;
    } else if (steps[field] !== null || subs[field] !== null) {
      totals[field] = (steps[field] ?? 0) + (subs[field] ?? 0);
    }
  }
  return { totals, final };
}

/**
 * Adds a continuation's totals to the chain's. Terminus-2 writes *run-cumulative* totals into
 * a continuation's final_metrics (the continuation fixture: 2252 in the first file, 7802 in
 * `trajectory.cont-1.json`, which covers both files and the summarisation subagents), so a
 * final_metrics total at least as large as the chain's so far replaces it; otherwise it adds.
 */
export function chainTotals(notes: Notes, running: Totals, next: DocumentTotals, contPath: string): Totals {
  const out = emptyTotals();
  const cumulative: string[] = [];
  for (const [field, , total] of TOTALS) {
    const r = running[field];
    const v = next.totals[field];
    if (v === null || r === null) out[field] = v ?? r;
    else if (next.final[field] && v >= r) {
      out[field] = v;
      cumulative.push(total);
    } else out[field] = r + v;
  }
  if (cumulative.length > 0) {
    notes.add(`cumulative:${contPath}`, `${contPath}: final_metrics ${cumulative.join(', ')} read as run-cumulative (not less than the totals before it), so not added to them`);
  }
  return out;
}

/** The plan summary: span counts (of every span emitted, kept or cut), the chain's totals, and who ran (agent, model, session). */
export function summarise(notes: Notes, kinds: ReadonlyMap<string, number>, doc: Json, totals: Totals): TrajectoryPlan['summary'] {
  const agent = isObject(doc.agent) ? doc.agent : null;
  if (agent === null) notes.add('noagent', 'the trajectory has no agent object');
  const count = (kind: string): number => kinds.get(kind) ?? 0;
  return {
    turns: count('turn'),
    toolCalls: count('tool_call'),
    subtrajectories: count('trajectory'),
    promptTokens: totals.prompt,
    completionTokens: totals.completion,
    cachedTokens: totals.cached,
    costUsd: totals.cost,
    agent: agent === null ? null : str(agent.name),
    model: (agent === null ? null : str(agent.model_name)) ?? firstModel(doc),
    sessionId: str(doc.session_id),
  };
}

/** The first step-level model, for trajectories whose agent object names none. */
function firstModel(doc: Json): string | null {
  if (!Array.isArray(doc.steps)) return null;
  for (const s of doc.steps) if (isObject(s) && str(s.model_name) !== null) return s.model_name as string;
  return null;
}
