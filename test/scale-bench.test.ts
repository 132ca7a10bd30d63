/**
 * `probe scale-bench` end to end on a small run: it records through the real Recorder (or
 * reads an existing run with --run), times every read surface and DuckDB's answer to the
 * same question, each in a fresh process (first call, warm median, peak RSS), and reports
 * figures that agree with the recording; DuckDB missing or answering differently is said.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { formatReport, readInChildren, writeScaleRun } from '../ts/bench/scale.js';
import type { ReadFigures, StartupFigures, WriteFigures } from '../ts/bench/scale.js';
import type { CallFigures } from '../ts/bench/fresh-process.js';
import { RunReader } from '../ts/index.js';
import { ROOT, runCli, runNode } from './helpers/fixtures.js';

/** What `--json` prints: the same figures as the text. */
interface Report {
  write: WriteFigures | null;
  read: ReadFigures;
  startup: StartupFigures;
}

const SURFACES = [
  'probe info',
  'all step columns',
  'one series (kl_mean)',
  'samples: top_k of the whole run (no texts)',
  'samples: 100 steps in full (texts)',
  'probe doctor',
  'probe diff (the run against itself)',
  'probe report (HTML, without the browser)',
  'probe watch: catching up',
];
const WITH_DUCKDB = new Set(SURFACES.slice(0, 5));

/** The text table's header line, every column named. */
const HEADER = /^ {2}surface +ours first +ours warm +DuckDB first +DuckDB warm +ratio +RSS ours +RSS DuckDB$/m;

/** A time as the table prints it. */
const ms = (x: number): string => (x < 1000 ? `${x.toFixed(1)} ms` : `${(x / 1000).toFixed(2)} s`);
const CELL = String.raw`[\d.]+ m?s`;

function lastJson(stdout: string): Report {
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Report;
}

function assertFigures(f: CallFigures, warm: number, what: string): void {
  assert.ok(f.firstMs > 0 && f.warmMedianMs > 0, `${what}: ${JSON.stringify(f)}`);
  assert.equal(f.warmRuns, warm, what);
  // VmHWM is the larger of the recorded peak and the current RSS, which the kernel counts
  // per thread or per CPU and sums approximately: two reads can go back by a few pages
  const slackMiB = 1;
  assert.ok(f.startRssMiB > 0 && f.startRssMiB <= f.peakRssFirstMiB + slackMiB && f.peakRssFirstMiB <= f.peakRssMiB + slackMiB, `${what}: ${JSON.stringify(f)}`);
}

describe('probe scale-bench', () => {
  let parent: string;
  /** The recording the first test keeps (--out), read again by the others with --run. */
  let run: string;
  before(() => {
    parent = mkdtempSync(path.join(os.tmpdir(), 'rlprobe-scale-test-'));
    run = path.join(parent, 'run');
  });
  after(() => rmSync(parent, { recursive: true, force: true }));

  test('records, then times each surface and DuckDB each in a fresh process: first call, warm median, peak RSS; JSON and text agree with the run', async () => {
    const r = await runCli(['scale-bench', '--steps', '400', '--samples-per-step', '4', '--warm', '2', '--startup-runs', '3', '--out', run, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = lastJson(r.stdout);
    assert.equal(report.write!.steps, 400);
    assert.equal(report.write!.samplesWritten, 1600, '4 kept of 8 candidates per step');
    assert.equal(report.write!.samplesDropped + report.write!.stepsDropped, 0);
    assert.ok(report.write!.stepsBytes > 0 && report.write!.samplesBytes > 0);

    const read = report.read;
    assert.deepEqual(read.run, { dir: run, steps: 400, samples: 1600 });
    assert.ok(Math.abs(Date.parse(read.date) - Date.now()) < 10 * 60_000, read.date);
    assert.equal(read.loadAverage.before.length, 3);
    assert.equal(read.loadAverage.after.length, 3);
    assert.equal(read.warmRuns, 2);
    assert.deepEqual(read.duckdb, { available: true, version: read.duckdb.version, unavailable: null });
    assert.match(read.duckdb.version!, /^v\d+\.\d+/);
    assert.deepEqual(read.timings.map((x) => x.surface), SURFACES);
    for (const x of read.timings) {
      assertFigures(x.ours, 2, `${x.surface}, ours`);
      if (!WITH_DUCKDB.has(x.surface)) {
        assert.equal(x.duckdb, null, x.surface);
        assert.equal(x.ratio, null, x.surface);
        continue;
      }
      assertFigures(x.duckdb!, 2, `${x.surface}, DuckDB`);
      assert.ok(x.duckdb!.openMs > 0);
      if (x.surface === 'probe info') {
        // the whole command against count/min/max from the footers: no ratio of unlike work
        assert.equal(x.ratio, null, 'no ratio for probe info');
        continue;
      }
      assert.ok(Math.abs(x.ratio! - x.ours.warmMedianMs / x.duckdb!.warmMedianMs) < 1e-9, 'the ratio is of the warm medians');
    }
    assert.equal(read.peakRssMiB, Math.max(...read.timings.map((x) => x.ours.peakRssFirstMiB)));

    // the figures describe the recording that was kept, and DuckDB answered with the same rows
    const reader = RunReader.open(run);
    const byName = new Map(read.timings.map((x) => [x.surface, x]));
    assert.deepEqual(byName.get('all step columns')!.shape, { rows: 400, columns: reader.stepColumns().length }, 'every step column, in both');
    assert.equal(byName.get('all step columns')!.detail, `400 rows × ${reader.stepColumns().length} columns`);
    assert.deepEqual(byName.get('one series (kl_mean)')!.shape, { rows: 400, columns: 1 }, 'one column, in both');
    const topK = [...reader.samples({ reason: 'top_k', columns: ['step'] })].length;
    assert.deepEqual(byName.get('samples: top_k of the whole run (no texts)')!.shape, { rows: topK, columns: 4 }, 'step, sample_id, rank, reward_total');
    const window = [...reader.samples({ stepRange: [200, 299] })].length;
    assert.deepEqual(byName.get('samples: 100 steps in full (texts)')!.shape, { rows: window, columns: null });
    assert.equal(byName.get('samples: 100 steps in full (texts)')!.detail, `${window} samples`);
    assert.match(byName.get('probe doctor')!.detail, /^\d+ findings, 400 points$/);
    assert.equal(byName.get('probe diff (the run against itself)')!.detail, '400 steps × 2, every shared metric');
    assert.match(byName.get('probe report (HTML, without the browser)')!.detail, /^400 steps, \d+ KiB of HTML$/);
    assert.match(byName.get('probe watch: catching up')!.detail, /^first look: 400 points, \d+ findings$/);

    // the CLI's start, each a fresh process, next to Node's own (the bench fails if a probe does)
    assert.deepEqual(report.startup.timings.map((x) => x.command), ['node -e ""', 'probe --version', 'probe info <run>']);
    for (const x of report.startup.timings) assert.ok(x.firstMs > 0 && x.medianMs > 0 && x.runs === 2, JSON.stringify(x));
    assert.equal(report.startup.loadAverage.length, 3);
    assert.ok(report.startup.cpus >= 1);

    // the text form prints the same figures as one table, every column named
    const text = formatReport(report.write, report.read, report.startup);
    assert.match(text, /^scale benchmark: 400 steps, 4 samples kept per step \(of 8 candidates\)/);
    assert.match(text, /^ {2}read surfaces \d{4}-\d\d-\d\d \d\d:\d\d UTC; load average [\d.]+ [\d.]+ [\d.]+ before, [\d.]+ [\d.]+ [\d.]+ after, on \d+ CPUs; DuckDB v[\d.]+$/m);
    assert.match(text, /the median of the 2 calls after it/);
    assert.match(text, HEADER);
    const steps = byName.get('all step columns')!;
    const row = [steps.ours.firstMs, steps.ours.warmMedianMs, steps.duckdb!.firstMs, steps.duckdb!.warmMedianMs].map(ms).join(' +');
    const rss = `${steps.ours.peakRssFirstMiB.toFixed(0)} MiB +${steps.duckdb!.peakRssFirstMiB.toFixed(0)} MiB`;
    assert.match(text, new RegExp(`^ {2}all step columns +${row} +${steps.ratio!.toFixed(2)}× +${rss} +400 rows × 47 columns$`, 'm'));
    assert.match(text, new RegExp(String.raw`^ {2}probe doctor +${CELL} +${CELL} +— +— +— +\d+ MiB +— +\d+ findings, 400 points$`, 'm'));
    assert.match(text, /^ {2}before the first call, peak RSS \d+ MiB for ours, \d+ MiB for DuckDB, which took [\d.]+ m?s to import and open \(medians of 9 and 5 processes\)$/m);
    assert.doesNotMatch(text, /DuckDB not installed/);
    assert.match(text, /CLI start \(a fresh process each, wall time\) +first +median of 2 +load average [\d.]+ [\d.]+ [\d.]+ on \d+ CPUs\n +node -e "" +\d+ ms +\d+ ms\n +probe --version +\d+ ms +\d+ ms\n +probe info <run> +\d+ ms +\d+ ms/);
  });

  test('--run reads an existing run without writing; without DuckDB its columns show — and one line says how to install it', async () => {
    assert.ok(existsSync(run), 'the first test kept its recording');
    // a module hook makes @duckdb/node-api unresolvable in the CLI and, through execArgv, its children
    const noDuckDb = ['--import', path.join(ROOT, 'test/helpers/no-duckdb.mjs'), 'ts/cli/bin.ts', 'scale-bench', '--run', run, '--warm', '1', '--startup-runs', '2'];
    const text = await runNode(noDuckDb, { cwd: ROOT });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^scale benchmark: the run at ${run.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(400 steps, 1600 samples\\), read only$`, 'm'));
    assert.match(text.stdout, /; no DuckDB$/m);
    assert.match(text.stdout, /^ {2}DuckDB not installed: npm install @duckdb\/node-api to compare$/m);
    assert.match(text.stdout, HEADER);
    for (const surface of SURFACES) {
      const name = surface.replace(/[()]/g, '\\$&');
      assert.match(text.stdout, new RegExp(String.raw`^ {2}${name} +${CELL} +${CELL} +— +— +— +\d+ MiB +— `, 'm'), surface);
    }
    assert.match(text.stdout, /^ {2}before the first call, peak RSS \d+ MiB for ours \(median of 9 processes\)$/m);
    assert.equal(RunReader.open(run).view(['step']).length, 400, 'the run is as it was');
  });

  test("each side's process loads its own native library only: neither counts in the other's memory", async () => {
    const traced = (args: string[]) => runNode(['--import', path.join(ROOT, 'test/helpers/native-libraries.mjs'), 'ts/cli/bin.ts', 'scale-bench', ...args], { cwd: ROOT });
    const libraries = (stderr: string) => /^native libraries: (.*)$/m.exec(stderr)![1].split(', ').map((p) => path.basename(p));
    const ours = await traced(['--read', run, '--surface', '1', '--warm', '1']);
    assert.equal(ours.code, 0, ours.stderr);
    assert.deepEqual(libraries(ours.stderr).filter((l) => /duckdb/.test(l)), [], ours.stderr);
    assert.ok(libraries(ours.stderr).some((l) => /^rlprobe\..*\.node$/.test(l)), ours.stderr);
    const duckdb = await traced(['--duckdb-sql', 'SELECT 1', '--warm', '1']);
    assert.equal(duckdb.code, 0, duckdb.stderr);
    assert.deepEqual(libraries(duckdb.stderr).filter((l) => /rlprobe/.test(l)), [], duckdb.stderr);
    assert.ok(libraries(duckdb.stderr).some((l) => /duckdb/.test(l)), duckdb.stderr);
  });

  test('DuckDB answering with other rows than rlprobe is an error, not a figure', () => {
    // DuckDB is pointed at another run of 250 steps, as if it read other files than rlprobe
    const other = path.join(parent, 'other');
    writeScaleRun(other, 250, 0, () => {});
    const start = (args: string[]) => [path.join(ROOT, 'ts/cli/bin.ts'), ...(args.includes('--duckdb-sql') ? args.map((a) => a.replaceAll(run, other)) : args)];
    assert.throws(
      () => readInChildren(run, start, { warm: 1, execArgv: ['--import', 'tsx'] }),
      (e: Error) => {
        assert.equal(
          e.message,
          `scale-bench: "all step columns" on ${run}: DuckDB answered 250 rows × 47 columns, rlprobe 400 rows × 47 columns; ` +
            'the two read different data, so their times are no comparison (was the run being written?)',
        );
        return true;
      },
    );
  });

  test('--run with an option that records is a usage error', async () => {
    for (const extra of [['--steps', '10'], ['--samples-per-step', '2'], ['--out', path.join(parent, 'x')]]) {
      const r = await runCli(['scale-bench', '--run', run, ...extra]);
      assert.equal(r.code, 64, r.stderr);
      assert.match(r.stderr, new RegExp(`^probe: ${extra[0]} records a new run: it cannot be given with --run `));
    }
  });
});
