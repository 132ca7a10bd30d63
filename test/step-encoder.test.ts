import assert from 'node:assert/strict';
import { test } from 'node:test';

import { StepEncoder } from '../ts/recorder/step-encoder.js';

/** An encoder with an in-memory registrar (ids in registration order). */
function encoder(): { enc: StepEncoder; names: string[] } {
  const names: string[] = [];
  const kindOf = (key: string) => (key === 'kl_positional' ? 'list_f64' : key === 'nan_count' ? 'i64' : 'f64');
  const enc = new StepEncoder({
    kindOf,
    registerAll: (keys) =>
      keys.map((key) => {
        const name = ['kl_positional', 'loss', 'nan_count'].includes(key) || key.includes('.') ? key : `extra.${key}`;
        let id = names.indexOf(name);
        if (id < 0) id = names.push(name) - 1;
        return { id, kind: kindOf(key) };
      }),
    bindScratch: () => {},
  });
  return { enc, names };
}

/** Decodes `[step, ts, id, v, …]` (scalars only) into {name: value}. */
function decode(slots: Float64Array, n: number, names: string[]): Record<string, number> {
  const out: Record<string, number> = { step: slots[0] };
  for (let i = 2; i < n; i += 2) out[names[slots[i]]] = slots[i + 1];
  return out;
}

test('records with the same key count but different keys never share a compiled shape', () => {
  const { enc, names } = encoder();
  const seen: Array<Record<string, number>> = [];
  for (let step = 0; step < 50; step++) {
    const record = step % 2 ? { step, loss: step, a: 1 } : { step, loss: step, b: 2 };
    const n = enc.encode(record);
    assert.ok(n > 0);
    seen.push(decode(enc.scratch, n, names));
  }
  for (const [step, r] of seen.entries()) {
    assert.deepEqual(r, step % 2 ? { step, loss: step, 'extra.a': 1 } : { step, loss: step, 'extra.b': 2 });
  }
});

test('a key present with undefined is absent; a missing key is not mistaken for it', () => {
  const { enc, names } = encoder();
  enc.encode({ step: 0, loss: 1, a: undefined });
  enc.encode({ step: 1, loss: 1, a: undefined }); // compiled shape: a absent
  const n = enc.encode({ step: 2, loss: 1, b: 5 }); // same count, `a` missing, `b` extra
  assert.deepEqual(decode(enc.scratch, n, names), { step: 2, loss: 1, 'extra.b': 5 });
});

test('the fast path writes at an offset and respects the limit', () => {
  const { enc } = encoder();
  const record = { step: 3, loss: 0.5, kl_positional: [1, 2, 3] };
  enc.encode(record); // learn the shape
  const target = new Float64Array(64).fill(-7);
  const n = enc.encodeFast(record, target, 10, 20);
  assert.equal(n, 2 + 2 + 5);
  assert.equal(target[9], -7, 'nothing before the offset');
  assert.equal(target[10], 3);
  assert.equal(target[10 + n], -7, 'nothing after the record');
  assert.equal(enc.encodeFast({ step: 3, loss: 0.5, kl_positional: new Array(30).fill(1) }, target, 10, 20), -1, 'a list past the limit bails');
});

test('a bad value on a learned shape still gets its precise refusal', () => {
  const { enc } = encoder();
  enc.encode({ step: 0, loss: 1, nan_count: 0 });
  assert.equal(enc.encode({ step: 1, loss: 'x', nan_count: 0 }), -1);
  assert.equal(enc.bad.field, 'loss');
  assert.equal(enc.encode({ step: 1, loss: 1, nan_count: 0.5 }), -1);
  assert.equal(enc.bad.field, 'nan_count');
});

/** Decodes any record (`kl_positional` is the list) into {step, timestamp, name: value or list}. */
function decodeAll(slots: Float64Array, n: number, names: string[]): Record<string, number | number[]> {
  const out: Record<string, number | number[]> = { step: slots[0], timestamp: slots[1] };
  for (let i = 2; i < n; ) {
    const name = names[slots[i]];
    assert.ok(name !== undefined && !(name in out), `slot ${i}: a column id written once`);
    if (name === 'kl_positional') {
      const len = slots[i + 1];
      out[name] = [...slots.subarray(i + 2, i + 2 + len)];
      i += 2 + len;
    } else {
      out[name] = slots[i + 1];
      i += 2;
    }
  }
  return out;
}

/** Learns `first`'s shape, then encodes `record` on the fast path and on the checked path. */
function bothPaths(first: object, record: object): { fast: object | null; checked: object | null } {
  const { enc, names } = encoder();
  assert.ok(enc.encode(first) > 0, 'the first record is accepted');
  const target = new Float64Array(512).fill(-7);
  const n = enc.encodeFast(record, target, 40, 400);
  assert.equal(target[39], -7, 'nothing before the offset');
  const fast = n < 0 ? null : decodeAll(target.subarray(40), n, names);
  if (n >= 0) assert.equal(target[40 + n], -7, 'nothing after the record');
  const m = enc.encodeChecked(record);
  const checked = m < 0 ? null : decodeAll(enc.scratch, m, names);
  return { fast, checked };
}

test('the compiled shape writes what the checked path writes, column for column', () => {
  const first = {
    step: 1, loss: 0.5, a: null, nan_count: 3, b: undefined, kl_positional: [1, 2],
    reward_components: { format: 1, x: null, y: 2 }, extra: { q: 3 }, timestamp: 1700000000.5,
  };
  const record = {
    step: 2, loss: -0.25, a: null, nan_count: -4, b: undefined, kl_positional: [3, 4, 5],
    reward_components: { format: NaN, x: null, y: Infinity }, extra: { q: -0 }, timestamp: 1700000001.25,
  };
  const { fast, checked } = bothPaths(first, record);
  assert.ok(fast !== null, 'the fast path takes a record of the learned shape');
  assert.deepEqual(fast, checked);
  assert.deepEqual(fast, {
    step: 2, timestamp: 1700000001.25, loss: -0.25, nan_count: -4, kl_positional: [3, 4, 5],
    'reward_component.format': NaN, 'reward_component.y': Infinity, 'extra.q': -0,
  });
});

test('the fast path accepts exactly the steps and integer counts the checked path accepts', () => {
  const values = [0, -0, 1, 7, 2 ** 53 - 1, 2 ** 53, -1, 0.5, -2.5, 1e300, NaN, Infinity, -Infinity];
  for (const v of values) {
    for (const field of ['step', 'nan_count'] as const) {
      const record = { step: 5, loss: 1, nan_count: 2, [field]: v };
      const { fast, checked } = bothPaths({ step: 1, loss: 1, nan_count: 0 }, record);
      // the fast path may bail where the checked path accepts, never the other way round
      if (fast !== null) assert.deepEqual(fast, checked, `${field} = ${v}`);
      const acceptable = Number.isInteger(v) && Math.abs(v) <= 2 ** 53 - 1 && (field !== 'step' || v >= 0);
      assert.equal(checked !== null, acceptable, `checked path on ${field} = ${v}`);
      assert.equal(fast !== null, acceptable, `fast path on ${field} = ${v}`);
    }
  }
});

test('an offset that is not a small non-negative integer bails without writing', () => {
  const { enc } = encoder();
  const record = { step: 3, loss: 0.5 };
  enc.encode(record);
  const target = new Float64Array(64).fill(-7);
  for (const offset of [1.5, -1, 2 ** 30, 2 ** 31 + 1]) {
    assert.equal(enc.encodeFast(record, target, offset, 20), -1, `offset ${offset}`);
  }
  assert.ok(target.every((x) => x === -7), 'nothing written');
});

test('the shape check tries the shape that fitted last first, and the others when it bails', () => {
  const { enc, names } = encoder();
  const a = (step: number) => ({ step, loss: step, a: 1 });
  const b = (step: number) => ({ step, loss: step, b: 2 });
  enc.encode(a(0));
  enc.encode(b(1)); // two compiled shapes with three keys; b's is the last learned
  const target = new Float64Array(64);
  assert.equal(enc.shapeFor(a(2)), enc.shapeFor(b(2)), 'one candidate per key count');
  for (const [i, make] of [a, a, b, a, b, b].entries()) {
    const n = enc.encodeFast(make(i), target, 0, 64);
    assert.ok(n > 0, `record ${i} takes the fast path`);
    assert.deepEqual(decode(target, n, names), make === a ? { step: i, loss: i, 'extra.a': 1 } : { step: i, loss: i, 'extra.b': 2 });
    const last = enc.shapeFor(make(i));
    assert.ok(last !== null && last.encode(make(i), target, 0, 64) > 0, 'the shape tried first is the one that fitted');
  }
  assert.equal(enc.shapeFor({ step: 1 }), null, 'no shape with that many keys');
});
