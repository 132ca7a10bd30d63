/**
 * Round trip: every StepRecord field written by the Recorder reads back bit-for-bit
 * (NaN, ±Infinity, -0, subnormals, extremes; integer counts; lists of every length, the
 * empty one included; dict names with dots and unicode), absent stays absent, and columns
 * that appear mid-run after several part flushes are unioned. Checked on the live part
 * layout (after flushSync) and on the compacted steps.parquet (after close), through both
 * RunReader.steps() and RunView.series().
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { RunReader, STEP_FIELDS } from '../ts/index.js';
import type { StoredStepRecord } from '../ts/index.js';
import { openRun } from './helpers/run-dir.js';

const TOTAL_STEPS = 40;
const FIRST_PHASE = 20;
const FLUSH_STEPS = 7;

const SPECIAL_DOUBLES = [
  NaN,
  Infinity,
  -Infinity,
  -0,
  5e-324, // smallest subnormal
  -5e-324,
  2.2250738585072014e-308, // smallest normal
  1e-310, // subnormal
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  1e300,
  0.1 + 0.2,
  Number.EPSILON,
  2 ** 53 + 2,
];
const COUNTS = [0, 2 ** 53 - 1, 4_294_967_296, 12_345_678_901, 1];

const SCALAR_FIELDS = STEP_FIELDS.filter((f) => f !== 'kl_positional');
const COUNT_FIELDS = new Set<string>(['nan_count', 'inf_count']);

/** A distinct double for (step, field), with special values spread over every field. */
function value(step: number, fieldIndex: number): number {
  if ((step * 7 + fieldIndex) % 3 === 0) return SPECIAL_DOUBLES[(step + fieldIndex) % SPECIAL_DOUBLES.length];
  return step * 1000 + fieldIndex + 1 / 3;
}

function countValue(step: number, fieldIndex: number): number {
  const c = COUNTS[(step + fieldIndex) % COUNTS.length];
  return c === 1 ? step * 31 + fieldIndex : c;
}

function klPositional(step: number): number[] {
  const len = [0, 1, 3, 8, 17][step % 5];
  return Array.from({ length: len }, (_, k) =>
    k === 1 ? NaN : k === 2 ? -0 : k === 3 ? Infinity : k === 4 ? -Infinity : k === 5 ? 5e-324 : step + k / 8,
  );
}

interface Planned {
  logged: Record<string, unknown>;
  /** What RunReader.steps() must return, except `timestamp` when it was filled. */
  expected: StoredStepRecord;
  explicitTimestamp: number | null;
}

/** Steps where some fields are absent: omitted, null or undefined. */
const isSparse = (step: number) => step % 6 === 5;

function plan(step: number): Planned {
  const logged: Record<string, unknown> = { step };
  const expected: Record<string, unknown> = { step, rank: 0 };
  const explicitTimestamp = step % 2 === 0 ? 1_700_000_000 + step * 1.5 + 0.125 : null;
  if (explicitTimestamp !== null) {
    logged.timestamp = explicitTimestamp;
    expected.timestamp = explicitTimestamp;
  }

  STEP_FIELDS.forEach((field, i) => {
    if (isSparse(step) && i % 3 !== 2) {
      // absent three ways: key omitted, null, undefined
      if (i % 3 === 1) logged[field] = step % 4 === 1 ? null : undefined;
      return;
    }
    if (field === 'kl_positional') {
      const list = klPositional(step);
      logged[field] = step % 4 === 3 ? Float64Array.from(list) : list; // any ArrayLike
      expected[field] = [...list];
      return;
    }
    const v = COUNT_FIELDS.has(field) ? countValue(step, i) : value(step, i);
    logged[field] = v;
    expected[field] = v;
  });
  if (isSparse(step)) {
    // an absent list must stay absent, not become []
    logged.kl_positional = null;
    delete expected.kl_positional;
  }

  // reward components: two from the start, one appearing mid-run, one absent on sparse steps
  const components: Record<string, unknown> = { format: value(step, 100), correctness: value(step, 101) };
  if (step >= 12) components['length.penalty'] = value(step, 102);
  if (!isSparse(step)) components['judge/π'] = value(step, 103);
  else components['judge/π'] = null;
  logged.reward_components = components;
  expected.reward_components = Object.fromEntries(Object.entries(components).filter(([, v]) => v !== null));

  // extras: dots, unicode, emoji, a name equal to a known field, a column that exists only
  // for a few steps (a gap afterwards), new columns after several parts were published
  const extra: Record<string, unknown> = { 'gpu.mem_gb': value(step, 200), loss: value(step, 201) };
  if (step >= 15) {
    extra['ñandú λ'] = value(step, 202);
    extra['日本語.メトリック'] = value(step, 203);
    extra['🚀'] = value(step, 204);
  }
  if (step >= 9 && step <= 11) extra['window.only'] = value(step, 205);
  logged.extra = extra;
  const expectedExtra: Record<string, number> = { ...(extra as Record<string, number>) };
  // unknown top-level numeric keys land in extra
  if (step >= 25) {
    logged.custom_top = value(step, 206);
    expectedExtra.custom_top = value(step, 206);
  }
  if (step === 30) {
    // no extra dict at all on this step: only the top-level one
    delete logged.extra;
    for (const k of Object.keys(extra)) delete expectedExtra[k];
  }
  if (Object.keys(expectedExtra).length > 0) expected.extra = expectedExtra;

  return { logged, expected: expected as StoredStepRecord, explicitTimestamp };
}

function describeNumber(x: unknown): string {
  return Object.is(x, -0) ? '-0' : String(x);
}

function assertSameNumber(actual: unknown, expected: unknown, where: string): void {
  assert.ok(
    Object.is(actual, expected),
    `${where}: expected ${describeNumber(expected)}, got ${describeNumber(actual)} (${typeof actual})`,
  );
}

function assertSameDict(actual: unknown, expected: Record<string, number> | undefined, where: string): void {
  if (expected === undefined) {
    assert.equal(actual, undefined, `${where}: expected absent`);
    return;
  }
  assert.ok(actual !== null && typeof actual === 'object', `${where}: expected an object, got ${String(actual)}`);
  const a = actual as Record<string, unknown>;
  assert.deepEqual(Object.keys(a).sort(), Object.keys(expected).sort(), `${where}: names`);
  for (const [k, v] of Object.entries(expected)) assertSameNumber(a[k], v, `${where}.${k}`);
}

/** Field-by-field comparison; the filled timestamp is checked separately. */
function assertRecord(actual: StoredStepRecord, p: Planned, window: { from: number; to: number }): void {
  const e = p.expected;
  const where = `step ${e.step}`;
  const a = actual as Record<string, unknown>;
  const exp = e as Record<string, unknown>;
  assert.deepEqual(
    Object.keys(a).sort(),
    Object.keys(exp).concat(p.explicitTimestamp === null ? ['timestamp'] : []).sort(),
    `${where}: the fields present`,
  );
  assertSameNumber(a.step, e.step, `${where} step`);
  assertSameNumber(a.rank, 0, `${where} rank`);
  if (p.explicitTimestamp !== null) {
    assertSameNumber(a.timestamp, p.explicitTimestamp, `${where} explicit timestamp`);
  } else {
    const ts = a.timestamp as number;
    assert.equal(typeof ts, 'number', `${where}: filled timestamp`);
    assert.ok(
      ts >= window.from - 5 && ts <= window.to + 5,
      `${where}: filled timestamp ${ts} outside the logging window [${window.from}, ${window.to}]`,
    );
  }
  for (const field of SCALAR_FIELDS) {
    if (!(field in exp)) {
      assert.equal(a[field], undefined, `${where} ${field}: expected absent, got ${describeNumber(a[field])}`);
      continue;
    }
    assertSameNumber(a[field], exp[field], `${where} ${field}`);
    if (COUNT_FIELDS.has(field)) assert.ok(Number.isInteger(a[field]), `${where} ${field} is an integer`);
  }
  if (exp.kl_positional === undefined) {
    assert.equal(a.kl_positional, undefined, `${where} kl_positional: expected absent`);
  } else {
    const list = a.kl_positional as number[];
    assert.ok(Array.isArray(list), `${where} kl_positional is an array`);
    const want = exp.kl_positional as number[];
    assert.equal(list.length, want.length, `${where} kl_positional length`);
    want.forEach((x, k) => assertSameNumber(list[k], x, `${where} kl_positional[${k}]`));
  }
  assertSameDict(a.reward_components, e.reward_components, `${where} reward_components`);
  assertSameDict(a.extra, e.extra, `${where} extra`);
}

/** Every scalar series of the view agrees with the plan (missing -> NaN). */
function assertView(reader: RunReader, plans: Planned[]): void {
  const view = reader.view();
  assert.equal(view.length, plans.length);
  assert.deepEqual(Array.from(view.steps), plans.map((p) => p.expected.step));
  const names = new Set<string>();
  for (const p of plans) {
    for (const k of Object.keys(p.expected)) if (SCALAR_FIELDS.includes(k as never)) names.add(k);
    for (const k of Object.keys(p.expected.reward_components ?? {})) names.add(`reward_component.${k}`);
    for (const k of Object.keys(p.expected.extra ?? {})) names.add(`extra.${k}`);
  }
  assert.ok(names.size > SCALAR_FIELDS.length + 8, 'the plan covers every field and several dict names');
  for (const name of names) {
    assert.ok(view.has(name), `view has ${name}`);
    const series = view.series(name);
    assert.ok(series instanceof Float64Array);
    assert.equal(series.length, plans.length);
    plans.forEach((p, i) => {
      let want: number | undefined;
      if (name.startsWith('reward_component.')) want = p.expected.reward_components?.[name.slice('reward_component.'.length)];
      else if (name.startsWith('extra.')) want = p.expected.extra?.[name.slice('extra.'.length)];
      else want = (p.expected as Record<string, unknown>)[name] as number | undefined;
      assertSameNumber(series[i], want ?? NaN, `series ${name} at step ${p.expected.step}`);
    });
  }
  const ts = view.series('timestamp');
  plans.forEach((p, i) => {
    if (p.explicitTimestamp !== null) assertSameNumber(ts[i], p.explicitTimestamp, `series timestamp at step ${p.expected.step}`);
    else assert.ok(Number.isFinite(ts[i]), `series timestamp at step ${p.expected.step} was filled`);
  });
  assert.ok(view.has('kl_positional'));
  assert.ok(view.series('kl_positional').every(Number.isNaN), 'a list column is not a scalar series');
  assert.ok(view.series('never_logged').every(Number.isNaN), 'an unknown series is all NaN');
  assert.ok(!view.seriesNames().includes('kl_positional'));
}

function assertSteps(reader: RunReader, plans: Planned[], windows: Map<number, { from: number; to: number }>): void {
  const rows = reader.steps();
  assert.equal(rows.length, plans.length, 'one row per logged step');
  rows.forEach((row, i) => assertRecord(row, plans[i], windows.get(plans[i].expected.step)!));
}

test('every StepRecord field round-trips through parts and through the compacted file', (t) => {
  const { dir, rec } = openRun(t, 'roundtrip', { flushSteps: FLUSH_STEPS, flushIntervalMs: 3_600_000 });
  const plans = Array.from({ length: TOTAL_STEPS }, (_, s) => plan(s));
  const windows = new Map<number, { from: number; to: number }>();

  const logRange = (from: number, to: number) => {
    for (let s = from; s < to; s++) {
      const before = Date.now() / 1000;
      rec.logStep(plans[s].logged as never);
      windows.set(s, { from: before, to: Date.now() / 1000 });
      // a part per FLUSH_STEPS steps: a backlog would go out as one larger part
      if ((s + 1) % FLUSH_STEPS === 0) rec.flushSync(30_000);
    }
  };

  // phase 1: part layout, before the mid-run columns exist
  logRange(0, FIRST_PHASE);
  assert.equal(rec.flushSync(30_000), true, 'flushSync finished');
  let c = rec.counters;
  assert.deepEqual({ logged: c.logged, written: c.written, dropped: c.dropped, bad: c.bad, pending: c.pending }, {
    logged: FIRST_PHASE, written: FIRST_PHASE, dropped: 0, bad: 0, pending: 0,
  });
  let reader = RunReader.open(dir);
  assert.equal(reader.layout(), 'parts');
  assert.equal(existsSync(path.join(dir, 'steps.parquet')), false);
  let files = reader.stepFiles();
  assert.ok(files.length >= Math.ceil(FIRST_PHASE / FLUSH_STEPS), `several parts (${files.length})`);
  assert.ok(files.every((f) => !f.compacted && f.rows <= FLUSH_STEPS && /part-\d+\.parquet$/.test(f.path)));
  assert.equal(files.reduce((n, f) => n + f.rows, 0), FIRST_PHASE);
  assertSteps(reader, plans.slice(0, FIRST_PHASE), windows);
  assertView(reader, plans.slice(0, FIRST_PHASE));

  // phase 2: new columns appear after several parts were published
  logRange(FIRST_PHASE, TOTAL_STEPS);
  assert.equal(rec.flushSync(30_000), true);
  c = rec.counters;
  assert.equal(c.written, TOTAL_STEPS);
  assert.equal(c.written + c.dropped + c.bad, c.logged);
  reader = RunReader.open(dir);
  assert.equal(reader.layout(), 'parts');
  files = reader.stepFiles();
  assert.ok(files.length >= Math.ceil(TOTAL_STEPS / FLUSH_STEPS));
  assertSteps(reader, plans, windows);
  assertView(reader, plans);

  // closed: compacted into steps.parquet, same content
  const summary = rec.close();
  assert.equal(summary.error, null);
  assert.deepEqual(
    { logged: summary.counters.logged, written: summary.counters.written, dropped: summary.counters.dropped, bad: summary.counters.bad },
    { logged: TOTAL_STEPS, written: TOTAL_STEPS, dropped: 0, bad: 0 },
  );
  assert.ok(summary.compaction, 'close compacted');
  assert.equal(summary.compaction!.rows, TOTAL_STEPS);
  assert.equal(summary.compaction!.partsMerged, files.length);
  reader = RunReader.open(dir);
  assert.equal(reader.layout(), 'compacted');
  files = reader.stepFiles();
  assert.equal(files.length, 1);
  assert.equal(path.basename(files[0].path), 'steps.parquet');
  assert.equal(files[0].rows, TOTAL_STEPS);
  const leftoverParts = existsSync(path.join(dir, 'steps'))
    ? readdirSync(path.join(dir, 'steps')).filter((f) => f.endsWith('.parquet'))
    : [];
  assert.deepEqual(leftoverParts, [], 'no part is left next to steps.parquet');
  assertSteps(reader, plans, windows);
  assertView(reader, plans);
});

test('a column subset read keeps values and absence', (t) => {
  const { dir, rec } = openRun(t, 'roundtrip-subset', { flushSteps: 3, flushIntervalMs: 3_600_000 });
  const plans = Array.from({ length: 12 }, (_, s) => plan(s + 10));
  for (const p of plans) rec.logStep(p.logged as never);
  rec.close();
  const view = RunReader.open(dir).view(['loss', 'extra.window.only', 'nan_count']);
  assert.deepEqual(view.columns().sort(), ['extra.window.only', 'loss', 'nan_count', 'step'].sort());
  plans.forEach((p, i) => {
    assertSameNumber(view.series('loss')[i], (p.expected.loss as number | undefined) ?? NaN, `loss at ${p.expected.step}`);
    assertSameNumber(view.series('nan_count')[i], (p.expected.nan_count as number | undefined) ?? NaN, `nan_count at ${p.expected.step}`);
    assertSameNumber(view.series('extra.window.only')[i], p.expected.extra?.['window.only'] ?? NaN, `extra.window.only at ${p.expected.step}`);
  });
});
