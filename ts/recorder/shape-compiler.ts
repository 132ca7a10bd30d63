/**
 * Compiles a record layout into a specialised encoder: one constant-name property load per
 * field, column ids as constants. V8 turns each load into a monomorphic inline cache, which
 * is what brings a 40-field record to well under 100 ns (a generic `for…in` with keyed
 * loads costs several times more).
 *
 * A compiled shape never decides that a record is bad: on anything unexpected it returns
 * -1 and the checked path in step-encoder.ts takes over. Keys are embedded with
 * JSON.stringify, so a key is always a string literal, never code.
 */

export type ShapeField =
  | { key: string; role: 'step' | 'timestamp' | 'absent' }
  | { key: string; role: 'f64' | 'i64' | 'list_f64'; id: number }
  | { key: string; role: 'dict'; entries: Array<{ key: string; id: number }> };

export interface CompiledShape {
  /**
   * Writes the record at `slots[offset…]` and returns its length in slots, or -1 (bail).
   * Never writes at or past `offset + limit`.
   */
  encode(record: object, slots: Float64Array, offset: number, limit: number): number;
  /** Slots the shape needs besides list items (the buffer is grown to this up front). */
  fixedSlots: number;
}

/** Compiled shapes kept per encoder: enough for runs that alternate a few record layouts. */
export const MAX_SHAPES = 32;

const lit = (s: string) => JSON.stringify(s);

export function compileShape(fields: ShapeField[], maxListLen: number): CompiledShape {
  // `s[o + i]`: the record may land anywhere in the ring; `lim` bounds its length
  const lines: string[] = ['let v, d, c, k, n = 2;', 's[o + 1] = NaN;'];
  let fixedSlots = 2;
  for (const f of fields) {
    const load = `v = r[${lit(f.key)}];`;
    // The key count matched; every compiled key must also be present, or a missing one
    // would hide an extra key the shape does not know. (`in` only runs for undefined.)
    const notAbsent = `(v === undefined ? !(${lit(f.key)} in r) : v !== null)`;
    switch (f.role) {
      case 'step':
        lines.push(load, `if (typeof v !== 'number' || !(v >= 0 && v <= ${Number.MAX_SAFE_INTEGER}) || v % 1 !== 0) return -1;`, 's[o] = v;');
        break;
      case 'timestamp':
        lines.push(load, `if (typeof v === 'number') { if (!isFinite(v)) return -1; s[o + 1] = v; } else if ${notAbsent} return -1;`);
        break;
      case 'absent':
        lines.push(load, `if ${notAbsent} return -1;`);
        break;
      case 'f64':
        lines.push(load, `if (typeof v === 'number') { s[o + n] = ${f.id}; s[o + n + 1] = v; n += 2; } else if ${notAbsent} return -1;`);
        fixedSlots += 2;
        break;
      case 'i64':
        lines.push(
          load,
          `if (typeof v === 'number') { if (v % 1 !== 0 || !(Math.abs(v) <= ${Number.MAX_SAFE_INTEGER})) return -1; s[o + n] = ${f.id}; s[o + n + 1] = v; n += 2; } else if ${notAbsent} return -1;`,
        );
        fixedSlots += 2;
        break;
      case 'list_f64':
        lines.push(
          load,
          `if (v == null) { if (v === undefined && !(${lit(f.key)} in r)) return -1; } else {`,
          `  if (typeof v !== 'object' || typeof v.length !== 'number') return -1;`,
          '  c = v.length;',
          `  if (c > ${maxListLen} || n + 2 + c > lim) return -1;`,
          `  s[o + n] = ${f.id}; s[o + n + 1] = c;`,
          '  for (k = 0; k < c; k++) { d = v[k]; if (typeof d !== "number") return -1; s[o + n + 2 + k] = d; }',
          '  n += 2 + c;',
          '}',
        );
        fixedSlots += 2;
        break;
      case 'dict':
        lines.push(
          `d = r[${lit(f.key)}];`,
          `if (d == null) { if (d === undefined && !(${lit(f.key)} in r)) return -1; } else {`,
          `  if (typeof d !== 'object') return -1;`,
          '  c = 0; for (k in d) c++;',
          `  if (c !== ${f.entries.length}) return -1;`,
        );
        for (const e of f.entries) {
          lines.push(
            `  v = d[${lit(e.key)}]; if (typeof v === 'number') { s[o + n] = ${e.id}; s[o + n + 1] = v; n += 2; } else if (v === undefined ? !(${lit(e.key)} in d) : v !== null) return -1;`,
          );
        }
        lines.push('}');
        fixedSlots += 2 * f.entries.length;
        break;
    }
  }
  lines.push('return n;');
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- keys are JSON string literals
  const encode = new Function('r', 's', 'o', 'lim', lines.join('\n')) as CompiledShape['encode'];
  return { encode, fixedSlots };
}
