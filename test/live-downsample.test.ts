import assert from 'node:assert/strict';
import { test } from 'node:test';

import { summarise } from '../ts/report/chart-data.js';
import { alongX, compact, downsample } from '../ts/report/downsample.js';
import { LiveDownsample } from '../ts/report/live-downsample.js';
import { prng } from './helpers/prng.js';

function randomSeries(r: () => number, n: number): Float64Array {
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const u = r();
    xs[i] = u < 0.05 ? NaN : u < 0.07 ? Infinity : u < 0.08 ? -Infinity : u < 0.09 ? (r() - 0.5) * 1e6 : Math.sin(i / 50) + r() * 0.1;
  }
  return xs;
}

/** Appends `xs` in random chunks, as a live run's parts arrive. */
function appendInChunks(live: LiveDownsample, r: () => number, xs: Float64Array, valid: Uint8Array): void {
  let at = 0;
  while (at < xs.length) {
    const k = Math.min(xs.length - at, 1 + Math.floor(r() * (r() < 0.1 ? 5000 : 300)));
    const steps = Float64Array.from({ length: k }, (_, i) => at + i);
    const times = Float64Array.from({ length: k }, (_, i) => 1e12 + (at + i) * 1000);
    live.append(steps, times, new Map([['y', { values: xs.subarray(at, at + k), valid: valid.subarray(at, at + k) }]]));
    at += k;
  }
}

test('appended in random chunks, each bucket holds its rows extremes in the order they happened', () => {
  for (let seed = 1; seed <= 12; seed++) {
    const r = prng(seed);
    const n = Math.floor(r() * 40_000);
    const buckets = 1 + Math.floor(r() * 300);
    const xs = randomSeries(r, n);
    const valid = Uint8Array.from({ length: n }, () => (r() < 0.03 ? 0 : 1));
    const live = new LiveDownsample(buckets);
    appendInChunks(live, r, xs, valid);
    const where = `seed ${seed}, ${n} rows, ${buckets} buckets`;
    assert.equal(live.rows, n, where);
    assert.ok(live.bucketCount < 2 * buckets, `${where}: ${live.bucketCount} buckets`);
    if (live.width > 1) assert.ok(live.bucketCount >= buckets / 2, `${where}: merged too far (${live.bucketCount})`);
    const p = live.points();
    const per = live.width === 1 ? 1 : 2;
    assert.equal(p.x.step.length, live.bucketCount * per, where);
    for (let b = 0; b < live.bucketCount; b++) {
      const from = b * live.width;
      const to = Math.min(n, from + live.width);
      let lo = Infinity;
      let hi = -Infinity;
      let iLo = -1;
      let iHi = -1;
      for (let i = from; i < to; i++) {
        if (!valid[i] || !Number.isFinite(xs[i])) continue;
        if (xs[i] < lo) [lo, iLo] = [xs[i], i];
        if (xs[i] > hi) [hi, iHi] = [xs[i], i];
      }
      const got = p.series.y.slice(b * per, (b + 1) * per);
      const want = iLo < 0 ? Array(per).fill(null) : per === 1 ? [compact(lo)] : iLo <= iHi ? [compact(lo), compact(hi)] : [compact(hi), compact(lo)];
      assert.deepEqual(got, want, `${where}: bucket ${b} (rows ${from}…${to - 1})`);
      assert.equal(p.x.step[b * per], from, `${where}: bucket ${b} first step`);
      assert.equal(p.x.step[(b + 1) * per - 1], to - 1, `${where}: bucket ${b} last step`);
      assert.equal(p.x.time[b * per], 1e12 + from * 1000);
    }
    // the run's extremes survive, as in the report's downsampling of the same rows
    const kept = p.series.y.filter((v): v is number => v !== null);
    const masked = xs.map((v, i) => (valid[i] ? v : NaN));
    const whole = downsample(Float64Array.from({ length: n }, (_, i) => i), [masked], buckets).ys[0].filter((v): v is number => v !== null);
    if (kept.length) {
      assert.equal(Math.min(...kept), Math.min(...whole), where);
      assert.equal(Math.max(...kept), Math.max(...whole), where);
    }
    const present = valid.reduce((a, v) => a + v, 0);
    assert.deepEqual(live.summary('y'), summarise(masked, present, null), where);
    assert.equal(live.presentCount('y'), present, where);
  }
});

test('a run sized up front and built a column at a time equals the same rows appended live', () => {
  const r = prng(99);
  const n = 25_000;
  const xs = randomSeries(r, n);
  const ones = new Uint8Array(n).fill(1);
  const built = new LiveDownsample(200);
  built.sizeFor(n);
  const steps = Float64Array.from({ length: n }, (_, i) => i);
  built.append(steps, null, new Map());
  built.addRows('y', { values: xs }, 0);
  const key = built.trackBand('y', 'y');
  built.addBand(key, { values: xs }, { values: xs }, 0);
  const live = new LiveDownsample(200);
  live.trackBand('y', 'y');
  let at = 0;
  while (at < n) {
    const k = Math.min(n - at, 1 + Math.floor(r() * 700));
    live.append(steps.subarray(at, at + k), null, new Map([['y', { values: xs.subarray(at, at + k), valid: ones }]]));
    at += k;
  }
  assert.equal(built.width, live.width);
  assert.deepEqual(built.points(), live.points());
});

test('a column first logged late has no points before it, and a delta from a bucket carries only what follows', () => {
  const live = new LiveDownsample(4);
  live.append([0, 1, 2], null, new Map([['a', { values: [1, 2, 3] }]]));
  live.append([3, 4], null, new Map([['a', { values: [4, 5] }], ['late', { values: [7, 8] }]]));
  const all = live.points();
  assert.equal(all.width, 1);
  assert.deepEqual(all.series.late, [null, null, null, 7, 8]);
  const tail = live.points(3);
  assert.equal(tail.from, 3);
  assert.deepEqual(tail.x.step, [3, 4]);
  assert.deepEqual(tail.series.a, [4, 5]);
  // past 2 × buckets the buckets merge: two points each, from the first bucket again
  live.append([5, 6, 7, 8], null, new Map([['a', { values: [0, 9, 6, 6] }]]));
  const merged = live.points();
  assert.equal(merged.width, 2);
  assert.equal(live.generation, 1);
  assert.deepEqual(merged.x.step, [0, 1, 2, 3, 4, 5, 6, 7, 8, 8]);
  assert.deepEqual(merged.series.a, [1, 2, 3, 4, 5, 0, 9, 6, 6, 6]);
  assert.deepEqual(merged.series.late, [null, null, 7, 7, 8, 8, null, null, null, null]);
});

test('a band holds each bucket lowest mean − spread and highest mean + spread, a negative spread as its size', () => {
  const live = new LiveDownsample(2);
  const key = live.trackBand('m', 's');
  live.append([0, 1], null, new Map([['m', { values: [1, 2] }], ['s', { values: [0.5, -1] }]]));
  assert.deepEqual(live.points().bands[key], { lo: [0.5, 1], hi: [1.5, 3] });
  live.append([2, 3], null, new Map([['m', { values: [0, NaN] }], ['s', { values: [2, 1] }]]));
  // merged: rows 0–1 and 2–3, each bucket's bounds at both its points
  assert.deepEqual(live.points().bands[key], { lo: [0.5, 0.5, -2, -2], hi: [3, 3, 2, 2] });
});

test('alongX gives a column exactly at the rows downsample puts on its x: each row, or each bucket first and last, in step order', () => {
  for (let seed = 1; seed <= 8; seed++) {
    const r = prng(seed);
    const n = Math.floor(r() * 5000);
    const buckets = 1 + Math.floor(r() * 200);
    // steps shuffled and some logged twice (a resume): the chart order is by step, each at its last write
    const steps = Float64Array.from({ length: n }, (_, i) => (r() < 0.1 ? Math.floor(r() * (i + 1)) : i));
    const times = Float64Array.from(steps, (s, i) => (r() < 0.02 ? NaN : 1_790_000_000.123456 + s * 3.5 + i * 1e-6));
    const d = downsample(steps, [times], buckets);
    const t = alongX(steps, times, buckets);
    const where = `seed ${seed}, ${n} rows, ${buckets} buckets`;
    assert.equal(t.length, d.x.length, where);
    // the time of each x's row, to the microsecond (downsample's own values keep six digits)
    const last = new Map<number, number>();
    steps.forEach((s, i) => last.set(s, i));
    t.forEach((v, k) => {
      const want = times[last.get(d.x[k])!];
      assert.equal(v, Number.isFinite(want) ? want : null, `${where}, point ${k} (step ${d.x[k]})`);
    });
  }
});
