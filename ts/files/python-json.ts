/**
 * JSON as Python writes it. `json.dumps` (HF Trainer's trainer_state.json, verl's file
 * logger) emits the bare tokens `NaN`, `Infinity` and `-Infinity` for non-finite floats;
 * JSON.parse refuses them, and a NaN is exactly what a diagnosis must not lose.
 */

/** A string literal (kept as is) or a non-finite token outside one. */
const TOKENS = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;
/** Stand-ins for the tokens: strings starting with NUL, which no metric log holds. */
const MARKS: Record<string, number> = { '\u0000NaN': NaN, '\u0000Infinity': Infinity, '\u0000-Infinity': -Infinity };

export function parsePythonJson(text: string): unknown {
  if (!text.includes('NaN') && !text.includes('Infinity')) return JSON.parse(text);
  const marked = text.replace(TOKENS, (m) => (m.startsWith('"') ? m : JSON.stringify(`\u0000${m}`)));
  return JSON.parse(marked, (_key, value: unknown) => (typeof value === 'string' && Object.hasOwn(MARKS, value) ? MARKS[value] : value));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
