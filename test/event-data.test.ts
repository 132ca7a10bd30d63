/**
 * An event's `data` that is not a plain object is kept whole under `data.value` — by
 * `logEvent` outside any scope, inside a unit and inside a span alike, and by the lines
 * the recorder writes itself (event-lines.ts). Nothing becomes `{}`.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import { EventLines } from '../ts/recorder/event-lines.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

/** Values that are not plain objects, and what JSON keeps of each under `value`. */
const VALUES: Array<[string, unknown, unknown]> = [
  ['a number', 5, 5],
  ['a string', 'text', 'text'],
  ['an array', [1, 'a'], [1, 'a']],
  ['null', null, null],
  ['a boolean', false, false],
  ['a Date', new Date(0), '1970-01-01T00:00:00.000Z'],
  ['a bigint', 12345678901234567890n, '12345678901234567890'],
  ['a class instance', new (class Point { x = 1; })(), { x: 1 }],
];

/** The data as the user gave it: without what a scope adds. */
function ownData(data: Record<string, unknown>): Record<string, unknown> {
  const { span_id: _span, labels: _labels, ...own } = data;
  return own;
}

describe('logEvent data that is not a plain object', () => {
  test('is kept under value outside any scope, inside a unit and inside a span alike', () => {
    const dir = path.join(tempDir('rlprobe-event-data-'), 'run');
    const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
    VALUES.forEach(([, value], i) => {
      rec.logEvent(`outside-${i}`, { data: value as never });
      rec.unit({ sample: 's', step: 3 }, () => rec.logEvent(`unit-${i}`, { data: value as never }));
      rec.span('turn', 't', () => rec.logEvent(`span-${i}`, { data: value as never }));
    });
    const { counters } = rec.close();
    assert.equal(counters.eventsBad, 0, 'none refused');
    const events = new Map(RunReader.open(dir).events().map((e) => [e.kind, e]));
    VALUES.forEach(([name, , kept], i) => {
      const outside = events.get(`outside-${i}`)!;
      const unit = events.get(`unit-${i}`)!;
      const span = events.get(`span-${i}`)!;
      assert.deepEqual(outside.data, { value: kept }, `${name} outside any scope`);
      assert.deepEqual(ownData(unit.data), { value: kept }, `${name} inside a unit`);
      assert.deepEqual(ownData(span.data), { value: kept }, `${name} inside a span`);
      // the scope adds its context beside the value, never in place of it
      assert.deepEqual(unit.data.labels, { sample: 's' }, name);
      assert.equal(typeof span.data.span_id, 'string', name);
    });
  });

  test('a plain object is written as it is, and no data as {}', () => {
    const dir = path.join(tempDir('rlprobe-event-data-'), 'run');
    const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
    rec.logEvent('object', { data: { a: 1 } });
    rec.logEvent('none');
    rec.close();
    const events = RunReader.open(dir).events();
    assert.deepEqual(events.find((e) => e.kind === 'object')!.data, { a: 1 });
    assert.deepEqual(events.find((e) => e.kind === 'none')!.data, {});
  });

  test("the recorder's own lines keep non-object data the same way", () => {
    const lines = new EventLines(0);
    for (const [name, value, kept] of VALUES) {
      const line = JSON.parse(lines.line('k', 7, 'm', value)) as { step: number; data: unknown };
      assert.deepEqual(line.data, { value: kept }, name);
      assert.equal(line.step, 7);
    }
    assert.deepEqual(JSON.parse(lines.line('k', null, 'm', undefined)).data, {});
    // data that cannot be serialised is named, not dropped
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.match(String(JSON.parse(lines.line('k', null, 'm', cyclic)).data.unserializable), /circular/i);
  });
});
