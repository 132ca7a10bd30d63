/**
 * Compiles a record layout into a specialised encoder: one constant-name property load per
 * field, slot positions as constants, column ids from a constant array. V8 turns each load
 * into a monomorphic inline cache, which is what brings the validation and copy of a
 * 40-field record to ~50 ns (a generic `for…in` with keyed loads costs several times more).
 * The generated code is kept small (about 30 bytes of machine code per field): a step logged
 * after milliseconds of other work finds it out of the CPU caches, and pays for each line.
 *
 * A shape is exact: each key must be present, a number where the learned record had a
 * number and null/undefined where it had nothing. Scalars therefore sit at fixed
 * positions; lists, whose length varies, are written last. A compiled shape never decides
 * that a record is bad: on anything unexpected it returns -1 and the checked path in
 * step-encoder.ts takes over (and may learn the record as another shape). Keys are
 * embedded with JSON.stringify, so a key is always a string literal, never code.
 *
 * Compiling needs `new Function`, which `node --disallow-code-generation-from-strings` (and
 * a CSP-like embedder) forbids with an EvalError: `shapeCompilation()` asks once per
 * process, and without it the encoder keeps to its checked path.
 */

export type ShapeField =
  | { key: string; role: 'step' | 'timestamp' | 'absent' }
  | { key: string; role: 'f64' | 'i64' | 'list_f64'; id: number }
  /** Entries with a null id were null/undefined in the learned record. */
  | { key: string; role: 'dict'; entries: Array<{ key: string; id: number | null }> };

export interface CompiledShape {
  /**
   * Writes the record at `slots[offset…]` and returns its length in slots, or -1 (bail).
   * Never writes at or past `offset + limit`; the caller checks `fixedSlots <= limit`.
   * `offset` is a non-negative integer below 2^30 (anything else bails).
   */
  encode(record: object, slots: Float64Array, offset: number, limit: number): number;
  /** Slots the shape needs besides list items. */
  fixedSlots: number;
  /** The record's own enumerable keys, absent ones included (the shape check compares it first). */
  keyCount: number;
}

/** Compiled shapes kept per encoder: enough for runs that alternate a few record layouts. */
export const MAX_SHAPES = 32;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const lit = (s: string) => JSON.stringify(s);

export type ShapeCompilation = { available: true } | { available: false; error: string };

let compilation: ShapeCompilation | null = null;

/** Whether this process may compile shapes: tried once (a trivial `new Function`), then remembered. */
export function shapeCompilation(): ShapeCompilation {
  if (compilation === null) {
    try {
      new Function('return 0');
      compilation = { available: true };
    } catch (error) {
      // an EvalError under --disallow-code-generation-from-strings
      compilation = { available: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  }
  return compilation;
}

/** Largest offset a shape takes: masking with it tells V8 that `o + k` cannot overflow. */
const MAX_OFFSET = 0x3fffffff;

/** `v` (read from `obj[key]`) must be null, or undefined because the key holds undefined. */
const absentCheck = (obj: string, key: string) => `if (v === undefined ? !(${lit(key)} in ${obj}) : v !== null) return -1;`;

export function compileShape(fields: ShapeField[], maxListLen: number): CompiledShape {
  // `o` masked to a known range: without it every `o + k` index carries an overflow check
  // (code size is what a cold call pays for)
  const lines: string[] = [`const o = off & ${MAX_OFFSET}; if (o !== off) return -1;`, 'let v, d, c, k;', 's[o + 1] = NaN;'];
  const lists: string[] = [];
  let at = 2; // next fixed slot
  // the scalars' column ids, in slot order (slots 2, 4, 6…): written by one loop from a
  // constant array rather than one unrolled store each, which would double the code
  const ids: number[] = [];
  const scalar = (obj: string, key: string, id: number, integer: boolean) => {
    lines.push(
      // Number.isInteger, not `v % 1`: V8 compiles the modulo to an x87 loop per field
      `v = ${obj}[${lit(key)}]; if (typeof v !== 'number'${integer ? ` || !Number.isInteger(v) || !(Math.abs(v) <= ${MAX_SAFE})` : ''}) return -1;`,
      `s[o + ${at + 1}] = v;`,
    );
    ids.push(id);
    at += 2;
  };
  for (const f of fields) {
    switch (f.role) {
      case 'step':
        lines.push(`v = r[${lit(f.key)}]; if (typeof v !== 'number' || !(v >= 0 && v <= ${MAX_SAFE}) || !Number.isInteger(v)) return -1;`, 's[o] = v;');
        break;
      case 'timestamp':
        lines.push(`v = r[${lit(f.key)}]; if (typeof v !== 'number' || !isFinite(v)) return -1;`, 's[o + 1] = v;');
        break;
      case 'absent':
        lines.push(`v = r[${lit(f.key)}]; ${absentCheck('r', f.key)}`);
        break;
      case 'f64':
      case 'i64':
        scalar('r', f.key, f.id, f.role === 'i64');
        break;
      case 'dict':
        lines.push(
          `d = r[${lit(f.key)}]; if (d === null || typeof d !== 'object') return -1;`,
          `c = 0; for (k in d) c++; if (c !== ${f.entries.length}) return -1;`,
        );
        for (const e of f.entries) {
          if (e.id === null) lines.push(`v = d[${lit(e.key)}]; ${absentCheck('d', e.key)}`);
          else scalar('d', e.key, e.id, false);
        }
        break;
      case 'list_f64':
        // variable length: after every fixed slot
        lists.push(
          `v = r[${lit(f.key)}]; if (v === null || typeof v !== 'object' || typeof v.length !== 'number') return -1;`,
          `c = v.length; if (c > ${maxListLen} || n + 2 + c > lim) return -1;`,
          `s[o + n] = ${f.id}; s[o + n + 1] = c;`,
          'for (k = 0; k < c; k++) { d = v[k]; if (typeof d !== "number") return -1; s[o + n + 2 + k] = d; }',
          'n += 2 + c;',
        );
        break;
    }
  }
  const fixedSlots = at + 2 * lists.filter((l) => l.startsWith('s[o + n]')).length;
  const idLoop = ids.length > 0 ? [`for (k = 0; k < ${ids.length}; k++) s[o + 2 + 2 * k] = IDS[k];`] : [];
  const body = [...lines, ...idLoop, `let n = ${at};`, ...lists, 'return n;'].join('\n');
  // keys are JSON string literals, ids and positions numbers: no user text becomes code.
  // One closure per compiled function, so V8 may treat IDS as a constant.
  const make = new Function('IDS', `return function encodeShape(r, s, off, lim) {\n${body}\n};`) as (ids: Float64Array) => CompiledShape['encode'];
  return { encode: make(new Float64Array(ids)), fixedSlots, keyCount: fields.length };
}
