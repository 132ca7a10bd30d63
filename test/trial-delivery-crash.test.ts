/**
 * Delivery of a staged trial killed (SIGKILL) part way, then resumed: every confirmation
 * written before the kill survives it, the run shows no capture until the last file is in,
 * and delivering again finishes the job with every file byte-identical and each span once.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';

import { Recorder, RunReader, deliverStaged, stageTrial, stagingStatus } from '../ts/index.js';
import type { StagedCapture } from '../ts/index.js';
import { rejectsCode } from './helpers/errors.js';
import { spawnChild } from './helpers/child.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

/**
 * Enough small files that delivering them spans several confirmation batches (a batch is
 * made durable and journaled at once, every 100 ms), so a kill or an outage lands part way.
 */
const FILES = 3_000;

/** A trial of FILES small artifacts, staged; the run it is delivered into. */
async function stagedBigTrial(root: string, id: string) {
  const trial = path.join(root, `big-task__${id}`);
  mkdirSync(path.join(trial, 'artifacts', 'out'), { recursive: true });
  writeFileSync(path.join(trial, 'result.json'), JSON.stringify({ id, trial_name: `big-task__${id}`, verifier_result: { rewards: { reward: 0.25 } } }));
  for (let i = 0; i < FILES; i++) writeFileSync(path.join(trial, 'artifacts', 'out', `f${String(i).padStart(4, '0')}.bin`), randomBytes(2048));
  const run = path.join(root, 'run');
  new Recorder(run, { ...QUIET, runId: `deliver-${id}`, captureEnvironment: false }).close();
  const { dir, staged } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 4, sampleId: 's4' });
  assert.equal(staged.collection.counts.collected, FILES + 1);
  return { run, dir };
}

/** Waits until the staged record confirms at least `n` files. */
async function confirmed(dir: string, n: number): Promise<number> {
  let done = 0;
  for (const t0 = Date.now(); Date.now() - t0 < 60_000; ) {
    const s = stagingStatus(dir)[0].staged;
    done = Object.values(s.delivery.files).filter((f) => f.status === 'delivered').length;
    if (done >= n) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  return done;
}

test('a delivery killed part way resumes without losing or doubling anything', async () => {
  const { run, dir } = await stagedBigTrial(tempDir('rlprobe-deliver-kill-'), 'Kil1234');
  const child = spawnChild('trial-deliver.ts', [dir, run]);
  await child.waitForLine(/^delivering$/, 30_000);
  // kill once some files are confirmed and some are not
  await confirmed(dir, 5);
  child.proc.kill('SIGKILL');
  const exit = await child.exited;
  assert.equal(exit.signal, 'SIGKILL', `the child finished before it was killed: ${child.describe()}`);

  const afterKill = stagingStatus(dir)[0].staged;
  const files = Object.entries(afterKill.delivery.files);
  const done = files.filter(([, f]) => f.status === 'delivered');
  assert.ok(done.length >= 5 && done.length < files.length, `killed part way (${done.length} of ${files.length} confirmed)`);
  assert.notEqual(afterKill.delivery.status, 'delivered');
  // the confirmations are in the append-only journal beside the record, not in a record
  // rewritten per file; reading the record folds them in
  const journal = path.join(dir, '.probe-capture.journal');
  assert.ok(existsSync(journal), 'the journal survives the kill');
  const raw = JSON.parse(readFileSync(path.join(dir, '.probe-capture.json'), 'utf8')) as StagedCapture;
  assert.equal(Object.values(raw.delivery.files).filter((f) => f.status === 'delivered').length, 0, 'the record is not rewritten per file');
  const journaled = readFileSync(journal, 'utf8').split('\n').filter((l) => l.includes('"delivered"')).length;
  assert.ok(journaled >= done.length, `${journaled} confirmations journaled, ${done.length} read back`);
  // what the record confirms is in the run, byte for byte
  const entries = new Map(afterKill.collection.entries.map((e) => [e.path, e]));
  const runFiles = path.join(run, 'trials', afterKill.capture_key, 'files');
  for (const [rel] of done) {
    const bytes = readFileSync(path.join(runFiles, rel));
    assert.equal(createHash('sha256').update(bytes).digest('hex'), entries.get(rel)!.sha256, rel);
  }
  // no capture is visible while files are missing
  assert.equal(existsSync(path.join(run, 'trials', afterKill.capture_key, 'capture.json')), false);
  assert.deepEqual(RunReader.open(run).trials(), []);
  assert.equal(RunReader.open(run).unfinishedTrials().length, 1);

  // a line torn by the kill (a partial append) is ignored
  appendFileSync(journal, '{"file":"artifacts/out/f02');
  assert.equal(Object.values(stagingStatus(dir)[0].staged.delivery.files).filter((f) => f.status === 'delivered').length, done.length);

  const [resumed] = await deliverStaged(dir, { run });
  assert.equal(resumed.status, 'delivered', JSON.stringify(resumed.unconfirmed.slice(0, 3)));
  assert.equal(resumed.delivered, FILES + 1);
  assert.equal(existsSync(journal), false, 'folded into the record and removed');
  const folded = JSON.parse(readFileSync(path.join(dir, '.probe-capture.json'), 'utf8')) as StagedCapture;
  assert.equal(Object.values(folded.delivery.files).filter((f) => f.status === 'delivered').length, FILES + 1);
  // files confirmed before the kill were not copied again
  for (const [rel, f] of done) assert.equal(folded.delivery.files[rel].attempts, f.attempts, rel);
  const reader = RunReader.open(run);
  const [t] = reader.trials();
  assert.equal(t.ledger.counts.collected, FILES + 1);
  for (const e of t.ledger.entries) {
    if (e.status !== 'collected') continue;
    assert.equal(createHash('sha256').update(readFileSync(path.join(t.files_dir, e.path))).digest('hex'), e.sha256, e.path);
  }
  // the interrupted copy left no temporary behind, and the spans are there once
  const onDisk = readdirSync(t.files_dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
  assert.equal(onDisk.length, FILES + 1, `stray files: ${onDisk.filter((d) => d.name.startsWith('.')).map((d) => d.name)}`);
  const spans = reader.spans({ step: 4 });
  assert.equal(spans.length, t.spans.count);
  assert.equal(new Set(spans.map((s) => s.span_id)).size, spans.length);
  const again = await deliverStaged(dir, { run });
  assert.equal(again[0].status, 'delivered');
  assert.equal(RunReader.open(run).spans({ step: 4 }).length, t.spans.count);
  assert.equal(RunReader.open(run).trials().length, 1);
});

test('the run\'s storage going away part way fails the rest without recreating it; delivering again finishes', async () => {
  const root = tempDir('rlprobe-deliver-outage-');
  const { run, dir } = await stagedBigTrial(root, 'Out4ge0');
  const child = spawnChild('trial-deliver.ts', [dir, run]);
  await child.waitForLine(/^delivering$/, 30_000);
  await confirmed(dir, 5);
  // the volume holding the run is unmounted: its path is gone
  const away = path.join(root, 'run-away');
  renameSync(run, away);
  const exit = await child.exited;
  assert.equal(exit.code, 0, child.describe());
  assert.match(child.stdout(), /^done failed$/m, 'the delivery reports the failure');
  assert.equal(existsSync(run), false, 'the vanished run was not recreated on the local disk');
  const s = stagingStatus(dir)[0].staged;
  const files = Object.entries(s.delivery.files);
  const failed = files.filter(([, f]) => f.status === 'failed');
  assert.ok(failed.length > 0 && failed.length < files.length, `${failed.length} of ${files.length} failed`);
  // copies in flight fail on their rename, copies not yet made durable fail their batch's
  // commit, and every later one finds no destination: all say so
  const errors = [...new Set(failed.map(([, f]) => (f.last_error ?? '').replace(/\/tmp\/\S+/g, '<path>')))];
  assert.ok(failed.every(([, f]) => /not reachable|ENOENT/.test(f.last_error ?? '')), errors.join('\n'));
  assert.ok(failed.some(([, f]) => /not reachable/.test(f.last_error ?? '')), errors.join('\n'));
  assert.equal(s.delivery.status, 'failed');

  renameSync(away, run);
  const [r] = await deliverStaged(dir, { run });
  assert.equal(r.status, 'delivered', JSON.stringify(r.unconfirmed.slice(0, 3)));
  const [t] = RunReader.open(run).trials();
  assert.equal(t.ledger.counts.collected, FILES + 1);
  for (const e of t.ledger.entries) {
    if (e.status === 'collected') assert.equal(createHash('sha256').update(readFileSync(path.join(t.files_dir, e.path))).digest('hex'), e.sha256, e.path);
  }
  assert.equal(RunReader.open(run).spans({ step: 4 }).length, t.spans.count);
});

test('staging the trial again after a killed delivery starts afresh: the old journal is not applied', async () => {
  const root = tempDir('rlprobe-deliver-restage-');
  const { run, dir } = await stagedBigTrial(root, 'Rest4ge');
  const child = spawnChild('trial-deliver.ts', [dir, run]);
  await child.waitForLine(/^delivering$/, 30_000);
  await confirmed(dir, 5);
  child.proc.kill('SIGKILL');
  await child.exited;
  const journal = path.join(dir, '.probe-capture.journal');
  assert.ok(existsSync(journal));
  const journalText = readFileSync(journal);

  const { staged } = await stageTrial(path.join(root, 'big-task__Rest4ge'), { to: path.join(root, 'spool'), step: 4, sampleId: 's4' });
  assert.equal(existsSync(journal), false, 'restaging removes the journal of the earlier staging');
  assert.ok(Object.values(staged.delivery.files).every((f) => f.status === 'pending'));
  // a journal of another staging put back beside the record is refused by name, not applied
  writeFileSync(journal, journalText);
  assert.throws(() => stagingStatus(dir), /\.probe-capture\.journal: written for the staging of .+, not this record's/);
  await rejectsCode(deliverStaged(dir, { run }), 'RLPROBE_BAD_MANIFEST', /\.probe-capture\.journal/);
});
