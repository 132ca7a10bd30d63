/**
 * `logSamples` checks the options of an ordinary call by hand (sampling.ts, plainCallOptions)
 * and leaves everything else to the zod schema. The hand check must accept only what the
 * schema accepts, with the same result: it is run side by side with the schema on a table
 * of good and bad options.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CallOptionsSchema, DEFAULT_SAMPLING, plainCallOptions, resolveCallOptions } from '../ts/recorder/sampling.js';

class Options {
  step = 3;
}

const withGetter = Object.defineProperty({}, 'step', { get: () => 7, enumerable: true });
const hiddenStep = Object.defineProperty({}, 'step', { value: -1, enumerable: false });
const nullProto = Object.assign(Object.create(null) as object, { step: 2 });

const CASES: unknown[] = [
  {},
  { step: 0 },
  { step: 5 },
  { step: -0 },
  { step: 2 ** 53 - 1 },
  { step: 2 ** 53 },
  { step: 1e300 },
  { step: -1 },
  { step: 1.5 },
  { step: NaN },
  { step: Infinity },
  { step: '5' },
  { step: null },
  { step: undefined },
  { step: 5n },
  { select: true },
  { select: false },
  { select: 'false' },
  { select: 0 },
  { select: undefined },
  { step: 4, select: false },
  { step: 4, selected: false },
  { step: 4, sampling: { topK: 1 } },
  { step: 4, sampling: { topK: -1 } },
  { step: 4, sampling: undefined },
  { steps: 4 },
  { __proto__: { step: 3 } },
  { ['__proto__']: 1 },
  new Options(),
  withGetter,
  hiddenStep,
  nullProto,
  [],
  [4],
  null,
  5,
  'step',
  true,
];

function label(options: unknown): string {
  return `options ${String(JSON.stringify(options, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)))}`;
}

test('the hand check accepts only what the schema accepts, with the same step and select', () => {
  let accepted = 0;
  for (const options of CASES) {
    const plain = plainCallOptions(options);
    const schema = CallOptionsSchema.safeParse(options);
    if (plain === null) continue;
    accepted++;
    assert.equal(schema.success, true, `${label(options)}: the hand check accepted what the schema refuses`);
    if (schema.success) {
      assert.equal(plain.step, schema.data.step, `${label(options)}: step`);
      assert.equal(plain.select, schema.data.select, `${label(options)}: select`);
    }
  }
  // the common calls must take the fast path, or it is not one
  assert.ok(accepted >= 10, `only ${accepted} cases took the hand check`);
  for (const common of [{ step: 1 }, { step: 1, select: false }, {}]) assert.notEqual(plainCallOptions(common), null);
});

test('resolveCallOptions gives the same answer with or without the hand check', () => {
  for (const options of CASES) {
    const got = resolveCallOptions(options, DEFAULT_SAMPLING);
    const schema = CallOptionsSchema.safeParse(options);
    assert.equal(got.ok, schema.success, `${label(options)}: accepted or refused alike`);
    if (got.ok && schema.success) {
      assert.equal(got.step, schema.data.step);
      assert.equal(got.select, schema.data.select ?? true);
    }
  }
});
