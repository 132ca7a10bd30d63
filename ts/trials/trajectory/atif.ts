/**
 * The built-in ATIF parser (Harbor's Agent Trajectory Interchange Format, `ATIF-v1.0` …
 * `ATIF-v1.8`). A trajectory becomes:
 *
 *   turn:<step_id>                       one span per step, in step_id order
 *     turn:<id>/tool:<tool_call_id>      one per tool call, with its result joined in
 *       …/sub:<trajectory_id|path>       a subagent trajectory referenced by the call's result
 *         …/sub:<key>/turn:<id>          (recursively, depth-capped, cycle-guarded)
 *     turn:<id>/sub:<key>                a subagent referenced by a result with no matching call
 *   cont:<k>                             a continuation file (`continued_trajectory_ref`)
 *     cont:<k>/turn:<id>                 its steps (copied-context steps marked)
 *   sub:<trajectory_id>                  an embedded subagent that no result references
 *
 * Real files are messy (Harbor's producers omit null fields, Python writes naive times,
 * lenient JSON readers produce NaN), so nothing here throws on content: every leniency
 * becomes a warning, and attributes only ever hold bounded, JSON-safe previews.
 *
 * This file is the entry and the document walk (chains, segments, subagents, continuations,
 * the cycle guard). One step's spans are built in `atif-turns.ts`, token and cost totals in
 * `atif-totals.ts`, span paths in `atif-spans.ts`, and bounded value reading in `atif-values.ts`.
 */
import path from 'node:path';

import type { PlannedSpan, TrajectoryContext, TrajectoryPlan } from './contract.js';
import { coverRange, fillTimes, parseTimestamp } from './times.js';
import type { TimeRange } from './times.js';
import { Keys, child, escapeKey, newSpan, setRange } from './atif-spans.js';
import { addTotals, chainTotals, documentTotals, emptyTotals, summarise } from './atif-totals.js';
import type { DocumentTotals, Totals } from './atif-totals.js';
import { expandTurn } from './atif-turns.js';
import type { OrderedStep, TurnOutcome } from './atif-turns.js';
import { LIMITS, Notes, clip, isObject, jsonSafe, preview, putDefined, str, stringify } from './atif-values.js';
import type { Json } from './atif-values.js';

/** Minor versions this parser knows (`ATIF-v1.8` added audio content parts). */
const KNOWN_MINOR_MAX = 8;
const VERSION = /^ATIF-v1\.(\d+)$/;

/** Recognises an ATIF document: its format name, and whether this parser knows the minor version. */
export function atifVersion(doc: unknown): { format: string; known: boolean } | null {
  if (!isObject(doc) || typeof doc.schema_version !== 'string') return null;
  const format = doc.schema_version.trim();
  const m = VERSION.exec(format);
  if (m === null) return null;
  const known = Number(m[1]) <= KNOWN_MINOR_MAX;
  // an unknown minor is only taken when it still looks like a trajectory
  if (!known && !Array.isArray(doc.steps)) return null;
  return { format, known };
}

/** The built-in parser: null when `doc` is not ATIF v1. */
export function parseAtif(doc: unknown, ctx: TrajectoryContext): TrajectoryPlan | null {
  const version = atifVersion(doc);
  if (version === null || !isObject(doc)) return null;
  const rootFile = typeof ctx.file === 'string' && ctx.file !== '' ? ctx.file : null;
  const run = new Run(ctx, doc, rootFile !== null);
  if (!version.known) run.notes.add('version', `unknown ATIF minor version ${version.format}; read as ATIF-v1.${KNOWN_MINOR_MAX}`);
  const root: Frame = {
    doc,
    file: rootFile,
    dir: typeof ctx.dir === 'string' ? ctx.dir : '',
    label: rootFile ?? 'trajectory',
    depth: 0,
    lineage: { files: new Set(rootFile === null ? [] : [rootFile]), docs: [doc] },
    embedded: embeddedScope(doc, []),
  };
  const chain = expandChain(run, root, null, null);
  // the summary may warn too (no agent object): compute it before listing the warnings
  const summary = summarise(run.notes, run.kinds, doc, chain.totals);
  return { format: version.format, spans: run.spans, ...(run.cut > 0 ? { spansCut: run.cut } : {}), referencedFiles: run.referenced, warnings: run.notes.list(), summary };
}

// ---- expansion state

/**
 * One expansion: the spans emitted so far and what was read on the way. Past the context's
 * `maxSpans` a span is counted (by kind, and as cut) but not kept: a trajectory of 100,000
 * steps is walked whole, its counts exact, while memory holds only the spans written.
 */
class Run {
  readonly spans: PlannedSpan[] = [];
  /** Spans emitted per kind, kept or not. */
  readonly kinds = new Map<string, number>();
  /** Spans emitted past the budget. */
  cut = 0;
  private readonly budget: number;
  readonly referenced: string[] = [];
  readonly notes = new Notes();
  /** Embedded subagents some reference resolved to (the rest are expanded as unreferenced). */
  readonly usedEmbedded = new Set<unknown>();
  private rootText: string | null | undefined;

  constructor(
    readonly ctx: TrajectoryContext,
    readonly root: Json,
    /** Whether the context named the root document's path (else cycles back to it are found by content). */
    readonly rootKnown: boolean,
  ) {
    const max = ctx.maxSpans;
    this.budget = typeof max === 'number' && Number.isInteger(max) && max >= 0 ? max : Infinity;
  }

  /** Emits a span: kept while under the budget (spans come parent first, so what is kept is a whole tree). */
  emit(span: PlannedSpan): void {
    this.kinds.set(span.kind, (this.kinds.get(span.kind) ?? 0) + 1);
    if (this.spans.length < this.budget) this.spans.push(span);
    else this.cut++;
  }

  addReferenced(file: string): void {
    if (!this.referenced.includes(file)) this.referenced.push(file);
  }

  /** Whether `doc` is the root document read again (only asked when the root's path is unknown). */
  isRootAgain(doc: unknown): boolean {
    if (this.rootText === undefined) this.rootText = stringify(this.root);
    return this.rootText !== null && stringify(doc) === this.rootText;
  }
}

/** One trajectory document being expanded. */
interface Frame {
  doc: Json;
  /** Trial-relative path, when the document is a file we know the path of. */
  file: string | null;
  /** Directory its file references are relative to. */
  dir: string;
  /** How warnings name it. */
  label: string;
  /** Subagent nesting level (continuations keep their predecessor's). */
  depth: number;
  /** The documents above it, for the cycle guard. */
  lineage: { files: ReadonlySet<string>; docs: readonly unknown[] };
  /** `subagent_trajectories` arrays an embedded reference may resolve against, nearest first. */
  embedded: readonly unknown[][];
}

interface Expanded extends DocumentTotals {
  range: TimeRange;
  copied: number;
}

// ---- trajectories, continuations, subagents

/**
 * Expands a document and the continuation files it chains to. Turns go under `parentPath`
 * (null: the rollout span); each continuation gets a `trajectory` span beside them.
 */
function expandChain(run: Run, frame: Frame, parentPath: string | null, fallback: TimeRange | null): { range: TimeRange; totals: Totals } {
  const first = expandSegment(run, frame, parentPath, fallback);
  const ranges = [first.range];
  let totals = first.totals;
  let current = frame;
  for (let k = 1; ; k++) {
    const ref = continuationRef(run, current);
    if (ref === null) break;
    const contPath = child(parentPath, `cont:${k}`);
    const span = newSpan(contPath, parentPath, 'trajectory', `continuation #${k}`, { role: 'continuation', index: k, ref: clip(ref, LIMITS.key) });
    run.emit(span);
    if (k > LIMITS.chain) {
      span.attributes.truncated = true;
      run.notes.add(`chain:${current.label}`, `${current.label}: more than ${LIMITS.chain} continuation files; stopped following`);
      break;
    }
    const resolved = resolveFile(run, current, ref, current.depth);
    if ('problem' in resolved) {
      markUnresolved(run, span, resolved, `${current.label}: continued_trajectory_ref ${JSON.stringify(ref)}`);
      break;
    }
    const last = coverRange(ranges).end;
    describeTrajectory(span, resolved.frame);
    const next = expandSegment(run, resolved.frame, contPath, { start: last, end: last });
    setRange(span, next.range);
    span.attributes.copied_context_turns = next.copied;
    totals = chainTotals(run.notes, totals, next, contPath);
    ranges.push(next.range);
    current = resolved.frame;
  }
  return { range: coverRange(ranges), totals };
}

/** Expands one document's steps under `parentPath`; its own totals, time range and copied-step count. */
function expandSegment(run: Run, frame: Frame, parentPath: string | null, fallback: TimeRange | null): Expanded {
  const steps = orderedSteps(run, frame);
  const times = fillTimes(steps.map((s) => readTime(run, frame, s.step)), fallback);
  if (times.clamped > 0) {
    run.notes.add(`clamped:${frame.label}`, `${frame.label}: ${times.clamped} step timestamp(s) earlier than the step before; clamped to keep step order`);
  }
  const stepSums = emptyTotals();
  const subSums = emptyTotals();
  const ranges: TimeRange[] = [];
  let copied = 0;
  steps.forEach((s, i) => {
    const range = { start: times.start[i], end: times.end[i] };
    ranges.push(range);
    const turn = expandTurn(run.notes, frame, s, child(parentPath, s.key), parentPath, range, times.estimated[i]);
    for (const span of turn.spans) run.emit(span);
    if (turn.copied) copied += 1;
    else addTotals(stepSums, turn.metrics);
    for (const t of expandReferences(run, frame, turn, range)) addTotals(subSums, t);
  });
  const levelKeys = new Keys();
  for (const sub of unreferencedEmbedded(run, frame)) {
    run.notes.add(`unref:${frame.label}`, `${frame.label}: embedded subagent trajectory not referenced by any step; expanded at the trajectory level`);
    const t = expandSubagent(run, frame, { trajectory: sub }, parentPath, levelKeys, coverRange(ranges), { unreferenced: true });
    if (t !== null) addTotals(subSums, t.totals);
  }
  const own = documentTotals(run.notes, frame, stepSums, subSums);
  return { range: coverRange(ranges), totals: own.totals, final: own.final, copied };
}

/**
 * A subagent reference, expanded as a `trajectory` span under `parentPath` with the
 * subagent's turns below it. An unresolvable one keeps its span, marked `unresolved`.
 */
function expandSubagent(
  run: Run,
  frame: Frame,
  ref: unknown,
  parentPath: string | null,
  keys: Keys,
  parentRange: TimeRange,
  extraAttrs: Json = {},
): { totals: Totals } | null {
  if (!isObject(ref)) {
    run.notes.add(`badref:${frame.label}`, `${frame.label}: a subagent_trajectory_ref entry is not an object; ignored`);
    return null;
  }
  const inline = isObject(ref.trajectory) ? ref.trajectory : null;
  const tid = str(ref.trajectory_id) ?? (inline === null ? null : str(inline.trajectory_id));
  const tpath = str(ref.trajectory_path);
  const sid = str(ref.session_id);
  const key = keys.take(`sub:${escapeKey(tid ?? tpath ?? sid ?? 'ref')}`);
  const subPath = child(parentPath, key);
  const attrs: Json = { role: 'subagent', ...extraAttrs };
  putDefined(attrs, 'trajectory_id', tid === null ? undefined : clip(tid, LIMITS.key));
  putDefined(attrs, 'trajectory_path', tpath === null ? undefined : clip(tpath, LIMITS.key));
  putDefined(attrs, 'session_id', sid === null ? undefined : clip(sid, LIMITS.key));
  if (ref.extra !== undefined && ref.extra !== null) attrs.ref_extra = jsonSafe(run.notes, ref.extra, `${frame.label} subagent ref extra`);
  const span = newSpan(subPath, parentPath, 'trajectory', `subagent ${tid ?? tpath ?? sid ?? key}`, attrs);
  run.emit(span);
  if (frame.depth + 1 > LIMITS.nesting) {
    span.attributes.truncated = true;
    run.notes.add(`deep:${frame.label}`, `${frame.label}: subagent trajectories nested deeper than ${LIMITS.nesting}; not expanded`);
    setRange(span, parentRange, true);
    return null;
  }
  const resolved = resolveSubagent(run, frame, ref, inline, tid, tpath);
  if ('problem' in resolved) {
    markUnresolved(run, span, resolved, `${frame.label}: subagent trajectory ${JSON.stringify(tid ?? tpath ?? sid ?? '?')}`);
    setRange(span, parentRange, true);
    return null;
  }
  describeTrajectory(span, resolved.frame);
  const result = expandChain(run, resolved.frame, subPath, parentRange);
  setRange(span, result.range.start === null ? parentRange : result.range, result.range.start === null);
  return { totals: result.totals };
}

/** The subagent trajectories a turn's results reference, each expanded under its call (or the turn); their totals. */
function expandReferences(run: Run, frame: Frame, turn: TurnOutcome, range: TimeRange): Totals[] {
  const subTotals: Totals[] = [];
  const keysByParent = new Map<string, Keys>();
  for (const { refs: list, parent } of turn.refs) {
    const keys = keysByParent.get(parent) ?? new Keys();
    keysByParent.set(parent, keys);
    const entries = Array.isArray(list) ? list : [list];
    if (!Array.isArray(list)) run.notes.add(`refnotarray:${frame.label}`, `${turn.where}: subagent_trajectory_ref is not an array; read as one ref`);
    for (const ref of entries) {
      const t = expandSubagent(run, frame, ref, parent, keys, range);
      if (t !== null) subTotals.push(t.totals);
    }
  }
  return subTotals;
}

type Resolved = { frame: Frame } | { problem: string; cycle?: boolean };

/** Finds a subagent document: inline, embedded by trajectory_id, or a file by trajectory_path. */
function resolveSubagent(run: Run, frame: Frame, ref: Json, inline: Json | null, tid: string | null, tpath: string | null): Resolved {
  if (inline !== null) return embeddedFrame(run, frame, inline, `${frame.label}#${tid ?? 'inline'}`);
  if (tid !== null) {
    const found = findEmbedded(frame, tid);
    if (found !== null) return embeddedFrame(run, frame, found, `${frame.label}#${tid}`);
  }
  if (tpath !== null) return resolveFile(run, frame, tpath, frame.depth + 1);
  if (tid !== null) return { problem: `no embedded trajectory has trajectory_id ${JSON.stringify(tid)}` };
  if (str(ref.session_id) !== null) return { problem: 'the ref has only a session_id, which ATIF does not resolve by' };
  return { problem: 'the ref has neither trajectory_id nor trajectory_path' };
}

function embeddedFrame(run: Run, frame: Frame, doc: Json, label: string): Resolved {
  run.usedEmbedded.add(doc);
  if (frame.lineage.docs.includes(doc)) return { problem: 'it refers back to a trajectory above it', cycle: true };
  return {
    frame: {
      doc,
      file: null,
      dir: frame.dir,
      label,
      depth: frame.depth + 1,
      lineage: { files: frame.lineage.files, docs: [...frame.lineage.docs, doc] },
      embedded: embeddedScope(doc, frame.embedded),
    },
  };
}

/** Loads a referenced file through the context, refusing cycles. */
function resolveFile(run: Run, frame: Frame, ref: string, depth: number): Resolved {
  let loaded: { doc: unknown; path: string } | undefined;
  try {
    loaded = run.ctx.load(ref, frame.dir);
  } catch (error) {
    return { problem: `loading it threw (${errorText(error)})` };
  }
  if (!isObject(loaded) || typeof loaded.path !== 'string') return { problem: 'the file is missing, unreadable, not JSON or refused' };
  const file = loaded.path;
  const cycle = frame.lineage.files.has(file) || frame.lineage.docs.includes(loaded.doc) || (!run.rootKnown && run.isRootAgain(loaded.doc));
  if (cycle) return { problem: `it refers back to ${file}, a trajectory above it`, cycle: true };
  run.addReferenced(file);
  if (!isObject(loaded.doc)) return { problem: `${file} is not a JSON object` };
  if (atifVersion(loaded.doc) === null) {
    run.notes.add(`notatif:${file}`, `${file}: no ATIF schema_version; read as ATIF anyway`);
  }
  return {
    frame: {
      doc: loaded.doc,
      file,
      dir: path.posix.dirname(file),
      label: file,
      depth,
      lineage: { files: new Set([...frame.lineage.files, file]), docs: [...frame.lineage.docs, loaded.doc] },
      embedded: embeddedScope(loaded.doc, depth === frame.depth ? frame.embedded : []),
    },
  };
}

function markUnresolved(run: Run, span: PlannedSpan, resolved: { problem: string; cycle?: boolean }, what: string): void {
  span.attributes.unresolved = true;
  if (resolved.cycle === true) span.attributes.cycle = true;
  span.attributes.unresolved_reason = resolved.problem;
  run.notes.add(`unresolved:${span.path}`, `${what} not expanded: ${resolved.problem}`);
}

/** Identity of a resolved trajectory on its span. */
function describeTrajectory(span: PlannedSpan, frame: Frame): void {
  const { doc } = frame;
  const a = span.attributes;
  putDefined(a, 'format', str(doc.schema_version) ?? undefined);
  if (frame.file !== null) a.file = frame.file;
  else a.embedded = true;
  if (a.session_id === undefined) putDefined(a, 'session_id', str(doc.session_id) ?? undefined);
  if (a.trajectory_id === undefined) putDefined(a, 'trajectory_id', str(doc.trajectory_id) ?? undefined);
  const agent = isObject(doc.agent) ? doc.agent : {};
  putDefined(a, 'agent', str(agent.name) ?? undefined);
  putDefined(a, 'model_name', str(agent.model_name) ?? undefined);
  a.steps = Array.isArray(doc.steps) ? doc.steps.length : 0;
  if (a.role === 'subagent' && str(agent.name) !== null) span.name = `subagent ${agent.name as string}`;
}

/** The continuation reference of a document (a string in the spec; `{trajectory_path}` tolerated). */
function continuationRef(run: Run, frame: Frame): string | null {
  const ref = frame.doc.continued_trajectory_ref;
  if (ref === undefined || ref === null) return null;
  const text = typeof ref === 'string' ? ref : isObject(ref) ? str(ref.trajectory_path) ?? str(ref.path) : null;
  if (text === null || text === '') {
    run.notes.add(`badcont:${frame.label}`, `${frame.label}: continued_trajectory_ref is not a path; ignored`);
    return null;
  }
  return text;
}

function embeddedScope(doc: Json, outer: readonly unknown[][]): unknown[][] {
  return Array.isArray(doc.subagent_trajectories) ? [doc.subagent_trajectories, ...outer] : [...outer];
}

function findEmbedded(frame: Frame, tid: string): Json | null {
  for (const list of frame.embedded) {
    const hit = list.find((t) => isObject(t) && t.trajectory_id === tid);
    if (hit !== undefined) return hit as Json;
  }
  return null;
}

/** Embedded subagents of this document that no reference resolved to (so far). */
function unreferencedEmbedded(run: Run, frame: Frame): Json[] {
  const list = frame.doc.subagent_trajectories;
  if (list === undefined) return [];
  if (!Array.isArray(list)) {
    run.notes.add(`badsubs:${frame.label}`, `${frame.label}: subagent_trajectories is not an array; ignored`);
    return [];
  }
  return list.filter((t): t is Json => isObject(t) && !run.usedEmbedded.has(t));
}

// ---- steps

/** Steps in step_id order; array order (and a warning) when ids are missing or repeated. */
function orderedSteps(run: Run, frame: Frame): OrderedStep[] {
  const steps = frame.doc.steps;
  if (!Array.isArray(steps)) {
    run.notes.add(`nosteps:${frame.label}`, `${frame.label}: no steps array; no turns`);
    return [];
  }
  const entries: { step: Json; index: number; id: number | null }[] = [];
  steps.forEach((step: unknown, index: number) => {
    if (isObject(step)) entries.push({ step, index, id: stepId(step.step_id) });
    else run.notes.add(`badstep:${frame.label}`, `${frame.label}: steps[${index}] is not an object; skipped`);
  });
  const ids = entries.map((e) => e.id);
  const usable = ids.every((id) => id !== null) && new Set(ids).size === ids.length;
  if (!usable) {
    run.notes.add(`ids:${frame.label}`, `${frame.label}: step_id missing, not an integer or repeated; turns follow array order`);
    return entries.map((e) => ({ step: e.step, key: `turn:${e.index + 1}`, shown: shownId(e.step.step_id, e.index + 1) }));
  }
  const sorted = [...entries].sort((a, b) => (a.id as number) - (b.id as number));
  if (sorted.some((e, i) => e !== entries[i])) {
    run.notes.add(`order:${frame.label}`, `${frame.label}: steps are not in step_id order; turns follow step_id`);
  }
  return sorted.map((e) => ({ step: e.step, key: `turn:${e.id as number}`, shown: String(e.id) }));
}

function stepId(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
}

function shownId(value: unknown, position: number): string {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'string' ? clip(value, 40) : `@${position}`;
}

function readTime(run: Run, frame: Frame, step: Json): number | null {
  const parsed = parseTimestamp(step.timestamp);
  if (parsed.naive) run.notes.add('naive', `timestamps without a time zone (e.g. ${JSON.stringify(step.timestamp)} in ${frame.label}) read as UTC`);
  if (parsed.numeric) run.notes.add('numeric-time', `numeric timestamps (e.g. ${String(step.timestamp)} in ${frame.label}) read as Unix time`);
  if (parsed.bad) run.notes.add(`badtime:${frame.label}`, `${frame.label}: unreadable timestamp ${preview(step.timestamp)}; the turn's time is estimated`);
  return parsed.t;
}

function errorText(error: unknown): string {
  try {
    return clip(error instanceof Error ? error.message : String(error), 200);
  } catch {
    return 'unprintable';
  }
}
