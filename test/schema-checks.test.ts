/**
 * The hand-written checks that keep zod off the reader's common path (ts/schema/
 * manifest-check.ts, event-check.ts, ts/reader/query-parse.ts) against the zod schemas they
 * stand in front of: a check may pass a value on to zod, but what it vouches for zod must
 * accept, yielding the very same object (keys in the same order: `probe info --json` prints
 * the manifest as parsed). Tables of good and bad values, then seeded random mutations.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import type { z } from 'zod';

import { RunReader } from '../ts/index.js';
import { SampleQuerySchema } from '../ts/reader/sample-query.js';
import { SpanQuerySchema } from '../ts/reader/span-query.js';
import { TrialQuerySchema } from '../ts/reader/trial-query.js';
import { parseQuery } from '../ts/reader/query-parse.js';
import { RunEventSchema } from '../ts/schema/event.js';
import { EVENT_KEYS, acceptRunEvent, parseRunEvent } from '../ts/schema/event-check.js';
import { RunManifestSchema } from '../ts/schema/manifest.js';
import { MANIFEST_KEYS, acceptRunManifest, parseRunManifest } from '../ts/schema/manifest-check.js';
import { cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { throwsCode } from './helpers/errors.js';
import { prng } from './helpers/prng.js';

after(cleanupTempDirs);

/** An own `key` as JSON.parse makes it (plain assignment of `__proto__` would set the prototype). */
function withOwn<T extends object>(o: T, key: string, value: unknown): T {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  return o;
}

/**
 * The invariant: when `check` vouches for `value`, `schema` accepts it and yields the same
 * object, key order included. Returns whether the check vouched.
 */
function assertVouchesOnlyForSchema(check: (v: unknown) => unknown, schema: z.ZodType, value: unknown, what: string): boolean {
  const fast = check(value);
  if (fast === null) return false;
  const parsed = schema.safeParse(value);
  assert.ok(parsed.success, `${what}: the check vouched for what the schema rejects (${parsed.success ? '' : parsed.error.issues[0].message}): ${show(value)}`);
  assert.deepStrictEqual(fast, parsed.data, `${what}: ${show(value)}`);
  assert.equal(JSON.stringify(fast), JSON.stringify(parsed.data), `${what}: key order differs for ${show(value)}`);
  return true;
}

function show(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (x === undefined ? '<undefined>' : typeof x === 'bigint' ? `${x}n` : x)) ?? String(v);
  } catch {
    return String(v);
  }
}


/** JSON values of every kind, the edges of the number checks among them. */
function randomJson(rand: () => number, depth = 0): unknown {
  const scalars: unknown[] = [null, true, false, 0, -0, 1, 2, 7, -1, 1.5, -0.25, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1e308, '', 'x', '1', 'null', 'grpo'];
  const r = rand();
  if (depth > 2 || r < 0.6) return scalars[Math.floor(rand() * scalars.length)];
  if (r < 0.75) return Array.from({ length: Math.floor(rand() * 3) }, () => randomJson(rand, depth + 1));
  const o: Record<string, unknown> = {};
  const keys = ['a', 'lr', '0', '10', 'constructor', '__proto__', 'toString', 'nested'];
  for (let i = Math.floor(rand() * 4); i > 0; i--) withOwn(o, keys[Math.floor(rand() * keys.length)], randomJson(rand, depth + 1));
  return o;
}

/**
 * Random mutations of `base` (keys removed, set to any JSON value, unknown keys added, the
 * whole replaced), each through JSON as a file would be: the check must never vouch wrongly,
 * and must vouch for every one the schema accepts (so a valid file never loads zod).
 */
function mutationRound(base: Record<string, unknown>, keys: readonly string[], check: (v: unknown) => unknown, schema: z.ZodType, seed: number, rounds: number) {
  const rand = prng(seed);
  const names = [...keys, 'zz_new', '0', '__proto__', 'constructor', 'toString', 'valueOf'];
  let vouched = 0;
  let rejected = 0;
  for (let i = 0; i < rounds; i++) {
    let v: unknown = structuredClone(base);
    if (rand() < 0.04) v = randomJson(rand);
    else {
      const o = v as Record<string, unknown>;
      for (let ops = 1 + Math.floor(rand() * 3); ops > 0; ops--) {
        const key = names[Math.floor(rand() * names.length)];
        if (rand() < 0.3) delete o[key];
        else withOwn(o, key, randomJson(rand));
      }
    }
    const json: unknown = JSON.parse(JSON.stringify(v) ?? 'null');
    const ok = assertVouchesOnlyForSchema(check, schema, json, `mutation ${i}`);
    const accepted = schema.safeParse(json).success;
    assert.equal(ok, accepted, `mutation ${i}: the schema ${accepted ? 'accepts' : 'rejects'} ${show(json)} but the check ${ok ? 'vouched' : 'did not vouch'}`);
    if (ok) vouched++;
    else rejected++;
  }
  return { vouched, rejected };
}

// ---- manifest.json

const MINIMAL = { schema_version: 1, run_id: 'r', created_at: '2024-01-02T03:04:05.000Z', algorithm: 'grpo' };
const FULL = {
  schema_version: 1,
  run_id: 'r-1',
  created_at: '2024-01-02T03:04:05.000Z',
  algorithm: 'grpo',
  model_name: 'qwen2.5-7b',
  world_size: 8,
  trainer_config: { lr: 1e-6, kl: { coef: 0.04 }, tags: ['a'] },
  environment: { python: '3.11', torch: null },
  notes: 'first try',
  extra: { team: 'rl', '0': 'zero' },
};

const STRING_FIELDS = ['run_id', 'created_at', 'algorithm'] as const;
const NULLABLE_FIELDS = ['model_name', 'notes'] as const;
const INT_FIELDS = ['schema_version', 'world_size'] as const;
const RECORD_FIELDS = ['trainer_config', 'environment', 'extra'] as const;

/** Every field set to each value of the wrong kind for it, every required key left out. */
function badManifests(): Array<[string, unknown]> {
  const bad: Array<[string, unknown]> = [];
  for (const f of STRING_FIELDS) for (const v of [1, null, true, [], {}]) bad.push([`${f} ${show(v)}`, { ...FULL, [f]: v }]);
  for (const f of NULLABLE_FIELDS) for (const v of [1, false, [], {}]) bad.push([`${f} ${show(v)}`, { ...FULL, [f]: v }]);
  for (const f of INT_FIELDS) for (const v of [0, -1, 1.5, 2 ** 53, '1', null, true, [], {}]) bad.push([`${f} ${show(v)}`, { ...FULL, [f]: v }]);
  for (const f of RECORD_FIELDS) for (const v of [null, [], [1], 'x', 1, true]) bad.push([`${f} ${show(v)}`, { ...FULL, [f]: v }]);
  for (const f of [...STRING_FIELDS, 'schema_version']) {
    const { [f]: _gone, ...rest } = FULL as Record<string, unknown>;
    bad.push([`no ${f}`, rest]);
  }
  for (const v of [null, [], [FULL], 1, 'manifest', true]) bad.push([`not an object: ${show(v)}`, v]);
  return bad;
}

describe('manifest.json: the hand-written check and RunManifestSchema', () => {
  test('the check knows the schema\'s keys, in its order', () => {
    assert.deepEqual([...MANIFEST_KEYS], Object.keys(RunManifestSchema.shape));
  });

  test('good manifests: vouched for, as the schema yields them (defaults, unknown keys kept after the known ones)', () => {
    const good: Array<[string, unknown]> = [
      ['minimal', MINIMAL],
      ['full', FULL],
      ['nulls', { ...MINIMAL, model_name: null, notes: null }],
      ['unknown keys first', { zz: 1, '7': [1], ...MINIMAL, extra: {} }],
      ['a newer tool\'s keys', { ...FULL, resumed_from: 'r-0', tags: ['x'] }],
      ['__proto__ and constructor keys, as JSON.parse makes them', JSON.parse('{"schema_version":1,"run_id":"r","created_at":"t","algorithm":"a","__proto__":{"x":1},"constructor":"c","extra":{"__proto__":{"y":2},"constructor":1}}')],
      ['world_size 2^53 − 1', { ...MINIMAL, world_size: 2 ** 53 - 1 }],
    ];
    for (const [what, m] of good) {
      assert.ok(assertVouchesOnlyForSchema(acceptRunManifest, RunManifestSchema, m, what), `${what}: not vouched for`);
    }
    const m = acceptRunManifest(MINIMAL);
    assert.deepEqual(m, { ...MINIMAL, world_size: 1, trainer_config: {}, environment: {}, extra: {} });
    // each default its own object, as zod's
    assert.notEqual(acceptRunManifest(MINIMAL)?.extra, m?.extra);
  });

  test('bad manifests (each field of the wrong kind, a required key missing, not an object): never vouched for', () => {
    const bad = badManifests();
    assert.ok(bad.length > 60);
    for (const [what, m] of bad) {
      assert.equal(acceptRunManifest(m), null, `${what}: vouched for`);
      assert.equal(RunManifestSchema.safeParse(m).success, false, `${what}: the schema accepts it (fix the table)`);
    }
  });

  test('parseRunManifest gives the schema\'s verdict and its first issue, for anything', () => {
    const odd: Array<[string, unknown]> = [
      // not from JSON (a migration could return them): the schema decides
      ['model_name undefined', { ...MINIMAL, model_name: undefined }],
      ['world_size undefined', { ...MINIMAL, world_size: undefined }],
      ['extra undefined', { ...MINIMAL, extra: undefined }],
      ['an unknown key undefined', { ...MINIMAL, later: undefined }],
      ['a null-prototype manifest', Object.assign(Object.create(null), MINIMAL)],
      ['a class instance', Object.assign(new (class Manifest {})(), MINIMAL)],
      ['a symbol key in extra', { ...MINIMAL, extra: { [Symbol('s')]: 1 } }],
      ['world_size Infinity', { ...MINIMAL, world_size: Infinity }],
      ['world_size NaN', { ...MINIMAL, world_size: NaN }],
      ['schema_version 1n', { ...MINIMAL, schema_version: 1n }],
      ['a Date as extra', { ...MINIMAL, extra: new Date(0) }],
    ];
    for (const [what, m] of [...odd, ...badManifests(), ['full', FULL] as [string, unknown]]) {
      assertVouchesOnlyForSchema(acceptRunManifest, RunManifestSchema, m, what);
      const parsed = RunManifestSchema.safeParse(m);
      const ours = parseRunManifest(m);
      if (parsed.success) assert.deepStrictEqual(ours, { ok: true, manifest: parsed.data }, what);
      else assert.deepStrictEqual(ours, { ok: false, field: parsed.error.issues[0].path.map(String).join('.'), message: parsed.error.issues[0].message }, what);
    }
  });

  test('RunReader.open names the file, the field and the schema\'s message', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...FULL, world_size: 0 }, 'world_size: Too small: expected number to be >=1'],
      [{ ...FULL, world_size: 1.5 }, 'world_size: Invalid input: expected int, received number'],
      [{ ...FULL, model_name: 3 }, 'model_name: Invalid input: expected string, received number'],
      [{ ...FULL, extra: [] }, 'extra: Invalid input: expected record, received array'],
      [(({ algorithm: _a, ...rest }) => rest)(FULL), 'algorithm: Invalid input: expected string, received undefined'],
    ];
    for (const [m, message] of cases) {
      const dir = tempDir();
      const file = path.join(dir, 'manifest.json');
      writeFileSync(file, JSON.stringify(m));
      const e = throwsCode(() => RunReader.open(dir), 'RLPROBE_BAD_MANIFEST');
      assert.equal(e.message, `${file}: ${message}`);
    }
    const dir = tempDir();
    writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ zz: 1, ...FULL }));
    assert.equal(JSON.stringify(RunReader.open(dir).manifest), JSON.stringify(RunManifestSchema.parse({ zz: 1, ...FULL })));
  });

  test('random mutations: vouched for exactly when the schema accepts, with the same result', () => {
    const { vouched, rejected } = mutationRound(FULL, MANIFEST_KEYS, acceptRunManifest, RunManifestSchema, 21, 4000);
    // both sides well exercised, or the round proves nothing
    assert.ok(vouched > 400 && rejected > 400, `vouched ${vouched}, rejected ${rejected}`);
  });
});

// ---- events.jsonl

const EVENT = { timestamp: 1733000000.123, kind: 'recorder_drops', step: 12, rank: 0, message: 'dropped 3', data: { count: 3, record: 'step', reason: 'queue_full' } };

describe('events.jsonl lines: the hand-written check and RunEventSchema', () => {
  test('the check knows the schema\'s keys, in its order', () => {
    assert.deepEqual([...EVENT_KEYS], Object.keys(RunEventSchema.shape));
  });

  test('good events vouched for as the schema yields them; bad ones never', () => {
    const good: unknown[] = [
      EVENT,
      { timestamp: 0, kind: 'k' },
      { timestamp: -1.5, kind: '', step: null, extra_key: [1], data: {} },
      { host: 'h', timestamp: 1, kind: 'crash', message: 'm', step: 2 ** 53 - 1, rank: -3 },
      JSON.parse('{"timestamp":1,"kind":"k","__proto__":{"x":1},"data":{"__proto__":1,"constructor":2}}'),
    ];
    for (const e of good) assert.ok(assertVouchesOnlyForSchema(acceptRunEvent, RunEventSchema, e, show(e)), `not vouched for: ${show(e)}`);
    const bad: unknown[] = [null, [], 'line', 3, { kind: 'k' }, { timestamp: 1 }];
    for (const v of ['1', null, true, [], {}]) bad.push({ ...EVENT, timestamp: v });
    for (const v of [1, null, true, [], {}]) bad.push({ ...EVENT, kind: v });
    for (const v of [1.5, '1', true, [], {}, 2 ** 53]) bad.push({ ...EVENT, step: v });
    for (const v of [1.5, '1', null, true, [], {}, 2 ** 53]) bad.push({ ...EVENT, rank: v });
    for (const v of [1, null, true, [], {}]) bad.push({ ...EVENT, message: v });
    for (const v of [null, [], 'x', 1, true]) bad.push({ ...EVENT, data: v });
    for (const e of bad) {
      assert.equal(acceptRunEvent(e), null, `vouched for: ${show(e)}`);
      assert.equal(RunEventSchema.safeParse(e).success, false, `the schema accepts ${show(e)} (fix the table)`);
      assert.equal(parseRunEvent(e), null);
    }
    // what the check leaves to the schema, the schema decides
    for (const e of [{ ...EVENT, step: undefined }, { ...EVENT, data: undefined, message: undefined }, Object.assign(Object.create(null), EVENT)]) {
      const parsed = RunEventSchema.safeParse(e);
      assert.ok(parsed.success);
      assert.deepStrictEqual(parseRunEvent(e), parsed.data);
    }
  });

  test('random mutations: vouched for exactly when the schema accepts, with the same result', () => {
    const { vouched, rejected } = mutationRound(EVENT, EVENT_KEYS, acceptRunEvent, RunEventSchema, 2101, 4000);
    assert.ok(vouched > 400 && rejected > 400, `vouched ${vouched}, rejected ${rejected}`);
  });
});

// ---- reader queries

describe('reader queries: the empty query without zod, any other through the schema', () => {
  const schemas: Array<[string, z.ZodType]> = [
    ['sample filter', SampleQuerySchema],
    ['span filter', SpanQuerySchema],
    ['trials', TrialQuerySchema],
  ];

  test('{} is each schema\'s empty query (every filter optional, none defaulted)', () => {
    for (const [what, schema] of schemas) {
      const parsed = schema.safeParse({});
      assert.ok(parsed.success, what);
      assert.deepStrictEqual(parsed.data, {}, what);
      let loaded = false;
      assert.deepStrictEqual(parseQuery(() => ((loaded = true), schema), what, {}), {});
      assert.equal(loaded, false, `${what}: the schema was loaded for an empty query`);
    }
  });

  test('anything else is the schema\'s: its result, or its error naming the filter and the value', () => {
    const queries: unknown[] = [{ step: 3 }, { step: -1 }, { nope: 1 }, { stepRange: [2, 1] }, null, [], 'x', Object.create({ step: 1 }), Object.assign(Object.create(null), { step: 2 })];
    for (const [what, schema] of schemas) {
      for (const q of queries) {
        let loaded = false;
        const parse = () => parseQuery(() => ((loaded = true), schema), what, q);
        const parsed = schema.safeParse(q);
        if (parsed.success) assert.deepStrictEqual(parse(), parsed.data, `${what} ${show(q)}`);
        else throwsCode(parse, 'RLPROBE_INVALID_QUERY', new RegExp(`^invalid ${what} `));
        assert.equal(loaded, true, `${what} ${show(q)}: decided without the schema`);
      }
    }
  });
});
