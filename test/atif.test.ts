/**
 * Trajectory plans: the built-in ATIF parser over Harbor's own trajectories (claude-code
 * v1.7 with parallel tool calls, Terminus-2 subagents by file, a continuation chain, a
 * v1.6 timeout) and over built documents that break every rule a real file breaks (v1.8
 * audio parts, naive and missing timestamps, quoted NaN metrics, unknown keys, orphan
 * results, unresolvable and cyclic references, embedded subagents, runaway nesting); the
 * timestamp helpers; and the parser registry. Expected numbers are computed from the
 * fixture JSON itself, never from the parser's output.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { atifVersion, parseAtif } from '../ts/trials/trajectory/atif.js';
import {
  planTrajectory,
  registerTrajectoryParser,
  trajectoryParser,
  unregisterTrajectoryParser,
} from '../ts/trials/trajectory/plan.js';
import type { PlannedSpan, TrajectoryContext, TrajectoryParser, TrajectoryPlan } from '../ts/trials/trajectory/plan.js';
import { fillTimes, parseTimestamp } from '../ts/trials/trajectory/times.js';
import { ROOT } from './helpers/fixtures.js';

// ---- helpers

/** Read-only Harbor fixtures (see SOURCES.md there). */
const HARBOR = process.env.RLPROBE_HARBOR_FIXTURES ?? path.resolve(ROOT, 'test', 'fixtures', 'harbor');

type Json = Record<string, any>;

function readJson(file: string): Json {
  return JSON.parse(readFileSync(file, 'utf8')) as Json;
}

/** A context over a trial directory on disk, refusing what the real caller refuses. */
function diskCtx(trialDir: string, dir = 'agent'): TrajectoryContext {
  return {
    dir,
    load(rel, fromDir) {
      if (path.posix.isAbsolute(rel) || rel.split('/').includes('..')) return undefined;
      const trialRel = path.posix.normalize(path.posix.join(fromDir, rel));
      try {
        return { doc: JSON.parse(readFileSync(path.join(trialDir, ...trialRel.split('/')), 'utf8')), path: trialRel };
      } catch {
        return undefined;
      }
    },
  };
}

/** A context over in-memory files keyed by trial-relative path (each load a fresh copy, as from disk). */
function memoryCtx(files: Record<string, unknown>, extra: Partial<TrajectoryContext> = {}): TrajectoryContext {
  return {
    dir: 'agent',
    load(rel, fromDir) {
      const trialRel = path.posix.normalize(path.posix.join(fromDir, rel));
      if (!Object.hasOwn(files, trialRel)) return undefined;
      return { doc: JSON.parse(JSON.stringify(files[trialRel])), path: trialRel };
    },
    ...extra,
  };
}

/** Parses a fixture trial's `agent/trajectory.json` through the registry. */
function fixturePlan(trial: string): { doc: Json; plan: TrajectoryPlan; dir: string } {
  const dir = path.join(HARBOR, trial);
  const doc = readJson(path.join(dir, 'agent', 'trajectory.json'));
  const result = planTrajectory(doc, diskCtx(dir));
  assert.equal(result.parser, 'atif');
  assert.deepEqual(result.errors, []);
  assert.ok(result.plan !== null);
  return { doc, plan: result.plan, dir };
}

function byPath(plan: TrajectoryPlan, p: string): PlannedSpan {
  const found = plan.spans.filter((s) => s.path === p);
  assert.equal(found.length, 1, `exactly one span at ${p} (paths: ${plan.spans.map((s) => s.path).join(', ')})`);
  return found[0];
}

function childrenOf(plan: TrajectoryPlan, parent: string | null, kind?: string): PlannedSpan[] {
  return plan.spans.filter((s) => s.parentPath === parent && (kind === undefined || s.kind === kind));
}

function countCalls(steps: Json[]): number {
  return steps.reduce((n, s) => n + (Array.isArray(s.tool_calls) ? s.tool_calls.length : 0), 0);
}

/** The contract every plan keeps, whatever the document. */
function assertWellFormed(plan: TrajectoryPlan): void {
  const seen = new Set<string>();
  for (const s of plan.spans) {
    assert.ok(!seen.has(s.path), `duplicate path ${s.path}`);
    if (s.parentPath !== null) assert.ok(seen.has(s.parentPath), `${s.path}: parent ${s.parentPath} missing or after its child`);
    seen.add(s.path);
    assert.ok(['turn', 'tool_call', 'trajectory'].includes(s.kind), `${s.path}: kind ${s.kind}`);
    if (s.kind === 'tool_call') assert.equal(byPath(plan, s.parentPath as string).kind, 'turn', `${s.path}: a tool call hangs from a turn`);
    if (s.start !== null && s.end !== null) assert.ok(s.end >= s.start, `${s.path}: ends before it starts`);
    assert.ok(s.status === 'ok' || s.status === 'error');
  }
  // JSON-safe: a NaN would come back null, an undefined value would vanish
  assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  assert.equal(plan.summary.turns, plan.spans.filter((s) => s.kind === 'turn').length);
  assert.equal(plan.summary.toolCalls, plan.spans.filter((s) => s.kind === 'tool_call').length);
  assert.equal(plan.summary.subtrajectories, plan.spans.filter((s) => s.kind === 'trajectory').length);
}

const FIXTURES = [
  'claude-code-atif-v1.7/pass',
  'terminus-2-golden/context-summarization-subagents-v1.7',
  'terminus-2-golden/linear-history-continuation-v1.7',
  'terminus-2-golden/timeout-v1.6',
] as const;

// ---- Harbor fixtures

describe('ATIF fixtures', () => {
  test('claude-code v1.7: one turn per step, one span per tool call, parallel results joined by source_call_id', () => {
    const { doc, plan } = fixturePlan('claude-code-atif-v1.7/pass');
    const steps = doc.steps as Json[];
    assert.equal(plan.format, 'ATIF-v1.7');
    assert.deepEqual(plan.warnings, [], 'a clean file needs no leniency');
    assert.deepEqual(plan.referencedFiles, []);

    const turns = plan.spans.filter((s) => s.kind === 'turn');
    assert.equal(steps.length, 12);
    assert.equal(turns.length, 12);
    assert.deepEqual(turns.map((t) => t.path), steps.map((s) => `turn:${s.step_id}`));
    const calls = plan.spans.filter((s) => s.kind === 'tool_call');
    assert.equal(calls.length, countCalls(steps));
    assert.ok(calls.length > 0);

    let parallelSteps = 0;
    for (const step of steps) {
      const turn = byPath(plan, `turn:${step.step_id}`);
      assert.equal(turn.parentPath, null);
      assert.equal(turn.name, `${step.source} #${step.step_id}`);
      assert.equal(turn.attributes.source, step.source);
      const stepCalls: Json[] = step.tool_calls ?? [];
      if (stepCalls.length > 1) parallelSteps += 1;
      assert.equal(childrenOf(plan, turn.path, 'tool_call').length, stepCalls.length);
      for (const call of stepCalls) {
        const span = byPath(plan, `turn:${step.step_id}/tool:${call.tool_call_id}`);
        assert.equal(span.parentPath, turn.path);
        assert.equal(span.name, call.function_name);
        assert.equal(span.status, 'ok');
        assert.equal(span.attributes.tool_call_id, call.tool_call_id);
        const args = JSON.stringify(call.arguments);
        if (args.length <= 4000) assert.equal(span.attributes.arguments, args);
        else assert.ok((span.attributes.arguments as string).startsWith(args.slice(0, 4000)));
        const own = (step.observation.results as Json[]).filter((r) => r.source_call_id === call.tool_call_id);
        assert.equal(own.length, 1);
        assert.equal(span.attributes.result, own[0].content, `${span.path}: its own result, not a sibling's`);
      }
      if (step.metrics !== undefined) {
        for (const k of ['prompt_tokens', 'completion_tokens', 'cached_tokens']) assert.equal(turn.attributes[k], step.metrics[k], `${turn.path} ${k}`);
      }
      if (typeof step.message === 'string' && step.message.length <= 2000) assert.equal(turn.attributes.message, step.message);
    }
    assert.equal(parallelSteps, 2, 'steps 2 and 3 each make two parallel calls');

    // times: each turn from its timestamp to the next one's; the last ends where it starts
    turns.forEach((t, i) => {
      assert.equal(t.start, Date.parse(steps[i].timestamp) / 1000);
      assert.equal(t.end, i + 1 < steps.length ? Date.parse(steps[i + 1].timestamp) / 1000 : t.start);
      assert.equal(t.attributes.time_estimated, undefined);
    });
    for (const c of calls) {
      const turn = byPath(plan, c.parentPath as string);
      assert.deepEqual([c.start, c.end], [turn.start, turn.end]);
    }

    const fm = doc.final_metrics;
    assert.deepEqual(plan.summary, {
      turns: 12,
      toolCalls: countCalls(steps),
      subtrajectories: 0,
      promptTokens: fm.total_prompt_tokens,
      completionTokens: fm.total_completion_tokens,
      cachedTokens: fm.total_cached_tokens,
      costUsd: fm.total_cost_usd,
      agent: doc.agent.name,
      model: doc.agent.model_name,
      sessionId: doc.session_id,
    });
    assert.equal(plan.summary.promptTokens, 485630);
  });

  test('subagents by file: three trajectory subtrees under the compaction step, files listed', () => {
    const { doc, plan, dir } = fixturePlan('terminus-2-golden/context-summarization-subagents-v1.7');
    const steps = doc.steps as Json[];
    const refs: { step: Json; ref: Json }[] = [];
    for (const step of steps) {
      for (const r of step.observation?.results ?? []) for (const ref of r.subagent_trajectory_ref ?? []) refs.push({ step, ref });
    }
    assert.equal(refs.length, 3);
    assert.deepEqual(plan.referencedFiles, refs.map(({ ref }) => `agent/${ref.trajectory_path}`));
    assert.deepEqual(plan.referencedFiles, [
      'agent/trajectory.summarization-1-summary.json',
      'agent/trajectory.summarization-1-questions.json',
      'agent/trajectory.summarization-1-answers.json',
    ]);
    assert.deepEqual(plan.warnings, []);

    let subTurns = 0;
    let subCalls = 0;
    for (const { step, ref } of refs) {
      const sub = readJson(path.join(dir, 'agent', ref.trajectory_path));
      const subPath = `turn:${step.step_id}/sub:${ref.trajectory_path}`;
      const span = byPath(plan, subPath);
      assert.equal(span.kind, 'trajectory');
      assert.equal(span.parentPath, `turn:${step.step_id}`, 'no source_call_id: the subtree hangs from the turn');
      assert.equal(span.attributes.role, 'subagent');
      assert.equal(span.attributes.session_id, ref.session_id);
      assert.equal(span.attributes.file, `agent/${ref.trajectory_path}`);
      assert.equal(span.attributes.format, sub.schema_version);
      assert.equal(span.attributes.unresolved, undefined);
      assert.deepEqual(span.attributes.ref_extra, ref.extra);
      const turns = childrenOf(plan, subPath, 'turn');
      assert.deepEqual(turns.map((t) => t.path), (sub.steps as Json[]).map((s) => `${subPath}/turn:${s.step_id}`));
      const copiedIds = (sub.steps as Json[]).filter((s) => s.is_copied_context === true).map((s) => `${subPath}/turn:${s.step_id}`);
      assert.deepEqual(turns.filter((t) => t.attributes.is_copied_context === true).map((t) => t.path), copiedIds);
      const calls = plan.spans.filter((s) => s.kind === 'tool_call' && s.path.startsWith(`${subPath}/`));
      assert.equal(calls.length, countCalls(sub.steps));
      subTurns += sub.steps.length;
      subCalls += countCalls(sub.steps);
    }
    assert.equal(plan.summary.turns, steps.length + subTurns);
    assert.equal(plan.summary.turns, 24);
    assert.equal(plan.summary.toolCalls, countCalls(steps) + subCalls);
    assert.equal(plan.summary.subtrajectories, 3);

    // step 9's result has no source_call_id: kept on the turn, not joined to the call
    const step9 = steps.find((s) => s.step_id === 9) as Json;
    assert.equal(step9.observation.results[0].source_call_id, undefined);
    const turn9 = byPath(plan, 'turn:9');
    assert.deepEqual(turn9.attributes.observations, [{ content: step9.observation.results[0].content }]);
    assert.equal(byPath(plan, `turn:9/tool:${step9.tool_calls[0].tool_call_id}`).attributes.result, undefined);

    // Harbor's root final_metrics already include the subagents: 6502 in the steps + 1300 in the files
    const stepSum = steps.reduce((n, s) => n + (s.metrics?.prompt_tokens ?? 0), 0);
    const subSum = refs.reduce((n, { ref }) => n + readJson(path.join(dir, 'agent', ref.trajectory_path)).final_metrics.total_prompt_tokens, 0);
    assert.equal(doc.final_metrics.total_prompt_tokens, stepSum + subSum);
    assert.equal(plan.summary.promptTokens, doc.final_metrics.total_prompt_tokens);
    assert.equal(plan.summary.costUsd, doc.final_metrics.total_cost_usd);
  });

  test('continuation: followed into cont:1, copied-context steps marked, missing subagent files unresolved', () => {
    const { doc, plan, dir } = fixturePlan('terminus-2-golden/linear-history-continuation-v1.7');
    const cont = readJson(path.join(dir, 'agent', doc.continued_trajectory_ref));
    assert.equal(doc.continued_trajectory_ref, 'trajectory.cont-1.json');
    assert.deepEqual(plan.referencedFiles, ['agent/trajectory.cont-1.json']);

    const contSpan = byPath(plan, 'cont:1');
    assert.equal(contSpan.kind, 'trajectory');
    assert.equal(contSpan.parentPath, null);
    assert.equal(contSpan.attributes.role, 'continuation');
    assert.equal(contSpan.attributes.file, 'agent/trajectory.cont-1.json');
    const copied = (cont.steps as Json[]).filter((s) => s.is_copied_context === true);
    assert.ok(copied.length > 0);
    assert.equal(contSpan.attributes.copied_context_turns, copied.length);

    assert.deepEqual(childrenOf(plan, null, 'turn').map((t) => t.path), (doc.steps as Json[]).map((s) => `turn:${s.step_id}`));
    const contTurns = childrenOf(plan, 'cont:1', 'turn');
    assert.deepEqual(contTurns.map((t) => t.path), (cont.steps as Json[]).map((s) => `cont:1/turn:${s.step_id}`));
    for (const step of cont.steps as Json[]) {
      const turn = byPath(plan, `cont:1/turn:${step.step_id}`);
      const isCopied = step.is_copied_context === true;
      assert.equal(turn.attributes.is_copied_context, isCopied ? true : undefined);
      assert.equal(turn.name.includes('copied'), isCopied, turn.name);
    }
    // both files number their steps from 1: only the prefix keeps the paths apart
    assert.equal(new Set(plan.spans.map((s) => s.path)).size, plan.spans.length);

    // the root's compaction step names subagent files that this fixture does not ship
    const refs = (doc.steps as Json[]).flatMap((s) => (s.observation?.results ?? []).flatMap((r: Json) => r.subagent_trajectory_ref ?? []));
    assert.equal(refs.length, 3);
    for (const ref of refs) {
      const span = byPath(plan, `turn:5/sub:${ref.trajectory_path}`);
      assert.equal(span.attributes.unresolved, true);
      assert.equal(span.status, 'ok');
      assert.equal(childrenOf(plan, span.path).length, 0);
      assert.ok(plan.warnings.some((w) => w.includes(ref.trajectory_path)), `a warning names ${ref.trajectory_path}`);
    }
    assert.equal(plan.summary.turns, doc.steps.length + cont.steps.length);
    assert.equal(plan.summary.subtrajectories, 4);
    // Terminus-2 writes run-cumulative totals into the continuation (7802 ≥ the first file's 2252)
    assert.ok(cont.final_metrics.total_prompt_tokens > doc.final_metrics.total_prompt_tokens);
    assert.equal(plan.summary.promptTokens, cont.final_metrics.total_prompt_tokens);
    assert.equal(plan.summary.completionTokens, cont.final_metrics.total_completion_tokens);
  });

  test('timeout v1.6: parses; results without source_call_id stay on their turns; no timestamps, no times', () => {
    const { doc, plan } = fixturePlan('terminus-2-golden/timeout-v1.6');
    const steps = doc.steps as Json[];
    assert.equal(plan.format, 'ATIF-v1.6');
    assert.deepEqual(plan.warnings, []);
    assert.equal(plan.summary.turns, steps.length);
    assert.equal(plan.summary.toolCalls, countCalls(steps));
    assert.equal(plan.summary.toolCalls, 3);
    for (const s of plan.spans) assert.deepEqual([s.start, s.end], [null, null], s.path);
    for (const step of steps) {
      const results: Json[] = step.observation?.results ?? [];
      const turn = byPath(plan, `turn:${step.step_id}`);
      if (results.length === 0) assert.equal(turn.attributes.observations, undefined);
      else assert.deepEqual(turn.attributes.observations, results.map((r) => ({ content: r.content })));
      if (step.metrics?.logprobs !== undefined) assert.equal(turn.attributes.logprobs_count, step.metrics.logprobs.length);
    }
    assert.equal(plan.summary.promptTokens, doc.final_metrics.total_prompt_tokens);
    assert.equal(plan.summary.costUsd, doc.final_metrics.total_cost_usd);
  });

  test('every fixture: well formed, and parsing twice gives a deep-equal plan', () => {
    for (const trial of FIXTURES) {
      const a = fixturePlan(trial).plan;
      const b = fixturePlan(trial).plan;
      assertWellFormed(a);
      assert.deepEqual(a, b, trial);
      // arrays in metrics only as lengths: no token ids or logprobs copied into attributes
      for (const s of a.spans) {
        for (const k of ['prompt_token_ids', 'completion_token_ids', 'logprobs']) assert.equal(s.attributes[k], undefined);
      }
    }
  });
});

// ---- built documents

const BASE64 = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA'.repeat(40);

/** An ATIF-v1.8 trajectory with one of each problem. */
function messyDoc(continuation: string): Json {
  return {
    schema_version: 'ATIF-v1.8',
    session_id: 's-18',
    agent: { name: 'voice-agent', version: '0.1', model_name: 'audio-model' },
    continued_trajectory_ref: continuation,
    steps: [
      {
        step_id: 1,
        timestamp: '2026-01-02T03:04:05', // naive
        source: 'user',
        message: [
          { type: 'text', text: 'listen' },
          { type: 'audio', source: { media_type: 'audio/wav', data: BASE64 } },
          { type: 'audio', source: { media_type: 'audio/wav', path: 'audio/q.wav' } },
          { type: 'video', source: { media_type: 'video/mp4', path: 'v.mp4' } },
        ],
        mood: 'curious', // not an ATIF step key
      },
      {
        step_id: 2, // no timestamp
        source: 'agent',
        message: 'ok',
        tool_calls: [
          { tool_call_id: 'c1', function_name: 'transcribe', arguments: { file: 'audio/q.wav' } },
          { tool_call_id: 'c2', function_name: 'delegate', arguments: {} },
        ],
        observation: {
          results: [
            { source_call_id: 'c1', content: [{ type: 'text', text: 'hello' }, { type: 'image', source: { media_type: 'image/png', path: `data:image/png;base64,${BASE64}` } }] },
            { content: 'free-standing note' },
            { source_call_id: 'nope', content: 'orphan' },
            { source_call_id: 'c2', subagent_trajectory_ref: [{ trajectory_path: 'missing/sub.json', session_id: 'x' }] },
          ],
        },
        metrics: { prompt_tokens: '120', completion_tokens: 'NaN', cost_usd: 0.5, logprobs: [-0.1, -0.2], completion_token_ids: [1, 2] },
      },
      { step_id: 3, timestamp: '2026-01-02T03:04:15Z', source: 'agent', message: 'done', metrics: { prompt_tokens: 80, completion_tokens: 7 } },
    ],
  };
}

/** Every number in a value is finite. */
function allFinite(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (value !== null && typeof value === 'object') return Object.values(value).every(allFinite);
  return true;
}

describe('ATIF leniency', () => {
  test('a v1.8 document with audio parts, bad times, a quoted NaN, unknown keys, orphan results, an unresolvable ref', () => {
    const doc = messyDoc('trajectory.json');
    const ctx = memoryCtx({ 'agent/trajectory.json': doc }, { file: 'agent/trajectory.json' });
    const plan = parseAtif(doc, ctx);
    assert.ok(plan !== null);
    assertWellFormed(plan);
    assert.equal(plan.format, 'ATIF-v1.8');
    const text = JSON.stringify(plan);
    assert.ok(!text.includes(BASE64.slice(0, 40)), 'no inline media data in the plan');
    assert.ok(allFinite(plan));

    const t1 = byPath(plan, 'turn:1');
    assert.equal(t1.attributes.message, 'listen');
    assert.deepEqual(t1.attributes.content_parts, [
      { type: 'text', chars: 6 },
      { type: 'audio', media_type: 'audio/wav', inline_data_chars: BASE64.length },
      { type: 'audio', media_type: 'audio/wav', path: 'audio/q.wav' },
      { type: 'video', media_type: 'video/mp4', path: 'v.mp4' },
    ]);
    assert.deepEqual(t1.attributes.extra, { mood: 'curious' });
    assert.ok(plan.warnings.some((w) => w.includes('unknown step key "mood"')), plan.warnings.join('\n'));
    assert.ok(plan.warnings.some((w) => w.includes('"video"')), 'an unknown part type is noted');

    // times: the naive one read as UTC, the missing one inherits its predecessor's
    const at5 = Date.UTC(2026, 0, 2, 3, 4, 5) / 1000;
    const at15 = Date.UTC(2026, 0, 2, 3, 4, 15) / 1000;
    const t2 = byPath(plan, 'turn:2');
    const t3 = byPath(plan, 'turn:3');
    assert.deepEqual([t1.start, t1.end, t2.start, t2.end, t3.start, t3.end], [at5, at5, at5, at15, at15, at15]);
    assert.equal(t2.attributes.time_estimated, true);
    assert.equal(t1.attributes.time_estimated, undefined);
    assert.ok(plan.warnings.some((w) => w.includes('read as UTC')));

    // metrics: the quoted number read, the quoted NaN nulled and noted, arrays as lengths
    assert.equal(t2.attributes.prompt_tokens, 120);
    assert.equal(t2.attributes.completion_tokens, null);
    assert.equal(t2.attributes.logprobs_count, 2);
    assert.equal(t2.attributes.completion_token_ids_count, 2);
    assert.equal(t2.attributes.model_name, 'audio-model', 'an agent step without a model inherits the agent default');
    assert.ok(plan.warnings.some((w) => w.includes('"NaN"') && w.includes('replaced with null')), plan.warnings.join('\n'));

    // results: joined to c1, the rest kept on the turn
    const c1 = byPath(plan, 'turn:2/tool:c1');
    assert.equal(c1.attributes.result, 'hello');
    assert.deepEqual(c1.attributes.result_parts, [
      { type: 'text', chars: 5 },
      { type: 'image', media_type: 'image/png', inline_data_chars: `data:image/png;base64,${BASE64}`.length },
    ]);
    assert.equal(c1.attributes.arguments, '{"file":"audio/q.wav"}');
    assert.deepEqual(t2.attributes.observations, [{ content: 'free-standing note' }, { source_call_id: 'nope', content: 'orphan' }]);
    assert.ok(plan.warnings.some((w) => w.includes('"nope"')));

    // the unresolvable subagent keeps its span, under the call its result answers
    const sub = byPath(plan, 'turn:2/tool:c2/sub:missing%2Fsub.json');
    assert.equal(sub.kind, 'trajectory');
    assert.equal(sub.parentPath, 'turn:2/tool:c2');
    assert.equal(sub.attributes.unresolved, true);
    assert.equal(sub.attributes.trajectory_path, 'missing/sub.json');
    assert.equal(sub.status, 'ok');
    assert.deepEqual([sub.start, sub.end], [t2.start, t2.end]);
    assert.ok(plan.warnings.some((w) => w.includes('missing/sub.json')));

    // the continuation names this very file: a span marked as a cycle, nothing expanded
    const cont = byPath(plan, 'cont:1');
    assert.equal(cont.attributes.cycle, true);
    assert.equal(cont.attributes.unresolved, true);
    assert.equal(childrenOf(plan, 'cont:1').length, 0);
    assert.deepEqual(plan.referencedFiles, []);

    assert.deepEqual(plan.summary, {
      turns: 3,
      toolCalls: 2,
      subtrajectories: 2,
      promptTokens: 200,
      completionTokens: 7,
      cachedTokens: null,
      costUsd: 0.5,
      agent: 'voice-agent',
      model: 'audio-model',
      sessionId: 's-18',
    });
    assert.deepEqual(parseAtif(messyDoc('trajectory.json'), ctx), plan, 'deterministic');
  });

  test('a self-reference is found by content when the context does not name the root file', () => {
    const doc = messyDoc('again.json');
    const plan = parseAtif(doc, memoryCtx({ 'agent/again.json': doc }));
    assert.ok(plan !== null);
    assertWellFormed(plan);
    assert.equal(byPath(plan, 'cont:1').attributes.cycle, true);
    assert.equal(plan.spans.filter((s) => s.path.startsWith('cont:1/')).length, 0);
  });

  test('a continuation chain a → b → a stops at the cycle', () => {
    const seg = (ref: string | undefined, msg: string): Json => ({
      schema_version: 'ATIF-v1.7',
      agent: { name: 'x', version: '1' },
      ...(ref === undefined ? {} : { continued_trajectory_ref: ref }),
      steps: [{ step_id: 1, source: 'agent', message: msg, metrics: { prompt_tokens: 10 } }],
    });
    const files = { 'agent/a.json': seg('b.json', 'a'), 'agent/b.json': seg('a.json', 'b') };
    const plan = parseAtif(seg('a.json', 'root'), memoryCtx(files));
    assert.ok(plan !== null);
    assertWellFormed(plan);
    assert.deepEqual(plan.referencedFiles, ['agent/a.json', 'agent/b.json']);
    assert.deepEqual(
      plan.spans.map((s) => [s.path, s.parentPath]),
      [['turn:1', null], ['cont:1', null], ['cont:1/turn:1', 'cont:1'], ['cont:2', null], ['cont:2/turn:1', 'cont:2'], ['cont:3', null]],
    );
    assert.equal(byPath(plan, 'cont:3').attributes.cycle, true);
    assert.equal(byPath(plan, 'cont:2/turn:1').attributes.message, 'b');
    assert.equal(plan.summary.promptTokens, 30, 'no final_metrics: the three segments add up');
  });

  test('embedded subagents (v1.7): resolved by trajectory_id under the calling tool, spread over its time; unreferenced ones kept', () => {
    const sub = (id: string, n: number): Json => ({
      schema_version: 'ATIF-v1.7',
      trajectory_id: id,
      agent: { name: `helper-${id}`, version: '1' },
      steps: Array.from({ length: n }, (_, i) => ({ step_id: i + 1, source: 'agent', message: `${id}.${i + 1}`, metrics: { prompt_tokens: 5 } })),
    });
    const doc: Json = {
      schema_version: 'ATIF-v1.7',
      agent: { name: 'boss', version: '1' },
      subagent_trajectories: [sub('t1', 2), sub('t2', 1)],
      steps: [
        {
          step_id: 1,
          timestamp: '2026-03-01T00:00:00Z',
          source: 'agent',
          message: 'delegating',
          tool_calls: [{ tool_call_id: 'd1', function_name: 'delegate', arguments: { task: 'x' } }],
          observation: { results: [{ source_call_id: 'd1', content: 'sub done', subagent_trajectory_ref: [{ trajectory_id: 't1', trajectory_path: null }] }] },
          metrics: { prompt_tokens: 100 },
        },
        { step_id: 2, timestamp: '2026-03-01T00:00:10Z', source: 'agent', message: 'done', metrics: { prompt_tokens: 1 } },
      ],
    };
    const plan = parseAtif(doc, memoryCtx({}));
    assert.ok(plan !== null);
    assertWellFormed(plan);
    const t0 = Date.UTC(2026, 2, 1) / 1000;
    const s1 = byPath(plan, 'turn:1/tool:d1/sub:t1');
    assert.equal(s1.parentPath, 'turn:1/tool:d1');
    assert.equal(s1.attributes.embedded, true);
    assert.equal(s1.name, 'subagent helper-t1');
    assert.deepEqual([s1.start, s1.end], [t0, t0 + 10]);
    const inner = childrenOf(plan, s1.path, 'turn');
    assert.deepEqual(inner.map((t) => [t.path, t.start, t.end, t.attributes.time_estimated]), [
      ['turn:1/tool:d1/sub:t1/turn:1', t0, t0 + 5, true],
      ['turn:1/tool:d1/sub:t1/turn:2', t0 + 5, t0 + 10, true],
    ]);
    const s2 = byPath(plan, 'sub:t2');
    assert.equal(s2.parentPath, null);
    assert.equal(s2.attributes.unreferenced, true);
    assert.equal(childrenOf(plan, 'sub:t2', 'turn').length, 1);
    assert.deepEqual(plan.referencedFiles, []);
    assert.equal(plan.summary.promptTokens, 100 + 1 + 2 * 5 + 5, 'no final_metrics: steps plus subagents');
  });

  test('subagent files nested past the cap stop with a truncated span; a file naming itself is a cycle', () => {
    const files: Record<string, Json> = {};
    for (let i = 0; i < 12; i++) {
      files[`agent/subs/s${i}.json`] = {
        schema_version: 'ATIF-v1.5',
        agent: { name: `s${i}`, version: '1' },
        steps: [{ step_id: 1, source: 'system', message: `level ${i}`, observation: { results: [{ subagent_trajectory_ref: [{ trajectory_path: `s${i + 1}.json` }] }] } }],
      };
    }
    const doc: Json = {
      schema_version: 'ATIF-v1.5',
      agent: { name: 'root', version: '1' },
      steps: [
        { step_id: 1, source: 'system', message: 'go', observation: { results: [{ subagent_trajectory_ref: [{ trajectory_path: 'subs/s0.json' }] }] } },
        { step_id: 2, source: 'system', message: 'self', observation: { results: [{ subagent_trajectory_ref: [{ trajectory_path: 'loop.json' }] }] } },
      ],
    };
    files['agent/loop.json'] = { schema_version: 'ATIF-v1.5', agent: { name: 'loop', version: '1' }, steps: [{ step_id: 1, source: 'system', message: 'me again', observation: { results: [{ subagent_trajectory_ref: [{ trajectory_path: 'loop.json' }] }] } }] };
    const plan = parseAtif(doc, memoryCtx(files));
    assert.ok(plan !== null);
    assertWellFormed(plan);
    const subs = plan.spans.filter((s) => s.kind === 'trajectory' && s.path.startsWith('turn:1/'));
    // eight levels expanded, the ninth kept as a truncated span
    assert.equal(subs.length, 9);
    assert.equal(subs.filter((s) => s.attributes.truncated === true).length, 1);
    assert.equal(subs[8].attributes.truncated, true);
    assert.equal(plan.referencedFiles.filter((f) => f.startsWith('agent/subs/')).length, 8);
    assert.ok(plan.warnings.some((w) => w.includes('nested deeper than 8')));
    const loop = byPath(plan, 'turn:2/sub:loop.json');
    assert.equal(childrenOf(plan, loop.path, 'turn').length, 1);
    assert.equal(byPath(plan, 'turn:2/sub:loop.json/turn:1/sub:loop.json').attributes.cycle, true);
  });

  test('step ids: out of order sorted, repeated or missing fall back to array order', () => {
    const steps = (ids: unknown[]): Json => ({
      schema_version: 'ATIF-v1.2',
      agent: { name: 'x', version: '1' },
      steps: ids.map((id, i) => ({ ...(id === undefined ? {} : { step_id: id }), source: 'user', message: `m${i}` })),
    });
    const sorted = parseAtif(steps([2, 1]), memoryCtx({})) as TrajectoryPlan;
    assert.deepEqual(sorted.spans.map((s) => [s.path, s.attributes.message]), [['turn:1', 'm1'], ['turn:2', 'm0']]);
    assert.ok(sorted.warnings.some((w) => w.includes('not in step_id order')));
    const repeated = parseAtif(steps([1, 1, undefined]), memoryCtx({})) as TrajectoryPlan;
    assert.deepEqual(repeated.spans.map((s) => [s.path, s.attributes.message]), [['turn:1', 'm0'], ['turn:2', 'm1'], ['turn:3', 'm2']]);
    assert.ok(repeated.warnings.some((w) => w.includes('array order')));
    assertWellFormed(repeated);
  });

  test('timestamps going backwards are clamped so starts keep step order', () => {
    const doc: Json = {
      schema_version: 'ATIF-v1.0',
      agent: { name: 'x', version: '1' },
      steps: [
        { step_id: 1, source: 'user', message: 'a', timestamp: '2026-01-01T00:00:10Z' },
        { step_id: 2, source: 'agent', message: 'b', timestamp: '2026-01-01T00:00:05Z' },
        { step_id: 3, source: 'agent', message: 'c', timestamp: 'yesterday' },
        { step_id: 4, source: 'agent', message: 'd', timestamp: '2026-01-01T00:00:20+00:00' },
      ],
    };
    const plan = parseAtif(doc, memoryCtx({})) as TrajectoryPlan;
    assertWellFormed(plan);
    const t = Date.UTC(2026, 0, 1) / 1000;
    assert.deepEqual(plan.spans.map((s) => [s.start, s.end]), [[t + 10, t + 10], [t + 10, t + 10], [t + 10, t + 20], [t + 20, t + 20]]);
    assert.deepEqual(plan.spans.map((s) => s.attributes.time_estimated ?? false), [false, true, true, false]);
    assert.ok(plan.warnings.some((w) => w.includes('clamped')));
    assert.ok(plan.warnings.some((w) => w.includes('"yesterday"')));
  });

  test('explicit error marks set status error; content that merely looks like an error does not', () => {
    const doc: Json = {
      schema_version: 'ATIF-v1.7',
      agent: { name: 'x', version: '1' },
      steps: [{
        step_id: 1,
        source: 'agent',
        message: '',
        tool_calls: [
          { tool_call_id: 'a', function_name: 'f', arguments: {} },
          { tool_call_id: 'b', function_name: 'g', arguments: {} },
        ],
        observation: { results: [{ source_call_id: 'a', content: 'Error: boom', extra: { is_error: true } }, { source_call_id: 'b', content: 'Error: not marked' }] },
      }],
    };
    const plan = parseAtif(doc, memoryCtx({})) as TrajectoryPlan;
    assert.deepEqual([byPath(plan, 'turn:1/tool:a').status, byPath(plan, 'turn:1/tool:a').error], ['error', 'marked is_error']);
    assert.deepEqual([byPath(plan, 'turn:1/tool:b').status, byPath(plan, 'turn:1/tool:b').error], ['ok', null]);
  });

  test('garbage never throws: odd types everywhere, a throwing loader, Infinity from a lenient reader', () => {
    const doc: Json = {
      schema_version: 'ATIF-v1.4',
      agent: 'not an object',
      final_metrics: 'nope',
      continued_trajectory_ref: 42,
      subagent_trajectories: 'z',
      steps: [
        null,
        5,
        {
          step_id: 'one',
          source: 7,
          message: { weird: true },
          timestamp: 12,
          tool_calls: 'no',
          observation: { results: 'no' },
          metrics: [1],
          extra: 'str',
          reasoning_content: ['x'],
        },
        {
          step_id: 9,
          source: 'agent',
          message: [null, 'bare string part', { type: 'image' }],
          tool_calls: [null, { function_name: 'noid', arguments: { x: Infinity } }, { tool_call_id: 'd', function_name: 'f' }, { tool_call_id: 'd', function_name: 'f' }],
          observation: { results: [7, { source_call_id: 'd', content: 'first d' }, { subagent_trajectory_ref: { trajectory_path: 'boom.json' } }, { subagent_trajectory_ref: [7, { session_id: 'only' }] }] },
          metrics: { prompt_tokens: Infinity, cost_usd: -Infinity, cached_tokens: true },
          extra: { deep: { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } }, n: NaN, __proto__: 'own key' },
        },
      ],
    };
    const ctx: TrajectoryContext = { dir: 'agent', load: () => { throw new Error('disk on fire'); } };
    const plan = parseAtif(doc, ctx);
    assert.ok(plan !== null);
    assertWellFormed(plan);
    assert.ok(allFinite(plan));
    assert.ok(plan.warnings.length > 5);
    assert.ok(plan.warnings.some((w) => w.includes('disk on fire')));
    const paths = plan.spans.map((s) => s.path);
    assert.deepEqual(paths.filter((p) => p.includes('tool:')), ['turn:4/tool:@1', 'turn:4/tool:d', 'turn:4/tool:d~2']);
    assert.equal(byPath(plan, 'turn:4/tool:d').attributes.result, 'first d');
    assert.equal(byPath(plan, 'turn:4/tool:@1').attributes.arguments, '{"x":null}');
    assert.equal(plan.summary.agent, null);
  });

  test('not ATIF, or an unknown version, is not this parser\'s; a known version without steps is an empty plan', () => {
    const ctx = memoryCtx({});
    for (const doc of [null, 3, 'ATIF-v1.7', [], {}, { schema_version: 'ATIF-v2.0', steps: [] }, { schema_version: 'ATIF-v1.9' }, { schema_version: 7, steps: [] }]) {
      assert.equal(parseAtif(doc, ctx), null, JSON.stringify(doc));
    }
    const empty = parseAtif({ schema_version: 'ATIF-v1.3', agent: { name: 'x', version: '1' } }, ctx) as TrajectoryPlan;
    assert.deepEqual(empty.spans, []);
    assert.ok(empty.warnings.some((w) => w.includes('no steps array')));
    const future = parseAtif({ schema_version: 'ATIF-v1.9', agent: { name: 'x', version: '1' }, steps: [{ step_id: 1, source: 'user', message: 'hi' }] }, ctx) as TrajectoryPlan;
    assert.equal(future.format, 'ATIF-v1.9');
    assert.equal(future.spans.length, 1);
    assert.ok(future.warnings.some((w) => w.includes('unknown ATIF minor version')));
    assert.deepEqual(atifVersion({ schema_version: 'ATIF-v1.0', steps: [] }), { format: 'ATIF-v1.0', known: true });
  });
  test('ctx.maxSpans: the first spans kept (a whole tree), the rest counted exactly; summary and totals cover the whole document', () => {
    const { doc, dir } = fixturePlan('terminus-2-golden/context-summarization-subagents-v1.7');
    const full = planTrajectory(doc, diskCtx(dir)).plan!;
    assert.equal(full.spansCut, undefined, 'nothing cut without a budget');
    for (const max of [0, 1, 7, full.spans.length - 1, full.spans.length]) {
      const cut = planTrajectory(doc, { ...diskCtx(dir), maxSpans: max }).plan!;
      assert.deepEqual(cut.spans, full.spans.slice(0, max), `maxSpans ${max}: the first spans, as planned without a budget`);
      assert.equal(cut.spansCut ?? 0, full.spans.length - max, `maxSpans ${max}`);
      assert.deepEqual(cut.summary, full.summary, `maxSpans ${max}: counts and totals of the whole document`);
      assert.deepEqual(cut.referencedFiles, full.referencedFiles);
      const kept = new Set(cut.spans.map((s) => s.path));
      for (const s of cut.spans) if (s.parentPath !== null) assert.ok(kept.has(s.parentPath), `${s.path}: its parent is kept`);
    }
  });
});

// ---- timestamps

describe('trajectory timestamps', () => {
  test('parseTimestamp reads the ISO forms producers write, naive ones as UTC', () => {
    const base = Date.UTC(2025, 9, 11, 10, 30, 0) / 1000;
    const cases: [unknown, number | null, boolean][] = [
      ['2025-10-11T10:30:00Z', base, false],
      ['2025-10-11T10:30:00.250Z', base + 0.25, false],
      ['2025-10-11T10:30:00.123456+00:00', base + 0.123456, false],
      ['2025-10-11T12:30:00+02:00', base, false],
      ['2025-10-11T02:30:00-0800', base, false],
      ['2025-10-11 10:30:00', base, true],
      ['2025-10-11T10:30:00', base, true],
      ['2025-10-11', Date.UTC(2025, 9, 11) / 1000, true],
      [base, base, false],
      [base * 1000, base, false],
    ];
    for (const [value, t, naive] of cases) {
      const r = parseTimestamp(value);
      assert.ok(r.t !== null && t !== null && Math.abs(r.t - t) < 1e-6, `${String(value)}: ${r.t} ≠ ${t}`);
      assert.equal(r.naive, naive, String(value));
      assert.equal(r.bad, false);
    }
    assert.equal(parseTimestamp('2026-06-16T12:35:24.221Z').t, Date.parse('2026-06-16T12:35:24.221Z') / 1000, 'ms precision agrees with Date.parse to the bit');
    for (const bad of ['yesterday', '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-01-01T25:00:00Z', '2026-01-01T00:00:00+99:00', NaN, Infinity, -1, {}, true]) {
      assert.deepEqual(parseTimestamp(bad), { t: null, naive: false, bad: true, numeric: false }, String(bad));
    }
    assert.equal(parseTimestamp(undefined).bad, false);
    assert.equal(parseTimestamp(null).t, null);
  });

  test('fillTimes: gaps inherit, leading gaps take the first known, no known times spread over the fallback', () => {
    assert.deepEqual(fillTimes([null, 10, null, 30], null), { start: [10, 10, 10, 30], end: [10, 10, 30, 30], estimated: [true, false, true, false], clamped: 0 });
    assert.deepEqual(fillTimes([null, null], null), { start: [null, null], end: [null, null], estimated: [false, false], clamped: 0 });
    assert.deepEqual(fillTimes([null, null, null, null], { start: 100, end: 108 }), { start: [100, 102, 104, 106], end: [102, 104, 106, 108], estimated: [true, true, true, true], clamped: 0 });
    assert.deepEqual(fillTimes([], { start: 1, end: 2 }), { start: [], end: [], estimated: [], clamped: 0 });
  });
});

// ---- registry

describe('trajectory parser registry', () => {
  const mineDoc = { format: 'mine', items: ['a', 'b'] };
  const mine = (tag: string): TrajectoryParser => (doc) => {
    if ((doc as Json | null)?.format !== 'mine') return null;
    const spans: PlannedSpan[] = ((doc as Json).items as string[]).map((item, i) => ({
      path: `item:${i}`, parentPath: null, kind: 'turn', name: item, start: null, end: null, status: 'ok', error: null, attributes: { tag },
    }));
    return {
      format: `mine-${tag}`,
      spans,
      referencedFiles: [],
      warnings: [],
      summary: { turns: spans.length, toolCalls: 0, subtrajectories: 0, promptTokens: null, completionTokens: null, cachedTokens: null, costUsd: null, agent: null, model: null, sessionId: null },
    };
  };
  const atifDoc = { schema_version: 'ATIF-v1.7', agent: { name: 'x', version: '1' }, steps: [{ step_id: 1, source: 'user', message: 'hi' }] };
  const ctx = memoryCtx({});

  test('a registered parser wins for its documents; others fall through to ATIF; unknown gives no plan', () => {
    registerTrajectoryParser('my-format', mine('one'));
    try {
      const r = planTrajectory(mineDoc, ctx);
      assert.equal(r.parser, 'my-format');
      assert.equal(r.plan?.format, 'mine-one');
      assert.deepEqual(r.plan?.spans.map((s) => s.name), ['a', 'b']);
      const a = planTrajectory(atifDoc, ctx);
      assert.equal(a.parser, 'atif');
      assert.equal(a.plan?.format, 'ATIF-v1.7');
      assert.deepEqual(planTrajectory({ hello: 1 }, ctx), { plan: null, parser: null, errors: [] });
      assert.equal(trajectoryParser('atif'), parseAtif);
      assert.equal(trajectoryParser('nope'), undefined);
      assert.equal(typeof trajectoryParser('my-format'), 'function');
    } finally {
      unregisterTrajectoryParser('my-format');
    }
    assert.equal(trajectoryParser('my-format'), undefined);
  });

  test('most recent registration first; re-registering a name replaces it and makes it the most recent', () => {
    registerTrajectoryParser('first', mine('first'));
    registerTrajectoryParser('second', mine('second'));
    try {
      assert.equal(planTrajectory(mineDoc, ctx).parser, 'second');
      registerTrajectoryParser('first', mine('first-again'));
      const r = planTrajectory(mineDoc, ctx);
      assert.equal(r.parser, 'first');
      assert.equal(r.plan?.format, 'mine-first-again');
    } finally {
      unregisterTrajectoryParser('first');
      unregisterTrajectoryParser('second');
    }
  });

  test('a throwing parser or a malformed plan is skipped and reported; non-finite times nulled', () => {
    registerTrajectoryParser('boom', () => {
      throw new Error('parser bug');
    });
    registerTrajectoryParser('dupes', (doc, c) => {
      const plan = mine('d')(doc, c);
      return plan === null ? null : { ...plan, spans: [...plan.spans, ...plan.spans] };
    });
    try {
      const a = planTrajectory(atifDoc, ctx);
      assert.equal(a.parser, 'atif');
      assert.equal(a.errors.length, 1);
      assert.match(a.errors[0], /"boom" threw: Error: parser bug/);
      assert.ok(!a.plan?.warnings.some((w) => w.includes('boom')), 'the plan depends only on the document');
      const m = planTrajectory(mineDoc, ctx);
      assert.equal(m.plan, null);
      assert.equal(m.errors.length, 2);
      assert.match(m.errors[0], /"dupes" returned a malformed plan: duplicate span path "item:0"/);
    } finally {
      unregisterTrajectoryParser('boom');
      unregisterTrajectoryParser('dupes');
    }
    registerTrajectoryParser('nan-times', (doc, c) => {
      const plan = mine('n')(doc, c);
      if (plan !== null) plan.spans[0].start = NaN;
      return plan;
    });
    try {
      const r = planTrajectory(mineDoc, ctx);
      assert.equal(r.parser, 'nan-times');
      assert.equal(r.plan?.spans[0].start, null);
      assert.ok(r.plan?.warnings.some((w) => w.includes('non-finite')));
    } finally {
      unregisterTrajectoryParser('nan-times');
    }
  });

  test('bad names are refused with the value in the message', () => {
    for (const [name, shown] of [['', '""'], ['a b', '"a b"'], ['x/y', '"x/y"'], [42, '42'], [null, 'null']] as const) {
      assert.throws(() => registerTrajectoryParser(name as string, mine('x')), (e: unknown) => e instanceof TypeError && e.message.includes(shown), String(name));
    }
    assert.throws(() => registerTrajectoryParser('ok-name', 'not a function' as unknown as TrajectoryParser), TypeError);
    assert.equal(trajectoryParser('ok-name'), undefined);
  });
});
