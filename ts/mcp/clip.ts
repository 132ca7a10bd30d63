/**
 * Cutting recorded values down to what an answer can hold, always with a marker that says
 * how much was left out: a text keeps its start and says `… [cut at N of M chars]`, a list
 * its first items and `… N more items`, an object its first keys and `…: N more keys`.
 * And JSON-safe numbers: NaN and ±Infinity, which JSON lacks, become the strings "NaN",
 * "Infinity" and "-Infinity" (as `probe samples --json` writes them).
 */

/** A recorded number as it goes into JSON. */
export type JsonNumber = number | 'NaN' | 'Infinity' | '-Infinity';

export function jsonNumber(x: number): JsonNumber {
  if (Number.isFinite(x)) return x;
  return Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity';
}

/** `jsonNumber`, and null for a missing value. */
export function jsonNumberOrNull(x: number | null | undefined): JsonNumber | null {
  return x === null || x === undefined ? null : jsonNumber(x);
}

/** The end of a cut that does not split a surrogate pair. */
function cutIndex(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return max > 0 && code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

/** `text` cut to its first `max` characters, with a marker saying so. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, cutIndex(text, max))}… [cut at ${max} of ${text.length} chars]`;
}

/** `text.slice(from, from + length)`, moved back a character rather than splitting a surrogate pair. */
export function textSlice(text: string, from: number, length: number): string {
  const end = Math.min(text.length, from + length);
  return text.slice(from, end < text.length ? cutIndex(text, end) : end);
}

export interface ClipLimits {
  /** Characters of a string. */
  text: number;
  /** Items of an array. */
  items: number;
  /** Keys of an object. */
  keys: number;
  /** Levels of nesting. */
  depth: number;
}

/** A copy of `value` within `limits`, numbers JSON-safe; `undefined` members dropped. */
export function clipJson(value: unknown, limits: ClipLimits, depth = 0): unknown {
  if (typeof value === 'number') return jsonNumber(value);
  if (typeof value === 'string') return cutText(value, limits.text);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value === undefined ? null : value;
  if (depth >= limits.depth) return `… (${Array.isArray(value) ? 'list' : 'object'} nested deeper than ${limits.depth} levels cut)`;
  if (Array.isArray(value)) {
    const out = value.slice(0, limits.items).map((v) => clipJson(v, limits, depth + 1));
    if (value.length > limits.items) out.push(`… ${value.length - limits.items} more items`);
    return out;
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries.slice(0, limits.keys)) out[cutText(k, limits.text)] = clipJson(v, limits, depth + 1);
  if (entries.length > limits.keys) out['…'] = `${entries.length - limits.keys} more keys`;
  return out;
}

/** Every number JSON-safe, nothing cut. */
export function jsonSafe(value: unknown): unknown {
  return clipJson(value, { text: Infinity, items: Infinity, keys: Infinity, depth: Infinity });
}

/** Ever stricter limits, tried in turn until a value fits. */
const LEVELS: ClipLimits[] = [
  { text: Infinity, items: Infinity, keys: Infinity, depth: Infinity },
  { text: 2000, items: 100, keys: 100, depth: 8 },
  { text: 500, items: 30, keys: 40, depth: 5 },
  { text: 200, items: 10, keys: 15, depth: 3 },
  { text: 80, items: 5, keys: 8, depth: 2 },
];

/**
 * `value` within `maxBytes` of JSON: whole when it fits, else clipped at the first level
 * that fits, else a marker naming its size. `clipped` says whether anything was cut.
 */
export function boundJson(value: unknown, maxBytes: number): { value: unknown; clipped: boolean } {
  for (const [i, limits] of LEVELS.entries()) {
    const v = clipJson(value, limits);
    if (Buffer.byteLength(JSON.stringify(v) ?? 'null') <= maxBytes) return { value: v, clipped: i > 0 };
  }
  const bytes = Buffer.byteLength(JSON.stringify(jsonSafe(value)) ?? 'null');
  return { value: `… (a value of ${bytes} bytes of JSON cut)`, clipped: true };
}
