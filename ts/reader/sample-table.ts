/**
 * Samples as columns (`RunReader.sampleTable`): the bulk read. Numbers arrive as one
 * Float64Array per column and texts as one UTF-8 buffer with offsets, so a million samples'
 * ids and rewards cost a few buffers, not a million records and strings. A text is decoded
 * when it is asked for; `row(i)` builds the same record `samples()` yields, except where
 * one column holds different kinds in different files, which a table cannot: a column that
 * is text in some file holds text (its numbers written as JS writes them), one mixing bools
 * and numbers holds numbers, and an integer id past 2^53 keeps every digit (`samples()`
 * reads it through a JS number).
 */
import type { NativeSampleTable } from '../native.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import { RlprobeError } from '../errors.js';
import { sampleFieldSetter } from './sample-rows.js';
import type { SampleFieldSetter } from './sample-rows.js';

export type SampleColumnKind = 'int' | 'float' | 'bool' | 'text' | 'int_list' | 'float_list';

/** One column as the native read hands it over (see NativeSampleTableColumn). */
export interface SampleTableColumn {
  name: string;
  kind: SampleColumnKind;
  /** Numbers (bool as 0/1, NaN where null), or a list column's items. */
  values?: Float64Array;
  /** A text column's UTF-8 bytes. */
  bytes?: Buffer;
  /** For text and lists: rows + 1 offsets into `bytes` or `values`. */
  offsets?: Uint32Array;
  /** 1 where the row has a value; absent when every row has one. */
  valid?: Uint8Array;
}

/** Distinct values found by comparing bytes; more, and a Set of strings takes over. */
const DISTINCT_BY_BYTES = 32;

function sameBytes(a: Uint8Array, b: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[start + i]) return false;
  return true;
}

export class SampleTable {
  /** Matching samples: every rank in turn, in the order `samples()` yields them. */
  readonly rows: number;
  readonly columns: readonly SampleTableColumn[];
  readonly #byName = new Map<string, SampleTableColumn>();
  #setters: Array<[SampleTableColumn, SampleFieldSetter]> | null = null;

  constructor(native: NativeSampleTable) {
    this.rows = native.rows;
    this.columns = native.columns.map((c) => ({
      name: c.name,
      kind: c.kind as SampleColumnKind,
      values: c.values ?? undefined,
      // a view of the same memory, for Buffer's fast UTF-8 slicing
      bytes: c.bytes ? Buffer.from(c.bytes.buffer, c.bytes.byteOffset, c.bytes.byteLength) : undefined,
      offsets: c.offsets ?? undefined,
      valid: c.valid ?? undefined,
    }));
    for (const c of this.columns) this.#byName.set(c.name, c);
  }

  /** The column names, in the order the files first showed them. */
  get columnNames(): string[] {
    return this.columns.map((c) => c.name);
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** Column `name`; throws RLPROBE_INVALID_QUERY naming the columns there are. */
  column(name: string): SampleTableColumn {
    const c = this.#byName.get(name);
    if (c === undefined) {
      throw new RlprobeError('RLPROBE_INVALID_QUERY', `no sample column ${JSON.stringify(name)} in this table (columns: ${this.columnNames.join(', ') || 'none'})`);
    }
    return c;
  }

  /** A number or bool column's values, NaN where a row has none (no copy). */
  numbers(name: string): Float64Array {
    const c = this.column(name);
    if (c.kind !== 'int' && c.kind !== 'float' && c.kind !== 'bool') {
      throw new RlprobeError('RLPROBE_INVALID_QUERY', `sample column ${JSON.stringify(name)} holds ${c.kind}, not numbers: use text() or list()`);
    }
    return c.values!;
  }

  /** False where row `row` of column `name` has no value (or the table has no such column). */
  isValid(name: string, row: number): boolean {
    const c = this.#byName.get(name);
    return c !== undefined && row >= 0 && row < this.rows && (c.valid === undefined || c.valid[row] === 1);
  }

  /** Row `row`'s text in column `name`, decoded now; undefined where it has none. */
  text(name: string, row: number): string | undefined {
    const c = this.column(name);
    if (c.kind !== 'text') throw new RlprobeError('RLPROBE_INVALID_QUERY', `sample column ${JSON.stringify(name)} holds ${c.kind}, not text`);
    if (!this.isValid(name, row)) return undefined;
    return c.bytes!.toString('utf8', c.offsets![row], c.offsets![row + 1]);
  }

  /** Every text of column `name` (undefined where a row has none): one string per row. */
  texts(name: string): Array<string | undefined> {
    const out = new Array<string | undefined>(this.rows);
    for (let r = 0; r < this.rows; r++) out[r] = this.text(name, r);
    return out;
  }

  /**
   * The distinct texts of column `name`, in the order first met. A few distinct values
   * (capture reasons, group ids) are found by comparing bytes, without a string per row.
   */
  distinctTexts(name: string): string[] {
    const c = this.column(name);
    if (c.kind !== 'text') throw new RlprobeError('RLPROBE_INVALID_QUERY', `sample column ${JSON.stringify(name)} holds ${c.kind}, not text`);
    const bytes = c.bytes!;
    const off = c.offsets!;
    const seen: Array<{ bytes: Uint8Array; text: string }> = [];
    let many: Set<string> | null = null;
    for (let r = 0; r < this.rows; r++) {
      if (c.valid !== undefined && c.valid[r] !== 1) continue;
      const s = off[r];
      const e = off[r + 1];
      if (many !== null) {
        many.add(bytes.toString('utf8', s, e));
        continue;
      }
      if (seen.some((v) => sameBytes(v.bytes, bytes, s, e))) continue;
      seen.push({ bytes: bytes.subarray(s, e), text: bytes.toString('utf8', s, e) });
      // past a few values the byte comparisons cost more than a string per row
      if (seen.length > DISTINCT_BY_BYTES) many = new Set(seen.map((v) => v.text));
    }
    return many !== null ? [...many] : seen.map((v) => v.text);
  }

  /** Row `row`'s list in column `name` (a copy); undefined where it has none. */
  list(name: string, row: number): number[] | undefined {
    const c = this.column(name);
    if (c.kind !== 'int_list' && c.kind !== 'float_list') throw new RlprobeError('RLPROBE_INVALID_QUERY', `sample column ${JSON.stringify(name)} holds ${c.kind}, not lists`);
    if (!this.isValid(name, row)) return undefined;
    return Array.from(c.values!.subarray(c.offsets![row], c.offsets![row + 1]));
  }

  /** Row `row` as the record `samples()` yields for it. */
  row(row: number): StoredSampleRecord {
    if (!Number.isInteger(row) || row < 0 || row >= this.rows) {
      throw new RlprobeError('RLPROBE_INVALID_QUERY', `no sample row ${row} in this table (rows: ${this.rows})`);
    }
    this.#setters ??= this.columns.map((c) => [c, sampleFieldSetter(c.name, c.kind)]);
    const rec = { step: NaN, sample_id: '', rank: 0 } as StoredSampleRecord & Record<string, unknown>;
    for (const [c, put] of this.#setters) {
      if (c.valid !== undefined && c.valid[row] !== 1) continue;
      let v: unknown;
      if (c.kind === 'text') v = c.bytes!.toString('utf8', c.offsets![row], c.offsets![row + 1]);
      else if (c.kind === 'int_list' || c.kind === 'float_list') v = Array.from(c.values!.subarray(c.offsets![row], c.offsets![row + 1]));
      else if (c.kind === 'bool') v = c.values![row] !== 0;
      else v = c.values![row];
      put(rec, v);
    }
    return rec;
  }

  /** Every row as a record (what `samples()` yields, gathered). */
  *records(): Generator<StoredSampleRecord, void, undefined> {
    for (let r = 0; r < this.rows; r++) yield this.row(r);
  }
}
