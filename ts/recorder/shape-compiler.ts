/**
 * Compiles a record layout into a specialised encoder: one constant-name property load per
 * field, column ids and slot positions as constants. V8 turns each load into a monomorphic
 * inline cache, which is what brings a 40-field record to ~150 ns (a generic `for…in`
 * with keyed loads costs several times more).
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
   */
  encode(record: object, slots: Float64Array, offset: number, limit: number): number;
  /** Slots the shape needs besides list items. */
  fixedSlots: number;
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

/** `v` (read from `obj[key]`) must be null, or undefined because the key holds undefined. */
const absentCheck = (obj: string, key: string) => `if (v === undefined ? !(${lit(key)} in ${obj}) : v !== null) return -1;`;

export function compileShape(fields: ShapeField[], maxListLen: number): CompiledShape {
  const lines: string[] = ['let v, d, c, k;', 's[o + 1] = NaN;'];
  const lists: string[] = [];
  let at = 2; // next fixed slot
  const scalar = (obj: string, key: string, id: number, integer: boolean) => {
    lines.push(
      `v = ${obj}[${lit(key)}]; if (typeof v !== 'number'${integer ? ` || v % 1 !== 0 || !(Math.abs(v) <= ${MAX_SAFE})` : ''}) return -1;`,
      `s[o + ${at}] = ${id}; s[o + ${at + 1}] = v;`,
    );
    at += 2;
  };
  for (const f of fields) {
    switch (f.role) {
      case 'step':
        lines.push(`v = r[${lit(f.key)}]; if (typeof v !== 'number' || !(v >= 0 && v <= ${MAX_SAFE}) || v % 1 !== 0) return -1;`, 's[o] = v;');
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
  const body = [...lines, `let n = ${at};`, ...lists, 'return n;'].join('\n');
  // keys are JSON string literals, ids and positions numbers: no user text becomes code
  const encode = new Function('r', 's', 'o', 'lim', body) as CompiledShape['encode'];
  return { encode, fixedSlots };
}
