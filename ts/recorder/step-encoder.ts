/**
 * Encodes a step record into the reusable slot buffer the native queue reads
 * (layout: crates/rlprobe-core/src/encoding.rs).
 *
 * Two paths:
 * - the checked path walks any record and, when a field is bad, says which and why
 *   (`bad`); the new columns of a record it accepts are registered together at the end,
 *   so a refused record registers nothing (it must not use up the column budget);
 * - the fast path: after a record encodes cleanly, its key layout is compiled into a
 *   function with one constant-name property load per field (monomorphic, ~1 ns each) and
 *   column ids baked in (see shape-compiler.ts). A later record with the same number of
 *   keys tries the compiled shapes first (the one that fitted last before the others, so a
 *   run's one layout costs no lookup); any surprise (a missing key, a non-number, a
 *   nested dict of another shape) makes it bail to the checked path, which has the final
 *   word. Steady state allocates nothing. Where code generation from strings is forbidden
 *   (`--disallow-code-generation-from-strings`) nothing is compiled and every record takes
 *   the checked path: slower, never a refusal (`compilesShapes` says which).
 */

import { MAX_COLUMNS, MAX_LIST_LEN, MAX_SLOTS } from './limits.js';
import { compileShape, MAX_SHAPES, shapeCompilation } from './shape-compiler.js';
import type { CompiledShape, ShapeField } from './shape-compiler.js';

export type ColumnKind = 'f64' | 'i64' | 'list_f64';

export interface ColumnRegistrar {
  /** The kind of a key's column, registering nothing; throws for a key that cannot be one. */
  kindOf(key: string): string;
  /** Registers the keys of one accepted record, all or none; ids in the keys' order. */
  registerAll(keys: string[]): Array<{ id: number; kind: string }>;
  /** Called when the slot buffer is replaced by a larger one. */
  bindScratch(slots: Float64Array): void;
}

export interface EncoderOptions {
  compileShapes?: boolean;
  onCompileError?: (error: string) => void;
}

/** Why the last record was refused. */
export interface BadField {
  field: string;
  reason: string;
  value: unknown;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Why the addon refused a key (its code is on the error; the message is plain text). */
function nativeMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const DICT_PREFIX = { reward_components: 'reward_component.', extra: 'extra.' } as const;

export class StepEncoder {
  private slots: Float64Array;
  private readonly registrar: ColumnRegistrar;
  /** Column key (`loss`, `extra.x`, `reward_component.y`) → id and kind. */
  private readonly columns = new Map<string, { id: number; kind: ColumnKind }>();
  /** Compiled shapes by their top-level key count. */
  private readonly shapesByKeyCount = new Map<number, CompiledShape[]>();
  private shapeCount = 0;
  /** The shape the last fast-path record fitted: tried first, without the map lookup. */
  private lastShape: CompiledShape | null = null;
  /** Set when `encode` returns -1. */
  bad: BadField = { field: '', reason: '', value: undefined };
  /** The record's step when it was readable (for the bad_record event), else null. */
  badStep: number | null = null;
  /** Keys the record being checked adds, in first-seen order; their slots hold `-1 - index`. */
  private readonly pendingKeys: string[] = [];
  private readonly pendingIndex = new Map<string, { index: number; kind: ColumnKind }>();
  /** Slot positions holding a pending id. */
  private readonly pendingSlots: number[] = [];
  /** False where compiling is forbidden (or failed once): every record takes the checked path. */
  private compiling: boolean;
  private readonly onCompileError: (error: string) => void;

  /**
   * `compileShapes: false` keeps to the checked path (by default: wherever the runtime
   * allows it); `onCompileError` hears of a compilation that failed anyway, after which
   * none is tried again.
   */
  constructor(registrar: ColumnRegistrar, initialSlots = 256, options: EncoderOptions = {}) {
    this.registrar = registrar;
    this.compiling = options.compileShapes ?? shapeCompilation().available;
    this.onCompileError = options.onCompileError ?? (() => {});
    this.slots = new Float64Array(initialSlots);
    registrar.bindScratch(this.slots);
  }

  /** Whether accepted records teach the fast path their shape. */
  get compilesShapes(): boolean {
    return this.compiling;
  }

  /** The reusable buffer `encode` and `encodeChecked` write to. */
  get scratch(): Float64Array {
    return this.slots;
  }

  /**
   * The fast path: tries the compiled shapes with this record's key count, writing at
   * `target[offset…]` within `limit` slots. Returns the length, or -1 when no shape fits
   * (not a verdict on the record: run `encodeChecked`). Its two stages, `shapeFor` then the
   * shape's `encode` (validation and copy in one pass), are what benches/overhead.ts times.
   */
  encodeFast(record: object, target: Float64Array, offset: number, limit: number): number {
    const shape = this.shapeFor(record);
    if (shape === null) return -1;
    if (shape.fixedSlots <= limit) {
      const n = shape.encode(record, target, offset, limit);
      // stored only when it changes: a pointer store costs a write barrier
      if (n >= 0 && shape !== this.lastShape) this.lastShape = shape;
      if (n >= 0) return n;
    }
    return this.encodeOtherShapes(record, shape, target, offset, limit);
  }

  /**
   * The shape check: counts the record's keys (a shape is exact, so an extra key must not
   * fit) and returns the shape to try first — the last one that fitted when the count
   * matches, else the first compiled with that count — or null when none has it.
   */
  shapeFor(record: object): CompiledShape | null {
    let keys = 0;
    for (const _ in record) keys++;
    const last = this.lastShape;
    return last !== null && last.keyCount === keys ? last : this.firstShapeWith(keys);
  }

  /** The first shape compiled for records of `keys` keys (rare: out of line). */
  private firstShapeWith(keys: number): CompiledShape | null {
    const shapes = this.shapesByKeyCount.get(keys);
    return shapes === undefined ? null : shapes[0];
  }

  /** The other shapes with `tried`'s key count, when `tried` did not fit. */
  private encodeOtherShapes(record: object, tried: CompiledShape, target: Float64Array, offset: number, limit: number): number {
    const shapes = this.shapesByKeyCount.get(tried.keyCount);
    if (shapes === undefined) return -1;
    for (const shape of shapes) {
      if (shape === tried || shape.fixedSlots > limit) continue;
      const n = shape.encode(record, target, offset, limit);
      if (n >= 0) {
        this.lastShape = shape;
        return n;
      }
    }
    return -1;
  }

  /**
   * The checked path into `scratch`: any value, precise refusal (-1, see `bad`). A record
   * it accepts teaches the fast path its shape.
   */
  encodeChecked(record: unknown): number {
    if (record === null || typeof record !== 'object') {
      this.badStep = null;
      return this.refuse('record', 'expected an object', record);
    }
    this.pendingKeys.length = 0;
    this.pendingIndex.clear();
    this.pendingSlots.length = 0;
    let n = this.encodeCheckedObject(record as Record<string, unknown>);
    if (n >= 0 && this.pendingKeys.length > 0) n = this.registerPending(n);
    if (n >= 0) this.learnShape(record as Record<string, unknown>);
    return n;
  }

  /** Encodes `record` into `scratch`; returns the number of slots used, or -1 (see `bad`). */
  encode(record: unknown): number {
    if (record !== null && typeof record === 'object') {
      const n = this.encodeFast(record, this.slots, 0, this.slots.length);
      if (n >= 0) return n;
    }
    return this.encodeChecked(record);
  }

  /** The checked path: any record, precise refusal. */
  private encodeCheckedObject(r: Record<string, unknown>): number {
    this.badStep = null;
    const step = r.step;
    if (typeof step !== 'number' || !Number.isInteger(step) || step < 0 || step > MAX_SAFE) {
      return this.refuse('step', step === undefined ? 'missing' : 'expected a non-negative integer', step);
    }
    this.badStep = step;
    this.slots[0] = step;
    this.slots[1] = NaN;
    let n = 2;
    for (const key in r) {
      const value = r[key];
      if (key === 'step' || value === undefined || value === null) continue;
      if (key === 'timestamp') {
        if (typeof value !== 'number' || !Number.isFinite(value)) {
          return this.refuse('timestamp', 'expected finite Unix seconds', value);
        }
        this.slots[1] = value;
      } else if (key === 'reward_components' || key === 'extra') {
        n = this.encodeDict(key, value, n);
      } else if (key === 'kl_positional') {
        const col = this.column(key, key);
        n = col === null ? -1 : this.encodeList(key, col.id, value, n);
      } else {
        // check the value before registering: a bad value must not create a column
        if (typeof value !== 'number') return this.refuse(key, 'expected a number', value);
        const col = this.column(key, key);
        if (col === null) return -1;
        if (col.kind === 'list_f64') return this.refuse(key, 'expected an array of numbers', value);
        if (col.kind === 'i64' && !(Number.isInteger(value) && Math.abs(value) <= MAX_SAFE)) {
          return this.refuse(key, 'expected an integer count (at most 2^53-1)', value);
        }
        n = this.put(n, col.id, value, key);
      }
      if (n < 0) return -1;
    }
    return n;
  }

  private encodeDict(field: 'reward_components' | 'extra', dict: unknown, n: number): number {
    if (typeof dict !== 'object' || dict === null || Array.isArray(dict)) {
      return this.refuse(field, 'expected an object of numbers', dict);
    }
    const d = dict as Record<string, unknown>;
    for (const key in d) {
      const value = d[key];
      if (value === undefined || value === null) continue;
      const name = `${field}.${key}`;
      if (typeof value !== 'number') return this.refuse(name, 'expected a number', value);
      const col = this.column(DICT_PREFIX[field] + key, name);
      if (col === null) return -1;
      n = this.put(n, col.id, value, name);
      if (n < 0) return -1;
    }
    return n;
  }

  private encodeList(field: string, id: number, value: unknown, n: number): number {
    if (typeof value !== 'object' || value === null || typeof (value as ArrayLike<number>).length !== 'number') {
      return this.refuse(field, 'expected an array of numbers', value);
    }
    const list = value as ArrayLike<unknown>;
    const len = list.length;
    if (!Number.isInteger(len) || len < 0 || len > MAX_LIST_LEN) {
      return this.refuse(field, `expected at most ${MAX_LIST_LEN} numbers`, value);
    }
    if (!this.ensure(n + 2 + len)) return this.refuse(field, 'record too large', value);
    const slots = this.slots;
    if (id < 0) this.pendingSlots.push(n);
    slots[n] = id;
    slots[n + 1] = len;
    for (let k = 0; k < len; k++) {
      const x = list[k];
      if (typeof x !== 'number') return this.refuse(`${field}[${k}]`, 'expected a number', x);
      slots[n + 2 + k] = x;
    }
    return n + 2 + len;
  }

  private put(n: number, id: number, value: number, field: string): number {
    if (!this.ensure(n + 2)) return this.refuse(field, 'record too large', value);
    if (id < 0) this.pendingSlots.push(n);
    this.slots[n] = id;
    this.slots[n + 1] = value;
    return n + 2;
  }

  /**
   * The column of `key`; a key not registered yet gets a pending id (`-1 - index`) that
   * `registerPending` replaces once the whole record is accepted. Null when refused.
   */
  private column(key: string, fieldForErrors: string): { id: number; kind: ColumnKind } | null {
    const known = this.columns.get(key);
    if (known !== undefined) return known;
    const pending = this.pendingIndex.get(key);
    if (pending !== undefined) return { id: -1 - pending.index, kind: pending.kind };
    let kind: ColumnKind;
    try {
      kind = this.registrar.kindOf(key) as ColumnKind;
    } catch (error) {
      this.refuse(fieldForErrors, nativeMessage(error), undefined);
      return null;
    }
    // more new keys than a recording can hold at all: refuse now rather than walk (and
    // check natively) every further key; registerAll makes the exact check
    if (this.pendingKeys.length >= MAX_COLUMNS) {
      this.refuse('record', `the record would add more than ${MAX_COLUMNS} new columns (limit ${MAX_COLUMNS}); nothing of it was added`, undefined);
      return null;
    }
    const index = this.pendingKeys.push(key) - 1;
    this.pendingIndex.set(key, { index, kind });
    return { id: -1 - index, kind };
  }

  /** Registers the accepted record's new columns together and patches their slots. */
  private registerPending(n: number): number {
    let registered: Array<{ id: number; kind: string }>;
    try {
      registered = this.registrar.registerAll(this.pendingKeys);
    } catch (error) {
      return this.refuse('record', nativeMessage(error), undefined);
    }
    for (const pos of this.pendingSlots) this.slots[pos] = registered[-1 - this.slots[pos]].id;
    for (const [i, key] of this.pendingKeys.entries()) {
      this.columns.set(key, { id: registered[i].id, kind: registered[i].kind as ColumnKind });
    }
    return n;
  }

  /** Compiles the layout of a record the checked path just accepted. */
  private learnShape(r: Record<string, unknown>): void {
    if (!this.compiling || this.shapeCount >= MAX_SHAPES) return;
    const isAbsent = (v: unknown) => v === undefined || v === null;
    const fields: ShapeField[] = [];
    for (const key in r) {
      const value = r[key];
      if (key === 'step') {
        fields.push({ key, role: 'step' });
      } else if (isAbsent(value)) {
        // the shape expects this key present and null/undefined
        fields.push({ key, role: 'absent' });
      } else if (key === 'timestamp') {
        fields.push({ key, role: 'timestamp' });
      } else if (key === 'reward_components' || key === 'extra') {
        const entries: Array<{ key: string; id: number | null }> = [];
        const dict = value as Record<string, unknown>;
        for (const k in dict) {
          if (isAbsent(dict[k])) {
            entries.push({ key: k, id: null });
            continue;
          }
          const col = this.columns.get(DICT_PREFIX[key] + k);
          if (col === undefined) return; // cannot happen after a clean checked pass
          entries.push({ key: k, id: col.id });
        }
        fields.push({ key, role: 'dict', entries });
      } else {
        const col = this.columns.get(key);
        if (col === undefined) return;
        fields.push({ key, role: col.kind, id: col.id });
      }
    }
    let shape: CompiledShape;
    try {
      shape = compileShape(fields, MAX_LIST_LEN);
    } catch (error) {
      // the record is accepted whatever happens here: compiling is an optimisation, and one
      // that failed (code generation forbidden after all) is not tried again
      this.compiling = false;
      this.onCompileError(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      return;
    }
    if (!this.ensure(shape.fixedSlots)) return;
    // filed by the keys the shape checks (the count the checked pass saw may differ for a
    // proxy that enumerates differently each time)
    const list = this.shapesByKeyCount.get(shape.keyCount);
    if (list) list.push(shape);
    else this.shapesByKeyCount.set(shape.keyCount, [shape]);
    this.shapeCount++;
    this.lastShape = shape;
  }

  /** Makes room for `needed` slots (rebinding the buffer natively); false past MAX_SLOTS. */
  private ensure(needed: number): boolean {
    if (needed <= this.slots.length) return true;
    if (needed > MAX_SLOTS) return false;
    let size = this.slots.length * 2;
    while (size < needed) size *= 2;
    const bigger = new Float64Array(Math.min(size, MAX_SLOTS));
    bigger.set(this.slots);
    this.slots = bigger;
    this.registrar.bindScratch(bigger);
    return true;
  }

  private refuse(field: string, reason: string, value: unknown): -1 {
    this.bad = { field, reason, value };
    return -1;
  }
}
