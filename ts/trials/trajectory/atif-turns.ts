/**
 * One ATIF step as spans: a `turn` span with the step's message, reasoning, metrics and
 * extra as attributes, a `tool_call` span per call with the observation results that answer
 * it joined in, and results no call claims kept on the turn. The subagent references those
 * results carry are handed back, not followed: expanding trajectories is `atif.ts`'s job,
 * which keeps this module free of the document machinery (and of an import cycle).
 */
import type { PlannedSpan } from './contract.js';
import type { TimeRange } from './times.js';
import { Keys, escapeKey, newSpan } from './atif-spans.js';
import { readMetrics } from './atif-totals.js';
import type { Totals } from './atif-totals.js';
import { LIMITS, argumentsText, clip, extraOf, isObject, preview, putDefined, readContent, readNumber, str } from './atif-values.js';
import type { Json, Notes } from './atif-values.js';

const STEP_KEYS = new Set([
  'step_id', 'timestamp', 'source', 'model_name', 'reasoning_effort', 'message', 'reasoning_content',
  'tool_calls', 'observation', 'metrics', 'extra', 'llm_call_count', 'is_copied_context',
]);
const CALL_KEYS = new Set(['tool_call_id', 'function_name', 'arguments', 'extra']);
const RESULT_KEYS = new Set(['source_call_id', 'content', 'subagent_trajectory_ref', 'extra']);
const SOURCES = new Set(['agent', 'user', 'system']);

export interface OrderedStep {
  step: Json;
  /** Path segment: `turn:<step_id>`, or `turn:<position>` when step ids are unusable. */
  key: string;
  /** What the turn's name shows after `#`. */
  shown: string;
}

/** What a turn needs of the document its step belongs to. */
export interface StepDocument {
  doc: Json;
  /** How warnings name the document. */
  label: string;
}

export interface TurnOutcome {
  /** The turn span, then its tool_call spans, in emission order. */
  spans: PlannedSpan[];
  copied: boolean;
  metrics: Totals;
  /** Each result's `subagent_trajectory_ref` (as written) and the span it belongs under, in result order. */
  refs: { refs: unknown; parent: string }[];
  /** How warnings name the step. */
  where: string;
}

/** A `turn` span, its `tool_call` spans and the subagent references its results carry. */
export function expandTurn(notes: Notes, frame: StepDocument, s: OrderedStep, turnPath: string, parentPath: string | null, range: TimeRange, estimated: boolean): TurnOutcome {
  const { step } = s;
  const where = `${frame.label} step ${s.shown}`;
  const source = str(step.source);
  if (source === null || !SOURCES.has(source)) notes.add(`source:${frame.label}`, `${where}: source ${preview(step.source)} is not agent, user or system`);
  const copied = step.is_copied_context === true;
  const metrics = readMetrics(notes, step.metrics, where);
  const attrs = turnAttributes(notes, frame.doc, step, source, where, metrics.attributes);
  if (copied) attrs.is_copied_context = true;
  if (estimated) attrs.time_estimated = true;
  const label = source === null ? 'step' : clip(source, 40);
  const turn = newSpan(turnPath, parentPath, 'turn', `${label} #${s.shown}${copied ? ' (copied context)' : ''}`, attrs, range);
  markError(turn, [step.extra]);
  const spans = [turn];

  const calls = readCalls(notes, step.tool_calls, turnPath, where);
  const observations: Json[] = [];
  const refs: { refs: unknown; parent: string }[] = [];
  for (const result of readResults(notes, step.observation, where)) {
    const sci = str(result.source_call_id);
    const call = sci === null ? undefined : calls.find((c) => c.id === sci);
    if (sci !== null && call === undefined) notes.add(`unknowncall:${frame.label}`, `${where}: an observation result names source_call_id ${JSON.stringify(clip(sci, 80))}, which no tool call of the step has; kept on the turn`);
    if (call !== undefined) call.results.push(result);
    else if (result.content !== undefined || sci !== null || result.extra !== undefined) observations.push(observationEntry(notes, result, sci, where));
    if (result.subagent_trajectory_ref !== undefined && result.subagent_trajectory_ref !== null) {
      refs.push({ refs: result.subagent_trajectory_ref, parent: call?.path ?? turnPath });
    }
  }
  if (observations.length > 0) {
    attrs.observations = observations.slice(0, LIMITS.observations);
    if (observations.length > LIMITS.observations) attrs.observations_omitted = observations.length - LIMITS.observations;
  }
  for (const c of calls) spans.push(callSpan(notes, c, turnPath, range, copied, estimated, where));
  return { spans, copied, metrics: metrics.values, refs, where };
}

function turnAttributes(notes: Notes, doc: Json, step: Json, source: string | null, where: string, metrics: Json): Json {
  const a: Json = { source: source === null ? null : clip(source, 40), step_id: stepIdAttr(step.step_id) };
  const agent = isObject(doc.agent) ? doc.agent : {};
  const model = str(step.model_name) ?? (source === 'agent' ? str(agent.model_name) : null);
  if (model !== null) a.model_name = clip(model, LIMITS.key);
  if (typeof step.reasoning_effort === 'string') a.reasoning_effort = clip(step.reasoning_effort, 100);
  else putDefined(a, 'reasoning_effort', readNumber(notes, step.reasoning_effort, `${where} reasoning_effort`));
  if (typeof step.timestamp === 'string') a.timestamp = clip(step.timestamp, 100);
  const message = readContent(notes, step.message, `${where} message`);
  if (message.text !== null) {
    a.message = clip(message.text, LIMITS.text);
    a.message_chars = message.text.length;
  }
  if (message.parts !== null) a.content_parts = message.parts;
  if (typeof step.reasoning_content === 'string') {
    a.reasoning_content = clip(step.reasoning_content, LIMITS.text);
    a.reasoning_chars = step.reasoning_content.length;
  } else if (step.reasoning_content !== undefined && step.reasoning_content !== null) {
    a.reasoning_content = preview(step.reasoning_content);
  }
  Object.assign(a, metrics);
  putDefined(a, 'llm_call_count', readNumber(notes, step.llm_call_count, `${where} llm_call_count`));
  putDefined(a, 'extra', extraOf(notes, step, STEP_KEYS, 'step', where));
  return a;
}

function stepIdAttr(value: unknown): number | string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  return typeof value === 'string' ? clip(value, 40) : null;
}

// ---- tool calls and observation results

interface Call {
  id: string | null;
  path: string;
  raw: Json;
  results: Json[];
}

function readCalls(notes: Notes, value: unknown, turnPath: string, where: string): Call[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    notes.add(`callsnotarray:${where}`, `${where}: tool_calls is not an array; ignored`);
    return [];
  }
  const keys = new Keys();
  const calls: Call[] = [];
  value.forEach((raw: unknown, i: number) => {
    if (!isObject(raw)) {
      notes.add('badcall', `${where}: tool_calls[${i}] is not an object; skipped`);
      return;
    }
    const id = str(raw.tool_call_id);
    const wanted = id === null || id === '' ? `tool:@${i}` : `tool:${escapeKey(id)}`;
    const key = keys.take(wanted);
    if (id === null || id === '') notes.add('noid', `${where}: tool call ${i} has no tool_call_id; results cannot be joined to it`);
    else if (key !== wanted) notes.add('dupid', `${where}: tool_call_id ${JSON.stringify(clip(id, 80))} repeats within the step; results join the first`);
    calls.push({ id: id === '' ? null : id, path: `${turnPath}/${key}`, raw, results: [] });
  });
  return calls;
}

function readResults(notes: Notes, observation: unknown, where: string): Json[] {
  if (observation === undefined || observation === null) return [];
  if (!isObject(observation) || !Array.isArray(observation.results)) {
    notes.add('badobs', `${where}: observation has no results array; ignored`);
    return [];
  }
  return observation.results.filter((r: unknown, i: number): r is Json => {
    if (isObject(r)) return true;
    notes.add('badresult', `${where}: observation.results[${i}] is not an object; skipped`);
    return false;
  });
}

function callSpan(notes: Notes, c: Call, turnPath: string, range: TimeRange, copied: boolean, estimated: boolean, where: string): PlannedSpan {
  const fn = str(c.raw.function_name);
  const a: Json = { tool_call_id: c.id === null ? null : clip(c.id, LIMITS.key), function_name: fn === null ? null : clip(fn, LIMITS.key) };
  if (c.raw.arguments !== undefined) a.arguments = argumentsText(notes, c.raw.arguments, `${where} tool call ${c.id ?? '?'} arguments`);
  putDefined(a, 'extra', extraOf(notes, c.raw, CALL_KEYS, 'tool call', where));
  if (c.results.length > 0) Object.assign(a, joinedResults(notes, c.results, where));
  if (copied) a.is_copied_context = true;
  if (estimated) a.time_estimated = true;
  const span = newSpan(c.path, turnPath, 'tool_call', fn === null ? 'tool' : clip(fn, LIMITS.key), a, range);
  markError(span, [c.raw.extra, ...c.results, ...c.results.map((r) => r.extra)]);
  return span;
}

/** The results answering one call as attributes: a preview of their content, parts, extra. */
function joinedResults(notes: Notes, results: Json[], where: string): Json {
  const a: Json = {};
  const texts: string[] = [];
  const parts: Json[] = [];
  const extras: unknown[] = [];
  for (const r of results) {
    const content = readContent(notes, r.content, `${where} result`);
    if (content.text !== null) texts.push(content.text);
    if (content.parts !== null) parts.push(...content.parts);
    const extra = extraOf(notes, r, RESULT_KEYS, 'observation result', where);
    if (extra !== undefined) extras.push(extra);
  }
  if (texts.length > 0) {
    const joined = texts.join('\n');
    a.result = clip(joined, LIMITS.text);
    a.result_chars = joined.length;
  }
  if (parts.length > 0) a.result_parts = parts.slice(0, LIMITS.items);
  if (results.length > 1) a.result_count = results.length;
  if (extras.length > 0) a.result_extra = extras.length === 1 ? extras[0] : extras;
  return a;
}

/** An observation result kept on the turn because no tool call of the step claims it. */
function observationEntry(notes: Notes, r: Json, sci: string | null, where: string): Json {
  const e: Json = {};
  if (sci !== null) e.source_call_id = clip(sci, LIMITS.key);
  const content = readContent(notes, r.content, `${where} observation`);
  if (content.text !== null) e.content = clip(content.text, LIMITS.text);
  if (content.parts !== null) e.content_parts = content.parts;
  putDefined(e, 'extra', extraOf(notes, r, RESULT_KEYS, 'observation result', where));
  return e;
}

/** Sets status error when an object explicitly marks one (`is_error: true`, `status: "error"`, an `error` text). */
function markError(span: PlannedSpan, marks: unknown[]): void {
  for (const m of marks) {
    if (!isObject(m)) continue;
    const text = str(m.error);
    if (m.is_error === true || m.status === 'error' || (text !== null && text !== '')) {
      span.status = 'error';
      span.error = clip(text !== null && text !== '' ? text : m.is_error === true ? 'marked is_error' : 'status: error', LIMITS.value);
      return;
    }
  }
}
