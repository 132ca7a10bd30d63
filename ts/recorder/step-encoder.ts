/**
 * Encodes a step record into the reusable slot buffer the native queue reads
 * (layout: crates/rlprobe-core/src/encoding.rs).
 *
 * This is the hot path. In steady state it allocates nothing: keys are matched against the
 * previous record's key order by identity (property names are interned strings, so this
 * is a pointer compare), and only a new key costs a Map lookup and, the first time ever, a
 * native registration. Validation happens here because this is where each field is read
 * anyway; a bad field makes `encode` return -1 and leaves the reason in `bad`.
 */

import { MAX_LIST_LEN, MAX_SLOTS } from './limits.js';

export type ColumnKind = 'f64' | 'i64' | 'list_f64';
const F64 = 0;
const I64 = 1;
const LIST = 2;

export interface ColumnRegistrar {
  /** Column id and kind for a key (top-level, or `reward_component.x` / `extra.x`). */
  register(key: string): { id: number; kind: string };
  /** Called when the slot buffer is replaced by a larger one. */
  bindScratch(slots: Float64Array): void;
}

/** Why the last record was refused. */
export interface BadField {
  field: string;
  reason: string;
  value: unknown;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Ids of one object's keys, cached in the order the last record listed them. */
class KeyCache {
  keys: string[] = [];
  ids: number[] = [];
  kinds: number[] = [];
}

export class StepEncoder {
  private slots: Float64Array;
  private readonly registrar: ColumnRegistrar;
  /** Full column key → id/kind (the slow path behind the caches). */
  private readonly known = new Map<string, number>();
  private readonly knownKinds: number[] = [];
  private readonly top = new KeyCache();
  private readonly components = new KeyCache();
  private readonly extras = new KeyCache();
  /** Set when `encode` returns -1. */
  bad: BadField = { field: '', reason: '', value: undefined };
  /** The record's step when it was readable (for the bad_record event), else null. */
  badStep: number | null = null;

  constructor(registrar: ColumnRegistrar, initialSlots = 256) {
    this.registrar = registrar;
    this.slots = new Float64Array(initialSlots);
    registrar.bindScratch(this.slots);
  }

  /** Encodes `record`; returns the number of slots used, or -1 (see `bad`). */
  encode(record: unknown): number {
    this.badStep = null;
    if (record === null || typeof record !== 'object') {
      return this.refuse('record', 'expected an object', record);
    }
    const r = record as Record<string, unknown>;
    const step = r.step;
    if (typeof step !== 'number' || !Number.isInteger(step) || step < 0 || step > MAX_SAFE) {
      return this.refuse('step', step === undefined ? 'missing' : 'expected a non-negative integer', step);
    }
    this.badStep = step;
    const slots = this.slots;
    slots[0] = step;
    slots[1] = NaN;
    let n = 2;
    let i = 0;
    const cache = this.top;
    for (const key in r) {
      const value = r[key];
      if (key === 'step') continue;
      if (value === undefined || value === null) continue;
      if (key === 'timestamp') {
        if (typeof value !== 'number' || !Number.isFinite(value)) {
          return this.refuse('timestamp', 'expected finite Unix seconds', value);
        }
        slots[1] = value;
        continue;
      }
      if (key === 'reward_components' || key === 'extra') {
        n = this.encodeDict(key, value, n);
        if (n < 0) return -1;
        continue;
      }
      let id: number;
      let kind: number;
      if (cache.keys[i] === key) {
        id = cache.ids[i];
        kind = cache.kinds[i];
      } else {
        // a value no column could hold must not create one (names would pile up)
        if (typeof value !== 'number' && key !== 'kl_positional') return this.refuse(key, 'expected a number', value);
        id = this.idOf(key, key);
        if (id < 0) return -1;
        kind = this.knownKinds[id];
        cache.keys[i] = key;
        cache.ids[i] = id;
        cache.kinds[i] = kind;
      }
      i++;
      if (kind === LIST) {
        n = this.encodeList(key, id, value, n);
        if (n < 0) return -1;
        continue;
      }
      if (typeof value !== 'number') return this.refuse(key, 'expected a number', value);
      if (kind === I64 && !(Number.isInteger(value) && Math.abs(value) <= MAX_SAFE)) {
        return this.refuse(key, 'expected an integer count (at most 2^53-1)', value);
      }
      if (n + 2 > slots.length && !this.grow(n + 2)) return this.refuse(key, 'record too large', value);
      this.slots[n] = id;
      this.slots[n + 1] = value;
      n += 2;
    }
    return n;
  }

  private encodeDict(field: 'reward_components' | 'extra', dict: unknown, n: number): number {
    if (typeof dict !== 'object' || Array.isArray(dict)) return this.refuse(field, 'expected an object of numbers', dict);
    const cache = field === 'extra' ? this.extras : this.components;
    const prefix = field === 'extra' ? 'extra.' : 'reward_component.';
    const d = dict as Record<string, unknown>;
    let i = 0;
    for (const key in d) {
      const value = d[key];
      if (value === undefined || value === null) continue;
      let id: number;
      if (cache.keys[i] === key) {
        id = cache.ids[i];
      } else {
        if (typeof value !== 'number') return this.refuse(`${field}.${key}`, 'expected a number', value);
        id = this.idOf(prefix + key, `${field}.${key}`);
        if (id < 0) return -1;
        cache.keys[i] = key;
        cache.ids[i] = id;
        cache.kinds[i] = F64;
      }
      i++;
      if (typeof value !== 'number') return this.refuse(`${field}.${key}`, 'expected a number', value);
      if (n + 2 > this.slots.length && !this.grow(n + 2)) return this.refuse(field, 'record too large', value);
      this.slots[n] = id;
      this.slots[n + 1] = value;
      n += 2;
    }
    return n;
  }

  private encodeList(field: string, id: number, value: unknown, n: number): number {
    if (typeof value !== 'object' || typeof (value as ArrayLike<number>).length !== 'number') {
      return this.refuse(field, 'expected an array of numbers', value);
    }
    const list = value as ArrayLike<unknown>;
    const len = list.length;
    if (!Number.isInteger(len) || len < 0 || len > MAX_LIST_LEN) {
      return this.refuse(field, `expected at most ${MAX_LIST_LEN} numbers`, value);
    }
    if (n + 2 + len > this.slots.length && !this.grow(n + 2 + len)) return this.refuse(field, 'record too large', value);
    const slots = this.slots;
    slots[n] = id;
    slots[n + 1] = len;
    for (let k = 0; k < len; k++) {
      const x = list[k];
      if (typeof x !== 'number') return this.refuse(`${field}[${k}]`, 'expected a number', x);
      slots[n + 2 + k] = x;
    }
    return n + 2 + len;
  }

  /** Slow path: the column id of `key`, registering it natively the first time. */
  private idOf(key: string, fieldForErrors: string): number {
    const known = this.known.get(key);
    if (known !== undefined) return known;
    let reg: { id: number; kind: string };
    try {
      reg = this.registrar.register(key);
    } catch (error) {
      const message = error instanceof Error ? error.message.replace(/^\[RLPROBE_[A-Z_]+\] /, '') : String(error);
      return this.refuse(fieldForErrors, message, undefined);
    }
    this.known.set(key, reg.id);
    this.knownKinds[reg.id] = reg.kind === 'list_f64' ? LIST : reg.kind === 'i64' ? I64 : F64;
    return reg.id;
  }

  private grow(needed: number): boolean {
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
