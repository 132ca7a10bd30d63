/**
 * Interop with the real Python client: `rlprobe` 0.1.0 from PyPI (pinned in
 * test/interop/requirements.txt, installed in a virtualenv by scripts/setup-python.mjs).
 * A run recorded by Python reads back through RunReader with every field equal; a run
 * recorded by our Recorder reads back through Python's RunReader, pyarrow and DuckDB
 * with every field equal.
 *
 * Not only closed runs (issue 20): runs Python leaves crashed (flushed, never closed), live,
 * resumed (steps.parquet beside new parts) and multi-rank read back through RunReader; runs
 * of ours live, crashed (SIGKILL), resumed then crashed, and multi-rank read back through
 * Python's RunReader, every step included (Python 0.1.0 reads only steps.parquet when it
 * exists, so a resumed run of ours must leave none).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { spawn } from 'node:child_process';

import { Recorder, RunReader } from '../ts/index.js';
import type { SampleRecord, StepRecord, StoredSampleRecord } from '../ts/index.js';
import { REPO_ROOT, freshTempDir, sleep } from './helpers/child.js';
import { LATE_STEP_COLUMNS, storedStep } from './helpers/late-columns.js';
import { EXPECTED, LAYOUTS, buildLayouts } from './helpers/late-columns-layouts.js';
import type { LayoutName } from './helpers/late-columns-layouts.js';
import { interopPython, runPython } from './helpers/python.js';

type Json = Record<string, unknown>;

const env = interopPython();
const skip = 'skip' in env ? env.skip : false;
const python = 'python' in env ? env.python : '';

function tempDir(t: { after: (f: () => void) => void }, label: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `rlprobe-py-${label}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Drops keys whose value is undefined or null (absent in one reader, None in another). */
function present(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/** JSON.parse's reviver for the non-finite floats the scripts write as strings. */
function nonFinite(_key: string, v: unknown): unknown {
  return v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v;
}

/**
 * Starts a script of test/interop that prints one JSON line and then holds its recorders
 * open until a line arrives on stdin; resolves with the JSON once printed.
 */
async function holdingPython(script: string, args: string[]) {
  const proc = spawn(python, [path.join(REPO_ROOT, 'test', 'interop', script), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  const kill = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  };
  for (let waited = 0; !out.includes('\n'); waited += 20) {
    if (waited > 120_000 || proc.exitCode !== null) {
      kill();
      throw new Error(`${script} printed no JSON line (exit ${proc.exitCode}): ${err}`);
    }
    await sleep(20);
  }
  const json: unknown = JSON.parse(out.slice(0, out.indexOf('\n')), nonFinite);
  /** Lets the script exit (without closing its recorders); resolves with its exit code. */
  const release = () => {
    proc.stdin.end('\n');
    return exited;
  };
  return { json, release, kill, errors: () => err };
}

type Tuple = Array<string | number | null>;
const sortTuples = (rows: Tuple[]) => [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

describe('Python rlprobe 0.1.0 interop', { skip }, () => {
  test('a run recorded by Python reads back through RunReader, every field equal', (t) => {
    const dir = tempDir(t, 'from-python');
    const expected = runPython(python, 'py_write_run.py', [dir]) as { steps: Json[]; samples: Json[]; events: Json[] };
    const reader = RunReader.open(dir);
    assert.equal(reader.manifest.run_id, 'py-interop');
    assert.equal(reader.manifest.algorithm, 'grpo');
    assert.equal(reader.manifest.model_name, 'tiny-llm');
    assert.equal(reader.manifest.world_size, 2);
    assert.deepEqual(reader.manifest.trainer_config, { lr: 1e-6, nested: { beta: 0.04, list: [1, 2] } });

    // steps: rank 0's alone, every field (unknown keys are extras on both sides)
    const steps = reader.steps();
    assert.equal(steps.length, expected.steps.length);
    expected.steps.forEach((e, i) => {
      const { my_custom, ...known } = e;
      const want = { ...known, extra: { my_custom }, rank: 0, timestamp: 1_700_000_000 + (e.step as number) };
      assert.deepEqual(present(steps[i] as unknown as Json), want, `step ${e.step}`);
    });

    // samples: both ranks, every field, rank-attributed
    const samples = [...reader.samples()];
    // the columnar read of Python's files (integer ids, no rank column) holds the same records
    assert.deepEqual([...reader.sampleTable().records()], samples);
    assert.equal(samples.length, expected.samples.length);
    const byId = new Map(samples.map((s) => [s.sample_id, s]));
    for (const e of expected.samples) {
      const got = byId.get(e.sample_id as string);
      assert.ok(got, `sample ${e.sample_id}`);
      assert.deepEqual(present(got as unknown as Json), present(e), `sample ${e.sample_id}`);
    }
    assert.deepEqual([...reader.samples({ rank: 1 })].length, expected.samples.length / 2);

    // events: both ranks, ordered by time, with their data
    const events = reader.events().filter((e) => e.kind === 'checkpoint');
    assert.deepEqual(
      events.map((e) => ({ kind: e.kind, step: e.step, rank: e.rank, message: e.message, data: e.data })).sort((a, b) => a.rank - b.rank),
      expected.events,
    );
    const times = reader.events().map((e) => e.timestamp);
    assert.deepEqual(times, [...times].sort((a, b) => a - b));
  });

  test('a run recorded by our Recorder reads back through Python rlprobe, pyarrow and DuckDB', (t) => {
    const dir = tempDir(t, 'to-python');
    const common = { algorithm: 'ppo', runId: 'ts-interop', modelName: 'm', trainerConfig: { kl_coef: 0.05, sched: { warmup: 10 } }, worldSize: 2, recordAllRanks: true, installHandlers: false, captureEnvironment: false };
    const logged: { steps: StepRecord[]; samples: Array<SampleRecord & { rank: number }> } = { steps: [], samples: [] };
    for (const rank of [0, 1]) {
      const rec = new Recorder(dir, { ...common, rank });
      for (let step = 0; step < 40; step++) {
        if (rank === 0) {
          const s: StepRecord & Json = {
            step,
            timestamp: 1_750_000_000 + step / 4,
            reward_mean: step / 10,
            reward_std: 0.25,
            kl_mean: step === 5 ? NaN : 0.002 * step,
            kl_positional: [0.5, step, -1e-300],
            entropy_mean: 1.5,
            grad_norm: step === 6 ? Infinity : 1 + step,
            value_loss: -0,
            nan_count: step === 5 ? 2 : 0,
            inf_count: 0,
            reward_components: { format: 1, correct: step % 2 },
            extra: { throughput_tok_s: 1234.5 + step },
            my_metric: step * 7,
          };
          if (step % 8 === 0) s.lr = 3e-7;
          rec.logStep(s);
          logged.steps.push(s);
        }
        const samples: SampleRecord[] = Array.from({ length: 3 }, (_, i) => ({
          sample_id: `ts-r${rank}-${step}-${i}`,
          group_id: `grp-${i}`,
          prompt_id: `p-${step}`,
          prompt_text: `Prove ${step} ≥ ${i} — ✓ 🎯`,
          completion_text: i === 2 ? 'x'.repeat(20_000) : `proof ${i}\n\tdone`,
          completion_token_ids: [i, step, 2 ** 40],
          reward_total: i === 1 && step === 3 ? NaN : i * 0.5,
          reward_components: { format: 1, correct: i },
          advantage: i - 1,
          logprob_mean: -0.125 * i,
          kl_contribution: 1e-4 * i,
          completion_len: 100 * i,
          truncated: i === 2,
        }));
        rec.logSamples(samples, { step, select: false });
        for (const s of samples) logged.samples.push({ ...s, step, rank, capture_reason: 'all' } as SampleRecord & { rank: number });
      }
      rec.logEvent('checkpoint', { step: 20, message: `saved r${rank}`, data: { path: '/c/20', ok: true } });
      const summary = rec.close();
      assert.equal(summary.error, null);
    }

    const py = runPython(python, 'py_read_run.py', [dir]) as Record<string, unknown> & {
      manifest: Json; steps: Json[]; samples: Json[]; events: Json[]; rank_dirs: string[];
      pyarrow_steps: Json[]; duckdb_steps: Json[]; pyarrow_samples: Json[]; duckdb_samples: Json[];
      pyarrow_step_types: Record<string, string>; pyarrow_sample_types: Record<string, string>;
    };
    // manifest keys as Python's RunManifest
    assert.equal(py.manifest.schema_version, 1);
    assert.equal(py.manifest.run_id, 'ts-interop');
    assert.equal(py.manifest.algorithm, 'ppo');
    assert.equal(py.manifest.world_size, 2);
    assert.deepEqual(py.manifest.trainer_config, { kl_coef: 0.05, sched: { warmup: 10 } });
    assert.deepEqual(py.rank_dirs, ['rank-001']);

    // steps through Python's StepRecord: every field
    assert.equal(py.steps.length, logged.steps.length);
    logged.steps.forEach((s, i) => {
      const { my_metric, extra, ...known } = s as StepRecord & Json;
      const want = { ...known, rank: 0, extra: { ...(extra as Json), my_metric } };
      assert.deepEqual(present(py.steps[i]), want, `python step ${s.step}`);
    });
    // the same values through pyarrow and DuckDB, flattened
    for (const [name, rows] of [['pyarrow', py.pyarrow_steps], ['duckdb', py.duckdb_steps]] as const) {
      assert.equal(rows.length, logged.steps.length, name);
      logged.steps.forEach((s, i) => {
        const row = rows[i];
        assert.equal(row.step, s.step, `${name} step`);
        assert.deepEqual(row.kl_mean, s.kl_mean, `${name} kl_mean @${s.step}`);
        assert.deepEqual(row.grad_norm, s.grad_norm, `${name} grad_norm @${s.step}`);
        assert.deepEqual(row.kl_positional, s.kl_positional, `${name} kl_positional @${s.step}`);
        assert.equal(row['reward_component.correct'], s.reward_components!.correct, `${name} component`);
        assert.equal(row['extra.my_metric'], (s as Json).my_metric, `${name} extra`);
        assert.equal(row.lr ?? undefined, s.lr, `${name} lr @${s.step}`);
        assert.equal(row.nan_count, s.nan_count, `${name} nan_count`);
      });
    }
    assert.equal(py.pyarrow_step_types.step, 'int64');
    assert.equal(py.pyarrow_step_types.nan_count, 'int64');
    assert.equal(py.pyarrow_step_types.kl_positional, 'list<item: double>');

    // samples through Python's SampleRecord (every rank), pyarrow and DuckDB
    const key = (s: Json) => String(s.sample_id);
    const want = new Map(logged.samples.map((s) => [s.sample_id as string, present(s as unknown as Json)]));
    assert.equal(py.samples.length, logged.samples.length);
    for (const s of py.samples) assert.deepEqual(present(s), want.get(key(s)), `python sample ${key(s)}`);
    const rank0 = logged.samples.filter((s) => s.rank === 0);
    for (const [name, rows] of [['pyarrow', py.pyarrow_samples], ['duckdb', py.duckdb_samples]] as const) {
      assert.equal(rows.length, rank0.length, `${name} sample rows`);
      for (const row of rows) {
        const w = want.get(key(row))!;
        for (const f of ['step', 'rank', 'group_id', 'prompt_text', 'completion_text', 'completion_token_ids', 'reward_total', 'advantage', 'completion_len', 'truncated', 'capture_reason']) {
          assert.deepEqual(row[f], w[f], `${name} ${key(row)}.${f}`);
        }
        assert.equal(row['reward_component.correct'], (w.reward_components as Json).correct);
      }
    }
    assert.equal(py.pyarrow_sample_types.sample_id, 'string');
    assert.equal(py.pyarrow_sample_types.completion_token_ids, 'list<item: int64>');
    assert.equal(py.pyarrow_sample_types.truncated, 'bool');
    assert.equal(py.pyarrow_sample_types.completion_len, 'int64');

    // events: Python's Event model, both ranks, ordered by time
    const checkpoints = py.events.filter((e) => e.kind === 'checkpoint');
    assert.deepEqual(checkpoints.map((e) => [e.rank, e.step, e.message, e.data]).sort(), [
      [0, 20, 'saved r0', { path: '/c/20', ok: true }],
      [1, 20, 'saved r1', { path: '/c/20', ok: true }],
    ]);
    for (const e of py.events) assert.equal(typeof e.timestamp, 'number');

    // and our own reader agrees with what we logged
    const ours: StoredSampleRecord[] = [...RunReader.open(dir).samples()];
    assert.equal(ours.length, logged.samples.length);
  });

  test('runs Python rlprobe leaves live, crashed, resumed and multi-rank read back through RunReader, every field equal', async (t) => {
    const root = tempDir(t, 'from-python-layouts');
    const py = await holdingPython('py_write_layouts.py', [root]);
    t.after(py.kill);
    const expected = py.json as Record<string, { steps: Json[]; samples: Json[]; events: Json[] }>;
    const layouts: Record<string, string> = { live: 'parts', crashed: 'parts', resumed: 'mixed', multirank: 'parts' };
    // read while the Python process still holds every recorder open (live, or as a kill leaves them)
    for (const [name, layout] of Object.entries(layouts)) {
      const dir = path.join(root, name);
      const reader = RunReader.open(dir);
      const e = expected[name];
      assert.equal(reader.layout(), layout, `${name}: layout`);
      assert.equal(reader.manifest.run_id, 'py-layouts', `${name}: manifest`);
      assert.deepEqual(reader.rankDirs().map((d) => path.basename(d)), name === 'multirank' ? ['rank-001'] : [], `${name}: rank directories`);

      // steps: every one, in write order (a resumed run: steps.parquet, then the parts after it)
      const steps = reader.steps();
      assert.equal(steps.length, e.steps.length, `${name}: every step`);
      e.steps.forEach((want, i) => assert.deepEqual(present(steps[i] as unknown as Json), want, `${name}: step row ${i}`));
      const columns = new Set(reader.stepColumns().map((c) => c.name));
      for (const c of Object.keys(LATE_STEP_COLUMNS)) assert.ok(columns.has(c), `${name}: the late column ${c}`);

      // samples of every rank, every field
      const samples = [...reader.samples()];
      assert.deepEqual([...reader.sampleTable().records()], samples, `${name}: the columnar read`);
      assert.equal(samples.length, e.samples.length, `${name}: samples`);
      const byId = new Map(samples.map((s) => [s.sample_id, s]));
      for (const want of e.samples) {
        const got = byId.get(want.sample_id as string);
        assert.ok(got, `${name}: sample ${want.sample_id}`);
        assert.deepEqual(present(got as unknown as Json), present(want), `${name}: sample ${want.sample_id}`);
      }

      // events of every rank (both generations of a resumed run)
      const events = reader
        .events()
        .filter((x) => x.kind === 'checkpoint')
        .map((x): Tuple => [x.kind, x.step ?? null, x.rank, x.message, JSON.stringify(x.data)]);
      const wanted = e.events.map((x): Tuple => [x.kind as string, x.step as number, x.rank as number, x.message as string, JSON.stringify(x.data)]);
      assert.deepEqual(sortTuples(events), sortTuples(wanted), `${name}: checkpoint events`);
    }
    assert.equal(RunReader.open(path.join(root, 'live')).status().state, 'open', 'a live Python run reads as open');
    assert.equal(await py.release(), 0, py.errors());
  });

  test('runs of ours live, crashed, resumed then crashed, and multi-rank read back through Python rlprobe: every step, every field', { timeout: 180_000 }, async (t) => {
    const tmp = freshTempDir('to-python-layouts');
    const built = await buildLayouts(tmp.dir);
    t.after(async () => {
      await built.stopLive();
      tmp.cleanup();
    });
    type PyRun = {
      manifest: Json; steps: Json[]; samples: Json[]; events: Json[]; rank_dirs: string[]; step_files: string[];
      steps_table: { columns: string[]; rows: number };
    };
    let py: Record<LayoutName, PyRun>;
    try {
      // the live child still holds its run while Python reads it
      py = runPython(python, 'py_read_layouts.py', LAYOUTS.map((name) => `${name}=${built.dirs[name]}`)) as Record<LayoutName, PyRun>;
    } finally {
      await built.stopLive();
    }
    for (const name of LAYOUTS) {
      const got = py[name];
      const want = EXPECTED[name];
      assert.equal(got.manifest.run_id, 'late-columns', `${name}: manifest`);
      assert.equal(got.manifest.world_size, name === 'multirank' ? 2 : 1, `${name}: world size`);
      assert.deepEqual(got.rank_dirs, name === 'multirank' ? ['rank-001'] : [], `${name}: rank directories`);

      // steps: Python reads steps.parquet alone when it exists, so every step must be in the files it picks
      const steps = want.steps['.'];
      assert.equal(got.steps.length, steps.length, `${name}: Python reads every step (it read ${got.step_files.join(', ')})`);
      steps.forEach(({ logged, rank }, i) => assert.deepEqual(present(got.steps[i]), storedStep(logged, rank), `${name}: Python's step row ${i}`));
      assert.equal(got.steps_table.rows, steps.length, `${name}: steps_table() rows`);
      for (const c of Object.keys(LATE_STEP_COLUMNS)) assert.ok(got.steps_table.columns.includes(c), `${name}: steps_table() has ${c}`);

      // samples of every rank through Python's SampleRecord (which has no extra, labels or span_id)
      assert.equal(got.samples.length, want.samples.length, `${name}: Python reads every sample once`);
      const byId = new Map(got.samples.map((s) => [s.sample_id as string, s]));
      for (const s of want.samples) {
        const { labels: _labels, extra: _extra, span_id: _span, ...fields } = s;
        assert.deepEqual(present(byId.get(s.sample_id as string) ?? {}), present(fields as Json), `${name}: Python's sample ${s.sample_id}`);
      }

      // events: Python's Event model reads every line RunReader reads
      const ours = RunReader.open(built.dirs[name])
        .events()
        .map((e): Tuple => [e.kind, e.rank, e.step ?? null, e.message]);
      const theirs = got.events.map((e): Tuple => [e.kind as string, e.rank as number, (e.step as number | null) ?? null, e.message as string]);
      assert.deepEqual(sortTuples(theirs), sortTuples(ours), `${name}: events`);
    }
  });
});
