/**
 * `probe serve` as a user starts it: it prints where it serves, answers, and stops cleanly
 * on Ctrl-C (exit 0, within seconds, nothing left open); another interface than loopback
 * prints a warning; a busy port is an error naming it; a folder that is not one is a usage
 * error.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { Recorder } from '../ts/index.js';
import { QUIET, ROOT, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

/** `probe serve …` in a child, resolved once it printed where it serves. */
function startCli(args: string[]): Promise<{ child: ReturnType<typeof spawn>; url: string; stderr: () => string; exit: Promise<{ code: number | null; signal: string | null; ms: number }> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'ts/cli/bin.ts', 'serve', ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let signalledAt = 0;
  const exit = new Promise<{ code: number | null; signal: string | null; ms: number }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, ms: Date.now() - signalledAt })));
  const origKill = child.kill.bind(child);
  child.kill = (s?: NodeJS.Signals | number) => {
    signalledAt = Date.now();
    return origKill(s);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`probe serve did not start:\n${stderr}`)), 60_000);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (t: string) => {
      stderr += t;
      const m = /at (http:\/\/\S+\/)\n/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], stderr: () => stderr, exit });
      }
    });
    child.on('exit', () => reject(new Error(`probe serve exited before serving:\n${stderr}`)));
  });
}

function folderWithRun(): string {
  const root = tempDir('rlprobe-serve-cli-');
  const rec = new Recorder(path.join(root, 'exp', 'run-1'), { ...QUIET, captureEnvironment: false, runId: 'run-1' });
  for (let step = 0; step < 10; step++) rec.logStep({ step, loss: 1 / (step + 1) });
  rec.close();
  return root;
}

describe('probe serve from the command line', () => {
  test('serves the folder, answers, and exits 0 on SIGINT within seconds', { timeout: 90_000 }, async () => {
    const root = folderWithRun();
    const s = await startCli([root, '--port', '0']);
    assert.match(s.stderr(), /^serving 1 run under .* at http:\/\/127\.0\.0\.1:\d+\/\n/m);
    const runs = (await (await fetch(`${s.url}api/runs`)).json()) as { runs: Array<{ id: string; path: string }> };
    assert.deepEqual(runs.runs.map((r) => [r.id, r.path]), [['run-1', `${path.basename(root)}/exp/run-1`]]);
    // an open event stream must not hold the exit up
    const stream = await fetch(`${s.url}api/stream?runs=`);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    s.child.kill('SIGINT');
    const exit = await s.exit;
    assert.equal(exit.code, 0, s.stderr());
    assert.ok(exit.ms < 3000, `exit took ${exit.ms} ms`);
    assert.match(s.stderr(), /stopped\n$/);
  });

  test('--no-diagnose: the server diagnoses nothing itself, and says so', { timeout: 90_000 }, async () => {
    const s = await startCli([folderWithRun(), '--port', '0', '--no-diagnose']);
    try {
      // with diagnoses on, this run is diagnosed as soon as it is found
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.match(s.stderr(), /^the server's own diagnoses are off/m);
      const list = (await (await fetch(`${s.url}api/runs`)).json()) as { runs: Array<{ diagnosis: string }>; server: { diagnoses: { run: number } } };
      assert.deepEqual([list.runs.map((r) => r.diagnosis), list.server.diagnoses.run], [['none'], 0]);
    } finally {
      s.child.kill('SIGINT');
    }
    assert.equal((await s.exit).code, 0);
  });

  test('another interface than loopback is served with a warning', { timeout: 90_000 }, async () => {
    const s = await startCli([folderWithRun(), '--port', '0', '--host', '0.0.0.0']);
    assert.match(s.stderr(), /^warning: serving on 0\.0\.0\.0: anyone who can reach this machine can read these runs/m);
    s.child.kill('SIGTERM');
    assert.equal((await s.exit).code, 0);
  });

  test('a busy port is an error naming it; a folder that is not one is a usage error', { timeout: 90_000 }, async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const busy = await runCli(['serve', folderWithRun(), '--port', String(port)]);
      assert.equal(busy.code, 1, busy.stderr);
      assert.match(busy.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use \\(--port 0 picks a free one\\)`));
    } finally {
      blocker.close();
    }
    const missing = await runCli(['serve', path.join(tempDir(), 'nope')]);
    assert.equal(missing.code, 64, missing.stderr);
    assert.match(missing.stderr, /invalid dir ".*nope": not a directory/);
  });
});
