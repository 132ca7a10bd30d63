/**
 * `probe info` lists the run's files once: at a million steps the samples are thousands of
 * shards and every listing opens each footer (three listings took 2.4 s of its 2.6 s).
 * `RunReader.fileListing()` gives what the three separate listings give.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';

import { RunReader } from '../ts/index.js';
import { probe } from './helpers/in-process-cli.js';
import { openRun } from './helpers/run-dir.js';

function runWithOddFiles(t: TestContext, damaged: boolean): string {
  const { dir, rec } = openRun(t, 'info-listing');
  for (let step = 0; step < 20; step++) {
    rec.logStep({ step, loss: 1 });
    rec.logSamples([{ reward_total: step, completion_text: `s${step}` }], { step, select: false });
  }
  rec.close();
  // a damaged shard-like file and a foreign one beside the samples
  if (damaged) writeFileSync(path.join(dir, 'samples', 'part-00077.parquet'), 'not parquet');
  writeFileSync(path.join(dir, 'samples', 'notes.parquet'), 'not ours either');
  return dir;
}

test('fileListing() is foreignFiles(), damagedFiles() and sampleFiles() from one listing', (t) => {
  const dir = runWithOddFiles(t, true);
  const r = RunReader.open(dir);
  const listed = r.fileListing();
  assert.equal(listed.damaged.length, 1, 'the damaged part');
  assert.equal(listed.foreign.length, 1, 'the foreign file');
  assert.deepEqual(listed.foreign, r.foreignFiles());
  assert.deepEqual(listed.damaged, r.damagedFiles());
  assert.deepEqual(listed.sampleFiles, r.sampleFiles());
  assert.equal(listed.sampleFiles?.reduce((n, f) => n + f.rows, 0), 20);
});

test('probe info lists the files once', async (t) => {
  const dir = runWithOddFiles(t, false);
  const proto = RunReader.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const calls: Record<string, number> = {};
  for (const name of ['fileListing', 'sampleFiles', 'foreignFiles', 'damagedFiles']) {
    const original = proto[name];
    calls[name] = 0;
    proto[name] = function (this: unknown, ...args: unknown[]) {
      calls[name]++;
      return original.apply(this, args);
    };
    t.after(() => {
      proto[name] = original;
    });
  }
  const out = await probe(['info', dir]);
  assert.match(out.stdout, /samples +20 in 1 file/, out.stdout + out.stderr);
  assert.match(out.stdout, /foreign files +1 skipped/);
  assert.deepEqual(calls, { fileListing: 1, sampleFiles: 0, foreignFiles: 0, damagedFiles: 0 });
});
