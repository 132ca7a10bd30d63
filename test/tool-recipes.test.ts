/**
 * Any Parquet tool reads any run, in any state (issue 20): pyarrow, polars and DuckDB
 * (Python, test/interop/py_tool_recipes.py) read a live, a crashed, a closed, a resumed-then-
 * crashed and a multi-rank run of ours with the recipes docs/format.md gives, and get every
 * column and every row RunReader gets: the columns that first appear mid-run (an eval metric
 * every 50 steps, a late `extra.*`, a late `reward_component.*`, a late sample field)
 * included, null before they appear.
 *
 * The mechanism under test: `steps/` and `samples/` hold a zero-row `columns.parquet` whose
 * schema is the union of every file beside it, published before any part that brings a new
 * column, and sorting first, so readers that take the first file's schema see every column
 * and readers that need every file to match fail loudly instead of dropping one. Which file
 * holds the steps follows Python rlprobe's rule (`steps.parquet` when it exists, else
 * `steps/*.parquet`): a resumed run demotes its `steps.parquet` to a part at open.
 *
 * The naive reads (a glob without the union option, pyarrow on the directory) may raise, but
 * never return fewer columns: the test records which each does.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { freshTempDir } from './helpers/child.js';
import { LATE_SAMPLE_COLUMNS, LATE_STEP_COLUMNS, storedStep } from './helpers/late-columns.js';
import { EXPECTED, LAYOUTS, RESUME_CLOSE, buildLayouts } from './helpers/late-columns-layouts.js';
import type { BuiltLayouts, LayoutName } from './helpers/late-columns-layouts.js';
import { interopPython, runPython } from './helpers/python.js';

type Row = Record<string, unknown>;
interface ReadResult {
  columns?: string[];
  types?: Record<string, string>;
  rows?: Row[];
  error?: string;
}
interface NaiveResult {
  columns?: string[];
  row_count?: number;
  error?: string;
}
interface TableReads {
  recipes: Record<string, ReadResult>;
  naive: Record<string, NaiveResult>;
}
interface LayoutReads {
  files: Record<string, Array<{ name: string; rows: number; columns: string[]; types: Record<string, string> }>>;
  steps: Record<string, TableReads & { source: string; observed: Record<string, NaiveResult> }>;
  samples: TableReads & { dirs: string[] };
  spans: TableReads & { dirs: string[] };
}

/** What RunReader gives, flattened to the files' column names, per table. */
interface Oracle {
  steps: Record<string, Row[]>;
  samples: Row[];
  spans: Row[];
}

const env = interopPython();
const skip = 'skip' in env ? env.skip : false;
const python = 'python' in env ? env.python : '';

/** Drops keys whose value is undefined (absent in RunReader, null in a Parquet tool). */
function present(o: object): Row {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/** A row with its dict fields spread into `reward_component.*` / `extra.*` columns. */
function flatten(row: object): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (v === undefined) continue;
    if (k === 'reward_components') for (const [c, x] of Object.entries(v as Row)) out[`reward_component.${c}`] = x;
    else if (k === 'extra') for (const [c, x] of Object.entries(v as Row)) out[`extra.${c}`] = x;
    else out[k] = v;
  }
  return out;
}

function show(x: unknown): string {
  return Array.isArray(x) ? `[${x.map(show).join(', ')}]` : typeof x === 'string' ? JSON.stringify(x) : String(x);
}

/** JSON text columns (labels, attributes) compare as the objects they hold; none is {}. */
const JSON_COLUMNS = new Set(['labels', 'attributes']);

function assertSameCell(tool: unknown, reader: unknown, column: string, where: string): void {
  if (JSON_COLUMNS.has(column)) {
    const parsed = tool === null || tool === undefined ? {} : JSON.parse(String(tool));
    assert.deepEqual(parsed, reader ?? {}, `${where}: ${column}`);
    return;
  }
  if (tool === null || tool === undefined) {
    assert.ok(reader === undefined || reader === null, `${where}: the tool has null, RunReader has ${show(reader)}`);
    return;
  }
  if (Array.isArray(tool)) {
    assert.ok(Array.isArray(reader), `${where}: a list ${show(tool)} vs ${show(reader)}`);
    assert.equal(tool.length, (reader as unknown[]).length, `${where}: list length`);
    tool.forEach((x, i) => assert.ok(Object.is(x, (reader as unknown[])[i]), `${where}[${i}]: ${show(x)} vs ${show((reader as unknown[])[i])}`));
    return;
  }
  assert.ok(Object.is(tool, reader), `${where}: the tool has ${show(tool)}, RunReader has ${show(reader)}`);
}

/**
 * A tool's rows equal RunReader's: no error, every RunReader column present (the tool may
 * have more only when they are null throughout, as fixed columns nobody set), the same rows
 * (ordered by `key`), every cell equal.
 */
function assertSameTable(result: ReadResult, oracle: Row[], key: (r: Row) => string, what: string): void {
  assert.equal(result.error, undefined, `${what}: the recipe raised: ${result.error}`);
  const columns = new Set(result.columns);
  const wanted = new Set(oracle.flatMap((r) => Object.keys(r)));
  const missing = [...wanted].filter((c) => !columns.has(c));
  assert.deepEqual(missing, [], `${what}: columns missing (the tool has ${[...columns].join(', ')})`);
  const rows = result.rows!;
  assert.equal(rows.length, oracle.length, `${what}: row count`);
  const sort = (list: Row[]) => [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const [got, want] = [sort(rows), sort(oracle)];
  got.forEach((row, i) => {
    assert.equal(key(row), key(want[i]), `${what}: row ${i} key`);
    for (const column of columns) assertSameCell(row[column], want[i][column], column, `${what} ${key(row)} ${column}`);
  });
}

const stepKey = (r: Row) => `${String(r.step).padStart(8, '0')}|${r.timestamp}`;
const sampleKey = (r: Row) => String(r.sample_id);
const spanKey = (r: Row) => `${r.rank}|${r.span_id}`;

/** A naive read either raised or returned every column (and every row). */
function assertNaive(name: string, result: NaiveResult, wanted: Set<string>, rows: number | null, what: string): string {
  if (result.error !== undefined) return `${name}: raised (${result.error.split('\n')[0].slice(0, 160)})`;
  const missing = [...wanted].filter((c) => !result.columns!.includes(c));
  assert.deepEqual(missing, [], `${what} ${name}: a naive read silently dropped columns`);
  if (rows !== null) assert.equal(result.row_count, rows, `${what} ${name}: row count`);
  return `${name}: every column`;
}

describe('pyarrow, polars and DuckDB read every layout with the documented recipes (issue 20)', { skip }, () => {
  let tmp: ReturnType<typeof freshTempDir> | undefined;
  let built: BuiltLayouts | undefined;
  const reads = {} as Record<LayoutName, LayoutReads>;
  const oracles = {} as Record<LayoutName, Oracle>;

  before(async () => {
    tmp = freshTempDir('tool-recipes');
    built = await buildLayouts(tmp.dir);
    // RunReader and the tools read each layout as it is: the live child still holds its run
    for (const name of LAYOUTS) {
      const dir = built.dirs[name];
      const reader = RunReader.open(dir);
      const steps: Record<string, Row[]> = { '.': reader.steps().map(flatten) };
      for (const rankDir of reader.rankDirs()) steps[path.basename(rankDir)] = RunReader.open(rankDir).steps().map(flatten);
      oracles[name] = {
        steps,
        samples: [...reader.samples()].map(flatten),
        spans: reader.spans().map((s) => ({ ...s })),
      };
    }
    Object.assign(reads, runPython(python, 'py_tool_recipes.py', LAYOUTS.map((name) => `${name}=${built!.dirs[name]}`)));
    await built.stopLive();
  }, { timeout: 180_000 });

  after(async () => {
    await built?.stopLive();
    tmp?.cleanup();
  });

  for (const name of LAYOUTS) {
    describe(name, () => {
      test('RunReader reads every step and sample logged (the oracle the tools are held to)', () => {
        const { steps, samples, spans } = oracles[name];
        const expected = EXPECTED[name];
        const spanById = new Map(spans.map((x) => [`${x.rank}|${x.span_id}`, x]));
        assert.deepEqual(Object.keys(steps).sort(), Object.keys(expected.steps).sort(), 'recordings');
        for (const [rec, want] of Object.entries(expected.steps)) {
          assert.equal(steps[rec].length, want.length, `${rec}: steps`);
          want.forEach(({ logged, rank }, i) => assert.deepEqual(present(steps[rec][i]), flatten(storedStep(logged, rank)), `${rec}: step row ${i}`));
        }
        assert.equal(samples.length, expected.samples.length, 'samples');
        const byId = new Map(samples.map((s) => [s.sample_id, s]));
        for (const e of expected.samples) {
          const got = byId.get(e.sample_id);
          assert.ok(got, `sample ${e.sample_id}`);
          const { span_id, ...rest } = present(got);
          const rollout = spanById.get(`${e.rank}|${span_id}`);
          assert.equal(rollout?.name, `rollout-${e.step}`, `sample ${e.sample_id}: logged inside its rollout span (${span_id})`);
          assert.deepEqual(rest, flatten(e), `sample ${e.sample_id}`);
        }
      });

      test('steps/ and samples/ hold a columns.parquet head: zero rows, first, every column of the files beside it', () => {
        const { files } = reads[name];
        for (const [dir, list] of Object.entries(files)) {
          if (dir.endsWith('spans')) continue;
          const data = list.filter((f) => f.name !== 'columns.parquet');
          if (data.length === 0) continue;
          assert.equal(list[0]?.name, 'columns.parquet', `${dir}: the head sorts first (files: ${list.map((f) => f.name).join(', ')})`);
          const head = list[0];
          assert.equal(head.rows, 0, `${dir}/columns.parquet has no rows`);
          for (const f of data) {
            for (const c of f.columns) {
              assert.ok(head.columns.includes(c), `${dir}/columns.parquet lacks ${c} of ${f.name}`);
              assert.equal(head.types[c], f.types[c], `${dir}/columns.parquet: the type of ${c} (as in ${f.name})`);
            }
          }
        }
      });

      test('steps: steps.parquet only on a closed run; a resumed recording demotes its steps.parquet to its first part', () => {
        const { files, steps } = reads[name];
        for (const [rec, read] of Object.entries(steps)) {
          const prefix = rec === '.' ? '' : `${rec}/`;
          if (name === 'closed') {
            assert.equal(read.source, 'steps.parquet', `${rec}: a closed run is compacted`);
            assert.equal(files[`${prefix}steps`], undefined, `${rec}: steps/ is removed by the compaction`);
          } else {
            assert.equal(read.source, 'steps', `${rec}: a live, crashed or resumed run has parts and no steps.parquet`);
          }
        }
        if (name === 'resumed' || name === 'multirank') {
          // the resumed recording's steps.parquet, demoted to the first part
          const rec = name === 'resumed' ? '' : 'rank-001/';
          const parts = files[`${rec}steps`].filter((f) => f.name.startsWith('part-'));
          assert.equal(parts[0].rows, name === 'resumed' ? RESUME_CLOSE : 120, `${rec}steps/${parts[0].name}: the demoted compacted file`);
        }
      });

      for (const tool of ['pyarrow_read_table', 'pyarrow_dataset', 'polars', 'duckdb']) {
        test(`steps through ${tool}: every column and row RunReader gives, late columns null before they appear`, () => {
          for (const [rec, read] of Object.entries(reads[name].steps)) {
            const result = read.recipes[tool];
            assertSameTable(result, oracles[name].steps[rec], stepKey, `${name} ${rec} steps (${tool})`);
            for (const [column, first] of Object.entries(LATE_STEP_COLUMNS)) {
              const rows = result.rows!;
              const before = rows.filter((r) => (r.step as number) < first);
              assert.ok(before.length > 0 && before.every((r) => r[column] === null), `${rec} ${column}: null before step ${first}`);
              const logged = EXPECTED[name].steps[rec].filter(({ logged }) => flatten(storedStep(logged, 0))[column] !== undefined).length;
              assert.equal(rows.filter((r) => r[column] !== null).length, logged, `${rec} ${column}: a value at every step that logged one`);
              assert.match(result.types![column], /^(double|Float64|DOUBLE)$/, `${rec} ${column}: a float column`);
            }
            assert.match(result.types!.step, /^(int64|Int64|BIGINT)$/, `${rec} step: an int64 column`);
          }
        });
      }

      for (const tool of ['pyarrow_read_table', 'polars', 'duckdb']) {
        test(`samples/*.parquet through ${tool}: every column and row RunReader gives`, () => {
          const result = reads[name].samples.recipes[tool];
          assertSameTable(result, oracles[name].samples, sampleKey, `${name} samples (${tool})`);
          for (const [column, first] of Object.entries(LATE_SAMPLE_COLUMNS)) {
            const rows = result.rows!;
            assert.ok(rows.filter((r) => (r.step as number) < first).every((r) => r[column] === null), `${column}: null before step ${first}`);
            const logged = EXPECTED[name].samples.filter((s) => flatten(s)[column] !== undefined).length;
            assert.equal(rows.filter((r) => r[column] !== null).length, logged, `${column}: a value in every sample that logged one`);
          }
        });
      }

      for (const tool of ['pyarrow', 'polars', 'duckdb']) {
        test(`spans through ${tool}: the last write per span_id is RunReader's span`, () => {
          const result = reads[name].spans.recipes[tool];
          assertSameTable(result, oracles[name].spans, spanKey, `${name} spans (${tool})`);
        });
      }

      test('spans have one fixed schema: every span file the same columns and types', () => {
        for (const [dir, list] of Object.entries(reads[name].files)) {
          if (!dir.endsWith('spans')) continue;
          for (const f of list) assert.deepEqual(f.types, list[0].types, `${dir}/${f.name} vs ${list[0].name}`);
        }
        const spans = oracles[name].spans;
        assert.ok(spans.some((s) => s.kind === 'epoch' && s.status === 'open'), 'the never-ended epoch span reads as open');
        const evals = spans.filter((s) => s.kind === 'evaluation');
        assert.equal(evals.length, name === 'multirank' ? 2 : 1, 'a keyed span recorded again is one span per rank');
      });

      test('naive reads never drop a column silently: each returns every column or raises', (t) => {
        const { steps, samples, spans } = reads[name];
        const oracle = oracles[name];
        const columnsOf = (rows: Row[]) => new Set(rows.flatMap((r) => Object.keys(r)));
        const outcomes: string[] = [];
        for (const [rec, read] of Object.entries(steps)) {
          const wanted = columnsOf(oracle.steps[rec]);
          for (const [n, result] of Object.entries(read.naive)) outcomes.push(`steps ${rec} ${assertNaive(n, result, wanted, oracle.steps[rec].length, `${name} steps ${rec}`)}`);
          for (const [n, result] of Object.entries(read.observed)) {
            const lost = result.error === undefined ? [...wanted].filter((c) => !result.columns!.includes(c)) : [];
            outcomes.push(`steps ${rec} ${n} (not a documented read): ${result.error !== undefined ? 'raised' : lost.length ? `DROPS ${lost.join(', ')}` : 'every column'}`);
          }
        }
        // per directory: the columns RunReader gives for that directory's rows
        const sampleColumns = new Set([...columnsOf(oracle.samples)].filter((c) => !c.startsWith('extra.') && !c.startsWith('reward_component.')));
        for (const [n, result] of Object.entries(samples.naive)) {
          const rank = n.startsWith('rank-') ? Number(n.slice(5, 8)) : 0;
          const wanted = new Set([...sampleColumns, ...columnsOf(oracle.samples.filter((s) => s.rank === rank))]);
          outcomes.push(`samples ${assertNaive(n, result, wanted, oracle.samples.filter((s) => s.rank === rank).length, `${name} samples`)}`);
        }
        const spanColumns = columnsOf(oracle.spans);
        for (const [n, result] of Object.entries(spans.naive)) outcomes.push(`spans ${assertNaive(n, result, spanColumns, null, `${name} spans`)}`);
        for (const o of outcomes) t.diagnostic(o);
      });
    });
  }
});
