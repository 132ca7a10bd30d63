/**
 * `probe mcp` (issue 18) as a coding agent meets it: the real CLI spawned over stdio by the
 * SDK's StdioClientTransport and driven by the SDK's Client. Every tool is listed and
 * called on recorded runs (test/helpers/mcp-runs.ts), and every answer is checked against
 * its tool's output schema and the byte budget (test/helpers/mcp-client.ts); the answers
 * are compared with what the library reads from the same runs. Then the refusals: bad
 * arguments (the field and the value named), paths outside the roots (through `..` and a
 * symbolic link too), bad cursors; long answers paged and put back together; control
 * characters; the resources. A live and a killed run: test/mcp-live.test.ts.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { RunReader, diagnose, diffRuns, findingByCode } from '../ts/index.js';
import type { SpanTreeNode, StoredSampleRecord } from '../ts/index.js';
import { freshTempDir } from './helpers/child.js';
import { probe } from './helpers/in-process-cli.js';
import { DEFAULT_BUDGET, ok, outputValidators, refused, startMcp, textOf } from './helpers/mcp-client.js';
import type { McpSession } from './helpers/mcp-client.js';
import { COLLAPSE_ONSET, HOSTILE_MESSAGE, HOSTILE_NAME, LONG_SAMPLE_ID, SPAN_EVERY, STEPS, TEXT_SAMPLES, TRIAL_SAMPLE, TRIAL_STEP, recordMcpRuns } from './helpers/mcp-runs.js';
import type { McpRuns } from './helpers/mcp-runs.js';
import { PASS_NAME, makeRun } from './helpers/trial-fixtures.js';

const TOOLS = ['list_runs', 'run_info', 'diagnose', 'series', 'samples', 'sample', 'span_tree', 'trials', 'trial', 'diff'];
// oxlint-disable-next-line no-control-regex -- the test looks for raw control characters
const RAW_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

let tmp: { dir: string; cleanup: () => void };
let runs: McpRuns;
let mcp: McpSession;

before(async () => {
  tmp = freshTempDir('mcp');
  runs = await recordMcpRuns(tmp.dir);
  // as an agent's launcher starts it: in the project, the runs directory as root
  mcp = await startMcp(runs.root, ['--root', 'runs']);
});

after(async () => {
  await mcp?.close();
  tmp?.cleanup();
});

/** Every page of a paged tool, following next_cursor, each answer checked by the session. */
async function allPages(session: McpSession, tool: string, args: Record<string, unknown>): Promise<Array<Record<string, any>>> {
  const pages: Array<Record<string, any>> = [];
  let cursor: string | undefined;
  do {
    const page = ok(await session.call(tool, cursor === undefined ? args : { ...args, cursor }), `${tool} page ${pages.length + 1}`);
    pages.push(page);
    cursor = page.next_cursor ?? undefined;
    assert.ok(pages.length < 1000, `${tool}: no end of pages`);
  } while (cursor !== undefined);
  return pages;
}

/** A recorded number as the tools give it (NaN and ±Infinity as strings). */
const jsonNumber = (x: number | undefined) => (x === undefined ? undefined : Number.isFinite(x) ? x : String(x));

function dfs(node: SpanTreeNode, out: string[] = []): string[] {
  out.push(node.span.span_id);
  for (const c of node.children) dfs(c, out);
  return out;
}

describe('probe mcp: tools, schemas and answers', () => {
  test('lists the ten tools, each with a description, described arguments and an output schema; logs on stderr only', async () => {
    assert.deepEqual(mcp.tools.map((t) => t.name), TOOLS);
    for (const t of mcp.tools) {
      assert.ok((t.description ?? '').length > 80, `${t.name}: a description an agent can act on`);
      assert.ok(t.outputSchema, `${t.name}: output schema`);
      assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: read-only`);
      for (const [name, prop] of Object.entries(t.inputSchema.properties ?? {})) {
        assert.ok((prop as { description?: string }).description, `${t.name}.${name}: described`);
      }
    }
    assert.equal(mcp.client.getServerVersion()?.name, 'rlprobe');
    assert.match(mcp.client.getInstructions() ?? '', /list_runs/);
    assert.match(mcp.stderr(), /^probe mcp: serving runs under /m);
    assert.deepEqual(mcp.transportErrors, [], 'nothing but protocol messages on stdout');
  });

  test('the output schemas reject what does not match them (the check the answers pass can fail)', async () => {
    const validators = outputValidators(mcp.tools);
    const answer = ok(await mcp.call('diagnose', { run: 'runs/collapse' }), 'diagnose');
    assert.equal(validators.get('diagnose')!(answer).valid, true);
    const { findings_total: _, ...missing } = answer;
    assert.equal(validators.get('diagnose')!(missing).valid, false, 'a required field missing');
    assert.equal(validators.get('diagnose')!({ ...answer, points: 'many' }).valid, false, 'a field of the wrong type');
    assert.equal(validators.get('diagnose')!({ ...answer, extra_field: 1 }).valid, false, 'a field the schema does not have');
  });

  test('list_runs: the four runs under the root, their status and finding counts as the doctor gives them; the link out is named, not followed', async () => {
    const r = ok(await mcp.call('list_runs', {}), 'list_runs');
    assert.deepEqual(r.runs.map((x: any) => x.path), ['runs/baseline', 'runs/collapse', 'runs/texts', 'runs/trial']);
    assert.equal(r.runs_total, 4);
    assert.equal(r.next_cursor, null);
    for (const x of r.runs) {
      assert.equal(x.status.status, 'closed cleanly', x.path);
      const reader = RunReader.open(path.join(runs.root, x.path));
      const counts = { critical: 0, warn: 0, info: 0 };
      for (const f of diagnose(reader).findings) counts[f.severity]++;
      assert.deepEqual(x.findings, counts, `${x.path}: finding counts`);
      assert.equal(x.id, reader.manifest.run_id);
    }
    const collapse = r.runs.find((x: any) => x.path === 'runs/collapse');
    assert.equal(collapse.steps, STEPS);
    assert.equal(collapse.last_step, STEPS - 1);
    assert.ok(collapse.findings.critical >= 1);
    assert.ok(r.not_searched.some((n: any) => n.path === runs.escape && /symbolic link/.test(n.reason)), JSON.stringify(r.not_searched));
    assert.match(textOf(await mcp.call('list_runs', {})), /runs\/collapse .* closed cleanly .*findings: \d+ critical/);
  });

  test('run_info: columns, counts, span kinds and trials as the reader gives them', async () => {
    const reader = RunReader.open(runs.collapse);
    const r = ok(await mcp.call('run_info', { run: 'runs/collapse' }), 'run_info');
    assert.deepEqual(r.columns, reader.stepColumns().map((c) => c.name));
    assert.equal(r.counts.samples, reader.sampleFiles().reduce((a, f) => a + f.rows, 0));
    assert.deepEqual(r.span_kinds, reader.spanCounts());
    assert.deepEqual(r.trainer_config, { lr: 1e-6, group_size: 8 });
    assert.equal(r.clipped, false);
    const t = ok(await mcp.call('run_info', { run: 'runs/trial' }), 'run_info trial');
    assert.deepEqual(t.trials.map((x: any) => [x.step, x.trial_name, x.sample_id]), [[TRIAL_STEP, PASS_NAME, TRIAL_SAMPLE]]);
  });

  test('diagnose: the doctor\'s findings, with evidence samples that exist; since filters by onset', async () => {
    const truth = diagnose(RunReader.open(runs.collapse));
    const r = ok(await mcp.call('diagnose', { run: 'runs/collapse' }), 'diagnose');
    assert.deepEqual(r.findings.map((f: any) => f.code), truth.findings.map((f) => f.code));
    const f = r.findings.find((x: any) => x.code === 'TRUNCATION_COLLAPSE');
    assert.ok(f, 'TRUNCATION_COLLAPSE found');
    assert.ok(Math.abs(f.onset_step - COLLAPSE_ONSET) <= 10, `onset ${f.onset_step}`);
    assert.ok(f.samples.length > 0 && f.remedy.length > 0);
    for (const s of f.samples) {
      const read = ok(await mcp.call('sample', { run: 'runs/collapse', sample_id: s.sample_id }), 'evidence sample');
      assert.equal(read.sample.truncated, true, `evidence sample ${s.sample_id} is truncated`);
    }
    const later = ok(await mcp.call('diagnose', { run: 'runs/collapse', since: STEPS }), 'diagnose since');
    assert.equal(later.findings_total, 0);
    assert.match(textOf(await mcp.call('diagnose', { run: 'runs/collapse' })), /TRUNCATION_COLLAPSE\s+onset ~step \d+/);
  });

  test('series: downsampled to the point budget, a one-step spike kept, the summary over every row of the range', async () => {
    const steps = RunReader.open(runs.collapse).steps();
    const r = ok(await mcp.call('series', { run: 'runs/collapse', metrics: ['truncation_rate', 'completion_len_mean'], from_step: 100, to_step: 399, points: 40 }), 'series');
    assert.equal(r.rows, 300);
    for (const s of r.series) {
      assert.ok(s.x.length <= 40 && s.reduced, `${s.metric}: ${s.x.length} points`);
      const values = steps.filter((x) => x.step >= 100).map((x) => x[s.metric as 'truncation_rate'] as number);
      const max = Math.max(...values);
      assert.equal(s.summary.max, max);
      assert.equal(s.summary.min, Math.min(...values));
      assert.equal(s.summary.first, values[0]);
      assert.equal(s.summary.last, values.at(-1));
      assert.equal(s.summary.points, 300);
      assert.ok(Math.abs(s.summary.mean - values.reduce((a, b) => a + b, 0) / values.length) < 1e-9);
      assert.ok(s.y.some((y: number) => Math.abs(y - max) <= Math.abs(max) * 1e-5), `${s.metric}: the maximum is among the kept points`);
    }
    const refusedText = refused(await mcp.call('series', { run: 'runs/collapse', metrics: ['no_such_metric'] }), 'unknown metric');
    assert.match(refusedText, /metrics: no column "no_such_metric" in runs\/collapse; its metrics: .*truncation_rate/);
  });

  test('samples: the filters of probe samples, answered as the reader answers them', async () => {
    const reader = RunReader.open(runs.collapse);
    const finding = findingByCode(diagnose(reader, { samples: false }), 'TRUNCATION_COLLAPSE');
    const around = ok(await mcp.call('samples', { run: 'runs/collapse', around_finding: 'TRUNCATION_COLLAPSE', truncated: true, text_chars: 40 }), 'samples');
    const truth = [...reader.samples({ aroundFinding: finding, truncated: true })];
    assert.ok(around.samples.length > 0);
    assert.deepEqual(around.samples.map((s: any) => s.sample_id), truth.slice(0, around.samples.length).map((s) => s.sample_id));
    for (const s of around.samples) assert.ok(s.step >= finding.onset_step && s.step <= finding.last_step && s.truncated === true);
    const filtered = ok(await mcp.call('samples', { run: 'runs/collapse', step: 260, reward_min: 0.5, text: 'COMPLETION 260' }), 'samples filtered');
    assert.deepEqual(filtered.samples.map((s: any) => s.sample_id), [...reader.samples({ step: 260, rewardMin: 0.5, text: 'COMPLETION 260' })].map((s) => s.sample_id));
    const unknownReason = refused(await mcp.call('samples', { run: 'runs/collapse', reason: 'my_reason' }), 'unknown reason');
    assert.match(unknownReason, /reason: no sample of runs\/collapse has reason "my_reason"; expected top_k, bottom_k, random, all/);
    assert.match(refused(await mcp.call('samples', { run: 'runs/collapse', around_finding: 'NOPE' }), 'unknown finding'), /no NOPE finding in this run \(its findings: .*TRUNCATION_COLLAPSE/);
  });

  test('span_tree: a sample\'s rollout with its turns\' messages and its tool calls\' arguments and results; depth and breadth cuts counted', async () => {
    const r = ok(await mcp.call('span_tree', { run: 'runs/collapse', sample_id: `s${SPAN_EVERY}-0` }), 'span_tree');
    assert.deepEqual(r.nodes.map((n: any) => `${n.depth}:${n.kind}`), ['0:rollout', '1:turn', '2:tool_call', '1:turn', '2:tool_call']);
    assert.equal(r.nodes[1].attributes.message, `solve task ${SPAN_EVERY}/0`);
    assert.equal(r.nodes[2].attributes.result, `contents of src/${SPAN_EVERY}.py`);
    assert.equal(r.nodes[2].attributes.arguments, JSON.stringify({ path: `src/${SPAN_EVERY}.py` }));
    // a turn's own view lists its ancestors
    const turn = ok(await mcp.call('span_tree', { run: 'runs/collapse', span_id: r.nodes[1].span_id }), 'span_tree of a turn');
    assert.deepEqual(turn.ancestors.map((a: any) => a.kind), ['rollout']);
    const cut = ok(await mcp.call('span_tree', { run: 'runs/collapse', sample_id: `s${SPAN_EVERY}-0`, depth: 1, breadth: 1 }), 'span_tree cut');
    assert.deepEqual(cut.nodes.map((n: any) => n.kind), ['rollout', 'turn']);
    assert.equal(cut.nodes[0].children_omitted, 1);
    assert.equal(cut.nodes[1].below_omitted, 1);
    assert.match(textOf(await mcp.call('span_tree', { run: 'runs/collapse', sample_id: `s${SPAN_EVERY}-0`, depth: 1, breadth: 1 })), /… 1 more children .*\n[\s\S]*… 1 more spans below/);
    assert.match(refused(await mcp.call('span_tree', { run: 'runs/collapse' }), 'no target'), /span_id, sample_id: give exactly one \(got neither\)/);
    assert.match(refused(await mcp.call('span_tree', { run: 'runs/collapse', span_id: 'feedfacefeedface' }), 'no span'), /span_id: no span "feedfacefeedface"/);
  });

  test('trials and trial: the captured Harbor trial with rewards, ledger and rollout span; span_tree shows its transcript', async () => {
    const reader = RunReader.open(runs.trial);
    const [truth] = reader.trials();
    const list = ok(await mcp.call('trials', { run: 'runs/trial', step: TRIAL_STEP }), 'trials');
    assert.equal(list.trials_total, 1);
    const t = list.trials[0];
    assert.deepEqual([t.capture_key, t.step, t.sample_id, t.outcome], [truth.capture_key, TRIAL_STEP, TRIAL_SAMPLE, 'finished']);
    assert.deepEqual(t.rewards, { reward: 1, tests_passed: 0.75 });
    assert.equal(t.rollout_span_id, truth.spans.rollout_span_id);
    assert.equal(t.ledger.collected, truth.ledger.counts.collected);
    assert.equal(ok(await mcp.call('trials', { run: 'runs/trial', sample_id: 'other' }), 'trials other').trials_total, 0);
    const one = ok(await mcp.call('trial', { run: 'runs/trial', capture: PASS_NAME }), 'trial');
    assert.equal(one.trial.capture_key, truth.capture_key);
    assert.equal(one.files_total, truth.ledger.total);
    assert.equal(one.model, 'claude-sonnet-4-5');
    assert.match(refused(await mcp.call('trial', { run: 'runs/trial', capture: 'nope' }), 'no capture'), /no captured trial "nope"/);
    // the transcript, every span of it, paged
    const pages = await allPages(mcp, 'span_tree', { run: 'runs/trial', span_id: t.rollout_span_id, depth: 50, breadth: 1000, text_chars: 4000 });
    const nodes = pages.flatMap((p) => p.nodes);
    assert.deepEqual(nodes.map((n: any) => n.span_id), dfs(reader.spanTree(t.rollout_span_id)!));
    const turns = nodes.filter((n: any) => n.kind === 'turn');
    const calls = nodes.filter((n: any) => n.kind === 'tool_call');
    assert.equal(turns.length, truth.trajectories[0].turns);
    assert.equal(calls.length, truth.trajectories[0].tool_calls);
    assert.ok(turns.some((n: any) => typeof n.attributes.message === 'string' && n.attributes.message.length > 0));
    assert.ok(calls.every((n: any) => typeof n.attributes.arguments === 'string' && typeof n.attributes.function_name === 'string'));
    assert.ok(calls.some((n: any) => typeof n.attributes.result === 'string'));
  });

  test('diff: the lead metric and first divergence, the findings in one run only, as diffRuns gives them', async () => {
    const truth = await diffRuns(RunReader.open(runs.baseline), RunReader.open(runs.collapse));
    const r = ok(await mcp.call('diff', { run_a: 'runs/baseline', run_b: 'runs/collapse' }), 'diff');
    assert.deepEqual(r.lead, truth.lead);
    assert.ok(r.lead && r.lead.step >= COLLAPSE_ONSET - 10, JSON.stringify(r.lead));
    assert.deepEqual(r.findings_only_in_b.map((f: any) => f.code), truth.findings.only_in_b.map((f) => f.code));
    assert.deepEqual(r.findings_only_in_a, []);
    assert.deepEqual(r.metrics.map((m: any) => m.metric), truth.metrics.map((m) => m.metric));
    assert.equal(r.metrics[0].divergence.step, truth.metrics[0].divergence!.step);
  });
});

describe('probe mcp: refusals', () => {
  test('invalid arguments: a tool error naming the field and the value', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['diagnose', { run: 'runs/collapse', since: -3 }, /expected an integer ≥ 0 \(got -3\) at since/],
      ['diagnose', { run: 'runs/collapse', since: 'ten' }, /expected an integer ≥ 0 \(got "ten"\) at since/],
      ['samples', { run: 'runs/collapse', text_chars: 99_999 }, /expected an integer in 0\.\.20000 \(got 99999\) at text_chars/],
      ['samples', { run: 'runs/collapse', truncated: 'yes' }, /expected true or false \(got "yes"\) at truncated/],
      ['series', { run: 'runs/collapse', metrics: 'loss' }, /expected a list of metric names \(got "loss"\) at metrics/],
      ['series', { run: 'runs/collapse', metrics: ['loss'], points: 5 }, /expected an integer in 10\.\.500 \(got 5\) at points/],
      ['run_info', {}, /expected a run directory path \(got nothing\) at run/],
      ['run_info', { run: 'runs/collapse', bogus: 1 }, /Unrecognized key: "bogus"/],
      ['diff', { run_a: 'runs/baseline' }, /expected a run directory path \(got nothing\) at run_b/],
    ];
    for (const [tool, args, expected] of cases) {
      const text = refused(await mcp.call(tool, args), `${tool} ${JSON.stringify(args)}`);
      assert.match(text, expected, `${tool} ${JSON.stringify(args)}: ${text}`);
    }
    assert.match(refused(await mcp.call('series', { run: 'runs/collapse', metrics: ['loss'], from_step: 9, to_step: 3 }), 'range'), /from_step 9 is after to_step 3/);
  });

  test('paths outside the roots are refused by every tool: absolute, through .., through a symbolic link; the error names the path and the roots', async () => {
    const rootsText = path.join(runs.root, 'runs');
    const outside: Array<[string, RegExp]> = [
      [runs.outside, /is outside the roots this server may read/],
      ['runs/../../outside/run', /is outside the roots this server may read/],
      ['..', /is outside the roots this server may read/],
      ['runs/escape', /leads outside the roots this server may read through a symbolic link \(it is .*outside\/run/],
    ];
    for (const [p, expected] of outside) {
      for (const tool of ['run_info', 'diagnose', 'series', 'samples', 'sample', 'span_tree', 'trials', 'trial']) {
        const args: Record<string, unknown> = { run: p, metrics: ['loss'], sample_id: 'x', capture: 'x' };
        if (tool !== 'series') delete args.metrics;
        if (tool !== 'sample' && tool !== 'span_tree') delete args.sample_id;
        if (tool !== 'trial') delete args.capture;
        const text = refused(await mcp.call(tool, args), `${tool} on ${p}`);
        assert.match(text, expected, `${tool} on ${p}`);
        assert.ok(text.includes(JSON.stringify(p)) && text.includes(rootsText), `${tool} on ${p}: names the path and the roots: ${text}`);
      }
    }
    assert.match(refused(await mcp.call('diff', { run_a: 'runs/baseline', run_b: runs.outside }), 'diff'), /^run_b ".*outside\/run" is outside the roots/);
    assert.match(refused(await mcp.call('run_info', { run: 'runs/missing' }), 'missing'), /run "runs\/missing": no such file or directory/);
    assert.match(refused(await mcp.call('run_info', { run: 'runs' }), 'not a run'), /not a run directory \(no manifest\.json\)/);
  });

  test('cursors: one not made by the server, one of another tool, one replayed with other arguments are refused, saying which', async () => {
    const first = ok(await mcp.call('samples', { run: 'runs/texts', text_chars: 2000 }), 'samples page 1');
    assert.ok(first.next_cursor);
    const diagnoseCursor = ok(await mcp.call('span_tree', { run: 'runs/trial', span_id: ok(await mcp.call('trials', { run: 'runs/trial' }), 'trials').trials[0].rollout_span_id, breadth: 1000, depth: 50, text_chars: 4000 }), 'span_tree').next_cursor;
    assert.ok(diagnoseCursor, 'the full transcript takes more than one page');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ run: 'runs/texts', text_chars: 2000, cursor: 'not a cursor!' }, /invalid cursor "not a cursor!": not a cursor this server returned/],
      [{ run: 'runs/texts', text_chars: 2000, cursor: Buffer.from('{"v":1}').toString('base64url') }, /not a cursor this server returned/],
      [{ run: 'runs/texts', text_chars: 2000, cursor: diagnoseCursor }, /it continues span_tree, not samples/],
      [{ run: 'runs/texts', text_chars: 300, cursor: first.next_cursor }, /it was returned for other arguments/],
    ];
    for (const [args, expected] of cases) assert.match(refused(await mcp.call('samples', args), JSON.stringify(args)), expected);
  });

  test('bad command lines exit 64 before serving: a --root that is not a directory, a --max-bytes too small', async () => {
    const missing = await probe(['mcp', '--root', path.join(tmp.dir, 'nope')]);
    assert.equal(missing.code, 64, missing.stderr);
    assert.match(missing.stderr, /invalid --root ".*nope": not a directory/);
    const small = await probe(['mcp', '--max-bytes', '100']);
    assert.equal(small.code, 64, small.stderr);
    assert.match(small.stderr, /invalid --max-bytes "100": expected an integer ≥ 4096/);
  });
});

describe('probe mcp: bounded answers', () => {
  test('samples page by page put back together are every sample the reader reads, texts whole', async () => {
    const pages = await allPages(mcp, 'samples', { run: 'runs/texts', text_chars: 20_000 });
    assert.ok(pages.length >= 5, `${pages.length} pages`);
    const got = pages.flatMap((p) => p.samples);
    const truth: StoredSampleRecord[] = [...RunReader.open(runs.texts).samples()];
    assert.equal(truth.length, TEXT_SAMPLES + 1);
    // the long sample is too long for a page at text_chars: it comes cut shorter, marked (sample gives it whole, below)
    assert.equal(got.length, truth.length);
    for (const [i, s] of got.entries()) {
      const t = truth[i];
      assert.equal(s.sample_id, t.sample_id);
      assert.equal(s.step, t.step);
      assert.equal(s.reward_total, jsonNumber(t.reward_total));
      assert.equal(s.truncated, t.truncated);
      if (t.sample_id === LONG_SAMPLE_ID) {
        const cut = /… \[cut at (\d+) of (\d+) chars\]$/.exec(s.completion_text);
        assert.ok(cut && Number(cut[1]) < 20_000 && Number(cut[2]) === t.completion_text!.length, s.completion_text.slice(-60));
        assert.ok(t.completion_text!.startsWith(s.completion_text.slice(0, Number(cut[1]))));
        continue;
      }
      assert.equal(s.prompt_text, t.prompt_text, `${t.sample_id}: prompt whole`);
      assert.equal(s.completion_text, t.completion_text, `${t.sample_id}: completion whole`);
    }
    assert.ok(got.some((s: any) => s.reward_total === 'NaN'), 'a NaN reward as "NaN"');
    // offsets follow one another
    let at = 0;
    for (const p of pages) {
      assert.equal(p.offset, at);
      at += p.samples.length;
    }
  });

  test('sample: a 100,000-character completion and 3,000 token ids come whole, piece by piece', async () => {
    const [truth] = [...RunReader.open(runs.texts).samples({ sampleId: LONG_SAMPLE_ID })];
    const pages = await allPages(mcp, 'sample', { run: 'runs/texts', sample_id: LONG_SAMPLE_ID });
    assert.ok(pages.length >= 4, `${pages.length} pages`);
    const join = (key: 'prompt' | 'completion') => {
      let text = '';
      for (const p of pages) {
        if (p[key] === null) continue;
        assert.equal(p[key].offset, text.length, `${key}: pieces follow one another`);
        text += p[key].text;
      }
      return text;
    };
    assert.equal(join('prompt'), truth.prompt_text);
    assert.equal(join('completion'), truth.completion_text);
    assert.deepEqual(pages.flatMap((p) => p.completion_token_ids?.ids ?? []), truth.completion_token_ids);
    for (const p of pages) assert.equal(p.sample.sample_id, LONG_SAMPLE_ID);
  });

  test('a small budget (--max-bytes 4096): list_runs and diagnose page, and the pages hold everything; run_info and trial are cut to fit', async () => {
    const many = path.join(tmp.dir, 'many');
    const names = Array.from({ length: 12 }, (_, i) => `run-${String(i).padStart(2, '0')}`);
    for (const name of names) await makeRun(path.join(many, name), name);
    const small = await startMcp(runs.root, ['--root', 'runs', '--root', many, '--max-bytes', '4096'], 4096);
    try {
      const listed = await allPages(small, 'list_runs', {});
      assert.ok(listed.length > 1, `${listed.length} pages`);
      assert.deepEqual(
        listed.flatMap((p) => p.runs.map((r: any) => r.path)),
        ['runs/baseline', 'runs/collapse', 'runs/texts', 'runs/trial', ...names.map((n) => path.join(many, n))].sort(),
      );
      const findings = await allPages(small, 'diagnose', { run: 'runs/collapse' });
      assert.ok(findings.length > 1, `${findings.length} pages`);
      assert.deepEqual(findings.flatMap((p) => p.findings.map((f: any) => f.code)), diagnose(RunReader.open(runs.collapse)).findings.map((f) => f.code));
      ok(await small.call('run_info', { run: 'runs/collapse' }), 'run_info cut to fit');
      const trial = await small.call('trial', { run: 'runs/trial', capture: PASS_NAME });
      assert.equal(ok(trial, 'trial cut to fit').clipped, true);
      assert.match(textOf(trial), /more entries not listed here/);
      const tree = await allPages(small, 'span_tree', { run: 'runs/trial', span_id: ok(await small.call('trials', { run: 'runs/trial' }), 'trials').trials[0].rollout_span_id, depth: 50, breadth: 1000, text_chars: 4000 });
      assert.equal(tree.flatMap((p) => p.nodes).length, 25);
    } finally {
      await small.close();
    }
  });
});

describe('probe mcp: text from recordings', () => {
  test('control characters are escaped in the text an agent reads and kept in the structured content', async () => {
    const tree = await mcp.call('span_tree', { run: 'runs/collapse', sample_id: `s${SPAN_EVERY}-0` });
    const text = textOf(tree);
    assert.ok(!RAW_CONTROLS.test(text), `no raw control character in: ${JSON.stringify(text)}`);
    assert.ok(text.includes('tool_call "bash\\u001b]0;pwned\\u0007\\nfake line"'), text);
    assert.ok(text.includes('clear \\u001b[2J the screen'), text);
    const nodes = (tree.structuredContent as any).nodes;
    assert.ok(nodes.some((n: any) => n.name === HOSTILE_NAME));
    assert.ok(nodes.some((n: any) => n.attributes.message === HOSTILE_MESSAGE));
    const samples = await mcp.call('samples', { run: 'runs/texts', step: 0 });
    assert.ok(!RAW_CONTROLS.test(textOf(samples)), 'sample texts escaped');
    assert.match(textOf(samples), /beta\\u001b\[31m/);
  });
});

describe('probe mcp: resources', () => {
  test('each run is listed as its manifest, Markdown report and findings; templates for trials and spans; the link out refused', async () => {
    const { resources } = await mcp.client.listResources();
    const uris = resources.map((r) => r.uri);
    for (const run of ['baseline', 'collapse', 'texts', 'trial']) {
      for (const leaf of ['manifest.json', 'report.md', 'findings.json']) assert.ok(uris.includes(`rlprobe://run/runs/${run}/${leaf}`), `${run} ${leaf}`);
    }
    assert.equal(uris.length, 12);
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).slice(3), ['rlprobe://run/{+run}/trials/{capture}', 'rlprobe://run/{+run}/spans/{span_id}']);
    const read = async (uri: string) => {
      const r = await mcp.client.readResource({ uri });
      const text = (r.contents[0] as { text: string }).text;
      assert.ok(Buffer.byteLength(text) <= DEFAULT_BUDGET, `${uri}: ${Buffer.byteLength(text)} bytes`);
      return text;
    };
    assert.deepEqual(JSON.parse(await read('rlprobe://run/runs/collapse/manifest.json')).run_id, 'collapse');
    assert.match(await read('rlprobe://run/runs/collapse/report.md'), /^# rlprobe report: collapse[\s\S]*TRUNCATION_COLLAPSE/);
    assert.ok(JSON.parse(await read('rlprobe://run/runs/collapse/findings.json')).findings.some((f: any) => f.code === 'TRUNCATION_COLLAPSE'));
    const trial = JSON.parse(await read(`rlprobe://run/runs/trial/trials/${PASS_NAME}`));
    assert.equal(trial.trial.sample_id, TRIAL_SAMPLE);
    const span = JSON.parse(await read(`rlprobe://run/runs/trial/spans/${trial.trial.rollout_span_id}`));
    assert.equal(span.nodes[0].kind, 'rollout');
    await assert.rejects(mcp.client.readResource({ uri: 'rlprobe://run/runs/escape/manifest.json' }), /through a symbolic link/);
  });
});

describe('probe mcp: the session as a whole', () => {
  test('after every call above: nothing but protocol messages on stdout, and only the server\'s own lines on stderr', () => {
    // a line on stdout that is not a protocol message reaches the client as a transport error
    assert.deepEqual(mcp.transportErrors.map((e) => e.message), []);
    const lines = mcp.stderr().split('\n').filter((l) => l !== '');
    assert.ok(lines.length > 20, `${lines.length} log lines`);
    for (const l of lines) assert.match(l, /^probe mcp: /, `a stderr line of the server's own: ${l}`);
    assert.doesNotMatch(mcp.stderr(), /internal error/);
  });
});
