/**
 * How a run ended, for every writer: ours records an ending event; Python rlprobe 0.1.0
 * records none, so a run it closed cleanly is told by what the format guarantees (the steps
 * compacted into steps.parquet, no part left, no writer lock), and a run of ours that was
 * killed by its writer lock's holder being gone. `probe info` says it and `probe watch` ends.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { REPO_ROOT, sleep, spawnChild } from './helpers/child.js';
import { cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { interopPython } from './helpers/python.js';

after(cleanupTempDirs);

const env = interopPython();
const skip = 'skip' in env ? env.skip : false;
const python = 'python' in env ? env.python : '';

/** A Python rlprobe recorder holding `dir` open after flushing `steps` steps. */
async function livePythonRun(dir: string, steps: number) {
  const proc = spawn(python, [path.join(REPO_ROOT, 'test', 'interop', 'py_live_run.py'), dir, String(steps)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  for (let waited = 0; !out.includes('flushed'); waited += 20) {
    if (waited > 30_000 || proc.exitCode !== null) throw new Error(`py_live_run.py did not flush: ${err}`);
    await sleep(20);
  }
  return { proc, exited, output: () => out, errors: () => err };
}

/** `probe watch` as a child process, its exit awaited. */
function watch(dir: string) {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'ts', 'cli', 'bin.ts'), 'watch', dir, '--interval', '50'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, exited, output: () => out };
}

/** Resolves with the exit code, or rejects after `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`${what}: still running after ${ms} ms`)))]);
}

describe('how a run ended when its writer records no ending event', { skip, concurrency: true }, () => {
  test('a run Python rlprobe closes: live while open, closed cleanly after; probe info says so and probe watch ends', async () => {
    const dir = path.join(tempDir('rlprobe-run-end-'), 'run');
    const py = await livePythonRun(dir, 40);
    const live = RunReader.open(dir);
    assert.equal(live.storage().layout, 'parts');
    assert.equal(live.status().state, 'open', live.status().summary);
    assert.match(live.status().summary, /no writer lock/);

    const w = watch(dir);
    await sleep(1500);
    assert.equal(w.proc.exitCode, null, `probe watch must keep watching a live run: ${w.output()}`);
    py.proc.stdin.end('close\n');
    assert.equal(await within(py.exited, 30_000, 'python close'), 0, py.errors());

    const closed = RunReader.open(dir);
    assert.equal(closed.storage().layout, 'compacted');
    assert.equal(closed.steps().length, 40);
    const status = closed.status();
    assert.equal(status.state, 'closed', status.summary);
    assert.match(status.summary, /^closed cleanly/);
    assert.equal(await within(w.exited, 15_000, 'probe watch on a closed Python run'), 0, w.output());

    const info = await runCli(['info', dir, '--json']);
    assert.equal(info.code, 0, info.stderr);
    assert.equal(JSON.parse(info.stdout).status.state, 'closed');
  });

  test('a live Python run that is killed cannot be told from a live one (it takes no lock): still open, and says why', async () => {
    const dir = path.join(tempDir('rlprobe-run-end-'), 'run');
    const py = await livePythonRun(dir, 10);
    py.proc.kill('SIGKILL');
    await py.exited;
    const status = RunReader.open(dir).status();
    assert.equal(status.state, 'open');
    assert.match(status.summary, /still live, or killed/);
  });

  test('a run of ours killed with SIGKILL: its writer lock\'s holder is gone, so it was killed; probe watch ends on it', async () => {
    const dir = path.join(tempDir('rlprobe-run-end-'), 'run');
    const child = spawnChild('hold-recorder.ts', [dir]);
    await child.waitForLine(/^ready$/);
    assert.equal(RunReader.open(dir).status().state, 'open', 'live while its writer runs');
    assert.match(RunReader.open(dir).status().summary, /being recorded by pid \d+/);
    child.proc.kill('SIGKILL');
    await child.exited;
    const status = RunReader.open(dir).status();
    assert.equal(status.state, 'killed', status.summary);
    assert.match(status.summary, /its writer \(pid \d+\) is gone/);
    const w = watch(dir);
    assert.equal(await within(w.exited, 15_000, 'probe watch on a killed run'), 0, w.output());
  });
});
