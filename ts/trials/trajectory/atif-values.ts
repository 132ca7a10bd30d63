/**
 * Reading ATIF values without trusting them. A trajectory can be megabytes, hold NaN, quoted
 * numbers, unknown keys or a `__proto__` key, so every value that reaches a span attribute
 * passes through here and comes out bounded (see LIMITS) and JSON-safe, and every leniency
 * is written to a `Notes` rather than thrown. Nothing here knows about spans or documents.
 */

export type Json = Record<string, unknown>;

/** Sizes of what attributes keep: previews, not copies (a trajectory can be megabytes). */
export const LIMITS = {
  text: 2000, // message, reasoning and result previews
  arguments: 4000, // tool-call arguments as JSON text
  value: 1000, // strings inside extra objects
  items: 50, // array items kept inside extra objects
  keys: 50, // object keys kept inside extra objects
  depth: 6, // nesting kept inside extra objects
  observations: 50, // unmatched observation results kept on a turn
  nesting: 8, // subagent trajectories inside subagent trajectories
  chain: 64, // continuation files followed from one document
  key: 200, // characters of an id or file name used in a span path
} as const;

/** Warnings, aggregated: one line per kind of leniency, with a count when it repeats. */
export class Notes {
  private readonly order: { text: string; count: number }[] = [];
  private readonly byKey = new Map<string, { text: string; count: number }>();

  add(key: string, text: string): void {
    const seen = this.byKey.get(key);
    if (seen !== undefined) {
      seen.count += 1;
      return;
    }
    const entry = { text, count: 1 };
    this.byKey.set(key, entry);
    this.order.push(entry);
  }

  list(): string[] {
    return this.order.map((e) => (e.count > 1 ? `${e.text} (and ${e.count - 1} more like it)` : e.text));
  }
}

// ---- content, numbers, extra

export interface Content {
  text: string | null;
  /** Part descriptions when the content was an array of parts (never inline data). */
  parts: Json[] | null;
}

/** A message or result: a string, or (v1.6+) an array of text/image/audio/other parts. */
export function readContent(notes: Notes, value: unknown, where: string): Content {
  if (value === undefined || value === null) return { text: null, parts: null };
  if (typeof value === 'string') return { text: value, parts: null };
  if (!Array.isArray(value)) {
    notes.add('contenttype', `${where} is neither a string nor an array of content parts; kept as JSON text`);
    return { text: stringify(jsonSafe(notes, value, where)), parts: null };
  }
  const texts: string[] = [];
  const parts = value.slice(0, LIMITS.items).map((p: unknown) => {
    const { info, text } = describePart(notes, p, where);
    if (text !== null) texts.push(text);
    return info;
  });
  if (value.length > LIMITS.items) parts.push({ type: 'omitted', count: value.length - LIMITS.items });
  return { text: texts.length > 0 ? texts.join('\n') : null, parts };
}

/** One content part: its type and, for media, where it lives — the data itself is dropped. */
function describePart(notes: Notes, part: unknown, where: string): { info: Json; text: string | null } {
  if (typeof part === 'string') return { info: { type: 'text', chars: part.length }, text: part };
  if (!isObject(part)) return { info: { type: 'invalid' }, text: null };
  const type = str(part.type);
  const info: Json = { type: type === null ? 'unknown' : clip(type, 40) };
  if (type !== null && !['text', 'image', 'audio'].includes(type)) notes.add(`parttype:${type}`, `${where}: content part type ${JSON.stringify(clip(type, 40))} is not one ATIF defines; described leniently`);
  const text = str(part.text);
  if (text !== null) info.chars = text.length;
  const source = isObject(part.source) ? part.source : part;
  const mediaType = str(source.media_type) ?? str(part.media_type);
  if (mediaType !== null) info.media_type = clip(mediaType, 100);
  const location = str(source.path) ?? str(source.url);
  if (location !== null) {
    if (/^data:/i.test(location)) info.inline_data_chars = location.length;
    else info.path = clip(location, LIMITS.key * 2);
  }
  if (typeof source.data === 'string') info.inline_data_chars = source.data.length;
  return { info, text };
}

/**
 * A number from the document: undefined when absent, null (noted) when present but not a
 * finite number. Numeric strings are read, since some producers quote their numbers.
 */
export function readNumber(notes: Notes, value: unknown, where: string): number | null | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value;
    notes.add('nonfinite', `non-finite number replaced with null (first at ${where})`);
    return null;
  }
  if (typeof value === 'string') {
    const n = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(value) ? Number(value) : NaN;
    if (Number.isFinite(n)) {
      notes.add('numstring', `numbers written as strings read as numbers (first at ${where})`);
      return n;
    }
    notes.add('nonfinite', `non-finite or non-numeric value ${preview(value)} replaced with null (first at ${where})`);
    return null;
  }
  notes.add(`notnumber:${where}`, `${where}: ${preview(value)} is not a number; replaced with null`);
  return null;
}

/**
 * The object's own `extra` plus any keys the schema does not define (kept, not lost: a newer
 * producer may add fields), as a bounded JSON-safe object; undefined when there is none.
 */
export function extraOf(notes: Notes, obj: Json, known: ReadonlySet<string>, kind: string, where: string): Json | undefined {
  const out: Json = {};
  const extra = obj.extra;
  if (isObject(extra)) {
    const copy = jsonSafe(notes, extra, `${where} ${kind} extra`) as Json;
    for (const k of Object.keys(copy)) put(out, k, copy[k]);
  } else if (extra !== undefined && extra !== null) {
    notes.add(`badextra:${kind}`, `${where}: ${kind} extra is not an object; kept as extra.value`);
    put(out, 'value', jsonSafe(notes, extra, `${where} ${kind} extra`));
  }
  for (const key of Object.keys(obj)) {
    if (known.has(key)) continue;
    notes.add(`unknownkey:${kind}:${key}`, `unknown ${kind} key ${JSON.stringify(clip(key, 80))} (first at ${where}) kept under extra`);
    put(out, Object.hasOwn(out, key) ? `unknown:${key}` : key, jsonSafe(notes, obj[key], `${where} ${kind}.${key}`));
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A bounded JSON-safe copy: strings clipped, arrays and objects capped, non-finite numbers nulled. */
export function jsonSafe(notes: Notes, value: unknown, where: string, depth = 0): unknown {
  try {
    switch (typeof value) {
      case 'string':
        return clip(value, LIMITS.value);
      case 'boolean':
        return value;
      case 'number':
        if (Number.isFinite(value)) return value;
        notes.add('nonfinite', `non-finite number replaced with null (first at ${where})`);
        return null;
      case 'bigint':
        return value.toString();
      case 'object':
        break;
      default:
        return null;
    }
    if (value === null) return null;
    if (depth >= LIMITS.depth) return Array.isArray(value) ? `[array of ${value.length}, nested too deep]` : '[object, nested too deep]';
    if (Array.isArray(value)) {
      const items = value.slice(0, LIMITS.items).map((v: unknown) => jsonSafe(notes, v, where, depth + 1));
      if (value.length > LIMITS.items) items.push(`… ${value.length - LIMITS.items} more items`);
      return items;
    }
    const out: Json = {};
    const keys = Object.keys(value);
    for (const k of keys.slice(0, LIMITS.keys)) put(out, k, jsonSafe(notes, (value as Json)[k], where, depth + 1));
    if (keys.length > LIMITS.keys) put(out, '…', `${keys.length - LIMITS.keys} more keys`);
    return out;
  } catch {
    return '<unreadable>';
  }
}

/** Tool-call arguments as JSON text (a string is kept as written), truncated. */
export function argumentsText(notes: Notes, value: unknown, where: string): string {
  if (typeof value === 'string') return clip(value, LIMITS.arguments);
  let nonFinite = false;
  let text: string | null = null;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) nonFinite = true;
      return typeof v === 'bigint' ? v.toString() : v;
    }) ?? null;
  } catch {
    text = stringify(jsonSafe(notes, value, where));
  }
  if (nonFinite) notes.add('nonfinite', `non-finite number replaced with null (first at ${where})`);
  return clip(text ?? 'null', LIMITS.arguments);
}

// ---- small helpers

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** Sets a key only when it has a value (absent stays absent, so plans stay small). */
export function putDefined(obj: Json, key: string, value: unknown): void {
  if (value !== undefined) obj[key] = value;
}

/** defineProperty: a document key named __proto__ must stay a key, not become the prototype. */
function put(obj: Json, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function stringify(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    return null;
  }
}

export function preview(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (stringify(value) ?? String(typeof value));
  return clip(text, 80);
}
