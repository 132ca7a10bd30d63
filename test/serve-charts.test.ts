/**
 * probe serve's chart state without a server: a band whose spread is first logged in a tail
 * starts with that tail's rows; a follow put off or failed is made up on the next look;
 * the charts of a run a page shows are never the ones dropped.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import { ChartsCache } from '../ts/serve/charts-cache.js';
import { LiveCharts } from '../ts/serve/live-charts.js';
import { RunEntry } from '../ts/serve/run-entry.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

function liveRun(): { dir: string; rec: Recorder; log: (from: number, to: number, spread: boolean) => void } {
  const dir = path.join(tempDir('rlprobe-serve-charts-'), 'run');
  const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
  const log = (from: number, to: number, spread: boolean) => {
    for (let step = from; step < to; step++) rec.logStep({ step, reward_mean: step / 100, ...(spread ? { reward_std: 0.1 } : {}) });
    assert.ok(rec.flushSync(10_000));
  };
  return { dir, rec, log };
}

describe('probe serve: live chart state', () => {
  test('a spread first logged in a tail: its band starts with that tail\'s rows', async () => {
    const { dir, rec, log } = liveRun();
    try {
      log(0, 40, false);
      const reader = RunReader.open(dir);
      const charts = await LiveCharts.open(reader, 1000);
      log(40, 60, true);
      assert.equal(charts.follow(reader), 'grew');
      const band = charts.points().bands['reward_mean\u0000reward_std'];
      assert.ok(band, JSON.stringify(Object.keys(charts.points().bands)));
      assert.deepEqual(band.lo.slice(0, 40), Array(40).fill(null));
      assert.equal(band.lo[40], Number((0.4 - 0.1).toPrecision(6)));
      assert.equal(band.hi[59], Number((0.59 + 0.1).toPrecision(6)));
    } finally {
      rec.close();
    }
  });

  test('a follow that failed is made up on the next look, with nothing changed since', async () => {
    const { dir, rec, log } = liveRun();
    try {
      log(0, 10, false);
      const entry = new RunEntry('0123456789abcdef', dir, 'runs/run');
      entry.poll();
      const cache = new ChartsCache(1000, 4);
      await cache.of(entry);
      log(10, 30, false);
      const reader = entry.reader!;
      const real = reader.stepTableFrom;
      reader.stepTableFrom = () => {
        throw new Error('files moving under a compaction');
      };
      assert.equal(await cache.follow(entry), null);
      assert.equal(cache.isBehind(entry.key), true);
      reader.stepTableFrom = real;
      const grown = await cache.follow(entry);
      assert.equal(grown?.rows, 30);
      assert.equal(cache.isBehind(entry.key), false);
    } finally {
      rec.close();
    }
  });

  test('past its size the cache drops the least recently used charts, never those a page shows', async () => {
    const runs = [liveRun(), liveRun(), liveRun()];
    try {
      const entries = runs.map(({ dir, log }, i) => {
        log(0, 5, false);
        const e = new RunEntry(`${i}`.padStart(16, '0'), dir, `runs/${i}`);
        e.poll();
        return e;
      });
      const watched = new Set([entries[0].key]);
      const cache = new ChartsCache(1000, 1, () => watched);
      for (const e of entries) await cache.of(e);
      assert.equal(cache.held(entries[0].key), true, 'the shown run stays');
      assert.equal(cache.held(entries[1].key), false, 'the least recently used other run goes');
      assert.equal(cache.held(entries[2].key), true, 'the one just asked for stays (a shown run holds the cache over its size)');
    } finally {
      for (const r of runs) r.rec.close();
    }
  });
});
