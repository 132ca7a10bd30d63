/**
 * Agent trajectories as planned spans. A trial's agent writes its history as a document
 * (ATIF for Harbor agents); capture expands that document into a flat list of spans under
 * the trial's rollout span. The contract between the two sides is in contract.ts; this
 * module holds the registry of document parsers: the built-in ATIF parser plus any the
 * user registers.
 *
 * A plan is a pure function of the document and the files it references: parsing the same
 * files twice gives a deep-equal plan, because capture derives span ids from the paths.
 */
import { parseAtif } from './atif.js';
import type { PlannedSpan, TrajectoryContext, TrajectoryParser, TrajectoryPlan } from './contract.js';

export type { PlannedSpan, TrajectoryContext, TrajectoryParser, TrajectoryPlan } from './contract.js';

/** The result of detection: the first plan a parser produced, and what went wrong on the way. */
export interface PlanResult {
  plan: TrajectoryPlan | null;
  /** Registered name of the parser that produced `plan` (`atif` for the built-in). */
  parser: string | null;
  /** One line per parser that threw or returned a malformed plan; those parsers were skipped.
   *  Kept apart from `plan.warnings` so that a plan depends only on the document, not on
   *  which other parsers happen to be registered. */
  errors: string[];
}

const NAME = /^[A-Za-z0-9._-]+$/;

/** Built-in parsers, tried after every user-registered one. */
const BUILT_IN: readonly { name: string; parser: TrajectoryParser }[] = [{ name: 'atif', parser: parseAtif }];

/** User parsers in registration order (detection walks it from the end: most recent first). */
const registered: { name: string; parser: TrajectoryParser }[] = [];

/** Registers (or replaces) a parser; a user parser named like a built-in shadows it. */
export function registerTrajectoryParser(name: string, parser: TrajectoryParser): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`trajectory parser name must be a non-empty string of letters, digits, '.', '_' or '-'; got ${describe(name)}`);
  }
  if (typeof parser !== 'function') {
    throw new TypeError(`trajectory parser "${name}" must be a function; got ${describe(parser)}`);
  }
  unregisterTrajectoryParser(name);
  registered.push({ name, parser });
}

/** Removes a user-registered parser (built-ins stay); true when one was removed. */
export function unregisterTrajectoryParser(name: string): boolean {
  const i = registered.findIndex((r) => r.name === name);
  if (i < 0) return false;
  registered.splice(i, 1);
  return true;
}

export function trajectoryParser(name: string): TrajectoryParser | undefined {
  return (registered.find((r) => r.name === name) ?? BUILT_IN.find((b) => b.name === name))?.parser;
}

/** Parsers in detection order: user-registered, most recent first, then unshadowed built-ins. */
function candidates(): { name: string; parser: TrajectoryParser }[] {
  const user = [...registered].reverse();
  return [...user, ...BUILT_IN.filter((b) => !registered.some((r) => r.name === b.name))];
}

/**
 * Tries registered parsers (user-registered first, most recent first, then built-in ATIF)
 * and returns the first plan. A parser that throws, or returns something that is not a
 * well-formed plan (duplicate paths, a parent after its child, a non-finite time...), is
 * skipped and reported in `errors`; non-finite numbers in an otherwise good plan are
 * replaced by null and noted in its warnings.
 */
export function planTrajectory(doc: unknown, ctx: TrajectoryContext): PlanResult {
  const errors: string[] = [];
  for (const { name, parser } of candidates()) {
    let out: unknown;
    try {
      out = parser(doc, ctx);
    } catch (error) {
      errors.push(`trajectory parser "${name}" threw: ${describeThrown(error)}`);
      continue;
    }
    if (out === null || out === undefined) continue;
    const checked = checkPlan(out);
    if (typeof checked === 'string') {
      errors.push(`trajectory parser "${name}" returned a malformed plan: ${checked}`);
      continue;
    }
    return { plan: checked, parser: name, errors };
  }
  return { plan: null, parser: null, errors };
}

// ---- plan validation: whatever a parser returns becomes a well-formed copy, or a reason

class PlanError extends Error {}

/** A checked, JSON-safe copy of `value`, or why it is not a plan. */
export function checkPlan(value: unknown): TrajectoryPlan | string {
  try {
    return copyPlan(value);
  } catch (error) {
    if (error instanceof PlanError) return error.message;
    return `unreadable plan: ${describeThrown(error)}`;
  }
}

function copyPlan(value: unknown): TrajectoryPlan {
  if (!isRecord(value)) throw new PlanError(`not an object (${describe(value)})`);
  if (typeof value.format !== 'string' || value.format === '') throw new PlanError('format must be a non-empty string');
  if (!Array.isArray(value.spans)) throw new PlanError('spans must be an array');
  const warnings = stringList(value.warnings, 'warnings');
  const seen = new Set<string>();
  const spans = value.spans.map((s: unknown, i: number) => copySpan(s, i, seen, warnings));
  const referencedFiles = stringList(value.referencedFiles, 'referencedFiles');
  const cut = value.spansCut;
  if (cut !== undefined && !(typeof cut === 'number' && Number.isSafeInteger(cut) && cut >= 0)) throw new PlanError(`spansCut must be a count (got ${describe(cut)})`);
  return { format: value.format, spans, ...(cut ? { spansCut: cut } : {}), referencedFiles, warnings, summary: copySummary(value.summary, spans, warnings) };
}

function copySpan(value: unknown, i: number, seen: Set<string>, warnings: string[]): PlannedSpan {
  if (!isRecord(value)) throw new PlanError(`spans[${i}] is not an object`);
  const { path, parentPath, kind, name, status, error, attributes } = value;
  if (typeof path !== 'string' || path === '') throw new PlanError(`spans[${i}].path must be a non-empty string`);
  if (seen.has(path)) throw new PlanError(`duplicate span path ${JSON.stringify(path)}`);
  const parent = parentPath ?? null;
  if (parent !== null && (typeof parent !== 'string' || !seen.has(parent))) {
    throw new PlanError(`span ${JSON.stringify(path)}: parentPath ${describe(parent)} is not the path of an earlier span`);
  }
  if (typeof kind !== 'string' || kind === '') throw new PlanError(`span ${JSON.stringify(path)}: kind must be a non-empty string`);
  if (typeof name !== 'string') throw new PlanError(`span ${JSON.stringify(path)}: name must be a string`);
  if (status !== 'ok' && status !== 'error') throw new PlanError(`span ${JSON.stringify(path)}: status must be 'ok' or 'error'`);
  if (error !== null && error !== undefined && typeof error !== 'string') throw new PlanError(`span ${JSON.stringify(path)}: error must be a string or null`);
  if (attributes !== undefined && !isRecord(attributes)) throw new PlanError(`span ${JSON.stringify(path)}: attributes must be an object`);
  seen.add(path);
  const where = `span ${JSON.stringify(path)}`;
  return {
    path,
    parentPath: parent,
    kind,
    name,
    start: finiteOrNull(value.start, `${where}.start`, warnings),
    end: finiteOrNull(value.end, `${where}.end`, warnings),
    status,
    error: typeof error === 'string' ? error : null,
    attributes: (attributes === undefined ? {} : jsonCopy(attributes, `${where}.attributes`, warnings, [])) as Record<string, unknown>,
  };
}

const SUMMARY_NUMBERS = ['promptTokens', 'completionTokens', 'cachedTokens', 'costUsd'] as const;
const SUMMARY_STRINGS = ['agent', 'model', 'sessionId'] as const;

/** The parser's summary with counts recomputed when absent and bad values nulled. */
function copySummary(value: unknown, spans: PlannedSpan[], warnings: string[]): TrajectoryPlan['summary'] {
  const s = isRecord(value) ? value : {};
  if (!isRecord(value)) warnings.push('plan had no summary; counts computed from its spans');
  const count = (kind: string, given: unknown): number =>
    typeof given === 'number' && Number.isInteger(given) && given >= 0 ? given : spans.filter((x) => x.kind === kind).length;
  const out: TrajectoryPlan['summary'] = {
    turns: count('turn', s.turns),
    toolCalls: count('tool_call', s.toolCalls),
    subtrajectories: count('trajectory', s.subtrajectories),
    promptTokens: null,
    completionTokens: null,
    cachedTokens: null,
    costUsd: null,
    agent: null,
    model: null,
    sessionId: null,
  };
  for (const k of SUMMARY_NUMBERS) out[k] = finiteOrNull(s[k], `summary.${k}`, warnings);
  for (const k of SUMMARY_STRINGS) out[k] = typeof s[k] === 'string' ? s[k] : null;
  return out;
}

function stringList(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new PlanError(`${field} must be an array of strings`);
  return [...value];
}

function finiteOrNull(value: unknown, where: string, warnings: string[]): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'number') {
    warnings.push(`${where}: non-finite number ${value} replaced with null`);
    return null;
  }
  throw new PlanError(`${where} must be a finite number or null (got ${describe(value)})`);
}

/** A JSON-safe deep copy: non-finite numbers become null (noted), undefined and functions drop. */
function jsonCopy(value: unknown, where: string, warnings: string[], stack: object[]): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (Number.isFinite(value)) return value;
      warnings.push(`${where}: non-finite number ${value} replaced with null`);
      return null;
    case 'bigint':
      return value.toString();
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (stack.includes(value)) throw new PlanError(`${where} is circular`);
  if (stack.length > 64) throw new PlanError(`${where} is nested more than 64 levels deep`);
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return jsonCopy(toJSON.call(value), where, warnings, [...stack, value]);
  const inner = [...stack, value];
  if (Array.isArray(value)) return value.map((v, i) => jsonCopy(v, `${where}[${i}]`, warnings, inner) ?? null);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const copied = jsonCopy(v, `${where}.${k}`, warnings, inner);
    // defineProperty: a key named __proto__ must stay a key, not become the prototype
    if (copied !== undefined) Object.defineProperty(out, k, { value: copied, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A short, never-throwing description of a value for an error message. */
function describe(value: unknown): string {
  try {
    if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
    if (value === null || typeof value !== 'object') return typeof value === 'function' ? 'a function' : String(value);
    return Array.isArray(value) ? `an array of length ${value.length}` : 'an object';
  } catch {
    return '<unprintable>';
  }
}

function describeThrown(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : describe(error);
    return text.length > 500 ? `${text.slice(0, 500)}…` : text;
  } catch {
    return '<unprintable thrown value>';
  }
}
