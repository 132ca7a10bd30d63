/**
 * Per-sample forensics: `Recorder.logSamples` (stratified selection, seeded random draw,
 * off-thread selection of large batches, malformed samples, counters), sample parts and
 * shards on disk, `RunReader.samples()` filters and the `probe samples` command.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { TestContext } from 'node:test';

import { Recorder, RlprobeError, RunReader } from '../ts/index.js';
import { MAX_HANDED_OVER_CALLS, MAX_HANDED_OVER_SAMPLES } from '../ts/recorder/sample-logger.js';
import type { RecorderOptions, SampleQuery, SampleRecord, StoredSampleRecord } from '../ts/index.js';
import { spawnChild } from './helpers/child.js';
import { runCli, stripAnsi } from './helpers/fixtures.js';
import { prng } from './helpers/prng.js';
import { openRun, tempRunDir } from './helpers/run-dir.js';

// ---- helpers

/** Options every test recorder uses: no process hooks, no environment capture, no clock flushes. */
const FAST = { installHandlers: false, captureEnvironment: false, flushIntervalMs: 3_600_000, flushSteps: 1_000_000 } as const;

/** A recorder in a fresh temporary run directory (closed and removed when the test ends). */
function run(t: TestContext, label: string, options: RecorderOptions = {}): { dir: string; rec: Recorder } {
  return openRun(t, label, { ...FAST, ...options });
}

/** A second recorder over its own temporary directory (for comparing two recorders). */
function extraRun(t: TestContext, label: string, options: RecorderOptions = {}): { dir: string; rec: Recorder } {
  const dir = tempRunDir(t, label);
  const rec = new Recorder(dir, { ...FAST, ...options });
  t.after(() => rec.close());
  return { dir, rec };
}

function readAll(dir: string, query: SampleQuery = {}): StoredSampleRecord[] {
  return [...RunReader.open(dir).samples(query)];
}

interface EventLine {
  kind: string;
  step: number | null;
  message: string;
  data: Record<string, unknown>;
}

function events(dir: string): EventLine[] {
  const file = path.join(dir, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as EventLine);
}

function badRecords(dir: string): EventLine[] {
  return events(dir).filter((e) => e.kind === 'bad_record');
}

/** Samples carrying only a reward (undefined: no reward_total key at all). */
function withRewards(rewards: ReadonlyArray<number | undefined>): SampleRecord[] {
  return rewards.map((r, i) => (r === undefined ? { completion_text: `c${i}` } : { reward_total: r, completion_text: `c${i}` }));
}

/** `sample_id`s kept for each reason, each list sorted by batch index. */
function idsByReason(samples: StoredSampleRecord[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const s of samples) (out[s.capture_reason ?? '(none)'] ??= []).push(s.sample_id);
  for (const ids of Object.values(out)) ids.sort((a, b) => indexOf(a) - indexOf(b));
  return out;
}

/** The batch index of a default sample id `<step>_<index>`. */
function indexOf(id: string): number {
  const m = /^\d+_(\d+)$/.exec(id);
  assert.ok(m, `a default sample id, got ${JSON.stringify(id)}`);
  return Number(m[1]);
}

function ids(step: number, indices: number[]): string[] {
  return indices.map((i) => `${step}_${i}`);
}

/** A deterministic permutation of 0..n-1 (so rewards are distinct and not in index order). */
function shuffled(n: number, seed: number): number[] {
  const rand = prng(seed);
  const xs = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

function assertInvariant(rec: Recorder, what: string): void {
  const c = rec.counters;
  assert.equal(
    c.samplesWritten + c.samplesDropped + c.samplesBad + c.samplesPending,
    c.samplesLogged,
    `${what}: written ${c.samplesWritten} + dropped ${c.samplesDropped} + bad ${c.samplesBad} + pending ${c.samplesPending} != logged ${c.samplesLogged}`,
  );
}

function throwsInvalidQuery(fn: () => unknown, what: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof RlprobeError, `${what}: expected RlprobeError RLPROBE_INVALID_QUERY, got ${String(caught)}`);
  assert.equal(caught.code, 'RLPROBE_INVALID_QUERY', `${what}: ${caught.message}`);
}

async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// ---- selection

describe('logSamples selection', () => {
  test('default 2 top + 2 bottom + 4 random per call, top and bottom being the true extremes', (t) => {
    const { dir, rec } = run(t, 'sel-default');
    const rewards = shuffled(20, 1).map((r) => r / 10); // 0.0 .. 1.9, distinct, scrambled
    rec.logSamples(withRewards(rewards), { step: 3 });
    const rewards2 = shuffled(30, 2).map((r) => -r);
    rec.logSamples(withRewards(rewards2), { step: 4 });
    rec.close();

    const byStep = (s: number) => readAll(dir, { step: s });
    const indexOfReward = (rs: number[], r: number) => rs.indexOf(r);

    const at3 = byStep(3);
    assert.equal(at3.length, 8, 'eight samples kept from a batch of 20');
    const r3 = idsByReason(at3);
    assert.deepEqual(r3.top_k, ids(3, [indexOfReward(rewards, 1.9), indexOfReward(rewards, 1.8)].sort((a, b) => a - b)));
    assert.deepEqual(r3.bottom_k, ids(3, [indexOfReward(rewards, 0), indexOfReward(rewards, 0.1)].sort((a, b) => a - b)));
    assert.equal(r3.random?.length, 4, 'four random');
    assert.deepEqual(Object.keys(r3).sort(), ['bottom_k', 'random', 'top_k']);
    assert.equal(new Set(at3.map((s) => s.sample_id)).size, 8, 'no sample kept twice');
    for (const s of at3) {
      const i = indexOf(s.sample_id);
      assert.equal(s.reward_total, rewards[i], `${s.sample_id} keeps its own reward`);
      assert.equal(s.completion_text, `c${i}`);
      if (s.capture_reason === 'random') assert.ok(rewards[i] >= 0.2 && rewards[i] <= 1.7, `random ${s.sample_id} is from the middle`);
    }

    const at4 = byStep(4);
    assert.equal(at4.length, 8, 'the budget applies per call');
    const r4 = idsByReason(at4);
    assert.deepEqual(r4.top_k, ids(4, [rewards2.indexOf(-0), rewards2.indexOf(-1)].sort((a, b) => a - b)));
    assert.deepEqual(r4.bottom_k, ids(4, [rewards2.indexOf(-29), rewards2.indexOf(-28)].sort((a, b) => a - b)));
    assert.equal(r4.random?.length, 4);
  });

  test('per-recorder sampling replaces the defaults for every call', (t) => {
    const { dir, rec } = run(t, 'sel-recorder', { sampling: { topK: 1, bottomK: 3, randomK: 0 } });
    const rewards = Array.from({ length: 20 }, (_, i) => i); // index == reward
    rec.logSamples(withRewards(rewards), { step: 0 });
    rec.logSamples(withRewards(rewards), { step: 1 });
    rec.close();
    assert.deepEqual(idsByReason(readAll(dir, { step: 0 })), { top_k: ['0_19'], bottom_k: ids(0, [0, 1, 2]) });
    assert.deepEqual(idsByReason(readAll(dir, { step: 1 })), { top_k: ['1_19'], bottom_k: ids(1, [0, 1, 2]) });
  });

  test('per-call sampling overrides the recorder for that call only', (t) => {
    const { dir, rec } = run(t, 'sel-call', { sampling: { topK: 1, bottomK: 3, randomK: 0 } });
    const rewards = Array.from({ length: 20 }, (_, i) => i); // index == reward
    rec.logSamples(withRewards(rewards), { step: 0, sampling: { topK: 0, bottomK: 0, randomK: 3 } });
    rec.logSamples(withRewards(rewards), { step: 1 }); // the recorder's sampling again
    rec.logSamples(withRewards(rewards), { step: 2, sampling: { topK: 2, bottomK: 1, randomK: 1 } });
    rec.close();

    const at0 = readAll(dir, { step: 0 });
    assert.equal(at0.length, 3);
    assert.ok(at0.every((s) => s.capture_reason === 'random'), JSON.stringify(at0.map((s) => s.capture_reason)));
    assert.deepEqual(idsByReason(readAll(dir, { step: 1 })), { top_k: ['1_19'], bottom_k: ids(1, [0, 1, 2]) });
    const r2 = idsByReason(readAll(dir, { step: 2 }));
    assert.deepEqual(r2.top_k, ['2_18', '2_19']);
    assert.deepEqual(r2.bottom_k, ['2_0']);
    assert.equal(r2.random?.length, 1);
  });

  test('a partial per-call sampling keeps the recorder\'s values for the keys it omits', (t) => {
    // LogSamplesOptions.sampling: "Overrides the recorder's sampling for this call (missing keys keep the recorder's)"
    const { dir, rec } = run(t, 'sel-partial', { sampling: { topK: 1, bottomK: 3, randomK: 0 } });
    const rewards = Array.from({ length: 20 }, (_, i) => i); // index == reward
    rec.logSamples(withRewards(rewards), { step: 1, sampling: { topK: 5 } }); // expected: topK 5, bottomK 3, randomK 0
    rec.close();
    assert.deepEqual(
      idsByReason(readAll(dir, { step: 1 })),
      { top_k: ids(1, [15, 16, 17, 18, 19]), bottom_k: ids(1, [0, 1, 2]) },
      'omitted bottomK/randomK must come from the recorder (1/3/0), not from the library defaults (2/2/4)',
    );
  });

  test('select: false keeps every sample as `all`, or with the reason the sample gives', (t) => {
    const { dir, rec } = run(t, 'sel-all');
    const samples: SampleRecord[] = withRewards(Array.from({ length: 30 }, (_, i) => i));
    samples[7] = { ...samples[7], capture_reason: 'flagged_by_judge' };
    rec.logSamples(samples, { step: 2, select: false });
    // with selection on, the recorder's reason wins over the sample's own
    const selected: SampleRecord[] = withRewards(Array.from({ length: 30 }, (_, i) => i));
    selected[29] = { ...selected[29], capture_reason: 'flagged_by_judge' };
    rec.logSamples(selected, { step: 3 });
    rec.close();

    const at2 = readAll(dir, { step: 2 });
    assert.equal(at2.length, 30, 'nothing thinned');
    assert.deepEqual(at2.map((s) => s.sample_id).sort(), ids(2, Array.from({ length: 30 }, (_, i) => i)).sort());
    for (const s of at2) {
      assert.equal(s.capture_reason, s.sample_id === '2_7' ? 'flagged_by_judge' : 'all', s.sample_id);
    }
    const top = readAll(dir, { step: 3 }).find((s) => s.sample_id === '3_29');
    assert.equal(top?.capture_reason, 'top_k');
  });

  test('with selection on, a batch within the budget is tagged `all` even when a sample gives its own reason', (t) => {
    // SampleRecord.capture_reason: "Set by the recorder's selection; with `select: false`, yours is kept (else `all`)."
    const { dir, rec } = run(t, 'sel-small-own-reason');
    rec.logSamples([{ reward_total: 1 }, { reward_total: 2, capture_reason: 'flagged_by_judge' }], { step: 0 });
    rec.close();
    const got = readAll(dir);
    assert.equal(got.length, 2);
    assert.deepEqual(
      got.map((s) => `${s.sample_id}:${s.capture_reason}`),
      ['0_0:all', '0_1:all'],
      "select defaults to true: the recorder's selection sets the reason, the sample's own is only kept with select: false",
    );
  });

  test('ties are broken by arrival order, the earlier sample first, at both ends', (t) => {
    const { dir, rec } = run(t, 'sel-ties');
    // indices 2, 5, 9 share the top reward; 1, 4, 8, 12 share the bottom one
    const rewards = Array.from({ length: 16 }, () => 0.5);
    for (const i of [2, 5, 9]) rewards[i] = 1;
    for (const i of [1, 4, 8, 12]) rewards[i] = -1;
    rec.logSamples(withRewards(rewards), { step: 0 });
    // all equal: top takes the first two, bottom the next two
    rec.logSamples(withRewards(Array.from({ length: 16 }, () => 7)), { step: 1 });
    rec.close();

    const r0 = idsByReason(readAll(dir, { step: 0 }));
    assert.deepEqual(r0.top_k, ['0_2', '0_5']);
    assert.deepEqual(r0.bottom_k, ['0_1', '0_4']);
    assert.equal(r0.random?.length, 4);
    const r1 = idsByReason(readAll(dir, { step: 1 }));
    assert.deepEqual(r1.top_k, ['1_0', '1_1']);
    assert.deepEqual(r1.bottom_k, ['1_2', '1_3']);
    assert.equal(r1.random?.length, 4);
  });

  test('NaN, missing and null rewards are never top or bottom, but can be drawn at random; ±Infinity rank', (t) => {
    const { dir, rec } = run(t, 'sel-nan');
    // only indices 3, 6, 10 are ranked
    const samples: SampleRecord[] = Array.from({ length: 14 }, (_, i) => ({ reward_total: NaN, completion_text: `c${i}` }));
    samples[0] = { completion_text: 'no reward' };
    samples[1] = { reward_total: null as never };
    samples[3] = { reward_total: 0.5 };
    samples[6] = { reward_total: -2 };
    samples[10] = { reward_total: 9 };
    rec.logSamples(samples, { step: 0 });

    // a batch where only one sample is ranked: top gets it, bottom is empty, random fills up
    const lone: SampleRecord[] = Array.from({ length: 12 }, () => ({ reward_total: NaN }));
    lone[5] = { reward_total: -100 };
    rec.logSamples(lone, { step: 1 });

    // ±Infinity are extremes like any other number
    const inf = withRewards(Array.from({ length: 12 }, (_, i) => i));
    inf[4] = { reward_total: -Infinity };
    inf[8] = { reward_total: Infinity };
    rec.logSamples(inf, { step: 2 });
    rec.close();

    const r0 = idsByReason(readAll(dir, { step: 0 }));
    assert.deepEqual(r0.top_k, ['0_3', '0_10'], 'the two largest ranked rewards');
    assert.deepEqual(r0.bottom_k, ['0_6'], 'the only ranked sample left');
    assert.equal(r0.random?.length, 4, 'four random from the unranked');
    for (const id of r0.random ?? []) assert.ok(![3, 6, 10].includes(indexOf(id)), `random ${id} is an unranked sample`);
    assert.equal(readAll(dir, { step: 0 }).length, 7);

    const r1 = idsByReason(readAll(dir, { step: 1 }));
    assert.deepEqual(r1.top_k, ['1_5']);
    assert.equal(r1.bottom_k, undefined, 'no ranked sample left for bottom');
    assert.equal(r1.random?.length, 4);

    const r2 = idsByReason(readAll(dir, { step: 2 }));
    assert.deepEqual(r2.top_k, ['2_8', '2_11']);
    assert.deepEqual(r2.bottom_k, ['2_0', '2_4']);
    const infTop = readAll(dir, { step: 2 }).find((s) => s.sample_id === '2_8');
    assert.equal(infTop?.reward_total, Infinity);
  });

  test('a batch no larger than the budget is kept whole as `all`; one more is thinned', (t) => {
    const { dir, rec } = run(t, 'sel-small');
    rec.logSamples(withRewards([3, 1, 2, 9, 0]), { step: 0 });
    rec.logSamples(withRewards(Array.from({ length: 8 }, (_, i) => i)), { step: 1 });
    rec.logSamples(withRewards(Array.from({ length: 9 }, (_, i) => i)), { step: 2 });
    rec.logSamples(withRewards([5, 6]), { step: 3, sampling: { topK: 1, bottomK: 0, randomK: 0 } });
    rec.logSamples([], { step: 4 });
    rec.close();

    const at0 = readAll(dir, { step: 0 });
    assert.deepEqual(at0.map((s) => s.sample_id).sort(), ids(0, [0, 1, 2, 3, 4]));
    assert.ok(at0.every((s) => s.capture_reason === 'all'));
    const at1 = readAll(dir, { step: 1 });
    assert.equal(at1.length, 8);
    assert.ok(at1.every((s) => s.capture_reason === 'all'), 'exactly the budget: kept whole');
    const r2 = idsByReason(readAll(dir, { step: 2 }));
    assert.equal(readAll(dir, { step: 2 }).length, 8, 'budget + 1: thinned to the budget');
    assert.deepEqual(r2.top_k, ['2_7', '2_8']);
    assert.deepEqual(r2.bottom_k, ['2_0', '2_1']);
    assert.equal(r2.random?.length, 4);
    const r3 = idsByReason(readAll(dir, { step: 3 }));
    assert.deepEqual(r3, { top_k: ['3_1'] }, 'a per-call budget of 1 thins a batch of 2');
    assert.equal(readAll(dir, { step: 4 }).length, 0, 'an empty call writes nothing');
  });

  test('the random draw is seeded: same seed and calls draw the same, another seed differs, calls draw independently', (t) => {
    const batches = [0, 1, 2].map((k) => withRewards(shuffled(50, 10 + k)));
    const draw = (seed: number, label: string) => {
      const { dir, rec } = extraRun(t, label, { seed });
      batches.forEach((b, step) => rec.logSamples(b, { step }));
      rec.close();
      return readAll(dir).map((s) => `${s.step}/${s.sample_id}/${s.capture_reason}`);
    };
    const a = draw(42, 'seed-a');
    const b = draw(42, 'seed-b');
    const c = draw(43, 'seed-c');
    assert.equal(a.length, 24);
    assert.deepEqual(b, a, 'same seed, same calls: the same samples kept');
    const randomOf = (xs: string[]) => xs.filter((x) => x.endsWith('/random')).sort();
    assert.notDeepEqual(randomOf(c), randomOf(a), 'another seed draws other random samples');
    const deterministic = (xs: string[]) => xs.filter((x) => !x.endsWith('/random')).sort();
    assert.deepEqual(deterministic(c), deterministic(a), 'top and bottom do not depend on the seed');

    // the same batch logged twice by one recorder: the call ordinal changes the draw
    const { dir, rec } = extraRun(t, 'seed-ordinal', { seed: 42 });
    const same = withRewards(shuffled(60, 99));
    rec.logSamples(same, { step: 0 });
    rec.logSamples(same, { step: 1 });
    rec.close();
    const rand = (step: number) => readAll(dir, { step, reason: 'random' }).map((s) => indexOf(s.sample_id)).sort((x, y) => x - y);
    assert.equal(rand(0).length, 4);
    assert.notDeepEqual(rand(1), rand(0), 'two calls with the same batch draw independently');
  });

  test('a 5000-sample batch is selected off-thread with the same result as the synchronous path', async (t) => {
    const rewards = shuffled(5000, 7).map((r) => r / 1000);
    const samples = () => withRewards(rewards);
    const sorted = [...rewards.keys()].sort((x, y) => rewards[y] - rewards[x]);
    const expectTop = ids(5, sorted.slice(0, 2).sort((x, y) => x - y));
    const expectBottom = ids(5, sorted.slice(-2).sort((x, y) => x - y));

    // off-thread: nothing handed to the writer until the selection comes back
    const asyncRun = extraRun(t, 'async-a', { seed: 1234 });
    asyncRun.rec.logSamples(samples(), { step: 5 });
    assert.equal(asyncRun.rec.counters.samplesLogged, 0, 'a batch of 5000 is not selected in the call');
    await until(() => asyncRun.rec.counters.samplesLogged === 8, 'the off-thread selection');
    asyncRun.rec.close();

    // settled synchronously by close() before the off-thread selection can come back
    const syncRun = extraRun(t, 'async-b', { seed: 1234 });
    syncRun.rec.logSamples(samples(), { step: 5 });
    syncRun.rec.close();

    // settled synchronously by flushSync(): readable at once
    const flushRun = extraRun(t, 'async-c', { seed: 1234 });
    flushRun.rec.logSamples(samples(), { step: 5 });
    assert.equal(flushRun.rec.flushSync(10_000), true);
    assert.equal(flushRun.rec.counters.samplesLogged, 8, 'flushSync settles the pending selection');
    const live = readAll(flushRun.dir);
    assertInvariant(flushRun.rec, 'after flushSync');
    flushRun.rec.close();

    const key = (xs: StoredSampleRecord[]) => xs.map((s) => `${s.sample_id}/${s.capture_reason}`).sort();
    const a = readAll(asyncRun.dir);
    const b = readAll(syncRun.dir);
    assert.equal(a.length, 8);
    const ra = idsByReason(a);
    assert.deepEqual(ra.top_k, expectTop, 'top: the two largest rewards of the 5000');
    assert.deepEqual(ra.bottom_k, expectBottom, 'bottom: the two smallest rewards of the 5000');
    assert.equal(ra.random?.length, 4);
    assert.deepEqual(key(b), key(a), 'the synchronous path keeps exactly the same samples');
    assert.deepEqual(key(live), key(a), 'flushSync keeps exactly the same samples');
    for (const s of a) assert.equal(s.reward_total, rewards[indexOf(s.sample_id)]);
  });
});

// ---- the hand-over

/** Samples whose every property read is counted in `reads[index]`. */
function watched(n: number, reads: number[], offset = 0): SampleRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const k = offset + i;
    reads[k] = 0;
    return {
      get reward_total() {
        reads[k]++;
        return (i * 37) % n;
      },
      get completion_text() {
        reads[k]++;
        return `c${i}`;
      },
    } as SampleRecord;
  });
}

/** The hand-over waits for a turn only where the exit hooks would see it through. */
const HAND_OVER = { installHandlers: true } as const;

describe('logSamples hands the batch over', () => {
  test('a logStep encodes what is handed over before its step: a step never reaches the writer ahead of earlier samples', (t) => {
    const { dir, rec } = extraRun(t, 'handover-step', HAND_OVER);
    const reads: number[] = [];
    rec.logSamples(watched(40, reads), { step: 0 });
    assert.equal(reads.reduce((a, b) => a + b, 0), 0, 'handed over');
    rec.logStep({ step: 0, loss: 1 });
    assert.ok(reads.every((r) => r >= 1), 'selected before the step was queued');
    assert.equal(rec.flushSync(10_000), true);
    assert.equal(readAll(dir).length, 8);
  });

  test('without our exit hooks (installHandlers: false) a call selects and encodes at once', (t) => {
    const { rec } = run(t, 'handover-no-hooks', { installHandlers: false });
    const reads: number[] = [];
    rec.logSamples(watched(40, reads), { step: 0 });
    assert.ok(reads.every((r) => r >= 1), 'every reward read in the call');
    assert.equal(reads.filter((r) => r >= 2).length, 8, 'the kept samples encoded in the call');
  });

  test('the call reads no sample; they are selected, encoded and counted at the next turn of the event loop', async (t) => {
    const { dir, rec } = extraRun(t, 'handover', HAND_OVER);
    const reads: number[] = [];
    rec.logSamples(watched(40, reads), { step: 3 });
    assert.equal(reads.reduce((a, b) => a + b, 0), 0, 'no sample read in the call');
    await nextTurn();
    assert.ok(reads.every((r) => r >= 1), 'every reward read by the selection at the next turn');
    assert.equal(reads.filter((r) => r >= 2).length, 8, 'the 8 kept samples encoded (their text read)');
    assert.equal(rec.flushSync(10_000), true);
    assert.equal(readAll(dir).length, 8);
  });

  test('a counters read, flushSync and close encode what is handed over at once', (t) => {
    const { dir, rec } = extraRun(t, 'handover-sync', HAND_OVER);
    rec.logSamples(withRewards(shuffled(40, 1)), { step: 0 });
    assert.equal(rec.counters.samplesLogged, 8, 'counted from the call on');
    rec.logSamples(withRewards(shuffled(40, 2)), { step: 1 });
    assert.equal(rec.flushSync(10_000), true);
    assert.equal(readAll(dir).length, 16, 'flushSync publishes the handed-over call');
    rec.logSamples(withRewards(shuffled(40, 3)), { step: 2 });
    assert.equal(rec.close().counters.samplesWritten, 24, 'close writes the last call');
    assert.equal(readAll(dir).length, 24);
  });

  test('refilling or emptying the array after the call changes nothing recorded', async (t) => {
    const { dir, rec } = extraRun(t, 'handover-refill', HAND_OVER);
    const batch = withRewards([1, 2, 3]);
    rec.logSamples(batch, { step: 0 });
    batch[0] = { reward_total: 99, completion_text: 'refilled' };
    batch.length = 1;
    await nextTurn();
    rec.flushSync(10_000);
    const got = readAll(dir).map((s) => s.completion_text).sort();
    assert.deepEqual(got, ['c0', 'c1', 'c2']);
  });

  test(`a loop that never yields keeps at most ${MAX_HANDED_OVER_SAMPLES} samples and ${MAX_HANDED_OVER_CALLS} calls waiting: later calls encode the oldest`, (t) => {
    const { dir, rec } = extraRun(t, 'handover-bound', { ...HAND_OVER, sampleQueueBytes: 256 * 1024 * 1024 });
    const reads: number[] = [];
    const calls = 200;
    for (let c = 0; c < calls; c++) rec.logSamples(watched(64, reads, 64 * c), { step: c });
    const perCall = Array.from({ length: calls }, (_, c) => reads.slice(64 * c, 64 * c + 64).some((r) => r > 0));
    const waiting = MAX_HANDED_OVER_SAMPLES / 64;
    assert.deepEqual(perCall.indexOf(false), calls - waiting, `the first ${calls - waiting} calls encoded, the last ${waiting} waiting`);
    assert.ok(perCall.slice(calls - waiting).every((read) => !read), 'no newer call read');

    // one-sample calls: bounded in calls
    const small = extraRun(t, 'handover-bound-calls', { ...HAND_OVER, sampleQueueBytes: 256 * 1024 * 1024 });
    const smallReads: number[] = [];
    for (let c = 0; c < 300; c++) small.rec.logSamples(watched(1, smallReads, c), { step: c });
    assert.equal(smallReads.filter((r) => r > 0).length, 300 - MAX_HANDED_OVER_CALLS);
    assert.equal(small.rec.close().counters.samplesWritten, 300);
    assert.equal(rec.close().counters.samplesWritten, calls * 8);
    assert.equal(readAll(dir).length, calls * 8);
  });

  test('SIGKILL while a loop that never yields is busy: every step on disk has its samples', async (t) => {
    const dir = tempRunDir(t, 'handover-sigkill');
    const child = spawnChild('samples-exit.ts', [dir, 'busy-sigkill']);
    await child.waitForLine(/^ready$/, 60_000);
    child.proc.kill('SIGKILL');
    await child.exited;
    const steps = RunReader.open(dir).steps().map((s) => s.step);
    assert.ok(steps.length >= 10, `steps were published before the kill (${steps.length}): ${child.describe()}`);
    const got = readAll(dir);
    for (const step of steps) assert.equal(got.filter((s) => s.step === step).length, 8, `step ${step} is on disk, so are its 8 samples`);
  });

  for (const ending of ['natural', 'exit3', 'throw', 'reject', 'sigterm'] as const) {
    test(`samples handed over just before the process ends (${ending}) are written`, async (t) => {
      const dir = tempRunDir(t, `handover-${ending}`);
      const child = spawnChild('samples-exit.ts', [dir, ending]);
      const exit = await child.exited;
      assert.notEqual(exit.code, 64, child.describe());
      const got = readAll(dir);
      const byStep = [0, 1, 2].map((step) => got.filter((s) => s.step === step).length);
      assert.deepEqual(byStep, [8, 8, 8], `8 samples kept a step, the last call too (${child.describe()})`);
    });
  }
});

// ---- malformed input and counters

describe('malformed samples and counters', () => {
  test('bad samples become bad_record events naming the field; the rest of the call is written', (t) => {
    const { dir, rec } = run(t, 'bad-samples');
    const cases: Array<[unknown, string]> = [
      [{ completion_len: 1.5 }, 'completion_len'],
      [{ completion_len: -3 }, 'completion_len'],
      [{ reward_total: 'high' }, 'reward_total'],
      [{ mystery_field: 'text' }, 'mystery_field'],
      [{ truncated: 'yes' }, 'truncated'],
      [{ completion_token_ids: [1, 2.5, 3] }, 'completion_token_ids'],
      [{ reward_components: { format: 'ok' } }, 'reward_components.format'],
      [42, 'record'],
      [
        {
          get completion_text(): string {
            throw new Error('getter exploded');
          },
        },
        'record',
      ],
    ];
    const batch: unknown[] = [{ completion_text: 'good first' }, ...cases.map(([s]) => s), { completion_text: 'good last', reward_total: 1 }];
    assert.doesNotThrow(() => rec.logSamples(batch as SampleRecord[], { step: 5, select: false }));
    // a whole call refused for its options
    assert.doesNotThrow(() => rec.logSamples([{ completion_text: 'x' }], { step: 6, sampling: { topK: -1 } }));
    assert.doesNotThrow(() => rec.logSamples([{ completion_text: 'x' }], { step: 6, bogus: true } as never));
    // no step anywhere
    assert.doesNotThrow(() => rec.logSamples([{ completion_text: 'stepless' }]));
    assert.equal(rec.flushSync(10_000), true);

    const c = rec.counters;
    assert.equal(c.samplesWritten, 2);
    assert.equal(c.samplesBad, cases.length + 1);
    assertInvariant(rec, 'after bad samples');

    const written = readAll(dir);
    assert.deepEqual(written.map((s) => s.sample_id).sort(), ['5_0', `5_${cases.length + 1}`]);
    assert.deepEqual(written.map((s) => s.completion_text).sort(), ['good first', 'good last']);

    const bad = badRecords(dir);
    const perSample = bad.filter((e) => e.data.record === 'sample');
    assert.deepEqual(
      perSample.slice(0, cases.length).map((e) => e.data.field),
      cases.map(([, field]) => field),
      'one bad_record per malformed sample, in order, naming its field',
    );
    assert.deepEqual(perSample.slice(0, cases.length).map((e) => e.data.index), cases.map((_, i) => i + 1), 'the batch index');
    assert.ok(perSample.slice(0, cases.length).every((e) => e.step === 5), 'the call step');
    assert.equal(perSample[cases.length]?.data.field, 'step', 'a sample with no step at all');
    assert.equal(perSample.length, cases.length + 1);

    const calls = bad.filter((e) => e.data.record !== 'sample');
    assert.deepEqual(calls.map((e) => e.data.field), ['options.sampling.topK', 'options.bogus']);
    assert.ok(calls.every((e) => e.step === 6));
    assert.equal(readAll(dir, { step: 6 }).length, 0, 'a refused call writes nothing');
  });

  test('counters: written + dropped + bad + pending == logged, also with a tiny sample queue', async (t) => {
    const { dir, rec } = run(t, 'counters');
    assertInvariant(rec, 'fresh');
    let kept = 0;
    for (let step = 0; step < 20; step++) {
      rec.logSamples(withRewards(shuffled(40, step)), { step });
      kept += 8;
      assertInvariant(rec, `after step ${step}`);
    }
    rec.logSamples([{ completion_len: -1 }, { completion_len: 1 }], { step: 20 });
    kept += 2;
    rec.logSamples(withRewards(shuffled(4096, 5)), { step: 21 }); // off-thread
    kept += 8;
    assertInvariant(rec, 'with a selection pending');
    await until(() => rec.counters.samplesLogged === kept, 'the off-thread selection');
    assert.equal(rec.flushSync(10_000), true);
    let c = rec.counters;
    assert.equal(c.samplesLogged, kept, 'logged counts the samples kept by selection');
    assert.equal(c.samplesBad, 1);
    assert.equal(c.samplesPending, 0, 'nothing pending after flushSync');
    assert.equal(c.samplesWritten, kept - 1);
    assertInvariant(rec, 'after flushSync');
    const summary = rec.close();
    c = summary.counters;
    assert.equal(c.samplesWritten + c.samplesDropped + c.samplesBad + c.samplesPending, c.samplesLogged);
    assert.equal(readAll(dir).length, c.samplesWritten);

    // a queue too small for more than one call at a time: refused calls count as dropped
    const tiny = extraRun(t, 'counters-tiny', { sampleQueueBytes: 1024 });
    const text = 'x'.repeat(4000);
    for (let i = 0; i < 300; i++) tiny.rec.logSamples([{ completion_text: text }, { completion_text: text }], { step: i });
    assertInvariant(tiny.rec, 'tiny queue, before flush');
    const s = tiny.rec.close();
    const tc = s.counters;
    assert.equal(tc.samplesLogged, 600);
    assert.equal(tc.samplesBad, 0);
    assert.equal(tc.samplesPending, 0);
    assert.equal(tc.samplesWritten + tc.samplesDropped, 600);
    assert.equal(readAll(tiny.dir).length, tc.samplesWritten, 'the reader sees exactly the written samples');
  });
});

// ---- files

describe('sample files', () => {
  test('close() compacts the parts into shards of 4096 rows (10,000 rows: 4096 + 4096 + 1808), parts gone', (t) => {
    const { dir, rec } = run(t, 'shards');
    for (let k = 0; k < 4; k++) {
      const batch: SampleRecord[] = Array.from({ length: 2500 }, (_, i) => ({ reward_total: i, completion_len: i, group_id: k }));
      rec.logSamples(batch, { step: k, select: false });
      assert.equal(rec.flushSync(10_000), true);
    }
    const live = RunReader.open(dir).sampleFiles();
    assert.ok(live.length >= 1, 'part files before close');
    assert.ok(live.every((f) => !f.shard && /^part-\d{5}\.parquet$/.test(path.basename(f.path))), JSON.stringify(live));
    assert.equal(live.reduce((n, f) => n + f.rows, 0), 10_000);

    const summary = rec.close();
    assert.equal(summary.compaction?.sampleRows, 10_000);
    assert.equal(summary.compaction?.samplePartsMerged, live.length);

    const files = RunReader.open(dir).sampleFiles();
    assert.deepEqual(files.map((f) => f.rows), [4096, 4096, 1808]);
    assert.ok(files.every((f) => f.shard && f.rank === 0 && f.bytes > 0));
    assert.deepEqual(files.map((f) => path.basename(f.path)), ['shard-00000.parquet', 'shard-00001.parquet', 'shard-00002.parquet']);
    const onDisk = readdirSync(path.join(dir, 'samples'));
    assert.deepEqual(onDisk.filter((f) => f.startsWith('part-')), [], `parts left: ${onDisk.join(' ')}`);
    // the columns file stays: the shards' union schema, for tools that read samples/*.parquet
    assert.deepEqual(onDisk.filter((f) => f.endsWith('.parquet')).sort(), ['columns.parquet', 'shard-00000.parquet', 'shard-00001.parquet', 'shard-00002.parquet']);

    const all = readAll(dir, { columns: ['step', 'sample_id', 'completion_len'] });
    assert.equal(all.length, 10_000);
    assert.equal(new Set(all.map((s) => `${s.step}/${s.sample_id}`)).size, 10_000);
    assert.deepEqual(all.slice(0, 2).map((s) => s.sample_id), ['0_0', '0_1'], 'order written');
    assert.equal(all[9_999].sample_id, '3_2499');
    assert.equal(all[9_999].completion_len, 2499);
  });

  test('flushSync publishes parts readable while the recorder is live', (t) => {
    const { dir, rec } = run(t, 'live');
    rec.logSamples(withRewards([1, 2, 3]), { step: 0 });
    assert.equal(rec.flushSync(10_000), true);
    assert.deepEqual(readAll(dir).map((s) => s.sample_id), ['0_0', '0_1', '0_2']);
    rec.logSamples(withRewards(Array.from({ length: 20 }, (_, i) => i)), { step: 1 });
    assert.equal(rec.flushSync(10_000), true);
    const reader = RunReader.open(dir);
    assert.equal([...reader.samples()].length, 11);
    assert.equal([...reader.samples({ step: 1, reason: 'top_k' })].map((s) => s.sample_id).join(), '1_18,1_19');
    assert.ok(reader.sampleFiles().every((f) => !f.shard));
    assert.ok(existsSync(path.join(dir, 'samples')));
    rec.close();
    assert.equal(readAll(dir).length, 11, 'the same samples after close');
  });
});

// ---- reading

describe('reading samples', () => {
  test('filters: step, stepRange, reason, group (integer id), rank, columns, batchRows', (t) => {
    const { dir, rec } = run(t, 'filters');
    for (let step = 0; step < 6; step++) {
      const batch: SampleRecord[] = Array.from({ length: 12 }, (_, i) => ({
        reward_total: i,
        group_id: i % 3,
        prompt_text: `prompt ${step}/${i}`,
        completion_text: `completion ${step}/${i}`,
      }));
      rec.logSamples(batch, { step });
    }
    rec.close();
    const reader = RunReader.open(dir);
    const q = (query: SampleQuery) => [...reader.samples(query)];

    assert.equal(q({}).length, 48);
    const s2 = q({ step: 2 });
    assert.equal(s2.length, 8);
    assert.ok(s2.every((s) => s.step === 2));
    const range = q({ stepRange: [1, 3] });
    assert.deepEqual([...new Set(range.map((s) => s.step))].sort(), [1, 2, 3]);
    assert.equal(range.length, 24);
    assert.equal(q({ stepRange: [4, 4] }).length, 8);
    assert.equal(q({ stepRange: [6, 100] }).length, 0);

    const top = q({ reason: 'top_k' });
    assert.equal(top.length, 12);
    assert.ok(top.every((s) => s.capture_reason === 'top_k' && s.reward_total! >= 10));
    const ends = q({ reason: ['top_k', 'bottom_k'], step: 5 });
    assert.deepEqual(ends.map((s) => s.sample_id).sort(), ['5_0', '5_1', '5_10', '5_11']);
    assert.equal(q({ reason: 'all' }).length, 0);

    const g1 = q({ group: 1 });
    assert.ok(g1.length > 0);
    assert.ok(g1.every((s) => s.group_id === '1'), JSON.stringify(g1.map((s) => s.group_id)));
    assert.deepEqual(q({ group: '1' }), g1, 'integer and string group ids match alike');
    assert.equal(q({}).filter((s) => s.group_id === '1').length, g1.length);
    assert.equal(q({ group: 7 }).length, 0);
    assert.deepEqual(q({ group: 2, step: 3, reason: 'top_k' }).map((s) => s.sample_id), ['3_11']);

    assert.equal(q({ rank: 0 }).length, 48);
    assert.equal(q({ rank: [1, 2] }).length, 0);

    const slim = q({ step: 0, columns: ['step', 'sample_id', 'reward_total', 'capture_reason'] });
    assert.equal(slim.length, 8);
    for (const s of slim) {
      assert.equal(s.prompt_text, undefined);
      assert.equal(s.completion_text, undefined);
      assert.equal(s.group_id, undefined);
      assert.equal(s.step, 0);
      assert.equal(typeof s.reward_total, 'number');
      assert.equal(s.reward_total, indexOf(s.sample_id));
      assert.ok(s.capture_reason);
    }
    const full = q({ step: 0 });
    assert.ok(full.every((s) => s.completion_text === `completion 0/${indexOf(s.sample_id)}` && s.prompt_text === `prompt 0/${indexOf(s.sample_id)}`));

    const batches = [...reader.sampleBatches({ batchRows: 5 })];
    assert.ok(batches.length >= 10, `${batches.length} batches`);
    assert.ok(batches.every((b) => b.length >= 1 && b.length <= 5));
    assert.deepEqual(batches.flat(), q({}), 'batches hold the same samples in the same order');
  });

  test('sample ids default to <step>_<index>; a sample\'s own step wins; ids as strings; extra and other fields round-trip', (t) => {
    const { dir, rec } = run(t, 'ids');
    const batch: SampleRecord[] = [
      {},
      { step: 9 },
      { sample_id: 123 },
      { sample_id: 'custom-id', group_id: 5, prompt_id: 77 },
      {
        reward_total: 0.25,
        reward_components: { format: 1, correctness: -0.5 },
        advantage: -1.25,
        logprob_mean: -0.75,
        kl_contribution: 0.001,
        completion_len: 3,
        truncated: true,
        completion_token_ids: [5, 0, 70000],
        extra: { judge_score: 0.9 },
        entropy: 2.5,
      } as SampleRecord,
    ];
    rec.logSamples(batch, { step: 7 });
    rec.close();

    const got = readAll(dir);
    assert.equal(got.length, 5);
    const byId = new Map(got.map((s) => [s.sample_id, s]));
    assert.deepEqual([...byId.keys()].sort(), ['123', '7_0', '7_4', '9_1', 'custom-id']);
    assert.equal(byId.get('7_0')?.step, 7);
    assert.equal(byId.get('9_1')?.step, 9, "the sample's own step wins");
    assert.equal(byId.get('123')?.step, 7);
    const custom = byId.get('custom-id')!;
    assert.equal(custom.group_id, '5');
    assert.equal(custom.prompt_id, '77');
    const rich = byId.get('7_4')!;
    assert.equal(rich.rank, 0);
    assert.equal(rich.reward_total, 0.25);
    assert.deepEqual(rich.reward_components, { format: 1, correctness: -0.5 });
    assert.equal(rich.advantage, -1.25);
    assert.equal(rich.logprob_mean, -0.75);
    assert.equal(rich.kl_contribution, 0.001);
    assert.equal(rich.completion_len, 3);
    assert.equal(rich.truncated, true);
    assert.deepEqual(rich.completion_token_ids, [5, 0, 70000]);
    assert.deepEqual(rich.extra, { judge_score: 0.9, entropy: 2.5 });
    assert.equal(rich.capture_reason, 'all');
    assert.equal(readAll(dir, { step: 9 }).length, 1, 'the own step is the stored step');
  });

  test('a 100 KB completion with non-ASCII text and emoji round-trips exactly, live and after compaction', (t) => {
    const { dir, rec } = run(t, 'big-text');
    const unit = 'Résumé ∑ 日本語テキスト 🚀🧪👩🏽‍💻 \u0000 tab\tnewline\n"quote" \\ ';
    let completion = '';
    while (Buffer.byteLength(completion) < 100 * 1024) completion += unit;
    assert.ok(Buffer.byteLength(completion) >= 100 * 1024);
    const prompt = `Q: ${'🦀'.repeat(5000)} ?`;
    rec.logSamples([{ sample_id: 'big', prompt_text: prompt, completion_text: completion, completion_len: completion.length }, { sample_id: 'small', completion_text: 'ok' }], {
      step: 1,
    });
    assert.equal(rec.flushSync(10_000), true);
    const live = readAll(dir).find((s) => s.sample_id === 'big');
    assert.equal(live?.completion_text?.length, completion.length);
    assert.ok(live?.completion_text === completion, 'live: the completion is byte-identical');
    assert.ok(live?.prompt_text === prompt, 'live: the prompt is identical');
    rec.close();
    const after = readAll(dir, { batchRows: 1 });
    assert.deepEqual(after.map((s) => s.sample_id), ['big', 'small']);
    assert.ok(after[0].completion_text === completion, 'after compaction: identical');
    assert.ok(after[0].prompt_text === prompt);
    assert.equal(after[1].completion_text, 'ok');
  });

  test('an invalid query throws RLPROBE_INVALID_QUERY at the call, not when iterated', (t) => {
    const { dir, rec } = run(t, 'bad-query');
    rec.logSamples(withRewards([1, 2]), { step: 0 });
    rec.close();
    const reader = RunReader.open(dir);
    const bad: Array<[string, unknown]> = [
      ['step -1', { step: -1 }],
      ['step 1.5', { step: 1.5 }],
      ['stepRange reversed', { stepRange: [5, 1] }],
      ['unknown filter', { bogus: 1 }],
      ['empty reason', { reason: '' }],
      ['rank -1', { rank: -1 }],
      ['batchRows 0', { batchRows: 0 }],
      ['group 1.5', { group: 1.5 }],
    ];
    for (const [what, query] of bad) {
      throwsInvalidQuery(() => reader.samples(query as SampleQuery), `samples(${what})`);
      throwsInvalidQuery(() => reader.sampleBatches(query as SampleQuery), `sampleBatches(${what})`);
    }
    assert.equal([...reader.samples({ stepRange: [0, 0] })].length, 2, 'a valid query still works');
  });
});

// ---- CLI

describe('probe samples', () => {
  test('text and --json output, filters and --limit', async (t) => {
    const { dir, rec } = run(t, 'cli');
    const rewards = [0.1, 0.2, 0.05, 0.3, 0.93, 0.4, 0.5, 0.6, 0.01, 0.7, 0.8, 0.35];
    rec.logSamples(
      rewards.map((r, i) => ({ reward_total: r, advantage: 0.5, completion_len: 10, completion_text: `answer ${i}`, prompt_text: 'what?' })),
      { step: 12 },
    );
    rec.logSamples(
      Array.from({ length: 3 }, (_, i) => ({ reward_total: i, group_id: 17, completion_text: `g ${i}` })),
      { step: 13 },
    );
    rec.close();

    const [text, json, topOnly, group, limited, badSteps] = await Promise.all([
      runCli(['samples', dir]),
      runCli(['samples', dir, '--json']),
      runCli(['samples', dir, '--steps', '12..12', '--reason', 'top_k', '--json']),
      runCli(['samples', dir, '--group', '17', '--json']),
      runCli(['samples', dir, '--limit', '1']),
      runCli(['samples', dir, '--steps', '9..2']),
    ]);
    for (const [r, what] of [[text, 'text'], [json, 'json'], [topOnly, 'top only'], [group, 'group'], [limited, 'limit']] as const) {
      assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.stdout}\n${r.stderr}`);
    }

    const out = stripAnsi(text.stdout);
    const headers = out.split('\n').filter((l) => l.startsWith('step '));
    assert.equal(headers.length, 11, `one header per sample:\n${out}`);
    assert.ok(
      headers.includes('step 12  top_k (top reward of its batch)  reward 0.930  adv +0.500  len 10  rank 0  id 12_4'),
      `the top sample's header:\n${headers.join('\n')}`,
    );
    assert.ok(headers.some((h) => /^step 12 {2}bottom_k \(bottom reward of its batch\) {2}reward 0\.010 .* id 12_8$/.test(h)), headers.join('\n'));
    assert.equal(headers.filter((h) => / random \(random draw from the middle\) /.test(h)).length, 4);
    assert.equal(headers.filter((h) => / all \(whole batch kept\) /.test(h)).length, 3);
    assert.ok(headers.some((h) => h.includes('group 17') && h.endsWith('id 13_2')));
    assert.match(out, /completion {2}answer 4/);

    const lines = json.stdout.trim().split('\n');
    assert.equal(lines.length, 11);
    const parsed = lines.map((l) => JSON.parse(l) as StoredSampleRecord);
    const top = parsed.find((s) => s.sample_id === '12_4');
    assert.equal(top?.capture_reason, 'top_k');
    assert.equal(top?.reward_total, 0.93);
    assert.equal(top?.step, 12);
    assert.equal(top?.completion_text, 'answer 4');
    assert.deepEqual(parsed.map((s) => s.sample_id).sort(), readAll(dir).map((s) => s.sample_id).sort());

    const tops = topOnly.stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredSampleRecord);
    assert.deepEqual(tops.map((s) => s.sample_id).sort(), ['12_10', '12_4']);
    assert.ok(tops.every((s) => s.capture_reason === 'top_k'));

    const grouped = group.stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredSampleRecord);
    assert.deepEqual(grouped.map((s) => s.sample_id), ['13_0', '13_1', '13_2']);
    assert.ok(grouped.every((s) => s.group_id === '17'));

    const limitedHeaders = stripAnsi(limited.stdout).split('\n').filter((l) => l.startsWith('step '));
    assert.equal(limitedHeaders.length, 1);
    assert.match(limited.stdout, /stopped at 1 samples/);

    assert.notEqual(badSteps.code, 0, 'a reversed --steps range fails');
    assert.match(badSteps.stderr, /stepRange|steps/);
  });
});
