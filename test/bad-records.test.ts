/**
 * Malformed step records: logStep never throws, each one is counted as bad exactly once and
 * gets exactly one bounded `bad_record` event naming the field, and the valid records
 * interleaved with them are all recorded intact.
 *
 * The property test generates ≥10,000 malformed records (fast-check; the seed is printed on
 * failure). Cases that currently break the contract have their own tests further down.
 *
 * The same contract for `logEvent` (every call written, or refused with one bad_record event
 * and counted in `eventsBad`) and for whole `logSamples` calls (a length over the limit is
 * refused before any sample is read, counted in `sampleCallsBad`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { TestContext } from 'node:test';

import fc from 'fast-check';

import { RunReader, STEP_FIELDS } from '../ts/index.js';
import type { Recorder } from '../ts/index.js';
import { MAX_EVENT_DATA_CHARS, MAX_EVENT_MESSAGE_CHARS, MAX_SAMPLES_PER_CALL } from '../ts/recorder/limits.js';
import { openRun } from './helpers/run-dir.js';

/** One multi-MB string, shared by every case that needs one. */
const HUGE = 'x'.repeat(4 << 20);
/** No event line may come near the size of the offending value. */
const MAX_EVENT_LINE = 4096;
const MALFORMED_RUNS = 10_000;
/** Malformed records whose step itself is fine use steps from here (never on disk). */
const BAD_STEP_BASE = 1_000_000_000_000;

const SCALAR_FIELDS = STEP_FIELDS.filter((f) => f !== 'kl_positional' && f !== 'nan_count' && f !== 'inf_count');

// ---- bad values, described by a tag (printable counterexamples), built lazily

const BAD_VALUE_TAGS = ['string', 'numericString', 'huge', 'true', 'false', 'bigint', 'symbol', 'function', 'object', 'array', 'date', 'boxedNumber'] as const;
type BadValueTag = (typeof BAD_VALUE_TAGS)[number];

function badValue(tag: BadValueTag): unknown {
  switch (tag) {
    case 'string': return 'not a number';
    case 'numericString': return '1.5';
    case 'huge': return HUGE;
    case 'true': return true;
    case 'false': return false;
    case 'bigint': return 12345678901234567890n;
    case 'symbol': return Symbol('metric');
    case 'function': return () => 1;
    case 'object': return { value: 1 };
    case 'array': return [1, 2, 3];
    case 'date': return new Date(0);
    case 'boxedNumber': return new Number(1);
  }
}
const badValueTag = fc.constantFrom(...BAD_VALUE_TAGS);

// ---- malformed record descriptors

type Thrown = 'error' | 'string' | 'number' | 'null' | 'undefined';
function thrownValue(kind: Thrown): unknown {
  switch (kind) {
    case 'error': return new Error('getter exploded');
    case 'string': return 'a thrown string';
    case 'number': return 42;
    case 'null': return null;
    case 'undefined': return undefined;
  }
}

type Bad =
  | { kind: 'missingStep'; explicitUndefined: boolean }
  | { kind: 'badStep'; step: number | 'nan' | 'inf' | '-inf' | 'tooBig' | 'null' | BadValueTag }
  | { kind: 'badKnown'; field: string; v: BadValueTag }
  | { kind: 'badUnknownTop'; name: string; v: BadValueTag }
  | { kind: 'badDictValue'; dict: 'reward_components' | 'extra'; name: string; v: BadValueTag }
  | { kind: 'dictNotObject'; dict: 'reward_components' | 'extra'; v: BadValueTag | 'number' }
  | { kind: 'badListItem'; len: number; at: number; v: BadValueTag | 'null' | 'undefined' }
  | { kind: 'listNotList'; v: 'number' | 'string' | 'huge' | 'true' | 'bigint' | 'symbol' | 'function' | 'noLength' | 'tooLong' | 'negativeLength' }
  | { kind: 'badCount'; field: 'nan_count' | 'inf_count'; v: number | 'nan' | 'inf' | '-inf' | BadValueTag }
  | { kind: 'badTimestamp'; v: 'nan' | 'inf' | '-inf' | BadValueTag }
  | { kind: 'throwingGetter'; at: 'step' | 'loss' | 'extraEntry' | 'componentsDict' | 'klList' | 'klLength'; thrown: Thrown }
  | { kind: 'throwingProxy'; where: 'record' | 'extra' | 'reward_components'; trap: 'get' | 'ownKeys' | 'getOwnPropertyDescriptor' | 'getPrototypeOf' }
  | { kind: 'throwingListProxy' }
  | { kind: 'cycle'; where: 'extra' | 'reward_components' | 'kl_positional' }
  | { kind: 'arrayRecord'; len: number }
  | { kind: 'primitiveRecord'; v: 'null' | 'undefined' | 'number' | 'nan' | BadValueTag }
  | { kind: 'registryRefuses'; which: 'rank' | 'emptyExtraName' | 'emptyComponentName' | 'bareExtraPrefix' };

const names = fc.constantFrom('format', 'correctness', 'a.b.c', 'ünï-códe', '日本');

const badArb: fc.Arbitrary<Bad> = fc.oneof(
  fc.record({ kind: fc.constant('missingStep' as const), explicitUndefined: fc.boolean() }),
  fc.record({
    kind: fc.constant('badStep' as const),
    step: fc.oneof(
      fc.integer({ min: -1_000_000_000, max: -1 }),
      fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
      fc.constantFrom('nan' as const, 'inf' as const, '-inf' as const, 'tooBig' as const, 'null' as const),
      badValueTag,
    ),
  }),
  fc.record({ kind: fc.constant('badKnown' as const), field: fc.constantFrom(...SCALAR_FIELDS), v: badValueTag }),
  fc.record({ kind: fc.constant('badUnknownTop' as const), name: fc.constantFrom('custom_metric', 'my.metric', 'ünï'), v: badValueTag }),
  fc.record({ kind: fc.constant('badDictValue' as const), dict: fc.constantFrom('reward_components' as const, 'extra' as const), name: names, v: badValueTag }),
  fc.record({
    kind: fc.constant('dictNotObject' as const),
    dict: fc.constantFrom('reward_components' as const, 'extra' as const),
    v: fc.constantFrom('number' as const, 'string' as const, 'huge' as const, 'true' as const, 'bigint' as const, 'symbol' as const, 'function' as const, 'array' as const),
  }),
  fc
    .record({ kind: fc.constant('badListItem' as const), len: fc.integer({ min: 1, max: 40 }), at: fc.nat(), v: fc.oneof(badValueTag, fc.constantFrom('null' as const, 'undefined' as const)) })
    .map((b) => ({ ...b, at: b.at % b.len })),
  fc.record({
    kind: fc.constant('listNotList' as const),
    v: fc.constantFrom('number' as const, 'string' as const, 'huge' as const, 'true' as const, 'bigint' as const, 'symbol' as const, 'function' as const, 'noLength' as const, 'tooLong' as const, 'negativeLength' as const),
  }),
  fc.record({
    kind: fc.constant('badCount' as const),
    field: fc.constantFrom('nan_count' as const, 'inf_count' as const),
    v: fc.oneof(
      fc.double({ min: -1e9, max: 1e9, noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
      fc.constantFrom('nan' as const, 'inf' as const, '-inf' as const),
      badValueTag,
    ),
  }),
  fc.record({ kind: fc.constant('badTimestamp' as const), v: fc.oneof(fc.constantFrom('nan' as const, 'inf' as const, '-inf' as const), badValueTag) }),
  fc.record({
    kind: fc.constant('throwingGetter' as const),
    at: fc.constantFrom('step' as const, 'loss' as const, 'extraEntry' as const, 'componentsDict' as const, 'klList' as const, 'klLength' as const),
    thrown: fc.constantFrom('error' as const, 'string' as const, 'number' as const, 'null' as const, 'undefined' as const),
  }),
  fc.record({
    kind: fc.constant('throwingProxy' as const),
    where: fc.constantFrom('record' as const, 'extra' as const, 'reward_components' as const),
    trap: fc.constantFrom('get' as const, 'ownKeys' as const, 'getOwnPropertyDescriptor' as const, 'getPrototypeOf' as const),
  }),
  fc.constant({ kind: 'throwingListProxy' as const }),
  fc.record({ kind: fc.constant('cycle' as const), where: fc.constantFrom('extra' as const, 'reward_components' as const, 'kl_positional' as const) }),
  fc.record({ kind: fc.constant('arrayRecord' as const), len: fc.integer({ min: 0, max: 5 }) }),
  fc.record({
    kind: fc.constant('primitiveRecord' as const),
    v: fc.oneof(fc.constantFrom('null' as const, 'undefined' as const, 'number' as const, 'nan' as const), badValueTag.filter((t) => t !== 'object' && t !== 'array' && t !== 'date' && t !== 'boxedNumber')),
  }),
  fc.record({ kind: fc.constant('registryRefuses' as const), which: fc.constantFrom('rank' as const, 'emptyExtraName' as const, 'emptyComponentName' as const, 'bareExtraPrefix' as const) }),
);

interface Built {
  record: unknown;
  /** Acceptable values of the event's data.field (the first is the precise one). */
  fields: string[];
  /** The event's step: a number, null, or undefined for "either". */
  step: number | null | undefined;
}

function special(v: 'nan' | 'inf' | '-inf'): number {
  return v === 'nan' ? NaN : v === 'inf' ? Infinity : -Infinity;
}

function throwing(kind: Thrown): () => never {
  return () => {
    throw thrownValue(kind);
  };
}

/** Builds the malformed record for `b`; `step` is the step to use where the step is fine. */
function build(b: Bad, step: number): Built {
  switch (b.kind) {
    case 'missingStep':
      return { record: b.explicitUndefined ? { step: undefined, loss: 1 } : { loss: 1, extra: { a: 1 } }, fields: ['step'], step: null };
    case 'badStep': {
      const s = typeof b.step === 'number' ? b.step
        : b.step === 'nan' || b.step === 'inf' || b.step === '-inf' ? special(b.step)
        : b.step === 'tooBig' ? 2 ** 53
        : b.step === 'null' ? null
        : badValue(b.step);
      return { record: { step: s, loss: 0.5 }, fields: ['step'], step: null };
    }
    case 'badKnown':
      return { record: { step, loss: 1, [b.field]: badValue(b.v) }, fields: [b.field], step };
    case 'badUnknownTop':
      return { record: { step, [b.name]: badValue(b.v) }, fields: [b.name], step };
    case 'badDictValue':
      return { record: { step, loss: 2, [b.dict]: { ok: 1, [b.name]: badValue(b.v) } }, fields: [`${b.dict}.${b.name}`], step };
    case 'dictNotObject':
      return { record: { step, [b.dict]: b.v === 'number' ? 3 : badValue(b.v) }, fields: [b.dict], step };
    case 'badListItem': {
      const list: unknown[] = Array.from({ length: b.len }, (_, k) => k / 4);
      list[b.at] = b.v === 'null' ? null : b.v === 'undefined' ? undefined : badValue(b.v);
      return { record: { step, kl_positional: list }, fields: [`kl_positional[${b.at}]`], step };
    }
    case 'listNotList': {
      const v = b.v === 'number' ? 7
        : b.v === 'noLength' ? { 0: 1, 1: 2 }
        : b.v === 'tooLong' ? { length: 70_000 }
        : b.v === 'negativeLength' ? { length: -1 }
        : badValue(b.v);
      return { record: { step, kl_positional: v }, fields: ['kl_positional'], step };
    }
    case 'badCount': {
      const v = typeof b.v === 'number' ? b.v : b.v === 'nan' || b.v === 'inf' || b.v === '-inf' ? special(b.v) : badValue(b.v);
      return { record: { step, loss: 1, [b.field]: v }, fields: [b.field], step };
    }
    case 'badTimestamp': {
      const v = b.v === 'nan' || b.v === 'inf' || b.v === '-inf' ? special(b.v) : badValue(b.v);
      return { record: { step, timestamp: v, loss: 1 }, fields: ['timestamp'], step };
    }
    case 'throwingGetter': {
      const t = throwing(b.thrown);
      switch (b.at) {
        case 'step':
          return { record: Object.defineProperty({ loss: 1 }, 'step', { get: t, enumerable: true }), fields: ['record', 'step'], step: null };
        case 'loss':
          return { record: Object.defineProperty({ step }, 'loss', { get: t, enumerable: true }), fields: ['record', 'loss'], step: undefined };
        case 'extraEntry':
          return { record: { step, extra: Object.defineProperty({ a: 1 }, 'boom', { get: t, enumerable: true }) }, fields: ['record', 'extra.boom'], step: undefined };
        case 'componentsDict':
          return { record: Object.defineProperty({ step }, 'reward_components', { get: t, enumerable: true }), fields: ['record', 'reward_components'], step: undefined };
        case 'klList':
          return { record: Object.defineProperty({ step }, 'kl_positional', { get: t, enumerable: true }), fields: ['record', 'kl_positional'], step: undefined };
        case 'klLength':
          return { record: { step, kl_positional: Object.defineProperty({}, 'length', { get: t }) }, fields: ['record', 'kl_positional'], step: undefined };
      }
      throw new Error('unreachable');
    }
    case 'throwingProxy': {
      const target = b.where === 'record' ? { step, loss: 1 } : { a: 1, b: 2 };
      const proxy = new Proxy(target, { [b.trap]: throwing('error') });
      const record = b.where === 'record' ? proxy : { step, [b.where]: proxy };
      return { record, fields: ['record', b.where], step: undefined };
    }
    case 'throwingListProxy':
      return { record: { step, kl_positional: new Proxy([1, 2, 3], { get: throwing('error') }) }, fields: ['record', 'kl_positional'], step: undefined };
    case 'cycle': {
      if (b.where === 'kl_positional') {
        const list: unknown[] = [0.5];
        list.push(list);
        return { record: { step, kl_positional: list }, fields: ['kl_positional[1]'], step };
      }
      const record: Record<string, unknown> = { step, loss: 1 };
      record[b.where] = record; // record.extra = record: its `extra` entry is not a number
      return { record, fields: [`${b.where}.${b.where}`], step };
    }
    case 'arrayRecord':
      return { record: Array.from({ length: b.len }, (_, k) => k), fields: ['step'], step: null };
    case 'primitiveRecord': {
      const v = b.v === 'null' ? null : b.v === 'undefined' ? undefined : b.v === 'number' ? 5 : b.v === 'nan' ? NaN : badValue(b.v);
      return { record: v, fields: ['record'], step: null };
    }
    case 'registryRefuses': {
      switch (b.which) {
        case 'rank': return { record: { step, rank: 3 }, fields: ['rank'], step };
        case 'emptyExtraName': return { record: { step, extra: { '': 1 } }, fields: ['extra.'], step };
        case 'emptyComponentName': return { record: { step, reward_components: { '': 1 } }, fields: ['reward_components.'], step };
        case 'bareExtraPrefix': return { record: { step, 'extra.': 1 }, fields: ['extra.'], step };
      }
    }
  }
}

// ---- valid records

interface Valid {
  loss: number | null;
  kl: number[] | null;
  nanCount: number | null;
  format: number;
  gpu: number | null;
}

const validArb: fc.Arbitrary<Valid> = fc.record({
  loss: fc.option(fc.double(), { nil: null }),
  kl: fc.option(fc.array(fc.double(), { maxLength: 8 }), { nil: null }),
  nanCount: fc.option(fc.nat(), { nil: null }),
  format: fc.double(),
  gpu: fc.option(fc.double(), { nil: null }),
});

function validRecord(v: Valid, step: number): Record<string, unknown> {
  return { step, loss: v.loss, kl_positional: v.kl, nan_count: v.nanCount, reward_components: { format: v.format }, extra: { 'gpu.mem': v.gpu } };
}

function logAndCheck(rec: Recorder, record: unknown, malformed: boolean, what: string): void {
  const before = rec.counters;
  assert.doesNotThrow(() => rec.logStep(record as never), `logStep threw for ${what}`);
  const after = rec.counters;
  assert.equal(after.logged, before.logged + 1, `${what}: counted as logged once`);
  assert.equal(after.bad, before.bad + (malformed ? 1 : 0), `${what}: counted as bad ${malformed ? 'once' : 'never'}`);
}

function eventLines(dir: string): string[] {
  return readFileSync(path.join(dir, 'events.jsonl'), 'utf8').split('\n').filter((l) => l.length > 0);
}

test(`${MALFORMED_RUNS} malformed records interleaved with valid ones: counted, reported, bounded`, (t) => {
  const { dir, rec } = openRun(t, 'bad', { queueCapacity: 1 << 16, flushSteps: 1000 });
  const expected: Built[] = [];
  const valid = new Map<number, Valid>();
  let nextValidStep = 0;
  let nextBadStep = BAD_STEP_BASE;

  fc.assert(
    fc.property(badArb, fc.option(validArb, { nil: null }), fc.boolean(), (bad, good, goodFirst) => {
      const logGood = () => {
        if (good === null) return;
        const step = nextValidStep++;
        valid.set(step, good);
        logAndCheck(rec, validRecord(good, step), false, `valid record ${JSON.stringify(good)}`);
      };
      if (goodFirst) logGood();
      const built = build(bad, nextBadStep++);
      logAndCheck(rec, built.record, true, `malformed ${JSON.stringify(bad)}`);
      expected.push(built);
      if (!goodFirst) logGood();
    }),
    { numRuns: MALFORMED_RUNS },
  );
  assert.equal(expected.length, MALFORMED_RUNS);

  assert.equal(rec.flushSync(30_000), true, 'flushSync finished');
  const flushed = rec.counters;
  assert.equal(flushed.bad, MALFORMED_RUNS, 'bad == number of malformed records');
  assert.equal(flushed.written, valid.size, 'every valid record written');
  assert.equal(flushed.dropped, 0, 'the queue was large enough');
  assert.equal(flushed.pending, 0);
  assert.equal(flushed.written + flushed.dropped + flushed.bad, flushed.logged);
  assert.equal(flushed.eventsDropped, 0);

  const summary = rec.close();
  const c = summary.counters;
  assert.equal(summary.error, null);
  assert.equal(c.logged, MALFORMED_RUNS + valid.size);
  assert.equal(c.bad, MALFORMED_RUNS);
  assert.equal(c.written + c.dropped + c.bad, c.logged);

  // events: exactly one bad_record per malformed record, in logging order, each naming its field
  const lines = eventLines(dir);
  const tooBig = lines.filter((l) => Buffer.byteLength(l) > MAX_EVENT_LINE);
  assert.equal(tooBig.length, 0, `event lines over ${MAX_EVENT_LINE} bytes: ${tooBig.map((l) => `${l.length}: ${l.slice(0, 200)}`).join('\n')}`);
  const parsed = lines.map((l) => JSON.parse(l) as { kind: string; step: number | null; message: string; data: Record<string, unknown> });
  const badEvents = parsed.filter((e) => e.kind === 'bad_record');
  assert.equal(badEvents.length, MALFORMED_RUNS, 'one bad_record event per malformed record');
  const reader = RunReader.open(dir);
  const { events, skippedLines } = reader.eventsWithDiagnostics();
  assert.equal(skippedLines, 0);
  assert.equal(events.filter((e) => e.kind === 'bad_record').length, MALFORMED_RUNS);

  badEvents.forEach((e, i) => {
    const want = expected[i];
    const field = e.data.field;
    assert.equal(typeof field, 'string', `event ${i}: data.field`);
    assert.ok(want.fields.includes(field as string), `event ${i}: data.field ${JSON.stringify(field)}, expected one of ${JSON.stringify(want.fields)}`);
    assert.ok(e.message.includes(field as string), `event ${i}: message names the field: ${e.message}`);
    assert.equal(typeof e.data.reason, 'string');
    assert.ok((e.data.reason as string).length > 0, `event ${i}: a reason`);
    if (want.step !== undefined) assert.equal(e.step, want.step, `event ${i} (${field}): step`);
  });

  // steps: every valid record, intact; none of the malformed ones
  const steps = reader.steps();
  assert.equal(steps.length, valid.size);
  const seen = new Set<number>();
  for (const s of steps) {
    assert.ok(s.step < BAD_STEP_BASE, `a malformed record reached the steps: ${s.step}`);
    assert.ok(!seen.has(s.step), `step ${s.step} twice`);
    seen.add(s.step);
    const v = valid.get(s.step);
    assert.ok(v, `unexpected step ${s.step}`);
    assert.ok(Object.is(s.loss, v.loss ?? undefined), `step ${s.step} loss ${s.loss} vs ${v.loss}`);
    assert.equal(s.nan_count, v.nanCount ?? undefined, `step ${s.step} nan_count`);
    assert.ok(Object.is(s.reward_components?.format, v.format), `step ${s.step} reward_components.format`);
    assert.ok(Object.is(s.extra?.['gpu.mem'], v.gpu ?? undefined), `step ${s.step} extra.gpu.mem`);
    if (v.kl === null) assert.equal(s.kl_positional, undefined);
    else assert.deepStrictEqual(s.kl_positional, v.kl, `step ${s.step} kl_positional`);
  }
  assert.equal(seen.size, valid.size);
});

// ---- cases that break the contract today (each is a bug; see the report)

function runOne(t: TestContext, label: string, record: () => unknown) {
  const { dir, rec } = openRun(t, label);
  let threw: unknown = null;
  try {
    rec.logStep(record() as never);
  } catch (error) {
    threw = error;
  }
  rec.logStep({ step: 0, loss: 1 }); // a valid neighbour still goes through
  const summary = rec.close();
  const lines = eventLines(dir);
  const bad = lines.map((l) => JSON.parse(l)).filter((e) => e.kind === 'bad_record');
  return { threw, counters: summary.counters, lines, bad, steps: RunReader.open(dir).steps() };
}

test('a revoked Proxy as a field value or list item is counted as bad, not silently lost', async (t) => {
  const revoked = () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    return r.proxy;
  };
  const cases: Array<[string, () => unknown, string]> = [
    ['top-level value', () => ({ step: 1, loss: revoked() }), 'loss'],
    ['reward component value', () => ({ step: 1, reward_components: { format: revoked() } }), 'reward_components.format'],
    ['kl_positional item', () => ({ step: 1, kl_positional: [0.5, revoked()] }), 'kl_positional[1]'],
  ];
  for (const [name, make, field] of cases) {
    await t.test(name, (st) => {
      const r = runOne(st, 'revoked', make);
      assert.equal(r.threw, null, 'logStep must not throw');
      assert.equal(r.counters.logged, 2, 'the malformed record is counted as logged');
      assert.equal(r.counters.bad, 1, 'and as bad');
      assert.equal(r.counters.written + r.counters.dropped + r.counters.bad, r.counters.logged);
      assert.equal(r.bad.length, 1, 'one bad_record event');
      assert.equal(r.bad[0].data.field, field);
    });
  }
});

test('logStep does not throw when a getter throws something that is not an Error', async (t) => {
  const cases: Array<[string, () => unknown]> = [
    ['a null-prototype object', () => Object.create(null)],
    ['an object whose message is a Symbol', () => ({ message: Symbol('m') })],
    ['an object whose message getter throws', () => ({ get message(): string { throw new Error('again'); } })],
    ['an object whose toString throws', () => ({ message: undefined, toString() { throw new Error('no string'); } })],
  ];
  for (const [name, thrown] of cases) {
    await t.test(name, (st) => {
      const r = runOne(st, 'throw-nonerror', () => ({ step: 1, get loss(): number { throw thrown(); } }));
      assert.equal(r.threw, null, `logStep threw: ${String((r.threw as Error)?.message)}`);
      assert.equal(r.counters.bad, 1);
      assert.equal(r.counters.logged, 2);
      assert.equal(r.bad.length, 1);
      assert.deepEqual(r.steps.map((s) => s.step), [0]);
    });
  }
});

test('a multi-MB thrown message or field name does not make a multi-MB event line', async (t) => {
  const cases: Array<[string, () => unknown]> = [
    ['a getter throwing an Error with a multi-MB message', () => ({ step: 1, get loss(): number { throw new Error(HUGE); } })],
    ['a getter throwing a multi-MB string', () => ({ step: 1, get loss(): number { throw HUGE; } })],
    ['a multi-MB top-level key with a bad value', () => ({ step: 1, [HUGE]: 'x' })],
    ['a multi-MB extra name with a bad value', () => ({ step: 1, extra: { [HUGE]: 'x' } })],
    ['a multi-MB reward component name with a bad value', () => ({ step: 1, reward_components: { [HUGE]: true } })],
  ];
  for (const [name, make] of cases) {
    await t.test(name, (st) => {
      const r = runOne(st, 'huge-event', make);
      assert.equal(r.threw, null);
      assert.equal(r.counters.bad, 1);
      assert.equal(r.bad.length, 1);
      const longest = Math.max(...r.lines.map((l) => Buffer.byteLength(l)));
      assert.ok(longest <= MAX_EVENT_LINE, `an event line of ${longest} bytes`);
    });
  }
});

test('an integer count beyond ±2^53 is refused as bad, with data.field naming it', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['nan_count = 2^60', { step: 1, nan_count: 2 ** 60 }, 'nan_count'],
    ['inf_count = -2^60', { step: 1, loss: 1, inf_count: -(2 ** 60) }, 'inf_count'],
    ['nan_count = 1e300', { step: 1, nan_count: 1e300 }, 'nan_count'],
  ];
  for (const [name, record, field] of cases) {
    await t.test(name, (st) => {
      const r = runOne(st, 'bigcount', () => record);
      assert.equal(r.threw, null);
      assert.equal(r.counters.bad, 1, 'counted as bad (the value cannot be stored exactly as int64 through a double)');
      assert.equal(r.counters.written, 1);
      assert.deepEqual(r.steps.map((s) => s.step), [0]);
      assert.equal(r.bad.length, 1);
      const e = r.bad[0];
      assert.doesNotMatch(e.message, /unknown column id/, `misleading reason: ${e.message}`);
      assert.equal(e.data.field, field, `bad_record data: ${JSON.stringify(e.data)}, message: ${e.message}`);
    });
  }
});

// ---- logEvent: every call is written, or refused with one bad_record event and counted

interface EventCallCase {
  name: string;
  call: (rec: Recorder) => void;
  /** The refused field, or null when the event is written. */
  field: string | null;
}

function throwingToString(): unknown {
  return { toString(): string { throw new Error('no string for you'); } };
}

function cyclic(): Record<string, unknown> {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
}

function revokedProxy(): object {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
}

const EVENT_CASES: EventCallCase[] = [
  { name: 'no options', call: (r) => r.logEvent('ok'), field: null },
  { name: 'empty options', call: (r) => r.logEvent('ok', {}), field: null },
  { name: 'step null', call: (r) => r.logEvent('ok', { step: null }), field: null },
  { name: 'data with a bigint (written as a decimal string)', call: (r) => r.logEvent('ok', { data: { n: 12345678901234567890n } }), field: null },
  { name: 'data an array (kept under value)', call: (r) => r.logEvent('ok', { data: [1, 2] as never }), field: null },
  { name: 'data a string (kept under value)', call: (r) => r.logEvent('ok', { data: 'text' as never }), field: null },
  { name: 'data a Date (kept under value)', call: (r) => r.logEvent('ok', { data: new Date(0) as never }), field: null },
  { name: 'options null', call: (r) => r.logEvent('x', null as never), field: 'options' },
  { name: 'options a number', call: (r) => r.logEvent('x', 5 as never), field: 'options' },
  { name: 'options an array', call: (r) => r.logEvent('x', [] as never), field: 'options' },
  { name: 'options a revoked Proxy', call: (r) => r.logEvent('x', revokedProxy() as never), field: 'options' },
  { name: 'options with a throwing getter', call: (r) => r.logEvent('x', { get message(): string { throw new Error('getter exploded'); } }), field: 'options' },
  { name: 'an unknown option', call: (r) => r.logEvent('x', { msg: 'typo' } as never), field: 'options.msg' },
  { name: 'kind a number', call: (r) => r.logEvent(42 as never), field: 'kind' },
  { name: 'kind empty', call: (r) => r.logEvent(''), field: 'kind' },
  { name: 'kind a Symbol', call: (r) => r.logEvent(Symbol('k') as never), field: 'kind' },
  { name: 'kind whose toString throws', call: (r) => r.logEvent(throwingToString() as never), field: 'kind' },
  { name: 'kind of a megabyte', call: (r) => r.logEvent(HUGE), field: 'kind' },
  { name: 'message whose toString throws', call: (r) => r.logEvent('x', { message: throwingToString() as never }), field: 'options.message' },
  { name: 'message a number', call: (r) => r.logEvent('x', { message: 5 as never }), field: 'options.message' },
  { name: 'message of a megabyte', call: (r) => r.logEvent('x', { message: HUGE }), field: 'options.message' },
  { name: 'step -1', call: (r) => r.logEvent('x', { step: -1 }), field: 'options.step' },
  { name: 'step 1.5', call: (r) => r.logEvent('x', { step: 1.5 }), field: 'options.step' },
  { name: 'step NaN', call: (r) => r.logEvent('x', { step: NaN }), field: 'options.step' },
  { name: 'step "3"', call: (r) => r.logEvent('x', { step: '3' as never }), field: 'options.step' },
  { name: 'data with a cycle', call: (r) => r.logEvent('x', { data: cyclic() }), field: 'options.data' },
  { name: 'data with a throwing getter', call: (r) => r.logEvent('x', { data: { get v(): number { throw new Error('getter exploded'); } } }), field: 'options.data' },
  { name: 'data with a throwing toJSON', call: (r) => r.logEvent('x', { data: { v: { toJSON() { throw new Error('no json'); } } } }), field: 'options.data' },
  { name: 'data with a throwing getter, inside a unit', call: (r) => r.unit({ step: 2 }, () => r.logEvent('x', { data: { get v(): number { throw 'thrown string'; } } })), field: 'options.data' },
  { name: 'data whose own toJSON returns a string', call: (r) => r.logEvent('x', { data: { toJSON: () => 'not an object' } }), field: 'options.data' },
  { name: 'data whose own toJSON returns undefined', call: (r) => r.logEvent('x', { data: { toJSON: () => undefined } }), field: 'options.data' },
  { name: 'data a revoked Proxy', call: (r) => r.logEvent('x', { data: revokedProxy() as never }), field: 'options.data' },
  { name: 'data of a megabyte string', call: (r) => r.logEvent('x', { data: { blob: HUGE } }), field: 'options.data' },
  { name: 'data of 200,000 small keys', call: (r) => r.logEvent('x', { data: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, i])) }), field: 'options.data' },
];

describe('logEvent with odd arguments: written, or refused with a bad_record event and counted', () => {
  for (const c of EVENT_CASES) {
    test(c.name, (t) => {
      const { dir, rec } = openRun(t, 'bad-event');
      assert.doesNotThrow(() => c.call(rec));
      rec.logEvent('neighbour', { step: 1, message: 'a valid neighbour' });
      const counters = rec.close().counters;
      const lines = eventLines(dir);
      const longest = Math.max(...lines.map((l) => Buffer.byteLength(l)));
      assert.ok(longest <= MAX_EVENT_LINE, `an event line of ${longest} bytes`);
      const events = RunReader.open(dir).events();
      const user = events.filter((e) => e.kind !== 'bad_record' && e.kind !== 'recorder_close' && e.kind !== 'neighbour');
      const bad = events.filter((e) => e.kind === 'bad_record');
      assert.ok(events.some((e) => e.kind === 'neighbour'), 'the valid neighbour is written');
      if (c.field === null) {
        assert.equal(user.length, 1, `the event is written: ${JSON.stringify(events)}`);
        assert.equal(bad.length, 0);
        assert.equal(counters.eventsBad, 0);
        return;
      }
      assert.equal(user.length, 0, `a refused event is not written: ${JSON.stringify(user)}`);
      assert.equal(bad.length, 1, 'one bad_record event');
      assert.equal(counters.eventsBad, 1, 'counted in eventsBad');
      const e = bad[0];
      assert.equal(e.data.record, 'event');
      assert.equal(e.data.field, c.field);
      assert.ok(e.message.includes(c.field), `the message names the field: ${e.message}`);
      assert.equal(typeof e.data.reason, 'string');
    });
  }

  test('what a written event holds: bigints as decimal strings, other values under value', (t) => {
    const { dir, rec } = openRun(t, 'event-data');
    rec.logEvent('big', { data: { n: 12345678901234567890n } });
    rec.logEvent('list', { data: [1, 2] as never });
    rec.logEvent('when', { step: 3, data: new Date(0) as never });
    rec.close();
    const events = RunReader.open(dir).events();
    assert.deepEqual(events.find((e) => e.kind === 'big')!.data, { n: '12345678901234567890' });
    assert.deepEqual(events.find((e) => e.kind === 'list')!.data, { value: [1, 2] });
    const when = events.find((e) => e.kind === 'when')!;
    assert.deepEqual(when.data, { value: '1970-01-01T00:00:00.000Z' });
    assert.equal(when.step, 3);
  });

  test('the limits: data and message at the limit are written, one character over is refused', (t) => {
    const { dir, rec } = openRun(t, 'event-limits');
    // {"s":"…"} is 8 characters around the string
    rec.logEvent('data-at-limit', { data: { s: 'd'.repeat(MAX_EVENT_DATA_CHARS - 8) } });
    rec.logEvent('data-over-limit', { data: { s: 'd'.repeat(MAX_EVENT_DATA_CHARS - 7) } });
    rec.logEvent('message-at-limit', { message: 'm'.repeat(MAX_EVENT_MESSAGE_CHARS) });
    rec.logEvent('message-over-limit', { message: 'm'.repeat(MAX_EVENT_MESSAGE_CHARS + 1) });
    const c = rec.close().counters;
    const events = RunReader.open(dir).events();
    const kinds = events.map((e) => e.kind);
    assert.ok(kinds.includes('data-at-limit') && kinds.includes('message-at-limit'), kinds.join());
    assert.ok(!kinds.includes('data-over-limit') && !kinds.includes('message-over-limit'), kinds.join());
    assert.equal(c.eventsBad, 2);
    const bad = events.filter((e) => e.kind === 'bad_record');
    assert.deepEqual(bad.map((e) => [e.data.kind, e.data.field]), [['data-over-limit', 'options.data'], ['message-over-limit', 'options.message']]);
    assert.match(bad[0].data.reason as string, new RegExp(`limit of ${MAX_EVENT_DATA_CHARS}`));
    assert.match(bad[1].data.reason as string, new RegExp(`limit of ${MAX_EVENT_MESSAGE_CHARS}`));
  });

  test('a refused event keeps its step when the step itself is fine', (t) => {
    const { dir, rec } = openRun(t, 'event-step');
    rec.logEvent('x', { step: 7, data: cyclic() });
    rec.unit({ step: 9 }, () => rec.logEvent('y', { message: 5 as never }));
    rec.close();
    const bad = RunReader.open(dir).events().filter((e) => e.kind === 'bad_record');
    assert.deepEqual(bad.map((e) => e.step), [7, 9]);
  });

  test('2,000 random odd calls: each one written or refused, none lost', (t) => {
    const { dir, rec } = openRun(t, 'event-fuzz');
    const kinds = fc.oneof(
      fc.constantFrom<unknown>('checkpoint', 'a', 'ünï'),
      fc.constantFrom<unknown>('', 42, null, undefined, Symbol('s'), {}, [], true),
      fc.constant('huge-kind').map(() => HUGE),
    );
    const values = fc.constantFrom<() => unknown>(
      () => undefined, () => null, () => 1, () => -1, () => 1.5, () => NaN, () => 'text', () => HUGE, () => 10n,
      () => Symbol('v'), () => () => 1, () => cyclic(), () => revokedProxy(), () => throwingToString(), () => new Date(0),
      () => [1, 'a', null], () => ({ nested: { deep: [1, 2, { x: 3n }] } }), () => ({ get boom(): number { throw new Error('g'); } }),
    );
    const optionsArb = fc.oneof(
      fc.constant<() => unknown>(() => undefined),
      values,
      fc.record({ step: values, message: values, data: values }, { requiredKeys: [] }).map((o) => () => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v()]))),
    );
    let calls = 0;
    fc.assert(
      fc.property(kinds, optionsArb, fc.boolean(), (kind, options, inUnit) => {
        const call = () => rec.logEvent(kind as never, options() as never);
        assert.doesNotThrow(() => (inUnit ? rec.unit({ step: 1 }, call) : call()));
        calls++;
      }),
      { numRuns: 2000 },
    );
    const c = rec.close().counters;
    const events = RunReader.open(dir).eventsWithDiagnostics();
    assert.equal(events.skippedLines, 0);
    const refused = events.events.filter((e) => e.kind === 'bad_record' && e.data.record === 'event').length;
    const written = events.events.filter((e) => e.kind !== 'bad_record' && e.kind !== 'recorder_close').length;
    assert.equal(c.eventsDropped, 0);
    assert.equal(written + refused, calls, `written ${written} + refused ${refused} == calls ${calls}`);
    assert.equal(c.eventsBad, refused);
  });
});

// ---- logSamples: the work of one call is bounded by its length

describe('logSamples with a huge array-like: refused at once, naming the length and the limit', () => {
  const huge = 2e8;
  const cases: Array<[string, () => unknown, object]> = [
    ['a plain object with length 2e8', () => ({ length: huge }), { step: 1 }],
    ['a plain object with length 2e8, select: false', () => ({ length: huge }), { step: 1, select: false }],
    ['a Proxy of length 2e8', () => new Proxy([], { get: (target, key) => (key === 'length' ? huge : { reward_total: 1 }) }), { step: 1 }],
  ];
  for (const [name, make, options] of cases) {
    test(name, (t) => {
      const { dir, rec } = openRun(t, 'huge-samples');
      const started = performance.now();
      assert.doesNotThrow(() => rec.logSamples(make() as never, options));
      const ms = performance.now() - started;
      assert.ok(ms < 1000, `the call took ${ms.toFixed(0)} ms`);
      const c = rec.close().counters;
      assert.equal(c.sampleCallsBad, 1, 'counted');
      assert.equal(c.samplesLogged, 0);
      const bad = RunReader.open(dir).events().filter((e) => e.kind === 'bad_record');
      assert.equal(bad.length, 1);
      assert.equal(bad[0].data.record, 'samples');
      assert.equal(bad[0].data.field, 'samples.length');
      assert.equal(bad[0].data.length, huge);
      assert.equal(bad[0].data.limit, MAX_SAMPLES_PER_CALL);
      assert.match(bad[0].message, /200000000 samples/);
      assert.match(bad[0].message, new RegExp(`limit of ${MAX_SAMPLES_PER_CALL}`));
      assert.equal(bad[0].step, 1);
    });
  }

  test('lengths that are not a count are refused too', (t) => {
    const { dir, rec } = openRun(t, 'bad-length');
    for (const length of [-1, 1.5, NaN, Infinity, '5', 2 ** 60]) rec.logSamples({ length } as never, { step: 2 });
    const c = rec.close().counters;
    assert.equal(c.sampleCallsBad, 6);
    const bad = RunReader.open(dir).events().filter((e) => e.kind === 'bad_record');
    assert.deepEqual(bad.map((e) => e.data.field), Array(6).fill('samples.length'));
  });

  test('at the limit the call goes through; one more is refused', (t) => {
    const { dir, rec } = openRun(t, 'limit-samples');
    const atLimit = Array.from({ length: MAX_SAMPLES_PER_CALL }, (_, i) => ({ reward_total: i, completion_text: `s${i}` }));
    rec.logSamples(atLimit, { step: 0 });
    rec.logSamples({ length: MAX_SAMPLES_PER_CALL + 1 } as never, { step: 1 });
    assert.equal(rec.flushSync(30_000), true);
    const c = rec.close().counters;
    assert.equal(c.samplesLogged, 8, 'the default selection kept 8 of the batch at the limit');
    assert.equal(c.samplesWritten, 8);
    assert.equal(c.sampleCallsBad, 1);
    const bad = RunReader.open(dir).events().filter((e) => e.kind === 'bad_record');
    assert.equal(bad.length, 1);
    assert.equal(bad[0].step, 1);
  });
});
