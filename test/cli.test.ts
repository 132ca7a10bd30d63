/**
 * The `probe` CLI, run as a child process from the sources:
 * `node --import tsx ts/cli/bin.ts ...` with cwd at the package root.
 */
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import type { CloseSummary } from '../ts/index.js';
import { INDEX_TS, QUIET, ROOT, cleanupTempDirs, runCli, runScript, tempDir } from './helpers/fixtures.js';
import type { ChildResult } from './helpers/fixtures.js';

const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface InfoJson {
  run_dir: string;
  manifest: { run_id: string; algorithm: string };
  layout: string;
  step_files: number;
  rows: number;
  first_step: number | null;
  last_step: number | null;
  columns: string[];
  events: number;
  events_by_kind: Record<string, number>;
  unreadable_event_lines: number;
  dropped_steps: number;
  bad_records: number;
  status: { state: string; summary: string };
}

let root: string;
/** Closed cleanly: steps 3..12, one bad record, one checkpoint. */
let closedRun: string;
/** A real crash: uncaught exception with installHandlers, steps 0..6. */
let crashedRun: string;
/** SIGKILLed after flushSync: three part files, steps 0..9, no ending event. */
let killedRun: string;
/** Queue overflow: drops counted and reported. */
let dropsRun: string;
let dropsSummary: CloseSummary;
/** A directory that is not a run. */
let notARun: string;

const CRASH_SCRIPT = `
import { Recorder } from ${JSON.stringify(INDEX_TS)};
const rec = new Recorder(process.argv[1], { runId: 'cli-crash', algorithm: 'ppo', flushSteps: 1000000, flushIntervalMs: 3600000, captureEnvironment: false });
for (let step = 0; step < 7; step++) rec.logStep({ step, loss: step });
throw new Error('boom at step 6');
`;

const KILL_SCRIPT = `
import { Recorder } from ${JSON.stringify(INDEX_TS)};
const rec = new Recorder(process.argv[1], { runId: 'cli-killed', installHandlers: false, flushSteps: 4, flushIntervalMs: 3600000, captureEnvironment: false });
// three parts of 4, 4 and 2 steps (a backlog would go out as one part)
for (let step = 0; step < 10; step++) {
  rec.logStep({ step, loss: step });
  if (step % 4 === 3) rec.flushSync(30000);
}
rec.logEvent('checkpoint', { step: 9, message: 'before the kill' });
if (!rec.flushSync(30000)) process.exit(3);
process.kill(process.pid, 'SIGKILL');
`;

function assertExit(r: ChildResult, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${r.code} (signal ${r.signal})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

async function infoJson(run: string): Promise<InfoJson> {
  const r = await runCli(['info', run, '--json']);
  assertExit(r, 0, 'info --json');
  return JSON.parse(r.stdout) as InfoJson;
}

/** The `label  value` row of `probe info` text output. */
function row(text: string, label: string): string {
  const line = text.split('\n').find((l) => l.startsWith(`${label} `));
  assert.ok(line, `info output has a "${label}" row:\n${text}`);
  return line.slice(label.length).trim();
}

before(async () => {
  root = tempDir('rlprobe-cli-');
  notARun = tempDir('rlprobe-cli-empty-');

  closedRun = path.join(root, 'closed');
  const rec = new Recorder(closedRun, { ...QUIET, runId: 'cli-closed', algorithm: 'grpo', modelName: 'tiny', flushSteps: 4, captureEnvironment: false });
  for (let step = 3; step <= 12; step++) rec.logStep({ step, loss: step / 10, reward_components: { format: 1 } });
  rec.logStep({ step: 13, loss: 'not a number' } as never);
  rec.logEvent('checkpoint', { step: 7, message: 'saved checkpoint 7' });
  rec.logEvent('eval', { step: 12, message: 'eval done' });
  const s = rec.close();
  assert.equal(s.counters.written, 10);
  assert.equal(s.counters.bad, 1);

  dropsRun = path.join(root, 'drops');
  const dr = new Recorder(dropsRun, { ...QUIET, runId: 'cli-drops', queueCapacity: 1, captureEnvironment: false });
  for (let step = 0; step < 50_000; step++) dr.logStep({ step, loss: 1 });
  dropsSummary = dr.close();

  crashedRun = path.join(root, 'crashed');
  killedRun = path.join(root, 'killed');
  const [crash, kill] = await Promise.all([runScript(CRASH_SCRIPT, [crashedRun]), runScript(KILL_SCRIPT, [killedRun])]);
  assert.equal(crash.code, 1, `the crash fixture exits 1: ${crash.stderr}`);
  assert.match(crash.stderr, /boom at step 6/);
  assert.equal(kill.signal, 'SIGKILL', `the kill fixture dies by SIGKILL: ${kill.code} ${kill.stderr}`);
});

after(cleanupTempDirs);

describe('probe CLI', { concurrency: true }, () => {
  describe('help and version', { concurrency: true }, () => {
    test('--help for the root and every command exits 0 with usage', async () => {
      const [rootHelp, info, events, compact] = await Promise.all([
        runCli(['--help']),
        runCli(['info', '--help']),
        runCli(['events', '--help']),
        runCli(['compact', '--help']),
      ]);
      for (const [r, what] of [[rootHelp, 'root'], [info, 'info'], [events, 'events'], [compact, 'compact']] as const) {
        assertExit(r, 0, `${what} --help`);
        assert.equal(r.stderr.includes('Error'), false, r.stderr);
      }
      for (const cmd of ['probe info', 'probe events', 'probe compact']) assert.ok(rootHelp.stdout.includes(cmd), `root help lists ${cmd}`);
      assert.match(info.stdout, /Usage/);
      assert.match(info.stdout, /\$ probe info (\[--json\] )?<run>/);
      assert.match(info.stdout, /Summarise a recording/);
      assert.match(events.stdout, /\$ probe events .*<run>/);
      assert.match(events.stdout, /--kind/);
      assert.match(events.stdout, /--last/);
      assert.match(compact.stdout, /\$ probe compact .*<run>/);
      assert.match(compact.stdout, /Merge part files into steps.parquet/);
    });

    test('--version prints the package version', async () => {
      const r = await runCli(['--version']);
      assertExit(r, 0, '--version');
      assert.equal(r.stdout.trim(), VERSION);
    });
  });

  describe('probe info', { concurrency: true }, () => {
    test('text: a cleanly closed run', async () => {
      const r = await runCli(['info', closedRun]);
      assertExit(r, 0, 'info');
      assert.equal(r.stderr, '');
      const out = r.stdout;
      assert.match(row(out, 'run'), /^cli-closed {2}\(grpo, tiny, world size 1\)$/);
      assert.match(row(out, 'layout'), /^compacted: 1 file, /);
      assert.match(row(out, 'steps'), /^3 … 12 {2}\(10 rows, \d+ columns\)$/);
      assert.equal(row(out, 'status'), 'closed cleanly');
      assert.equal(row(out, 'drops'), 'none');
      assert.equal(row(out, 'bad records'), '1');
      assert.match(row(out, 'events'), /checkpoint 1/);
      assert.match(row(out, 'events'), /bad_record 1/);
      assert.match(row(out, 'format'), /schema_version 1/);
    });

    test('json: the same facts', async () => {
      const info = await infoJson(closedRun);
      assert.equal(info.manifest.run_id, 'cli-closed');
      assert.equal(info.run_dir, closedRun);
      assert.equal(info.layout, 'compacted');
      assert.equal(info.step_files, 1);
      assert.equal(info.rows, 10);
      assert.equal(info.first_step, 3);
      assert.equal(info.last_step, 12);
      assert.equal(info.dropped_steps, 0);
      assert.equal(info.bad_records, 1);
      assert.equal(info.unreadable_event_lines, 0);
      assert.deepEqual(info.status, { state: 'closed', summary: 'closed cleanly' });
      assert.ok(info.columns.includes('loss') && info.columns.includes('reward_component.format'));
      assert.deepEqual(info.events_by_kind, { bad_record: 1, checkpoint: 1, eval: 1, recorder_close: 1 });
      assert.equal(info.events, 4);
    });

    test('a crashed run: status names the crash', async () => {
      const [text, info] = await Promise.all([runCli(['info', crashedRun]), infoJson(crashedRun)]);
      assertExit(text, 0, 'info crashed');
      assert.match(row(text.stdout, 'status'), /^crashed: Error: boom at step 6 \(exit code 1\)$/);
      assert.match(row(text.stdout, 'run'), /^cli-crash /);
      assert.equal(info.status.state, 'crashed');
      assert.match(info.status.summary, /^crashed: Error: boom at step 6/);
      // the exit handler flushed and compacted every step logged before the throw
      assert.equal(info.rows, 7);
      assert.equal(info.first_step, 0);
      assert.equal(info.last_step, 6);
      assert.equal(info.layout, 'compacted');
      assert.equal(info.events_by_kind.crash, 1);
    });

    test('a killed run (no ending event, its writer gone): parts layout, "killed"', async () => {
      const [text, info] = await Promise.all([runCli(['info', killedRun]), infoJson(killedRun)]);
      assertExit(text, 0, 'info killed');
      assert.match(row(text.stdout, 'status'), /^no end recorded and its writer \(pid \d+\) is gone: killed/);
      assert.match(row(text.stdout, 'layout'), /^parts: 3 files, /);
      assert.match(row(text.stdout, 'steps'), /^0 … 9 {2}\(10 rows/);
      assert.equal(info.status.state, 'killed');
      assert.equal(info.layout, 'parts');
      assert.equal(info.step_files, 3);
      assert.equal(info.rows, 10);
      assert.equal(info.first_step, 0);
      assert.equal(info.last_step, 9);
      assert.equal(info.bad_records, 0);
      assert.equal(info.dropped_steps, 0);
    });

    test('drops: the recorder_drops events add up to the dropped counter', async () => {
      assert.ok(dropsSummary.counters.dropped > 0, 'precondition: a 1-slot queue overflowed');
      const [text, info] = await Promise.all([runCli(['info', dropsRun]), infoJson(dropsRun)]);
      assertExit(text, 0, 'info drops');
      assert.equal(info.dropped_steps, dropsSummary.counters.dropped);
      assert.equal(info.rows, dropsSummary.counters.written);
      assert.equal(info.rows + info.dropped_steps, 50_000);
      assert.equal(row(text.stdout, 'drops'), `${dropsSummary.counters.dropped} step records dropped (queue full)`);
    });

    test('a run being recorded right now: parts, open', async () => {
      const dir = path.join(root, 'live');
      const rec = new Recorder(dir, { ...QUIET, runId: 'cli-live', captureEnvironment: false });
      try {
        for (let step = 0; step < 4; step++) rec.logStep({ step });
        rec.flushSync();
        const info = await infoJson(dir);
        assert.equal(info.layout, 'parts');
        assert.equal(info.rows, 4);
        assert.equal(info.status.state, 'open');
      } finally {
        rec.close();
      }
    });

    test('a torn events line is counted, not fatal', async () => {
      const dir = path.join(root, 'torn');
      cpSync(closedRun, dir, { recursive: true });
      writeFileSync(path.join(dir, 'events.jsonl'), `${readFileSync(path.join(dir, 'events.jsonl'), 'utf8')}{"timestamp":1,"ki`);
      const info = await infoJson(dir);
      assert.equal(info.unreadable_event_lines, 1);
      assert.equal(info.status.state, 'closed');
    });
  });

  describe('probe events', { concurrency: true }, () => {
    test('lists every event, one per line, in file order', async () => {
      const r = await runCli(['events', closedRun]);
      assertExit(r, 0, 'events');
      const lines = r.stdout.trimEnd().split('\n');
      const events = RunReader.open(closedRun).events();
      assert.equal(lines.length, events.length);
      events.forEach((e, i) => {
        assert.match(lines[i], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}/);
        assert.ok(lines[i].includes(` ${e.kind}`), `line ${i} is ${e.kind}: ${lines[i]}`);
        if (e.message) assert.ok(lines[i].endsWith(e.message), lines[i]);
      });
      assert.ok(lines.some((l) => / checkpoint step 7 {2}saved checkpoint 7$/.test(l)));
    });

    test('--kind filters (repeatable)', async () => {
      const [one, two] = await Promise.all([
        runCli(['events', closedRun, '--kind', 'checkpoint']),
        runCli(['events', closedRun, '--kind', 'checkpoint', '--kind', 'bad_record']),
      ]);
      assertExit(one, 0, '--kind');
      assert.deepEqual(one.stdout.trimEnd().split('\n').length, 1);
      assert.match(one.stdout, / checkpoint step 7 /);
      assertExit(two, 0, '--kind x2');
      const kinds = two.stdout.trimEnd().split('\n').map((l) => l.split(/\s+/)[1]);
      assert.deepEqual(kinds.sort(), ['bad_record', 'checkpoint']);
    });

    test('--last N keeps the last N', async () => {
      const [all, last2] = await Promise.all([runCli(['events', closedRun]), runCli(['events', closedRun, '--last', '2'])]);
      assertExit(last2, 0, '--last 2');
      const l2 = last2.stdout.trimEnd().split('\n');
      assert.equal(l2.length, 2);
      assert.deepEqual(l2, all.stdout.trimEnd().split('\n').slice(-2));
      assert.match(l2[1], / recorder_close {2}recorder closed$/);
    });

    test('--last must be a positive integer: a usage error (64) naming the option and the value', async () => {
      const zero = await runCli(['events', closedRun, '--last', '0']);
      assertExit(zero, 64, 'events --last 0');
      assert.equal(zero.stdout, '');
      assert.match(zero.stderr, /^probe: invalid --last "0": expected an integer ≥ 1\n/);
    });

    test('--json prints a JSON array of the events', async () => {
      const [all, filtered] = await Promise.all([
        runCli(['events', closedRun, '--json']),
        runCli(['events', closedRun, '--json', '--kind', 'checkpoint', '--kind', 'eval', '--last', '1']),
      ]);
      assertExit(all, 0, '--json');
      const parsed = JSON.parse(all.stdout) as unknown;
      assert.ok(Array.isArray(parsed));
      assert.deepEqual(parsed, JSON.parse(JSON.stringify(RunReader.open(closedRun).events())));
      assertExit(filtered, 0, '--json filtered');
      const f = JSON.parse(filtered.stdout) as Array<{ kind: string; step: number; message: string }>;
      assert.equal(f.length, 1);
      assert.equal(f[0].kind, 'eval');
      assert.equal(f[0].step, 12);
      assert.equal(f[0].message, 'eval done');
    });

    test('a crashed run lists the crash with its message', async () => {
      const r = await runCli(['events', crashedRun, '--kind', 'crash', '--json']);
      assertExit(r, 0, 'events crash');
      const [crash] = JSON.parse(r.stdout) as Array<{ kind: string; message: string; data: { origin: string; stack: string } }>;
      assert.equal(crash.message, 'Error: boom at step 6');
      assert.match(crash.data.stack, /boom at step 6/);
    });
  });

  describe('probe compact', { concurrency: true }, () => {
    test('merges the parts of a killed run, then is idempotent', async () => {
      const dir = path.join(root, 'compact-text');
      cpSync(killedRun, dir, { recursive: true });
      const first = await runCli(['compact', dir]);
      assertExit(first, 0, 'compact');
      assert.match(first.stdout, /merged 3 part files/);
      assert.match(first.stdout, /steps\.parquet has 10 rows/);
      assert.match(first.stdout, /samples: already compact/);
      // not a terminal: progress as plain lines on stderr, no carriage returns
      assert.equal(first.stderr, 'compacting 1/2 steps\ncompacting 2/2 samples\n');
      const reader = RunReader.open(dir);
      assert.equal(reader.layout(), 'compacted');
      assert.deepEqual(Array.from(reader.view().steps), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      const second = await runCli(['compact', dir]);
      assertExit(second, 0, 'compact again');
      assert.match(second.stdout, /already compact/);
      assert.match(second.stdout, /10 rows/);
      assert.deepEqual(Array.from(RunReader.open(dir).view().steps), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    test('--json', async () => {
      const dir = path.join(root, 'compact-json');
      cpSync(killedRun, dir, { recursive: true });
      const first = await runCli(['compact', dir, '--json']);
      assertExit(first, 0, 'compact --json');
      const out = JSON.parse(first.stdout) as { steps: { partsMerged: number; leftoversRemoved: number; rows: number; bytes: number }; units: unknown[] };
      const a = out.steps;
      assert.equal(out.units.length, 2, 'steps and samples of the run directory');
      assert.equal(a.partsMerged, 3);
      assert.equal(a.leftoversRemoved, 0);
      assert.equal(a.rows, 10);
      assert.ok(a.bytes > 0);
      const second = await runCli(['compact', dir, '--json']);
      assertExit(second, 0, 'compact --json again');
      assert.deepEqual(JSON.parse(second.stdout).steps, { partsMerged: 0, leftoversRemoved: 0, rows: 10, bytes: a.bytes });
    });
  });

  describe('errors', { concurrency: true }, () => {
    test('a directory that is not a run: exit 1, one line on stderr, no stack', async () => {
      const results = await Promise.all([
        runCli(['info', notARun]),
        runCli(['events', notARun]),
        runCli(['compact', notARun]),
      ]);
      for (const r of results) {
        assertExit(r, 1, 'not a run');
        assert.equal(r.stdout, '');
        const lines = r.stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, `one line: ${r.stderr}`);
        assert.match(lines[0], /^probe: not a run directory/);
        assert.doesNotMatch(r.stderr, /\n\s+at /);
      }
    });

    test('a newer recording: exit 1 with the upgrade hint', async () => {
      const dir = tempDir('rlprobe-cli-new-');
      writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ schema_version: 2, run_id: 'x', created_at: 'now', algorithm: 'a' }));
      const r = await runCli(['info', dir]);
      assertExit(r, 1, 'schema too new');
      assert.match(r.stderr, /^probe: .*upgrade rlprobe/);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1);
    });

    test('an unknown command or a missing argument: exit 64 (EX_USAGE), on stderr only', async () => {
      const [unknown, missingArg] = await Promise.all([runCli(['frobnicate', closedRun]), runCli(['info'])]);
      for (const [r, what] of [[unknown, 'unknown command'], [missingArg, 'missing argument']] as const) {
        assertExit(r, 64, what);
        assert.equal(r.stdout, '', what);
        assert.match(r.stderr, /^probe: /, what);
      }
      assert.match(missingArg.stderr, /\$ probe info \[--json\] <run>/);
    });
  });
});
