/**
 * `probe sql` and `querySql` (ts/sql/): SQL over runs in any state, read by DuckDB from the
 * files the library's readers would read.
 *
 * - a column first logged mid-run is in the view, NULL before it (parts without it);
 * - the same rows as the library readers on every layout: a SIGKILLed run's parts, the
 *   same run compacted, resumed (compacted + parts), with absorbed leftovers, with an
 *   unfinished sample compaction; spans at their last write; captured trials' spans;
 * - rank directories (three killed ranks): samples, spans and events of every rank with
 *   their rank, steps from rank 0 only;
 * - several runs: a `run` column, unambiguous when two runs share a directory name;
 * - dotted column names quoted; `--json`, `--csv` and the table, exactly; control characters
 *   in CSV escaped at a terminal, byte for byte into a pipe;
 * - DuckDB not installed: one clear line, exit 1; a SQL error: one line, exit 1;
 * - damaged, foreign and torn inputs are reported, never read around or silently dropped; a
 *   table that cannot be read (damaged file, events.jsonl a directory, a path DuckDB cannot
 *   open) fails every query naming it, never answers 0 rows;
 * - a compaction landing between the listing and the query: listed again (8 listings at most);
 * - a directory name holding glob characters; a migrated (older) run; nothing is written.
 */
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, linkSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { Cli } from 'clipanion';

import { Recorder, RunReader, captureTrial, compactRun } from '../ts/index.js';
import type { RunEvent, SpanRecord, StoredSampleRecord, StoredStepRecord } from '../ts/index.js';
import type { Migration } from '../ts/reader/migrations.js';
import { SqlCommand } from '../ts/cli/commands/sql.js';
import { buildCli } from '../ts/cli/main.js';
import { sampleFiles } from '../ts/native.js';
import type { DuckDBLoader } from '../ts/sql/duckdb-loader.js';
import { changedFiles, snapshotFiles } from '../ts/sql/file-snapshot.js';
import { FIXED_COLUMNS } from '../ts/sql/fixed-columns.js';
import { runNames } from '../ts/sql/run-names.js';
import { parquetPath } from '../ts/sql/sql-literals.js';
import { querySql } from '../ts/sql/run-sql.js';
import type { SqlOptions } from '../ts/sql/run-sql.js';
import { range, spawnChild, waitForExit } from './helpers/child.js';
import { withDuckDB } from './helpers/duckdb.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { probe } from './helpers/in-process-cli.js';
import { buildPassingTrial } from './helpers/trial-fixtures.js';

after(cleanupTempDirs);

const OPTIONS = { ...QUIET, captureEnvironment: false } as const;

type Row = Record<string, unknown>;

/** The rows of `sql` over `dirs`, as objects keyed by column. */
async function sqlRows(dirs: string | string[], sql: string, options: SqlOptions = {}): Promise<Row[]> {
  const r = await querySql(Array.isArray(dirs) ? dirs : [dirs], sql, options);
  return r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c.key, row[i]])));
}

/** Rows in a canonical order, to compare two reads of the same rows. */
function sorted(rows: Row[]): Row[] {
  return [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0));
}

/** Without its null cells: the library's records leave out what a row does not hold. */
function withoutNulls(row: Row): Row {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null));
}

/** A step record as the table's columns (dicts back to `reward_component.*`, `extra.*`). */
function stepColumns(s: StoredStepRecord): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'reward_components') for (const [c, x] of Object.entries(v as Record<string, number>)) out[`reward_component.${c}`] = x;
    else if (k === 'extra') for (const [c, x] of Object.entries(v as Record<string, number>)) out[`extra.${c}`] = x;
    else out[k] = v;
  }
  return out;
}

function sampleColumns(s: StoredSampleRecord): Row {
  const out = stepColumns(s as unknown as StoredStepRecord);
  if (s.labels !== undefined) out.labels = JSON.stringify(s.labels);
  return out;
}

const SPAN_FIELDS = ['span_id', 'parent_id', 'root_id', 'kind', 'name', 'step', 'start_time', 'end_time', 'duration_s', 'status', 'error', 'sample_id', 'group_id', 'key', 'rank'] as const;

function spanColumns(s: SpanRecord | Row): Row {
  return Object.fromEntries(SPAN_FIELDS.map((k) => [k, (s as Row)[k] ?? null]));
}

function eventColumns(e: RunEvent): Row {
  return { timestamp: e.timestamp, kind: e.kind, step: e.step, rank: e.rank, message: e.message, data: e.data };
}

/**
 * Every view read by SQL against the library's readers of the same run: the same rows,
 * every column. Returns the SQL rows for comparisons across layouts.
 */
async function assertSameAsReaders(dir: string, what: string): Promise<{ steps: Row[]; samples: Row[]; spans: Row[]; events: Row[] }> {
  const reader = RunReader.open(dir);
  const steps = sorted((await sqlRows(dir, 'SELECT * FROM steps')).map(withoutNulls));
  assert.deepEqual(steps, sorted(reader.steps().map(stepColumns)), `${what}: steps`);
  const samples = sorted((await sqlRows(dir, 'SELECT * FROM samples')).map(withoutNulls));
  assert.deepEqual(samples, sorted([...reader.samples()].map(sampleColumns)), `${what}: samples`);
  const spans = sorted((await sqlRows(dir, 'SELECT * FROM spans')).map(spanColumns));
  assert.deepEqual(spans, sorted(reader.spans().map(spanColumns)), `${what}: spans`);
  const events = sorted((await sqlRows(dir, 'SELECT * FROM events')).map((e) => ({ ...e, data: JSON.parse(e.data as string) as unknown })));
  assert.deepEqual(events, sorted(reader.events().map(eventColumns)), `${what}: events`);
  return { steps, samples, spans, events };
}

/** Every file under `dir` with its size, modification time and inode. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: false })
    .map(String)
    .sort()
    .map((rel) => {
      const s = statSync(path.join(dir, rel), { bigint: true });
      return `${rel} ${s.size} ${s.mtimeNs} ${s.ino}`;
    });
}

/** A run killed by SIGKILL after a flush (test/children/rank-child.ts): parts, no compaction. */
async function killedRanks(dir: string, worldSize: number, steps: number): Promise<void> {
  const children = range(0, worldSize).map((rank) =>
    spawnChild('rank-child.ts', [dir, 'kill', String(steps), worldSize > 1 ? 'all' : 'rank0'], {
      env: { RANK: String(rank), WORLD_SIZE: String(worldSize), LOCAL_RANK: String(rank) },
    }),
  );
  for (const child of children) {
    const exit = await waitForExit(child, 60_000);
    assert.equal(exit.signal, 'SIGKILL', child.describe());
    assert.ok(child.lines.includes('flushed'), child.describe());
  }
}

describe('views over every layout', () => {
  test('a column first logged mid-run is there, NULL before it; parts, then compacted', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    for (let step = 0; step < 8; step++) {
      rec.logStep({ step, loss: step / 8, ...(step % 4 === 3 ? { extra: { eval_acc: step / 10 } } : {}) });
      rec.logSamples([{ sample_id: `s${step}`, reward_total: step, ...(step >= 5 ? { extra: { judge: step * 2 } } : {}) }], { step, select: false });
      assert.ok(rec.flushSync(), 'flushed'); // one part per step
    }
    const reader = RunReader.open(dir);
    assert.equal(reader.layout(), 'parts');
    // the first parts never saw the column: a read of the first file's schema loses it
    const first = reader.stepFiles()[0].path;
    assert.ok(!(await sqlRows(dir, `SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('${first}'))`)).some((r) => r.column_name === 'extra.eval_acc'));
    const expectSteps = range(0, 8).map((step) => ({ step, 'extra.eval_acc': step % 4 === 3 ? step / 10 : null }));
    const expectSamples = range(0, 8).map((step) => ({ sample_id: `s${step}`, 'extra.judge': step >= 5 ? step * 2 : null }));
    const query = async () => ({
      steps: await sqlRows(dir, 'SELECT step, "extra.eval_acc" FROM steps ORDER BY step'),
      samples: await sqlRows(dir, 'SELECT sample_id, "extra.judge" FROM samples ORDER BY step'),
    });
    assert.deepEqual(await query(), { steps: expectSteps, samples: expectSamples }, 'parts');
    await assertSameAsReaders(dir, 'parts');
    assert.equal(rec.close().error, null);
    assert.equal(reader.layout(), 'compacted');
    assert.deepEqual(await query(), { steps: expectSteps, samples: expectSamples }, 'compacted');
  });

  test('a SIGKILLed run, compacted, resumed, with absorbed leftovers: the readers\' rows each time, each once', async () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    await killedRanks(dir, 1, 50);
    const reader = RunReader.open(dir);
    assert.equal(reader.layout(), 'parts');
    assert.equal(reader.status().state, 'killed');
    const killed = await assertSameAsReaders(dir, 'killed');
    assert.equal(killed.steps.length, 50);
    assert.equal(killed.samples.length, 150);
    assert.deepEqual(await sqlRows(dir, 'SELECT count(DISTINCT step) AS steps, min(loss) AS lo, max(loss) AS hi FROM steps'), [{ steps: 50, lo: 0, hi: 49 }]);

    compactRun(dir);
    assert.equal(reader.layout(), 'compacted');
    const compacted = await assertSameAsReaders(dir, 'compacted');
    assert.deepEqual(compacted, killed, 'compaction changes no row');

    // resumed: new parts after the compacted tables (samples: shards, then parts)
    const rec = new Recorder(dir, OPTIONS);
    const more = (from: number, to: number) => {
      for (let step = from; step < to; step++) {
        rec.logStep({ step, loss: step });
        rec.logSamples([{ sample_id: `resumed-${step}`, reward_total: step }], { step, select: false });
        rec.flushSync();
      }
    };
    more(50, 55);
    const sampleLayout = sampleFiles(dir).files;
    assert.ok(sampleLayout.some((f) => f.shard) && sampleLayout.some((f) => !f.shard), 'samples: shards and parts');
    await assertSameAsReaders(dir, 'resumed');
    // compacted while live (`probe compact`), then more parts: steps.parquet and parts
    compactRun(dir);
    more(55, 60);
    assert.equal(reader.layout(), 'mixed');
    const resumed = await assertSameAsReaders(dir, 'compacted live, then more parts');
    assert.equal(resumed.steps.length, 60);
    assert.equal(resumed.samples.length, 160);

    // a compaction killed after publishing, before deleting the parts it absorbed
    const aside = path.join(root, 'aside');
    cpSync(path.join(dir, 'steps'), path.join(aside, 'steps'), { recursive: true });
    cpSync(path.join(dir, 'samples'), path.join(aside, 'samples'), { recursive: true });
    assert.equal(rec.close().error, null);
    cpSync(path.join(aside, 'steps'), path.join(dir, 'steps'), { recursive: true });
    cpSync(path.join(aside, 'samples'), path.join(dir, 'samples'), { recursive: true });
    assert.ok(reader.absorbedLeftovers() > 0, 'absorbed step parts on disk');
    assert.ok(sampleFiles(dir).absorbedLeftovers > 0, 'absorbed sample parts on disk');
    const leftovers = await assertSameAsReaders(dir, 'leftovers');
    assert.deepEqual(leftovers.steps, resumed.steps, 'no step twice');
    assert.deepEqual(leftovers.samples, resumed.samples, 'no sample twice');
  });

  test('the shards of an unfinished sample compaction are ignored: each sample once, from the parts', async () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    const rec = new Recorder(dir, OPTIONS);
    const n = 4100; // two shards of 4096
    rec.logSamples(range(0, n).map((i) => ({ sample_id: `s${i}`, reward_total: i })), { step: 1, select: false });
    rec.logStep({ step: 1, loss: 1 });
    rec.flushSync();
    cpSync(path.join(dir, 'samples'), path.join(root, 'aside'), { recursive: true });
    assert.equal(rec.close().error, null);
    // killed mid-compaction: the first shard published, the second not, the parts still there
    rmSync(path.join(dir, 'samples', 'shard-00001.parquet'));
    cpSync(path.join(root, 'aside'), path.join(dir, 'samples'), { recursive: true });
    assert.ok(sampleFiles(dir).incompleteShards > 0, 'an unfinished compaction on disk');
    assert.deepEqual(await sqlRows(dir, 'SELECT count(*) AS n, count(DISTINCT sample_id) AS ids, sum(reward_total) AS total FROM samples'), [
      { n, ids: n, total: (n * (n - 1)) / 2 },
    ]);
    await assertSameAsReaders(dir, 'unfinished sample compaction');
  });

  test('spans: each at its last write (open at a flush, ended later), live and compacted', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    const ended = rec.startSpan('rollout', 'ended', { step: 1 });
    const open = rec.startSpan('rollout', 'still-open', { step: 1 });
    rec.logStep({ step: 1, loss: 1 });
    rec.flushSync(); // both written open
    ended.end();
    rec.logStep({ step: 2, loss: 2 });
    rec.flushSync(); // `ended` written again, ended
    const spans = await sqlRows(dir, 'SELECT name, status, end_time IS NOT NULL AS ended FROM spans ORDER BY name');
    assert.deepEqual(spans, [
      { name: 'ended', status: 'ok', ended: true },
      { name: 'still-open', status: 'open', ended: false },
    ]);
    await assertSameAsReaders(dir, 'live spans');
    open.end();
    assert.equal(rec.close().error, null);
    assert.deepEqual(await sqlRows(dir, 'SELECT name, status FROM spans ORDER BY name'), [
      { name: 'ended', status: 'ok' },
      { name: 'still-open', status: 'ok' },
    ]);
  });

  test("a captured trial's spans are read beside the run's own", async () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    const rec = new Recorder(dir, { ...OPTIONS, runId: 'sql-trials' });
    rec.span('rollout', 'own', () => undefined, { step: 12 });
    rec.logStep({ step: 12, loss: 1 });
    assert.equal(rec.close().error, null);
    const trial = path.join(root, 'hello-world__AbC1234');
    buildPassingTrial(trial);
    await captureTrial(trial, { run: dir, step: 12 });
    const kinds = await sqlRows(dir, 'SELECT kind, count(*) AS n FROM spans GROUP BY kind ORDER BY kind');
    assert.ok(kinds.length > 1 && kinds.some((k) => k.kind === 'rollout' && Number(k.n) >= 2), JSON.stringify(kinds));
    await assertSameAsReaders(dir, 'with a capture');
  });

  test('a run without samples or spans: empty views with the columns the recorder writes in every file', async () => {
    const root = tempDir();
    const empty = path.join(root, 'empty');
    const rec = new Recorder(empty, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    assert.equal(rec.close().error, null);
    const full = path.join(root, 'full');
    const rec2 = new Recorder(full, OPTIONS);
    rec2.logSamples([{ sample_id: 'a', reward_total: 1 }], { step: 0, select: false });
    rec2.span('rollout', 'r', () => undefined, { step: 0 });
    assert.equal(rec2.close().error, null);
    const empty2 = path.join(root, 'no-steps');
    new Recorder(empty2, OPTIONS).close();
    for (const table of ['steps', 'samples', 'spans'] as const) {
      const recorded = await querySql([full], `SELECT * FROM ${table}`);
      const fixed = FIXED_COLUMNS[table].map(([name, type]) => ({ name, type }));
      assert.deepEqual(recorded.columns.slice(0, fixed.length).map(({ name, type }) => ({ name, type })), fixed, `${table}: the fixed columns, first, as recorded`);
      const none = await querySql([table === 'steps' ? empty2 : empty], `SELECT * FROM ${table}`);
      assert.deepEqual(none.rows, []);
      assert.deepEqual(none.columns.map(({ name, type }) => ({ name, type })), fixed, `${table}: an empty view's columns`);
    }
  });
});

describe('ranks and runs', () => {
  test('three SIGKILLed ranks: samples, spans and events of every rank with their rank, steps from rank 0', async () => {
    const dir = path.join(tempDir(), 'run');
    await killedRanks(dir, 3, 50);
    assert.deepEqual(RunReader.open(dir).rankDirs().map((d) => path.basename(d)), ['rank-001', 'rank-002']);
    await assertSameAsReaders(dir, 'ranks');
    // rank-child.ts: step s has loss rank * 1000 + s; sample ids r<rank>-s<step>-<i>
    assert.deepEqual(await sqlRows(dir, 'SELECT count(*) AS n, max(loss) AS hi, min(rank) AS r0, max(rank) AS r1 FROM steps'), [{ n: 50, hi: 49, r0: 0, r1: 0 }]);
    assert.deepEqual(await sqlRows(dir, "SELECT rank, count(*) AS n, count(*) FILTER (WHERE sample_id LIKE 'r' || rank || '-%') AS own FROM samples GROUP BY rank ORDER BY rank"), [
      { rank: 0, n: 150, own: 150 },
      { rank: 1, n: 150, own: 150 },
      { rank: 2, n: 150, own: 150 },
    ]);
    assert.deepEqual(await sqlRows(dir, "SELECT rank, count(*) AS n FROM events WHERE kind = 'rank_done' GROUP BY rank ORDER BY rank"), [
      { rank: 0, n: 1 },
      { rank: 1, n: 1 },
      { rank: 2, n: 1 },
    ]);
  });

  test('several runs: a `run` column first, each run named by its directory (with its parent when two share one)', async () => {
    const root = tempDir();
    const dirs = [path.join(root, 'a', 'exp'), path.join(root, 'b', 'exp'), path.join(root, 'c', 'other')];
    dirs.forEach((dir, r) => {
      const rec = new Recorder(dir, OPTIONS);
      for (let step = 0; step <= r; step++) rec.logStep({ step, loss: 10 * r + step });
      rec.logSamples([{ sample_id: `x${r}` }], { step: 0, select: false });
      rec.logEvent('marker', { message: `run ${r}` });
      assert.equal(rec.close().error, null);
    });
    const result = await querySql(dirs, 'SELECT * FROM steps ORDER BY run, step');
    assert.equal(result.columns[0].name, 'run');
    assert.deepEqual(await sqlRows(dirs, 'SELECT run, step, loss FROM steps ORDER BY run, step'), [
      { run: 'a/exp', step: 0, loss: 0 },
      { run: 'b/exp', step: 0, loss: 10 },
      { run: 'b/exp', step: 1, loss: 11 },
      { run: 'other', step: 0, loss: 20 },
      { run: 'other', step: 1, loss: 21 },
      { run: 'other', step: 2, loss: 22 },
    ]);
    assert.deepEqual(await sqlRows(dirs, 'SELECT run, sample_id FROM samples ORDER BY run'), [
      { run: 'a/exp', sample_id: 'x0' },
      { run: 'b/exp', sample_id: 'x1' },
      { run: 'other', sample_id: 'x2' },
    ]);
    assert.deepEqual(await sqlRows(dirs, "SELECT run, message FROM events WHERE kind = 'marker' ORDER BY run"), [
      { run: 'a/exp', message: 'run 0' },
      { run: 'b/exp', message: 'run 1' },
      { run: 'other', message: 'run 2' },
    ]);
    assert.deepEqual((await querySql(dirs, 'SELECT * FROM spans')).columns[0].name, 'run', 'an empty view has it too');
    // one run: no run column
    assert.ok(!(await querySql([dirs[0]], 'SELECT * FROM steps')).columns.some((c) => c.name === 'run'));
  });

  test('run names: basenames, lengthened only where they clash; a run given twice is refused', () => {
    assert.deepEqual(runNames(['runs/exp1', 'runs/exp2']), ['exp1', 'exp2']);
    assert.deepEqual(runNames(['x/a/exp', 'y/a/exp', 'exp2']), ['x/a/exp', 'y/a/exp', 'exp2']);
    assert.deepEqual(runNames(['/data/exp', '/exp']), ['data/exp', 'exp']);
    assert.throws(() => runNames(['runs/exp', 'runs/../runs/exp']), (e: Error & { code?: string }) => e.code === 'RLPROBE_INVALID_QUERY' && /given twice/.test(e.message));
  });
});

describe('probe sql output', () => {
  /** A closed run with values every output has to get right. */
  function exactRun(): string {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 0.5, reward_components: { correctness: 1 } });
    rec.logStep({ step: 1, loss: NaN, reward_components: { correctness: Infinity } });
    rec.logStep({ step: 2, loss: 0.25, extra: { eval_acc: 0.75 } });
    rec.logSamples(
      [
        { sample_id: 'a,b', completion_text: 'say "hi"\nbye', reward_total: -Infinity },
        { sample_id: 'c', completion_text: '' },
      ],
      { step: 0, select: false },
    );
    assert.equal(rec.close().error, null);
    return dir;
  }

  const STEPS_SQL = 'SELECT step, loss, "reward_component.correctness", "extra.eval_acc" FROM steps ORDER BY step';
  const SAMPLES_SQL = 'SELECT sample_id, completion_text, reward_total FROM samples ORDER BY sample_id';

  test('--json: an array of row objects, NaN and Infinity as strings, JSON columns parsed', async () => {
    const dir = exactRun();
    const steps = await probe(['sql', dir, STEPS_SQL, '--json']);
    assert.equal(steps.code, 0, steps.stderr);
    assert.equal(
      steps.stdout,
      '[\n' +
        '  {"step":0,"loss":0.5,"reward_component.correctness":1,"extra.eval_acc":null},\n' +
        '  {"step":1,"loss":"NaN","reward_component.correctness":"Infinity","extra.eval_acc":null},\n' +
        '  {"step":2,"loss":0.25,"reward_component.correctness":null,"extra.eval_acc":0.75}\n' +
        ']\n',
    );
    assert.equal(steps.stderr, '');
    const samples = await probe(['sql', dir, SAMPLES_SQL, '--json']);
    assert.equal(samples.stdout, '[\n  {"sample_id":"a,b","completion_text":"say \\"hi\\"\\nbye","reward_total":"-Infinity"},\n  {"sample_id":"c","completion_text":"","reward_total":null}\n]\n');
    const values = await probe([
      'sql',
      dir,
      `SELECT 9007199254740993::BIGINT AS big, 9007199254740991::BIGINT AS safe, 42::HUGEINT AS h, [1.5, NULL]::DOUBLE[] AS l, {'k': 'v'} AS s, '{"a":[1]}'::JSON AS j, 1.25::DECIMAL(10,2) AS d, 'x' AS dup, 'y' AS dup`,
      '--json',
    ]);
    assert.equal(values.stdout, '[\n  {"big":"9007199254740993","safe":9007199254740991,"h":42,"l":[1.5,null],"s":{"k":"v"},"j":{"a":[1]},"d":1.25,"dup":"x","dup:1":"y"}\n]\n');
    const none = await probe(['sql', dir, 'SELECT * FROM steps WHERE false', '--json']);
    assert.equal(none.stdout, '[]\n');
  });

  test('--csv: RFC 4180 quoting, NULL as an empty field, an empty string as ""', async () => {
    const dir = exactRun();
    const steps = await probe(['sql', dir, STEPS_SQL, '--csv']);
    assert.equal(steps.code, 0, steps.stderr);
    assert.equal(steps.stdout, 'step,loss,reward_component.correctness,extra.eval_acc\n0,0.5,1,\n1,NaN,Infinity,\n2,0.25,,0.75\n');
    const samples = await probe(['sql', dir, SAMPLES_SQL, '--csv']);
    assert.equal(samples.stdout, 'sample_id,completion_text,reward_total\n"a,b","say ""hi""\nbye",-Infinity\nc,"",\n');
  });

  /** `probe …` in this process with stdout a terminal (isTTY), as a user at a shell sees it. */
  async function probeAtTerminal(args: string[]): Promise<{ code: number; stdout: string }> {
    let text = '';
    const stdout = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    }) as Writable & { isTTY: boolean };
    stdout.isTTY = true;
    const code = await buildCli().run(args, { ...Cli.defaultContext, stdout: stdout as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream, colorDepth: 1 });
    return { code, stdout: text };
  }

  test('control characters: --csv piped is byte-exact, --csv at a terminal escapes them, --json is escaped by JSON', async () => {
    const dir = exactRun();
    // ESC (clears the screen), BEL, CR inside a quoted field, a C1 CSI; newline and tab stay
    const sql = "SELECT chr(27) || '[2J' || chr(7) AS x, 'a' || chr(10) || 'b' || chr(13) || chr(9) AS y, chr(155) || '31m' AS c1";
    const piped = await probe(['sql', dir, sql, '--csv']);
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stdout, 'x,y,c1\n\u001b[2J\u0007,"a\nb\r\t",\u009b31m\n');
    const terminal = await probeAtTerminal(['sql', dir, sql, '--csv']);
    assert.equal(terminal.code, 0);
    assert.equal(terminal.stdout, 'x,y,c1\n\\u001b[2J\\u0007,"a\nb\\r\t",\\u009b31m\n');
    for (const json of [await probe(['sql', dir, sql, '--json']), await probeAtTerminal(['sql', dir, sql, '--json'])]) {
      // oxlint-disable-next-line no-control-regex -- looking for control characters is the point
      assert.doesNotMatch(json.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/, 'no control character but the line ends');
      assert.deepEqual(JSON.parse(json.stdout), [{ x: '\u001b[2J\u0007', y: 'a\nb\r\t', c1: '\u009b31m' }]);
    }
  });

  test('the table: aligned, numbers right, NULL shown, one line per row, escaped, cut past 80 columns', async () => {
    const dir = exactRun();
    const steps = await probe(['sql', dir, STEPS_SQL]);
    assert.equal(steps.code, 0, steps.stderr);
    assert.equal(
      steps.stdout,
      'step  loss  reward_component.correctness  extra.eval_acc\n' +
        '----  ----  ----------------------------  --------------\n' +
        '   0   0.5                             1            NULL\n' +
        '   1   NaN                      Infinity            NULL\n' +
        '   2  0.25                          NULL            0.75\n' +
        '(3 rows)\n',
    );
    const samples = await probe(['sql', dir, SAMPLES_SQL]);
    assert.equal(
      samples.stdout,
      'sample_id  completion_text  reward_total\n' +
        '---------  ---------------  ------------\n' +
        'a,b        say "hi"\\nbye       -Infinity\n' +
        'c                                   NULL\n' +
        '(2 rows)\n',
    );
    const long = await probe(['sql', dir, "SELECT repeat('x', 100) AS t, '中文' AS w"]);
    assert.equal(long.stdout, `${'t'.padEnd(80)}  w\n${'-'.repeat(80)}  ----\n${'x'.repeat(79)}…  中文\n(1 row)\n(cells longer than 80 characters are cut: --json or --csv prints them whole)\n`);
  });

  test('dotted column names need double quotes; unquoted, the error says so', async () => {
    const dir = exactRun();
    assert.deepEqual(await sqlRows(dir, 'SELECT step FROM steps WHERE "reward_component.correctness" = 1'), [{ step: 0 }]);
    const r = await probe(['sql', dir, 'SELECT reward_component.correctness FROM steps']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^probe: Binder Error: .*"reward_component".*\(a dotted column name needs double quotes: "reward_component\.correctness"\)\n$/);
    const help = await probe(['sql', '--help']);
    assert.match(help.stdout, /"reward_component\.correctness"/);
  });

  test('a SQL error: exit 1, DuckDB\'s message on one line', async () => {
    const dir = exactRun();
    const r = await probe(['sql', dir, 'SELEC step FROM steps']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^probe: Parser Error: syntax error at or near "SELEC"[^\n]*\n$/);
    const missing = await probe(['sql', dir, 'SELECT * FROM nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^probe: Catalog Error: Table with name nope does not exist![^\n]*\n$/);
  });

  test('--json with --csv, an empty SQL, no SQL, no run: usage errors (64)', async () => {
    const dir = exactRun();
    for (const args of [['sql', dir, 'SELECT 1', '--json', '--csv'], ['sql', dir, '  '], ['sql', 'SELECT 1'], ['sql']]) {
      const r = await probe(args);
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^probe: /);
    }
    assert.match((await probe(['sql', dir, 'x', '--json', '--csv'])).stderr, /--json and --csv/);
  });

  test('not a run: exit 1 naming it', async () => {
    const r = await probe(['sql', tempDir(), 'SELECT 1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^probe: not a run directory/);
  });
});

describe('DuckDB is optional', () => {
  /** A loader that imports DuckDB from a directory where it is not installed, as a machine without it would. */
  function notInstalled(): DuckDBLoader {
    const dir = tempDir();
    const module = path.join(dir, 'load.mjs');
    writeFileSync(module, "export const load = () => import('@duckdb/node-api');\n");
    return async () => ((await import(pathToFileURL(module).href)) as { load: DuckDBLoader }).load();
  }

  function closedRun(): string {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    assert.equal(rec.close().error, null);
    return dir;
  }

  test('not installed: RLPROBE_NATIVE_MISSING saying how to install it; probe sql exits 1 with that one line', async () => {
    const dir = closedRun();
    const loader = notInstalled();
    await assert.rejects(querySql([dir], 'SELECT 1', { loadDuckDB: loader }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'RLPROBE_NATIVE_MISSING');
      assert.equal(e.message, 'SQL queries need DuckDB, an optional dependency that is not installed: npm install @duckdb/node-api');
      return true;
    });
    const saved = SqlCommand.loadDuckDB;
    SqlCommand.loadDuckDB = loader;
    try {
      const r = await probe(['sql', dir, 'SELECT * FROM steps']);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, 'probe: SQL queries need DuckDB, an optional dependency that is not installed: npm install @duckdb/node-api\n');
    } finally {
      SqlCommand.loadDuckDB = saved;
    }
  });

  test('installed but failing to load: says so, and how to reinstall', async () => {
    const dir = closedRun();
    const broken: DuckDBLoader = () => Promise.reject(new Error('libduckdb.so: cannot open shared object file'));
    await assert.rejects(querySql([dir], 'SELECT 1', { loadDuckDB: broken }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'RLPROBE_NATIVE_MISSING');
      assert.match(e.message, /installed but does not load \(libduckdb\.so: cannot open shared object file\): reinstall it with npm install @duckdb\/node-api$/);
      return true;
    });
  });
});

describe('what is skipped or cannot be read is said', () => {
  test('a damaged step part: the steps fail naming it (never read around it), the other views still answer', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.logSamples([{ sample_id: 'a' }], { step: 0, select: false });
    rec.flushSync();
    rec.logStep({ step: 1, loss: 2 });
    rec.flushSync();
    const part = RunReader.open(dir).stepFiles()[1].path;
    truncateSync(part, Math.floor(statSync(part).size / 2));
    await assert.rejects(querySql([dir], 'SELECT count(*) FROM steps'), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'RLPROBE_CORRUPT_FILE');
      assert.ok(e.message.startsWith(`the steps cannot be read: ${part}: damaged Parquet file`), e.message);
      return true;
    });
    assert.deepEqual(await sqlRows(dir, 'SELECT count(*) AS n FROM samples'), [{ n: 1 }]);
    const r = await probe(['sql', dir, 'SELECT step FROM steps']);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.startsWith('probe: ') && r.stderr.includes(part) && r.stderr.split('\n').length === 2, r.stderr);
    rec.close();
  });

  /**
   * Every query that reads `table` fails as `check` says, whatever DuckDB's optimizer makes
   * of it (an empty result, an aggregate, a filter, a subquery); a query that does not read
   * it answers; `probe sql` exits 1 with one line.
   */
  async function assertTableFails(dir: string, table: string, check: (e: Error & { code?: string }) => void): Promise<void> {
    const reads = [
      `SELECT count(*) FROM ${table}`,
      `SELECT * FROM ${table}`,
      `SELECT max(step) FROM ${table}`,
      `SELECT * FROM ${table} WHERE step > 0`,
      `SELECT * FROM ${table} LIMIT 0`,
      `SELECT EXISTS (SELECT 1 FROM ${table}) AS e`,
    ];
    for (const sql of reads) {
      await assert.rejects(
        querySql([dir], sql),
        (e: Error & { code?: string }) => {
          check(e);
          return true;
        },
        sql,
      );
    }
    assert.deepEqual(await sqlRows(dir, 'SELECT 1 AS one'), [{ one: 1 }]);
    const r = await probe(['sql', dir, `SELECT count(*) FROM ${table}`]);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(r.stdout, '');
    assert.ok(r.stderr.startsWith('probe: ') && r.stderr.split('\n').length === 2, r.stderr);
  }

  test('a closed run whose steps.parquet is truncated: the steps fail naming it, never 0 rows', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.logStep({ step: 1, loss: 2 });
    rec.logSamples([{ sample_id: 'a' }], { step: 0, select: false });
    assert.equal(rec.close().error, null);
    const file = path.join(dir, 'steps.parquet');
    truncateSync(file, Math.floor(statSync(file).size / 2));
    await assertTableFails(dir, 'steps', (e) => {
      assert.equal(e.code, 'RLPROBE_CORRUPT_FILE');
      assert.ok(e.message.includes(`${file}: damaged Parquet file`), e.message);
    });
    assert.deepEqual(await sqlRows(dir, 'SELECT (SELECT count(*) FROM samples) AS samples, (SELECT count(*) FROM events) > 0 AS events'), [{ samples: 1, events: true }]);
  });

  test('a live run whose only step part is damaged: the steps fail naming it, never 0 rows', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.logSamples([{ sample_id: 'a' }], { step: 0, select: false });
    assert.ok(rec.flushSync());
    const [part] = RunReader.open(dir).stepFiles();
    truncateSync(part.path, Math.floor(part.bytes / 2));
    await assertTableFails(dir, 'steps', (e) => {
      assert.equal(e.code, 'RLPROBE_CORRUPT_FILE');
      assert.ok(e.message.startsWith(`the steps cannot be read: ${part.path}: damaged Parquet file`), e.message);
    });
    assert.deepEqual(await sqlRows(dir, 'SELECT count(*) AS n FROM samples'), [{ n: 1 }]);
    rec.close();
  });

  test('events.jsonl that is a directory: the events fail naming it, never 0 rows', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    assert.equal(rec.close().error, null);
    const events = path.join(dir, 'events.jsonl');
    rmSync(events);
    mkdirSync(events);
    await assertTableFails(dir, 'events', (e) => {
      assert.equal(e.code, 'RLPROBE_IO');
      assert.ok(e.message.startsWith(`${events}: a directory, not a regular file`), e.message);
    });
    assert.deepEqual(await sqlRows(dir, 'SELECT count(*) AS n FROM steps'), [{ n: 1 }]);
  });

  test('several runs, one unreadable: the view fails for all, naming that run\'s file', async () => {
    const root = tempDir();
    const dirs = ['good', 'bad'].map((name) => {
      const dir = path.join(root, name);
      const rec = new Recorder(dir, OPTIONS);
      rec.logStep({ step: 0, loss: 1 });
      assert.equal(rec.close().error, null);
      return dir;
    });
    const file = path.join(dirs[1], 'steps.parquet');
    truncateSync(file, Math.floor(statSync(file).size / 2));
    await assert.rejects(querySql(dirs, 'SELECT run, count(*) FROM steps GROUP BY run'), (e: Error & { code?: string }) => e.code === 'RLPROBE_CORRUPT_FILE' && e.message.includes(file));
    assert.deepEqual(await sqlRows(dirs, 'SELECT count(*) AS n FROM events WHERE kind = \'recorder_close\''), [{ n: 2 }]);
  });

  test('a run path DuckDB cannot open (a backslash with `[`): fails naming the run and why, never 0 rows', async () => {
    const dir = path.join(tempDir(), 'exp\\[1]');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.logSamples([{ sample_id: 'a' }], { step: 0, select: false });
    assert.equal(rec.close().error, null);
    assert.equal(RunReader.open(dir).steps().length, 1, 'the library reads it');
    for (const table of ['steps', 'samples']) {
      await assertTableFails(dir, table, (e) => {
        assert.equal(e.code, 'RLPROBE_IO');
        assert.ok(e.message.startsWith(`the ${table} of ${dir} cannot be read: `), e.message);
        assert.match(e.message, /DuckDB cannot open a path holding a backslash together with/);
      });
    }
  });

  test('a foreign file is skipped and named on stderr; a torn event line is skipped and counted', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.logEvent('kept', { message: 'whole' });
    rec.flushSync();
    const foreign = path.join(dir, 'steps', 'notes.parquet');
    cpSync(RunReader.open(dir).stepFiles()[0].path, foreign);
    appendFileSync(path.join(dir, 'events.jsonl'), '{"timestamp": 1, "kind": "torn');
    const result = await querySql([dir], "SELECT (SELECT count(*) FROM steps) AS steps, (SELECT count(*) FROM events WHERE kind = 'kept') AS kept");
    assert.deepEqual(result.rows, [[1, 1]]);
    assert.equal(result.warnings.length, 2, result.warnings.join('\n'));
    assert.ok(result.warnings.some((w) => w.startsWith(`${dir}: skipped ${foreign} (`)), result.warnings.join('\n'));
    assert.ok(result.warnings.includes(`${dir}: skipped 1 unreadable line of events.jsonl (a line torn by a crash, or not an event)`), result.warnings.join('\n'));
    const r = await probe(['sql', dir, 'SELECT count(*) AS n FROM steps', '--csv']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'n\n1\n');
    assert.match(r.stderr, /^probe: warning: .*notes\.parquet.*\nprobe: warning: .*skipped 1 unreadable line of events\.jsonl.*\n$/);
    rec.close();
  });
});

describe('any run directory, nothing written', () => {
  test('a directory name with glob characters reads its own files, not a sibling\'s', async () => {
    const root = tempDir();
    for (const [name, loss] of [['exp[1]*?', 1], ['exp1', 2]] as const) {
      const rec = new Recorder(path.join(root, name), { ...OPTIONS, flushSteps: 1_000_000 });
      rec.logStep({ step: 0, loss });
      rec.flushSync(); // a part, listed by path
      rec.logSamples([{ sample_id: name }], { step: 0, select: false });
      assert.equal(rec.close().error, null);
    }
    assert.deepEqual(await sqlRows(path.join(root, 'exp[1]*?'), 'SELECT loss, (SELECT sample_id FROM samples) AS id FROM steps'), [{ loss: 1, id: 'exp[1]*?' }]);
  });

  test('a listed file that vanished is never globbed into another run\'s file of a similar name', async () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'exp1'));
    await withDuckDB(async (con) => {
      await con.run(`COPY (SELECT 1 AS step) TO '${path.join(root, 'exp1', 'part.parquet')}'`);
      const vanished = path.join(root, 'exp[1]', 'part.parquet');
      // as a glob, the missing path matches the sibling's file
      assert.equal((await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${vanished}')`)).getRowObjectsJson()[0].n, '1');
      await assert.rejects(con.runAndReadAll(`SELECT count(*) FROM read_parquet(${parquetPath(vanished)})`), /No files found/);
    });
  });

  test('the listing snapshot sees a file replaced (a compaction\'s rename) or removed', () => {
    const dir = tempDir();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => path.join(dir, n));
    for (const f of [a, b, c]) writeFileSync(f, f);
    const snapshot = snapshotFiles([a, b, c]);
    assert.deepEqual(changedFiles(snapshot), []);
    writeFileSync(path.join(dir, 'new'), 'replacement');
    renameSync(path.join(dir, 'new'), b);
    rmSync(c);
    assert.deepEqual(changedFiles(snapshot), [b, c]);
  });

  test('files replaced while a query reads them: run again on a fresh listing, given up after 8 attempts', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1 });
    rec.flushSync();
    const part = RunReader.open(dir).stepFiles()[0].path;
    // the query itself rewrites a listed file: every attempt sees it change
    await assert.rejects(querySql([dir], `COPY (SELECT 7::BIGINT AS step) TO '${part}'`), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'RLPROBE_IO');
      assert.ok(e.message.includes(`kept changing while the query read them (8 attempts; last changed: ${part})`), e.message);
      return true;
    });
    rec.close();
  });

  /** A live run with `n` step parts, one a step. */
  function liveParts(n: number): { dir: string; rec: Recorder } {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    for (let step = 0; step < n; step++) {
      rec.logStep({ step, loss: step });
      assert.ok(rec.flushSync());
    }
    return { dir, rec };
  }

  test('a compaction between the listing and the snapshot (the listed parts already gone): listed again, every row once', async () => {
    const { dir, rec } = liveParts(4);
    const result = await querySql([dir], 'SELECT count(*) AS n, count(DISTINCT step) AS steps FROM steps', {
      onListed: (attempt) => {
        if (attempt === 1) compactRun(dir); // publishes steps.parquet, deletes the parts just listed
      },
    });
    assert.deepEqual(result.rows, [[4, 4]]);
    assert.deepEqual(result.warnings, [
      "the run's files changed under the query (a compaction): they were listed 2 times, the result is from the last listing, whose files did not change",
    ]);
    rec.close();
  });

  test('a compaction replacing a listed steps.parquet, its absorbed parts left behind: listed again, no row twice', async () => {
    const { dir, rec } = liveParts(3);
    compactRun(dir);
    for (let step = 3; step < 5; step++) {
      rec.logStep({ step, loss: step });
      assert.ok(rec.flushSync());
    }
    const listed = RunReader.open(dir).stepFiles().map((f) => f.path);
    assert.equal(listed.length, 3, 'steps.parquet and two parts');
    const aside = tempDir();
    const result = await querySql([dir], 'SELECT count(*) AS n, count(DISTINCT step) AS steps FROM steps', {
      onListed: (attempt) => {
        if (attempt !== 1) return;
        // a compaction killed after publishing, before deleting its parts: the parts stay
        // the very same files (hard links keep inode, size and mtime), steps.parquet is new
        const parts = listed.slice(1);
        parts.forEach((p, i) => linkSync(p, path.join(aside, String(i))));
        compactRun(dir); // removes steps/ once empty
        mkdirSync(path.dirname(parts[0]), { recursive: true });
        parts.forEach((p, i) => linkSync(path.join(aside, String(i)), p));
      },
    });
    assert.ok(RunReader.open(dir).absorbedLeftovers() > 0, 'the parts are absorbed leftovers now');
    assert.deepEqual(result.rows, [[5, 5]]);
    assert.equal(result.warnings.length, 1, result.warnings.join('\n'));
    assert.match(result.warnings[0], /they were listed 2 times/);
    rec.close();
  });

  test('listed files gone at every snapshot: given up after 8 listings', async () => {
    const { dir, rec } = liveParts(9);
    const aside = tempDir();
    let listings = 0;
    await assert.rejects(
      querySql([dir], 'SELECT count(*) FROM steps', {
        onListed: () => {
          listings++;
          const [first] = RunReader.open(dir).stepFiles();
          renameSync(first.path, path.join(aside, path.basename(first.path)));
        },
      }),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'RLPROBE_IO');
        assert.match(e.message, /kept changing while the query read them \(8 attempts; last changed: .*part-00007\.parquet\)/);
        return true;
      },
    );
    assert.equal(listings, 8);
    rec.close();
  });

  test('a sample file without a rank column (another writer\'s) takes its rank directory\'s rank', async () => {
    const dir = path.join(tempDir(), 'run');
    const rank0 = new Recorder(dir, OPTIONS);
    rank0.logSamples([{ sample_id: 'own-0' }], { step: 0, select: false });
    assert.equal(rank0.close().error, null);
    const rank1 = new Recorder(dir, { ...OPTIONS, rank: 1, recordAllRanks: true });
    rank1.logSamples([{ sample_id: 'own-1' }], { step: 0, select: false });
    assert.equal(rank1.close().error, null);
    const foreignWriter = path.join(dir, 'rank-001', 'samples', 'part-00100.parquet');
    await withDuckDB((con) => con.run(`COPY (SELECT 5::BIGINT AS step, 'other-1' AS sample_id, 0.5::DOUBLE AS reward_total) TO '${foreignWriter}'`));
    assert.deepEqual(await sqlRows(dir, 'SELECT sample_id, rank FROM samples ORDER BY sample_id'), [
      { sample_id: 'other-1', rank: 1 },
      { sample_id: 'own-0', rank: 0 },
      { sample_id: 'own-1', rank: 1 },
    ]);
    await assertSameAsReaders(dir, 'a file without ranks');
  });

  test('an older run (a migration renames columns) reads under the current names', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    rec.logStep({ step: 0, loss: 1, kl: 0.5 } as never);
    rec.logSamples([{ sample_id: 'a', reward: 2 } as never], { step: 0, select: false });
    assert.equal(rec.close().error, null);
    const manifestFile = path.join(dir, 'manifest.json');
    writeFileSync(manifestFile, JSON.stringify({ ...(JSON.parse(readFileSync(manifestFile, 'utf8')) as object), schema_version: 0 }));
    const v0: Migration = { from: 0, describe: 'v0 → v1', stepColumns: { 'extra.kl': 'kl_mean' }, sampleColumns: { 'extra.reward': 'reward_total' } };
    const migrations = { migrations: [v0] };
    assert.deepEqual(await sqlRows(dir, 'SELECT step, kl_mean FROM steps', migrations), [{ step: 0, kl_mean: 0.5 }]);
    assert.deepEqual(await sqlRows(dir, 'SELECT sample_id, reward_total FROM samples', migrations), [{ sample_id: 'a', reward_total: 2 }]);
    const reader = RunReader.open(dir, migrations);
    assert.equal(reader.steps()[0].kl_mean, 0.5);
    assert.equal([...reader.samples()][0].reward_total, 2);
  });

  test('queries write nothing in the run directory (live run, every view, every output)', async () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, OPTIONS);
    for (let step = 0; step < 5; step++) rec.logStep({ step, loss: step });
    rec.logSamples([{ sample_id: 'a', reward_total: 1 }], { step: 0, select: false });
    rec.span('rollout', 'r', () => undefined, { step: 0 });
    rec.flushSync();
    const before = tree(dir);
    for (const sql of ['SELECT * FROM steps', 'SELECT * FROM samples', 'SELECT * FROM spans', 'SELECT * FROM events']) {
      for (const format of [[], ['--json'], ['--csv']]) assert.equal((await probe(['sql', dir, sql, ...format])).code, 0);
    }
    assert.deepEqual(tree(dir), before);
    rec.close();
  });
});
