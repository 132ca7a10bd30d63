/**
 * The step files are plain Parquet any tool can read: DuckDB (@duckdb/node-api) and
 * hyparquet read the same values as RunReader, with the documented column names and types
 * (int64 step/rank/nan_count/inf_count, list<float64> kl_positional, float64 elsewhere).
 * While a run is live, a `steps/*.parquet` glob sees exactly the published parts: never a
 * temporary, never a half-written file, never a step twice.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { AsyncBuffer } from 'hyparquet';

import { RunReader, captureTrial } from '../ts/index.js';
import type { StoredStepRecord } from '../ts/index.js';
import { prng as rng } from './helpers/prng.js';
import { openRun } from './helpers/run-dir.js';
import { sqlPath, withDuckDB } from './helpers/duckdb.js';

const STEPS = 300;
const FLUSH_STEPS = 25;
const INT_COLUMNS = new Set(['step', 'rank', 'nan_count', 'inf_count']);

/** A GRPO-like step: most fields, some nulls, NaN/Inf now and then, columns appearing mid-run. */
function realisticStep(step: number, rand: () => number): Record<string, unknown> {
  const r: Record<string, unknown> = {
    step,
    reward_mean: rand() * 2 - 1,
    reward_std: rand(),
    kl_mean: step % 17 === 0 ? null : rand() * 0.1,
    kl_max: rand(),
    entropy_mean: step % 41 === 0 ? -0 : rand() * 3,
    loss: step % 53 === 0 ? NaN : rand() - 0.5,
    lr: 1e-6 * (1 + step / STEPS),
    grad_norm: step === 150 ? Infinity : rand() * 10,
    nan_count: step % 53 === 0 ? 7 : 0,
    inf_count: step % 2 === 0 ? Math.floor(rand() * 1000) : undefined,
    completion_len_mean: 100 + rand() * 400,
    step_time_s: 1 + rand(),
    reward_components: { format: rand(), correctness: step % 29 === 0 ? NaN : rand() },
    extra: { 'gpu.mem_gb': 40 + rand() * 20 },
  };
  if (step % 10 !== 3) r.kl_positional = step % 25 === 0 ? [] : Array.from({ length: 8 }, () => rand() * 0.2);
  if (step >= 120) (r.reward_components as Record<string, unknown>).length_penalty = -rand();
  if (step >= 200) (r.extra as Record<string, unknown>)['throughput.tok/s'] = step % 31 === 0 ? -Infinity : rand() * 1e4;
  if (step % 3 === 0) r.value_loss = rand(); // a PPO-ish field on a third of the steps
  if (step >= 250) r.my_top_level_metric = rand(); // -> extra.my_top_level_metric
  return r;
}

/** The value RunReader gives for a flattened column name (undefined when absent). */
function readerValue(row: StoredStepRecord, column: string): unknown {
  if (column.startsWith('reward_component.')) return row.reward_components?.[column.slice('reward_component.'.length)];
  if (column.startsWith('extra.')) return row.extra?.[column.slice('extra.'.length)];
  return (row as Record<string, unknown>)[column];
}

function show(x: unknown): string {
  if (Object.is(x, -0)) return '-0';
  if (typeof x === 'bigint') return `${x}n`;
  return Array.isArray(x) ? `[${x.map(show).join(', ')}]` : String(x);
}

/** A value from an external reader (null for SQL NULL, bigint for INT64) vs RunReader's. */
function assertSameCell(external: unknown, reader: unknown, where: string): void {
  if (external === null || external === undefined) {
    assert.equal(reader, undefined, `${where}: external reader has NULL, RunReader has ${show(reader)}`);
    return;
  }
  if (typeof external === 'bigint') {
    assert.ok(Number.isSafeInteger(Number(external)), `${where}: ${external}`);
    assert.ok(Object.is(Number(external), reader), `${where}: ${show(external)} vs ${show(reader)}`);
    return;
  }
  if (Array.isArray(external)) {
    assert.ok(Array.isArray(reader), `${where}: a list vs ${show(reader)}`);
    const list = reader as number[];
    assert.equal(external.length, list.length, `${where}: list length`);
    external.forEach((x, i) => assert.ok(Object.is(x, list[i]), `${where}[${i}]: ${show(x)} vs ${show(list[i])}`));
    return;
  }
  assert.equal(typeof external, 'number', `${where}: ${typeof external}`);
  assert.ok(Object.is(external, reader), `${where}: ${show(external)} vs ${show(reader)}`);
}

function fileBuffer(file: string): AsyncBuffer {
  const buf = readFileSync(file);
  return {
    byteLength: buf.byteLength,
    slice: (start: number, end?: number) => buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + (end ?? buf.byteLength)),
  };
}

/** The union of the column names RunReader gives the rows (flattened again). */
function readerColumns(rows: StoredStepRecord[]): Set<string> {
  const names = new Set<string>();
  for (const row of rows) {
    for (const [k, v] of Object.entries(row)) {
      if (k === 'reward_components') for (const c of Object.keys(v as object)) names.add(`reward_component.${c}`);
      else if (k === 'extra') for (const c of Object.keys(v as object)) names.add(`extra.${c}`);
      else names.add(k);
    }
  }
  return names;
}

test('steps.parquet reads the same in DuckDB, hyparquet and RunReader', async (t) => {
  const { dir, rec } = openRun(t, 'interop', { flushSteps: FLUSH_STEPS, flushIntervalMs: 3_600_000 });
  const rand = rng(20240611);
  const logged = Array.from({ length: STEPS }, (_, s) => realisticStep(s, rand));
  for (const r of logged) rec.logStep(r as never);
  const summary = rec.close();
  assert.equal(summary.error, null);
  assert.equal(summary.counters.written, STEPS);

  const reader = RunReader.open(dir);
  assert.equal(reader.layout(), 'compacted');
  const rows = reader.steps();
  assert.equal(rows.length, STEPS);
  // RunReader itself agrees with what was logged on a few tell-tale cells
  assert.ok(Number.isNaN(rows[53].loss));
  assert.equal(rows[150].grad_norm, Infinity);
  assert.ok(Object.is(rows[41].entropy_mean, -0));
  assert.equal(rows[17].kl_mean, undefined);
  assert.equal(rows[13].kl_positional, undefined);
  assert.deepEqual(rows[25].kl_positional, []);
  assert.equal(rows[250].extra?.my_top_level_metric, logged[250].my_top_level_metric);
  const columns = readerColumns(rows);
  const file = path.join(dir, 'steps.parquet');

  await t.test('DuckDB', async () => {
    await withDuckDB(async (con) => {
      const types = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${sqlPath(file)}')`);
      const typeOf = new Map(types.getRowObjectsJS().map((r) => [String(r.column_name), String(r.column_type)]));
      assert.deepEqual([...typeOf.keys()].sort(), [...columns].sort(), 'DuckDB sees the same columns');
      for (const [name, type] of typeOf) {
        const want = INT_COLUMNS.has(name) ? 'BIGINT' : name === 'kl_positional' ? 'DOUBLE[]' : 'DOUBLE';
        assert.equal(type, want, `type of ${name}`);
      }
      for (const name of ['reward_component.length_penalty', 'extra.gpu.mem_gb', 'extra.throughput.tok/s', 'extra.my_top_level_metric']) {
        assert.ok(typeOf.has(name), `column ${name}`);
      }

      const result = await con.runAndReadAll(`SELECT * FROM read_parquet('${sqlPath(file)}') ORDER BY step`);
      const duckRows = result.getRowObjectsJS();
      assert.equal(duckRows.length, STEPS);
      duckRows.forEach((d, i) => {
        for (const name of typeOf.keys()) assertSameCell(d[name], readerValue(rows[i], name), `row ${i} ${name}`);
      });

      // NaN stays NaN (not NULL), NULL stays NULL, and the aggregates see both right
      const agg = await con.runAndReadAll(
        `SELECT count(*) AS n, count(loss) AS loss_non_null, count(*) FILTER (WHERE isnan(loss)) AS loss_nan,
                count(kl_mean) AS kl_non_null, sum(nan_count) AS nans,
                count(*) FILTER (WHERE len(kl_positional) = 0) AS kl_empty
           FROM read_parquet('${sqlPath(file)}')`,
      );
      const a = agg.getRowObjectsJS()[0];
      const expectedNaNLoss = logged.filter((r) => Number.isNaN(r.loss)).length;
      assert.equal(a.n, BigInt(STEPS));
      assert.equal(a.loss_non_null, BigInt(STEPS));
      assert.equal(a.loss_nan, BigInt(expectedNaNLoss));
      assert.equal(a.kl_non_null, BigInt(logged.filter((r) => r.kl_mean !== null).length));
      assert.equal(a.nans, BigInt(logged.reduce((n, r) => n + (r.nan_count as number), 0)));
      assert.equal(a.kl_empty, BigInt(logged.filter((r) => Array.isArray(r.kl_positional) && r.kl_positional.length === 0).length));
    });
  });

  await t.test('hyparquet: schema from the footer', async () => {
    const meta = await parquetMetadataAsync(fileBuffer(file));
    assert.equal(Number(meta.num_rows), STEPS);
    const leaves = new Map<string, string | undefined>();
    const top = meta.schema.slice(1);
    for (const el of top) if (el.num_children === undefined && el.name !== 'item' && el.name !== 'element') leaves.set(el.name, el.type);
    const list = top.find((el) => el.name === 'kl_positional');
    assert.ok(list, 'kl_positional in the schema');
    assert.equal(list.converted_type, 'LIST');
    for (const name of columns) {
      if (name === 'kl_positional') continue;
      assert.equal(leaves.get(name), INT_COLUMNS.has(name) ? 'INT64' : 'DOUBLE', `physical type of ${name}`);
    }
    assert.deepEqual([...leaves.keys(), 'kl_positional'].sort(), [...columns].sort());
  });

  await t.test('hyparquet: values', async (st) => {
    // steps.parquet is ZSTD-compressed; hyparquet needs the hyparquet-compressors package for it
    const specifier = 'hyparquet-compressors';
    let compressors: Record<string, unknown> | null = null;
    try {
      compressors = ((await import(specifier)) as { compressors: Record<string, unknown> }).compressors;
    } catch {
      compressors = null;
    }
    if (compressors === null) {
      const meta = await parquetMetadataAsync(fileBuffer(file));
      assert.ok(meta.row_groups[0].columns.every((c) => c.meta_data?.codec === 'ZSTD'), 'the codec is ZSTD');
      st.skip('hyparquet-compressors is not installed (missing devDependency): ZSTD pages cannot be decoded');
      return;
    }
    const objects = await parquetReadObjects({ file: fileBuffer(file), compressors: compressors as never });
    assert.equal(objects.length, STEPS);
    const sorted = [...objects].sort((x, y) => Number(x.step) - Number(y.step));
    sorted.forEach((h, i) => {
      assert.deepEqual(Object.keys(h).sort(), [...columns].sort(), `row ${i}: columns`);
      for (const name of columns) assertSameCell(h[name], readerValue(rows[i], name), `row ${i} ${name}`);
    });
  });
});

test('a live run: a steps/*.parquet glob sees exactly the published parts, never a temporary', async (t) => {
  const { dir, rec } = openRun(t, 'interop-live', { flushSteps: FLUSH_STEPS, flushIntervalMs: 3_600_000 });
  const rand = rng(7);
  const glob = `${sqlPath(path.join(dir, 'steps'))}/*.parquet`;
  const query = `SELECT step FROM read_parquet('${glob}', union_by_name=true) ORDER BY step`;
  await withDuckDB(async (con) => {
    const stepsOf = async () => (await con.runAndReadAll(query)).getRowObjectsJS().map((r) => Number(r.step));
    let logged = 0;
    let lastSeen = 0;
    const CHUNK = 37;
    for (let round = 0; round < 8; round++) {
      if (round > 0) {
        // read while the writer publishes the parts this chunk completes
        const pending = stepsOf();
        for (let i = 0; i < CHUNK; i++) rec.logStep(realisticStep(logged++, rand) as never);
        const seen = await pending;
        // what a concurrent reader saw is a prefix of whole parts: no temporaries, no half
        // files, no duplicates
        assert.ok(seen.length >= lastSeen && seen.length <= logged, `round ${round}: ${seen.length} rows`);
        // whole parts only: the rows seen end on a part boundary. Parts hold at least
        // FLUSH_STEPS rows but can hold more (the writer drains what arrived before it
        // publishes), so the boundaries are read from the part files, which never change
        // once published
        const boundaries = RunReader.open(dir)
          .storage()
          .files.reduce((acc: number[], f) => [...acc, (acc.at(-1) ?? 0) + f.rows], [0]);
        assert.ok(boundaries.includes(seen.length), `round ${round}: whole parts only (${seen.length} rows; part boundaries ${boundaries.join(', ')})`);
        assert.deepEqual(seen, Array.from({ length: seen.length }, (_, k) => k), `round ${round}: a prefix, each step once`);
        lastSeen = seen.length;
      } else {
        for (let i = 0; i < CHUNK; i++) rec.logStep(realisticStep(logged++, rand) as never);
      }
      assert.equal(rec.flushSync(30_000), true);
      const flushed = await stepsOf();
      assert.deepEqual(flushed, Array.from({ length: logged }, (_, k) => k), `after flushSync ${round}: exactly the flushed steps`);
      lastSeen = flushed.length;
    }
    assert.equal(RunReader.open(dir).layout(), 'parts');

    // the part layout as a whole agrees with RunReader, cell by cell
    const reader = RunReader.open(dir);
    const rows = reader.steps();
    const result = await con.runAndReadAll(`SELECT * FROM read_parquet('${glob}', union_by_name=true) ORDER BY step`);
    const names = result.columnNames();
    assert.deepEqual([...names].sort(), [...readerColumns(rows)].sort());
    result.getRowObjectsJS().forEach((d, i) => {
      for (const name of names) assertSameCell(d[name], readerValue(rows[i], name), `part row ${i} ${name}`);
    });

    rec.close();
    const closed = await con.runAndReadAll(`SELECT count(*) AS n, count(DISTINCT step) AS d FROM read_parquet('${sqlPath(path.join(dir, 'steps.parquet'))}')`);
    const c = closed.getRowObjectsJS()[0];
    assert.equal(c.n, BigInt(logged));
    assert.equal(c.d, BigInt(logged));
  });
});

test('spans: DuckDB reads the span files, and the documented last-write query agrees with RunReader', async (t) => {
  const { dir, rec } = openRun(t, 'interop-spans', { runId: 'interop-spans' });
  // a rollout caught open by a flush and ended after it, a keyed span recorded twice: both
  // leave two rows on disk, of which readers keep the last
  const rollout = rec.startSpan('rollout', 'r0', { step: 3, attributes: { reward: 0.5 } });
  rec.span('turn', 't0', () => rec.span('tool_call', 'python', () => 1), { parent: rollout });
  rec.startSpan('evaluation', 'eval', { key: 'eval-3', attributes: { score: 1 } }).end();
  assert.equal(rec.flushSync(30_000), true);
  rollout.end({ error: new Error('sandbox died') });
  rec.startSpan('evaluation', 'eval', { key: 'eval-3', attributes: { score: 2 } }).end();
  assert.equal(rec.flushSync(30_000), true);
  const spansDir = path.join(dir, 'spans');
  const glob = `${sqlPath(spansDir)}/*.parquet`;
  const compacted = sqlPath(path.join(spansDir, 'spans.parquet'));
  // the query docs/format.md#spans gives for a live run
  const lastWrite = `SELECT * FROM read_parquet('${glob}', filename=true, file_row_number=true) QUALIFY row_number() OVER (PARTITION BY span_id ORDER BY filename = '${compacted}', filename DESC, file_row_number DESC) = 1`;
  await withDuckDB(async (con) => {
    const rows = async (sql: string) => (await con.runAndReadAll(`${sql} ORDER BY start_time`)).getRowObjectsJS();
    const raw = await rows(`SELECT span_id FROM read_parquet('${glob}')`);
    assert.equal(raw.length, 6, 'two spans written twice');
    const reader = RunReader.open(dir).spans();
    const check = (got: Record<string, unknown>[], label: string) => {
      assert.deepEqual(got.map((r) => r.span_id), reader.map((s) => s.span_id), label);
      got.forEach((r, i) => {
        assert.equal(r.status, reader[i].status, `${label} ${r.span_id} status`);
        assert.deepEqual(r.attributes === null ? {} : JSON.parse(String(r.attributes)), reader[i].attributes, `${label} ${r.span_id} attributes`);
      });
    };
    check(await rows(lastWrite), 'live parts');
    assert.equal(reader.find((s) => s.name === 'r0')?.status, 'error');
    assert.deepEqual(reader.find((s) => s.kind === 'evaluation')?.attributes, { score: 2 });
    rec.close();
    const types = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${compacted}')`)).getRowObjectsJS();
    const typeOf = Object.fromEntries(types.map((r) => [r.column_name, r.column_type]));
    assert.deepEqual(
      { span_id: typeOf.span_id, step: typeOf.step, start_time: typeOf.start_time, labels: typeOf.labels, rank: typeOf.rank },
      { span_id: 'VARCHAR', step: 'BIGINT', start_time: 'DOUBLE', labels: 'VARCHAR', rank: 'BIGINT' },
    );
    check(await rows(`SELECT * FROM read_parquet('${compacted}')`), 'compacted');
  });
});

test('captured trials: DuckDB reads the run spans and the capture span files together, as RunReader does', async (t) => {
  const { dir, rec } = openRun(t, 'interop-trials', { runId: 'interop-trials' });
  rec.span('rollout', 'own', () => 1, { step: 1 });
  rec.close();
  const trial = path.join(path.dirname(dir), 'trial-interop__x');
  mkdirSync(path.join(trial, 'agent'), { recursive: true });
  writeFileSync(path.join(trial, 'result.json'), JSON.stringify({ id: 'interop-1', trial_name: 'trial-interop__x', verifier_result: { rewards: { reward: 1 } } }));
  writeFileSync(path.join(trial, 'agent', 'trajectory.json'), readFileSync(path.resolve(import.meta.dirname, 'fixtures/harbor/claude-code-atif-v1.7/pass/agent/trajectory.json')));
  const m = await captureTrial(trial, { run: dir, step: 1, sampleId: 's1' });
  const files = `['${sqlPath(path.join(dir, 'spans', 'spans.parquet'))}', '${sqlPath(path.join(dir, 'trials'))}/*/spans.parquet']`;
  await withDuckDB(async (con) => {
    const rows = (await con.runAndReadAll(`SELECT span_id, kind, sample_id FROM read_parquet(${files}, union_by_name=true) ORDER BY start_time, span_id`)).getRowObjectsJS();
    const reader = RunReader.open(dir).spans({ step: 1 });
    assert.equal(rows.length, reader.length);
    assert.equal(rows.length, 1 + m.spans.count);
    assert.deepEqual(new Set(rows.map((r) => r.span_id)), new Set(reader.map((s) => s.span_id)));
    assert.equal(rows.filter((r) => r.kind === 'rollout' && r.sample_id === 's1').length, 1);
  });
});
