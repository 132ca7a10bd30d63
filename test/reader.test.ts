/**
 * RunReader: manifest errors, the step layouts (parts, compacted, mixed, resumed after
 * compaction), torn events.jsonl, and RunView / steps() reconstruction.
 */
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { parquetMetadata } from 'hyparquet';

import { Recorder, RunReader, compactRun } from '../ts/index.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { throwsCode } from './helpers/errors.js';

/** A footer key-value of a Parquet file, read by another Parquet implementation. */
function hyparquetKeyValue(file: string, key: string): string {
  const bytes = readFileSync(file);
  const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const kv = meta.key_value_metadata?.find((e) => e.key === key);
  assert.ok(kv?.value !== undefined, `${file} has no footer key ${key}`);
  return kv.value;
}

after(cleanupTempDirs);

const GOOD_MANIFEST = {
  schema_version: 1,
  run_id: 'hand-written',
  created_at: '2024-01-02T03:04:05.000Z',
  algorithm: 'ppo',
};

function runWithManifest(manifest: string): string {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'manifest.json'), manifest);
  return dir;
}

describe('RunReader.open', () => {
  test('a directory without manifest.json is not a run', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'events.jsonl'), '');
    throwsCode(() => RunReader.open(dir), 'RLPROBE_NOT_A_RUN', /not a run directory/);
    throwsCode(() => RunReader.open(path.join(dir, 'missing')), 'RLPROBE_NOT_A_RUN');
  });

  test('schema_version 2 is refused with an upgrade hint', () => {
    const dir = runWithManifest(JSON.stringify({ ...GOOD_MANIFEST, schema_version: 2 }));
    const e = throwsCode(() => RunReader.open(dir), 'RLPROBE_SCHEMA_TOO_NEW', /upgrade rlprobe/);
    assert.match(e.message, /schema_version 2/);
  });

  test('a newer schema is refused even when the rest of the manifest is unknown to us', () => {
    const dir = runWithManifest(JSON.stringify({ schema_version: 7, id: 'renamed-in-v7' }));
    throwsCode(() => RunReader.open(dir), 'RLPROBE_SCHEMA_TOO_NEW', /upgrade rlprobe/);
  });

  test('invalid JSON is a bad manifest', () => {
    throwsCode(() => RunReader.open(runWithManifest('{"schema_version": 1, "run_id": ')), 'RLPROBE_BAD_MANIFEST', /not valid JSON/);
    throwsCode(() => RunReader.open(runWithManifest('')), 'RLPROBE_BAD_MANIFEST');
  });

  test('a manifest missing a required key is a bad manifest naming it', () => {
    const { run_id: _omit, ...rest } = GOOD_MANIFEST;
    throwsCode(() => RunReader.open(runWithManifest(JSON.stringify(rest))), 'RLPROBE_BAD_MANIFEST', /run_id/);
    throwsCode(() => RunReader.open(runWithManifest('[1,2]')), 'RLPROBE_BAD_MANIFEST');
  });

  test('unknown manifest keys are kept; optional keys get defaults', () => {
    const dir = runWithManifest(JSON.stringify({ ...GOOD_MANIFEST, future_key: { nested: [1, 2] }, python_only: 'x' }));
    const reader = RunReader.open(dir);
    const m = reader.manifest as Record<string, unknown>;
    assert.deepEqual(m.future_key, { nested: [1, 2] });
    assert.equal(m.python_only, 'x');
    assert.equal(reader.manifest.world_size, 1);
    assert.deepEqual(reader.manifest.trainer_config, {});
    assert.deepEqual(reader.manifest.extra, {});
    assert.equal(reader.runDir, dir);
    // a hand-written run with no steps and no events reads as empty
    assert.equal(reader.layout(), 'empty');
    assert.equal(reader.steps().length, 0);
    assert.equal(reader.view().length, 0);
    assert.deepEqual(reader.events(), []);
    assert.deepEqual(reader.eventsWithDiagnostics(), { events: [], skippedLines: 0 });
  });
});

describe('step layouts', () => {
  test('empty → parts (live) → compacted (closed)', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, { ...QUIET, flushSteps: 3 });
    try {
      const reader = RunReader.open(dir);
      assert.equal(reader.layout(), 'empty');
      // a flush every 3 steps: a backlog would go out as one part
      for (let step = 0; step < 7; step++) {
        rec.logStep({ step, loss: step * 2 });
        if (step % 3 === 2) rec.flushSync();
      }
      assert.equal(rec.flushSync(), true);
      assert.equal(reader.layout(), 'parts');
      const files = reader.stepFiles();
      assert.equal(files.length, 3, `7 steps flushed every 3 make 3 parts, got ${files.length}`);
      assert.ok(files.every((f) => !f.compacted && /steps[/\\]part-\d{5}\.parquet$/.test(f.path)));
      // published parts and the columns file other tools take the schema from; no temporaries
      assert.ok(readdirSync(path.join(dir, 'steps')).every((n) => /^part-\d{5}\.parquet$|^columns\.parquet$/.test(n)), 'only published parts, no temporaries');
      assert.equal(files.reduce((n, f) => n + f.rows, 0), 7);
      assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4, 5, 6]);
      assert.deepEqual(Array.from(reader.view().series('loss')), [0, 2, 4, 6, 8, 10, 12]);
      const summary = rec.close();
      assert.equal(summary.counters.written, 7);
      assert.equal(summary.compaction?.partsMerged, files.length);
      assert.equal(summary.compaction?.rows, 7);
      assert.equal(reader.layout(), 'compacted');
      const after = reader.stepFiles();
      assert.equal(after.length, 1);
      assert.equal(after[0].compacted, true);
      assert.equal(after[0].path, path.join(dir, 'steps.parquet'));
      assert.equal(after[0].rows, 7);
      assert.equal(existsSync(path.join(dir, 'steps')), false, 'empty steps/ removed');
      assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4, 5, 6]);
      assert.equal(reader.absorbedLeftovers(), 0);
    } finally {
      rec.close();
    }
  });

  test('mixed: parts absorbed by steps.parquet are skipped, then cleaned up by compactRun', () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    const aside = path.join(root, 'aside');
    const rec = new Recorder(dir, { ...QUIET, flushSteps: 2 });
    for (let step = 0; step < 5; step++) {
      rec.logStep({ step, reward_mean: step / 4 });
      if (step % 2 === 1) rec.flushSync(); // a part per 2 steps (a backlog would be one part)
    }
    rec.flushSync();
    cpSync(path.join(dir, 'steps'), aside, { recursive: true });
    const partNames = readdirSync(aside).filter((n) => n.startsWith('part-')).sort();
    assert.equal(partNames.length, 3);
    rec.close();
    // a compaction that crashed after publishing steps.parquet, before deleting the parts
    mkdirSync(path.join(dir, 'steps'), { recursive: true });
    cpSync(aside, path.join(dir, 'steps'), { recursive: true });

    const reader = RunReader.open(dir);
    assert.equal(reader.layout(), 'mixed');
    assert.equal(reader.absorbedLeftovers(), 3);
    const files = reader.stepFiles();
    assert.deepEqual(files.map((f) => [path.basename(f.path), f.compacted, f.rows]), [['steps.parquet', true, 5]]);
    assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4], 'each step exactly once');
    assert.deepEqual(reader.steps().map((s) => s.reward_mean), [0, 0.25, 0.5, 0.75, 1]);

    const result = compactRun(dir).steps;
    assert.deepEqual(result, { partsMerged: 0, leftoversRemoved: 3, rows: 5, bytes: result.bytes });
    assert.ok(result.bytes > 0);
    assert.equal(reader.layout(), 'compacted');
    assert.equal(reader.absorbedLeftovers(), 0);
    assert.equal(existsSync(path.join(dir, 'steps')), false);
    assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4]);
    // idempotent
    const again = compactRun(dir).steps;
    assert.deepEqual(again, { partsMerged: 0, leftoversRemoved: 0, rows: 5, bytes: result.bytes });
  });

  test('compactRun on a directory without manifest is NOT_A_RUN', () => {
    throwsCode(() => compactRun(tempDir()), 'RLPROBE_NOT_A_RUN');
  });

  test('a live run compacted by compactRun: steps.parquet, then the parts written after it under fresh names', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, { ...QUIET, flushSteps: 2 });
    try {
      for (let step = 0; step < 4; step++) rec.logStep({ step, loss: 1 });
      rec.flushSync();
      compactRun(dir);
      for (let step = 4; step < 7; step++) rec.logStep({ step, loss: 2, extra: { late: step } });
      rec.flushSync();
      const reader = RunReader.open(dir);
      assert.equal(reader.layout(), 'mixed');
      assert.equal(reader.absorbedLeftovers(), 0);
      const files = reader.stepFiles();
      assert.equal(path.basename(files[0].path), 'steps.parquet');
      assert.equal(files[0].rows, 4);
      const absorbed = new Set(JSON.parse(hyparquetKeyValue(files[0].path, 'rlprobe.compacted_parts')) as string[]);
      for (const f of files.slice(1)) {
        assert.equal(f.compacted, false);
        // a fresh part name: not one the compacted footer lists as absorbed (that would hide it)
        assert.equal(absorbed.has(path.basename(f.path)), false, `${path.basename(f.path)} reuses an absorbed name`);
      }
      assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4, 5, 6]);
      assert.deepEqual(Array.from(reader.view().series('extra.late')), [NaN, NaN, NaN, NaN, 4, 5, 6]);
    } finally {
      rec.close();
    }
    assert.deepEqual(Array.from(RunReader.open(dir).view().steps), [0, 1, 2, 3, 4, 5, 6]);
  });

  test('a resumed recorder makes steps.parquet its first part: the new parts follow it, and readers that take steps.parquet alone miss nothing', () => {
    const dir = path.join(tempDir(), 'run');
    const first = new Recorder(dir, { ...QUIET, flushSteps: 2 });
    for (let step = 0; step < 5; step++) first.logStep({ step, loss: 1 });
    first.close();
    // how many parts the first session wrote depends on the writer's timing: its footer says
    const next = Number(hyparquetKeyValue(path.join(dir, 'steps.parquet'), 'rlprobe.next_part'));
    const part = (i: number) => `part-${String(i).padStart(5, '0')}.parquet`;
    const second = new Recorder(dir, QUIET);
    try {
      second.flushSync();
      assert.equal(existsSync(path.join(dir, 'steps.parquet')), true, 'untouched until a step is logged');
      for (let step = 5; step < 8; step++) second.logStep({ step, loss: 2, extra: { late: step } });
      second.flushSync();
      assert.equal(existsSync(path.join(dir, 'steps.parquet')), false, 'demoted before the first step part');
      const reader = RunReader.open(dir);
      assert.equal(reader.layout(), 'parts');
      assert.equal(reader.absorbedLeftovers(), 0);
      const files = reader.stepFiles();
      assert.deepEqual(
        files.map((f) => [path.basename(f.path), f.compacted, f.rows]),
        // the names the first close absorbed are never reused
        [[part(next), false, 5], [part(next + 1), false, 3]],
      );
      const view = reader.view();
      assert.deepEqual(Array.from(view.steps), [0, 1, 2, 3, 4, 5, 6, 7]);
      assert.deepEqual(Array.from(view.series('loss')), [1, 1, 1, 1, 1, 2, 2, 2]);
      assert.deepEqual(Array.from(view.series('extra.late')), [NaN, NaN, NaN, NaN, NaN, 5, 6, 7]);
    } finally {
      second.close();
    }
    const reader = RunReader.open(dir);
    assert.equal(reader.layout(), 'compacted');
    assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('stepTableFrom: a follower reads only new rows', () => {
  /** The table's columns as plain arrays (NaN where a row has no value). */
  const cells = (t: { columns: Array<{ name: string; values: Float64Array; valid?: Uint8Array | null }> }) =>
    Object.fromEntries(t.columns.map((c) => [c.name, Array.from(c.values, (v, i) => (c.valid && !c.valid[i] ? null : v))]));

  test('tails read while a run records, then after its compaction, chain into the whole table', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, { ...QUIET, flushSteps: 1000 });
    const reader = RunReader.open(dir);
    const chained: Record<string, Array<number | null>> = {};
    let read = 0;
    const follow = () => {
      const tail = reader.stepTableFrom(read);
      assert.ok(tail.firstRow <= read, `starts at ${tail.firstRow}, asked ${read}`);
      assert.equal(tail.firstRow + tail.table.rows, tail.totalRows);
      const skip = read - tail.firstRow;
      for (const [name, values] of Object.entries(cells(tail.table))) {
        // a column first met now had no value in the rows read before
        chained[name] ??= Array(read).fill(null);
        chained[name].push(...values.slice(skip));
      }
      read = tail.totalRows;
      for (const values of Object.values(chained)) while (values.length < read) values.push(null);
    };
    try {
      assert.equal(reader.stepTableFrom(0).totalRows, 0);
      for (let step = 0; step < 60; step++) {
        rec.logStep({ step, loss: step * 2, ...(step >= 40 ? { extra: { late: step } } : {}) });
        if (step % 7 === 6) {
          rec.flushSync();
          follow();
        }
      }
      rec.flushSync();
      follow();
      assert.equal(read, 60);
      // nothing new: an empty tail that still counts the rows
      const none = reader.stepTableFrom(60, ['loss']);
      assert.deepEqual([none.firstRow, none.totalRows, none.table.rows], [60, 60, 0]);
      rec.close();
      // compacted now: one file of one row group, so a tail from row 30 starts at row 0
      const late = reader.stepTableFrom(30, ['step', 'extra.late']);
      assert.equal(late.totalRows, 60);
      assert.deepEqual(cells(late.table)['extra.late'].slice(30 - late.firstRow), [...Array(10).fill(null), ...Array.from({ length: 20 }, (_, i) => 40 + i)]);
      const whole = cells(reader.stepTable());
      assert.deepEqual(Object.keys(chained).sort(), Object.keys(whole).sort());
      for (const name of Object.keys(whole)) assert.deepEqual(chained[name], whole[name], name);
    } finally {
      rec.close();
    }
  });

  test('a row number that is not one is refused, naming it', () => {
    const dir = path.join(tempDir(), 'run');
    new Recorder(dir, QUIET).close();
    throwsCode(() => RunReader.open(dir).stepTableFrom(-1), 'RLPROBE_INVALID_OPTION', /fromRow.*-1/);
    throwsCode(() => RunReader.open(dir).stepTableFrom(1.5), 'RLPROBE_INVALID_OPTION', /1\.5/);
  });
});

describe('events.jsonl', () => {
  test('a torn last line, a garbage line, a non-event line and a blank line are skipped', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, QUIET);
    rec.logEvent('checkpoint', { step: 3, message: 'saved', data: { path: '/ckpt/3' } });
    rec.close();
    const file = path.join(dir, 'events.jsonl');
    const clean = readEventsKinds(dir);
    assert.deepEqual(clean, ['checkpoint', 'recorder_close']);

    const torn = '{"timestamp":1700000000.5,"kind":"nan_det';
    appendFileSync(file, 'this is not json\n');
    appendFileSync(file, '{"kind":"no_timestamp"}\n');
    appendFileSync(file, '\n   \n');
    appendFileSync(file, torn);

    const reader = RunReader.open(dir);
    assert.deepEqual(reader.events().map((e) => e.kind), ['checkpoint', 'recorder_close']);
    const diag = reader.eventsWithDiagnostics();
    assert.equal(diag.events.length, 2);
    // torn + garbage + schema-invalid; blank lines are not "unreadable"
    assert.equal(diag.skippedLines, 3);
    const cp = diag.events[0];
    assert.equal(cp.step, 3);
    assert.equal(cp.rank, 0);
    assert.equal(cp.message, 'saved');
    assert.deepEqual(cp.data, { path: '/ckpt/3' });

    // a new recorder starts on a line of its own: the torn line stays isolated
    const again = new Recorder(dir, QUIET);
    again.logEvent('after_resume', { step: 9 });
    again.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    const tornAt = lines.indexOf(torn);
    assert.ok(tornAt >= 0, 'the torn fragment is still a line of its own, unchanged');
    const next = JSON.parse(lines[tornAt + 1]) as { kind: string };
    assert.equal(next.kind, 'recorder_resume');
    const diag2 = RunReader.open(dir).eventsWithDiagnostics();
    assert.equal(diag2.skippedLines, 3, 'no new unreadable lines');
    assert.deepEqual(diag2.events.map((e) => e.kind), ['checkpoint', 'recorder_close', 'recorder_resume', 'after_resume', 'recorder_close']);
  });

  test('events without optional fields get defaults; unknown event keys are kept', () => {
    const dir = runWithManifest(JSON.stringify(GOOD_MANIFEST));
    writeFileSync(path.join(dir, 'events.jsonl'), '{"timestamp":1,"kind":"custom","python_field":true}\n');
    const [e] = RunReader.open(dir).events();
    assert.deepEqual({ ...e }, { timestamp: 1, kind: 'custom', step: null, rank: 0, message: '', data: {}, python_field: true });
  });
});

describe('multi-rank runs (docs/format.md#ranks)', () => {
  test('the parent reader merges rank-NNN events (rank-attributed, by time); steps stay rank 0', () => {
    const dir = path.join(tempDir(), 'run');
    const rank0 = new Recorder(dir, { ...QUIET, captureEnvironment: false });
    const rank2 = new Recorder(dir, { ...QUIET, rank: 2, recordAllRanks: true, captureEnvironment: false });
    rank0.logStep({ step: 0, loss: 1 });
    rank2.logStep({ step: 0, loss: 2 });
    rank2.logEvent('rank2_checkpoint', { step: 0 });
    rank0.logEvent('rank0_checkpoint', { step: 0 });
    rank2.close();
    rank0.close();
    const reader = RunReader.open(dir);
    // steps: rank 0's alone
    assert.deepEqual(reader.steps().map((s) => [s.step, s.rank, s.loss]), [[0, 0, 1]]);
    // the rank's own sub-recording is complete
    assert.ok(RunReader.open(path.join(dir, 'rank-002')).events().some((e) => e.kind === 'rank2_checkpoint' && e.rank === 2));
    // events: merged from rank-002/ and ordered by time
    const events = reader.events();
    const merged = events.find((e) => e.kind === 'rank2_checkpoint');
    assert.ok(merged, `the parent reader's events include rank 2's: got ${events.map((e) => `${e.kind}@${e.rank}`).join(', ')}`);
    assert.equal(merged.rank, 2);
    assert.ok(events.some((e) => e.kind === 'rank0_checkpoint' && e.rank === 0));
    for (let i = 1; i < events.length; i++) assert.ok(events[i - 1].timestamp <= events[i].timestamp, 'ordered by time');
  });
});

function readEventsKinds(dir: string): string[] {
  return RunReader.open(dir).events().map((e) => e.kind);
}

describe('RunView and steps()', () => {
  function recordVaried(dir: string): Recorder {
    const rec = new Recorder(dir, { ...QUIET, flushSteps: 2 });
    rec.logStep({ step: 10, loss: 1, nan_count: 3 });
    rec.logStep({ step: 11, loss: 2, reward_components: { format: 0.5 } });
    rec.logStep({ step: 12, reward_mean: 3, extra: { tok_per_s: 900 }, kl_positional: [0.1, 0.2, 0.3] });
    rec.logStep({ step: 13, loss: NaN, nan_count: 0, kl_positional: [] });
    rec.logStep({ step: 14, loss: Infinity, reward_components: { format: 1, accuracy: 0 }, my_metric: 7 });
    return rec;
  }

  function checkView(reader: RunReader): void {
    const view = reader.view();
    assert.equal(view.length, 5);
    assert.ok(view.steps instanceof Float64Array);
    assert.deepEqual(Array.from(view.steps), [10, 11, 12, 13, 14]);
    const series = (name: string) => {
      const s = view.series(name);
      assert.ok(s instanceof Float64Array, `${name} is a Float64Array`);
      assert.equal(s.length, view.steps.length, `${name} is aligned with steps`);
      return Array.from(s);
    };
    assert.deepEqual(series('loss'), [1, 2, NaN, NaN, Infinity]);
    assert.deepEqual(series('nan_count'), [3, NaN, NaN, 0, NaN]);
    assert.deepEqual(series('reward_mean'), [NaN, NaN, 3, NaN, NaN]);
    assert.deepEqual(series('reward_component.format'), [NaN, 0.5, NaN, NaN, 1]);
    assert.deepEqual(series('reward_component.accuracy'), [NaN, NaN, NaN, NaN, 0]);
    assert.deepEqual(series('extra.tok_per_s'), [NaN, NaN, 900, NaN, NaN]);
    assert.deepEqual(series('extra.my_metric'), [NaN, NaN, NaN, NaN, 7], 'unknown top-level keys land in extra');
    assert.deepEqual(series('rank'), [0, 0, 0, 0, 0]);
    assert.deepEqual(series('no_such_metric'), [NaN, NaN, NaN, NaN, NaN]);
    assert.deepEqual(series('kl_positional'), [NaN, NaN, NaN, NaN, NaN], 'a list column is not a scalar series');

    const cols = view.columns();
    assert.deepEqual(cols.slice(0, 3), ['step', 'timestamp', 'rank']);
    for (const c of ['loss', 'nan_count', 'reward_mean', 'kl_positional', 'reward_component.format', 'reward_component.accuracy', 'extra.tok_per_s', 'extra.my_metric']) {
      assert.ok(cols.includes(c), `columns() lists ${c}: ${cols.join(', ')}`);
      assert.ok(view.has(c));
    }
    assert.equal(new Set(cols).size, cols.length);
    // fixed, known fields, then components, then extras
    const firstComponent = cols.findIndex((c) => c.startsWith('reward_component.'));
    const firstExtra = cols.findIndex((c) => c.startsWith('extra.'));
    assert.ok(cols.indexOf('nan_count') < firstComponent && firstComponent < firstExtra);
    assert.ok(cols.slice(firstExtra).every((c) => c.startsWith('extra.')));
    assert.equal(view.seriesNames().includes('kl_positional'), false);
    assert.equal(view.seriesNames().includes('step'), false);

    const only = reader.view(['loss']);
    assert.deepEqual(only.columns(), ['step', 'loss']);
    assert.deepEqual(Array.from(only.series('loss')), [1, 2, NaN, NaN, Infinity]);

    const steps = reader.steps();
    assert.equal(steps.length, 5);
    for (const s of steps) {
      assert.equal(typeof s.timestamp, 'number');
      assert.ok(Math.abs(s.timestamp! * 1000 - Date.now()) < 10 * 60_000, 'timestamp filled with the wall clock');
      assert.equal(s.rank, 0);
    }
    const strip = ({ timestamp: _t, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(strip(steps[0]), { step: 10, rank: 0, loss: 1, nan_count: 3 });
    assert.deepEqual(strip(steps[1]), { step: 11, rank: 0, loss: 2, reward_components: { format: 0.5 } });
    assert.deepEqual(strip(steps[2]), { step: 12, rank: 0, reward_mean: 3, extra: { tok_per_s: 900 }, kl_positional: [0.1, 0.2, 0.3] });
    // a logged NaN is present (and NaN); an absent field is absent
    assert.ok('loss' in steps[3] && Number.isNaN(steps[3].loss));
    assert.equal('loss' in steps[2], false);
    assert.deepEqual(steps[3].kl_positional, [], 'an empty list is kept, not dropped');
    assert.equal(steps[3].nan_count, 0);
    assert.deepEqual(strip(steps[4]), { step: 14, rank: 0, loss: Infinity, reward_components: { format: 1, accuracy: 0 }, extra: { my_metric: 7 } });
    assert.ok(Array.isArray(steps[2].kl_positional));
  }

  test('on a live run (parts)', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = recordVaried(dir);
    try {
      rec.flushSync();
      const reader = RunReader.open(dir);
      assert.equal(reader.layout(), 'parts');
      checkView(reader);
    } finally {
      rec.close();
    }
  });

  test('on a closed run (compacted: union of the parts columns)', () => {
    const dir = path.join(tempDir(), 'run');
    recordVaried(dir).close();
    const reader = RunReader.open(dir);
    assert.equal(reader.layout(), 'compacted');
    checkView(reader);
  });
});
