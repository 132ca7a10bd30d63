/**
 * SIGKILL at random moments: while steps are written, while a live run is compacted, and
 * inside close() (flush + compaction). Nothing runs in the child after SIGKILL, so this
 * checks the on-disk format itself: whatever the moment of death, the run opens, every
 * step is there at most once, the steps form a prefix 0..k-1 of what was logged, nothing
 * published by a completed flushSync() is lost, and compactRun() finishes the job.
 *
 * RLPROBE_SIGKILL_RUNS=<n> changes the number of kills (default 24, at least 20 on CI),
 * RLPROBE_SIGKILL_SEED=<n> replays a sequence of kill moments.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { RunReader, compactRun } from '../ts/index.js';
import type { StoredStepRecord } from '../ts/index.js';
import { freshTempDir, range, sleep, spawnChild, waitForExit } from './helpers/child.js';
import type { RunningChild } from './helpers/child.js';
import { killWriterStep as stepRecord } from './helpers/kill-writer-step.js';
import { prng } from './helpers/prng.js';

const CHILD = 'kill-writer.ts';
const CLOSE_STEPS = 300; // as in the child

function killCount(): number {
  const raw = process.env.RLPROBE_SIGKILL_RUNS;
  let n = raw !== undefined && raw !== '' ? Number(raw) : 24;
  if (!Number.isInteger(n) || n < 1) throw new Error(`RLPROBE_SIGKILL_RUNS=${raw} is not a positive integer`);
  if (process.env.CI) n = Math.max(n, 20);
  return n;
}

const SEED = process.env.RLPROBE_SIGKILL_SEED ? Number(process.env.RLPROBE_SIGKILL_SEED) : (Math.random() * 2 ** 32) >>> 0;

interface RunState {
  steps: StoredStepRecord[];
  layout: string;
}

/**
 * The invariants of a killed (or compacted) run: opens; steps 0..k-1 each exactly once with
 * the values logged; k >= `atLeast`; events readable, checkpoints unique and complete below
 * `atLeast`; no recorder_error.
 */
function checkRun(dir: string, atLeast: number, where: string): RunState {
  const r = RunReader.open(dir);
  const rows = r.steps();
  const numbers = rows.map((s) => s.step);
  assert.equal(new Set(numbers).size, numbers.length, `duplicate steps in ${dir} (${where}): ${numbers.length} rows, ${new Set(numbers).size} distinct`);
  const k = numbers.length;
  assert.deepEqual([...numbers].sort((a, b) => a - b), range(0, k), `steps of ${dir} are not 0..${k - 1} (${where})`);
  assert.ok(k >= atLeast, `${dir} (${where}): ${k} steps survived but "flushed ${atLeast}" was printed`);
  for (const row of rows) {
    const { timestamp, rank, ...rest } = row;
    assert.equal(typeof timestamp, 'number');
    assert.equal(rank, 0);
    assert.deepEqual(rest, stepRecord(row.step), `values of step ${row.step} in ${dir} (${where})`);
  }

  const { events, skippedLines } = r.eventsWithDiagnostics();
  assert.ok(skippedLines <= 1, `${skippedLines} unreadable event lines in ${dir} (at most the torn last one)`);
  assert.deepEqual(
    events.filter((e) => e.kind === 'recorder_error'),
    [],
    `recorder_error events in ${dir}`,
  );
  const checkpoints = events.filter((e) => e.kind === 'checkpoint').map((e) => e.step as number);
  assert.equal(new Set(checkpoints).size, checkpoints.length, `duplicate checkpoint events in ${dir}`);
  for (const s of checkpoints) assert.equal(s % 97, 0);
  const mustHave = range(0, atLeast).filter((s) => s % 97 === 0);
  for (const s of mustHave) assert.ok(checkpoints.includes(s), `checkpoint event of step ${s} lost in ${dir} (${where})`);
  return { steps: rows, layout: r.layout() };
}

/** What a kill left behind, for the test's diagnostics (evidence of where kills landed). */
function leftBehind(dir: string, layout: string): string {
  const temps = (d: string, prefix: string) => (existsSync(d) ? readdirSync(d).filter((n) => n.startsWith(prefix) && n.includes('.tmp-')).length : 0);
  const notes = [layout];
  const partTemps = temps(path.join(dir, 'steps'), '.part-');
  const compactionTemps = temps(dir, '.steps');
  const leftovers = RunReader.open(dir).absorbedLeftovers();
  if (partTemps) notes.push(`${partTemps} part temp`);
  if (compactionTemps) notes.push(`${compactionTemps} steps.parquet temp (killed mid-compaction)`);
  if (leftovers) notes.push(`${leftovers} absorbed parts not yet unlinked (killed mid-compaction)`);
  return notes.join(', ');
}

/** checkRun, then compactRun and the same invariants on the compacted run. */
function checkThenCompact(dir: string, atLeast: number, label: string, notes: string[] = []): number {
  const before = checkRun(dir, atLeast, `${label}, as killed`);
  notes.push(leftBehind(dir, before.layout));
  const first = compactRun(dir).steps;
  const after = checkRun(dir, atLeast, `${label}, after compactRun`);
  assert.equal(after.layout, before.steps.length === 0 ? 'empty' : 'compacted', `layout after compactRun (${label})`);
  assert.equal(first.rows, before.steps.length, `compactRun rows (${label})`);
  assert.deepEqual(after.steps, before.steps, `compactRun changed the steps (${label})`);
  const second = compactRun(dir).steps;
  assert.equal(second.partsMerged, 0, 'compactRun is idempotent');
  assert.equal(second.leftoversRemoved, 0, 'compactRun is idempotent');
  return before.steps.length;
}

function lastFlushed(lines: string[], prefix = ''): number {
  let n = 0;
  const re = new RegExp(`^flushed ${prefix}(\\d+)$`);
  for (const l of lines) {
    const m = re.exec(l);
    if (m) n = Math.max(n, Number(m[1]));
  }
  return n;
}

type Mode = 'loop' | 'compact' | 'compact-aimed' | 'close' | 'close-aimed';
const MODES: Mode[] = ['loop', 'compact', 'close', 'compact-aimed', 'close-aimed'];

async function killOnce(i: number, mode: Mode, rand: () => number): Promise<string> {
  const tmp = freshTempDir('sigkill');
  const runDir = path.join(tmp.dir, 'run');
  const variant = mode.replace('-aimed', '');
  const child = spawnChild(CHILD, [runDir, variant]);
  let killedAt = '';
  try {
    await child.waitForLine(/^ready$/, 60_000);
    const delay = 50 + Math.floor(rand() * 1450);
    await sleep(delay);
    killedAt = `${delay} ms after ready`;
    if (mode.endsWith('-aimed')) {
      // aim at compaction: kill a few ms after the next "compacting"/"closing" line
      const from = child.lines.length;
      await child.waitForLine(/^(compacting|closing) /, 30_000, from);
      const extra = Math.floor(rand() * 15);
      await sleep(extra);
      killedAt += `, then ${extra} ms after a compaction started`;
    }
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    const exit = await waitForExit(child, 60_000);
    assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, `the child must die by our SIGKILL\n${child.describe()}`);
    const label = `kill #${i} (${mode}, ${killedAt}, seed ${SEED})`;
    try {
      if (variant === 'close') return `${label}: ${checkCloseRuns(runDir, child, label)}`;
      const notes: string[] = [];
      const k = checkThenCompact(runDir, lastFlushed(child.lines), label, notes);
      return `${label}: ${k} steps survived (last "flushed" ${lastFlushed(child.lines)}), left ${notes.join('')}`;
    } catch (error) {
      (error as Error).message += `\n${label}; run at ${runDir} (kept with RLPROBE_KEEP_TMP=1)\n${child.describe()}`;
      throw error;
    }
  } finally {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    await child.exited.catch(() => undefined);
    tmp.cleanup(); // kept when RLPROBE_KEEP_TMP is set
  }
}

/** The close variant: every closed run is complete and compacted; the one being written obeys the invariants. */
function checkCloseRuns(base: string, child: RunningChild, label: string): string {
  const closed = new Set(child.lines.filter((l) => l.startsWith('closed ')).map((l) => Number(l.slice(7))));
  const dirs = existsSync(base) ? readdirSync(base).filter((n) => /^run-\d+$/.test(n)) : [];
  const indexes = dirs.map((n) => Number(n.slice(4))).sort((a, b) => a - b);
  assert.deepEqual(indexes, range(0, indexes.length), 'run directories are run-0..run-m');
  let open = 'none';
  for (const idx of indexes) {
    const dir = path.join(base, `run-${idx}`);
    if (closed.has(idx)) {
      const r = RunReader.open(dir);
      assert.equal(r.layout(), 'compacted', `closed run-${idx} is compacted`);
      const kinds = r.events().map((e) => e.kind);
      assert.equal(kinds.at(-1), 'recorder_close', `closed run-${idx} ends with recorder_close`);
      assert.equal(checkThenCompact(dir, CLOSE_STEPS, `${label}, closed run-${idx}`), CLOSE_STEPS);
      continue;
    }
    assert.equal(idx, indexes.length - 1, `only the last run may be unfinished (run-${idx})`);
    if (!existsSync(path.join(dir, 'manifest.json'))) {
      // killed inside the constructor, before the manifest was published: nothing recorded yet
      assert.equal(existsSync(path.join(dir, 'steps')), false);
      open = `run-${idx} killed before its manifest`;
      continue;
    }
    const notes: string[] = [];
    const k = checkThenCompact(dir, lastFlushed(child.lines, `${idx} `), `${label}, open run-${idx}`, notes);
    open = `run-${idx} had ${k} steps, left ${notes.join('')}`;
  }
  return `${closed.size} runs closed, ${open}`;
}

describe('SIGKILL at random moments', () => {
  const runs = killCount();
  test(`${runs} kills (seed ${SEED})`, { timeout: 600_000 }, async (t) => {
    const rand = prng(SEED);
    t.diagnostic(`seed ${SEED} (replay with RLPROBE_SIGKILL_SEED=${SEED})`);
    for (let i = 0; i < runs; i++) {
      const summary = await killOnce(i, MODES[i % MODES.length], rand);
      t.diagnostic(summary);
    }
  });
});

/** Simulates a SIGKILL between the rename of steps.parquet and the unlink of the parts it absorbed. */
function compactKilledBeforeUnlink(runDir: string): void {
  const partsDir = path.join(runDir, 'steps');
  const parts = readdirSync(partsDir).filter((n) => /^part-\d+\.parquet$/.test(n));
  const saved = path.join(runDir, '..', `saved-${Date.now()}`);
  mkdirSync(saved);
  for (const p of parts) copyFileSync(path.join(partsDir, p), path.join(saved, p));
  compactRun(runDir);
  mkdirSync(partsDir, { recursive: true });
  for (const p of parts) copyFileSync(path.join(saved, p), path.join(partsDir, p));
}

describe('interrupted compactions', () => {
  test('two SIGKILLed sessions, each followed by a compaction killed before it unlinked the parts', { timeout: 120_000 }, async (t) => {
    const tmp = freshTempDir('sigkill-compact');
    t.after(tmp.cleanup);
    const runDir = path.join(tmp.dir, 'run');
    const session = async (from: number, to: number) => {
      const child = spawnChild(CHILD, [runDir, 'range', String(from), String(to)]);
      await child.waitForLine(new RegExp(`^flushed ${to}$`), 60_000);
      child.proc.kill('SIGKILL');
      assert.deepEqual(await waitForExit(child), { code: null, signal: 'SIGKILL' }, child.describe());
    };

    await session(0, 120);
    checkRun(runDir, 120, 'session 1 killed');
    compactKilledBeforeUnlink(runDir);
    assert.equal(RunReader.open(runDir).layout(), 'mixed');
    assert.equal(checkRun(runDir, 120, 'compaction 1 interrupted').steps.length, 120);

    // resumed in the same directory: new parts next to steps.parquet and its leftovers
    await session(120, 250);
    assert.equal(checkRun(runDir, 250, 'session 2 killed').steps.length, 250);
    compactKilledBeforeUnlink(runDir);
    assert.equal(checkRun(runDir, 250, 'compaction 2 interrupted').steps.length, 250);

    compactRun(runDir);
    const done = checkRun(runDir, 250, 'compacted');
    assert.equal(done.steps.length, 250);
    assert.equal(done.layout, 'compacted');
  });
});
