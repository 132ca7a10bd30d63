/**
 * Distributed runs (docs/format.md#ranks) with real processes, one per rank, started
 * the way a launcher starts them: the same run directory, RANK and WORLD_SIZE in the
 * environment (test/children/rank-child.ts).
 *
 * - recordAllRanks: rank 0 writes the run, ranks 1 and 2 write `rank-001/`, `rank-002/`;
 *   the parent reader keeps steps rank-0-only and merges samples and events of every rank,
 *   rank-attributed; the CLI sees the same.
 * - without it: the non-zero ranks are inert and write nothing.
 * - `probe compact` on killed ranks compacts every rank directory.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import type { RunEvent, RunManifest, StoredSampleRecord } from '../ts/index.js';
import { freshTempDir, range, spawnChild, waitForExit } from './helpers/child.js';
import type { ChildExit, RunningChild } from './helpers/child.js';
import { runCli, withEnv } from './helpers/fixtures.js';
import type { ChildResult } from './helpers/fixtures.js';

/** Must match test/children/rank-child.ts. */
const STEPS = 50;
const SAMPLES_PER_STEP = 3;
const CHECKPOINT_EVERY = 10;
const WORLD_SIZE = 3;
const RANKS = range(0, WORLD_SIZE);

const rankDirName = (rank: number) => `rank-${String(rank).padStart(3, '0')}`;
const rankDirOf = (run: string, rank: number) => (rank === 0 ? run : path.join(run, rankDirName(rank)));

interface RankExit {
  rank: number;
  child: RunningChild;
  exit: ChildExit;
}

/** Starts one child per rank, all at once, and waits for every one of them. */
async function runRanks(runDir: string, ending: 'close' | 'kill', mode: 'all' | 'rank0'): Promise<RankExit[]> {
  const children = RANKS.map((rank) => ({
    rank,
    child: spawnChild('rank-child.ts', [runDir, ending, String(STEPS), mode], {
      env: { RANK: String(rank), WORLD_SIZE: String(WORLD_SIZE), LOCAL_RANK: String(rank) },
    }),
  }));
  const exits = await Promise.all(children.map(async (c) => ({ ...c, exit: await waitForExit(c.child, 60_000) })));
  for (const { rank, child, exit } of exits) {
    if (ending === 'close') {
      assert.equal(exit.code, 0, `rank ${rank} exits 0\n${child.describe()}`);
    } else {
      assert.equal(exit.signal, 'SIGKILL', `rank ${rank} dies by SIGKILL\n${child.describe()}`);
      assert.ok(child.lines.includes('flushed'), `rank ${rank} flushed before the kill\n${child.describe()}`);
    }
  }
  return exits;
}

function activeLine(c: RankExit): { active: boolean; dir: string } {
  const line = c.child.lines.find((l) => l.startsWith('active '));
  assert.ok(line, `rank ${c.rank} printed its recorder state\n${c.child.describe()}`);
  const m = /^active (true|false) (.+)$/.exec(line);
  assert.ok(m, line);
  return { active: m[1] === 'true', dir: m[2] };
}

function closeSummary(c: RankExit): { counters: Record<string, number>; error: string | null } {
  const line = c.child.lines.find((l) => l.startsWith('closed '));
  assert.ok(line, `rank ${c.rank} printed its close summary\n${c.child.describe()}`);
  return JSON.parse(line.slice('closed '.length)) as { counters: Record<string, number>; error: string | null };
}

function readManifest(dir: string): RunManifest {
  return JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as RunManifest;
}

function assertExit(r: ChildResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code} (signal ${r.signal})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** The sample ids a rank logs, in logging order. */
function expectedIds(rank: number): string[] {
  const out: string[] = [];
  for (let step = 0; step < STEPS; step++) for (let i = 0; i < SAMPLES_PER_STEP; i++) out.push(`r${rank}-s${step}-${i}`);
  return out;
}

/** Checks one sample against what its rank logged (its id encodes rank, step and index). */
function assertSampleOfRank(s: StoredSampleRecord, rank: number): void {
  const m = /^r(\d+)-s(\d+)-(\d+)$/.exec(s.sample_id);
  assert.ok(m, `sample id ${s.sample_id}`);
  assert.equal(Number(m[1]), rank, `sample ${s.sample_id} is attributed to rank ${s.rank}`);
  assert.equal(s.rank, rank, `sample ${s.sample_id}: rank field`);
  assert.equal(s.step, Number(m[2]), `sample ${s.sample_id}: step`);
  assert.equal(s.reward_total, rank * 100 + Number(m[3]), `sample ${s.sample_id}: reward_total`);
  assert.equal(s.group_id, `g${rank}`, `sample ${s.sample_id}: group_id`);
  assert.equal(s.capture_reason, 'all', `sample ${s.sample_id}: select:false keeps everything as "all"`);
  assert.equal(s.completion_text, `rank ${rank} step ${m[2]} sample ${m[3]}`);
}

function countByRank<T extends { rank: number }>(rows: Iterable<T>): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of rows) out[r.rank] = (out[r.rank] ?? 0) + 1;
  return out;
}

function rankDirsOn(run: string): string[] {
  return readdirSync(run).filter((n) => n.startsWith('rank-')).sort();
}

/** Values of every rank's own steps and the merged samples, for before/after comparisons. */
function snapshotValues(run: string): { steps: Record<number, unknown[]>; samples: unknown[] } {
  const steps: Record<number, unknown[]> = {};
  for (const rank of RANKS) {
    steps[rank] = RunReader.open(rankDirOf(run, rank))
      .steps()
      .map((s) => ({ step: s.step, rank: s.rank, loss: s.loss, extra: s.extra, timestamp: s.timestamp }));
  }
  const samples = [...RunReader.open(run).samples()].sort((a, b) => (a.sample_id < b.sample_id ? -1 : a.sample_id > b.sample_id ? 1 : 0));
  return { steps, samples };
}

describe('recordAllRanks: three real rank processes share one run directory', () => {
  test('steps stay rank 0, samples and events are merged rank-attributed, the CLI sees every rank', async (t) => {
    const { dir, cleanup } = freshTempDir('ranks-all');
    t.after(cleanup);
    const exits = await runRanks(dir, 'close', 'all');

    // each rank recorded into its own directory, and closed cleanly with everything written
    for (const c of exits) {
      const state = activeLine(c);
      assert.equal(state.active, true, `rank ${c.rank} records`);
      assert.equal(state.dir, rankDirOf(path.resolve(dir), c.rank), `rank ${c.rank} writes its own directory`);
      const summary = closeSummary(c);
      assert.equal(summary.error, null, `rank ${c.rank}: no writer error`);
      assert.equal(summary.counters.logged, STEPS);
      assert.equal(summary.counters.written, STEPS);
      assert.equal(summary.counters.samplesWritten, STEPS * SAMPLES_PER_STEP);
      assert.equal(summary.counters.dropped + summary.counters.bad + summary.counters.samplesDropped + summary.counters.samplesBad, 0);
    }

    // layout: the run is rank 0's, rank-001/ and rank-002/ are complete sub-recordings
    assert.deepEqual(rankDirsOn(dir), ['rank-001', 'rank-002']);
    const rootManifest = readManifest(dir);
    assert.equal(rootManifest.schema_version, 1);
    assert.equal(rootManifest.world_size, WORLD_SIZE, 'world size from WORLD_SIZE');
    assert.deepEqual(rootManifest.extra, {}, 'rank 0 manifest has no rank in extra');
    const runIds = new Set([rootManifest.run_id]);
    for (const rank of [1, 2]) {
      const m = readManifest(rankDirOf(dir, rank));
      assert.deepEqual(m.extra, { rank }, `${rankDirName(rank)}/manifest.json extra`);
      assert.equal(m.schema_version, 1);
      assert.equal(m.world_size, WORLD_SIZE);
      assert.equal(m.algorithm, 'grpo');
      runIds.add(m.run_id);
      // a complete sub-recording: its own reader sees its manifest through the schema
      assert.deepEqual(RunReader.open(rankDirOf(dir, rank)).manifest.extra, { rank });
    }
    for (const rank of RANKS) {
      const d = rankDirOf(dir, rank);
      assert.ok(existsSync(path.join(d, 'steps.parquet')), `${d}: compacted steps`);
      assert.ok(existsSync(path.join(d, 'events.jsonl')), `${d}: events`);
      assert.ok(readdirSync(path.join(d, 'samples')).some((n) => /^shard-\d+\.parquet$/.test(n)), `${d}: sample shards`);
    }

    const reader = RunReader.open(dir);
    assert.deepEqual(reader.rankDirs(), [1, 2].map((r) => path.join(path.resolve(dir), rankDirName(r))));

    await t.test('steps(): rank 0 alone, each step once', () => {
      const steps = reader.steps();
      assert.equal(steps.length, STEPS, 'no other rank\'s steps in the run\'s table');
      assert.deepEqual(steps.map((s) => s.step), range(0, STEPS));
      for (const s of steps) {
        assert.equal(s.rank, 0, `step ${s.step}: rank`);
        assert.equal(s.loss, s.step, `step ${s.step}: loss is rank 0's (rank r logs r*1000+step)`);
        assert.deepEqual(s.extra, { rank_marker: 0 });
      }
      const view = reader.view(['loss', 'extra.rank_marker']);
      assert.deepEqual(Array.from(view.steps), range(0, STEPS));
      assert.deepEqual(Array.from(view.series('loss')), range(0, STEPS));
      assert.ok(view.series('extra.rank_marker').every((v) => v === 0));
      // each rank's own sub-recording holds its own steps
      for (const rank of [1, 2]) {
        const own = RunReader.open(rankDirOf(dir, rank)).steps();
        assert.deepEqual(own.map((s) => s.step), range(0, STEPS));
        assert.ok(own.every((s) => s.rank === rank && s.loss === rank * 1000 + s.step && s.extra?.rank_marker === rank), `${rankDirName(rank)} steps`);
      }
    });

    await t.test('samples(): every rank, rank-attributed, in rank order', () => {
      const all = [...reader.samples()];
      assert.equal(all.length, WORLD_SIZE * STEPS * SAMPLES_PER_STEP);
      assert.deepEqual(countByRank(all), { 0: 150, 1: 150, 2: 150 });
      for (const s of all) assertSampleOfRank(s, Number(/^r(\d+)-/.exec(s.sample_id)?.[1]));
      assert.equal(new Set(all.map((s) => s.sample_id)).size, all.length, 'no sample twice');
      // documented order: rank 0, then each rank directory; within one, the order written
      assert.deepEqual(all.map((s) => s.rank), RANKS.flatMap((r) => Array<number>(STEPS * SAMPLES_PER_STEP).fill(r)));
      for (const rank of RANKS) {
        assert.deepEqual(all.filter((s) => s.rank === rank).map((s) => s.sample_id), expectedIds(rank), `rank ${rank}: every sample, in order`);
      }
      // batches cover the same rows
      let batched = 0;
      for (const batch of reader.sampleBatches({ batchRows: 64 })) {
        assert.ok(batch.length <= 64);
        batched += batch.length;
      }
      assert.equal(batched, all.length);
    });

    await t.test('samples({rank}): one rank, several, combined with other filters', () => {
      const one = [...reader.samples({ rank: 1 })];
      assert.equal(one.length, STEPS * SAMPLES_PER_STEP);
      for (const s of one) assertSampleOfRank(s, 1);
      assert.deepEqual(one.map((s) => s.sample_id), expectedIds(1));

      const two = [...reader.samples({ rank: [0, 2] })];
      assert.deepEqual(countByRank(two), { 0: 150, 2: 150 });
      for (const s of two) assertSampleOfRank(s, s.rank);

      assert.deepEqual([...reader.samples({ rank: 0 })].map((s) => s.sample_id), expectedIds(0));
      assert.deepEqual(
        [...reader.samples({ rank: 2, step: 7 })].map((s) => s.sample_id),
        ['r2-s7-0', 'r2-s7-1', 'r2-s7-2'],
      );
      assert.deepEqual(countByRank(reader.samples({ group: 'g1' })), { 1: 150 }, 'a group lives on one rank');
      assert.deepEqual(countByRank(reader.samples({ stepRange: [10, 11] })), { 0: 6, 1: 6, 2: 6 });
      assert.deepEqual([...reader.samples({ rank: 7 })], [], 'a rank with no directory has no samples');
    });

    await t.test('sampleFiles(): files of every rank with their row counts', () => {
      const files = reader.sampleFiles();
      const rows: Record<number, number> = {};
      for (const f of files) {
        rows[f.rank] = (rows[f.rank] ?? 0) + f.rows;
        assert.equal(f.shard, true, `${f.path}: compacted at close`);
        assert.ok(f.bytes > 0);
        assert.equal(path.dirname(path.dirname(f.path)), rankDirOf(path.resolve(dir), f.rank), `${f.path} is in rank ${f.rank}'s directory`);
      }
      assert.deepEqual(rows, { 0: 150, 1: 150, 2: 150 });
    });

    await t.test('events(): every rank, rank-attributed, ordered by time', () => {
      const events = reader.events();
      const ours = events.filter((e) => e.kind.startsWith('rank_'));
      const perRank = STEPS / CHECKPOINT_EVERY + 2; // start, checkpoints, done
      assert.equal(ours.length, WORLD_SIZE * perRank);
      assert.deepEqual(countByRank(ours), { 0: perRank, 1: perRank, 2: perRank });
      for (const e of ours) {
        assert.equal(e.rank, e.data.rank, `${e.kind} (${e.message}): rank field matches the writing rank`);
        assert.match(e.message, new RegExp(`^rank ${e.rank} `));
      }
      for (let i = 1; i < events.length; i++) {
        assert.ok(events[i - 1].timestamp <= events[i].timestamp, `events ordered by time at ${i}: ${events[i - 1].timestamp} > ${events[i].timestamp}`);
      }
      // each rank's events keep their own order, and each rank ended its recording
      for (const rank of RANKS) {
        const seqs = ours.filter((e) => e.rank === rank).map((e) => e.data.seq);
        assert.deepEqual(seqs, range(0, perRank), `rank ${rank}: its events in the order logged`);
        const mine = ours.filter((e) => e.rank === rank);
        assert.equal(mine[0].kind, 'rank_start');
        assert.equal(mine.at(-1)!.kind, 'rank_done');
        assert.deepEqual(
          mine.filter((e) => e.kind === 'rank_checkpoint').map((e) => e.step),
          range(0, STEPS).filter((s) => s % CHECKPOINT_EVERY === 0),
        );
      }
      const closes = events.filter((e) => e.kind === 'recorder_close');
      assert.deepEqual(closes.map((e) => e.rank).sort(), RANKS, 'one recorder_close per rank');
      // the merged list is exactly the union of the rank files, nothing lost or doubled
      const own = (rank: number): RunEvent[] => {
        const d = rankDirOf(dir, rank);
        return readFileSync(path.join(d, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
      };
      assert.equal(events.length, RANKS.reduce((n, r) => n + own(r).length, 0));
      for (const rank of [1, 2]) assert.ok(own(rank).every((e) => e.rank === rank), `${rankDirName(rank)}/events.jsonl holds rank ${rank}'s events`);
    });

    await t.test('the CLI: probe info / samples --rank / events see every rank', async () => {
      const [infoJson, infoText, rank2, ranks01, eventsJson] = await Promise.all([
        runCli(['info', dir, '--json']),
        runCli(['info', dir]),
        runCli(['samples', dir, '--rank', '2', '--limit', '0', '--json']),
        runCli(['samples', dir, '--rank', '0', '--rank', '1', '--limit', '0', '--json']),
        runCli(['events', dir, '--json']),
      ]);
      assertExit(infoJson, 0, 'info --json');
      const info = JSON.parse(infoJson.stdout) as {
        rows: number; first_step: number; last_step: number; samples: number; sample_ranks: number[]; rank_dirs: number;
        events: number; manifest: RunManifest; status: { state: string };
      };
      assert.equal(info.rows, STEPS, 'info counts rank 0\'s steps only');
      assert.equal(info.first_step, 0);
      assert.equal(info.last_step, STEPS - 1);
      assert.equal(info.samples, WORLD_SIZE * STEPS * SAMPLES_PER_STEP);
      assert.deepEqual([...info.sample_ranks].sort(), RANKS);
      assert.equal(info.rank_dirs, 2);
      assert.equal(info.events, reader.events().length);
      assert.equal(info.manifest.world_size, WORLD_SIZE);
      assert.equal(info.status.state, 'closed');

      assertExit(infoText, 0, 'info');
      const samplesRow = infoText.stdout.split('\n').find((l) => l.startsWith('samples '));
      assert.ok(samplesRow, infoText.stdout);
      assert.match(samplesRow, /^samples\s+450 in \d+ files? .*ranks 0, 1, 2$/);
      assert.match(infoText.stdout, /world size 3/);

      assertExit(rank2, 0, 'samples --rank 2');
      const fromRank2 = rank2.stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredSampleRecord);
      assert.equal(fromRank2.length, STEPS * SAMPLES_PER_STEP);
      for (const s of fromRank2) assertSampleOfRank(s, 2);
      assert.deepEqual(fromRank2.map((s) => s.sample_id), expectedIds(2));

      assertExit(ranks01, 0, 'samples --rank 0 --rank 1');
      const from01 = ranks01.stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredSampleRecord);
      assert.deepEqual(countByRank(from01), { 0: 150, 1: 150 });

      assertExit(eventsJson, 0, 'events --json');
      const cliEvents = JSON.parse(eventsJson.stdout) as RunEvent[];
      assert.deepEqual(cliEvents, JSON.parse(JSON.stringify(reader.events())), 'the CLI lists the merged events');
      assert.deepEqual(countByRank(cliEvents.filter((e) => e.kind === 'rank_done')), { 0: 1, 1: 1, 2: 1 });

      const text = await runCli(['samples', dir, '--rank', '1', '--step', '3']);
      assertExit(text, 0, 'samples --rank 1 --step 3');
      const heads = text.stdout.split('\n').filter((l) => l.startsWith('step '));
      assert.equal(heads.length, SAMPLES_PER_STEP, text.stdout);
      for (const h of heads) assert.match(h, /^step 3 .* rank 1 {2}id r1-s3-\d$/);
    });
  });

  test('without recordAllRanks ranks 1 and 2 are inert: nothing written, rank 0 records', async (t) => {
    const { dir, cleanup } = freshTempDir('ranks-inert');
    t.after(cleanup);
    const exits = await runRanks(dir, 'close', 'rank0');
    for (const c of exits) {
      const state = activeLine(c);
      assert.equal(state.active, c.rank === 0, `rank ${c.rank}: active`);
      const summary = closeSummary(c);
      if (c.rank === 0) {
        assert.equal(summary.counters.written, STEPS);
        assert.equal(summary.counters.samplesWritten, STEPS * SAMPLES_PER_STEP);
      } else {
        // every method was safe to call, and did nothing
        assert.ok(Object.values(summary.counters).every((v) => v === 0), `rank ${c.rank}: ${JSON.stringify(summary.counters)}`);
        assert.equal(c.child.stderr(), '', `rank ${c.rank}: silent`);
      }
    }
    assert.deepEqual(rankDirsOn(dir), [], 'no rank-* directory');
    const reader = RunReader.open(dir);
    assert.deepEqual(reader.rankDirs(), []);
    const steps = reader.steps();
    assert.deepEqual(steps.map((s) => [s.step, s.rank, s.loss]), range(0, STEPS).map((s) => [s, 0, s]));
    const samples = [...reader.samples()];
    assert.deepEqual(countByRank(samples), { 0: STEPS * SAMPLES_PER_STEP });
    for (const s of samples) assertSampleOfRank(s, 0);
    const events = reader.events();
    assert.ok(events.length > 0);
    assert.ok(events.every((e) => e.rank === 0), `only rank 0 events: ${events.map((e) => `${e.kind}@${e.rank}`).join(', ')}`);
    assert.deepEqual(reader.sampleFiles().map((f) => f.rank).filter((r) => r !== 0), []);
    // manifest: rank 0 still knows the world size
    assert.equal(reader.manifest.world_size, WORLD_SIZE);

    const info = await runCli(['info', dir, '--json']);
    assertExit(info, 0, 'info --json');
    const parsed = JSON.parse(info.stdout) as { rank_dirs: number; sample_ranks: number[]; samples: number };
    assert.equal(parsed.rank_dirs, 0);
    assert.deepEqual(parsed.sample_ranks, [0]);
    assert.equal(parsed.samples, STEPS * SAMPLES_PER_STEP);
  });

  test('an inert rank (RANK from the environment) never creates the run directory', async (t) => {
    const { dir, cleanup } = freshTempDir('ranks-inert-env');
    t.after(cleanup);
    const run = path.join(dir, 'not-created');
    await withEnv({ RANK: '2', WORLD_SIZE: '4' }, () => {
      const rec = new Recorder(run, { captureEnvironment: false });
      assert.equal(rec.active, false);
      assert.equal(rec.options.rank, 2);
      assert.equal(rec.options.worldSize, 4);
      rec.logStep({ step: 0, loss: 1 });
      rec.logSamples([{ sample_id: 'x', reward_total: 1 }], { step: 0, select: false });
      rec.logEvent('checkpoint', { step: 0, message: 'nothing', data: { a: 1 } });
      assert.equal(rec.flushSync(), true);
      assert.equal(rec.counters.logged, 0);
      const summary = rec.close();
      assert.equal(summary.compaction, null);
      assert.equal(summary.error, null);
      rec.close();
      rec.logStep({ step: 1 }); // after close: still safe
    });
    assert.equal(existsSync(run), false, 'an inert rank writes nothing, not even the directory');
    assert.deepEqual(readdirSync(dir), []);
  });

  test('probe compact compacts every rank directory of killed ranks, values unchanged', async (t) => {
    const { dir, cleanup } = freshTempDir('ranks-killed');
    t.after(cleanup);
    await runRanks(dir, 'kill', 'all');
    assert.deepEqual(rankDirsOn(dir), ['rank-001', 'rank-002']);

    // killed after flushSync: every rank left part files and no compacted file
    const partsOf = (d: string, sub: 'steps' | 'samples') =>
      existsSync(path.join(d, sub)) ? readdirSync(path.join(d, sub)).filter((n) => /^part-\d+\.parquet$/.test(n)) : [];
    const shardsOf = (d: string) =>
      existsSync(path.join(d, 'samples')) ? readdirSync(path.join(d, 'samples')).filter((n) => /^shard-\d+\.parquet$/.test(n)) : [];
    for (const rank of RANKS) {
      const d = rankDirOf(dir, rank);
      assert.ok(partsOf(d, 'steps').length > 1, `${d}: step parts before compact`);
      assert.ok(partsOf(d, 'samples').length >= 1, `${d}: sample parts before compact`);
      assert.deepEqual(shardsOf(d), [], `${d}: no shard before compact`);
      assert.equal(existsSync(path.join(d, 'steps.parquet')), false);
    }
    const reader = RunReader.open(dir);
    assert.ok(reader.sampleFiles().every((f) => !f.shard));
    assert.equal(reader.layout(), 'parts');
    const before = snapshotValues(dir);
    assert.equal(before.steps[0].length, STEPS);
    assert.equal(before.samples.length, WORLD_SIZE * STEPS * SAMPLES_PER_STEP);
    for (const rank of RANKS) {
      assert.deepEqual((before.steps[rank] as Array<{ loss: number }>).map((s) => s.loss), range(0, STEPS).map((s) => rank * 1000 + s));
    }
    // killed: no ending recorded for any rank
    assert.ok(!reader.events().some((e) => e.kind === 'recorder_close'));

    const r = await runCli(['compact', dir]);
    assertExit(r, 0, 'probe compact');
    for (const rank of [1, 2]) {
      assert.match(r.stdout, new RegExp(`${rankDirName(rank)} steps: merged \\d+ part files?; steps\\.parquet has ${STEPS} rows`), r.stdout);
      assert.match(r.stdout, new RegExp(`${rankDirName(rank)} samples: merged \\d+ part files?; ${STEPS * SAMPLES_PER_STEP} samples into new shards`), r.stdout);
    }

    for (const rank of RANKS) {
      const d = rankDirOf(dir, rank);
      assert.deepEqual(partsOf(d, 'steps'), [], `${d}: no step part after compact`);
      assert.deepEqual(partsOf(d, 'samples'), [], `${d}: no sample part after compact`);
      assert.ok(shardsOf(d).length >= 1, `${d}: sample shards after compact`);
      assert.ok(existsSync(path.join(d, 'steps.parquet')), `${d}: steps.parquet after compact`);
      assert.equal(RunReader.open(d).layout(), 'compacted');
    }
    const after = RunReader.open(dir);
    assert.ok(after.sampleFiles().every((f) => f.shard), 'every sample file is a shard');
    assert.deepEqual(snapshotValues(dir), before, 'the same steps (every rank) and samples after compaction');

    // idempotent: a second compaction merges nothing, anywhere
    const again = await runCli(['compact', dir, '--json']);
    assertExit(again, 0, 'second compact');
    const units = (JSON.parse(again.stdout) as { units: Array<{ unit: { rank: number; what: string }; result: { partsMerged: number } }> }).units;
    assert.deepEqual(units.map((u) => `${u.unit.rank}:${u.unit.what}`), RANKS.flatMap((rk) => [`${rk}:steps`, `${rk}:samples`]));
    assert.ok(units.every((u) => u.result.partsMerged === 0), again.stdout);
    assert.deepEqual(snapshotValues(dir), before);
  });
});
