/**
 * `probe watch` (RunWatcher) following a live run: the watcher is a child process started
 * before the run exists; the run is recorded in this process with small parts appearing
 * over time, then closed (compaction). Findings are printed once each, a critical one
 * halts (auto_halt event, SIGTERM to --halt-pid), and the watcher exits when the run ends.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { Recorder, RunReader, diagnose } from '../ts/index.js';
import type { Finding, RunEvent } from '../ts/index.js';
import { spawnChild, waitForExit } from './helpers/child.js';
import type { RunningChild } from './helpers/child.js';
import { healthyGrpo, injectEntropyCollapse, injectNanLoss, recordPoints } from './helpers/doctor-runs.js';
import { QUIET, ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

const BIN = path.join(ROOT, 'ts', 'cli', 'bin.ts');
const STEPS = 400;
const ONSET = 250;
/** Small parts, published as the run goes (every 20 steps). */
const RECORDING = { ...QUIET, captureEnvironment: false, flushSteps: 20 } as const;

type WatchLine = ({ type: 'finding' } & Finding) | { type: 'halt'; code: string; actions: string[] };

/** `probe watch <dir> --interval <intervalMs> ...args`, started now. */
function startWatch(dir: string, args: string[], intervalMs = 100): RunningChild {
  return spawnChild(BIN, ['watch', dir, '--interval', String(intervalMs), ...args], { env: { FORCE_COLOR: '0', NO_COLOR: '1' } });
}

/** Gives the watcher time to boot and look at the (still missing) run a few times. */
async function watcherWaiting(w: RunningChild, dir: string): Promise<void> {
  await sleep(1500);
  assert.equal(w.proc.exitCode, null, `the watcher keeps waiting for ${dir} to become a run\n${w.describe()}`);
  assert.equal(w.proc.signalCode, null);
}

function parseLines(w: RunningChild): WatchLine[] {
  return w.lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as WatchLine);
}

type FindingLine = { type: 'finding' } & Finding;

function findingLines(lines: WatchLine[]): FindingLine[] {
  return lines.filter((l): l is FindingLine => l.type === 'finding');
}

/** No code is printed twice at the same severity. */
function assertOnce(findings: Finding[], w: RunningChild): void {
  const keys = findings.map((f) => `${f.code}:${f.severity}`);
  assert.equal(new Set(keys).size, keys.length, `each finding printed once: ${JSON.stringify(keys)}\n${w.describe()}`);
}

function eventsOf(dir: string, kind: string): RunEvent[] {
  return RunReader.open(dir).events().filter((e) => e.kind === kind);
}

function sleeper(): { proc: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const proc = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e3)'], { stdio: 'ignore' });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return { proc, exited };
}

/** Closes the run (which publishes its last part before its `recorder_close` event). */
function closeRun(rec: Recorder): void {
  const s = rec.close();
  assert.ok(s.compaction && s.compaction.partsMerged > 1, `parts compacted on close: ${JSON.stringify(s.compaction)}`);
}

describe('probe watch', { concurrency: true }, () => {
  test('an entropy collapse: printed once, halts the --halt-pid process while the run is live, auto_halt recorded, exit 2', async () => {
    const dir = path.join(tempDir('rlprobe-watch-halt-'), 'run');
    const target = sleeper();
    let targetDead = false;
    void target.exited.then(() => (targetDead = true));
    const w = startWatch(dir, ['--json', '--halt-pid', String(target.proc.pid)]);
    try {
      await watcherWaiting(w, dir);

      const rec = new Recorder(dir, { ...RECORDING, runId: 'watched-collapse' });
      // the "trainer": logs until the watcher's SIGTERM reaches its stand-in process
      const logged = await recordPoints(rec, injectEntropyCollapse(healthyGrpo({ seed: 41, steps: STEPS }), ONSET), {
        delayMs: 4,
        every: 1,
        stopWhen: () => targetDead,
      });
      const death = await Promise.race([target.exited, sleep(15_000, null, { ref: false })]);
      assert.ok(death, `the halt reached pid ${target.proc.pid} while the run was still open\n${w.describe()}`);
      assert.deepEqual(death, { code: null, signal: 'SIGTERM' });
      assert.ok(logged > ONSET, `logged ${logged}`);
      closeRun(rec);

      const exit = await waitForExit(w, 20_000);
      assert.deepEqual(exit, { code: 2, signal: null }, w.describe());

      const lines = parseLines(w);
      const findings = findingLines(lines);
      assertOnce(findings, w);
      assert.ok(findings.every((f) => f.code === 'ENTROPY_COLLAPSE'), JSON.stringify(findings.map((f) => f.code)));
      const critical = findings.find((f) => f.severity === 'critical');
      assert.ok(critical, `a critical ENTROPY_COLLAPSE was printed\n${w.describe()}`);
      assert.ok(Math.abs(critical.onset_step - ONSET) <= 10, `onset ${critical.onset_step}`);

      const halts = lines.filter((l) => l.type === 'halt');
      assert.equal(halts.length, 1, w.describe());
      assert.deepEqual(halts[0], {
        type: 'halt',
        code: 'ENTROPY_COLLAPSE',
        actions: ['recorded auto_halt in events.jsonl', `sent SIGTERM to pid ${target.proc.pid}`],
      });
      // the halt follows the finding that caused it
      assert.ok(lines.indexOf(halts[0]) > lines.indexOf(critical));

      const autoHalts = eventsOf(dir, 'auto_halt');
      assert.equal(autoHalts.length, 1);
      assert.equal(autoHalts[0].data.signature_id, 'ENTROPY_COLLAPSE');
      assert.equal(autoHalts[0].data.by, 'probe watch');
      assert.equal(autoHalts[0].data.halt_pid, target.proc.pid);
      assert.equal((autoHalts[0].data.finding as Finding).severity, 'critical');
      assert.equal(autoHalts[0].rank, 0);
      // the watcher's append did not tear the recorder's own event lines
      assert.equal(RunReader.open(dir).eventsWithDiagnostics().skippedLines, 0);
      assert.equal(eventsOf(dir, 'recorder_close').length, 1);

      // what it printed agrees with the offline diagnosis of the closed run
      const offline = diagnose(RunReader.open(dir));
      assert.deepEqual(offline.findings.map((f) => `${f.code}:${f.severity}`), ['ENTROPY_COLLAPSE:critical']);
      assert.equal(offline.findings[0].onset_step, critical.onset_step);
    } finally {
      w.proc.kill('SIGKILL');
      target.proc.kill('SIGKILL');
    }
  });

  test('--halt-on never: findings printed once, no halt, no auto_halt, exit 0', async () => {
    const dir = path.join(tempDir('rlprobe-watch-never-'), 'run');
    const w = startWatch(dir, ['--json', '--halt-on', 'never']);
    try {
      await watcherWaiting(w, dir);
      const rec = new Recorder(dir, { ...RECORDING, runId: 'watched-never' });
      const logged = await recordPoints(rec, injectEntropyCollapse(healthyGrpo({ seed: 42, steps: STEPS }), ONSET), { delayMs: 4, every: 1 });
      assert.equal(logged, STEPS);
      closeRun(rec);

      const exit = await waitForExit(w, 20_000);
      assert.deepEqual(exit, { code: 0, signal: null }, w.describe());
      const lines = parseLines(w);
      assert.deepEqual(lines.filter((l) => l.type === 'halt'), []);
      const findings = findingLines(lines);
      assertOnce(findings, w);
      assert.ok(findings.some((f) => f.code === 'ENTROPY_COLLAPSE' && f.severity === 'critical'), w.describe());
      assert.deepEqual(eventsOf(dir, 'auto_halt'), []);
    } finally {
      w.proc.kill('SIGKILL');
    }
  });

  test('a trainer killed outright (no closing event) ends the watch once its --halt-pid is gone', async () => {
    const dir = path.join(tempDir('rlprobe-watch-killed-'), 'run');
    const trainer = sleeper();
    const rec = new Recorder(dir, { ...RECORDING, runId: 'watched-killed' });
    await recordPoints(rec, healthyGrpo({ seed: 45, steps: 100 }), { delayMs: 0, every: 1 });
    assert.ok(rec.flushSync(10_000));
    const w = startWatch(dir, ['--halt-pid', String(trainer.proc.pid)]);
    try {
      await sleep(1500);
      assert.equal(w.proc.exitCode, null, 'still watching the live run');
      trainer.proc.kill('SIGKILL');
      await trainer.exited;
      const exit = await waitForExit(w, 20_000);
      assert.deepEqual(exit, { code: 0, signal: null }, w.describe());
      assert.match(w.stderr(), /run ended after 100 logged points/);
      assert.deepEqual(eventsOf(dir, 'auto_halt'), []);
    } finally {
      w.proc.kill('SIGKILL');
      rec.close();
    }
  });

  test('a healthy run watched to its end: no findings, every point seen, exit 0', async () => {
    const dir = path.join(tempDir('rlprobe-watch-healthy-'), 'run');
    const w = startWatch(dir, []);
    try {
      await watcherWaiting(w, dir);
      const rec = new Recorder(dir, { ...RECORDING, runId: 'watched-healthy' });
      await recordPoints(rec, healthyGrpo({ seed: 43, steps: STEPS }), { delayMs: 4, every: 1 });
      closeRun(rec);

      const exit = await waitForExit(w, 20_000);
      assert.deepEqual(exit, { code: 0, signal: null }, w.describe());
      assert.equal(w.stdout(), '', 'no finding printed');
      assert.match(w.stderr(), new RegExp(`^watching ${path.resolve(dir).replace(/[/\\^$.*+?()[\]{}|-]/g, '\\$&')} \\(\\d+ logged points so far\\)$`, 'm'));
      assert.match(w.stderr(), new RegExp(`^run ended after ${STEPS} logged points$`, 'm'));
      assert.deepEqual(eventsOf(dir, 'auto_halt'), []);
    } finally {
      w.proc.kill('SIGKILL');
    }
  });

  test(
    'a run whose last steps are still buffered at close is diagnosed whole before the watcher exits',
    async () => {
      const dir = path.join(tempDir('rlprobe-watch-tail-'), 'run');
      const w = startWatch(dir, ['--json'], 10);
      try {
        await watcherWaiting(w, dir);
        // every step stays in the writer's buffer until close (no part on the way)
        const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, queueCapacity: 1 << 20, runId: 'watched-tail' });
        const points = injectNanLoss(healthyGrpo({ seed: 44, steps: STEPS }), STEPS - 10);
        for (let round = 0; round < 500; round++) {
          for (const p of points) rec.logStep({ ...p.record, step: round * STEPS + p.record.step, loss: round === 499 ? p.record.loss : 0.01 });
          if (round % 50 === 0) await sleep(5);
        }
        await sleep(300); // the watcher has seen the open run with no part yet
        rec.close();
        const exit = await waitForExit(w, 20_000);
        const offline = diagnose(RunReader.open(dir));
        assert.equal(offline.points, 500 * STEPS);
        const nan = offline.findings.find((f) => f.code === 'NAN_INF');
        assert.deepEqual([nan?.severity, nan?.onset_step], ['critical', 499 * STEPS + STEPS - 10], 'probe doctor finds the NaN');
        const findings = findingLines(parseLines(w));
        assert.ok(
          findings.some((f) => f.code === 'NAN_INF'),
          `the watcher exited (code ${exit.code}) without reporting the NAN_INF that probe doctor finds\n${w.describe()}`,
        );
        // close publishes the last part, then writes its closing event: a watcher that looks
        // in between sees a live run and halts it; one that looks after never halts an ended
        // run. Either way the halt line, the exit code and the event agree.
        const halts = parseLines(w).filter((l) => l.type === 'halt');
        assert.ok(halts.length <= 1, w.describe());
        assert.deepEqual(exit, { code: halts.length === 1 ? 2 : 0, signal: null }, w.describe());
        assert.equal(eventsOf(dir, 'auto_halt').length, halts.length);
      } finally {
        w.proc.kill('SIGKILL');
      }
    },
  );
});
