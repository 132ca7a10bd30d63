/**
 * Issue 15, items 1-3, end to end: a training loop at 1,000 steps/s logging samples,
 * steps and events is SIGKILLed at a random moment. Whatever the options, samples and
 * events reach disk on the steps' cadence (before the fix: steps on disk, no sample and no
 * event), and the steps lost stay within max(flushSteps, rows logged in one flushIntervalMs).
 *
 * RLPROBE_CADENCE_SEED=<n> replays the kill moments.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { freshTempDir, sleep, spawnChild, waitForExit } from './helpers/child.js';
import { prng } from './helpers/prng.js';

const SEED = process.env.RLPROBE_CADENCE_SEED ? Number(process.env.RLPROBE_CADENCE_SEED) : (Math.random() * 2 ** 32) >>> 0;
const RATE = 1000;

interface Setting {
  flushSteps: number;
  flushIntervalMs: number;
  kills: number;
}

const SETTINGS: Setting[] = [
  { flushSteps: 200, flushIntervalMs: 5000, kills: 3 }, // the defaults
  { flushSteps: 1, flushIntervalMs: 5000, kills: 2 },
  { flushSteps: 200, flushIntervalMs: 1000, kills: 2 },
];

function lastLogged(lines: string[]): number {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^logged (\d+)$/.exec(lines[i]);
    if (m) return Number(m[1]);
  }
  return 0;
}

async function killOnce(s: Setting, rand: () => number): Promise<string> {
  const tmp = freshTempDir('kill-cadence');
  const runDir = path.join(tmp.dir, 'run');
  const child = spawnChild('cadence-writer.ts', [runDir, String(RATE), String(s.flushSteps), String(s.flushIntervalMs)]);
  try {
    await child.waitForLine(/^ready$/, 60_000);
    await sleep(1500 + Math.floor(rand() * 1500));
    const logged = lastLogged(child.lines); // at least this many steps were logged
    child.proc.kill('SIGKILL');
    assert.deepEqual(await waitForExit(child, 60_000), { code: null, signal: 'SIGKILL' }, child.describe());

    const run = RunReader.open(runDir);
    const steps = run.steps().map((r) => r.step);
    const onDisk = steps.length;
    assert.deepEqual(steps, Array.from({ length: onDisk }, (_, i) => i), 'steps on disk are a prefix of those logged');
    const lost = logged - onDisk;
    const bound = Math.max(s.flushSteps, (RATE * s.flushIntervalMs) / 1000);
    assert.ok(lost <= bound, `${lost} steps lost of ${logged} logged: more than max(flushSteps, rows per flushIntervalMs) = ${bound}`);

    const samples = [...run.samples()];
    assert.ok(samples.length > 0, `no sample on disk after ${logged} steps and ${onDisk} steps on disk`);
    const lastSampleStep = Math.max(...samples.map((x) => x.step as number));
    assert.ok(lastSampleStep >= onDisk - 1 - 50, `samples lag the steps on disk: last sample step ${lastSampleStep}, ${onDisk} steps on disk`);

    const marks = run.events().filter((e) => e.kind === 'mark').map((e) => e.step as number);
    // events go out as they come: every mark logged 200+ steps (200 ms) before the kill is on disk
    const due = Math.floor((logged - 200) / 10);
    assert.ok(marks.length >= due, `${marks.length} mark events on disk, ${due} were logged over 200 ms before the kill`);
    return `flushSteps ${s.flushSteps}, flushIntervalMs ${s.flushIntervalMs}: logged ≥ ${logged}, on disk ${onDisk} steps (lost ≤ ${lost}, bound ${bound}), ${samples.length} samples (last step ${lastSampleStep}), ${marks.length} mark events`;
  } catch (error) {
    (error as Error).message += `\nseed ${SEED}; run at ${runDir}\n${child.describe().slice(-2000)}`;
    throw error;
  } finally {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    await child.exited.catch(() => undefined);
    tmp.cleanup();
  }
}

describe('SIGKILL of a loop at 1,000 steps/s', () => {
  test(`samples and events reach disk with the steps (seed ${SEED})`, { timeout: 300_000 }, async (t) => {
    t.diagnostic(`seed ${SEED} (replay with RLPROBE_CADENCE_SEED=${SEED})`);
    const rand = prng(SEED);
    for (const s of SETTINGS) for (let i = 0; i < s.kills; i++) t.diagnostic(await killOnce(s, rand));
  });
});
