/**
 * Reading the fields of a trial's own JSON files (result, config, rewards) leniently but
 * never silently: a value that is present but unusable — a number where a string belongs, a
 * timestamp that does not parse, rewards that are not named numbers — is ignored, and a
 * warning says which file, which field, what it held and what was done with it. Absent and
 * null fields are normal (producers omit them) and say nothing.
 */
import { isPlainObject } from '../files/python-json.js';
import { parseTimestamp } from './trajectory/times.js';

/** Warnings kept per trial; more are counted in a last line. */
const MAX_FINDINGS = 50;

/** The warnings of one trial's reading, bounded. */
export class Findings {
  private readonly kept: string[] = [];
  private dropped = 0;

  add(text: string): void {
    if (this.kept.includes(text)) return;
    if (this.kept.length < MAX_FINDINGS) this.kept.push(text);
    else this.dropped++;
  }

  list(): string[] {
    return this.dropped === 0 ? [...this.kept] : [...this.kept, `… and ${this.dropped} more warnings`];
  }
}

/** A short description of a value for a warning: `a number (17)`, `a string ("x")`, `an array`. */
export function describeValue(v: unknown): string {
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)})`;
  if (typeof v === 'number' || typeof v === 'boolean') return `a ${typeof v} (${String(v)})`;
  if (Array.isArray(v)) return 'an array';
  return v === null ? 'null' : `an ${typeof v === 'object' ? 'object' : typeof v}`;
}

type Obj = Record<string, unknown>;

/** The fields of one JSON file; every warning is prefixed with the file's trial-relative path. */
export class FieldReader {
  constructor(
    readonly file: string,
    private readonly findings: Findings,
  ) {}

  note(text: string): void {
    this.findings.add(`${this.file}: ${text}`);
  }

  /** A string field ('' counts as absent). */
  string(o: Obj, key: string, at = key): string | null {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (typeof v === 'string') return v.length > 0 ? v : null;
    this.note(`${at} is ${describeValue(v)}, expected a string; ignored`);
    return null;
  }

  /** A timestamp string that parses (a time the spans can use). */
  time(o: Obj, key: string, at = key): string | null {
    const v = o[key];
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string') {
      this.note(`${at} is ${describeValue(v)}, expected a timestamp string; ignored`);
      return null;
    }
    if (parseTimestamp(v).t === null) {
      this.note(`${at} ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)} is not a timestamp; ignored`);
      return null;
    }
    return v;
  }

  object(o: Obj, key: string, at = key): Obj | null {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (isPlainObject(v)) return v;
    this.note(`${at} is ${describeValue(v)}, expected an object; ignored`);
    return null;
  }

  list(o: Obj, key: string, at = key): unknown[] | null {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (Array.isArray(v)) return v;
    this.note(`${at} is ${describeValue(v)}, expected a list; ignored`);
    return null;
  }

  /** A number; a numeric string is read (and noted); NaN and infinities are null (Python writes them). */
  number(o: Obj, key: string, at = key): number | null {
    return this.numberValue(o[key], at);
  }

  numberValue(v: unknown, at: string): number | null {
    if (v === undefined || v === null) return null;
    if (typeof v === 'number') return Number.isFinite(v) ? v : null;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) {
      this.note(`${at} is ${describeValue(v)}; read as ${Number(v)}`);
      return Number(v);
    }
    this.note(`${at} is ${describeValue(v)}, not a number; dropped`);
    return null;
  }

  /**
   * Named rewards (`{reward: 1, tests_passed: 0.75}`): each value a number (NaN kept as
   * null); a value that is not one is dropped and named. Null when none is usable.
   */
  rewards(v: unknown, at: string): Record<string, number | null> | null {
    if (v === undefined || v === null) return null;
    if (!isPlainObject(v)) {
      this.note(`${at === '' ? 'the document' : at} is ${describeValue(v)}, expected an object of named numbers; ignored`);
      return null;
    }
    const out: Record<string, number | null> = {};
    for (const [k, x] of Object.entries(v)) {
      const where = at === '' ? k : `${at}.${k}`;
      if (x === null || typeof x === 'number') out[k] = typeof x === 'number' && Number.isFinite(x) ? x : null;
      else if (typeof x === 'string' && /^[+-]?(nan|inf(inity)?)$/i.test(x.trim())) out[k] = null;
      else {
        const n = this.numberValue(x, where);
        if (n !== null) out[k] = n;
      }
    }
    return Object.keys(out).length > 0 ? out : null;
  }
}

/**
 * A JSON document read for its fields: its object, or null with a warning saying why it
 * could not be used (not JSON, not an object, too large). Absent: null, no warning.
 */
export function documentObject(doc: { value: unknown } | { problem: string } | null, fields: FieldReader): Obj | null {
  if (doc === null) return null;
  if ('problem' in doc) {
    fields.note(`${doc.problem}; nothing read from it`);
    return null;
  }
  if (!isPlainObject(doc.value)) {
    fields.note(`the document is ${describeValue(doc.value)}, expected an object; nothing read from it`);
    return null;
  }
  return doc.value;
}
