/**
 * Queue overflow: a tiny queue and synchronous bursts of logStep. Nothing blocks or throws,
 * every record is either written or dropped (never both, never neither), the steps on disk
 * are exactly the accepted ones with their content intact (the ring wraps many times with
 * records of varying size), and the recorder_drops events add up to the dropped counter.
 *
 * No timing is asserted: how many records drop depends on the machine; only that some do
 * (a burst of tens of thousands into a queue of a few slots cannot be kept up with).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RunReader } from '../ts/index.js';
import type { Recorder, RunEvent } from '../ts/index.js';
import { openRun } from './helpers/run-dir.js';

interface DropEvent {
  count: number;
  total: number;
}

function dropEvents(events: RunEvent[]): DropEvent[] {
  return events
    .filter((e) => e.kind === 'recorder_drops')
    .map((e) => {
      const { count, total } = e.data as { count: unknown; total: unknown };
      assert.ok(Number.isInteger(count) && (count as number) > 0, `recorder_drops count ${String(count)}`);
      assert.ok(Number.isInteger(total), `recorder_drops total ${String(total)}`);
      return { count: count as number, total: total as number };
    });
}

function assertDropEvents(events: RunEvent[], dropped: number): void {
  const drops = dropEvents(events);
  assert.ok(drops.length >= 1, 'at least one recorder_drops event');
  assert.equal(drops.reduce((n, d) => n + d.count, 0), dropped, 'recorder_drops counts sum to counters.dropped');
  assert.equal(drops[drops.length - 1].total, dropped, 'the last recorder_drops total is counters.dropped');
  let running = 0;
  for (const d of drops) {
    running += d.count;
    assert.equal(d.total, running, 'each total is the running sum of counts');
  }
}

function assertSettled(rec: Recorder, logged: number) {
  const c = rec.counters;
  assert.equal(c.logged, logged);
  assert.equal(c.bad, 0);
  assert.equal(c.pending, 0);
  assert.equal(c.written + c.dropped, c.logged, `written ${c.written} + dropped ${c.dropped} == logged ${c.logged}`);
  return c;
}

test('a burst into a tiny queue drops and counts, and keeps exactly the accepted steps', (t) => {
  const N = 50_000;
  const CAPACITY = 8;
  const { dir, rec } = openRun(t, 'overflow', { queueCapacity: CAPACITY, flushSteps: 500, flushIntervalMs: 3_600_000 });
  for (let s = 0; s < N; s++) rec.logStep({ step: s, loss: s / 2, nan_count: s % 3 });
  const summary = rec.close();
  assert.equal(summary.error, null);
  const c = summary.counters;
  assert.equal(c.logged, N);
  assert.equal(c.bad, 0);
  assert.equal(c.pending, 0);
  assert.equal(c.written + c.dropped, c.logged, `written ${c.written} + dropped ${c.dropped} == logged ${c.logged}`);
  assert.ok(c.dropped > 0, 'the queue overflowed');
  assert.ok(c.written >= CAPACITY, 'the first records fit an empty queue');

  const reader = RunReader.open(dir);
  const steps = reader.steps();
  assert.equal(steps.length, c.written, 'rows on disk == written');
  const seen = new Set<number>();
  let previous = -1;
  for (const row of steps) {
    assert.ok(Number.isInteger(row.step) && row.step >= 0 && row.step < N, `step ${row.step} was logged`);
    assert.ok(!seen.has(row.step), `step ${row.step} is on disk twice`);
    assert.ok(row.step > previous, `steps keep logging order (${row.step} after ${previous})`);
    seen.add(row.step);
    previous = row.step;
    assert.equal(row.loss, row.step / 2, `step ${row.step}: loss belongs to this step`);
    assert.equal(row.nan_count, row.step % 3, `step ${row.step}: nan_count belongs to this step`);
  }
  for (let s = 0; s < CAPACITY; s++) assert.ok(seen.has(s), `step ${s} (queued into an empty queue) was kept`);
  assert.equal(reader.stepFiles().reduce((n, f) => n + f.rows, 0), c.written);
  assertDropEvents(reader.events(), c.dropped);
});

test('bursts of variable-size records with flushes in between: drops add up, content intact', (t) => {
  const BURSTS = 5;
  const PER_BURST = 8_000;
  const { dir, rec } = openRun(t, 'overflow-var', { queueCapacity: 16, flushSteps: 64, flushIntervalMs: 3_600_000 });
  const klOf = (s: number) => Array.from({ length: (s * 37) % 120 }, (_, k) => s + k / 128);
  const make = (s: number) => {
    const r: Record<string, unknown> = { step: s, loss: -s, kl_positional: klOf(s) };
    if (s % 5 === 0) r.reward_components = { format: s * 2, [`c${s % 4}`]: s * 3 };
    if (s % 7 === 0) r.extra = { 'gpu.mem': s + 0.5 };
    if (s % 2 === 0) r.timestamp = 1_000_000 + s; // explicit, so the header push path varies
    return r;
  };

  let logged = 0;
  let dropsSoFar = 0;
  for (let b = 0; b < BURSTS; b++) {
    for (let i = 0; i < PER_BURST; i++) rec.logStep(make(logged++) as never);
    assert.equal(rec.flushSync(30_000), true, `flushSync after burst ${b}`);
    const c = assertSettled(rec, logged);
    assert.ok(c.dropped >= dropsSoFar);
    dropsSoFar = c.dropped;
    // a recorder_drops event is written on publish: the drops so far are all reported
    const reader = RunReader.open(dir);
    if (c.dropped > 0) assertDropEvents(reader.events(), c.dropped);
    assert.equal(reader.stepFiles().reduce((n, f) => n + f.rows, 0), c.written, `parts hold exactly the written rows after burst ${b}`);
  }

  const summary = rec.close();
  const c = summary.counters;
  assert.equal(c.logged, BURSTS * PER_BURST);
  assert.equal(c.bad, 0);
  assert.equal(c.written + c.dropped, c.logged);
  assert.ok(c.dropped > 0, 'the queue overflowed');

  const reader = RunReader.open(dir);
  assert.equal(reader.layout(), 'compacted');
  const steps = reader.steps();
  assert.equal(steps.length, c.written);
  const seen = new Set<number>();
  for (const row of steps) {
    assert.ok(!seen.has(row.step), `step ${row.step} twice`);
    seen.add(row.step);
    const want = make(row.step);
    assert.equal(row.loss, want.loss, `step ${row.step} loss`);
    assert.deepStrictEqual(row.kl_positional, want.kl_positional, `step ${row.step} kl_positional`);
    assert.deepStrictEqual(row.reward_components, want.reward_components, `step ${row.step} reward_components`);
    assert.deepStrictEqual(row.extra, want.extra, `step ${row.step} extra`);
    if (want.timestamp !== undefined) assert.equal(row.timestamp, want.timestamp, `step ${row.step} timestamp`);
    else assert.ok(typeof row.timestamp === 'number' && row.timestamp > 1_500_000_000, `step ${row.step} filled timestamp`);
  }
  assertDropEvents(reader.events(), c.dropped);
});
