/**
 * `RunReader.sampleTable`: the columnar bulk read of samples. Held to `samples()` row for
 * row, on every layout a run can be found in (live, crashed, closed, resumed, multi-rank,
 * with late columns), and for each filter; then its accessors and their refusals.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { RlprobeError, RunReader } from '../ts/index.js';
import type { SampleQuery, SampleTable } from '../ts/index.js';
import { freshTempDir } from './helpers/child.js';
import { LAYOUTS, buildLayouts } from './helpers/late-columns-layouts.js';
import type { BuiltLayouts } from './helpers/late-columns-layouts.js';
import { openRun } from './helpers/run-dir.js';

const QUERIES: SampleQuery[] = [
  {},
  { stepRange: [95, 185] },
  { steps: [40, 150, 230] },
  { columns: ['step', 'sample_id', 'reward_total'] },
  // columns that arrive late: null before, and only some rows carry them
  { columns: ['reward_component.format', 'reward_component.style', 'extra.judge_score', 'labels', 'completion_token_ids'] },
  { rank: 1 },
  { rewardMin: 0.5, truncated: false },
  { text: '✓', stepRange: [0, 60] },
  { sampleId: 'g0-r0-s40-1' },
  { stepRange: [10_000, 20_000] },
];

function tableRows(t: SampleTable): unknown[] {
  return [...t.records()];
}

describe('sampleTable holds what samples() yields', () => {
  let tmp: { dir: string; cleanup: () => void };
  let built: BuiltLayouts;

  before(async () => {
    tmp = freshTempDir('sample-table');
    built = await buildLayouts(tmp.dir);
  });

  after(async () => {
    await built?.stopLive();
    tmp?.cleanup();
  });

  for (const layout of LAYOUTS) {
    test(`${layout}: row for row, every filter`, () => {
      const reader = RunReader.open(built.dirs[layout]);
      let compared = 0;
      for (const q of QUERIES) {
        const records = [...reader.samples(q)];
        const table = reader.sampleTable(q);
        assert.equal(table.rows, records.length, `${JSON.stringify(q)}: rows`);
        assert.deepEqual(tableRows(table), records, `${JSON.stringify(q)}: cells`);
        compared += records.length;
      }
      assert.ok(compared > 250, `${layout}: ${compared} rows compared`);
    });
  }

  test('the columns asked for and rank; numbers as one Float64Array, texts decoded on demand', () => {
    const reader = RunReader.open(built.dirs.multirank);
    const t = reader.sampleTable({ columns: ['step', 'sample_id', 'reward_total', 'completion_token_ids'] });
    assert.deepEqual([...t.columnNames].sort(), ['completion_token_ids', 'rank', 'reward_total', 'sample_id', 'step']);
    const records = [...reader.samples({ columns: ['step', 'sample_id', 'reward_total', 'completion_token_ids'] })];
    const steps = t.numbers('step');
    assert.ok(steps instanceof Float64Array && steps.length === t.rows);
    const ranks = t.numbers('rank');
    assert.deepEqual(new Set(ranks), new Set([0, 1]));
    for (let r = 0; r < t.rows; r++) {
      assert.equal(steps[r], records[r].step);
      assert.equal(t.text('sample_id', r), records[r].sample_id);
      assert.deepEqual(t.list('completion_token_ids', r), records[r].completion_token_ids);
      const reward = records[r].reward_total;
      // a NaN reward is stored as null: no value, read as NaN
      assert.equal(t.isValid('reward_total', r), reward !== undefined, `row ${r}`);
      if (reward !== undefined) assert.equal(t.numbers('reward_total')[r], reward);
      else assert.ok(Number.isNaN(t.numbers('reward_total')[r]));
    }
    assert.deepEqual(t.texts('sample_id'), records.map((s) => s.sample_id));
  });

  test('distinct texts: by bytes for a few values, by strings past 32; the same set either way', () => {
    const reader = RunReader.open(built.dirs.multirank);
    const t = reader.sampleTable({ columns: ['sample_id', 'group_id', 'prompt_text'] });
    for (const name of ['sample_id', 'group_id', 'prompt_text']) {
      const all = t.texts(name).filter((v) => v !== undefined);
      const distinct = t.distinctTexts(name);
      assert.deepEqual(distinct, [...new Set(all)], `${name}: in the order first met`);
    }
    assert.ok(t.distinctTexts('sample_id').length > 32, 'past the byte comparisons');
    assert.ok(t.distinctTexts('group_id').length <= 32, 'within them');
    assert.deepEqual(reader.sampleTextValues('capture_reason'), ['all']);
    assert.deepEqual(reader.sampleTextValues('group_id', { rank: 1, stepRange: [0, 20] }), ['grp-0', 'grp-10', 'grp-20']);
    assert.deepEqual(reader.sampleTextValues('no_such_column'), []);
  });

  test('a samples() loop left early lets go of the files at once, not when the collector runs', async () => {
    const fds = () => readdirSync('/proc/self/fd').length;
    const reader = RunReader.open(built.dirs.closed);
    const before = fds();
    for (const _ of reader.samples({ batchRows: 1 })) break;
    const deadline = Date.now() + 5_000;
    while (fds() > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.ok(fds() <= before, `${fds() - before} files still open after the loop ended`);
  });

  test('refusals name the column and what it holds', () => {
    const t = RunReader.open(built.dirs.closed).sampleTable({ columns: ['step', 'sample_id'] });
    const refused = (f: () => unknown, pattern: RegExp) =>
      assert.throws(f, (e: unknown) => e instanceof RlprobeError && e.code === 'RLPROBE_INVALID_QUERY' && pattern.test(e.message));
    refused(() => t.numbers('prompt_text'), /no sample column "prompt_text".*columns: step, sample_id, rank/);
    refused(() => t.numbers('sample_id'), /"sample_id" holds text, not numbers/);
    refused(() => t.text('step', 0), /"step" holds int, not text/);
    refused(() => t.list('sample_id', 0), /"sample_id" holds text, not lists/);
    refused(() => t.row(t.rows), new RegExp(`no sample row ${t.rows} in this table`));
    refused(() => RunReader.open(built.dirs.closed).sampleTable({ stepRange: [5, 1] }), /stepRange: from 5 is after to 1/);
    assert.equal(t.isValid('nope', 0), false);
  });
});

describe('sampleTable on a run without samples', () => {
  test('an empty table, not an error', (t) => {
    const { dir, rec } = openRun(t, 'no-samples', { installHandlers: false });
    rec.logStep({ step: 0, loss: 1 });
    rec.close();
    const table = RunReader.open(dir).sampleTable();
    assert.equal(table.rows, 0);
    assert.deepEqual([...table.records()], []);
  });
});
