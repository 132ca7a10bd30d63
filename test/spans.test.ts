/**
 * Spans and ambient context: `Recorder.span` / `startSpan` / `currentSpan` / `unit`, span
 * ids (random and keyed), open spans at a flush, a close and a crash, the reader
 * (`spans`, `spanTree`, `spanOfSample`, `samplesOfSpan`, `spanCounts`), compaction of span
 * parts, `probe span list` and `probe info`, and the rollout trees in `probe report`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, describe, test } from 'node:test';
import type { TestContext } from 'node:test';


import { Recorder, RunReader, buildReport, compactRun, keyedSpanId, renderHtml } from '../ts/index.js';
import type { CloseSummary, RecorderOptions, RunEvent, Span, SpanRecord, SpanTreeNode, StoredSampleRecord } from '../ts/index.js';
import { probe } from './helpers/in-process-cli.js';
import type { CliResult } from './helpers/in-process-cli.js';
import { freshTempDir, spawnChild, waitForExit } from './helpers/child.js';
import { throwsCode } from './helpers/errors.js';
import { openRun, tempRunDir } from './helpers/run-dir.js';

// ---- helpers

/** No process hooks, no environment capture, no clock flushes. */
const FAST = { installHandlers: false, captureEnvironment: false, flushIntervalMs: 3_600_000, flushSteps: 1_000_000 } as const;

/** A recorder over a fresh temporary run directory (closed and removed when the test ends). */
function run(t: TestContext, label: string, options: RecorderOptions = {}): { dir: string; rec: Recorder } {
  return openRun(t, label, { ...FAST, ...options });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Spins for `ms` so that a synchronous span has a measurable duration. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin
  }
}

function spansOf(dir: string): SpanRecord[] {
  return RunReader.open(dir).spans();
}

function byName(spans: SpanRecord[], name: string): SpanRecord {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `exactly one span named ${name} (got ${found.length}: ${JSON.stringify(spans.map((s) => s.name))})`);
  return found[0];
}

function samplesOf(dir: string): StoredSampleRecord[] {
  return [...RunReader.open(dir).samples()];
}

function badRecords(dir: string): RunEvent[] {
  return RunReader.open(dir).events().filter((e) => e.kind === 'bad_record');
}

function assertEnded(s: SpanRecord, status: 'ok' | 'error'): void {
  assert.equal(s.status, status, `${s.name}: status`);
  assert.ok(s.end_time !== null && Number.isFinite(s.end_time), `${s.name}: end_time ${s.end_time}`);
  assert.ok(s.end_time >= s.start_time, `${s.name}: end_time ${s.end_time} < start_time ${s.start_time}`);
  assert.ok(s.duration_s !== null && s.duration_s > 0, `${s.name}: duration_s ${s.duration_s}`);
}

/** FNV-1a 64 over the UTF-8 bytes of `s`, with BigInt: the reference for keyed ids. */
function fnv1a64(s: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(s)) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}


function assertCode(r: CliResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

// ---- a shared, read-only run: three steps of three parallel rollouts each

/**
 * Steps 0..2, each with ROLLOUTS rollouts run in parallel inside `unit({step, sample,
 * group, env})`: rollout → turn 0 (→ tool_call, the one of step 1 rollout 2 failing) →
 * turn 1 (logs one sample). Then an `evaluation` span at step 3 and a rollout `stuck`
 * never ended (open at close).
 */
const ROLLOUTS = 3;
const FIXTURE_STEPS = [0, 1, 2];

interface Fixture {
  dir: string;
  runId: string;
  summary: CloseSummary;
  total: number;
}

let fixtureP: Promise<Fixture> | null = null;
let fixtureDir: string | null = null;

after(() => {
  if (fixtureDir) rmSync(fixtureDir, { recursive: true, force: true });
});

function fixture(): Promise<Fixture> {
  fixtureP ??= recordFixture();
  return fixtureP;
}

async function recordFixture(): Promise<Fixture> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-spans-fixture-'));
  fixtureDir = dir;
  const runId = 'spans-fixture';
  const rec = new Recorder(dir, { ...FAST, runId });
  for (let step = 0; step < 4; step++) rec.logStep({ step, loss: 1 / (step + 1), reward_mean: step });
  for (const step of FIXTURE_STEPS) {
    await Promise.all(
      Array.from({ length: ROLLOUTS }, (_, r) =>
        rec.unit({ step, sample: `s${step}-${r}`, group: `g${step}`, env: 'math' }, () =>
          rec.span('rollout', `rollout-${step}-${r}`, async (rollout) => {
            rollout.setAttribute('r', r);
            await sleep(ROLLOUTS - r); // interleave the parallel rollouts
            await rec.span('turn', `turn-${step}-${r}-0`, async () => {
              await sleep(1);
              await rec
                .span('tool_call', `tool-${step}-${r}`, async () => {
                  await sleep(1);
                  if (step === 1 && r === 2) throw new Error('tool failed');
                })
                .catch(() => undefined);
            });
            await rec.span('turn', `turn-${step}-${r}-1`, async () => {
              await sleep(1);
              rec.logSamples([{ reward_total: r, completion_text: `completion ${step}-${r}` }]);
            });
          }),
        ),
      ),
    );
  }
  rec.span('evaluation', 'eval', () => busy(1), { step: 3 });
  rec.startSpan('rollout', 'stuck', { step: 3 });
  const summary = rec.close();
  // rollouts (+ stuck), 2 turns and 1 tool call each, the evaluation
  const total = FIXTURE_STEPS.length * ROLLOUTS * 4 + 2;
  return { dir, runId, summary, total };
}

// ---- the tests

describe('span(): a function inside a span', () => {
  test('a sync fn: returns its value, the span ends when it returns (status ok, duration > 0)', (t) => {
    const { dir, rec } = run(t, 'span-sync');
    let handle = null as Span | null;
    const v = rec.span('rollout', 'r0', (span) => {
      handle = span;
      assert.equal(span.ended, false, 'open while fn runs');
      assert.equal(span.status, 'open');
      busy(2);
      return 42;
    });
    assert.equal(v, 42);
    assert.ok(handle !== null);
    assert.equal(handle!.ended, true, 'ended once fn returned');
    rec.close();
    const [s] = spansOf(dir);
    assert.equal(s.span_id, handle!.id);
    assert.equal(s.kind, 'rollout');
    assert.equal(s.name, 'r0');
    assert.equal(s.parent_id, null);
    assert.equal(s.root_id, s.span_id);
    assert.equal(s.error, null);
    assertEnded(s, 'ok');
    assert.ok(s.duration_s! >= 0.0015, `busy 2 ms, duration ${s.duration_s}`);
  });

  test('an async fn: resolves to its value, the span ends only when the promise settles', async (t) => {
    const { dir, rec } = run(t, 'span-async');
    let handle = null as Span | null;
    const p = rec.span('turn', 't0', async (span) => {
      handle = span;
      await sleep(15);
      return 'done';
    });
    assert.ok(p instanceof Promise);
    assert.equal(handle!.ended, false, 'still open while the promise is pending');
    assert.equal(await p, 'done');
    assert.equal(handle!.ended, true);
    rec.close();
    const s = byName(spansOf(dir), 't0');
    assertEnded(s, 'ok');
    assert.ok(s.duration_s! >= 0.01, `slept 15 ms, duration ${s.duration_s}`);
  });

  test('a sync throw is re-thrown and the span reads status error with `Error: <message>`', (t) => {
    const { dir, rec } = run(t, 'span-throw');
    const boom = new Error('sync boom');
    assert.throws(
      () =>
        rec.span('tool_call', 'calc', () => {
          busy(1);
          throw boom;
        }),
      (e) => e === boom,
    );
    rec.close();
    const s = byName(spansOf(dir), 'calc');
    assertEnded(s, 'error');
    assert.equal(s.error, 'Error: sync boom');
  });

  test('an async rejection is re-thrown and the span reads status error', async (t) => {
    const { dir, rec } = run(t, 'span-reject');
    const boom = new TypeError('async boom');
    await assert.rejects(
      rec.span('rollout', 'bad', async () => {
        await sleep(2);
        throw boom;
      }),
      (e) => e === boom,
    );
    // a plain Error too, as the issue words it
    await assert.rejects(rec.span('rollout', 'bad2', () => Promise.reject(new Error('nope'))), /nope/);
    rec.close();
    const spans = spansOf(dir);
    const s = byName(spans, 'bad');
    assertEnded(s, 'error');
    assert.equal(s.error, 'TypeError: async boom');
    assert.equal(byName(spans, 'bad2').error, 'Error: nope');
    assert.equal(byName(spans, 'bad2').status, 'error');
  });

  test('a non-Error thrown value is described, not lost', (t) => {
    const { dir, rec } = run(t, 'span-throw-string');
    assert.throws(() => rec.span('turn', 'str', () => {
      throw 'just a string';
    }));
    rec.close();
    const s = byName(spansOf(dir), 'str');
    assert.equal(s.status, 'error');
    assert.ok(s.error !== null && s.error.includes('just a string'), `error text ${s.error}`);
  });
});

describe('ambient nesting (AsyncLocalStorage)', () => {
  test('spans started inside awaited calls get the right parent_id and root_id', async (t) => {
    const { dir, rec } = run(t, 'nest');
    async function tool(name: string): Promise<string> {
      await sleep(1);
      return rec.span('tool_call', name, async () => {
        await sleep(1);
        return name;
      });
    }
    async function turn(i: number): Promise<void> {
      await rec.span('turn', `turn-${i}`, async () => {
        await sleep(1);
        await tool(`tool-${i}-a`);
        await tool(`tool-${i}-b`);
      });
    }
    await rec.span('rollout', 'rollout', async () => {
      await turn(0);
      await sleep(1);
      await turn(1);
    });
    rec.close();
    const spans = spansOf(dir);
    assert.equal(spans.length, 7);
    const root = byName(spans, 'rollout');
    assert.equal(root.parent_id, null);
    for (const i of [0, 1]) {
      const tu = byName(spans, `turn-${i}`);
      assert.equal(tu.parent_id, root.span_id, `turn-${i} parent`);
      assert.equal(tu.root_id, root.span_id, `turn-${i} root`);
      for (const x of ['a', 'b']) {
        const tc = byName(spans, `tool-${i}-${x}`);
        assert.equal(tc.parent_id, tu.span_id, `tool-${i}-${x} parent`);
        assert.equal(tc.root_id, root.span_id, `tool-${i}-${x} root`);
      }
    }
  });

  test('parallel rollouts under Promise.all do not cross-contaminate', async (t) => {
    const { dir, rec } = run(t, 'parallel');
    const N = 8;
    const seen: Array<{ rollout: number; current: string | null; own: string }> = [];
    await Promise.all(
      Array.from({ length: N }, (_, r) =>
        rec.span('rollout', `rollout-${r}`, async (rollout) => {
          for (let k = 0; k < 3; k++) {
            await sleep((r * 7 + k * 3) % 5); // scrambled interleaving
            await rec.span('turn', `turn-${r}-${k}`, async () => {
              await sleep((r + k) % 3);
              seen.push({ rollout: r, current: rec.currentSpan()?.parentId ?? null, own: rollout.id });
              await rec.span('tool_call', `tool-${r}-${k}`, () => sleep(1));
            });
          }
        }),
      ),
    );
    rec.close();
    for (const s of seen) assert.equal(s.current, s.own, `rollout ${s.rollout}: the current turn's parent`);
    const spans = spansOf(dir);
    assert.equal(spans.length, N * 7);
    for (let r = 0; r < N; r++) {
      const ro = byName(spans, `rollout-${r}`);
      assert.equal(ro.parent_id, null);
      for (let k = 0; k < 3; k++) {
        const tu = byName(spans, `turn-${r}-${k}`);
        const tc = byName(spans, `tool-${r}-${k}`);
        assert.equal(tu.parent_id, ro.span_id, `turn-${r}-${k}`);
        assert.equal(tu.root_id, ro.span_id);
        assert.equal(tc.parent_id, tu.span_id, `tool-${r}-${k}`);
        assert.equal(tc.root_id, ro.span_id);
      }
    }
  });

  test('currentSpan(): null outside, the innermost span inside (across await), restored after', async (t) => {
    const { rec } = run(t, 'current');
    assert.equal(rec.currentSpan(), null, 'before any span');
    await rec.span('rollout', 'outer', async (outer) => {
      assert.equal(rec.currentSpan(), outer);
      await sleep(1);
      assert.equal(rec.currentSpan(), outer, 'after an await');
      await rec.span('turn', 'inner', async (inner) => {
        assert.equal(rec.currentSpan(), inner);
        await sleep(1);
        assert.equal(rec.currentSpan(), inner);
        assert.equal(inner.parentId, outer.id);
      });
      assert.equal(rec.currentSpan(), outer, 'back to the outer span after the inner one');
    });
    assert.equal(rec.currentSpan(), null, 'after the span');
    rec.span('rollout', 'sync', (s) => assert.equal(rec.currentSpan(), s));
    assert.equal(rec.currentSpan(), null);
    await sleep(1);
    assert.equal(rec.currentSpan(), null, 'still null on a later tick');
  });

  test('startSpan inside a span takes it as parent but does not become ambient itself', (t) => {
    const { dir, rec } = run(t, 'start-inside');
    rec.span('rollout', 'outer', (outer) => {
      const child = rec.startSpan('turn', 'manual');
      assert.equal(child.parentId, outer.id);
      assert.equal(rec.currentSpan(), outer, 'startSpan does not change the ambient span');
      const grandchild = rec.startSpan('tool_call', 'sibling');
      assert.equal(grandchild.parentId, outer.id, 'a second startSpan is a sibling, not a child');
      grandchild.end();
      child.end();
    });
    rec.close();
    const spans = spansOf(dir);
    assert.equal(byName(spans, 'manual').parent_id, byName(spans, 'outer').span_id);
    assert.equal(byName(spans, 'sibling').parent_id, byName(spans, 'outer').span_id);
  });
});

describe('startSpan(): a handle', () => {
  test('end() is idempotent: one span written, the first end wins', (t) => {
    const { dir, rec } = run(t, 'end-twice');
    const s = rec.startSpan('rollout', 'once');
    assert.equal(s.ended, false);
    busy(1);
    s.end();
    const endTime = s.endTime;
    assert.ok(Number.isFinite(endTime));
    busy(2);
    s.end({ error: new Error('late'), attributes: { late: true } });
    s.end();
    assert.equal(s.endTime, endTime, 'a second end() does not move the end time');
    assert.equal(s.status, 'ok');
    const summary = rec.close();
    assert.equal(summary.counters.spansLogged, 1, 'one span write');
    const spans = spansOf(dir);
    assert.equal(spans.length, 1);
    assertEnded(spans[0], 'ok');
    assert.deepEqual(spans[0].attributes, {}, 'attributes given to a second end() are ignored');
    assert.ok(Math.abs(spans[0].end_time! - endTime) < 1e-3, `end_time ${spans[0].end_time} vs ${endTime}`);
  });

  test('attributes: options, setAttribute, setAttributes and end({attributes}) are merged and stored', (t) => {
    const { dir, rec } = run(t, 'attrs');
    const s = rec.startSpan('tool_call', 'search', { attributes: { tool: 'web', retries: 0 } });
    s.setAttribute('retries', 2).setAttribute('query', 'ünïcode "quoted"');
    s.setAttributes({ nested: { a: [1, 2, 3] }, ok: true });
    s.end({ attributes: { result_len: 17, tool: 'web2' } });
    const plain = rec.startSpan('turn', 'no-attrs');
    plain.end();
    rec.close();
    const spans = spansOf(dir);
    assert.deepEqual(byName(spans, 'search').attributes, {
      tool: 'web2',
      retries: 2,
      query: 'ünïcode "quoted"',
      nested: { a: [1, 2, 3] },
      ok: true,
      result_len: 17,
    });
    assert.deepEqual(byName(spans, 'no-attrs').attributes, {});
  });

  test('end({error}) and recordError() end the span with status error', (t) => {
    const { dir, rec } = run(t, 'end-error');
    rec.startSpan('tool_call', 'e1').end({ error: new RangeError('out of range') });
    const s2 = rec.startSpan('tool_call', 'e2');
    s2.recordError(new Error('recorded'));
    s2.end();
    rec.close();
    const spans = spansOf(dir);
    assert.equal(byName(spans, 'e1').status, 'error');
    assert.equal(byName(spans, 'e1').error, 'RangeError: out of range');
    assert.equal(byName(spans, 'e2').status, 'error');
    assert.equal(byName(spans, 'e2').error, 'Error: recorded');
  });

  test('{parent: null} starts a new tree inside a span; {parent: span} picks the parent explicitly', (t) => {
    const { dir, rec } = run(t, 'parent-opt');
    const other = rec.startSpan('epoch', 'epoch-0');
    rec.span('rollout', 'outer', () => {
      rec.startSpan('evaluation', 'detached', { parent: null }).end();
      rec.startSpan('turn', 'adopted', { parent: other }).end();
      rec.span('turn', 'inner-root', () => rec.startSpan('tool_call', 'under-inner-root').end(), { parent: null });
    });
    other.end();
    rec.close();
    const spans = spansOf(dir);
    const detached = byName(spans, 'detached');
    assert.equal(detached.parent_id, null);
    assert.equal(detached.root_id, detached.span_id);
    const adopted = byName(spans, 'adopted');
    assert.equal(adopted.parent_id, other.id);
    assert.equal(adopted.root_id, other.id);
    const innerRoot = byName(spans, 'inner-root');
    assert.equal(innerRoot.parent_id, null);
    assert.equal(byName(spans, 'under-inner-root').parent_id, innerRoot.span_id);
    assert.equal(byName(spans, 'under-inner-root').root_id, innerRoot.span_id);
  });

  test('span.run(fn) makes the handle ambient for fn (sync and async), and only for fn', async (t) => {
    const { dir, rec } = run(t, 'run');
    const rollout = rec.startSpan('rollout', 'manual-rollout');
    const v = rollout.run(() => {
      assert.equal(rec.currentSpan(), rollout);
      rec.span('turn', 'sync-turn', () => undefined);
      return 5;
    });
    assert.equal(v, 5);
    assert.equal(rec.currentSpan(), null, 'not ambient after run() returns');
    await rollout.run(async () => {
      await sleep(1);
      assert.equal(rec.currentSpan(), rollout);
      await rec.span('turn', 'async-turn', () => sleep(1));
    });
    assert.equal(rollout.ended, false, 'run() does not end the span');
    rollout.end();
    rec.close();
    const spans = spansOf(dir);
    const r = byName(spans, 'manual-rollout');
    assertEnded(r, 'ok');
    assert.equal(byName(spans, 'sync-turn').parent_id, r.span_id);
    assert.equal(byName(spans, 'async-turn').parent_id, r.span_id);
  });
});

describe('span ids', () => {
  test('the BigInt FNV-1a 64 reference matches the published test vectors', () => {
    assert.equal(fnv1a64(''), 'cbf29ce484222325');
    assert.equal(fnv1a64('a'), 'af63dc4c8601ec8c');
    assert.equal(fnv1a64('foobar'), '85944171f73967e8');
  });

  test('keyedSpanId is FNV-1a 64 over the UTF-8 of `${runId}\\0${key}`', () => {
    const cases: Array<[string, string]> = [
      ['run', 'k'],
      ['', ''],
      ['run-20250101-000000-abcdef', 'rollout-17'],
      ['spans-fixture', 'step 3 / sample 12'],
      ['ключ-run', 'ключ'],
      ['run', '😀 emoji + 中文 + é'],
      ['a'.repeat(300), 'b'.repeat(1000)],
      ['run', '\u0000nul inside\u0000'],
      ['ÿÿÿÿ', '\uffff\ud7ff'],
    ];
    for (const [runId, key] of cases) {
      const id = keyedSpanId(runId, key);
      assert.match(id, /^[0-9a-f]{16}$/);
      assert.equal(id, fnv1a64(`${runId}\u0000${key}`), `runId ${JSON.stringify(runId.slice(0, 20))} key ${JSON.stringify(key.slice(0, 20))}`);
    }
    // many random strings, bytes of every value
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 500; i++) {
      const len = Math.floor(rand() * 40);
      const key = String.fromCodePoint(...Array.from({ length: len }, () => Math.floor(rand() * 0xd000)));
      assert.equal(keyedSpanId('r', key), fnv1a64(`r\u0000${key}`), `key ${JSON.stringify(key)}`);
    }
  });

  test('{key} gives the span id keyedSpanId(runId, key); a numeric key is its string', (t) => {
    const { dir, rec } = run(t, 'keyed', { runId: 'keyed-run' });
    const a = rec.startSpan('rollout', 'a', { key: 'k' });
    a.end();
    rec.span('rollout', 'b', () => undefined, { key: 7 });
    assert.equal(a.id, keyedSpanId('keyed-run', 'k'));
    rec.close();
    const spans = spansOf(dir);
    const sa = byName(spans, 'a');
    assert.equal(sa.span_id, keyedSpanId('keyed-run', 'k'));
    assert.equal(sa.key, 'k');
    const sb = byName(spans, 'b');
    assert.equal(sb.span_id, keyedSpanId('keyed-run', '7'));
    assert.equal(sb.key, '7');
  });

  test('recording a key twice in one recorder leaves one span, at its last write', (t) => {
    const { dir, rec } = run(t, 'keyed-twice', { runId: 'keyed-twice' });
    assert.throws(
      () =>
        rec.span('rollout', 'try', () => {
          throw new Error('first attempt');
        }, { key: 'rollout-3', attributes: { attempt: 1, first: true } }),
      /first attempt/,
    );
    rec.flushSync(10_000); // the first write published in its own part
    rec.span('rollout', 'try', () => undefined, { key: 'rollout-3', attributes: { attempt: 2 } });
    rec.close();
    const spans = spansOf(dir);
    assert.equal(spans.length, 1, JSON.stringify(spans));
    assert.equal(spans[0].span_id, keyedSpanId('keyed-twice', 'rollout-3'));
    assert.equal(spans[0].status, 'ok');
    assert.equal(spans[0].error, null);
    assert.deepEqual(spans[0].attributes, { attempt: 2 });
  });

  test('a resumed recorder re-recording a key replaces the span (one span, last attributes)', (t) => {
    const dir = tempRunDir(t, 'keyed-resume');
    const first = new Recorder(dir, { ...FAST, runId: 'resume-run' });
    first.span('rollout', 'attempt', () => undefined, { key: 'k', attributes: { attempt: 1, only_first: true } });
    first.startSpan('rollout', 'unkeyed-1').end();
    first.close();
    const before = spansOf(dir);
    assert.equal(before.length, 2);
    assert.deepEqual(byName(before, 'attempt').attributes, { attempt: 1, only_first: true });

    // resumed: no runId option, the manifest's run id is kept
    const second = new Recorder(dir, { ...FAST });
    t.after(() => second.close());
    second.span('rollout', 'attempt', () => undefined, { key: 'k', attributes: { attempt: 2 } });
    second.startSpan('rollout', 'unkeyed-2').end();
    second.close();
    const spans = spansOf(dir);
    const attempts = spans.filter((s) => s.name === 'attempt');
    assert.equal(attempts.length, 1, `one keyed span: ${JSON.stringify(attempts)}`);
    assert.equal(attempts[0].span_id, keyedSpanId('resume-run', 'k'));
    assert.deepEqual(attempts[0].attributes, { attempt: 2 });
    assert.equal(spans.length, 3, 'the two unkeyed spans are both kept');
    assert.equal(RunReader.open(dir).spanCounts().find((c) => c.kind === 'rollout')?.spans, 3);
  });

  test('unkeyed ids are 16 lower-case hex characters and unique over 10,000 spans', (t) => {
    const { dir, rec } = run(t, 'ids');
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const s = rec.startSpan('turn', `t${i}`);
      assert.match(s.id, /^[0-9a-f]{16}$/);
      ids.add(s.id);
      s.end();
    }
    assert.equal(ids.size, 10_000);
    const summary = rec.close();
    assert.equal(summary.counters.spansWritten, 10_000);
    const read = RunReader.open(dir).spans();
    assert.equal(read.length, 10_000);
    assert.equal(new Set(read.map((s) => s.span_id)).size, 10_000);
    for (const s of read) assert.ok(ids.has(s.span_id));
  });
});

describe('unit(): ambient coordinates and labels', () => {
  test('one sample logged inside a unit and a span: span_id, labels, group_id, sample_id and step from the unit', async (t) => {
    const { dir, rec } = run(t, 'unit-one');
    let spanId = '';
    const v = await rec.unit({ step: 5, sample: 's-1', group: 'g-1', env: 'math', difficulty: 3, hard: true }, () =>
      rec.span('rollout', 'r', async (span) => {
        spanId = span.id;
        await sleep(1);
        rec.logSamples([{ reward_total: 1, completion_text: 'x' }]);
        return 'v';
      }),
    );
    assert.equal(v, 'v');
    rec.close();
    const [s] = samplesOf(dir);
    assert.equal(s.span_id, spanId);
    assert.equal(s.step, 5);
    assert.equal(s.sample_id, 's-1');
    assert.equal(s.group_id, 'g-1');
    assert.deepEqual(s.labels, { sample: 's-1', group: 'g-1', env: 'math', difficulty: '3', hard: 'true' });
  });

  test('several samples in one call: span_id, labels and group_id from the unit, sample_id not', (t) => {
    const { dir, rec } = run(t, 'unit-many');
    rec.unit({ step: 2, sample: 's-9', group: 'g-2', env: 'code' }, () =>
      rec.span('rollout', 'r', () => rec.logSamples([{ reward_total: 1 }, { reward_total: 2 }, { reward_total: 3 }], { select: false })),
    );
    rec.close();
    const samples = samplesOf(dir);
    const spanId = byName(spansOf(dir), 'r').span_id;
    assert.equal(samples.length, 3);
    assert.deepEqual(samples.map((s) => s.sample_id).sort(), ['2_0', '2_1', '2_2'], 'default ids, not the unit sample');
    for (const s of samples) {
      assert.equal(s.step, 2);
      assert.equal(s.span_id, spanId);
      assert.equal(s.group_id, 'g-2');
      assert.equal(s.labels?.env, 'code');
      assert.equal(s.labels?.group, 'g-2');
    }
  });

  test("the call's step and a sample's own ids win over the unit's", (t) => {
    const { dir, rec } = run(t, 'unit-wins');
    rec.unit({ step: 5, sample: 'unit-sample', group: 'unit-group' }, () => {
      rec.logSamples([{ reward_total: 1, sample_id: 'own', group_id: 'own-group' }], { step: 9 });
    });
    rec.close();
    const [s] = samplesOf(dir);
    assert.equal(s.step, 9);
    assert.equal(s.sample_id, 'own');
    assert.equal(s.group_id, 'own-group');
  });

  test('nested units merge, the inner winning per key; a unit alone (no span) gives labels but no span_id', async (t) => {
    const { dir, rec } = run(t, 'unit-nested');
    await rec.unit({ step: 1, group: 'g', env: 'a', keep: 'outer' }, async () => {
      await sleep(1);
      await rec.unit({ env: 'b', sample: 'x', step: 4 }, async () => {
        await sleep(1);
        rec.logSamples([{ reward_total: 1, completion_text: 'inner' }]);
      });
      rec.logSamples([{ reward_total: 2, completion_text: 'outer' }]);
    });
    rec.close();
    const samples = samplesOf(dir);
    const inner = samples.find((s) => s.completion_text === 'inner')!;
    const outer = samples.find((s) => s.completion_text === 'outer')!;
    assert.deepEqual(inner.labels, { group: 'g', env: 'b', keep: 'outer', sample: 'x' });
    assert.equal(inner.step, 4);
    assert.equal(inner.sample_id, 'x');
    assert.equal(inner.group_id, 'g');
    assert.equal(inner.span_id, undefined);
    assert.deepEqual(outer.labels, { group: 'g', env: 'a', keep: 'outer' }, 'the outer unit is unchanged after the inner one');
    assert.equal(outer.step, 1);
  });

  test('spans inside a unit carry its labels, step, sample_id and group_id; span labels merge over them', (t) => {
    const { dir, rec } = run(t, 'unit-spans');
    rec.unit({ step: 7, sample: 's7', group: 'g7', env: 'math' }, () => {
      rec.span('rollout', 'r', () => {
        rec.span('turn', 'with-labels', () => undefined, { labels: { env: 'override', turn: 1 } });
        rec.span('turn', 'own-step', () => undefined, { step: 8 });
      });
    });
    rec.close();
    const spans = spansOf(dir);
    const r = byName(spans, 'r');
    assert.equal(r.step, 7);
    assert.equal(r.sample_id, 's7');
    assert.equal(r.group_id, 'g7');
    assert.deepEqual(r.labels, { sample: 's7', group: 'g7', env: 'math' });
    assert.deepEqual(byName(spans, 'with-labels').labels, { sample: 's7', group: 'g7', env: 'override', turn: '1' });
    assert.equal(byName(spans, 'with-labels').step, 7);
    assert.equal(byName(spans, 'own-step').step, 8);
  });

  test('a span with a step and no unit passes the step to its children and samples', (t) => {
    const { dir, rec } = run(t, 'span-step');
    rec.span('rollout', 'r', () => {
      rec.span('turn', 't', () => rec.logSamples([{ reward_total: 1 }]));
    }, { step: 11 });
    rec.close();
    assert.equal(byName(spansOf(dir), 't').step, 11);
    const [s] = samplesOf(dir);
    assert.equal(s.step, 11);
    assert.equal(s.span_id, byName(spansOf(dir), 't').span_id);
  });

  test('events inside a unit take its step, data.span_id and data.labels', (t) => {
    const { dir, rec } = run(t, 'unit-events');
    let spanId = '';
    rec.unit({ step: 3, sample: 's3', env: 'math' }, () => {
      rec.span('rollout', 'r', (s) => {
        spanId = s.id;
        rec.logEvent('checkpoint', { message: 'inside', data: { x: 1 } });
        rec.logEvent('checkpoint', { message: 'explicit step', step: 10 });
      });
      rec.logEvent('checkpoint', { message: 'unit only' });
    });
    rec.logEvent('checkpoint', { message: 'outside', data: { y: 2 } });
    rec.close();
    const events = RunReader.open(dir).events().filter((e) => e.kind === 'checkpoint');
    const inside = events.find((e) => e.message === 'inside')!;
    assert.equal(inside.step, 3);
    assert.equal(inside.data.span_id, spanId);
    assert.deepEqual(inside.data.labels, { sample: 's3', env: 'math' });
    assert.equal(inside.data.x, 1);
    assert.equal(events.find((e) => e.message === 'explicit step')!.step, 10);
    const unitOnly = events.find((e) => e.message === 'unit only')!;
    assert.equal(unitOnly.step, 3);
    assert.equal(unitOnly.data.span_id, undefined);
    assert.deepEqual(unitOnly.data.labels, { sample: 's3', env: 'math' });
    const outside = events.find((e) => e.message === 'outside')!;
    assert.equal(outside.step, null);
    assert.deepEqual(outside.data, { y: 2 });
  });

  test('logging outside any unit or span is unchanged: no span_id, no labels', async (t) => {
    const { dir, rec } = run(t, 'no-unit');
    // before any span or unit, and after some (the storage exists then)
    rec.logSamples([{ reward_total: 1, completion_text: 'before' }], { step: 0 });
    await rec.span('rollout', 'r', () => sleep(1));
    await rec.unit({ step: 1, env: 'x' }, () => sleep(1));
    rec.logSamples([{ reward_total: 1, completion_text: 'after' }], { step: 1 });
    rec.close();
    const samples = samplesOf(dir);
    assert.equal(samples.length, 2);
    for (const s of samples) {
      assert.equal(s.span_id, undefined, `${s.completion_text}: span_id`);
      assert.equal(s.labels, undefined, `${s.completion_text}: labels`);
      assert.equal(s.group_id, undefined);
    }
    assert.deepEqual(samples.map((s) => s.sample_id).sort(), ['0_0', '1_0']);
  });

  test('a bad unit field (step -1, an object label) never throws: fn runs, a bad_record names the field', (t) => {
    const { dir, rec } = run(t, 'unit-bad');
    const v = rec.unit({ step: -1, env: 'ok', meta: { nested: 1 } as unknown as string }, () => {
      rec.logSamples([{ reward_total: 1 }], { step: 2 });
      return 'ran';
    });
    assert.equal(v, 'ran');
    let ran = false;
    rec.unit(null as unknown as { step: number }, () => {
      ran = true;
    });
    assert.ok(ran, 'fn runs with a non-object unit');
    rec.close();
    const bad = badRecords(dir);
    const fields = bad.map((e) => e.data.field);
    assert.ok(fields.includes('step'), `bad_record for step: ${JSON.stringify(bad)}`);
    assert.ok(fields.includes('meta'), `bad_record for meta: ${JSON.stringify(bad)}`);
    assert.ok(fields.includes('unit'), `bad_record for the unit itself: ${JSON.stringify(bad)}`);
    for (const e of bad) assert.equal(e.data.record, 'unit');
    const [s] = samplesOf(dir);
    assert.deepEqual(s.labels, { env: 'ok' }, 'the good labels are kept');
    assert.equal(s.step, 2);
  });
});

describe('refused span arguments', () => {
  test("a kind '' or a number never throws: fn runs, nothing is recorded, a bad_record names kind", (t) => {
    const { dir, rec } = run(t, 'bad-kind');
    assert.equal(rec.span('', 'x', () => 1), 1);
    assert.equal(rec.span(42 as unknown as string, 'y', () => 2), 2);
    const inert = rec.startSpan('', 'z');
    assert.equal(inert.ended, true, 'an inert span');
    inert.end();
    rec.span('rollout', 'good', () => undefined);
    rec.close();
    assert.deepEqual(spansOf(dir).map((s) => s.name), ['good']);
    const bad = badRecords(dir).filter((e) => e.data.field === 'kind');
    assert.equal(bad.length, 3, JSON.stringify(badRecords(dir)));
    for (const e of bad) assert.equal(e.data.record, 'span');
  });

  test('options.step 1.5 is refused with a bad_record; the span is still recorded, without that step', (t) => {
    const { dir, rec } = run(t, 'bad-step');
    assert.equal(rec.span('rollout', 'r', () => 'ok', { step: 1.5 }), 'ok');
    rec.startSpan('turn', 't', { step: -2 }).end();
    rec.close();
    const spans = spansOf(dir);
    assert.equal(byName(spans, 'r').step, null);
    assert.equal(byName(spans, 't').step, null);
    const bad = badRecords(dir).filter((e) => e.data.field === 'step');
    assert.equal(bad.length, 2, JSON.stringify(badRecords(dir)));
    assert.ok(bad[0].message.includes('1.5'), bad[0].message);
  });

  test('a bad key, parent or attributes is refused, not thrown', (t) => {
    const { dir, rec } = run(t, 'bad-opts');
    rec.span('rollout', 'r', () => undefined, {
      key: { no: 1 } as unknown as string,
      parent: 'not-a-span' as unknown as null,
      attributes: [1, 2] as unknown as Record<string, unknown>,
    });
    rec.close();
    const fields = badRecords(dir).map((e) => e.data.field).sort();
    assert.deepEqual(fields, ['attributes', 'key', 'parent']);
    const r = byName(spansOf(dir), 'r');
    assert.equal(r.key, null);
    assert.equal(r.parent_id, null);
  });

  test('span(kind, name, notAFunction) and unit(coords, notAFunction) throw RLPROBE_INVALID_OPTION', (t) => {
    const { rec } = run(t, 'bad-fn');
    throwsCode(() => rec.span('rollout', 'r', 'nope' as unknown as () => void), 'RLPROBE_INVALID_OPTION', /fn/);
    throwsCode(() => rec.span('rollout', 'r', undefined as unknown as () => void), 'RLPROBE_INVALID_OPTION');
    throwsCode(() => rec.unit({ step: 1 }, 3 as unknown as () => void), 'RLPROBE_INVALID_OPTION');
  });
});

describe('open spans, close and counters', () => {
  test('a span running at flushSync() reads open; once ended and closed it reads once, ok', (t) => {
    const { dir, rec } = run(t, 'open-flush');
    const s = rec.startSpan('rollout', 'long', { step: 4, attributes: { phase: 'start' } });
    rec.startSpan('turn', 'short').end();
    assert.equal(rec.flushSync(10_000), true);
    const live = RunReader.open(dir).spans();
    const open = byName(live, 'long');
    assert.equal(open.status, 'open');
    assert.equal(open.end_time, null);
    assert.equal(open.duration_s, null);
    assert.equal(open.step, 4);
    assert.deepEqual(open.attributes, { phase: 'start' });
    assert.equal(byName(live, 'short').status, 'ok');
    assert.deepEqual(RunReader.open(dir).spans({ status: 'open' }).map((x) => x.name), ['long']);

    s.end({ attributes: { phase: 'end' } });
    const summary = rec.close();
    const spans = spansOf(dir);
    assert.equal(spans.length, 2, 'each span once');
    const ended = byName(spans, 'long');
    assertEnded(ended, 'ok');
    assert.deepEqual(ended.attributes, { phase: 'end' });
    assert.equal(summary.counters.spansLogged, 3, 'long (open) + short + long (ended)');
    assert.equal(summary.counters.spansWritten, summary.counters.spansLogged);
  });

  test('a span never ended when close() runs reads open; a later end() changes nothing', (t) => {
    const { dir, rec } = run(t, 'open-close');
    const s = rec.startSpan('rollout', 'abandoned');
    const inner = s.run(() => rec.startSpan('turn', 'abandoned-turn'));
    const summary = rec.close();
    s.end();
    inner.end({ error: new Error('too late') });
    const spans = spansOf(dir);
    assert.equal(spans.length, 2);
    for (const x of spans) {
      assert.equal(x.status, 'open', x.name);
      assert.equal(x.end_time, null);
    }
    assert.equal(byName(spans, 'abandoned-turn').parent_id, byName(spans, 'abandoned').span_id);
    assert.equal(summary.counters.spansLogged, 2);
    // spans after close are inert
    const late = rec.startSpan('rollout', 'after-close');
    assert.equal(late.ended, true);
    assert.equal(rec.span('rollout', 'after-close-2', () => 'still runs'), 'still runs');
    assert.equal(spansOf(dir).length, 2);
  });

  test('counters after close: spansLogged === spansWritten, nothing pending, dropped or bad', async (t) => {
    const { rec } = run(t, 'counters');
    for (let i = 0; i < 50; i++) {
      await rec.span('rollout', `r${i}`, async () => {
        rec.span('turn', 't', () => undefined);
        if (i % 10 === 0) rec.flushSync(10_000);
      });
    }
    rec.startSpan('rollout', 'open-at-close');
    const c = rec.close().counters;
    assert.ok(c.spansLogged >= 101, `spansLogged ${c.spansLogged}`);
    assert.equal(c.spansWritten, c.spansLogged);
    assert.equal(c.spansPending, 0);
    assert.equal(c.spansDropped, 0);
    assert.equal(c.spansBad, 0);
    assert.deepEqual(rec.counters, c, 'counters after close are the summary');
  });
});

describe('crash', () => {
  test('an uncaught exception inside a running rollout/turn leaves both spans readable as open', { timeout: 120_000 }, async (t) => {
    const tmp = freshTempDir('span-crash');
    t.after(tmp.cleanup);
    const dir = path.join(tmp.dir, 'run');
    const child = spawnChild('span-crash.ts', [dir]);
    const line = await child.waitForLine(/^in-flight /);
    const exit = await waitForExit(child);
    assert.equal(exit.code, 1, child.describe());
    assert.match(child.stderr(), /boom-in-span/);
    const [, rolloutId, turnId] = line.split(' ');
    const reader = RunReader.open(dir);
    const spans = reader.spans();
    assert.equal(spans.length, 4, JSON.stringify(spans.map((s) => [s.name, s.status])));
    const rollout = byName(spans, 'inflight');
    const turn = byName(spans, 'inflight-turn');
    assert.equal(rollout.span_id, rolloutId);
    assert.equal(turn.span_id, turnId);
    for (const s of [rollout, turn]) {
      assert.equal(s.status, 'open', s.name);
      assert.equal(s.end_time, null, s.name);
      assert.equal(s.step, 2, s.name);
    }
    assert.equal(turn.parent_id, rollout.span_id);
    assert.equal(turn.root_id, rollout.span_id);
    const done = byName(spans, 'done');
    assertEnded(done, 'ok');
    assert.equal(byName(spans, 'done-turn').parent_id, done.span_id);
    assert.equal(byName(spans, 'done-turn').status, 'ok');
    assert.deepEqual(reader.spanCounts(), [
      { kind: 'rollout', spans: 2, open: 1, error: 0 },
      { kind: 'turn', spans: 2, open: 1, error: 0 },
    ]);
    const crash = reader.events().find((e) => e.kind === 'crash');
    assert.ok(crash, 'a crash event');
    assert.match(crash.message, /boom-in-span/);
  });
});

describe('reader queries', () => {
  test('spans(): kind, step, stepRange, root, parent, id, label, status and limit filter', async () => {
    const { dir, total } = await fixture();
    const r = RunReader.open(dir);
    const all = r.spans();
    assert.equal(all.length, total);
    assert.ok(all.every((s, i) => i === 0 || s.start_time >= all[i - 1].start_time), 'earliest start first');

    assert.equal(r.spans({ kind: 'rollout' }).length, FIXTURE_STEPS.length * ROLLOUTS + 1);
    assert.equal(r.spans({ kind: ['turn', 'tool_call'] }).length, FIXTURE_STEPS.length * ROLLOUTS * 3);
    const step1 = r.spans({ step: 1 });
    assert.equal(step1.length, ROLLOUTS * 4);
    assert.ok(step1.every((s) => s.step === 1));
    assert.equal(r.spans({ stepRange: [1, 2] }).length, 2 * ROLLOUTS * 4);
    assert.deepEqual(r.spans({ step: 3 }).map((s) => s.name).sort(), ['eval', 'stuck']);

    const rollout = byName(all, 'rollout-1-0');
    const tree = r.spans({ root: rollout.span_id });
    assert.deepEqual(tree.map((s) => s.name).sort(), ['rollout-1-0', 'tool-1-0', 'turn-1-0-0', 'turn-1-0-1']);
    assert.deepEqual(r.spans({ parent: rollout.span_id }).map((s) => s.name), ['turn-1-0-0', 'turn-1-0-1']);
    assert.deepEqual(r.spans({ id: rollout.span_id }).map((s) => s.name), ['rollout-1-0']);
    assert.equal(r.spans({ id: [rollout.span_id, byName(all, 'eval').span_id] }).length, 2);

    const labelled = r.spans({ label: { sample: 's1-0' } });
    assert.deepEqual(labelled.map((s) => s.name).sort(), ['rollout-1-0', 'tool-1-0', 'turn-1-0-0', 'turn-1-0-1']);
    assert.equal(r.spans({ label: { group: 'g2', env: 'math' } }).length, ROLLOUTS * 4);
    assert.equal(r.spans({ label: { group: 'g2', env: 'code' } }).length, 0, 'all labels must match');

    assert.deepEqual(r.spans({ status: 'error' }).map((s) => s.name), ['tool-1-2']);
    assert.equal(r.spans({ status: 'error' })[0].error, 'Error: tool failed');
    assert.deepEqual(r.spans({ status: 'open' }).map((s) => s.name), ['stuck']);
    assert.equal(r.spans({ status: ['ok', 'open'] }).length, total - 1);
    assert.deepEqual(r.spans({ kind: 'rollout', status: 'open', step: 3 }).map((s) => s.name), ['stuck']);

    const limited = r.spanRead({ kind: 'rollout', limit: 2 });
    assert.equal(limited.spans.length, 2);
    assert.equal(limited.total, total);
    assert.equal(limited.matched, FIXTURE_STEPS.length * ROLLOUTS + 1);
    assert.deepEqual(limited.spans, r.spans({ kind: 'rollout' }).slice(0, 2), 'the earliest-starting ones');
  });

  test('invalid filters throw RLPROBE_INVALID_QUERY naming the field', async () => {
    const { dir } = await fixture();
    const r = RunReader.open(dir);
    const cases: Array<[unknown, RegExp]> = [
      [{ stepp: 1 }, /stepp/],
      [{ status: 'nope' }, /status/],
      [{ step: -1 }, /step/],
      [{ step: 1.5 }, /step/],
      [{ stepRange: [3, 1] }, /stepRange/],
      [{ step: 1, stepRange: [1, 2] }, /stepRange/],
      [{ kind: '' }, /kind/],
      [{ label: { sample: { x: 1 } } }, /label/],
      [{ limit: 0 }, /limit/],
    ];
    for (const [q, name] of cases) {
      const e = throwsCode(() => r.spans(q as never), 'RLPROBE_INVALID_QUERY');
      assert.match(e.message, name, `${JSON.stringify(q)}: ${e.message}`);
    }
  });

  test('span(id) finds one span; spanTree(id) returns the whole tree from the root, children by start time', async () => {
    const { dir } = await fixture();
    const r = RunReader.open(dir);
    const tool = byName(r.spans(), 'tool-2-1');
    assert.equal(r.span(tool.span_id)?.name, 'tool-2-1');
    assert.equal(r.span('0000000000000000'), null);
    assert.equal(r.spanTree('0000000000000000'), null);

    const check = (tree: SpanTreeNode | null) => {
      assert.ok(tree);
      assert.equal(tree.span.name, 'rollout-2-1');
      assert.equal(tree.span.span_id, tool.root_id);
      assert.deepEqual(tree.children.map((c) => c.span.name), ['turn-2-1-0', 'turn-2-1-1']);
      assert.ok(tree.children[0].span.start_time <= tree.children[1].span.start_time);
      assert.deepEqual(tree.children[0].children.map((c) => c.span.name), ['tool-2-1']);
      assert.deepEqual(tree.children[1].children, []);
    };
    check(r.spanTree(tool.span_id)); // from a leaf
    check(r.spanTree(tool)); // from a record
    check(r.spanTree(tool.root_id)); // from the root
  });

  test('spanOfSample() and samplesOfSpan() link samples and spans (child spans included)', async () => {
    const { dir } = await fixture();
    const r = RunReader.open(dir);
    const samples = [...r.samples()];
    assert.equal(samples.length, FIXTURE_STEPS.length * ROLLOUTS);
    for (const s of samples) {
      const span = r.spanOfSample(s);
      assert.ok(span, `sample ${s.sample_id} has a span`);
      assert.equal(span.kind, 'turn');
      const [, step, roll] = /^s(\d+)-(\d+)$/.exec(s.sample_id)!;
      assert.equal(span.name, `turn-${step}-${roll}-1`);
      assert.equal(s.step, Number(step));
      assert.equal(s.group_id, `g${step}`);
      assert.deepEqual(s.labels, { sample: s.sample_id, group: `g${step}`, env: 'math' });
    }
    assert.equal(r.spanOfSample({ span_id: undefined }), null);

    const rollout = byName(r.spans(), 'rollout-2-0');
    const of = r.samplesOfSpan(rollout);
    assert.deepEqual(of.map((s) => s.sample_id), ['s2-0'], 'the sample logged in a child turn');
    assert.deepEqual(r.samplesOfSpan(rollout.span_id).map((s) => s.sample_id), ['s2-0']);
    assert.deepEqual(r.samplesOfSpan(byName(r.spans(), 'turn-2-0-0')), [], 'a sibling turn holds none');
    assert.deepEqual(r.samplesOfSpan('0000000000000000'), []);
    const cols = r.samplesOfSpan(rollout, { columns: ['sample_id', 'reward_total'] });
    assert.deepEqual(cols.map((s) => s.sample_id), ['s2-0']);
  });

  test('samplesOfSpan() finds samples logged under a span at another step than the span', (t) => {
    const { dir, rec } = openRun(t, 'spans-other-step');
    let rollout = '';
    rec.span('rollout', 'late', (s) => {
      rollout = s.id;
      // the sample belongs to the next optimizer step (logged with its own step)
      rec.logSamples([{ completion_text: 'x', reward_total: 1 }], { step: 6 });
    }, { step: 5 });
    rec.logSamples([{ completion_text: 'y', reward_total: 0 }], { step: 6 });
    rec.close();
    const r = RunReader.open(dir);
    const of = r.samplesOfSpan(rollout);
    assert.deepEqual(of.map((s) => [s.step, s.completion_text, s.span_id]), [[6, 'x', rollout]]);
  });

  test('spanCounts(): per kind, with open and error', async () => {
    const { dir } = await fixture();
    const n = FIXTURE_STEPS.length * ROLLOUTS;
    assert.deepEqual(RunReader.open(dir).spanCounts(), [
      { kind: 'evaluation', spans: 1, open: 0, error: 0 },
      { kind: 'rollout', spans: n + 1, open: 1, error: 0 },
      { kind: 'tool_call', spans: n, open: 0, error: 1 },
      { kind: 'turn', spans: 2 * n, open: 0, error: 0 },
    ]);
  });

  test('a run without spans reads none', (t) => {
    const { dir, rec } = run(t, 'no-spans');
    rec.logStep({ step: 0, loss: 1 });
    rec.close();
    const r = RunReader.open(dir);
    assert.deepEqual(r.spans(), []);
    assert.deepEqual(r.spanCounts(), []);
    assert.equal(r.spanTree('0123456789abcdef'), null);
  });
});

describe('compaction', () => {
  test('close() compacts span parts into spans/spans.parquet; compactRun reports its rows', async () => {
    const { dir, total, summary } = await fixture();
    const spansDir = path.join(dir, 'spans');
    assert.ok(existsSync(path.join(spansDir, 'spans.parquet')), `spans/spans.parquet in ${readdirSync(spansDir).join(', ')}`);
    assert.deepEqual(readdirSync(spansDir).filter((f) => /^part-.*\.parquet$/.test(f)), [], 'no part files left');
    assert.equal(summary.compaction?.spanRows, total);
    const again = compactRun(dir);
    assert.ok(again.spans, 'spans reported');
    assert.equal(again.spans.rows, total);
    assert.equal(again.spans.partsMerged, 0);
  });

  test('compactRun on a live (flushed) run merges span parts; spans read once, last write', (t) => {
    const { dir, rec } = run(t, 'compact-live');
    const open = rec.startSpan('rollout', 'open');
    for (let i = 0; i < 5; i++) {
      rec.span('turn', `t${i}`, () => undefined, { parent: open });
      rec.flushSync(10_000);
    }
    const parts = readdirSync(path.join(dir, 'spans')).filter((f) => f.startsWith('part-'));
    assert.ok(parts.length >= 2, `span parts: ${parts.join(', ')}`);
    const c = compactRun(dir);
    assert.ok(c.spans);
    assert.ok(c.spans.partsMerged >= 2, `merged ${c.spans.partsMerged}`);
    assert.equal(c.spans.rows, 6, 'each span once');
    assert.equal(byName(spansOf(dir), 'open').status, 'open');
    open.end();
    rec.close();
    const spans = spansOf(dir);
    assert.equal(spans.length, 6);
    assert.equal(byName(spans, 'open').status, 'ok');
    assert.ok(existsSync(path.join(dir, 'spans', 'spans.parquet')));
  });

  test('a run without spans has no spans directory and compactRun(dir).spans is null', (t) => {
    const { dir, rec } = run(t, 'compact-none');
    rec.logStep({ step: 0, loss: 1 });
    rec.close();
    assert.equal(existsSync(path.join(dir, 'spans')), false);
    assert.equal(compactRun(dir).spans, null);
  });
});

describe('probe span list / probe info', () => {
  test('--step N --kind rollout --tree prints indented trees', async () => {
    const { dir } = await fixture();
    const r = await probe(['span', 'list', dir, '--step', '1', '--kind', 'rollout', '--tree']);
    assertCode(r, 0, 'span list --tree');
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, ROLLOUTS * 4, r.stdout);
    const roots = lines.filter((l) => l.startsWith('rollout '));
    assert.equal(roots.length, ROLLOUTS, r.stdout);
    const turns = lines.filter((l) => /^ {2}└ turn /.test(l));
    assert.equal(turns.length, 2 * ROLLOUTS, r.stdout);
    const tools = lines.filter((l) => /^ {4}└ tool_call /.test(l));
    assert.equal(tools.length, ROLLOUTS, r.stdout);
    for (const l of lines.filter((x) => !x.startsWith('rollout '))) assert.match(l, /^ +└ /);
    // tree order: rollout, turn 0, its tool call, turn 1
    const i = lines.findIndex((l) => l.startsWith('rollout "rollout-1-2"'));
    assert.ok(i >= 0, r.stdout);
    assert.match(lines[i + 1], /^ {2}└ turn "turn-1-2-0"/);
    assert.match(lines[i + 2], /^ {4}└ tool_call "tool-1-2".*ERROR Error: tool failed/);
    assert.match(lines[i + 3], /^ {2}└ turn "turn-1-2-1"/);
    assert.match(lines[i], /step 1/);
    assert.match(lines[i], /sample=s1-2/);
  });

  test('--json parses (spans, and trees with --tree)', async () => {
    const { dir } = await fixture();
    const flat = await probe(['span', 'list', dir, '--step', '1', '--kind', 'rollout', '--json']);
    assertCode(flat, 0, 'span list --json');
    const spans = JSON.parse(flat.stdout) as SpanRecord[];
    assert.deepEqual(spans.map((s) => s.name).sort(), ['rollout-1-0', 'rollout-1-1', 'rollout-1-2']);
    assert.ok(spans.every((s) => s.kind === 'rollout' && s.step === 1));
    const trees = await probe(['span', 'list', dir, '--step', '1', '--kind', 'rollout', '--tree', '--json']);
    assertCode(trees, 0, 'span list --tree --json');
    const forest = JSON.parse(trees.stdout) as Array<SpanRecord & { children: Array<SpanRecord & { children: unknown[] }> }>;
    assert.equal(forest.length, ROLLOUTS);
    for (const root of forest) {
      assert.equal(root.kind, 'rollout');
      assert.equal(root.children.length, 2);
      assert.equal(root.children[0].children.length, 1);
    }
  });

  test('--label sample=X filters; --label without = exits 64 (usage) naming --label', async () => {
    const { dir } = await fixture();
    const r = await probe(['span', 'list', dir, '--label', 'sample=s2-1', '--json']);
    assertCode(r, 0, 'span list --label');
    const spans = JSON.parse(r.stdout) as SpanRecord[];
    assert.deepEqual(spans.map((s) => s.name).sort(), ['rollout-2-1', 'tool-2-1', 'turn-2-1-0', 'turn-2-1-1']);
    const two = await probe(['span', 'list', dir, '--label', 'group=g0', '--label', 'sample=s0-2', '--json']);
    assertCode(two, 0, 'two labels');
    assert.equal((JSON.parse(two.stdout) as SpanRecord[]).length, 4);
    const bad = await probe(['span', 'list', dir, '--label', 'bad']);
    assertCode(bad, 64, 'span list --label bad');
    assert.match(bad.stderr, /--label/);
    assert.equal(bad.stdout, '');
  });

  test('text listing, --limit and no matches', async () => {
    const { dir, total } = await fixture();
    const r = await probe(['span', 'list', dir, '--limit', '3']);
    assertCode(r, 0, 'span list --limit 3');
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 4, r.stdout);
    assert.match(lines[3], new RegExp(`${total - 3} more of ${total} matching`));
    const none = await probe(['span', 'list', dir, '--kind', 'no-such-kind']);
    assertCode(none, 0, 'no match');
    assert.match(none.stdout, new RegExp(`no spans match \\(the run has ${total}\\)`));
    const open = await probe(['span', 'list', dir, '--status', 'open']);
    assert.match(open.stdout, /rollout "stuck"\s+open\s+OPEN/);
  });

  test('probe info shows a spans line with per-kind counts; --json has spans and spans_by_kind', async () => {
    const { dir, total } = await fixture();
    const n = FIXTURE_STEPS.length * ROLLOUTS;
    const text = await probe(['info', dir]);
    assertCode(text, 0, 'info');
    const line = text.stdout.split('\n').find((l) => l.startsWith('spans '));
    assert.ok(line, text.stdout);
    assert.equal(line.slice('spans'.length).trim(), `evaluation 1, rollout ${n + 1} (1 open), tool_call ${n} (1 error), turn ${2 * n}`);
    const json = await probe(['info', dir, '--json']);
    assertCode(json, 0, 'info --json');
    const info = JSON.parse(json.stdout) as { spans: number; spans_by_kind: unknown; dropped_spans: number };
    assert.equal(info.spans, total);
    assert.equal(info.dropped_spans, 0);
    assert.deepEqual(info.spans_by_kind, RunReader.open(dir).spanCounts());
  });

  test('probe info on a run without spans says none', async (t) => {
    const { dir, rec } = run(t, 'info-none');
    rec.logStep({ step: 0, loss: 1 });
    rec.close();
    const r = await probe(['info', dir]);
    assertCode(r, 0, 'info');
    const line = r.stdout.split('\n').find((l) => l.startsWith('spans '));
    assert.equal(line?.slice('spans'.length).trim(), 'none');
  });
});

describe('report', () => {
  test("sample cards hold their rollout tree with the sample's own span marked", async () => {
    const { dir } = await fixture();
    const reader = RunReader.open(dir);
    const report = await buildReport(reader, { steps: [1] });
    const html = renderHtml(report);
    const blocks = html.match(/<details class="span-tree">/g) ?? [];
    assert.ok(blocks.length >= ROLLOUTS, `span-tree blocks: ${blocks.length}`);
    byName(reader.spans(), 'turn-1-0-1'); // the span exists
    assert.match(html, /<li class="here"><b>turn<\/b> turn-1-0-1 /, 'the sample span is marked');
    assert.match(html, /<summary>rollout tree \(4 spans\)<\/summary>/);
    assert.match(html, /tool-1-2 .*ERROR Error: tool failed/);
    // the marked span is never a rollout or a sibling turn
    assert.doesNotMatch(html, /<li class="here"><b>(rollout|tool_call)<\/b>/);
    assert.doesNotMatch(html, /<li class="here"><b>turn<\/b> turn-\d-\d-0 /);
  });

  test('a run without spans has no span-tree block', async (t) => {
    const { dir, rec } = run(t, 'report-nospans');
    for (let step = 0; step < 5; step++) {
      rec.logStep({ step, loss: 1 / (step + 1), reward_mean: step });
      rec.logSamples([{ reward_total: step, completion_text: `c${step}` }], { step });
    }
    rec.close();
    const html = renderHtml(await buildReport(RunReader.open(dir), { steps: [1] }));
    assert.match(html, /c1/, 'the sample is shown');
    assert.doesNotMatch(html, /<details class="span-tree">/);
  });
});

describe('inert rank', () => {
  test('rank 1 without recordAllRanks: span() and unit() run fn, nothing is written', async (t) => {
    const dir = tempRunDir(t, 'inert');
    const rec = new Recorder(dir, { ...FAST, rank: 1 });
    t.after(() => rec.close());
    assert.equal(rec.active, false);
    assert.equal(rec.span('rollout', 'r', () => 7), 7);
    assert.equal(await rec.span('rollout', 'r', async () => 8), 8);
    assert.throws(() => rec.span('rollout', 'r', () => {
      throw new Error('passes through');
    }), /passes through/);
    assert.equal(rec.unit({ step: 1, sample: 's' }, () => 'u'), 'u');
    assert.equal(await rec.unit({ step: 1 }, async () => rec.span('turn', 't', () => 'nested')), 'nested');
    const s = rec.startSpan('rollout', 'manual');
    assert.equal(s.ended, true);
    s.setAttribute('a', 1).end();
    assert.equal(s.run(() => 9), 9);
    assert.equal(rec.currentSpan(), null);
    rec.logSamples([{ reward_total: 1 }], { step: 0 });
    const summary = rec.close();
    assert.equal(summary.counters.spansLogged, 0);
    assert.deepEqual(readdirSync(dir), [], 'nothing written');
  });
});

describe('review fixes', () => {
  test('ranks sharing a run id and reusing a key keep their spans apart (the rank is in the keyed id)', (t) => {
    const dir = tempRunDir(t, 'spans-ranks');
    const ids: string[] = [];
    for (const rank of [0, 1]) {
      const rec = new Recorder(dir, { ...FAST, runId: 'shared', rank, recordAllRanks: true });
      rec.span('rollout', `r${rank}`, (s) => {
        ids.push(s.id);
        rec.span('turn', `t${rank}`, () => 0);
      }, { key: 'rollout-7' });
      rec.close();
    }
    assert.equal(ids[0], keyedSpanId('shared', 'rollout-7'));
    assert.equal(ids[1], keyedSpanId('shared', 'rollout-7', 1));
    assert.notEqual(ids[0], ids[1]);
    const r = RunReader.open(dir);
    for (const [i, id] of ids.entries()) {
      const tree = r.spanTree(id)!;
      assert.equal(tree.span.name, `r${i}`);
      assert.deepEqual(tree.children.map((c) => [c.span.name, c.span.rank]), [[`t${i}`, i]]);
    }
  });

  test('a parent cycle left by re-recorded keyed spans still shows every span, once', (t) => {
    const { dir, rec } = run(t, 'spans-cycle');
    const a = rec.startSpan('rollout', 'a', { key: 'a' });
    const b = rec.startSpan('turn', 'b', { key: 'b', parent: a });
    b.end();
    a.end();
    // re-recorded the other way round: a under b, while b's last write is under a
    rec.startSpan('rollout', 'a', { key: 'a', parent: b }).end();
    rec.close();
    const r = RunReader.open(dir);
    const tree = r.spanTree(a.id);
    assert.ok(tree, 'a tree, not undefined');
    const names: string[] = [];
    const walk = (n: SpanTreeNode) => {
      names.push(n.span.name);
      n.children.forEach(walk);
    };
    walk(tree);
    assert.deepEqual(names.sort(), ['a', 'b']);
  });

  test('a labels option that is not an object is refused with a bad_record, the span kept', (t) => {
    const { dir, rec } = run(t, 'spans-bad-labels');
    rec.span('turn', 'x', () => 0, { labels: 'abc' as never });
    rec.close();
    const r = RunReader.open(dir);
    assert.deepEqual(r.spans()[0].labels, {});
    assert.ok(r.events().some((e) => e.kind === 'bad_record' && e.data.field === 'labels'));
  });

  test('events inside a unit: data that is not an object is kept under value; an explicit step null stays null', (t) => {
    const { dir, rec } = run(t, 'spans-event-data');
    rec.unit({ step: 4, sample: 's' }, () => {
      rec.span('turn', 'x', () => {
        rec.logEvent('list', { data: ['a', 'b'] as never });
        rec.logEvent('nostep', { step: null });
      });
    });
    rec.close();
    const events = RunReader.open(dir).events();
    const list = events.find((e) => e.kind === 'list')!;
    assert.deepEqual(list.data.value, ['a', 'b']);
    assert.equal(typeof list.data.span_id, 'string');
    assert.equal(list.step, 4);
    assert.equal(events.find((e) => e.kind === 'nostep')!.step, null);
  });

  test('a span marked with recordError reads open until it ends, then error', (t) => {
    const { rec } = run(t, 'spans-status');
    const s = rec.startSpan('turn', 'x');
    s.recordError(new Error('bad'));
    assert.equal(s.status, 'open');
    s.end();
    assert.equal(s.status, 'error');
  });
});
