/**
 * The checks of one `logEvent` call, without throwing: the parts of the event line, or why
 * the call is refused (the recorder turns a refusal into a `bad_record` event). Nothing is
 * coerced silently: a kind that is not a string, a message that is not one, a bad step, an
 * unknown option, data that cannot be serialised or is too large all refuse the call.
 */
import { MAX_EVENT_DATA_CHARS, MAX_EVENT_KIND_CHARS, MAX_EVENT_MESSAGE_CHARS } from './limits.js';
import { describeThrown } from './describe-value.js';

/** The options of `recorder.logEvent(kind, options)`. */
export interface EventOptions {
  step?: number | null;
  message?: string;
  data?: Record<string, unknown>;
}

/** The keys of `EventOptions`. */
const OPTION_KEYS = new Set(['step', 'message', 'data']);

/** What the ambient span or unit adds to an event logged inside it. */
export interface EventAmbient {
  step: number | null;
  spanId: string | null;
  labels: Record<string, string> | null;
}

export interface EventParts {
  kind: string;
  step: number | null;
  message: string;
  /** The serialised data object. */
  dataJson: string;
}

export interface EventRefusal {
  field: string;
  reason: string;
  value: unknown;
  /** The call's step when it gave a usable one (for the bad_record event). */
  step: number | null;
}

export type EventCall = { ok: true; parts: EventParts } | { ok: false; refusal: EventRefusal };

function refuse(field: string, reason: string, value: unknown, step: number | null = null): EventCall {
  return { ok: false, refusal: { field, reason, value, step } };
}

function isStep(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Thrown by the replacer once the data is over budget: stops the walk early. */
class OverBudget {}

/**
 * JSON of `data` within `maxChars`, bigints as decimal strings. The walk stops as soon as a
 * lower bound of the length passes the budget (each value visited counts at least one
 * character), so a huge object costs no more than one at the limit.
 */
export function boundedJson(data: unknown, maxChars: number): { ok: true; json: string } | { ok: false; reason: string } {
  let budget = maxChars;
  const replacer = (key: string, v: unknown): unknown => {
    if (typeof v === 'bigint') v = v.toString();
    // a lower bound of what this entry adds (the exact length decides below)
    budget -= key.length + (typeof v === 'string' ? v.length : 1);
    if (budget < 0) throw new OverBudget();
    return v;
  };
  let json: string | undefined;
  try {
    json = JSON.stringify(data, replacer);
  } catch (error) {
    if (error instanceof OverBudget) return { ok: false, reason: `larger than the limit of ${maxChars} characters of JSON` };
    return { ok: false, reason: `not JSON-serialisable: ${describeThrown(error)}` };
  }
  // the estimate does not count escapes: the exact length decides
  if (json !== undefined && json.length > maxChars) return { ok: false, reason: `${json.length} characters of JSON, over the limit of ${maxChars}` };
  return { ok: true, json: json ?? 'null' };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * An event's `data` as the object written: a plain object as it is, nothing as `{}`, and
 * any other value (a number, a string, an array, null, a Date…) kept whole under `value`,
 * never dropped. The same inside a span or unit and outside: the ambient `span_id` and
 * `labels` are added to this object afterwards.
 */
export function eventDataObject(given: unknown): Record<string, unknown> {
  return given === undefined ? {} : isPlainObject(given) ? given : { value: given };
}

/**
 * Validates a call. `ambient` (inside a span or unit) supplies the step when the call
 * gives none, and `span_id` / `labels` in data when the data has none of its own.
 */
export function resolveEventCall(kind: unknown, options: unknown, ambient: EventAmbient | null): EventCall {
  try {
    return resolve(kind, options, ambient);
  } catch (error) {
    // a Proxy trap the checks did not expect (getPrototypeOf, isArray on a revoked one)
    return refuse('options', `reading the call threw: ${describeThrown(error)}`, undefined);
  }
}

function resolve(kind: unknown, options: unknown, ambient: EventAmbient | null): EventCall {
  if (typeof kind !== 'string' || kind.length === 0) return refuse('kind', 'expected a non-empty string', kind);
  if (kind.length > MAX_EVENT_KIND_CHARS) return refuse('kind', `longer than the limit of ${MAX_EVENT_KIND_CHARS} characters`, kind);
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    return refuse('options', 'expected an object { step, message, data } or nothing', options);
  }
  let step: unknown;
  let message: unknown;
  let given: unknown;
  let hasStep: boolean;
  try {
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) return refuse(`options.${key}`, 'unknown option (expected step, message, data)', (options as Record<string, unknown>)[key]);
    }
    ({ step, message, data: given } = options as { step?: unknown; message?: unknown; data?: unknown });
    hasStep = step !== undefined;
  } catch (error) {
    return refuse('options', `reading the options threw: ${describeThrown(error)}`, undefined);
  }
  if (hasStep && step !== null && !isStep(step)) return refuse('options.step', 'expected a non-negative integer or null', step);
  const callStep = hasStep ? (step as number | null) : (ambient?.step ?? null);
  if (message !== undefined && typeof message !== 'string') return refuse('options.message', 'expected a string', message, callStep);
  const text = message ?? '';
  if (text.length > MAX_EVENT_MESSAGE_CHARS) return refuse('options.message', `longer than the limit of ${MAX_EVENT_MESSAGE_CHARS} characters`, text, callStep);

  let data: unknown;
  try {
    data = eventDataObject(given);
    if (ambient !== null && (ambient.spanId !== null || ambient.labels !== null)) {
      const withContext: Record<string, unknown> = { ...(data as Record<string, unknown>) };
      if (ambient.spanId !== null && withContext.span_id === undefined) withContext.span_id = ambient.spanId;
      if (ambient.labels !== null && withContext.labels === undefined) withContext.labels = ambient.labels;
      data = withContext;
    }
  } catch (error) {
    return refuse('options.data', `reading the data threw: ${describeThrown(error)}`, undefined, callStep);
  }
  const json = boundedJson(data, MAX_EVENT_DATA_CHARS);
  if (!json.ok) return refuse('options.data', json.reason, given, callStep);
  // a toJSON of the data itself may turn it into something that is not an object
  if (!json.json.startsWith('{')) return refuse('options.data', `serialises to ${json.json.slice(0, 40)}, not a JSON object (a toJSON method?)`, given, callStep);
  return { ok: true, parts: { kind, step: callStep, message: text, dataJson: json.json } };
}
