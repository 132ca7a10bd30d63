/**
 * The JS producer of the step ring (ring-writer.ts) on memory no writer thread reads, and
 * the stages `StepLogger.stages()` hands to benches/overhead.ts: run one after the other,
 * they must leave in the ring exactly what `log` leaves, or the benchmark times another path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { stepColumnKind } from '../ts/native.js';
import type { NativeRecorder } from '../ts/native.js';
import { EventLines } from '../ts/recorder/event-lines.js';
import { RingWriter } from '../ts/recorder/ring-writer.js';
import { StepLogger } from '../ts/recorder/step-logger.js';

const HEADER = 32;
// Int32Array indexes of the cursors (ring.rs: words 0, 1, 16, 17; low halves)
const TAIL_SLOT = 0;
const TAIL_RECORDS = 2;
const HEAD_SLOT = 32;
const HEAD_RECORDS = 34;

function ring(slots: number, maxRecords: number): { writer: RingWriter; memory: Float64Array; i32: Int32Array } {
  const memory = new Float64Array(HEADER + slots);
  return { writer: new RingWriter(memory, maxRecords), memory, i32: new Int32Array(memory.buffer) };
}

function push(writer: RingWriter, payload: number[]): boolean {
  const offset = writer.reserve(payload.length);
  if (offset < 0) return false;
  writer.f64.set(payload, offset + 1);
  writer.commit(offset, payload.length);
  return true;
}

test('a commit publishes the tail and the record count where the consumer reads them', () => {
  const { writer, memory, i32 } = ring(64, 100);
  assert.ok(push(writer, [1, 2, 3]));
  assert.ok(push(writer, [4]));
  assert.equal(Atomics.load(i32, TAIL_SLOT), 4 + 2);
  assert.equal(Atomics.load(i32, TAIL_RECORDS), 2);
  assert.deepEqual([...memory.subarray(HEADER, HEADER + 6)], [3, 1, 2, 3, 1, 4]);
});

test('the queue refuses a record past its record bound until the consumer takes one', () => {
  const { writer, i32 } = ring(1024, 3);
  for (let i = 0; i < 3; i++) assert.ok(push(writer, [i]));
  assert.equal(push(writer, [9]), false, 'a fourth record is refused');
  // the consumer takes one record: [len, x] = 2 slots
  Atomics.store(i32, HEAD_SLOT, 2);
  Atomics.store(i32, HEAD_RECORDS, 1);
  assert.ok(push(writer, [9]));
  assert.equal(Atomics.load(i32, TAIL_RECORDS), 4);
});

test('a record that does not fit before the end starts the next lap after a wrap marker', () => {
  const { writer, memory, i32 } = ring(64, 100);
  assert.ok(push(writer, new Array(40).fill(1))); // slots 0..40
  Atomics.store(i32, HEAD_SLOT, 41);
  Atomics.store(i32, HEAD_RECORDS, 1);
  assert.ok(push(writer, new Array(30).fill(2))); // 23 slots left: wraps
  assert.equal(memory[HEADER + 41], -1, 'the wrap marker');
  assert.equal(memory[HEADER + 0], 30);
  assert.equal(Atomics.load(i32, TAIL_SLOT), 64 + 31);
});

/** A StepLogger over private ring memory, the native side reduced to a local registry. */
function privateLogger(): { logger: StepLogger; memory: Float64Array } {
  const memory = new Float64Array(HEADER + 4096);
  const ids = new Map<string, number>();
  const native = {
    handle: 0,
    sharedRing: () => memory,
    ringMagic: () => memory[4],
    ringMaxRecords: () => 1000,
    wakeEvery: () => 3,
    wake: () => {},
    registerAll: (keys: string[]) =>
      keys.map((key) => {
        if (!ids.has(key)) ids.set(key, ids.size);
        return { id: ids.get(key)!, kind: stepColumnKind(key) };
      }),
    bindScratch: () => {},
    reportBad: () => {
      throw new Error('no record here is bad');
    },
    logEvent: () => true,
  } as unknown as NativeRecorder;
  return { logger: new StepLogger(native, new EventLines(0), () => {}), memory };
}

test('the stages the benchmark times, run in order, write what logStep writes', () => {
  // odd steps carry no timestamp (publish stamps them): two shapes
  const record = (step: number) => ({
    step, loss: step / 2, nan_count: step, kl_positional: [step, 1], reward_components: { format: 1 }, extra: { x: -step },
    ...(step % 2 ? {} : { timestamp: 1700000000 + step }),
  });
  const whole = privateLogger();
  const staged = privateLogger();
  whole.memory[5] = staged.memory[5] = 1700000000.5; // the clock word the writer thread keeps
  // the first record of each shape takes the checked path in both
  for (const logger of [whole.logger, staged.logger]) {
    logger.log(record(0));
    logger.log(record(1));
  }
  const stages = staged.logger.stages();
  assert.ok(stages !== null, 'the private ring is shared');
  for (let step = 2; step < 10; step++) {
    whole.logger.log(record(step));
    const shape = stages.encoder.shapeFor(record(step));
    assert.ok(shape !== null);
    const offset = stages.ring.reserve(stages.limit);
    const n = shape.encode(record(step), stages.ring.f64, offset + 1, stages.limit);
    assert.ok(n > 0);
    stages.publish(offset, n);
  }
  staged.memory[4] = whole.memory[4] = 0; // the sharing check's random magic word
  assert.deepEqual(staged.memory, whole.memory);
});
