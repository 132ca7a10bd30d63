/**
 * Schema-version policy (docs/format.md#schema-versioning; ts/reader/migrations.ts):
 * - an older recording is migrated on read, in memory only: a synthetic schema_version 0
 *   (manifest `algo`, step columns `extra.kl`/`extra.entropy`, sample column `extra.reward`,
 *   events with `ts_ms`) reads as version 1 through a test migration, and is refused
 *   (RLPROBE_SCHEMA_UNSUPPORTED) without one — the built-in chain is empty;
 * - a newer recording is refused with an upgrade hint (RunReader and the CLI);
 * - unknown columns are ignored, missing ones read as absent;
 * - no command rewrites a recording's data in place: every read leaves every file as it
 *   was, and `probe compact` only replaces part files by compacted ones, values unchanged.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { TestContext } from 'node:test';

import { MIGRATIONS, Recorder, RunReader, SCHEMA_VERSION, compactRun } from '../ts/index.js';
import type { Migration } from '../ts/index.js';
import { spawnChild, waitForExit } from './helpers/child.js';
import { QUIET, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import type { ChildResult } from './helpers/fixtures.js';
import { throwsCode } from './helpers/errors.js';
import { sqlPath, withDuckDB } from './helpers/duckdb.js';

after(cleanupTempDirs);

// ---------------------------------------------------------------- helpers

function assertExit(r: ChildResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code} (signal ${r.signal})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** A clean failure: exit 1, nothing on stdout, one `probe: …` line on stderr, no stack. */
function assertCleanFailure(r: ChildResult, what: string, message: RegExp): void {
  assertExit(r, 1, what);
  assert.equal(r.stdout, '', `${what}: nothing on stdout`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `${what}: one line on stderr:\n${r.stderr}`);
  assert.match(lines[0], /^probe: /);
  assert.match(lines[0], message);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
}

interface FileState {
  sha256: string;
  mtimeMs: number;
  size: number;
}

/** Every file under `dir` (dot files included), relative path → content hash, mtime, size. */
function snapshotFiles(dir: string): Map<string, FileState> {
  const out = new Map<string, FileState>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else out.set(path.relative(dir, p), { sha256: createHash('sha256').update(readFileSync(p)).digest('hex'), mtimeMs: st.mtimeMs, size: st.size });
    }
  };
  walk(dir);
  return out;
}

function assertUnchanged(before: Map<string, FileState>, after: Map<string, FileState>, what: string): void {
  assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), `${what}: no file added or removed`);
  for (const [file, state] of before) {
    assert.deepEqual(after.get(file), state, `${what}: ${file} unchanged (content and mtime)`);
  }
}

function readJsonLines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
}

// ---------------------------------------------------------------- a synthetic schema_version 0

const V0_STEPS = 20;
const V0_SAMPLES_PER_STEP = 2;

const klOf = (s: number) => 0.01 * s + 0.001;
const entropyOf = (s: number) => 2 - 0.05 * s;
const lossOf = (s: number) => 1 / (s + 1);
const rewardOf = (s: number, i: number) => s + 0.25 * i;

/**
 * Version 0 → 1, as a real breaking change would be written: `algo` became `algorithm`,
 * the KL and entropy step columns got their StepRecord names, the sample reward its
 * SampleRecord name, and events' `ts_ms` (milliseconds) became `timestamp` (seconds).
 */
const V0_TO_V1: Migration = {
  from: 0,
  describe: 'v0 → v1: algo → algorithm, kl/entropy → kl_mean/entropy_mean, reward → reward_total, ts_ms → timestamp',
  manifest: (raw) => {
    const { algo, ...rest } = raw;
    return { ...rest, algorithm: algo };
  },
  stepColumns: { 'extra.kl': 'kl_mean', 'extra.entropy': 'entropy_mean' },
  sampleColumns: { 'extra.reward': 'reward_total' },
  event: (raw) => {
    const { ts_ms, ...rest } = raw;
    return typeof ts_ms === 'number' ? { ...rest, timestamp: ts_ms / 1000 } : raw;
  },
};

interface V0Run {
  dir: string;
  /** timestamp (seconds) each event line should read as, in file order. */
  eventTimes: number[];
  eventKinds: string[];
}

/**
 * Records a normal run whose columns carry the old names (unknown top-level numeric keys
 * land in `extra.<name>`), then rewrites its manifest and events as version 0 wrote them.
 */
function buildV0Run(): V0Run {
  const dir = tempDir('rlprobe-v0-');
  const rec = new Recorder(dir, { ...QUIET, flushSteps: 7, captureEnvironment: false, runId: 'v0-run', algorithm: 'ppo' });
  for (let s = 0; s < V0_STEPS; s++) {
    rec.logStep({ step: s, loss: lossOf(s), kl: klOf(s), entropy: entropyOf(s), extra: { kept: s } });
    rec.logSamples(
      range(V0_SAMPLES_PER_STEP).map((i) => ({ sample_id: `v0-${s}-${i}`, reward: rewardOf(s, i), completion_text: `c${s}.${i}` }) as never),
      { step: s, select: false },
    );
    if (s % 5 === 0) rec.logEvent('checkpoint', { step: s, message: `ckpt ${s}`, data: { s } });
  }
  const summary = rec.close();
  assert.equal(summary.counters.bad, 0, 'v0 fixture: no bad record');
  assert.equal(summary.counters.samplesBad, 0, 'v0 fixture: no bad sample');

  const manifestFile = path.join(dir, 'manifest.json');
  const { algorithm, ...manifest } = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(manifestFile, `${JSON.stringify({ ...manifest, schema_version: 0, algo: algorithm }, null, 2)}\n`);

  const eventsFile = path.join(dir, 'events.jsonl');
  const eventTimes: number[] = [];
  const eventKinds: string[] = [];
  const lines = readJsonLines(eventsFile).map((e) => {
    const { timestamp, ...rest } = e;
    const ts_ms = Math.round((timestamp as number) * 1000);
    eventTimes.push(ts_ms / 1000);
    eventKinds.push(rest.kind as string);
    return JSON.stringify({ ts_ms, ...rest });
  });
  writeFileSync(eventsFile, `${lines.join('\n')}\n`);
  return { dir, eventTimes, eventKinds };
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

describe('schema_version policy', () => {
  test('this build writes and reads schema_version 1; the built-in migration chain is empty', () => {
    assert.equal(SCHEMA_VERSION, 1);
    assert.deepEqual([...MIGRATIONS], []);
  });

  describe('an older recording (synthetic schema_version 0) is migrated on read', () => {
    const v0 = buildV0Run();
    const onDisk = snapshotFiles(v0.dir);

    test('the fixture really is version 0 on disk, under the old names', () => {
      const m = JSON.parse(readFileSync(path.join(v0.dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(m.schema_version, 0);
      assert.equal(m.algo, 'ppo');
      assert.equal('algorithm' in m, false);
      const e = readJsonLines(path.join(v0.dir, 'events.jsonl'));
      assert.ok(e.every((x) => typeof x.ts_ms === 'number' && !('timestamp' in x)));
    });

    test('RunReader with the migration: manifest, adapter, step columns under current names', () => {
      const reader = RunReader.open(v0.dir, { migrations: [V0_TO_V1] });
      assert.equal(reader.adapter.migrated, true);
      assert.equal(reader.adapter.fromVersion, 0);
      assert.equal(reader.manifest.schema_version, SCHEMA_VERSION, 'migrated manifests read as the current version');
      assert.equal(reader.manifest.algorithm, 'ppo');
      assert.equal('algo' in reader.manifest, false);
      assert.equal(reader.manifest.run_id, 'v0-run');

      const columns = reader.stepColumns().map((c) => c.name);
      assert.ok(columns.includes('kl_mean') && columns.includes('entropy_mean'), `renamed columns: ${columns.join(', ')}`);
      assert.ok(!columns.includes('extra.kl') && !columns.includes('extra.entropy'), `old names gone: ${columns.join(', ')}`);
      assert.ok(columns.includes('extra.kept'), 'a column no migration touches keeps its name');
      assert.equal(reader.stepColumns().find((c) => c.name === 'kl_mean')?.kind, 'f64');

      const steps = range(V0_STEPS);
      const view = reader.view();
      assert.deepEqual(Array.from(view.steps), steps);
      assert.deepEqual(Array.from(view.series('kl_mean')), steps.map(klOf));
      assert.deepEqual(Array.from(view.series('entropy_mean')), steps.map(entropyOf));
      assert.deepEqual(Array.from(view.series('loss')), steps.map(lossOf));
      assert.deepEqual(Array.from(view.extra('kept')), steps);
      assert.equal(view.has('extra.kl'), false);
      assert.deepEqual(view.extraNames(), ['kept']);

      // a projection by current name reads the old column
      const projected = reader.view(['kl_mean']);
      assert.deepEqual(projected.columns().sort(), ['kl_mean', 'step']);
      assert.deepEqual(Array.from(projected.series('kl_mean')), steps.map(klOf));
      const table = reader.stepTable(['entropy_mean']);
      assert.deepEqual(table.columns.map((c) => c.name), ['entropy_mean']);
      assert.deepEqual(Array.from(table.columns[0].values), steps.map(entropyOf));

      // records: the renamed values are top-level fields, not extras
      const records = reader.steps();
      assert.equal(records.length, V0_STEPS);
      for (const r of records) {
        assert.equal(r.kl_mean, klOf(r.step));
        assert.equal(r.entropy_mean, entropyOf(r.step));
        assert.equal(r.loss, lossOf(r.step));
        assert.deepEqual(r.extra, { kept: r.step }, `step ${r.step}: only the untouched extra remains`);
      }
    });

    test('samples: renamed column read, filtered and projected under its current name', () => {
      const reader = RunReader.open(v0.dir, { migrations: [V0_TO_V1] });
      const samples = [...reader.samples()];
      assert.equal(samples.length, V0_STEPS * V0_SAMPLES_PER_STEP);
      for (const s of samples) {
        const [, step, i] = /^v0-(\d+)-(\d+)$/.exec(s.sample_id)!.map(Number);
        assert.equal(s.step, step);
        assert.equal(s.reward_total, rewardOf(step, i), `${s.sample_id}: reward_total`);
        assert.equal(s.extra, undefined, `${s.sample_id}: extra.reward no longer shows as an extra`);
        assert.equal(s.completion_text, `c${step}.${i}`);
      }
      const projected = [...reader.samples({ step: 3, columns: ['sample_id', 'reward_total'] })];
      assert.deepEqual(
        projected.map((s) => ({ id: s.sample_id, r: s.reward_total, text: s.completion_text })),
        [0, 1].map((i) => ({ id: `v0-3-${i}`, r: rewardOf(3, i), text: undefined })),
      );
    });

    test('events: transformed by the migration (ts_ms → timestamp), none skipped', () => {
      const reader = RunReader.open(v0.dir, { migrations: [V0_TO_V1] });
      const { events, skippedLines } = reader.eventsWithDiagnostics();
      assert.equal(skippedLines, 0);
      assert.deepEqual(events.map((e) => e.timestamp), v0.eventTimes);
      assert.deepEqual(events.map((e) => e.kind), v0.eventKinds);
      assert.deepEqual(events.filter((e) => e.kind === 'checkpoint').map((e) => e.step), [0, 5, 10, 15]);
      assert.ok(events.every((e) => !('ts_ms' in e)));
      // plausibly seconds, not milliseconds
      assert.ok(events.every((e) => Math.abs(e.timestamp - Date.now() / 1000) < 3600), JSON.stringify(events[0]));
    });

    test('without a migration from 0: RLPROBE_SCHEMA_UNSUPPORTED, from the API', () => {
      throwsCode(() => RunReader.open(v0.dir), 'RLPROBE_SCHEMA_UNSUPPORTED', /schema_version 0.*no migration from version 0 to 1/);
      throwsCode(() => RunReader.open(v0.dir, { migrations: MIGRATIONS }), 'RLPROBE_SCHEMA_UNSUPPORTED');
      throwsCode(() => RunReader.open(v0.dir, { migrations: [] }), 'RLPROBE_SCHEMA_UNSUPPORTED');
      // a chain that does not start at the recording's version does not reach it
      throwsCode(() => RunReader.open(v0.dir, { migrations: [{ ...V0_TO_V1, from: 1 }] }), 'RLPROBE_SCHEMA_UNSUPPORTED');
    });

    test('without a migration from 0: every CLI command fails cleanly (exit 1, one line)', async () => {
      const results = await Promise.all([
        runCli(['info', v0.dir]),
        runCli(['info', v0.dir, '--json']),
        runCli(['events', v0.dir]),
        runCli(['samples', v0.dir]),
      ]);
      for (const [i, r] of results.entries()) assertCleanFailure(r, `command ${i}`, /schema_version 0.*no migration from version 0 to 1/);
    });

    test('reading it, migrated or refused, rewrote nothing', () => {
      assertUnchanged(onDisk, snapshotFiles(v0.dir), 'v0 run after every read');
    });
  });

  describe('a newer recording (schema_version 2) is refused with an upgrade hint', () => {
    /**
     * A real run (steps, samples, events) whose manifest says version 2: closed, or with its
     * part files still live (the recorder is closed when the test ends).
     */
    function v2Run(t: TestContext, closeIt: boolean): string {
      const dir = tempDir('rlprobe-v2-');
      const rec = new Recorder(dir, { ...QUIET, flushSteps: 4, captureEnvironment: false });
      t.after(() => rec.close());
      for (let s = 0; s < 10; s++) {
        rec.logStep({ step: s, loss: s });
        rec.logSamples([{ sample_id: `s${s}`, reward_total: s }], { step: s, select: false });
      }
      if (closeIt) rec.close();
      else assert.ok(rec.flushSync(20_000));
      const file = path.join(dir, 'manifest.json');
      const m = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeFileSync(file, JSON.stringify({ ...m, schema_version: 2 }));
      return dir;
    }

    test('RunReader: RLPROBE_SCHEMA_TOO_NEW naming the version, even given migrations', (t) => {
      const dir = v2Run(t, true);
      const e = throwsCode(() => RunReader.open(dir), 'RLPROBE_SCHEMA_TOO_NEW', /upgrade rlprobe/);
      assert.match(e.message, /schema_version 2/);
      assert.match(e.message, /reads up to 1/);
      throwsCode(() => RunReader.open(dir, { migrations: [V0_TO_V1, { from: 1, describe: 'bogus' }] }), 'RLPROBE_SCHEMA_TOO_NEW', /upgrade/);
    });

    test('the CLI read commands: exit 1, one line with the upgrade hint', async (t) => {
      const dir = v2Run(t, true);
      const before = snapshotFiles(dir);
      const results = await Promise.all([
        runCli(['info', dir]),
        runCli(['info', dir, '--json']),
        runCli(['events', dir]),
        runCli(['samples', dir, '--json']),
      ]);
      for (const [i, r] of results.entries()) assertCleanFailure(r, `command ${i}`, /upgrade rlprobe/);
      assertUnchanged(before, snapshotFiles(dir), 'v2 run after refused reads');
    });

    test('probe compact / compactRun refuse it too, leaving its files alone', async (t) => {
      // A newer format may have changed the layout or the meaning of the part files; an
      // older rlprobe that merges (and deletes) them would rewrite a recording it cannot read.
      const dir = v2Run(t, false);
      const before = snapshotFiles(dir);
      assert.ok([...before.keys()].some((f) => /^steps\/part-\d+\.parquet$/.test(f)), 'the fixture has step parts');
      const r = await runCli(['compact', dir]);
      const after = snapshotFiles(dir);
      assert.deepEqual(
        { code: r.code, filesUnchanged: JSON.stringify([...after.keys()]) === JSON.stringify([...before.keys()]) },
        { code: 1, filesUnchanged: true },
        `probe compact on a schema_version 2 run must refuse like every other command (exit 1, upgrade hint) and leave it as is; ` +
          `got exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\nfiles before: ${[...before.keys()].join(', ')}\nfiles after: ${[...after.keys()].join(', ')}`,
      );
      assertCleanFailure(r, 'compact', /upgrade rlprobe/);
      const dir2 = v2Run(t, false);
      throwsCode(() => compactRun(dir2), 'RLPROBE_SCHEMA_TOO_NEW', /upgrade rlprobe/);
    });
  });

  /**
 * A live run with steps 0–5 (loss s/10) published, plus a part another (newer) writer
 * wrote: steps 100–102, loss i/2, `extraColumns`, and a text and a struct column this
 * version does not know.
 */
async function runWithForeignPart(t: TestContext, prefix: string, extraColumns: string) {
  const dir = tempDir(prefix);
  const rec = new Recorder(dir, { ...QUIET, flushSteps: 3, captureEnvironment: false });
  t.after(() => rec.close());
  for (let s = 0; s < 6; s++) {
    rec.logStep({ step: s, loss: s / 10 });
    if (s === 2) assert.ok(rec.flushSync(20_000)); // two parts of 3 (a backlog would be one)
  }
  assert.ok(rec.flushSync(20_000));
  const foreign = path.join(dir, 'steps', 'part-00099.parquet');
  await withDuckDB(async (con) => {
    await con.run(
      `COPY (SELECT (100 + i)::BIGINT AS step, (i * 0.5)::DOUBLE AS loss, ${extraColumns}'note ' || i::VARCHAR AS note, {'a': i, 'b': 'x' || i::VARCHAR} AS nested ` +
        `FROM range(3) t(i)) TO '${sqlPath(foreign)}' (FORMAT parquet, COMPRESSION zstd)`,
    );
  });
  return { dir, rec, foreign };
}

describe('additive changes: unknown columns ignored, missing columns absent', () => {
    test('a step part with unknown columns (text, struct): ignored by every reader, loss still read', async (t) => {
      const { dir } = await runWithForeignPart(t, 'rlprobe-unknown-cols-', '');
      const reader = RunReader.open(dir);
      const columns = reader.stepColumns().map((c) => c.name);
      assert.deepEqual(columns, ['step', 'timestamp', 'rank', 'loss'], 'unknown columns are not listed');
      const steps = reader.steps();
      assert.deepEqual(steps.map((s) => s.step), [0, 1, 2, 3, 4, 5, 100, 101, 102]);
      assert.deepEqual(steps.map((s) => s.loss), [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0, 0.5, 1]);
      for (const s of steps) {
        assert.ok(!('note' in s) && !('nested' in s), `step ${s.step}: ${JSON.stringify(s)}`);
      }
      // the foreign part has no timestamp/rank: absent on its rows, not zero
      for (const s of steps.filter((x) => x.step >= 100)) {
        assert.deepEqual(Object.keys(s).sort(), ['loss', 'step'], `step ${s.step}`);
      }
      const view = reader.view();
      assert.deepEqual(Array.from(view.series('loss')), [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0, 0.5, 1]);
      assert.equal(view.has('note'), false);
      assert.equal(view.has('nested'), false);
      assert.ok(view.series('note').every(Number.isNaN));
      assert.deepEqual(reader.stepTable(['note', 'nested']).columns, [], 'asking for an unknown column gives nothing, not an error');
      assert.equal(reader.storage().files.length, 3);

      const info = await runCli(['info', dir, '--json']);
      assertExit(info, 0, 'info --json');
      const parsed = JSON.parse(info.stdout) as { rows: number; columns: string[]; last_step: number };
      assert.equal(parsed.rows, 9);
      assert.equal(parsed.last_step, 102);
      assert.deepEqual(parsed.columns, ['step', 'timestamp', 'rank', 'loss']);
    });

    test('compaction keeps the columns it does not know (it must not drop recorded data)', async (t) => {
      // Same fixture as above, then compaction (close() and `probe compact` share it). The
      // part files are deleted afterwards, so whatever steps.parquet leaves out is lost.
      const { dir, rec, foreign } = await runWithForeignPart(t, 'rlprobe-unknown-compact-', '(i * 7)::DOUBLE AS future_metric, ');
      const summary = rec.close();
      assert.equal(summary.error, null);
      assert.ok(existsSync(path.join(dir, 'steps.parquet')));
      assert.equal(existsSync(foreign), false, 'the foreign part was merged and deleted');
      const compacted = path.join(dir, 'steps.parquet');
      const kept = await withDuckDB(async (con) => {
        const described = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${sqlPath(compacted)}')`);
        return described.getRowObjectsJS().map((r) => String(r.column_name));
      });
      // numeric unknown columns survive (and are read back) ...
      assert.ok(kept.includes('future_metric'), `columns after compaction: ${kept.join(', ')}`);
      assert.deepEqual(Array.from(RunReader.open(dir).view().series('future_metric')).slice(-3), [0, 7, 14]);
      // ... and so must the others: compaction "only merges part files; never rewrites data"
      assert.deepEqual(
        ['note', 'nested'].filter((c) => !kept.includes(c)),
        [],
        `compaction dropped unknown non-numeric step columns; steps.parquet has only: ${kept.join(', ')}`,
      );
    });

    test('a sample part with unknown columns: known fields still read', async (t) => {
      const dir = tempDir('rlprobe-unknown-sample-cols-');
      const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
      t.after(() => rec.close());
      rec.logSamples([{ sample_id: 'a', reward_total: 1.5 }], { step: 0, select: false });
      assert.ok(rec.flushSync(20_000));
      const foreign = path.join(dir, 'samples', 'part-00099.parquet');
      await withDuckDB(async (con) => {
        await con.run(
          `COPY (SELECT 7::BIGINT AS step, 'b' AS sample_id, 2.5::DOUBLE AS reward_total, {'a': 1, 'b': 'x'} AS nested, [1.5, 2.5] AS nums_future ` +
            `) TO '${sqlPath(foreign)}' (FORMAT parquet, COMPRESSION zstd)`,
        );
      });
      const check = (what: string) => {
        const samples = [...RunReader.open(dir).samples()];
        assert.deepEqual(
          samples.map((s) => ({ step: s.step, id: s.sample_id, r: s.reward_total, rank: s.rank })),
          [
            { step: 0, id: 'a', r: 1.5, rank: 0 },
            { step: 7, id: 'b', r: 2.5, rank: 0 },
          ],
          what,
        );
        assert.ok(samples.every((s) => !('nested' in s)), `${what}: a struct column is not surfaced`);
      };
      check('parts');
      rec.close();
      check('after compaction');
    });

    test('missing columns read as absent: series all NaN, keys absent, has() false', () => {
      const dir = tempDir('rlprobe-missing-cols-');
      const rec = new Recorder(dir, { ...QUIET, flushSteps: 4, captureEnvironment: false });
      for (let s = 0; s < 10; s++) rec.logStep({ step: s, reward_mean: s * 2, ...(s >= 6 ? { kl_mean: s / 100 } : {}) });
      rec.logSamples([{ sample_id: 'no-reward', completion_text: 'x' }], { step: 0, select: false });
      rec.close();

      const reader = RunReader.open(dir);
      const names = reader.stepColumns().map((c) => c.name);
      assert.ok(!names.includes('loss'), names.join(', '));
      const view = reader.view();
      assert.equal(view.has('loss'), false);
      assert.equal(view.presentCount('loss'), 0);
      const loss = view.series('loss');
      assert.equal(loss.length, 10);
      assert.ok(loss.every(Number.isNaN), 'a column no step has reads as NaN throughout');
      assert.ok(view.extra('nope').every(Number.isNaN));
      assert.ok(view.component('nope').every(Number.isNaN));
      // projected on a missing column: the steps are still there
      const projected = reader.view(['loss']);
      assert.deepEqual(Array.from(projected.steps), range(10));
      assert.equal(projected.has('loss'), false);
      assert.ok(projected.series('loss').every(Number.isNaN));

      // a column some steps lack: NaN on those rows in the series, absent from their records
      assert.equal(view.presentCount('kl_mean'), 4);
      assert.deepEqual(Array.from(view.series('kl_mean')).map((v) => (Number.isNaN(v) ? null : v)), [null, null, null, null, null, null, 0.06, 0.07, 0.08, 0.09]);
      for (const s of reader.steps()) {
        assert.equal('loss' in s, false, `step ${s.step}: no loss key`);
        assert.equal('kl_mean' in s, s.step >= 6, `step ${s.step}: kl_mean present only where logged`);
        assert.equal(s.reward_mean, s.step * 2);
      }
      const [sample] = [...reader.samples()];
      assert.equal(sample.sample_id, 'no-reward');
      assert.equal('reward_total' in sample, false);
      assert.equal('advantage' in sample, false);
      assert.equal(sample.completion_text, 'x');
    });
  });

  describe('no command ever rewrites a recording in place', () => {
    const READ_COMMANDS: string[][] = [
      ['info'],
      ['info', '--json'],
      ['events'],
      ['events', '--json'],
      ['events', '--kind', 'checkpoint', '--last', '2'],
      ['samples'],
      ['samples', '--json'],
      ['samples', '--limit', '0', '--json'],
      ['samples', '--rank', '1', '--steps', '2..5', '--full'],
    ];

    /** Every RunReader read method, its results (to compare later). */
    function readEverything(dir: string): unknown {
      const reader = RunReader.open(dir);
      const view = reader.view();
      const out = {
        manifest: reader.manifest,
        steps: reader.steps(),
        series: view.seriesNames().map((n) => Array.from(view.series(n))),
        projected: Array.from(reader.view(['loss']).series('loss')),
        columns: reader.stepColumns(),
        table: reader.stepTable(['step', 'loss']).rows,
        samples: [...reader.samples()],
        filtered: [...reader.samples({ rank: [0, 1], stepRange: [1, 3], columns: ['sample_id', 'reward_total'] })].length,
        batches: [...reader.sampleBatches({ batchRows: 3 })].length,
        events: reader.events(),
        diagnostics: reader.eventsWithDiagnostics().skippedLines,
        storage: reader.storage(),
        stepFiles: reader.stepFiles().length,
        sampleFiles: reader.sampleFiles(),
        rankDirs: reader.rankDirs(),
        layout: reader.layout(),
        leftovers: reader.absorbedLeftovers(),
        lastWrite: reader.lastWriteMs(),
      };
      for (const r of reader.rankDirs()) {
        const sub = RunReader.open(r);
        sub.steps();
        sub.events();
        for (const _sample of sub.samples()) {
          // drained: reading every sample is the work being measured
        }
      }
      return out;
    }

    async function runEveryReadCommand(dir: string): Promise<void> {
      const results = await Promise.all(READ_COMMANDS.map((args) => runCli([args[0], dir, ...args.slice(1)])));
      results.forEach((r, i) => assertExit(r, 0, `probe ${READ_COMMANDS[i].join(' ')}`));
    }

    test('a closed run (steps, samples, events, a rank directory): every read leaves every file as it was', async () => {
      const dir = tempDir('rlprobe-readonly-');
      const rec0 = new Recorder(dir, { ...QUIET, flushSteps: 5, captureEnvironment: false, algorithm: 'grpo' });
      const rec1 = new Recorder(dir, { ...QUIET, flushSteps: 5, captureEnvironment: false, rank: 1, recordAllRanks: true });
      for (let s = 0; s < 12; s++) {
        for (const rec of [rec0, rec1]) {
          rec.logStep({ step: s, loss: 1 / (s + 1), reward_components: { fmt: s % 2 }, kl_positional: [s, s + 1] });
          rec.logSamples(
            [0, 1, 2].map((i) => ({ sample_id: `${rec.options.rank}-${s}-${i}`, reward_total: i, group_id: s, completion_token_ids: [1, 2, i] })),
            { step: s, select: false },
          );
        }
        if (s % 4 === 0) rec0.logEvent('checkpoint', { step: s, message: `ckpt ${s}` });
      }
      rec0.logStep({ step: 12, loss: 'bad' as never }); // a bad_record event too
      rec1.close();
      rec0.close();

      const before = snapshotFiles(dir);
      assert.ok(before.has('steps.parquet') && before.has('events.jsonl') && before.has('rank-001/steps.parquet'), [...before.keys()].join(', '));
      assert.ok([...before.keys()].some((f) => /^samples\/shard-\d+\.parquet$/.test(f)));
      const first = readEverything(dir);
      await runEveryReadCommand(dir);
      const second = readEverything(dir);
      assertUnchanged(before, snapshotFiles(dir), 'closed run after every read');
      assert.deepEqual(second, first, 'reads are repeatable');
    });

    test('a crashed run: reads change nothing; probe compact only swaps part files for compacted ones', async () => {
      // a real crash: the child flushes, then SIGKILLs itself (no close, no compaction)
      const dir = tempDir('rlprobe-crashed-');
      const child = spawnChild('rank-child.ts', [dir, 'kill', '40', 'all'], { env: { RANK: '0', WORLD_SIZE: '1' } });
      const exit = await waitForExit(child, 60_000);
      assert.equal(exit.signal, 'SIGKILL', child.describe());

      const before = snapshotFiles(dir);
      const stepParts = [...before.keys()].filter((f) => /^steps\/part-\d+\.parquet$/.test(f));
      const sampleParts = [...before.keys()].filter((f) => /^samples\/part-\d+\.parquet$/.test(f));
      assert.ok(stepParts.length > 1 && sampleParts.length >= 1, [...before.keys()].join(', '));
      assert.ok(!before.has('steps.parquet'));

      // reading a crashed run (parts layout) changes nothing either
      const values = () => {
        const r = RunReader.open(dir);
        return { steps: r.steps(), samples: [...r.samples()], events: r.events() };
      };
      const valuesBefore = values();
      assert.equal(valuesBefore.steps.length, 40);
      assert.equal(valuesBefore.samples.length, 120);
      await runEveryReadCommand(dir);
      readEverything(dir);
      assertUnchanged(before, snapshotFiles(dir), 'crashed run after every read');

      const r = await runCli(['compact', dir]);
      assertExit(r, 0, 'probe compact');
      const after = snapshotFiles(dir);
      const removed = [...before.keys()].filter((f) => !after.has(f)).sort();
      const added = [...after.keys()].filter((f) => !before.has(f)).sort();
      // and the step parts' column list, which goes with the last of them (samples/ keeps its own)
      assert.deepEqual(removed, [...stepParts, ...sampleParts, 'steps/columns.parquet'].sort(), 'only part files were removed');
      for (const f of added) {
        assert.match(f, /^(steps\.parquet|samples\/shard-\d+\.parquet|\.compact\.lock)$/, `added by compact: ${f}`);
      }
      assert.ok(added.includes('steps.parquet'));
      assert.ok(added.some((f) => f.startsWith('samples/shard-')));
      for (const [file, state] of before) {
        if (after.has(file)) assert.deepEqual(after.get(file), state, `${file} untouched by compact`);
      }
      const valuesAfter = values();
      assert.deepEqual(valuesAfter.steps, valuesBefore.steps, 'the same steps');
      assert.deepEqual(valuesAfter.samples, valuesBefore.samples, 'the same samples');
      assert.deepEqual(valuesAfter.events, valuesBefore.events, 'events untouched');
      assert.equal(RunReader.open(dir).layout(), 'compacted');
    });
  });
});
