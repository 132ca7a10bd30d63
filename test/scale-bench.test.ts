/**
 * `probe scale-bench` end to end on a small run: it records through the real Recorder,
 * times every read surface in a child process next to DuckDB, and reports figures that
 * agree with the recording it made.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { runCli } from './helpers/fixtures.js';

interface Report {
  write: { steps: number; samplesPerStep: number; samplesWritten: number; samplesDropped: number; stepsDropped: number; stepsBytes: number; samplesBytes: number; peakRssMiB: number };
  read: { timings: Array<{ surface: string; ms: number; duckdbMs: number | null; ratio: number | null; detail: string }>; peakRssMiB: number; duckdb: boolean };
  startup: { timings: Array<{ command: string; firstMs: number; medianMs: number; runs: number }>; loadAverage: number[]; cpus: number };
}

describe('probe scale-bench', () => {
  test('records, reads back, and reports consistent figures (JSON and text)', async (t) => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-test-'));
    t.after(() => rmSync(parent, { recursive: true, force: true }));
    const out = path.join(parent, 'run');
    const r = await runCli(['scale-bench', '--steps', '400', '--samples-per-step', '4', '--startup-runs', '3', '--out', out, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Report;
    assert.equal(report.write.steps, 400);
    assert.equal(report.write.samplesWritten, 1600, '4 kept of 8 candidates per step');
    assert.equal(report.write.samplesDropped + report.write.stepsDropped, 0);
    assert.ok(report.write.stepsBytes > 0 && report.write.samplesBytes > 0);
    assert.deepEqual(report.read.timings.map((x) => x.surface), [
      'probe info',
      'all step columns',
      'one series (kl_mean)',
      'samples: top_k of the whole run (no texts)',
      'samples: 100 steps in full (texts)',
      'probe doctor',
      'probe diff (the run against itself)',
      'probe report (HTML, without the browser)',
      'probe watch: catching up',
    ]);
    assert.ok(report.read.duckdb, 'DuckDB (a devDependency) is compared against');
    for (const x of report.read.timings.filter((t) => !/^probe (doctor|diff|report|watch)/.test(t.surface))) {
      assert.ok(x.ms > 0 && x.duckdbMs !== null && x.duckdbMs > 0, JSON.stringify(x));
      assert.ok(Math.abs(x.ratio! - x.ms / x.duckdbMs!) < 1e-9);
    }
    // the figures describe the recording that was kept
    const reader = RunReader.open(out);
    assert.equal(reader.view(['step']).length, 400);
    assert.equal(report.read.timings[1].detail, `400 rows × ${reader.stepColumns().length} columns`);
    const topK = [...reader.samples({ reason: 'top_k', columns: ['step'] })].length;
    assert.equal(report.read.timings[3].detail, `${topK} samples`);
    assert.equal(report.read.timings[4].detail, `${[...reader.samples({ stepRange: [200, 299] })].length} samples`);
    // the doctor's surfaces have no DuckDB counterpart, and describe the same run
    assert.match(report.read.timings[5].detail, /^\d+ findings, 400 points$/);
    assert.equal(report.read.timings[5].duckdbMs, null);
    assert.equal(report.read.timings[6].detail, '400 steps × 2, every shared metric');
    assert.match(report.read.timings[7].detail, /^400 steps, \d+ KiB of HTML$/);
    assert.match(report.read.timings[8].detail, /^first look: 400 points, \d+ findings$/);

    // the CLI's start, each a fresh process, next to Node's own (the bench fails if a probe does)
    assert.deepEqual(report.startup.timings.map((x) => x.command), ['node -e ""', 'probe --version', 'probe info <run>']);
    for (const x of report.startup.timings) assert.ok(x.firstMs > 0 && x.medianMs > 0 && x.runs === 2, JSON.stringify(x));
    assert.equal(report.startup.loadAverage.length, 3);
    assert.ok(report.startup.cpus >= 1);

    // text output, and the temporary recording is removed when --out is not given
    const text = await runCli(['scale-bench', '--steps', '50', '--samples-per-step', '2', '--startup-runs', '2']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^scale benchmark: 50 steps, 2 samples kept per step \(of 4 candidates\)/);
    assert.match(text.stdout, /all step columns +[\d.]+ ms +[\d.]+ ms +[\d.]+×/);
    assert.match(text.stdout, /CLI start \(a fresh process each, wall time\) +first +median of 1 +load average [\d.]+ [\d.]+ [\d.]+ on \d+ CPUs\n +node -e "" +\d+ ms +\d+ ms\n +probe --version +\d+ ms +\d+ ms\n +probe info <run> +\d+ ms +\d+ ms/);
    const tmpLeft = text.stdout.match(/rlprobe-scale-[A-Za-z0-9]+/);
    assert.ok(!tmpLeft || !existsSync(path.join(os.tmpdir(), tmpLeft[0])));
  });
});
