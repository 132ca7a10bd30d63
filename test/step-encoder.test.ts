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
