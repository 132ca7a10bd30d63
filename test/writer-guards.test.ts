/**
 * Guards of the run directory (issue 15): one writer per run directory, in one process or
 * across processes, with a killed writer's lock taken over; a refused record never uses up
 * the column budget of the records after it; a full disk is reported, not only counted.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Recorder, RlprobeError, RunReader } from '../ts/index.js';
import { freshTempDir, spawnChild, waitForExit } from './helpers/child.js';
import { probe } from './helpers/in-process-cli.js';

const QUIET = { captureEnvironment: false, installHandlers: false } as const;

function lockedError(fn: () => unknown): RlprobeError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof RlprobeError, `expected an RlprobeError, got ${String(error)}`);
    assert.equal(error.code, 'RLPROBE_LOCKED');
    return error;
  }
  assert.fail('the second recorder was accepted');
}

test('a second recorder on a run directory is refused, naming the directory and the holder', (t) => {
  const tmp = freshTempDir('one-writer');
  t.after(tmp.cleanup);
  const dir = path.join(tmp.dir, 'run');
  const first = new Recorder(dir, { ...QUIET, runId: 'first' });
  const err = lockedError(() => new Recorder(dir, { ...QUIET, runId: 'second' }));
  assert.match(err.message, new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.match(err.message, new RegExp(`pid ${process.pid}`));
  for (let step = 0; step < 30; step++) first.logStep({ step, loss: step });
  first.close();
  // the refused recorder wrote nothing: the manifest is the first's
  assert.equal(RunReader.open(dir).manifest.run_id, 'first');
  const again = new Recorder(dir, QUIET);
  again.logStep({ step: 30, loss: 30 });
  again.close();
  assert.deepEqual(RunReader.open(dir).steps().map((s) => s.step), Array.from({ length: 31 }, (_, i) => i));
});

test('a recorder in another process holds the directory until it dies; its lock is then taken over', async (t) => {
  const tmp = freshTempDir('one-writer-procs');
  t.after(tmp.cleanup);
  const dir = path.join(tmp.dir, 'run');
  const child = spawnChild('hold-recorder.ts', [dir]);
  try {
    await child.waitForLine(/^ready$/, 60_000);
    const err = lockedError(() => new Recorder(dir, QUIET));
    assert.match(err.message, new RegExp(`pid ${child.proc.pid}`));
    child.proc.kill('SIGKILL');
    await waitForExit(child, 30_000);
  } finally {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  }
  assert.ok(existsSync(path.join(dir, '.writer.lock')), 'the dead writer left its lock file');
  const rec = new Recorder(dir, QUIET); // no clean-up needed: the kernel released the lock
  rec.logStep({ step: 1, loss: 1 });
  rec.close();
  assert.deepEqual(RunReader.open(dir).steps().map((s) => s.step), [0, 1]);
});

test('a record refused for too many new columns registers none of them', (t) => {
  const tmp = freshTempDir('column-budget');
  t.after(tmp.cleanup);
  const dir = path.join(tmp.dir, 'run');
  const rec = new Recorder(dir, QUIET);
  rec.logStep({ step: 0, loss: 1 });
  const huge: Record<string, number> = {};
  for (let i = 0; i < 5000; i++) huge[`m${i}`] = i;
  rec.logStep({ step: 1, extra: huge });
  // before the fix the refused record had registered 4,095 columns: every later new field was refused
  for (let step = 2; step < 12; step++) rec.logStep({ step, loss: 1, [`late_${step}`]: step });
  const summary = rec.close();
  assert.equal(summary.counters.bad, 1, 'only the huge record is refused');
  assert.equal(summary.counters.written, 11);
  const run = RunReader.open(dir);
  const columns = run.stepColumns().map((c) => c.name);
  assert.ok(columns.includes('extra.late_2') && columns.includes('extra.late_11'), columns.join(', '));
  assert.ok(!columns.includes('extra.m0'), 'nothing of the refused record became a column');
  const bad = run.events().find((e) => e.kind === 'bad_record');
  assert.match(bad!.message, /would add more than 4096 new columns .*nothing of it was added/);
});

test('a full disk: counted, flushSync false, one stderr line, and written down once space returns', async (t) => {
  const tmp = freshTempDir('disk-full');
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2048k', 'tmpfs', tmp.dir]);
  t.after(() => {
    if (mount.status === 0) spawnSync('umount', [tmp.dir]);
    tmp.cleanup();
  });
  if (mount.status !== 0) {
    t.skip(`cannot mount a small tmpfs here (needs root): ${String(mount.stderr).trim()}`);
    return;
  }
  const dir = path.join(tmp.dir, 'run');
  const child = spawnChild('disk-full.ts', [dir, path.join(tmp.dir, 'filler')]);
  const exit = await waitForExit(child, 120_000);
  assert.deepEqual(exit, { code: 0, signal: null }, child.describe());
  const phases = Object.fromEntries(child.lines.map((l) => JSON.parse(l) as { phase: string; flushed: boolean; counters: Record<string, number>; error?: string }).map((p) => [p.phase, p]));
  assert.equal(phases.before.flushed, true);
  assert.equal(phases.full.flushed, false, 'flushSync says it could not write');
  assert.ok(phases.full.counters.writeFailures >= 2, JSON.stringify(phases.full.counters));
  assert.equal(phases.full.counters.dropped, 50, 'the rows that could not be written count as dropped');
  assert.equal(phases.freed.flushed, true, 'writing works again');
  assert.deepEqual([phases.closed.counters.written, phases.closed.counters.dropped], [20, 50]);
  assert.match(phases.closed.error!, /No space left on device/);
  const lines = child.stderr().split('\n').filter((l) => l.startsWith('rlprobe: recording'));
  assert.equal(lines.length, 1, `one stderr line for a burst of failures:\n${child.stderr()}`);
  assert.match(lines[0], /No space left on device/);

  const run = RunReader.open(dir);
  const outage = run.events({ kinds: ['recorder_error'] }).find((e) => /writing failed/.test(e.message));
  assert.ok(outage, 'the outage is in events.jsonl once space returned');
  assert.equal((outage.data.lost as { steps: number }).steps, 50);
  const drops = run.events({ kinds: ['recorder_drops'] });
  assert.deepEqual(drops.map((e) => [e.data.count, e.data.reason]), [[50, 'write_failed']]);
  assert.deepEqual(run.steps().map((s) => s.step), [...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 60 + i)]);
  const info = await probe(['info', dir]);
  assert.match(info.stdout, /drops\s+50 step records dropped \(failed writes\)/);
});
