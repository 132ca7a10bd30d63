/**
 * Harbor trials captured into a run (`captureTrial`, `stageTrial` / `deliverStaged`,
 * `expandCapture`, the reader's `trials` / `trial` / `trialSpanTree`, `probe trial …`): the
 * ledger of every file (role, status, size, sha256, reason, declared_by), what the trial says
 * about itself (ids, rewards and their fallbacks, exceptions, timings), the spans (rollout,
 * trial steps, turns, tool calls) and their deterministic ids, refusing everything that could
 * lead out of the trial (symbolic links, `..` and absolute declarations, hidden entries),
 * recapture, resumable delivery after an outage part way, and the shared Harbor fixtures.
 *
 * The ATIF parser itself is tested in test/atif.test.ts: here only the capture-level wiring.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';

import { Recorder, RunReader, captureTrial, compactRun, deliverStaged, expandCapture, registerTrajectoryParser, stageTrial, stagingStatus } from '../ts/index.js';
import type { CaptureManifest, LedgerEntry, SpanRecord, StagedCapture, TrajectoryParser, TrialCapture } from '../ts/index.js';
import { unregisterTrajectoryParser } from '../ts/trials/trajectory/plan.js';
import { rejectsCode, throwsCode } from './helpers/errors.js';
import { INDEX_TS, cleanupTempDirs, runScript, tempDir } from './helpers/fixtures.js';
import {
  CLAUDE_CODE,
  CONTINUATION,
  FAST,
  PASS_ID,
  PASS_NAME,
  SUBAGENTS,
  TIMEOUT,
  atifCounts,
  buildPassingTrial,
  copyFixtureAgent,
  expectedKey,
  expectedSpanId,
  filesContaining,
  listAll,
  listFiles,
  makeRun,
  passResult,
  probe,
  readJson,
  sha256,
  smallAtif,
  writeTree,
} from './helpers/trial-fixtures.js';
import type { CliResult } from './helpers/trial-fixtures.js';

after(cleanupTempDirs);

// ---- helpers

/** A fresh root with a closed run `<root>/run` (run id `runId`). */
async function setup(label: string, runId = `trials-${label}`): Promise<{ root: string; run: string; runId: string }> {
  const root = tempDir(`rlprobe-trials-${label}-`);
  const run = await makeRun(path.join(root, 'run'), runId);
  return { root, run, runId };
}

function entryOf(m: { ledger: { entries: LedgerEntry[] } }, p: string): LedgerEntry {
  const found = m.ledger.entries.filter((e) => e.path === p);
  assert.equal(found.length, 1, `exactly one ledger entry for ${p}; entries: ${m.ledger.entries.map((e) => `${e.path}=${e.status}`).join(', ')}`);
  return found[0];
}

function noEntry(m: { ledger: { entries: LedgerEntry[] } }, p: string | RegExp): void {
  const hits = m.ledger.entries.filter((e) => (typeof p === 'string' ? e.path === p : p.test(e.path)));
  assert.deepEqual(hits.map((e) => e.path), [], `no ledger entry for ${p}`);
}

/** Every span of one capture (its tree, by root id). */
function captureSpans(run: string, m: CaptureManifest): SpanRecord[] {
  return RunReader.open(run).spans({ root: m.spans.rollout_span_id });
}

function ofKind(spans: SpanRecord[], kind: string): SpanRecord[] {
  return spans.filter((s) => s.kind === kind);
}

function rolloutOf(spans: SpanRecord[]): SpanRecord {
  const r = ofKind(spans, 'rollout');
  assert.equal(r.length, 1, `one rollout span (got ${r.length})`);
  return r[0];
}

function assertCli(r: CliResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

function assertUniqueIds(spans: SpanRecord[]): void {
  assert.equal(new Set(spans.map((s) => s.span_id)).size, spans.length, 'every span id once');
}

const sortIds = (spans: SpanRecord[]) => spans.map((s) => s.span_id).sort();

// =====================================================================================

describe('a passing trial', () => {
  it('ledger: every file collected with its role, size, sha256 of the source bytes, declared_by', async () => {
    const { root, run } = await setup('pass');
    const trial = path.join(root, PASS_NAME);
    const expected = buildPassingTrial(trial);
    const m = await captureTrial(trial, { run, step: 12, sampleId: 's-17', groupId: 'g-4', context: { rollout_id: 'r-9', session_id: 'sess-1' } });

    assert.equal(m.kind, 'harbor_trial');
    assert.equal(m.capture_key, expectedKey(PASS_NAME, `id:${PASS_ID}`));
    assert.deepEqual(
      m.ledger.entries.map((e) => [e.path, e.role, e.status, e.declared_by]),
      [...expected].map(([p, x]) => [p, x.role, 'collected', x.declared_by]),
    );
    let bytes = 0;
    for (const e of m.ledger.entries) {
      const src = readFileSync(path.join(trial, ...e.path.split('/')));
      assert.equal(e.size, src.length, `${e.path} size`);
      assert.equal(e.sha256, sha256(src), `${e.path} sha256`);
      assert.equal(e.reason, null, `${e.path} reason`);
      const copy = readFileSync(path.join(run, 'trials', m.capture_key, 'files', ...e.path.split('/')));
      assert.ok(copy.equals(src), `${e.path}: stored copy byte-identical`);
      bytes += src.length;
    }
    assert.deepEqual(m.ledger.counts, { collected: expected.size, missing: 0, skipped: 0, unknown: 0, empty: 0 });
    assert.equal(m.ledger.bytes, bytes);
    // the capture directory holds the manifest, the copies and the span file, nothing else
    assert.deepEqual(readdirSync(path.join(run, 'trials', m.capture_key)).sort(), ['capture.json', 'files', 'spans.parquet']);
    assert.deepEqual(listFiles(path.join(run, 'trials', m.capture_key, 'files')), [...expected.keys()]);
    // capture.json on disk is the manifest returned
    assert.deepEqual(readJson(path.join(run, 'trials', m.capture_key, 'capture.json')), JSON.parse(JSON.stringify(m)));
  });

  it('trial facts: ids, names, agent and model, rewards, tokens, phase timings, source and context', async () => {
    const { root, run } = await setup('pass-info');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const context = { rollout_id: 'r-9', session_id: 'sess-1' };
    const m = await captureTrial(trial, { run, step: 12, sampleId: 's-17', groupId: 'g-4', context });
    const t = m.trial;
    assert.equal(t.id, PASS_ID);
    assert.equal(t.name, PASS_NAME);
    assert.equal(t.task_name, 'hello-world');
    assert.deepEqual(t.task_id, { path: 'tasks/hello-world' });
    assert.equal(t.trial_uri, `file:///jobs/j1/${PASS_NAME}`);
    assert.equal(t.agent, 'claude-code');
    assert.equal(t.agent_version, '2.0.1');
    assert.equal(t.model, 'claude-sonnet-4-5');
    assert.equal(t.model_provider, 'anthropic');
    assert.deepEqual(t.rewards, { reward: 1, tests_passed: 0.75 });
    assert.equal(t.reward_source, 'verifier_result.rewards');
    assert.equal(t.exception, null);
    assert.equal(t.finished, true);
    assert.deepEqual(t.tokens, { input: 485630, cached: 480000, output: 2350, cost_usd: 0.4125 });
    assert.equal(t.started_at, '2025-11-01T10:00:00.000000');
    assert.equal(t.finished_at, '2025-11-01T10:07:30.500000');
    assert.deepEqual(Object.keys(t.timings).sort(), ['agent_execution', 'agent_setup', 'environment_setup', 'verifier']);
    assert.equal(t.timings.agent_execution.seconds, 300);
    assert.equal(t.timings.environment_setup.seconds, 20);
    assert.equal(t.timings.verifier.seconds, 90);
    assert.deepEqual(t.steps, []);

    assert.equal(m.step, 12);
    assert.equal(m.sample_id, 's-17');
    assert.equal(m.group_id, 'g-4');
    assert.deepEqual(m.labels, { sample: 's-17', group: 'g-4' });
    assert.deepEqual(m.source.context, context);
    assert.equal(m.source.trial_dir, path.resolve(trial));
    assert.equal(m.source.staged_at, null);
    assert.ok(!Number.isNaN(Date.parse(m.captured_at)));

    const [tj] = m.trajectories;
    assert.equal(m.trajectories.length, 1);
    const doc = readJson(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'));
    const counts = atifCounts(doc);
    assert.equal(tj.path, 'agent/trajectory.json');
    assert.equal(tj.status, 'expanded');
    assert.equal(tj.format, 'ATIF-v1.7');
    assert.equal(tj.parser, 'atif');
    assert.equal(tj.trial_step, null);
    assert.equal(tj.turns, counts.turns);
    assert.equal(tj.tool_calls, counts.toolCalls);
    assert.equal(tj.session_id, doc.session_id);
    assert.equal(tj.prompt_tokens, doc.final_metrics.total_prompt_tokens);
  });

  it('spans: a rollout at the step with the labels, one turn per step and one tool_call per call (counted from the JSON)', async () => {
    const { root, run, runId } = await setup('pass-spans');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const context = { rollout_id: 'r-9' };
    const m = await captureTrial(trial, { run, step: 12, sampleId: 's-17', groupId: 'g-4', context });
    const doc = readJson(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'));
    const counts = atifCounts(doc);
    assert.equal(counts.turns, 12);
    assert.ok(counts.toolCalls > 0);

    const spans = captureSpans(run, m);
    assertUniqueIds(spans);
    assert.equal(spans.length, 1 + counts.turns + counts.toolCalls);
    assert.equal(m.spans.count, spans.length);
    assert.deepEqual(m.spans.by_kind, { rollout: 1, turn: counts.turns, tool_call: counts.toolCalls });

    const rollout = rolloutOf(spans);
    assert.equal(rollout.span_id, expectedSpanId(runId, m.capture_key, 'rollout'));
    assert.equal(m.spans.rollout_span_id, rollout.span_id);
    assert.equal(rollout.parent_id, null);
    assert.equal(rollout.name, PASS_NAME);
    assert.equal(rollout.step, 12);
    assert.equal(rollout.status, 'ok');
    assert.equal(rollout.error, null);
    assert.equal(rollout.sample_id, 's-17');
    assert.equal(rollout.group_id, 'g-4');
    assert.deepEqual({ ...rollout.labels }, { sample: 's-17', group: 'g-4' });
    assert.equal(rollout.key, `trial/${m.capture_key}`);
    // naive result times are read as UTC
    assert.equal(rollout.start_time, Date.parse('2025-11-01T10:00:00.000Z') / 1000);
    assert.equal(rollout.end_time, Date.parse('2025-11-01T10:07:30.500Z') / 1000);
    const a = rollout.attributes;
    assert.equal(a.source, 'harbor_trial');
    assert.equal(a.capture_key, m.capture_key);
    assert.equal(a.trial_id, PASS_ID);
    assert.equal(a.trial_name, PASS_NAME);
    assert.equal(a.task_name, 'hello-world');
    assert.equal(a.agent, 'claude-code');
    assert.equal(a.model, 'claude-sonnet-4-5');
    assert.equal(a.reward, 1);
    assert.deepEqual(a.rewards, { reward: 1, tests_passed: 0.75 });
    assert.equal(a.finished, true);
    assert.deepEqual(a.context, context);

    const turns = ofKind(spans, 'turn');
    const calls = ofKind(spans, 'tool_call');
    assert.equal(turns.length, counts.turns);
    assert.equal(calls.length, counts.toolCalls);
    const turnIds = new Set(turns.map((s) => s.span_id));
    for (const s of turns) assert.equal(s.parent_id, rollout.span_id, `${s.name}: under the rollout`);
    for (const s of calls) assert.ok(turnIds.has(s.parent_id as string), `${s.name}: under a turn`);
    for (const s of spans) {
      assert.equal(s.step, 12, `${s.kind} ${s.name}: step`);
      assert.equal(s.root_id, rollout.span_id);
      assert.deepEqual({ ...s.labels }, { sample: 's-17', group: 'g-4' });
    }
    // turn ids are keyed ids of <trajectory file>#turn:<step_id>
    assert.deepEqual(
      turns.map((s) => s.span_id).sort(),
      (doc.steps as { step_id: number }[]).map((st) => expectedSpanId(runId, m.capture_key, `agent/trajectory.json#turn:${st.step_id}`)).sort(),
    );
    // every call of the JSON is a tool_call span named by its function, under its own turn
    for (const st of doc.steps as { step_id: number; tool_calls?: { tool_call_id: string; function_name: string }[] }[]) {
      for (const c of st.tool_calls ?? []) {
        const id = expectedSpanId(runId, m.capture_key, `agent/trajectory.json#turn:${st.step_id}/tool:${c.tool_call_id}`);
        const span = calls.find((s) => s.span_id === id);
        assert.ok(span, `a tool_call span for ${c.tool_call_id}`);
        assert.equal(span.name, c.function_name);
        assert.equal(span.parent_id, expectedSpanId(runId, m.capture_key, `agent/trajectory.json#turn:${st.step_id}`));
      }
    }
    // the tree read back through the reader
    const reader = RunReader.open(run);
    const tree = reader.trialSpanTree(reader.trial(m.capture_key));
    assert.ok(tree);
    assert.equal(tree.span.span_id, rollout.span_id);
    assert.equal(tree.children.length, counts.turns);
  });
});

// =====================================================================================

describe('a failed trial', () => {
  const TRACEBACK = 'Traceback (most recent call last):\n  File "harbor/trial.py", line 301, in run\n    await self._execute_agent()\nAgentTimeoutError: Agent execution timed out after 900.0 seconds\n';

  it('exception_info and exception.txt: rollout status error with "Type: message", manifest fields, reward unknown', async () => {
    const { root, run } = await setup('failed');
    const trial = path.join(root, 'slow-task__Xy12345');
    const occurred = '2025-11-01T11:15:00.123456';
    writeTree(trial, {
      'result.json': {
        id: 'f00dfeed-0000-4000-8000-000000000001',
        trial_name: 'slow-task__Xy12345',
        task_name: 'slow-task',
        agent_info: { name: 'terminus-2', version: '0.22.0', model_info: { name: 'gpt-5', provider: 'openai' } },
        verifier_result: null,
        exception_info: { exception_type: 'AgentTimeoutError', exception_message: 'Agent execution timed out after 900.0 seconds', exception_traceback: TRACEBACK, occurred_at: occurred },
        started_at: '2025-11-01T11:00:00',
        finished_at: '2025-11-01T11:15:01',
      },
      'exception.txt': TRACEBACK,
      'config.json': { trial_name: 'slow-task__Xy12345' },
      'trial.log': 'ERROR timed out\n',
    });
    copyFixtureAgent(TIMEOUT, trial);
    const m = await captureTrial(trial, { run, step: 3 });

    const ex = m.trial.exception;
    assert.ok(ex);
    assert.equal(ex.type, 'AgentTimeoutError');
    assert.equal(ex.message, 'Agent execution timed out after 900.0 seconds');
    assert.equal(ex.traceback, TRACEBACK);
    assert.equal(ex.occurred_at, occurred);
    assert.equal(ex.text, TRACEBACK);
    assert.equal(m.trial.rewards, null);
    assert.equal(m.trial.reward_source, null);
    assert.equal(m.trial.finished, true);

    const reward = entryOf(m, 'verifier/reward.json');
    assert.equal(reward.status, 'unknown');
    assert.equal(reward.role, 'reward');
    assert.equal(reward.size, null);
    assert.equal(reward.sha256, null);
    assert.match(reward.reason ?? '', /reward/);
    const exFile = entryOf(m, 'exception.txt');
    assert.equal(exFile.status, 'collected');
    assert.equal(exFile.sha256, sha256(TRACEBACK));
    assert.deepEqual(m.ledger.counts, { collected: 5, missing: 0, skipped: 0, unknown: 1, empty: 0 });

    const rollout = rolloutOf(captureSpans(run, m));
    assert.equal(rollout.status, 'error');
    assert.equal(rollout.error, 'AgentTimeoutError: Agent execution timed out after 900.0 seconds');
    assert.equal(rollout.attributes.reward, null);
    assert.equal(rollout.attributes.rewards, null);
    assert.equal(rollout.end_time, Date.parse('2025-11-01T11:15:01Z') / 1000);
    // the agent got that far: its turns are still there
    assert.equal(m.trajectories[0].format, 'ATIF-v1.6');
    assert.equal(m.trajectories[0].turns, atifCounts(readJson(path.join(TIMEOUT, 'agent', 'trajectory.json'))).turns);

    const list = await probe(['trial', 'list', run]);
    assertCli(list, 0, 'trial list');
    assert.match(list.stdout, /FAILED AgentTimeoutError: Agent execution timed out after 900\.0 seconds/);
    assert.match(list.stdout, /no reward/);
  });

  it('only exception.txt (no exception_info): the error names the exception from the traceback', async () => {
    const { root, run } = await setup('failed-text');
    const trial = path.join(root, 'crash-task__Cr4sh00');
    const tb = 'Traceback (most recent call last):\n  File "agent.py", line 3, in <module>\n    main()\nValueError: the sandbox went away\n';
    writeTree(trial, { 'result.json': { id: 'crash-1', trial_name: 'crash-task__Cr4sh00' }, 'exception.txt': tb });
    const m = await captureTrial(trial, { run, step: 0 });
    assert.ok(m.trial.exception);
    assert.equal(m.trial.exception.text, tb);
    const rollout = rolloutOf(captureSpans(run, m));
    assert.equal(rollout.status, 'error');
    // "Type: message" of what was raised, not the traceback's header line
    assert.match(rollout.error ?? '', /ValueError/, `error: ${rollout.error}`);
    assert.match(rollout.error ?? '', /the sandbox went away/, `error: ${rollout.error}`);
  });
});

// =====================================================================================

describe('rewards', () => {
  async function rewardsOf(label: string, files: Record<string, string | Record<string, unknown>>) {
    const { root, run } = await setup(`reward-${label}`);
    const trial = path.join(root, `reward-${label}__R1`);
    writeTree(trial, files);
    const m = await captureTrial(trial, { run, step: 1 });
    return { m, run, rollout: rolloutOf(captureSpans(run, m)) };
  }

  it('verifier_result.rewards wins over the reward files', async () => {
    const { m } = await rewardsOf('precedence', {
      'result.json': { id: 'p-1', trial_name: 'p', verifier_result: { rewards: { reward: 0.9 } } },
      'verifier/reward.json': { reward: 0.1 },
      'verifier/reward.txt': '0.2\n',
    });
    assert.deepEqual(m.trial.rewards, { reward: 0.9 });
    assert.equal(m.trial.reward_source, 'verifier_result.rewards');
    assert.equal(entryOf(m, 'verifier/reward.json').role, 'reward');
    assert.equal(entryOf(m, 'verifier/reward.txt').role, 'reward');
  });

  it('only verifier/reward.json: a flat map, NaN tolerated as null', async () => {
    const { m, rollout } = await rewardsOf('json', {
      'result.json': { id: 'j-1', trial_name: 'j' },
      'verifier/reward.json': '{"reward": 0.25, "accuracy": NaN, "tests": 3}\n',
    });
    assert.deepEqual(m.trial.rewards, { reward: 0.25, accuracy: null, tests: 3 });
    assert.equal(m.trial.reward_source, 'verifier/reward.json');
    const e = entryOf(m, 'verifier/reward.json');
    assert.equal(e.status, 'collected');
    assert.equal(e.role, 'reward');
    noEntry(m, 'verifier/reward.txt');
    assert.equal(m.ledger.counts.unknown, 0, 'a reward was written: nothing unknown');
    assert.equal(rollout.attributes.reward, 0.25);
    assert.deepEqual(rollout.attributes.rewards, { reward: 0.25, accuracy: null, tests: 3 });
  });

  it('only verifier/reward.txt: a single float', async () => {
    const { m, rollout, run } = await rewardsOf('txt', { 'result.json': { id: 't-1', trial_name: 't' }, 'verifier/reward.txt': '0.5\n' });
    assert.deepEqual(m.trial.rewards, { reward: 0.5 });
    assert.equal(m.trial.reward_source, 'verifier/reward.txt');
    assert.equal(entryOf(m, 'verifier/reward.txt').role, 'reward');
    assert.equal(m.ledger.counts.unknown, 0);
    assert.equal(rollout.attributes.reward, 0.5);
    const show = await probe(['trial', 'show', run, m.capture_key]);
    assertCli(show, 0, 'trial show');
    assert.match(show.stdout, /reward=0\.5 +\(from verifier\/reward\.txt\)/);
  });

  it('verifier/reward.txt "nan": the reward is null, shown as NaN', async () => {
    const { m, rollout, run } = await rewardsOf('nan', { 'result.json': { id: 'n-1', trial_name: 'n' }, 'verifier/reward.txt': 'nan\n' });
    assert.deepEqual(m.trial.rewards, { reward: null });
    assert.equal(m.trial.reward_source, 'verifier/reward.txt');
    assert.equal(rollout.attributes.reward, null);
    assert.deepEqual(rollout.attributes.rewards, { reward: null });
    const list = await probe(['trial', 'list', run]);
    assert.match(list.stdout, /reward=NaN/);
  });

  it('Python NaN and Infinity tokens in result.json are tolerated', async () => {
    const { m, rollout } = await rewardsOf('pynan', {
      'result.json': '{"id": "py-1", "trial_name": "py", "agent_result": {"n_input_tokens": 10, "cost_usd": NaN}, "verifier_result": {"rewards": {"reward": NaN, "pass": 1, "score": Infinity}}}',
    });
    assert.equal(m.trial.id, 'py-1');
    assert.deepEqual(m.trial.rewards, { reward: null, pass: 1, score: null });
    assert.equal(m.trial.reward_source, 'verifier_result.rewards');
    assert.equal(m.trial.tokens?.cost_usd, null);
    assert.equal(m.trial.tokens?.input, 10);
    assert.equal(rollout.attributes.reward, null);
  });

  it('no reward anywhere: verifier/reward.json is unknown', async () => {
    const { m } = await rewardsOf('none', { 'result.json': { id: 'x-1', trial_name: 'x' }, 'verifier/test-stdout.txt': 'crashed\n' });
    assert.equal(m.trial.rewards, null);
    const e = entryOf(m, 'verifier/reward.json');
    assert.equal(e.status, 'unknown');
    assert.equal(e.role, 'reward');
  });
});

// =====================================================================================

describe('declared artifacts', () => {
  it('absent declarations are missing (by the manifest and by config.json); escaping ones are refused; nothing outside read or written', async () => {
    const { root, run } = await setup('artifacts');
    const trial = path.join(root, 'arts__Ar70001');
    const outsideSecret = `OUTSIDE-${randomBytes(12).toString('hex')}`;
    writeFileSync(path.join(root, 'outside.txt'), outsideSecret);
    writeTree(trial, {
      'result.json': { id: 'arts-1', trial_name: 'arts__Ar70001', verifier_result: { rewards: { reward: 0 } } },
      'config.json': {
        trial_name: 'arts__Ar70001',
        artifacts: ['/out/report.json', '/out/absent.json', { source: '/data/x.bin', destination: '../x' }, { source: '/data/y.bin', destination: 'data/y.bin' }],
      },
      'artifacts/manifest.json': [
        { source: '/logs/a.log', destination: 'artifacts/logs/a.log', type: 'file', status: 'ok' },
        { source: '/logs/gone.log', destination: 'artifacts/logs/gone.log', type: 'file', status: 'failed' },
        { source: '/app/outside.txt', destination: '../../outside.txt', type: 'file', status: 'ok' },
        { source: '/etc/passwd', destination: '/etc/passwd', type: 'file', status: 'ok' },
      ],
      'artifacts/logs/a.log': 'a\n',
      'artifacts/out/report.json': { ok: 1 },
    });
    const before = listAll(root).filter((p) => p !== 'run' && !p.startsWith('run/'));
    const m = await captureTrial(trial, { run, step: 2 });

    const a = entryOf(m, 'artifacts/logs/a.log');
    assert.equal(a.status, 'collected');
    assert.deepEqual(a.declared_by, ['artifacts/manifest.json']);
    const report = entryOf(m, 'artifacts/out/report.json');
    assert.equal(report.status, 'collected');
    assert.deepEqual(report.declared_by, ['config.json']);

    const gone = entryOf(m, 'artifacts/logs/gone.log');
    assert.equal(gone.status, 'missing');
    assert.equal(gone.role, 'artifact');
    assert.deepEqual(gone.declared_by, ['artifacts/manifest.json']);
    assert.equal(gone.size, null);
    assert.match(gone.reason ?? '', /declared by artifacts\/manifest\.json/);
    assert.match(gone.reason ?? '', /"failed"/, 'the harness\'s own status is kept');

    const absent = entryOf(m, 'artifacts/out/absent.json');
    assert.equal(absent.status, 'missing');
    assert.deepEqual(absent.declared_by, ['config.json']);
    assert.match(absent.reason ?? '', /declared by config\.json/);

    const y = entryOf(m, 'artifacts/data/y.bin');
    assert.equal(y.status, 'missing', 'a {source, destination} declaration lands under artifacts/');
    assert.deepEqual(y.declared_by, ['config.json']);

    for (const [p, by, why] of [
      ['../../outside.txt', 'artifacts/manifest.json', /escapes the trial directory/],
      ['/etc/passwd', 'artifacts/manifest.json', /absolute path/],
      ['../x', 'config.json', /escapes the trial directory/],
    ] as const) {
      const e = entryOf(m, p);
      assert.equal(e.status, 'skipped', p);
      assert.equal(e.role, 'artifact', p);
      assert.equal(e.sha256, null, p);
      assert.deepEqual(e.declared_by, [by], p);
      assert.match(e.reason ?? '', /refused/, `${p}: ${e.reason}`);
      assert.match(e.reason ?? '', why, `${p}: ${e.reason}`);
    }
    assert.deepEqual(m.ledger.counts, { collected: 5, missing: 3, skipped: 3, unknown: 0, empty: 0 });

    // nothing outside the trial was copied, and nothing was written outside the run
    const after = listAll(root).filter((p) => p !== 'run' && !p.startsWith('run/'));
    assert.deepEqual(after, before, 'no file appeared outside the run directory');
    assert.deepEqual(filesContaining(run, outsideSecret), [], 'the outside file was not copied');
    const passwd = readFileSync('/etc/passwd');
    assert.deepEqual(filesContaining(run, passwd.subarray(0, Math.min(passwd.length, 64))), [], '/etc/passwd was not copied');
    const filesDir = path.join(run, 'trials', m.capture_key, 'files');
    assert.deepEqual(listFiles(filesDir), ['artifacts/logs/a.log', 'artifacts/manifest.json', 'artifacts/out/report.json', 'config.json', 'result.json']);
    assert.equal(existsSync(path.join(run, 'trials', 'outside.txt')), false);
    assert.equal(existsSync(path.join(run, 'outside.txt')), false);
  });
});

// =====================================================================================

describe('symbolic links, hidden entries, special and oversized files', () => {
  it('a symlink to an outside file and a symlinked directory are skipped with their target, never followed', async () => {
    const { root, run } = await setup('symlinks');
    const secretDir = tempDir('rlprobe-trials-secret-');
    const secret = `SECRET-${randomBytes(16).toString('hex')}`;
    writeFileSync(path.join(secretDir, 'secret.txt'), `${secret}\n`);
    writeFileSync(path.join(secretDir, 'more.txt'), `${secret} again\n`);
    const trial = path.join(root, 'links__L1nk000');
    writeTree(trial, { 'result.json': { id: 'links-1', trial_name: 'links__L1nk000' }, 'agent/log.txt': 'ok\n', 'verifier/reward.txt': '1\n' });
    symlinkSync(path.join(secretDir, 'secret.txt'), path.join(trial, 'agent', 'notes.txt'));
    symlinkSync(secretDir, path.join(trial, 'agent', 'linked-dir'));
    symlinkSync(path.join(secretDir, 'secret.txt'), path.join(trial, 'artifacts-link'));
    const m = await captureTrial(trial, { run, step: 0 });

    for (const [p, target] of [
      ['agent/notes.txt', path.join(secretDir, 'secret.txt')],
      ['agent/linked-dir', secretDir],
      ['artifacts-link', path.join(secretDir, 'secret.txt')],
    ] as const) {
      const e = entryOf(m, p);
      assert.equal(e.status, 'skipped', p);
      assert.match(e.reason ?? '', /symbolic link/, p);
      assert.ok((e.reason ?? '').includes(target), `${p}: the reason shows the target (${e.reason})`);
      assert.equal(e.sha256, null);
    }
    noEntry(m, /^agent\/linked-dir\//);
    assert.equal(entryOf(m, 'agent/log.txt').status, 'collected');
    assert.deepEqual(filesContaining(run, secret), [], 'the secret is nowhere under the run directory');
  });

  describe('symlinks at the names the capture reads are not followed either', () => {
    /** A trial whose `name` is a symbolic link to `content` in another directory; the rest is real. */
    async function linked(label: string, name: string, content: (secret: string) => string, real: Record<string, string | Record<string, unknown>>) {
      const { root, run } = await setup(`symlinks-${label}`);
      const secretDir = tempDir('rlprobe-trials-secret-');
      const secret = `SECRET${randomBytes(16).toString('hex')}`;
      writeFileSync(path.join(secretDir, 'target'), content(secret));
      const trial = path.join(root, `linked-${label}__K0000`);
      writeTree(trial, { 'agent/log.txt': 'ok\n', 'trial.log': 'x\n', ...real });
      mkdirSync(path.dirname(path.join(trial, ...name.split('/'))), { recursive: true });
      symlinkSync(path.join(secretDir, 'target'), path.join(trial, ...name.split('/')));
      const m = await captureTrial(trial, { run, step: 0 });
      const e = entryOf(m, name);
      assert.equal(e.status, 'skipped', name);
      assert.match(e.reason ?? '', /symbolic link/, name);
      assert.match(e.reason ?? '', /never followed/, name);
      return { m, run, secret };
    }

    it('result.json', async () => {
      const { m, run, secret } = await linked('result', 'result.json', (s) => JSON.stringify({ id: `${s}-id`, trial_name: `${s}-name`, verifier_result: { rewards: { reward: 0.25 } } }), {});
      assert.deepEqual(filesContaining(run, secret), [], 'nothing from behind the link under the run directory');
      assert.equal(m.trial.id, null, `id read through the link: ${m.trial.id}`);
      assert.equal(m.trial.rewards, null);
    });

    it('exception.txt', async () => {
      const { m, run, secret } = await linked('exception', 'exception.txt', (s) => `${s}: private traceback\n`, { 'result.json': { id: 'le-1', trial_name: 'le' } });
      assert.deepEqual(filesContaining(run, secret), [], 'nothing from behind the link under the run directory');
      assert.equal(m.trial.exception, null, `exception read through the link: ${JSON.stringify(m.trial.exception)}`);
    });

    it('config.json', async () => {
      const { m, run, secret } = await linked('config', 'config.json', (s) => JSON.stringify({ trial_name: `${s}-cfg`, artifacts: [`/${s}.json`] }), { 'verifier/reward.txt': '1\n' });
      assert.deepEqual(filesContaining(run, secret), [], 'nothing from behind the link under the run directory');
      assert.ok(!m.trial.name.includes(secret), `name read through the link: ${m.trial.name}`);
      noEntry(m, `artifacts/${secret}.json`);
    });

    it('verifier/reward.txt', async () => {
      const { m, run } = await linked('reward', 'verifier/reward.txt', () => '0.987654\n', { 'result.json': { id: 'lr-1', trial_name: 'lr' } });
      assert.equal(m.trial.rewards, null, `reward read through the link: ${JSON.stringify(m.trial.rewards)}`);
      assert.deepEqual(filesContaining(run, '0.987654'), []);
    });

    it('verifier/reward.json', async () => {
      const { m, run } = await linked('reward-json', 'verifier/reward.json', () => '{"reward": 0.123457}', { 'result.json': { id: 'lrj-1', trial_name: 'lrj' } });
      assert.equal(m.trial.rewards, null, `reward read through the link: ${JSON.stringify(m.trial.rewards)}`);
      assert.deepEqual(filesContaining(run, '0.123457'), []);
    });
  });

  it('trajectory references (subagent, continuation) that escape, name a symlink or a hidden file are not loaded', async () => {
    const { root, run } = await setup('refs');
    const secretDir = tempDir('rlprobe-trials-secret-');
    const secret = `SECRET${randomBytes(16).toString('hex')}`;
    const subDoc = (tag: string) => ({ schema_version: 'ATIF-v1.7', session_id: `${secret}-${tag}`, agent: { name: 'x', version: '1' }, steps: [{ step_id: 1, source: 'agent', message: `${secret} ${tag}` }] });
    writeTree(secretDir, { 'sub.json': subDoc('linked') });
    writeTree(root, { 'outside.json': subDoc('outside') });
    const trial = path.join(root, 'refs__R3f0000');
    const doc = {
      schema_version: 'ATIF-v1.7',
      session_id: 'refs',
      agent: { name: 'terminus-2', version: '1' },
      continued_trajectory_ref: '../../outside.json',
      steps: [
        { step_id: 1, source: 'user', message: 'go' },
        {
          step_id: 2,
          source: 'system',
          message: 'compaction',
          observation: {
            results: [
              {
                content: 'subagents',
                subagent_trajectory_ref: [
                  { session_id: 'a', trajectory_path: '../../outside.json' },
                  { session_id: 'b', trajectory_path: 'linked.json' },
                  { session_id: 'c', trajectory_path: '.hidden-sub.json' },
                  { session_id: 'd', trajectory_path: `${root}/outside.json` },
                  { session_id: 'e', trajectory_path: 'ok-sub.json' },
                ],
              },
            ],
          },
        },
      ],
    };
    writeTree(trial, {
      'result.json': { id: 'refs-1', trial_name: 'refs__R3f0000' },
      'agent/trajectory.json': doc,
      'agent/.hidden-sub.json': subDoc('hidden'),
      'agent/ok-sub.json': { ...subDoc('ok'), session_id: 'ok-sub', steps: [{ step_id: 1, source: 'agent', message: 'fine' }] },
    });
    symlinkSync(path.join(secretDir, 'sub.json'), path.join(trial, 'agent', 'linked.json'));
    const m = await captureTrial(trial, { run, step: 0 });
    assert.equal(m.trajectories[0].status, 'expanded');
    assert.deepEqual(m.trajectories[0].referenced_files, ['agent/ok-sub.json'], 'only the collected reference was read');
    assert.equal(entryOf(m, 'agent/ok-sub.json').role, 'trajectory');
    assert.deepEqual(filesContaining(run, secret), [], 'nothing behind an escaping, linked or hidden reference reached the run');
    const spans = captureSpans(run, m);
    const subs = ofKind(spans, 'trajectory');
    assert.ok(subs.some((s) => s.attributes.file === 'agent/ok-sub.json' && s.attributes.unresolved === undefined));
    assert.equal(subs.filter((s) => s.attributes.unresolved === true).length, subs.length - 1, 'the others are unresolved');
  });

  it('hidden files and directories are skipped visibly, not entered, their contents not copied', async () => {
    const { root, run } = await setup('hidden');
    const token = `HIDDEN-${randomBytes(12).toString('hex')}`;
    const trial = path.join(root, 'hidden__H1dden0');
    writeTree(trial, {
      'result.json': { id: 'hidden-1', trial_name: 'hidden__H1dden0', verifier_result: { rewards: { reward: 1 } } },
      '.env': `API_KEY=${token}\n`,
      '.git/HEAD': `ref: refs/heads/${token}\n`,
      '.git/objects/ab/cdef01': token,
      '.git/config': token,
      'agent/.cache/state.json': { token },
      'agent/log.txt': 'visible\n',
    });
    const m = await captureTrial(trial, { run, step: 0 });
    const env = entryOf(m, '.env');
    assert.equal(env.status, 'skipped');
    assert.match(env.reason ?? '', /hidden file/);
    assert.equal(env.size, Buffer.byteLength(`API_KEY=${token}\n`));
    assert.equal(env.sha256, null);
    const git = entryOf(m, '.git');
    assert.equal(git.status, 'skipped');
    assert.match(git.reason ?? '', /hidden directory/);
    assert.match(git.reason ?? '', /not entered/);
    noEntry(m, /^\.git\//);
    const cache = entryOf(m, 'agent/.cache');
    assert.equal(cache.status, 'skipped');
    noEntry(m, /^agent\/\.cache\//);
    assert.equal(entryOf(m, 'agent/log.txt').status, 'collected');
    assert.deepEqual(m.ledger.counts, { collected: 2, missing: 0, skipped: 3, unknown: 0, empty: 0 });
    assert.deepEqual(filesContaining(run, token), [], 'no hidden content under the run directory');
    assert.deepEqual(listFiles(path.join(run, 'trials', m.capture_key, 'files')), ['agent/log.txt', 'result.json']);
  });

  it('a file over maxFileBytes is skipped with its size; files at the limit are collected', async () => {
    const { root, run } = await setup('oversized');
    const trial = path.join(root, 'big__B1g0000');
    writeTree(trial, {
      'result.json': { id: 'big-1', trial_name: 'big__B1g0000', verifier_result: { rewards: { reward: 1 } } },
      'agent/big.log': Buffer.alloc(5000, 0x61),
      'agent/edge.log': Buffer.alloc(1000, 0x62),
    });
    const m = await captureTrial(trial, { run, step: 0, maxFileBytes: 1000 });
    const big = entryOf(m, 'agent/big.log');
    assert.equal(big.status, 'skipped');
    assert.equal(big.size, 5000);
    assert.equal(big.sha256, null);
    assert.match(big.reason ?? '', /5000 bytes/);
    assert.match(big.reason ?? '', /1000/);
    const edge = entryOf(m, 'agent/edge.log');
    assert.equal(edge.status, 'collected');
    assert.equal(edge.size, 1000);
    assert.equal(existsSync(path.join(run, 'trials', m.capture_key, 'files', 'agent', 'big.log')), false);
    // the CLI takes the same limit
    const { run: run2 } = await setup('oversized-cli');
    const r = await probe(['trial', 'capture', trial, '--run', run2, '--step', '0', '--max-file-bytes', '1000', '--json']);
    assertCli(r, 0, 'capture --max-file-bytes');
    const cm = JSON.parse(r.stdout) as CaptureManifest;
    assert.equal(entryOf(cm, 'agent/big.log').status, 'skipped');
    assert.equal(entryOf(cm, 'agent/big.log').size, 5000);
  });
});

// =====================================================================================

describe('multi-step trials', () => {
  it('a trial_step span per step under the rollout, turns under each, per-step rewards', async () => {
    const { root, run, runId } = await setup('multistep');
    const trial = path.join(root, 'two-steps__M5t3p00');
    const setupDoc = smallAtif('setup-session', [0, 2]);
    const solveDoc = smallAtif('solve-session', [0, 1, 1], Date.UTC(2025, 10, 1, 10, 5, 0));
    writeTree(trial, {
      'result.json': { id: 'ms-1', trial_name: 'two-steps__M5t3p00', started_at: '2025-11-01T10:00:00Z', finished_at: '2025-11-01T10:10:00Z' },
      'config.json': { trial_name: 'two-steps__M5t3p00' },
      'steps/setup/agent/trajectory.json': setupDoc,
      'steps/setup/verifier/reward.txt': '1\n',
      'steps/solve/agent/trajectory.json': solveDoc,
      'steps/solve/agent/solve.log': 'log\n',
      'steps/solve/verifier/reward.txt': '0.5\n',
    });
    const m = await captureTrial(trial, { run, step: 9, sampleId: 'ms' });
    assert.deepEqual(m.trial.steps, ['setup', 'solve']);
    assert.equal(entryOf(m, 'steps/setup/verifier/reward.txt').role, 'reward');
    assert.equal(entryOf(m, 'steps/setup/agent/trajectory.json').role, 'trajectory');
    assert.equal(entryOf(m, 'steps/solve/agent/solve.log').role, 'agent_log');
    assert.equal(m.ledger.counts.unknown, 0, 'each step wrote its reward');
    assert.deepEqual(
      m.trajectories.map((t) => [t.path, t.trial_step, t.status, t.turns, t.tool_calls]),
      [
        ['steps/setup/agent/trajectory.json', 'setup', 'expanded', 2, 2],
        ['steps/solve/agent/trajectory.json', 'solve', 'expanded', 3, 2],
      ],
    );

    const spans = captureSpans(run, m);
    assertUniqueIds(spans);
    const rollout = rolloutOf(spans);
    const steps = ofKind(spans, 'trial_step');
    assert.deepEqual(steps.map((s) => s.name).sort(), ['setup', 'solve']);
    const byName = new Map(steps.map((s) => [s.name, s]));
    for (const [name, doc, reward] of [['setup', setupDoc, 1], ['solve', solveDoc, 0.5]] as const) {
      const s = byName.get(name)!;
      assert.equal(s.span_id, expectedSpanId(runId, m.capture_key, `step:${name}`));
      assert.equal(s.parent_id, rollout.span_id);
      assert.equal(s.step, 9);
      assert.equal(s.attributes.reward, reward);
      assert.deepEqual(s.attributes.rewards, { reward });
      const turns = spans.filter((x) => x.kind === 'turn' && x.parent_id === s.span_id);
      const counts = atifCounts(doc);
      assert.equal(turns.length, counts.turns, `${name}: its turns under it`);
      const turnIds = new Set(turns.map((t) => t.span_id));
      assert.equal(spans.filter((x) => x.kind === 'tool_call' && turnIds.has(x.parent_id as string)).length, counts.toolCalls, `${name}: its tool calls`);
    }
    assert.equal(ofKind(spans, 'turn').length, 5);
    assert.equal(spans.filter((x) => x.parent_id === rollout.span_id).length, 2, 'only the two steps hang from the rollout');
    assert.deepEqual(m.spans.by_kind, { rollout: 1, trial_step: 2, turn: 5, tool_call: 4 });
  });

  it('a step without a reward file has an unknown reward entry', async () => {
    const { root, run } = await setup('multistep-noreward');
    const trial = path.join(root, 'mnr__M0000');
    writeTree(trial, {
      'result.json': { id: 'mnr-1', trial_name: 'mnr__M0000' },
      'steps/a/agent/trajectory.json': smallAtif('a', [0, 1]),
      'steps/a/verifier/reward.json': { reward: 1 },
      'steps/b/agent/trajectory.json': smallAtif('b', [0]),
    });
    const m = await captureTrial(trial, { run, step: 0 });
    const e = entryOf(m, 'steps/b/verifier/reward.json');
    assert.equal(e.status, 'unknown');
    assert.equal(e.role, 'reward');
    noEntry(m, 'steps/a/verifier/reward.txt');
    assert.equal(entryOf(m, 'steps/a/verifier/reward.json').status, 'collected');
    const steps = ofKind(captureSpans(run, m), 'trial_step');
    const b = steps.find((s) => s.name === 'b');
    assert.ok(b);
    assert.equal(b.attributes.reward, null);
  });

  it('a step without a trajectory still has its trial_step span (docs/format.md#the-captures-spans: one per steps/<name>/) with its reward', async () => {
    const { root, run } = await setup('multistep-notraj');
    const trial = path.join(root, 'mnt__N0000');
    writeTree(trial, {
      'result.json': { id: 'mnt-1', trial_name: 'mnt__N0000' },
      'steps/solve/agent/trajectory.json': smallAtif('solve', [0, 1]),
      'steps/solve/verifier/reward.txt': '1\n',
      'steps/verify/verifier/reward.txt': '0\n',
      'steps/verify/verifier/test-stdout.txt': '1 failed\n',
    });
    const m = await captureTrial(trial, { run, step: 0 });
    assert.deepEqual(m.trial.steps, ['solve', 'verify']);
    const steps = ofKind(captureSpans(run, m), 'trial_step');
    assert.deepEqual(steps.map((s) => s.name).sort(), ['solve', 'verify'], 'one trial_step span per steps/<name>/');
    assert.equal(steps.find((s) => s.name === 'verify')?.attributes.reward, 0);
  });
});

// =====================================================================================

describe('trajectories', () => {
  it('ATIF-v1.8 with audio parts (inline base64 and by path): expanded, no media data in the spans', async () => {
    const { root, run } = await setup('audio');
    const b64 = randomBytes(3000).toString('base64');
    const trial = path.join(root, 'voice__V0000');
    const doc = {
      schema_version: 'ATIF-v1.8',
      session_id: 'voice-1',
      agent: { name: 'voice-agent', version: '1', model_name: 'audio-model' },
      steps: [
        {
          step_id: 1,
          timestamp: '2025-11-01T10:00:00Z',
          source: 'user',
          message: [
            { type: 'text', text: 'listen' },
            { type: 'audio', source: { media_type: 'audio/wav', data: b64 } },
            { type: 'audio', source: { media_type: 'audio/wav', path: 'agent/audio/a.wav' } },
          ],
        },
        {
          step_id: 2,
          timestamp: '2025-11-01T10:00:05Z',
          source: 'agent',
          message: 'transcribing',
          tool_calls: [{ tool_call_id: 'c1', function_name: 'transcribe', arguments: { file: 'agent/audio/a.wav' } }],
          observation: { results: [{ source_call_id: 'c1', content: [{ type: 'text', text: 'hello' }, { type: 'audio', source: { media_type: 'audio/wav', data: b64 } }] }] },
        },
      ],
    };
    writeTree(trial, {
      'result.json': { id: 'voice-1', trial_name: 'voice__V0000', verifier_result: { rewards: { reward: 1 } } },
      'agent/trajectory.json': doc,
      'agent/audio/a.wav': randomBytes(256),
    });
    const m = await captureTrial(trial, { run, step: 4 });
    const [tj] = m.trajectories;
    assert.equal(tj.status, 'expanded');
    assert.equal(tj.format, 'ATIF-v1.8');
    assert.equal(tj.turns, 2);
    assert.equal(tj.tool_calls, 1);
    assert.equal(entryOf(m, 'agent/audio/a.wav').status, 'collected');
    const spans = captureSpans(run, m);
    assert.equal(ofKind(spans, 'turn').length, 2);
    assert.equal(ofKind(spans, 'tool_call').length, 1);
    const needle = b64.slice(100, 160);
    for (const s of spans) assert.ok(!JSON.stringify(s.attributes).includes(needle), `${s.kind} ${s.name}: no base64 in its attributes`);
    assert.ok(!readFileSync(path.join(run, 'trials', m.capture_key, 'capture.json'), 'utf8').includes(needle), 'no base64 in capture.json');
    assert.deepEqual(filesContaining(path.join(run, 'trials', m.capture_key), needle), ['files/agent/trajectory.json'], 'only the trajectory copy itself holds the media');
  });

  it('a trajectory that is not JSON is collected, marked unreadable, and only the rollout is a span', async () => {
    const { root, run } = await setup('unreadable');
    const trial = path.join(root, 'garbled__G0000');
    writeTree(trial, { 'result.json': { id: 'g-1', trial_name: 'garbled__G0000' }, 'agent/trajectory.json': '{"schema_version": "ATIF-v1.7", "steps": [' });
    const m = await captureTrial(trial, { run, step: 0 });
    assert.equal(entryOf(m, 'agent/trajectory.json').status, 'collected');
    assert.equal(m.trajectories.length, 1);
    assert.equal(m.trajectories[0].status, 'unreadable');
    assert.match(m.trajectories[0].reason ?? '', /not JSON/);
    assert.deepEqual(m.spans.by_kind, { rollout: 1 });
    const show = await probe(['trial', 'show', run, m.capture_key]);
    assert.match(show.stdout, /agent\/trajectory\.json captured raw \(unreadable\)/);
  });

  describe('an unknown format', () => {
    const acme: TrajectoryParser = (doc) => {
      const d = doc as { format?: unknown; events?: { role: string; text: string; t: number; tool?: string }[] } | null;
      if (d === null || typeof d !== 'object' || typeof d.format !== 'string' || !d.format.startsWith('acme-') || !Array.isArray(d.events)) return null;
      const spans = [];
      let tools = 0;
      for (const [i, ev] of d.events.entries()) {
        spans.push({ path: `turn:${i}`, parentPath: null, kind: 'turn', name: `${ev.role} #${i}`, start: ev.t, end: ev.t + 1, status: 'ok' as const, error: null, attributes: { role: ev.role, text: ev.text } });
        if (ev.tool) {
          tools++;
          spans.push({ path: `turn:${i}/tool:0`, parentPath: `turn:${i}`, kind: 'tool_call', name: ev.tool, start: ev.t, end: ev.t + 1, status: 'ok' as const, error: null, attributes: {} });
        }
      }
      return {
        format: d.format,
        spans,
        referencedFiles: [],
        warnings: [],
        summary: { turns: d.events.length, toolCalls: tools, subtrajectories: 0, promptTokens: null, completionTokens: null, cachedTokens: null, costUsd: null, agent: null, model: null, sessionId: null },
      };
    };
    const acmeDoc = {
      format: 'acme-v2',
      events: [
        { role: 'user', text: 'hi', t: 1_762_000_000 },
        { role: 'assistant', text: 'running', t: 1_762_000_002, tool: 'bash' },
        { role: 'assistant', text: 'done', t: 1_762_000_004 },
      ],
    };

    it('is captured raw (rollout span only), expanded once a parser is registered, and expanding again changes nothing', async () => {
      const { root, run, runId } = await setup('acme');
      const trial = path.join(root, 'acme__Ac00000');
      writeTree(trial, { 'result.json': { id: 'acme-1', trial_name: 'acme__Ac00000', verifier_result: { rewards: { reward: 1 } } }, 'agent/trajectory.json': acmeDoc });
      const m = await captureTrial(trial, { run, step: 5 });
      const [raw] = m.trajectories;
      assert.equal(m.trajectories.length, 1);
      assert.equal(raw.path, 'agent/trajectory.json');
      assert.equal(raw.status, 'raw');
      assert.equal(raw.parser, null);
      assert.match(raw.reason ?? '', /no registered parser|no parser/);
      assert.equal(raw.turns, 0);
      assert.equal(entryOf(m, 'agent/trajectory.json').status, 'collected');
      assert.deepEqual(m.spans.by_kind, { rollout: 1 });
      assert.equal(RunReader.open(run).spans().length, 1);

      registerTrajectoryParser('acme', acme);
      try {
        const e1 = expandCapture(run, m.capture_key);
        assert.equal(e1.trajectories[0].status, 'expanded');
        assert.equal(e1.trajectories[0].parser, 'acme');
        assert.equal(e1.trajectories[0].format, 'acme-v2');
        assert.equal(e1.trajectories[0].turns, 3);
        assert.equal(e1.trajectories[0].tool_calls, 1);
        assert.deepEqual(e1.spans.by_kind, { rollout: 1, turn: 3, tool_call: 1 });
        assert.equal(e1.spans.rollout_span_id, m.spans.rollout_span_id, 'the rollout keeps its id');
        assert.equal(e1.capture_key, m.capture_key);
        assert.equal(e1.step, 5);
        assert.deepEqual(e1.ledger.entries, m.ledger.entries, 'expanding does not touch the ledger');
        const spans1 = RunReader.open(run).spans();
        assert.equal(spans1.length, 5);
        assertUniqueIds(spans1);
        assert.deepEqual(
          ofKind(spans1, 'turn').map((s) => s.span_id).sort(),
          [0, 1, 2].map((i) => expectedSpanId(runId, m.capture_key, `agent/trajectory.json#turn:${i}`)).sort(),
        );
        assert.deepEqual(RunReader.open(run).trial(m.capture_key).trajectories[0].status, 'expanded');

        const e2 = expandCapture(run, m.capture_key);
        assert.deepEqual(e2.spans, e1.spans);
        assert.deepEqual(e2.trajectories, e1.trajectories);
        const spans2 = RunReader.open(run).spans();
        assert.deepEqual(sortIds(spans2), sortIds(spans1));
        assert.equal(RunReader.open(run).trials().length, 1);

        throwsCode(() => expandCapture(run, m.capture_key, '../result.json'), 'RLPROBE_INVALID_OPTION', /escapes/);
        throwsCode(() => expandCapture(run, m.capture_key, 'agent/nope.json'), 'RLPROBE_INVALID_OPTION', /not a collected file/);
        throwsCode(() => expandCapture(run, 'acme__Ac00000.000000000000'), 'RLPROBE_NOT_FOUND');
        throwsCode(() => expandCapture(run, '../../etc'), 'RLPROBE_NOT_FOUND');
        assert.deepEqual(sortIds(RunReader.open(run).spans()), sortIds(spans1), 'a refused expand changes nothing');
      } finally {
        unregisterTrajectoryParser('acme');
      }
    });

    it('probe trial expand --parser-module expands it from the CLI', async () => {
      const { root, run } = await setup('acme-cli');
      const trial = path.join(root, 'acme-cli__Ac11111');
      writeTree(trial, { 'result.json': { id: 'acme-cli-1', trial_name: 'acme-cli__Ac11111' }, 'agent/trajectory.json': acmeDoc });
      const m = await captureTrial(trial, { run, step: 6 });
      assert.equal(m.trajectories[0].status, 'raw');
      const mod = path.join(root, 'acme-parser.mjs');
      writeFileSync(
        mod,
        `export const trajectoryParsers = {
  'acme-cli': (doc) => {
    if (!doc || typeof doc.format !== 'string' || !doc.format.startsWith('acme-')) return null;
    const spans = doc.events.map((ev, i) => ({ path: 'turn:' + i, parentPath: null, kind: 'turn', name: ev.role, start: ev.t, end: ev.t, status: 'ok', error: null, attributes: { text: ev.text } }));
    return { format: doc.format, spans, referencedFiles: [], warnings: [], summary: { turns: spans.length, toolCalls: 0, subtrajectories: 0, promptTokens: null, completionTokens: null, cachedTokens: null, costUsd: null, agent: null, model: null, sessionId: null } };
  },
};
`,
      );
      try {
        const r = await probe(['trial', 'expand', run, m.capture_key, '--parser-module', mod]);
        assertCli(r, 0, 'trial expand');
        assert.match(r.stdout, /^expanded "acme-cli__Ac11111" into /);
        assert.match(r.stdout, /acme-v2 3 turns, 0 tool calls/);
        const t = RunReader.open(run).trial(m.capture_key);
        assert.equal(t.trajectories[0].status, 'expanded');
        assert.equal(t.trajectories[0].parser, 'acme-cli');
        assert.equal(ofKind(RunReader.open(run).spans({ step: 6 }), 'turn').length, 3);
        const again = await probe(['trial', 'expand', run, 'acme-cli__Ac11111', '--parser-module', mod, '--json']);
        assertCli(again, 0, 'trial expand again');
        assert.equal((JSON.parse(again.stdout) as CaptureManifest).spans.count, 4);
        assert.equal(RunReader.open(run).spans().length, 4);
        const bad = await probe(['trial', 'expand', run, m.capture_key, '--parser-module', path.join(root, 'nope.mjs')]);
        assertCli(bad, 1, 'expand with a missing module');
        assert.match(bad.stderr, /^probe: invalid --parser-module .*nope\.mjs/);
      } finally {
        unregisterTrajectoryParser('acme-cli');
      }
    });
  });
});

// =====================================================================================

describe('capture keys', () => {
  it('a trial name with separators and dots becomes one safe directory under trials/; nothing written elsewhere', async () => {
    const { root, run } = await setup('keys');
    const trial = path.join(root, 'evil');
    writeTree(trial, { 'result.json': { id: 'evil-1', trial_name: '../../escaped/../name with spaces/é' } });
    const before = listAll(root).filter((p) => p !== 'run' && !p.startsWith('run/'));
    const m = await captureTrial(trial, { run, step: 0 });
    assert.match(m.capture_key, /^[A-Za-z0-9_-][A-Za-z0-9._-]*\.[0-9a-f]{12}$/);
    assert.ok(!m.capture_key.includes('/'));
    assert.equal(m.capture_key.slice(-12), expectedKey('x', 'id:evil-1').slice(-12));
    assert.deepEqual(readdirSync(path.join(run, 'trials')), [m.capture_key]);
    assert.deepEqual(listAll(root).filter((p) => p !== 'run' && !p.startsWith('run/')), before);
    assert.equal(m.trial.name, '../../escaped/../name with spaces/é', 'the name itself is kept as written');
    assert.equal(RunReader.open(run).trial('../../escaped/../name with spaces/é').capture_key, m.capture_key);
  });

  it('a name that slugs to nothing falls back to "trial"', async () => {
    const { root, run } = await setup('keys-empty');
    const trial = path.join(root, 'dots');
    writeTree(trial, { 'result.json': { id: 'dots-1', trial_name: '...' } });
    const m = await captureTrial(trial, { run, step: 0 });
    assert.equal(m.capture_key, expectedKey('trial', 'id:dots-1'));
  });
});

describe('recapture', () => {
  it('the same trial twice: same key, same span ids, nothing duplicated', async () => {
    const { root, run } = await setup('recapture');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const m1 = await captureTrial(trial, { run, step: 3, sampleId: 's1' });
    const spans1 = RunReader.open(run).spans();
    const files1 = listFiles(path.join(run, 'trials'));
    const m2 = await captureTrial(trial, { run, step: 3, sampleId: 's1' });
    assert.equal(m2.capture_key, m1.capture_key);
    assert.equal(m2.spans.rollout_span_id, m1.spans.rollout_span_id);
    assert.deepEqual(m2.ledger, m1.ledger);
    const spans2 = RunReader.open(run).spans();
    assert.equal(spans2.length, spans1.length, 'span count unchanged');
    assert.deepEqual(sortIds(spans2), sortIds(spans1));
    assertUniqueIds(spans2);
    assert.deepEqual(listFiles(path.join(run, 'trials')), files1, 'no extra file (temporaries, duplicates)');
    assert.equal(RunReader.open(run).trials().length, 1);
    assert.deepEqual(readdirSync(path.join(run, 'trials')), [m1.capture_key]);

    // captured again at another step: the capture and all its spans move there
    const m3 = await captureTrial(trial, { run, step: 5, sampleId: 's1' });
    assert.equal(m3.capture_key, m1.capture_key);
    const reader = RunReader.open(run);
    assert.deepEqual(reader.trials({ step: 3 }), []);
    assert.deepEqual(reader.trials({ step: 5 }).map((t) => t.capture_key), [m1.capture_key]);
    assert.equal(reader.spans({ step: 3 }).length, 0);
    assert.equal(reader.spans({ step: 5 }).length, spans1.length);
    assert.deepEqual(sortIds(reader.spans()), sortIds(spans1));
  });

  it('a file removed from the trial disappears from the capture; a new file appears', async () => {
    const { root, run } = await setup('recapture-stale');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const m1 = await captureTrial(trial, { run, step: 3 });
    const filesDir = path.join(run, 'trials', m1.capture_key, 'files');
    assert.ok(existsSync(path.join(filesDir, 'verifier', 'test-stdout.txt')));
    rmSync(path.join(trial, 'verifier', 'test-stdout.txt'));
    rmSync(path.join(trial, 'artifacts', 'logs'), { recursive: true });
    writeTree(trial, { 'agent/extra.txt': 'new\n' });
    const m2 = await captureTrial(trial, { run, step: 3 });
    assert.equal(m2.capture_key, m1.capture_key);
    noEntry(m2, 'verifier/test-stdout.txt');
    assert.equal(existsSync(path.join(filesDir, 'verifier', 'test-stdout.txt')), false);
    assert.equal(existsSync(path.join(filesDir, 'artifacts', 'logs')), false, 'an emptied directory is removed');
    // still declared by the manifest: now missing
    assert.equal(entryOf(m2, 'artifacts/logs/app.log').status, 'missing');
    assert.equal(entryOf(m2, 'agent/extra.txt').status, 'collected');
    assert.deepEqual(listFiles(filesDir), m2.ledger.entries.filter((e) => e.status === 'collected').map((e) => e.path));
  });

  it('a path that changed between file and directory is collected on recapture', async () => {
    const { root, run } = await setup('recapture-kind');
    const trial = path.join(root, 'shape__Sh4pe00');
    writeTree(trial, { 'result.json': { id: 'shape-1', trial_name: 'shape__Sh4pe00' }, 'artifacts/out': 'a file first\n', 'agent/logs/a.txt': 'a directory first\n' });
    const m1 = await captureTrial(trial, { run, step: 0 });
    assert.equal(entryOf(m1, 'artifacts/out').status, 'collected');
    rmSync(path.join(trial, 'artifacts', 'out'));
    rmSync(path.join(trial, 'agent', 'logs'), { recursive: true });
    writeTree(trial, { 'artifacts/out/report.txt': 'now a directory\n', 'agent/logs': 'now a file\n' });
    const m2 = await captureTrial(trial, { run, step: 0 });
    const filesDir = path.join(run, 'trials', m2.capture_key, 'files');
    for (const p of ['artifacts/out/report.txt', 'agent/logs']) {
      const e = entryOf(m2, p);
      assert.equal(e.status, 'collected', `${p}: ${e.reason}`);
      assert.equal(readFileSync(path.join(filesDir, ...p.split('/')), 'utf8'), readFileSync(path.join(trial, ...p.split('/')), 'utf8'));
    }
  });

  it('the same directory re-run with a new result id is a second capture', async () => {
    const { root, run } = await setup('recapture-retry');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const m1 = await captureTrial(trial, { run, step: 3 });
    const newId = '9a9a9a9a-1111-4222-8333-444455556666';
    writeFileSync(path.join(trial, 'result.json'), JSON.stringify(passResult(newId)));
    const m2 = await captureTrial(trial, { run, step: 4 });
    assert.notEqual(m2.capture_key, m1.capture_key);
    assert.equal(m2.capture_key, expectedKey(PASS_NAME, `id:${newId}`));
    assert.notEqual(m2.spans.rollout_span_id, m1.spans.rollout_span_id);
    const reader = RunReader.open(run);
    const trials = reader.trials();
    assert.deepEqual(trials.map((t) => [t.capture_key, t.step, t.trial.id]), [
      [m1.capture_key, 3, PASS_ID],
      [m2.capture_key, 4, newId],
    ]);
    assert.equal(reader.spans().length, m1.spans.count + m2.spans.count);
    assertUniqueIds(reader.spans());
  });
});

// =====================================================================================

describe('an unfinished trial', () => {
  it('no result.json: open rollout, result.json unknown, key from the directory name', async () => {
    const { root, run, runId } = await setup('unfinished');
    const name = 'unfinished-task__Zz99999';
    const trial = path.join(root, name);
    writeTree(trial, { 'config.json': { task: { name: 'unfinished-task' }, agent: { name: 'terminus-2', model_name: 'm' } }, 'trial.log': 'running\n' });
    copyFixtureAgent(TIMEOUT, trial);
    const m = await captureTrial(trial, { run, step: 2 });
    assert.equal(m.capture_key, expectedKey(name, `dir:${name}`));
    assert.equal(m.trial.id, null);
    assert.equal(m.trial.name, name);
    assert.equal(m.trial.finished, false);
    assert.equal(m.trial.task_name, 'unfinished-task');
    assert.equal(m.trial.agent, 'terminus-2');
    const res = entryOf(m, 'result.json');
    assert.equal(res.status, 'unknown');
    assert.equal(res.role, 'result');
    assert.match(res.reason ?? '', /not written/);
    assert.equal(entryOf(m, 'verifier/reward.json').status, 'unknown');

    const spans = captureSpans(run, m);
    const rollout = rolloutOf(spans);
    assert.equal(rollout.span_id, expectedSpanId(runId, m.capture_key, 'rollout'));
    assert.equal(rollout.status, 'open');
    assert.equal(rollout.end_time, null);
    assert.equal(rollout.attributes.finished, false);
    assert.equal(rollout.attributes.trial_id, null);
    assert.ok(ofKind(spans, 'turn').length > 0, 'the turns written so far are there');
    const counts = RunReader.open(run).spanCounts().find((c) => c.kind === 'rollout');
    assert.equal(counts?.open, 1);

    const list = await probe(['trial', 'list', run]);
    assert.match(list.stdout, /UNFINISHED \(no result\.json\)/);
    const show = await probe(['trial', 'show', run, name]);
    assertCli(show, 0, 'trial show');
    assert.match(show.stdout, /id \(none: no result\.json\)/);
    assert.match(show.stdout, /unknown +result .*result\.json/);
  });
});

// =====================================================================================

describe('staging and delivery', () => {
  /** A trial with agent/, verifier/ and artifacts/ files. */
  function stagedTrial(dir: string, id: string, name: string): void {
    writeTree(dir, {
      'result.json': { id, trial_name: name, verifier_result: { rewards: { reward: 0.5 } } },
      'config.json': { trial_name: name },
      'agent/log.txt': `${name} agent log\n`,
      'agent/notes/n1.txt': 'n1\n',
      'verifier/reward.txt': '0.5\n',
      'verifier/test-stdout.txt': 'ok\n',
      'verifier/ctrf.json': { tests: 2 },
      'artifacts/out/r.json': { r: 1 },
    });
    cpSync(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'), path.join(dir, 'agent', 'trajectory.json'));
  }

  it('stage, an outage part way (every verifier/ copy fails), resume, deliver again: exact lists, hashes, no duplicates', async () => {
    const { root, run } = await setup('deliver');
    const trial = path.join(root, 'staged__St4g3d0');
    stagedTrial(trial, 'staged-1', 'staged__St4g3d0');
    const spool = path.join(root, 'spool');
    const context = { rollout_id: 'r-1' };
    const { dir, staged } = await stageTrial(trial, { to: spool, step: 7, sampleId: 's7', groupId: 'g7', context });
    const key = staged.capture_key;
    assert.equal(key, expectedKey('staged__St4g3d0', 'id:staged-1'));
    assert.equal(dir, path.join(spool, key));
    assert.equal(staged.kind, 'rlprobe.staged_trial');
    assert.equal(staged.step, 7);
    assert.deepEqual(staged.labels, { sample: 's7', group: 'g7' });
    assert.deepEqual(staged.source.context, context);
    const collected = staged.collection.entries.filter((e) => e.status === 'collected');
    const all = collected.map((e) => e.path);
    assert.deepEqual(all, listFiles(trial));
    for (const e of collected) {
      assert.equal(e.sha256, sha256(readFileSync(path.join(trial, ...e.path.split('/')))), e.path);
      assert.ok(readFileSync(path.join(dir, 'files', ...e.path.split('/'))).equals(readFileSync(path.join(trial, ...e.path.split('/')))), `${e.path} staged byte-identical`);
    }
    assert.deepEqual(Object.keys(staged.delivery.files).sort(), all);
    for (const f of Object.values(staged.delivery.files)) assert.deepEqual({ status: f.status, attempts: f.attempts, last_error: f.last_error }, { status: 'pending', attempts: 0, last_error: null });
    assert.equal(staged.delivery.status, 'pending');
    assert.deepEqual(readJson(path.join(dir, '.probe-capture.json')), JSON.parse(JSON.stringify(staged)));
    const [st0] = stagingStatus(dir);
    assert.equal(st0.dir, dir);
    assert.equal(st0.staged.delivery.status, 'pending');
    assert.deepEqual(listAll(path.join(run)).filter((p) => p.startsWith('trials')), [], 'staging writes nothing into a run');

    // the outage: a regular file where the run's verifier/ directory must go
    const runFiles = path.join(run, 'trials', key, 'files');
    mkdirSync(runFiles, { recursive: true });
    const blocker = path.join(runFiles, 'verifier');
    writeFileSync(blocker, 'not a directory');
    const verifierPaths = all.filter((p) => p.startsWith('verifier/'));
    const others = all.filter((p) => !p.startsWith('verifier/'));
    assert.equal(verifierPaths.length, 3);

    const [r1] = await deliverStaged(dir, { run });
    assert.equal(r1.status, 'failed');
    assert.equal(r1.key, key);
    assert.equal(r1.manifest, null);
    assert.equal(r1.delivered, others.length);
    assert.deepEqual(r1.unconfirmed.map((u) => u.path).sort(), verifierPaths);
    for (const u of r1.unconfirmed) {
      assert.equal(u.status, 'failed', u.path);
      assert.equal(u.attempts, 1, u.path);
      assert.ok(u.last_error && u.last_error.length > 0, `${u.path}: a last error`);
    }
    const s1 = stagingStatus(dir)[0].staged;
    assert.equal(s1.delivery.status, 'failed');
    assert.equal(s1.delivery.attempts, 1);
    assert.match(s1.delivery.last_error ?? '', new RegExp(`${verifierPaths.length} of ${all.length} files not confirmed`));
    for (const p of others) assert.deepEqual([s1.delivery.files[p].status, s1.delivery.files[p].attempts], ['delivered', 1], p);
    for (const p of verifierPaths) assert.deepEqual([s1.delivery.files[p].status, s1.delivery.files[p].attempts], ['failed', 1], p);
    // not listed while files are missing
    assert.equal(existsSync(path.join(run, 'trials', key, 'capture.json')), false);
    assert.deepEqual(RunReader.open(run).trials(), []);
    assert.deepEqual(RunReader.open(run).unfinishedTrials(), [path.join(run, 'trials', key)]);
    assert.equal(RunReader.open(run).spans().length, 0, 'no spans before the capture is complete');
    const listDuring = await probe(['trial', 'list', run]);
    assertCli(listDuring, 0, 'trial list during the outage');
    assert.match(listDuring.stdout, /no trials captured in this run/);
    assert.match(listDuring.stdout, /1 capture\(s\) unfinished/);
    const status = await probe(['trial', 'status', dir]);
    assertCli(status, 0, 'trial status');
    assert.match(status.stdout, /delivery +FAILED +\d+\/\d+ files confirmed, 1 attempt/);
    for (const p of verifierPaths) assert.match(status.stdout, new RegExp(`collected +failed \\(attempts 1; .+\\) ${p.replace(/\./g, '\\.')}\\n`), p);

    // the storage is back
    rmSync(blocker);
    const [r2] = await deliverStaged(dir, { run });
    assert.equal(r2.status, 'delivered', JSON.stringify(r2.unconfirmed));
    assert.equal(r2.delivered, all.length);
    assert.deepEqual(r2.unconfirmed, []);
    assert.ok(r2.manifest);
    const s2 = stagingStatus(dir)[0].staged;
    assert.equal(s2.delivery.status, 'delivered');
    assert.equal(s2.delivery.last_error, null);
    for (const p of others) assert.equal(s2.delivery.files[p].attempts, 1, `${p}: confirmed before, not copied again`);
    for (const p of verifierPaths) assert.deepEqual([s2.delivery.files[p].status, s2.delivery.files[p].attempts, s2.delivery.files[p].last_error], ['delivered', 2, null], p);

    const reader = RunReader.open(run);
    const [t] = reader.trials();
    assert.equal(reader.trials().length, 1);
    assert.equal(t.capture_key, key);
    assert.equal(t.step, 7);
    assert.deepEqual(t.labels, { sample: 's7', group: 'g7' });
    assert.deepEqual(t.source.context, context);
    assert.equal(t.source.staged_at, staged.source.staged_at);
    assert.equal(t.ledger.counts.collected, all.length);
    assert.deepEqual(listFiles(t.files_dir), all);
    const stagedSha = new Map(staged.collection.entries.map((e) => [e.path, e.sha256]));
    for (const p of all) assert.equal(sha256(readFileSync(path.join(t.files_dir, ...p.split('/')))), stagedSha.get(p), `${p}: delivered bytes = staged sha256`);
    const spans = reader.spans();
    assert.equal(spans.length, t.spans.count);
    assertUniqueIds(spans);
    assert.equal(ofKind(spans, 'turn').length, 12);

    // the same as a direct capture of the trial
    const { run: direct } = await setup('deliver-direct');
    const dm = await captureTrial(trial, { run: direct, step: 7, sampleId: 's7', groupId: 'g7', context });
    assert.deepEqual(t.ledger.entries, dm.ledger.entries);
    assert.deepEqual(t.spans.by_kind, dm.spans.by_kind);
    assert.deepEqual(t.trajectories, dm.trajectories);

    // delivering a third time changes nothing
    const [r3] = await deliverStaged(dir, { run });
    assert.equal(r3.status, 'delivered');
    assert.deepEqual(r3.unconfirmed, []);
    const s3 = stagingStatus(dir)[0].staged;
    assert.deepEqual(
      Object.fromEntries(Object.entries(s3.delivery.files).map(([p, f]) => [p, [f.status, f.attempts]])),
      Object.fromEntries(Object.entries(s2.delivery.files).map(([p, f]) => [p, [f.status, f.attempts]])),
    );
    const reader3 = RunReader.open(run);
    assert.equal(reader3.trials().length, 1);
    assert.deepEqual(sortIds(reader3.spans()), sortIds(spans));
    assert.deepEqual(listFiles(path.join(run, 'trials')), listFiles(path.join(run, 'trials')).filter((p) => !path.basename(p).startsWith('.')), 'no temporaries left');
    assert.deepEqual(listFiles(t.files_dir), all);
  });

  it('a staged file changed after staging fails with a sha256 mismatch; the rest is delivered, nothing listed', async () => {
    const { root, run } = await setup('deliver-tamper');
    const trial = path.join(root, 'tamper__T4mp3r0');
    stagedTrial(trial, 'tamper-1', 'tamper__T4mp3r0');
    const { dir, staged } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 1 });
    writeFileSync(path.join(dir, 'files', 'agent', 'log.txt'), 'tampered with\n');
    const [r] = await deliverStaged(dir, { run });
    assert.equal(r.status, 'failed');
    assert.deepEqual(r.unconfirmed.map((u) => u.path), ['agent/log.txt']);
    assert.match(r.unconfirmed[0].last_error ?? '', /sha256/);
    assert.match(r.unconfirmed[0].last_error ?? '', /changed since it was collected/);
    assert.equal(r.delivered, Object.keys(staged.delivery.files).length - 1);
    assert.deepEqual(RunReader.open(run).trials(), []);
    assert.equal(existsSync(path.join(run, 'trials', staged.capture_key, 'files', 'agent', 'log.txt')), false, 'the changed bytes were not written');
    // CLI: deliver exits 1 while anything is unconfirmed
    const cli = await probe(['trial', 'deliver', dir, '--run', run]);
    assertCli(cli, 1, 'trial deliver (tampered)');
    assert.match(cli.stdout, /NOT DELIVERED/);
    assert.match(cli.stdout, /failed +agent\/log\.txt +\(attempts 2; .*sha256/);
  });

  it('a spool of two staged trials is delivered in one call; probe trial status and deliver report both', async () => {
    const { root, run } = await setup('deliver-spool');
    const spool = path.join(root, 'spool');
    const a = path.join(root, 'alpha__A0000');
    const b = path.join(root, 'beta__B0000');
    stagedTrial(a, 'alpha-1', 'alpha__A0000');
    stagedTrial(b, 'beta-1', 'beta__B0000');
    const sa = await stageTrial(a, { to: spool, step: 1, sampleId: 'a' });
    const sb = await stageTrial(b, { to: spool, step: 2, sampleId: 'b' });
    assert.deepEqual(stagingStatus(spool).map((s) => s.dir).sort(), [sa.dir, sb.dir].sort());

    // block beta's verifier/ only: the CLI delivers alpha, reports beta, exits 1
    const bRun = path.join(run, 'trials', sb.staged.capture_key, 'files');
    mkdirSync(bRun, { recursive: true });
    writeFileSync(path.join(bRun, 'verifier'), 'blocker');
    const d1 = await probe(['trial', 'deliver', spool, '--run', run]);
    assertCli(d1, 1, 'deliver with beta blocked');
    assert.match(d1.stdout, /^delivered "alpha__A0000" into .* at step 1: /m);
    assert.match(d1.stdout, new RegExp(`^NOT DELIVERED ${sb.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: \\d+ files confirmed, 3 not:`, 'm'));
    const st = await probe(['trial', 'status', spool]);
    assertCli(st, 0, 'trial status');
    assert.match(st.stdout, /delivery +DELIVERED/);
    assert.match(st.stdout, /delivery +FAILED/);
    assert.ok(st.stdout.includes(sa.dir) && st.stdout.includes(sb.dir));
    assert.match(st.stdout, /"alpha__A0000" +step 1/);
    assert.match(st.stdout, /"beta__B0000" +step 2/);
    const stJson = JSON.parse((await probe(['trial', 'status', spool, '--json'])).stdout) as (StagedCapture & { dir: string })[];
    assert.deepEqual(stJson.map((s) => [s.capture_key, s.delivery.status]).sort(), [
      [sa.staged.capture_key, 'delivered'],
      [sb.staged.capture_key, 'failed'],
    ]);
    assert.deepEqual(RunReader.open(run).trials().map((t) => t.capture_key), [sa.staged.capture_key]);

    rmSync(path.join(bRun, 'verifier'));
    const results = await deliverStaged(spool, { run });
    assert.deepEqual(results.map((r) => [r.key, r.status]).sort(), [
      [sa.staged.capture_key, 'delivered'],
      [sb.staged.capture_key, 'delivered'],
    ]);
    const trials = RunReader.open(run).trials();
    assert.deepEqual(trials.map((t) => [t.capture_key, t.step, t.sample_id]), [
      [sa.staged.capture_key, 1, 'a'],
      [sb.staged.capture_key, 2, 'b'],
    ]);
    const spans = RunReader.open(run).spans();
    assert.equal(spans.length, trials[0].spans.count + trials[1].spans.count);
    assertUniqueIds(spans);
    const d2 = await probe(['trial', 'deliver', spool, '--run', run]);
    assertCli(d2, 0, 'deliver again');
    assert.equal(RunReader.open(run).spans().length, spans.length);
  });

  it('probe trial stage, then probe trial deliver and status', async () => {
    const { root, run } = await setup('stage-cli');
    const trial = path.join(root, 'cli-staged__C5000');
    stagedTrial(trial, 'cli-staged-1', 'cli-staged__C5000');
    const spool = path.join(root, 'spool');
    const key = expectedKey('cli-staged__C5000', 'id:cli-staged-1');
    const st = await probe(['trial', 'stage', trial, '--step', '3', '--to', spool, '--sample-id', 's3', '--context', 'rollout_id=r3']);
    assertCli(st, 0, 'trial stage');
    const n = listFiles(trial).length;
    assert.equal(st.stdout, `staged "cli-staged__C5000" for step 3 in ${path.join(spool, key)}: reward=0.5; files ${n} collected (${st.stdout.match(/collected \(([^)]*)\)/)?.[1]}); delivery pending\n`);
    const before = await probe(['trial', 'status', spool]);
    assert.match(before.stdout, /delivery +PENDING +0\/\d+ files confirmed/);
    const d = await probe(['trial', 'deliver', spool, '--run', run, '--json']);
    assertCli(d, 0, 'trial deliver --json');
    const res = JSON.parse(d.stdout) as { key: string; status: string; delivered: number; unconfirmed: unknown[]; spans: number }[];
    assert.deepEqual(res.map((r) => [r.key, r.status, r.delivered, r.unconfirmed.length]), [[key, 'delivered', n, 0]]);
    const t = RunReader.open(run).trial(key);
    assert.equal(res[0].spans, t.spans.count);
    assert.equal(t.step, 3);
    assert.equal(t.sample_id, 's3');
    assert.deepEqual(t.source.context, { rollout_id: 'r3' });
    const afterStatus = await probe(['trial', 'status', spool]);
    assert.match(afterStatus.stdout, new RegExp(`delivery +DELIVERED +${n}/${n} files confirmed, 1 attempt into ${run.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  it('a staged record naming a capture key or file outside the run is refused before anything is written', async () => {
    const { root, run } = await setup('deliver-record');
    const trial = path.join(root, 'rec__R0000');
    stagedTrial(trial, 'rec-1', 'rec__R0000');
    const { dir } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 0 });
    const recordFile = path.join(dir, '.probe-capture.json');
    const original = readFileSync(recordFile, 'utf8');
    const rec = JSON.parse(original) as StagedCapture;
    writeFileSync(recordFile, JSON.stringify({ ...rec, capture_key: '../../escape' }));
    await rejectsCode(deliverStaged(dir, { run }), 'RLPROBE_BAD_MANIFEST', /capture_key/);
    writeFileSync(recordFile, JSON.stringify({ ...rec, delivery: { ...rec.delivery, files: { ...rec.delivery.files, '../../x.txt': { status: 'pending', attempts: 0, last_error: null, delivered_at: null } } } }));
    await rejectsCode(deliverStaged(dir, { run }), 'RLPROBE_BAD_MANIFEST', /x\.txt/);
    assert.equal(existsSync(path.join(run, 'trials')), false);
    assert.equal(existsSync(path.join(root, 'escape')), false);
    assert.equal(existsSync(path.join(run, 'x.txt')), false);
    writeFileSync(recordFile, original);
    const [r] = await deliverStaged(dir, { run });
    assert.equal(r.status, 'delivered');
  });

  it('deliver into a directory that is not a run fails and says so; bad staging dirs are refused', async () => {
    const { root } = await setup('deliver-notrun');
    const trial = path.join(root, 'nr__N0000');
    stagedTrial(trial, 'nr-1', 'nr__N0000');
    const { dir } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 0 });
    const notRun = path.join(root, 'not-a-run');
    mkdirSync(notRun);
    const [r] = await deliverStaged(dir, { run: notRun });
    assert.equal(r.status, 'failed');
    assert.match(stagingStatus(dir)[0].staged.delivery.last_error ?? '', /not a run directory/);
    assert.deepEqual(readdirSync(notRun), [], 'nothing written into it');
    await rejectsCode(deliverStaged(path.join(root, 'empty-spool-missing'), { run: notRun }), 'RLPROBE_NOT_FOUND');
    await rejectsCode(deliverStaged(dir, { run: '' }), 'RLPROBE_INVALID_OPTION', /run/);
  });
});

// =====================================================================================

describe('reading captures back', () => {
  it('trials({step, stepRange, sampleId}), trial(ref) by key, id, name and prefix; ambiguous and unknown refs', async () => {
    const { root, run } = await setup('reader');
    const mk = async (name: string, id: string, step: number, sampleId: string) => {
      const dir = path.join(root, 'jobs', `${name}-${id}`);
      writeTree(dir, { 'result.json': { id, trial_name: name, verifier_result: { rewards: { reward: step / 10 } } }, 'agent/trajectory.json': smallAtif(id, [0, 1, 2]) });
      return captureTrial(dir, { run, step, sampleId });
    };
    const a = await mk('alpha__A1', 'id-a', 1, 'sa');
    const b = await mk('beta__B1', 'id-b', 2, 'sb');
    const c = await mk('gamma__C1', 'id-c', 2, 'sc');
    const a2 = await mk('alpha__A1', 'id-a-retry', 3, 'sa2');
    const reader = RunReader.open(run);
    assert.deepEqual(reader.trials().map((t) => t.capture_key), [a.capture_key, b.capture_key, c.capture_key, a2.capture_key]);
    assert.deepEqual(reader.trials({ step: 2 }).map((t) => t.capture_key).sort(), [b.capture_key, c.capture_key].sort());
    assert.deepEqual(reader.trials({ stepRange: [1, 2] }).map((t) => t.step), [1, 2, 2]);
    assert.deepEqual(reader.trials({ sampleId: 'sc' }).map((t) => t.capture_key), [c.capture_key]);
    assert.deepEqual(reader.trials({ step: 99 }), []);
    throwsCode(() => reader.trials({ step: -1 }), 'RLPROBE_INVALID_QUERY');
    throwsCode(() => reader.trials({ bogus: 1 } as never), 'RLPROBE_INVALID_QUERY');

    const t = reader.trial(b.capture_key);
    assert.equal(t.capture_key, b.capture_key);
    assert.equal(t.rank, 0);
    assert.equal(t.run_dir, run);
    assert.equal(t.dir, path.join(run, 'trials', b.capture_key));
    assert.equal(t.files_dir, path.join(run, 'trials', b.capture_key, 'files'));
    assert.equal(reader.trial('id-c').capture_key, c.capture_key);
    assert.equal(reader.trial('gamma__C1').capture_key, c.capture_key);
    assert.equal(reader.trial('beta').capture_key, b.capture_key, 'a unique key prefix');
    assert.equal(reader.trial('id-a-retry').capture_key, a2.capture_key);
    throwsCode(() => reader.trial('alpha__A1'), 'RLPROBE_INVALID_QUERY', /names 2 captures/);
    throwsCode(() => reader.trial('alpha'), 'RLPROBE_INVALID_QUERY');
    throwsCode(() => reader.trial('delta'), 'RLPROBE_NOT_FOUND');
    throwsCode(() => reader.trial('no-such-id'), 'RLPROBE_NOT_FOUND');

    // the spans of the captures are spans of the run
    const at2 = reader.spans({ step: 2 });
    assert.equal(at2.length, b.spans.count + c.spans.count);
    assert.deepEqual(at2.filter((s) => s.kind === 'rollout').map((s) => s.name).sort(), ['beta__B1', 'gamma__C1']);
    assert.equal(reader.spans({ kind: 'rollout', label: { sample: 'sb' } }).length, 1);
    const counts = Object.fromEntries(reader.spanCounts().map((k) => [k.kind, k.spans]));
    assert.deepEqual(counts, { rollout: 4, tool_call: 4 * 3, turn: 4 * 3 });
    const tree = reader.trialSpanTree(reader.trial(c.capture_key));
    assert.ok(tree);
    assert.equal(tree.span.kind, 'rollout');
    assert.equal(tree.span.name, 'gamma__C1');
    assert.deepEqual(tree.children.map((n) => n.span.kind), ['turn', 'turn', 'turn']);
  });

  it('captures beside the recorder\'s own spans; after compactRun every span is read exactly once', async () => {
    const root = tempDir('rlprobe-trials-compact-');
    const run = path.join(root, 'run');
    const rec = new Recorder(run, { ...FAST, runId: 'compact' });
    try {
      for (let step = 0; step < 3; step++) {
        rec.logStep({ step, loss: step });
        await rec.span('rollout', `own-${step}`, async () => {
          await rec.span('turn', `own-turn-${step}`, () => undefined, { step });
        }, { step });
        assert.ok(rec.flushSync(10_000));
      }
      const trial = path.join(root, PASS_NAME);
      buildPassingTrial(trial);
      const m = await rec.captureTrial(trial, { step: 1, sampleId: 's1' });
      const own = 6;
      const before = RunReader.open(run).spans();
      assert.equal(before.length, own + m.spans.count);
      const c = compactRun(run);
      assert.ok(c.spans, 'the recorder spans were compacted');
      const afterCompact = RunReader.open(run);
      const spans = afterCompact.spans();
      assert.equal(spans.length, own + m.spans.count, 'every span once after compaction');
      assertUniqueIds(spans);
      assert.deepEqual(sortIds(spans), sortIds(before));
      assert.equal(afterCompact.spans({ step: 1 }).length, 2 + m.spans.count);
      assert.equal(afterCompact.trials().length, 1);
      assert.ok(existsSync(path.join(run, 'trials', m.capture_key, 'spans.parquet')), 'compaction leaves the capture span file alone');
      const rolloutCount = afterCompact.spanCounts().find((k) => k.kind === 'rollout');
      assert.equal(rolloutCount?.spans, 3 + 1);
    } finally {
      await rec.close();
    }
    const closed = RunReader.open(run);
    assert.equal(closed.spans().length, 6 + closed.trials()[0].spans.count, 'and after close');
    assertUniqueIds(closed.spans());
  });
});

// =====================================================================================

describe('probe trial …', () => {
  it('capture prints the summary line; list --json parses; show prints the ledger and the span tree', async () => {
    const { root, run } = await setup('cli');
    const trial = path.join(root, PASS_NAME);
    const expected = buildPassingTrial(trial);
    const r = await probe(['trial', 'capture', trial, '--run', run, '--step', '212', '--sample-id', 's-17', '--group-id', 'g-4', '--context', 'rollout_id=r-9', '--context', 'note=a=b']);
    assertCli(r, 0, 'trial capture');
    const key = expectedKey(PASS_NAME, `id:${PASS_ID}`);
    assert.equal(r.stderr, '');
    assert.match(
      r.stdout,
      new RegExp(
        `^captured "${PASS_NAME}" into ${path.join(run, 'trials', key).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at step 212: finished; reward=1 tests_passed=0\\.75; files ${expected.size} collected \\([^)]*\\); ATIF-v1\\.7 12 turns, 12 tool calls; 25 spans\\n$`,
      ),
    );

    const list = await probe(['trial', 'list', run, '--json']);
    assertCli(list, 0, 'trial list --json');
    const trials = JSON.parse(list.stdout) as TrialCapture[];
    assert.equal(trials.length, 1);
    assert.equal(trials[0].capture_key, key);
    assert.equal(trials[0].step, 212);
    assert.deepEqual(trials[0].source.context, { rollout_id: 'r-9', note: 'a=b' });
    assert.deepEqual(trials[0].labels, { sample: 's-17', group: 'g-4' });
    assert.deepEqual(JSON.parse((await probe(['trial', 'list', run, '--json', '--step', '3'])).stdout), []);
    const text = await probe(['trial', 'list', run]);
    assert.match(text.stdout, new RegExp(`^step 212  ${key.replace(/\./g, '\\.')}  "${PASS_NAME}"  finished  reward=1 tests_passed=0\\.75  \\[sample=s-17 group=g-4\\]`, 'm'));

    const show = await probe(['trial', 'show', run, PASS_NAME]);
    assertCli(show, 0, 'trial show');
    for (const [p, x] of expected) assert.match(show.stdout, new RegExp(`collected +${x.role} .* ${p.replace(/\./g, '\\.')}`), `ledger line for ${p}`);
    assert.match(show.stdout, /files: 11 collected/);
    assert.match(show.stdout, /\nspans \(25\):\n/);
    assert.match(show.stdout, /context +rollout_id=r-9 note=a=b/);
    assert.match(show.stdout, /agent_execution/);
    const showJson = JSON.parse((await probe(['trial', 'show', run, key.slice(0, 10), '--json'])).stdout) as TrialCapture & { span_tree: { kind: string; children: { kind: string }[] } };
    assert.equal(showJson.capture_key, key);
    assert.equal(showJson.span_tree.kind, 'rollout');
    assert.equal(showJson.span_tree.children.length, 12);

    const info = await probe(['info', run, '--json']);
    assertCli(info, 0, 'info --json');
    assert.equal((JSON.parse(info.stdout) as { trials: number }).trials, 1);
  });

  describe('bad options name the field and the value', () => {
    const cases: [string[], RegExp[]][] = [
      // `--step -1` is split by clipanion itself ("-1" reads as an option: "Not enough
      // arguments to option --step"), before any validator runs; `--step=-1` reaches ours
      [['--step=-1'], [/--step/, /-1/]],
      [['--step', 'abc'], [/--step/, /abc/]],
      [['--step', '1', '--context', 'novalue'], [/^probe: invalid --context "novalue"/m]],
      [['--step', '1', '--context', '=x'], [/^probe: invalid --context "=x"/m]],
      [['--step', '1', '--max-file-bytes', '0'], [/--max-file-bytes/, /\b0\b/]],
    ];
    for (const [opts, patterns] of cases) {
      it(`probe trial capture … ${opts.join(' ')}`, async () => {
        const { root, run } = await setup('cli-bad');
        const trial = path.join(root, 'bad__B4d0000');
        writeTree(trial, { 'result.json': { id: 'bad-1', trial_name: 'bad__B4d0000' } });
        const r = await probe(['trial', 'capture', trial, '--run', run, ...opts]);
        const out = r.stdout + r.stderr;
        assert.equal(r.code, 64, `exit ${r.code}\n${out}`);
        assert.match(out, /invalid/i, `says the value is invalid: ${out}`);
        for (const p of patterns) assert.match(out, p, out);
        assert.equal(existsSync(path.join(run, 'trials')), false, 'nothing captured by a refused command');
      });
    }

    it('the API: invalid <what> option <field>: … (got <value>)', async () => {
      const { root, run } = await setup('api-bad');
      const trial = path.join(root, 'bad__B4d0000');
      writeTree(trial, { 'result.json': { id: 'bad-1', trial_name: 'bad__B4d0000' } });
      await rejectsCode(captureTrial(trial, { run, step: -1 }), 'RLPROBE_INVALID_OPTION', /^invalid capture option step: .*\(got -1\)$/);
      await rejectsCode(captureTrial(trial, { run, step: 1.5 }), 'RLPROBE_INVALID_OPTION', /^invalid capture option step: .*\(got 1\.5\)$/);
      await rejectsCode(captureTrial(trial, { run, step: 1, context: { k: 5 as unknown as string } }), 'RLPROBE_INVALID_OPTION', /^invalid capture option context\.k: .*\(got 5\)$/);
      await rejectsCode(captureTrial(trial, { run, step: 1, maxFileBytes: 0 }), 'RLPROBE_INVALID_OPTION', /^invalid capture option maxFileBytes: .*\(got 0\)$/);
      await rejectsCode(captureTrial(trial, { run, step: 1, sampleId: '' }), 'RLPROBE_INVALID_OPTION', /^invalid capture option sampleId: .*\(got ""\)$/);
      await rejectsCode(captureTrial(trial, { run: '', step: 1 }), 'RLPROBE_INVALID_OPTION', /^invalid capture option run:/);
      await rejectsCode(captureTrial(trial, { run, step: 1, bogus: true } as never), 'RLPROBE_INVALID_OPTION', /^invalid capture option/);
      await rejectsCode(stageTrial(trial, { to: path.join(root, 'spool'), step: -2 }), 'RLPROBE_INVALID_OPTION', /^invalid stage option step: .*\(got -2\)$/);
      assert.equal(existsSync(path.join(root, 'spool')), false, 'nothing staged by refused options');
      assert.equal(existsSync(path.join(run, 'trials')), false, 'nothing written by refused options');
    });
  });

  it('capture into a directory that is not a run, or of a directory that is not a trial, exits 1 and says which', async () => {
    const { root, run } = await setup('cli-notrun');
    const trial = path.join(root, 'ok__Ok00000');
    writeTree(trial, { 'result.json': { id: 'ok-1', trial_name: 'ok__Ok00000' } });
    const notRun = path.join(root, 'plain');
    mkdirSync(notRun);
    const r1 = await probe(['trial', 'capture', trial, '--run', notRun, '--step', '0']);
    assertCli(r1, 1, 'capture into a non-run');
    assert.match(r1.stderr, /^probe: not a run directory/);
    assert.deepEqual(readdirSync(notRun), [], 'nothing written into the non-run');

    const notTrial = path.join(root, 'random-dir');
    writeTree(notTrial, { 'notes.txt': 'hello\n', 'sub/x.json': {} });
    const r2 = await probe(['trial', 'capture', notTrial, '--run', run, '--step', '0']);
    assertCli(r2, 1, 'capture of a non-trial');
    assert.match(r2.stderr, /^probe: not a Harbor trial directory/);
    const r3 = await probe(['trial', 'capture', path.join(root, 'does-not-exist'), '--run', run, '--step', '0']);
    assertCli(r3, 1, 'capture of a missing dir');
    assert.match(r3.stderr, /not a trial directory/);
    assert.equal(existsSync(path.join(run, 'trials')), false);
    await rejectsCode(captureTrial(notTrial, { run, step: 0 }), 'RLPROBE_NOT_A_TRIAL');
    await rejectsCode(captureTrial(trial, { run: notRun, step: 0 }), 'RLPROBE_NOT_A_RUN');

    const show = await probe(['trial', 'show', run, 'nothing']);
    assertCli(show, 1, 'show of an unknown capture');
    assert.match(show.stderr, /^probe: no captured trial "nothing"/);
  });
});

// =====================================================================================

describe('the shared Harbor fixtures', () => {
  const fixtures = [
    ['claude-code-atif-v1.7', CLAUDE_CODE],
    ['context-summarization-subagents-v1.7', SUBAGENTS],
    ['linear-history-continuation-v1.7', CONTINUATION],
    ['timeout-v1.6', TIMEOUT],
  ] as const;

  async function captureFixture(label: string, fixture: string) {
    const { root, run } = await setup(`fx-${label}`);
    const trial = path.join(root, `${label}__Fx00000`);
    writeTree(trial, { 'result.json': { id: `fx-${label}`, trial_name: `${label}__Fx00000`, verifier_result: { rewards: { reward: 1 } } } });
    const agentFiles = copyFixtureAgent(fixture, trial);
    const m = await captureTrial(trial, { run, step: 0 });
    return { run, m, agentFiles, doc: readJson(path.join(fixture, 'agent', 'trajectory.json')) };
  }

  for (const [label, fixture] of fixtures) {
    it(`${label}: captures without error, every agent file collected, expanded`, async () => {
      const { run, m, agentFiles, doc } = await captureFixture(label, fixture);
      for (const p of agentFiles) {
        const e = entryOf(m, p);
        assert.equal(e.status, 'collected', p);
        assert.equal(e.role, 'trajectory', p);
        assert.equal(e.sha256, sha256(readFileSync(path.join(fixture, ...p.split('/')))), p);
      }
      assert.equal(m.trajectories.length, 1);
      const [tj] = m.trajectories;
      assert.equal(tj.path, 'agent/trajectory.json');
      assert.equal(tj.status, 'expanded');
      assert.equal(tj.format, doc.schema_version);
      assert.equal(tj.session_id, doc.session_id);
      const spans = captureSpans(run, m);
      assertUniqueIds(spans);
      assert.equal(spans.length, m.spans.count);
      assert.equal(ofKind(spans, 'turn').length, tj.turns);
      assert.equal(ofKind(spans, 'tool_call').length, tj.tool_calls);
      assert.ok(tj.turns >= atifCounts(doc).turns);
    });
  }

  it('subagents: the three summarization files are role trajectory, referenced, and trajectory spans', async () => {
    const { run, m } = await captureFixture('subagents', SUBAGENTS);
    const subs = ['agent/trajectory.summarization-1-answers.json', 'agent/trajectory.summarization-1-questions.json', 'agent/trajectory.summarization-1-summary.json'];
    for (const p of subs) assert.equal(entryOf(m, p).role, 'trajectory', p);
    assert.deepEqual([...m.trajectories[0].referenced_files].sort(), subs);
    assert.equal(m.trajectories[0].subtrajectories, 3);
    const tspans = ofKind(captureSpans(run, m), 'trajectory');
    assert.deepEqual(tspans.map((s) => s.attributes.file).sort(), subs);
    for (const s of tspans) assert.equal(s.attributes.role, 'subagent');
    let subTurns = 0;
    for (const p of subs) subTurns += atifCounts(readJson(path.join(SUBAGENTS, ...p.split('/')))).turns;
    assert.equal(m.trajectories[0].turns, atifCounts(readJson(path.join(SUBAGENTS, 'agent', 'trajectory.json'))).turns + subTurns);
  });

  it('continuation: trajectory.cont-1.json is read and its turns are spans', async () => {
    const { run, m, doc } = await captureFixture('continuation', CONTINUATION);
    const cont = readJson(path.join(CONTINUATION, 'agent', 'trajectory.cont-1.json'));
    assert.ok(m.trajectories[0].referenced_files.includes('agent/trajectory.cont-1.json'));
    assert.equal(entryOf(m, 'agent/trajectory.cont-1.json').role, 'trajectory');
    assert.equal(m.trajectories[0].turns, atifCounts(doc).turns + atifCounts(cont).turns);
    const spans = captureSpans(run, m);
    const contSpan = ofKind(spans, 'trajectory').find((s) => s.attributes.file === 'agent/trajectory.cont-1.json');
    assert.ok(contSpan, 'a trajectory span for the continuation file');
    assert.equal(contSpan.attributes.role, 'continuation');
    assert.equal(spans.filter((s) => s.kind === 'turn' && s.parent_id === contSpan.span_id).length, atifCounts(cont).turns);
    assert.equal(m.trajectories[0].prompt_tokens, cont.final_metrics.total_prompt_tokens);
  });
});

// =====================================================================================

describe('a capture replaced by a later one of the same trial', () => {
  it('captured unfinished, then finished: the provisional capture (keyed by directory) is replaced, one rollout remains', async () => {
    const { root, run } = await setup('supersede');
    const name = 'late-task__L4t3000';
    const trial = path.join(root, name);
    writeTree(trial, { 'config.json': { trial_name: name }, 'agent/log.txt': 'running\n' });
    const early = await captureTrial(trial, { run, step: 2 });
    assert.equal(early.trial.id, null);
    assert.equal(early.capture_key, expectedKey(name, `dir:${name}`));
    writeTree(trial, { 'result.json': { id: 'late-1', trial_name: name, verifier_result: { rewards: { reward: 1 } } } });
    const done = await captureTrial(trial, { run, step: 2 });
    assert.equal(done.capture_key, expectedKey(name, 'id:late-1'));
    const reader = RunReader.open(run);
    assert.deepEqual(reader.trials().map((t) => t.capture_key), [done.capture_key]);
    assert.equal(existsSync(path.join(run, 'trials', early.capture_key)), false);
    const rollouts = reader.spans({ kind: 'rollout' });
    assert.equal(rollouts.length, 1);
    assert.equal(rollouts[0].status, 'ok');
    // another trial's unfinished capture (a different directory) is left alone
    const other = path.join(root, 'other-task__0th3r00');
    writeTree(other, { 'config.json': { trial_name: 'other-task__0th3r00' } });
    await captureTrial(other, { run, step: 2 });
    await captureTrial(trial, { run, step: 2 });
    assert.equal(RunReader.open(run).trials().length, 2);
  });

  it('delivered over an earlier capture whose file became a directory: the stale file is removed, the delivery completes', async () => {
    const { root, run } = await setup('deliver-shape');
    const trial = path.join(root, 'shape__D3l1v3r');
    writeTree(trial, { 'result.json': { id: 'shape-d', trial_name: 'shape__D3l1v3r' }, 'artifacts/out': 'a file first\n', 'agent/old.txt': 'gone later\n' });
    const first = await captureTrial(trial, { run, step: 1 });
    rmSync(path.join(trial, 'artifacts', 'out'));
    rmSync(path.join(trial, 'agent', 'old.txt'));
    writeTree(trial, { 'artifacts/out/report.txt': 'now a directory\n' });
    const { dir } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 1 });
    const [r] = await deliverStaged(dir, { run });
    assert.equal(r.status, 'delivered', JSON.stringify(r.unconfirmed));
    const [t] = RunReader.open(run).trials();
    assert.equal(t.capture_key, first.capture_key);
    assert.deepEqual(listFiles(t.files_dir), ['artifacts/out/report.txt', 'result.json']);
  });
});

describe('tampered or broken records', () => {
  it('a staged collected entry without a sha256, or a file list that does not match, is refused; a spool delivers the rest', async () => {
    const { root, run } = await setup('deliver-tampered-record');
    const spool = path.join(root, 'spool');
    const good = path.join(root, 'good__G00d000');
    const bad = path.join(root, 'bad__B4dRec0');
    writeTree(good, { 'result.json': { id: 'good-1', trial_name: 'good__G00d000' }, 'agent/log.txt': 'good\n' });
    writeTree(bad, { 'result.json': { id: 'bad-1', trial_name: 'bad__B4dRec0' }, 'agent/log.txt': 'bad\n' });
    await stageTrial(good, { to: spool, step: 1 });
    const { dir } = await stageTrial(bad, { to: spool, step: 1 });
    const recordFile = path.join(dir, '.probe-capture.json');
    const rec = JSON.parse(readFileSync(recordFile, 'utf8')) as StagedCapture;
    const unhashed = { ...rec, collection: { ...rec.collection, entries: rec.collection.entries.map((e) => (e.path === 'agent/log.txt' ? { ...e, sha256: null } : e)) } };
    writeFileSync(recordFile, JSON.stringify(unhashed));
    await rejectsCode(deliverStaged(dir, { run }), 'RLPROBE_BAD_MANIFEST', /agent\/log\.txt.*sha256/);
    const extra = { ...rec, collection: { ...rec.collection, entries: rec.collection.entries.filter((e) => e.path !== 'agent/log.txt') } };
    writeFileSync(recordFile, JSON.stringify(extra));
    await rejectsCode(deliverStaged(dir, { run }), 'RLPROBE_BAD_MANIFEST', /does not match the collected files/);
    // in a spool, the bad record is reported and the good one delivered
    const results = await deliverStaged(spool, { run });
    assert.deepEqual(results.map((r) => r.status).sort(), ['delivered', 'failed']);
    const failed = results.find((r) => r.status === 'failed')!;
    assert.match(failed.error ?? '', /does not match the collected files/);
    assert.deepEqual(RunReader.open(run).trials().map((t) => t.trial.name), ['good__G00d000']);
  });

  it('an unreadable capture.json is skipped and reported; the other captures still read', async () => {
    const { root, run } = await setup('broken-manifest');
    const a = path.join(root, 'a__A000000');
    const b = path.join(root, 'b__B000000');
    writeTree(a, { 'result.json': { id: 'a-1', trial_name: 'a__A000000' } });
    writeTree(b, { 'result.json': { id: 'b-1', trial_name: 'b__B000000' } });
    await captureTrial(a, { run, step: 1 });
    const mb = await captureTrial(b, { run, step: 1 });
    writeFileSync(path.join(run, 'trials', mb.capture_key, 'capture.json'), '{"kind": "harbor_trial", "step": 1}');
    const reader = RunReader.open(run);
    assert.deepEqual(reader.trials().map((t) => t.trial.name), ['a__A000000']);
    assert.equal(reader.brokenTrials().length, 1);
    assert.match(reader.brokenTrials()[0].error, /incomplete/);
    const list = await probe(['trial', 'list', run]);
    assertCli(list, 0, 'trial list with a broken capture');
    assert.match(list.stdout, /unreadable capture .*b__B000000/);
    const info = await probe(['info', run]);
    assertCli(info, 0, 'info with a broken capture');
  });

  it('a failed step of a multi-step trial (step_results) marks its trial_step span and the rollout as errors', async () => {
    const { root, run } = await setup('step-results');
    const trial = path.join(root, 'ms__St3pR00');
    writeTree(trial, {
      'result.json': {
        id: 'ms-1',
        trial_name: 'ms__St3pR00',
        exception_info: null,
        step_results: [
          { step_name: 'setup', verifier_result: { rewards: { reward: 1 } }, exception_info: null, agent_execution: { started_at: '2026-01-01T00:00:00Z', finished_at: '2026-01-01T00:01:00Z' } },
          { step_name: 'solve', verifier_result: null, exception_info: { exception_type: 'AgentTimeoutError', exception_message: 'timed out after 600 s' } },
        ],
      },
      'steps/setup/verifier/reward.txt': '1\n',
      'steps/solve/agent/log.txt': 'ran out of time\n',
    });
    const m = await captureTrial(trial, { run, step: 3 });
    assert.deepEqual(m.trial.steps, ['setup', 'solve']);
    assert.equal(m.trial.step_results[1].exception?.type, 'AgentTimeoutError');
    const spans = captureSpans(run, m);
    const steps = ofKind(spans, 'trial_step');
    assert.deepEqual(steps.map((s) => [s.name, s.status]), [['setup', 'ok'], ['solve', 'error']]);
    assert.match(steps[1].error ?? '', /^AgentTimeoutError: timed out/);
    assert.equal(steps[0].attributes.reward, 1);
    assert.equal(steps[0].start_time, Date.parse('2026-01-01T00:00:00Z') / 1000);
    const rollout = rolloutOf(spans);
    assert.equal(rollout.status, 'error');
    assert.match(rollout.error ?? '', /^AgentTimeoutError: step solve: timed out/);
    const show = await probe(['trial', 'list', run]);
    assert.match(show.stdout, /FAILED in step solve: AgentTimeoutError/);
  });

  it('a declared file under a skipped (linked or hidden) directory is skipped, not missing', async () => {
    const { root, run } = await setup('declared-under-skipped');
    const trial = path.join(root, 'dec__D3cl000');
    const outside = path.join(root, 'outside');
    writeTree(outside, { 'x.json': { secret: 1 } });
    writeTree(trial, {
      'result.json': { id: 'dec-1', trial_name: 'dec__D3cl000' },
      'artifacts/manifest.json': [
        { source: '/a/x.json', destination: 'artifacts/lnk/x.json', type: 'file', status: 'ok' },
        { source: '/b/y.json', destination: 'artifacts/.cache/y.json', type: 'file', status: 'ok' },
      ],
      'artifacts/.cache/y.json': { y: 1 },
    });
    symlinkSync(outside, path.join(trial, 'artifacts', 'lnk'));
    const m = await captureTrial(trial, { run, step: 0 });
    for (const [p, under] of [['artifacts/lnk/x.json', 'artifacts/lnk'], ['artifacts/.cache/y.json', 'artifacts/.cache']]) {
      const e = entryOf(m, p);
      assert.equal(e.status, 'skipped', `${p}: ${e.reason}`);
      assert.match(e.reason ?? '', new RegExp(`under ${under.replace('.', '\\.')}`));
    }
  });
});

describe('more edges', () => {
  it('a recapture interrupted after it hid the manifest hides the spans too', async () => {
    const { root, run } = await setup('hidden-spans');
    const trial = path.join(root, 'hid__H1dd3n0');
    writeTree(trial, { 'result.json': { id: 'hid-1', trial_name: 'hid__H1dd3n0' } });
    cpSync(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'), path.join(trial, 'agent', 'trajectory.json'), { recursive: true });
    const m = await captureTrial(trial, { run, step: 5 });
    assert.equal(RunReader.open(run).spans({ step: 5 }).length, m.spans.count);
    const { beginCapture } = await import('../ts/trials/run-store.js');
    beginCapture(run, m.capture_key); // what a killed recapture leaves
    const reader = RunReader.open(run);
    assert.deepEqual(reader.trials(), []);
    assert.deepEqual(reader.spans({ step: 5 }), []);
    assert.deepEqual(reader.spanCounts(), []);
    await captureTrial(trial, { run, step: 5 });
    assert.equal(RunReader.open(run).spans({ step: 5 }).length, m.spans.count);
  });

  it('an inert rank captures into the run directory itself', async () => {
    const { root, run } = await setup('inert-rank');
    const trial = path.join(root, 'rank__R4nk300');
    writeTree(trial, { 'result.json': { id: 'rank-3', trial_name: 'rank__R4nk300' } });
    const rec = new Recorder(run, { ...FAST, rank: 3, captureEnvironment: false });
    assert.equal(rec.active, false);
    const m = await rec.captureTrial(trial, { step: 2, sampleId: 's-r3' });
    rec.close();
    assert.ok(existsSync(path.join(run, 'trials', m.capture_key, 'capture.json')));
    assert.deepEqual(RunReader.open(run).trials().map((t) => [t.trial.name, t.rank]), [['rank__R4nk300', 0]]);
  });

  it('expand --file replaces the trajectory of its agent directory only, and later expands keep the choice', async () => {
    const { root, run } = await setup('expand-file');
    const trial = path.join(root, 'msx__Exp4nd0');
    const atif = readFileSync(path.join(CLAUDE_CODE, 'agent', 'trajectory.json'), 'utf8');
    writeTree(trial, {
      'result.json': { id: 'msx-1', trial_name: 'msx__Exp4nd0' },
      'steps/a/agent/trajectory.json': JSON.parse(atif),
      'steps/b/agent/trajectory.json': JSON.parse(atif),
      'steps/b/agent/alt.json': smallAtif('alt-session', [1, 0, 2]),
    });
    const m1 = await captureTrial(trial, { run, step: 1 });
    assert.deepEqual(m1.trajectories.map((t) => t.path), ['steps/a/agent/trajectory.json', 'steps/b/agent/trajectory.json']);
    const m2 = expandCapture(run, m1.capture_key, 'steps/b/agent/alt.json');
    assert.deepEqual(m2.trajectories.map((t) => [t.path, t.status]), [['steps/a/agent/trajectory.json', 'expanded'], ['steps/b/agent/alt.json', 'expanded']]);
    const m3 = expandCapture(run, m1.capture_key);
    assert.deepEqual(m3.trajectories.map((t) => t.path), m2.trajectories.map((t) => t.path));
    assert.equal(m3.spans.count, m2.spans.count);
    const turns = ofKind(captureSpans(run, m3), 'turn').length;
    assert.equal(turns, m2.trajectories.reduce((n, t) => n + t.turns, 0));
  });
});

describe('one writer per capture', () => {
  it('a capture held by a live writer is refused; a lock left by a dead process is taken over', async () => {
    const { root, run } = await setup('lock');
    const trial = path.join(root, 'lock__L0ck000');
    writeTree(trial, { 'result.json': { id: 'lock-1', trial_name: 'lock__L0ck000' }, 'agent/log.txt': 'x\n' });
    const key = expectedKey('lock__L0ck000', 'id:lock-1');
    const lock = path.join(run, 'trials', `.${key}.lock`);
    mkdirSync(path.dirname(lock), { recursive: true });
    const host = (await import('node:os')).hostname();
    // held by a live process on this host (this one)
    writeFileSync(lock, JSON.stringify({ pid: process.pid, host, since: '2026-01-01T00:00:00Z' }));
    await rejectsCode(captureTrial(trial, { run, step: 1 }), 'RLPROBE_STATE', new RegExp(`capture ${key.replace(/\./g, '\\.')} is being written by pid ${process.pid}`));
    assert.equal(existsSync(path.join(run, 'trials', key, 'files')), false, 'nothing written while locked');
    // two captures of the same trial at once from one process: one wins, the other is refused
    rmSync(lock);
    const both = await Promise.allSettled([captureTrial(trial, { run, step: 1 }), captureTrial(trial, { run, step: 1 })]);
    assert.deepEqual(both.map((b) => b.status).sort(), ['fulfilled', 'rejected']);
    // a lock from a process that died on this host
    writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 12345, host, since: '2026-01-01T00:00:00Z' }));
    const m = await captureTrial(trial, { run, step: 2 });
    assert.equal(m.step, 2);
    assert.equal(existsSync(lock), false, 'released');
    // held on another host: respected
    writeFileSync(lock, JSON.stringify({ pid: 1, host: 'elsewhere', since: '2026-01-01T00:00:00Z' }));
    assert.throws(() => expandCapture(run, key), /being written by pid 1 on elsewhere/);
    rmSync(lock);
    assert.equal(RunReader.open(run).trials().length, 1);
  });
});

// =====================================================================================
// issue 15: turn times, malformed results, hostile directories, bounds, delivery cost

describe('turns without timestamps', () => {
  it('are laid end to end over the trial\'s time and flagged time_estimated, not each given the whole trial', async () => {
    const { root, run } = await setup('untimed');
    const trial = path.join(root, 'untimed__Unt1m3d');
    const doc = smallAtif('untimed', [0, 1, 1, 2]);
    for (const s of doc.steps as Record<string, unknown>[]) delete s.timestamp;
    writeTree(trial, {
      'result.json': { id: 'untimed-1', trial_name: 'untimed__Unt1m3d', started_at: '2025-11-01T10:00:00Z', finished_at: '2025-11-01T10:10:00Z' },
      'agent/trajectory.json': doc,
    });
    const m = await captureTrial(trial, { run, step: 1 });
    const spans = captureSpans(run, m);
    const t0 = Date.UTC(2025, 10, 1, 10, 0, 0) / 1000;
    const width = 600 / 4; // four turns over the ten minutes
    const turns = ofKind(spans, 'turn').sort((a, b) => a.start_time - b.start_time);
    assert.deepEqual(
      turns.map((t) => [t.name, t.start_time, t.end_time, t.attributes.time_estimated]),
      [0, 1, 2, 3].map((i) => [turns[i].name, t0 + i * width, t0 + (i + 1) * width, true]),
    );
    assert.deepEqual(turns.map((t) => t.name), ['user #1', 'agent #2', 'agent #3', 'agent #4']);
    // a turn's tool calls share its estimated range
    const byId = new Map(spans.map((s) => [s.span_id, s]));
    const calls = ofKind(spans, 'tool_call');
    assert.equal(calls.length, 4);
    for (const c of calls) {
      const turn = byId.get(c.parent_id!)!;
      assert.deepEqual([c.start_time, c.end_time, c.attributes.time_estimated], [turn.start_time, turn.end_time, true], c.name);
    }
  });

  it('a trial without an end (unfinished): all at the start, flagged, never spread past what is known', async () => {
    const { root, run } = await setup('untimed-open');
    const trial = path.join(root, 'open__0pen000');
    const doc = smallAtif('open', [0, 0, 0]);
    for (const s of doc.steps as Record<string, unknown>[]) delete s.timestamp;
    writeTree(trial, { 'config.json': { trial_name: 'open__0pen000' }, 'agent/trajectory.json': doc });
    const m = await captureTrial(trial, { run, step: 1 });
    const spans = captureSpans(run, m);
    const rollout = rolloutOf(spans);
    assert.equal(rollout.end_time, null);
    for (const t of ofKind(spans, 'turn')) assert.deepEqual([t.start_time, t.end_time, t.attributes.time_estimated], [rollout.start_time, rollout.start_time, true], t.name);
  });
});

describe('a malformed result.json is reported, never silently ignored', () => {
  /** Captures a trial whose result.json is `result` (text as is, else JSON). */
  async function captureWithResult(label: string, result: string | Record<string, unknown>, extra: Record<string, string | Record<string, unknown>> = {}): Promise<{ m: CaptureManifest; run: string }> {
    const { root, run } = await setup(`badresult-${label}`);
    const trial = path.join(root, `bad-result__${label}`);
    writeTree(trial, { 'config.json': { trial_name: `bad-result__${label}` }, 'agent/log.txt': 'x\n', ...extra });
    writeFileSync(path.join(trial, 'result.json'), typeof result === 'string' ? result : JSON.stringify(result));
    return { m: await captureTrial(trial, { run, step: 1 }), run };
  }

  function warned(m: CaptureManifest, ...patterns: RegExp[]): void {
    const warnings = m.trial.warnings;
    assert.ok(Array.isArray(warnings), 'trial.warnings is a list');
    for (const p of patterns) assert.ok(warnings.some((w) => p.test(w)), `a warning matching ${p}; got ${JSON.stringify(warnings)}`);
  }

  it('truncated: says it is not valid JSON and why; result.json is still collected', async () => {
    const full = JSON.stringify(passResult('trunc-1', 'bad-result__trunc'));
    const { m } = await captureWithResult('trunc', full.slice(0, Math.floor(full.length / 2)));
    warned(m, /^result\.json: not valid JSON \(.+\); nothing read from it$/);
    assert.equal(m.trial.id, null);
    assert.equal(entryOf(m, 'result.json').status, 'collected');
  });

  it('wrong types: each field named with its value, the rest still read', async () => {
    const { m } = await captureWithResult('types', {
      id: 12345,
      trial_name: ['not', 'a', 'string'],
      task_name: 'task-ok',
      started_at: 17,
      finished_at: 'yesterday',
      agent_info: 'claude',
      verifier_result: { rewards: { reward: 1 } },
      step_results: { a: 1 },
    });
    warned(
      m,
      /^result\.json: id is a number \(12345\), expected a string; ignored$/,
      /^result\.json: trial_name is an array, expected a string; ignored$/,
      /^result\.json: started_at is a number \(17\), expected a timestamp string; ignored$/,
      /^result\.json: finished_at "yesterday" is not a timestamp; ignored$/,
      /^result\.json: agent_info is a string \("claude"\), expected an object; ignored$/,
      /^result\.json: step_results is an object, expected a list; ignored$/,
    );
    assert.equal(m.trial.task_name, 'task-ok');
    assert.deepEqual(m.trial.rewards, { reward: 1 });
    assert.equal(m.trial.name, 'bad-result__types', 'the name from config.json');
  });

  it('exception_info as a string: kept as the exception message, the rollout an error, and said so', async () => {
    const { m, run } = await captureWithResult('exstr', { id: 'exstr-1', trial_name: 'bad-result__exstr', exception_info: 'AgentTimeoutError: took too long' });
    warned(m, /^result\.json: exception_info is a string, expected an object; kept as the exception message$/);
    assert.equal(m.trial.exception?.message, 'AgentTimeoutError: took too long');
    const rollout = rolloutOf(captureSpans(run, m));
    assert.equal(rollout.status, 'error');
    assert.match(rollout.error ?? '', /took too long/);
  });

  it('string rewards: a numeric string is read as its number and said so; rewards as one string is reported', async () => {
    const { m } = await captureWithResult('rstr', { id: 'rstr-1', trial_name: 'bad-result__rstr', verifier_result: { rewards: { reward: '0.75', passed: 'yes' } } });
    warned(m, /^result\.json: verifier_result\.rewards\.reward is a string \("0\.75"\); read as 0\.75$/, /^result\.json: verifier_result\.rewards\.passed is a string \("yes"\), not a number; dropped$/);
    assert.deepEqual(m.trial.rewards, { reward: 0.75 });
    const { m: m2 } = await captureWithResult('rstr2', { id: 'rstr-2', trial_name: 'bad-result__rstr2', verifier_result: { rewards: '1.0' } }, { 'verifier/reward.txt': '1\n' });
    warned(m2, /^result\.json: verifier_result\.rewards is a string \("1\.0"\), expected an object of named numbers; ignored$/);
    assert.equal(m2.trial.reward_source, 'verifier/reward.txt');
  });

  it('nested rewards: each nested value is named and dropped; trial show prints the warnings', async () => {
    const { m, run } = await captureWithResult('nested', { id: 'nested-1', trial_name: 'bad-result__nested', verifier_result: { rewards: { reward: { value: 1 }, tests: [1, 0], ok: 1 } } });
    warned(m, /^result\.json: verifier_result\.rewards\.reward is an object, not a number; dropped$/, /^result\.json: verifier_result\.rewards\.tests is an array, not a number; dropped$/);
    assert.deepEqual(m.trial.rewards, { ok: 1 });
    const show = await probe(['trial', 'show', run, m.capture_key]);
    assertCli(show, 0, 'trial show');
    assert.match(show.stdout, /warnings +result\.json: verifier_result\.rewards\.reward is an object, not a number; dropped/);
  });
});

describe('hostile trial directories', () => {
  it('a Harbor job directory is refused, naming it and the trial directories to capture instead', async () => {
    const { root, run } = await setup('jobdir');
    const job = path.join(root, 'jobs', '2025-11-01__10-00-00');
    writeTree(job, {
      'config.json': { job_name: '2025-11-01__10-00-00', jobs_dir: 'jobs', n_attempts: 1, agents: [{ name: 'claude-code' }], datasets: [] },
      'result.json': { id: 'job-1', started_at: '2025-11-01T10:00:00Z', finished_at: '2025-11-01T11:00:00Z', n_total_trials: 2, stats: { n_trials: 2, n_errors: 0 } },
      'job.log': 'job log\n',
    });
    for (const t of ['hello-world__AbC1234', 'fix-bug__XyZ9876']) {
      writeTree(path.join(job, t), { 'config.json': { trial_name: t }, 'result.json': { id: `${t}-id`, trial_name: t }, 'agent/log.txt': 'x\n', 'trial.log': 'y\n' });
    }
    const why = new RegExp(`^${job.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is a Harbor job directory, not a trial: it holds 2 trial directories \\(fix-bug__XyZ9876, hello-world__AbC1234\\); capture each of them`);
    await rejectsCode(captureTrial(job, { run, step: 1 }), 'RLPROBE_NOT_A_TRIAL', why);
    await rejectsCode(stageTrial(job, { to: path.join(root, 'spool'), step: 1 }), 'RLPROBE_NOT_A_TRIAL', why);
    const cli = await probe(['trial', 'capture', job, '--run', run, '--step', '1']);
    assertCli(cli, 1, 'capture of a job directory');
    assert.match(cli.stderr, /is a Harbor job directory/);
    assert.match(cli.stderr, new RegExp(`e\\.g\\. probe trial capture ${path.join(job, 'fix-bug__XyZ9876').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.equal(existsSync(path.join(run, 'trials')), false, 'nothing captured');
    // one of its trials is captured as usual
    const m = await captureTrial(path.join(job, 'hello-world__AbC1234'), { run, step: 1 });
    assert.equal(m.trial.id, 'hello-world__AbC1234-id');
  });

  it('a declared directory that exists but is empty is reported empty, not missing', async () => {
    const { root, run } = await setup('emptydir');
    const trial = path.join(root, 'empty__Empty00');
    writeTree(trial, {
      'result.json': { id: 'empty-1', trial_name: 'empty__Empty00' },
      'artifacts/manifest.json': [
        { source: '/out', destination: 'artifacts/out', type: 'directory', status: 'ok' },
        { source: '/hid', destination: 'artifacts/hid', type: 'directory', status: 'ok' },
        { source: '/gone', destination: 'artifacts/gone', type: 'directory', status: 'ok' },
      ],
      'artifacts/hid/.only-hidden': 'h\n',
    });
    mkdirSync(path.join(trial, 'artifacts', 'out'));
    const m = await captureTrial(trial, { run, step: 1 });
    const out = entryOf(m, 'artifacts/out');
    assert.equal(out.status, 'empty');
    assert.match(out.reason ?? '', /declared by artifacts\/manifest\.json; the directory exists but holds no files/);
    const hid = entryOf(m, 'artifacts/hid');
    assert.equal(hid.status, 'empty');
    assert.match(hid.reason ?? '', /holds no collectable file \(1 skipped entry under it\)/);
    assert.equal(entryOf(m, 'artifacts/hid/.only-hidden').status, 'skipped');
    assert.equal(entryOf(m, 'artifacts/gone').status, 'missing', 'a directory that is not there is still missing');
    assert.deepEqual(m.ledger.counts, { collected: 2, missing: 1, skipped: 1, unknown: 1, empty: 2 });
    const show = await probe(['trial', 'show', run, m.capture_key]);
    assert.match(show.stdout, /files: 2 collected \([^)]*\), 1 missing, 1 skipped, 1 unknown, 2 empty/);
  });

  it('a 255-byte file name is collected (capture and delivery); a name that is not UTF-8 is skipped with the reason, never missing', async () => {
    const { root, run } = await setup('names');
    const trial = path.join(root, 'names__N4mes00');
    const long = `${'n'.repeat(251)}.txt`;
    assert.equal(Buffer.byteLength(long), 255);
    writeTree(trial, { 'result.json': { id: 'names-1', trial_name: 'names__N4mes00' }, [`artifacts/${long}`]: 'long name\n' });
    // a file and a directory whose names are not valid UTF-8 (Latin-1 bytes)
    const dirB = Buffer.from(path.join(trial, 'artifacts'));
    writeFileSync(Buffer.concat([dirB, Buffer.from('/caf\xe9.txt', 'latin1')]), 'latin-1 name\n');
    mkdirSync(Buffer.concat([dirB, Buffer.from('/d\xefr', 'latin1')]));
    writeFileSync(Buffer.concat([dirB, Buffer.from('/d\xefr/inner.txt', 'latin1')]), 'inner\n');

    const m = await captureTrial(trial, { run, step: 1 });
    const l = entryOf(m, `artifacts/${long}`);
    assert.equal(l.status, 'collected', l.reason ?? '');
    assert.equal(readFileSync(path.join(run, 'trials', m.capture_key, 'files', 'artifacts', long), 'utf8'), 'long name\n');
    const bad = m.ledger.entries.filter((e) => e.path.startsWith('artifacts/') && e.path !== `artifacts/${long}`);
    assert.deepEqual(bad.map((e) => [e.path, e.status]), [['artifacts/caf\\xe9.txt', 'skipped'], ['artifacts/d\\xefr', 'skipped']]);
    for (const e of bad) assert.match(e.reason ?? '', /name is not valid UTF-8 \(bytes [0-9a-f ]+\): not representable in the ledger; (not entered|not copied)/, e.path);
    assert.equal(m.ledger.counts.missing, 0);

    const { dir } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 1 });
    const run2 = await makeRun(path.join(root, 'run2'), 'names-2');
    const [d] = await deliverStaged(dir, { run: run2 });
    assert.equal(d.status, 'delivered', JSON.stringify(d.unconfirmed));
    assert.equal(readFileSync(path.join(run2, 'trials', m.capture_key, 'files', 'artifacts', long), 'utf8'), 'long name\n');
  });

  it('a run directory inside the trial directory is skipped with the reason, not captured into itself', async () => {
    const root = tempDir('rlprobe-trials-runinside-');
    const trial = path.join(root, 'inside__Ins1de0');
    writeTree(trial, { 'result.json': { id: 'inside-1', trial_name: 'inside__Ins1de0' }, 'agent/log.txt': 'x\n' });
    const run = await makeRun(path.join(trial, 'probe-run'), 'inside');
    const m = await captureTrial(trial, { run, step: 1 });
    const e = entryOf(m, 'probe-run');
    assert.equal(e.status, 'skipped');
    assert.match(e.reason ?? '', /the run directory this capture writes into: not entered/);
    noEntry(m, /^probe-run\//);
    assert.deepEqual(listFiles(path.join(run, 'trials', m.capture_key, 'files')), ['agent/log.txt', 'result.json']);
    // capturing again does not pick up the first capture either
    const m2 = await captureTrial(trial, { run, step: 1 });
    assert.equal(m2.ledger.counts.collected, 2);
    // a staging directory inside the trial: the same, once it exists (staged a second time)
    const trial2 = path.join(root, 'inside__Ins1de2');
    writeTree(trial2, { 'result.json': { id: 'inside-2', trial_name: 'inside__Ins1de2' }, 'agent/log.txt': 'x\n' });
    await stageTrial(trial2, { to: path.join(trial2, 'spool'), step: 1 });
    const { staged } = await stageTrial(trial2, { to: path.join(trial2, 'spool'), step: 1 });
    assert.match(staged.collection.entries.find((x) => x.path === 'spool')?.reason ?? '', /the staging directory this capture writes into: not entered/);
    assert.equal(staged.collection.counts.collected, 2);
  });

  it('an artifacts manifest that cannot be read is reported: its declarations were not checked', async () => {
    const { root, run } = await setup('badmanifest');
    const trial = path.join(root, 'badman__B4dMan0');
    writeTree(trial, { 'result.json': { id: 'badman-1', trial_name: 'badman__B4dMan0' }, 'artifacts/manifest.json': '[{"source": "/out", "destination": "artifacts/ou', 'steps/s1/artifacts/manifest.json': { artifacts: 'all' } });
    const m = await captureTrial(trial, { run, step: 1 });
    assert.ok(m.trial.warnings.some((w) => /^artifacts\/manifest\.json: not valid JSON \(.+\); its declarations are not checked$/.test(w)), JSON.stringify(m.trial.warnings));
    assert.ok(m.trial.warnings.includes('steps/s1/artifacts/manifest.json: the document is an object, expected a list of artifacts; its declarations are not checked'), JSON.stringify(m.trial.warnings));
    assert.equal(entryOf(m, 'artifacts/manifest.json').status, 'collected');
  });

  it('an unknown ATIF version keeps its version string in the manifest', async () => {
    const { root, run } = await setup('atif-future');
    const trial = path.join(root, 'future__Futur30');
    writeTree(trial, { 'result.json': { id: 'future-1', trial_name: 'future__Futur30' }, 'agent/trajectory.json': { ...smallAtif('f', [1]), schema_version: 'ATIF-v9.9' } });
    const m = await captureTrial(trial, { run, step: 1 });
    const [t] = m.trajectories;
    assert.equal(t.status, 'raw');
    assert.equal(t.format, 'ATIF-v9.9');
    assert.match(t.reason ?? '', /ATIF-v9\.9/);
    const list = await probe(['trial', 'list', run]);
    assert.match(list.stdout, /agent\/trajectory\.json captured raw \(ATIF-v9\.9\)/);
  });
});

describe('bounds', () => {
  /** A trial of `n` artifacts under `a/` (they sort before agent/), `links` symlinks, `absent` declared-absent files. */
  function manyFiles(dir: string, id: string, n: number, links = 0, absent = 0): void {
    const name = path.basename(dir);
    writeTree(dir, {
      'result.json': { id, trial_name: name },
      'config.json': { trial_name: name, artifacts: Array.from({ length: absent }, (_, i) => `/out/absent-${String(i).padStart(3, '0')}.json`) },
      'agent/trajectory.json': smallAtif(id, [1, 1]),
    });
    mkdirSync(path.join(dir, 'a'), { recursive: true });
    for (let i = 0; i < n; i++) writeFileSync(path.join(dir, 'a', `f${String(i).padStart(4, '0')}.txt`), `file ${i}\n`);
    for (let i = 0; i < links; i++) symlinkSync('/etc/hostname', path.join(dir, 'a', `link${String(i).padStart(3, '0')}`));
  }

  it('capture.json lists the first 20 entries per reason and counts the rest; ledger.jsonl holds every entry', async () => {
    const { root, run } = await setup('ledger-bound');
    const trial = path.join(root, 'many__M4ny0000');
    manyFiles(trial, 'many-1', 150, 30, 25);
    const m = await captureTrial(trial, { run, step: 1 });
    const l = m.ledger;
    assert.deepEqual(l.counts, { collected: 153, missing: 25, skipped: 30, unknown: 1, empty: 0 });
    // listed: 20 collected, 20 symlinks, 20 declared-absent, the one unknown reward
    const groups = new Map<string, LedgerEntry[]>();
    for (const e of l.entries) groups.set(`${e.status}/${e.reason_code}`, [...(groups.get(`${e.status}/${e.reason_code}`) ?? []), e]);
    assert.deepEqual(
      [...groups].map(([k, v]) => [k, v.length]).sort(),
      [['collected/null', 20], ['missing/declared_absent', 20], ['skipped/symlink', 20], ['unknown/no_reward', 1]],
    );
    assert.deepEqual(groups.get('collected/null')!.map((e) => e.path), Array.from({ length: 20 }, (_, i) => `a/f${String(i).padStart(4, '0')}.txt`), 'the first 20 by path');
    assert.deepEqual(
      l.by_reason.map((r) => [r.status, r.reason_code, r.count, r.listed]).sort(),
      [['collected', null, 153, 20], ['missing', 'declared_absent', 25, 20], ['skipped', 'symlink', 30, 20], ['unknown', 'no_reward', 1, 1]],
    );
    assert.deepEqual(l.by_role.other, { collected: 150, missing: 0, skipped: 30, unknown: 0, empty: 0 }, 'a/ holds files of no Harbor role');
    assert.deepEqual(l.by_role.artifact, { collected: 0, missing: 25, skipped: 0, unknown: 0, empty: 0 });
    assert.equal(l.total, 209);
    assert.equal(l.omitted, 209 - 61);
    assert.equal(l.entries_file, 'ledger.jsonl');
    // the full list, one entry per line, sorted by path, sha256 for every collected file
    const lines = readFileSync(path.join(run, 'trials', m.capture_key, 'ledger.jsonl'), 'utf8').trimEnd().split('\n').map((x) => JSON.parse(x) as LedgerEntry);
    assert.equal(lines.length, 209);
    assert.deepEqual(lines.map((e) => e.path), lines.map((e) => e.path).sort());
    for (const e of lines.filter((x) => x.status === 'collected')) assert.equal(e.sha256, sha256(readFileSync(path.join(trial, ...e.path.split('/')))), e.path);
    for (const e of l.entries) assert.deepEqual(e, lines.find((x) => x.path === e.path), `${e.path}: listed as in the full ledger`);

    // the manifest does not grow with the number of files
    const size = (r: string, key: string) => statSync(path.join(r, 'trials', key, 'capture.json')).size;
    const trial2 = path.join(root, 'many__M4ny0002');
    manyFiles(trial2, 'many-2', 600, 30, 25);
    const m2 = await captureTrial(trial2, { run, step: 2 });
    assert.ok(Math.abs(size(run, m2.capture_key) - size(run, m.capture_key)) < 200, `capture.json ${size(run, m.capture_key)} vs ${size(run, m2.capture_key)} bytes`);

    // a trajectory past the listed entries is still expanded again (expand reads the full ledger)
    assert.ok(!l.entries.some((e) => e.path === 'agent/trajectory.json'), 'the trajectory is not among the listed entries');
    const again = expandCapture(run, m.capture_key);
    assert.equal(again.trajectories[0].status, 'expanded');
    assert.equal(again.spans.count, m.spans.count);
  });

  it('trial show prints a bounded summary; --files lists every entry', async () => {
    const { root, run } = await setup('show-bound');
    const small = path.join(root, 'many__Sm4ll00');
    const big = path.join(root, 'many__B1g0000');
    manyFiles(small, 'small-1', 100, 5, 2);
    manyFiles(big, 'big-1', 800, 5, 2);
    const ms = await captureTrial(small, { run, step: 1 });
    const mb = await captureTrial(big, { run, step: 2 });
    const a = await probe(['trial', 'show', run, ms.capture_key]);
    const b = await probe(['trial', 'show', run, mb.capture_key]);
    assertCli(b, 0, 'trial show');
    assert.equal(b.stdout.split('\n').length, a.stdout.split('\n').length, 'as many lines for 800 files as for 100');
    assert.match(b.stdout, /files: 803 collected/);
    assert.match(b.stdout, /… 783 more collected \(--files lists all\)/);
    assert.match(b.stdout, /by role +config 1 collected; result 1 collected; trajectory 1 collected; reward 1 unknown; artifact 2 missing; other 800 collected, 5 skipped\n/);
    const all = await probe(['trial', 'show', run, mb.capture_key, '--files']);
    assertCli(all, 0, 'trial show --files');
    for (let i = 0; i < 800; i += 97) assert.match(all.stdout, new RegExp(`collected +other .* a/f${String(i).padStart(4, '0')}\\.txt\\n`));
    assert.equal(all.stdout.match(/^ +collected /gm)?.length, 803);
    const json = JSON.parse((await probe(['trial', 'show', run, mb.capture_key, '--json'])).stdout) as TrialCapture;
    assert.equal(json.ledger.entries.length, 20 + 2 + 5 + 1);
  });

  it('spans beyond maxSpans are cut, counted and reported; the tree stays whole', async () => {
    const { root, run } = await setup('span-cap');
    const trial = path.join(root, PASS_NAME);
    buildPassingTrial(trial);
    const m = await captureTrial(trial, { run, step: 1, maxSpans: 10 });
    assert.equal(m.spans.count, 10);
    assert.equal(m.spans.cut, 15, '25 planned (rollout + 12 turns + 12 tool calls), 10 kept');
    assert.equal(m.trajectories[0].spans_cut, 15);
    assert.ok(m.trajectories[0].warnings.some((w) => /15 spans beyond the limit of 10 spans per capture were not written/.test(w)), JSON.stringify(m.trajectories[0].warnings));
    const spans = captureSpans(run, m);
    assert.equal(spans.length, 10);
    const ids = new Set(spans.map((s) => s.span_id));
    for (const s of spans) if (s.parent_id !== null) assert.ok(ids.has(s.parent_id), `${s.name}: its parent was kept`);
    assert.equal(rolloutOf(spans).attributes.spans_cut, 15);
    const show = await probe(['trial', 'show', run, m.capture_key]);
    assert.match(show.stdout, /\nspans \(10; 15 cut at the limit of 10\):\n/);
    const line = await probe(['trial', 'capture', trial, '--run', run, '--step', '1', '--max-spans', '10']);
    assertCli(line, 0, 'capture --max-spans');
    assert.match(line.stdout, /; 10 spans \(15 cut\)\n$/);
  });

  it('the default limit: a 30,000-step trajectory keeps 50,000 spans and says 10,001 were cut', async () => {
    const { root, run } = await setup('span-cap-default');
    const trial = path.join(root, 'long__L0ng0000');
    writeTree(trial, { 'result.json': { id: 'long-1', trial_name: 'long__L0ng0000' }, 'agent/trajectory.json': smallAtif('long', new Array<number>(30_000).fill(1)) });
    const m = await captureTrial(trial, { run, step: 1 });
    assert.equal(m.trajectories[0].turns, 30_000);
    assert.equal(m.spans.count, 50_000);
    assert.equal(m.spans.cut, 10_001);
  });

  it('a large file is copied in chunks, never held whole in memory', async () => {
    const root = tempDir('rlprobe-trials-bigfile-');
    const trial = path.join(root, 'bigfile__B1gF1le');
    writeTree(trial, { 'result.json': { id: 'bigfile-1', trial_name: 'bigfile__B1gF1le' } });
    const big = path.join(trial, 'artifacts', 'big.bin');
    mkdirSync(path.dirname(big), { recursive: true });
    const fd = openSync(big, 'w');
    for (let i = 0; i < 24; i++) writeSync(fd, randomBytes(8 << 20)); // 192 MiB
    closeSync(fd);
    const code = `
      import { Recorder, captureTrial } from ${JSON.stringify(INDEX_TS)};
      import { readFileSync } from 'node:fs';
      const hwm = () => Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
      const [trial, run] = process.argv.slice(1);
      await new Recorder(run, { runId: 'bigfile', captureEnvironment: false, installHandlers: false }).close();
      const before = hwm();
      const m = await captureTrial(trial, { run, step: 1 });
      console.log(JSON.stringify({ grew: hwm() - before, entry: m.ledger.entries.find((e) => e.path === 'artifacts/big.bin') }));
    `;
    const r = await runScript(code, [trial, path.join(root, 'run')]);
    assert.equal(r.code, 0, r.stderr);
    const { grew, entry } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { grew: number; entry: LedgerEntry };
    assert.equal(entry.status, 'collected');
    assert.equal(entry.size, 192 << 20);
    assert.equal(entry.sha256, sha256(readFileSync(big)));
    assert.ok(grew < 64 << 20, `peak memory grew by ${(grew / 1048576).toFixed(0)} MiB copying a 192 MiB file`);
  });
});

describe('delivery cost', () => {
  it('delivering 1,000 files writes each byte about once, not the staged record once per file', async () => {
    const { root, run } = await setup('deliver-linear');
    const trial = path.join(root, 'lin__L1near00');
    writeTree(trial, { 'result.json': { id: 'lin-1', trial_name: 'lin__L1near00' } });
    mkdirSync(path.join(trial, 'artifacts'), { recursive: true });
    for (let i = 0; i < 1000; i++) writeFileSync(path.join(trial, 'artifacts', `f${String(i).padStart(4, '0')}.txt`), `${i}`.repeat(50));
    const { dir, staged } = await stageTrial(trial, { to: path.join(root, 'spool'), step: 1 });
    const record = statSync(path.join(dir, '.probe-capture.json')).size;
    // probe trial status lists the first 20 pending files, not all 1,001
    const status = await probe(['trial', 'status', dir]);
    assertCli(status, 0, 'trial status');
    assert.equal(status.stdout.match(/^ +collected +pending /gm)?.length, 20);
    assert.match(status.stdout, /… 981 more not collected or not delivered \(--files lists all\)/);
    assert.equal((await probe(['trial', 'status', dir, '--files'])).stdout.match(/^ +collected +pending /gm)?.length, 1001);
    const wchar = () => Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
    const before = wchar();
    const [r] = await deliverStaged(dir, { run });
    const written = wchar() - before;
    assert.equal(r.status, 'delivered');
    assert.equal(r.delivered, 1001);
    const budget = 2 * staged.collection.bytes + 4 * record + (1 << 20);
    assert.ok(written < budget, `delivery wrote ${written} bytes; ${staged.collection.bytes} bytes of files and a ${record}-byte record allow ${budget}`);
    assert.equal(existsSync(path.join(dir, '.probe-capture.journal')), false, 'the journal is folded into the record at the end');
    const s = stagingStatus(dir)[0].staged;
    assert.equal(Object.values(s.delivery.files).filter((f) => f.status === 'delivered').length, 1001);
  });
});
