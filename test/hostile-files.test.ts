/**
 * Hostile and damaged files in a run directory (issue 15, items 13, 15, 16), through
 * RunReader, `probe info` and `probe report`: a FIFO, a /dev/zero symlink, a directory or a
 * symlink loop in place of a file never hangs a read and is named with what it is; a
 * damaged surface is reported while the others are shown; copies and foreign files are
 * skipped and listed, never merged.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { RunReader } from '../ts/index.js';
import { throwsCode } from './helpers/errors.js';
import { INDEX_TS, cleanupTempDirs, runCli, runScript, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

/**
 * A run compacted once and then resumed and killed: steps/part-* (the first is the old
 * steps.parquet, made a part by the resume), sample shard and parts, spans.parquet and span
 * parts, events. Steps 0..19, two samples and one
 * span per step.
 */
const RECORD = `
import { Recorder } from ${JSON.stringify(INDEX_TS)};
const dir = process.argv[1];
const opts = { runId: 'hostile', algorithm: 'grpo', installHandlers: false, captureEnvironment: false, flushIntervalMs: 3600000, flushSteps: 1000000 };
const log = (rec, from, to) => {
  for (let step = from; step < to; step++) {
    rec.logStep({ step, loss: 1 / (step + 1), reward_mean: step / 10 });
    rec.logSamples([{ reward_total: step, completion_text: 'c' + step }, { reward_total: -step, completion_text: 'd' + step }], { step, select: false });
    rec.span('rollout', 'r' + step, () => {}, { step });
  }
};
let rec = new Recorder(dir, opts);
log(rec, 0, 10);
rec.logEvent('checkpoint', { step: 9, message: 'compacted half' });
rec.close();
rec = new Recorder(dir, opts);
log(rec, 10, 20);
if (!rec.flushSync(30000)) process.exit(3);
process.kill(process.pid, 'SIGKILL');
`;

let fixture: string;

before(async () => {
  fixture = tempDir('rlprobe-hostile-');
  const r = await runScript(RECORD, [fixture]);
  assert.equal(r.signal, 'SIGKILL', r.stderr);
});

function firstPart(dir: string, sub: string): string {
  const name = readdirSync(path.join(dir, sub)).filter((n) => /^part-\d+\.parquet$/.test(n)).sort()[0];
  assert.ok(name, `a part file in ${sub}/`);
  return path.join(sub, name);
}

/** A copy of the fixture run to damage. */
function copyRun(): string {
  const dir = tempDir('rlprobe-hostile-case-');
  cpSync(fixture, dir, { recursive: true });
  return dir;
}

const KINDS = {
  fifo: { make: (p: string) => execFileSync('mkfifo', [p]), called: /FIFO/ },
  'dev-zero': { make: (p: string) => symlinkSync('/dev/zero', p), called: /symbolic link to \/dev\/zero \(a character device\)/ },
  directory: { make: (p: string) => mkdirSync(p), called: /a directory/ },
  'symlink-loop': { make: (p: string) => symlinkSync(p, p), called: /symbolic link loop/ },
} as const;

interface InfoJson {
  rows: number | null;
  samples: number | null;
  spans: number | null;
  events: number | null;
  damaged: Array<{ surface: string; error: string }>;
  foreign_files: Array<{ surface: string; rank: number; path: string; reason: string }>;
}

/** Targets (relative to the run) by surface; the part names are read from the fixture. */
function targets(): Array<[string, string]> {
  return [
    ['manifest', 'manifest.json'],
    ['events', 'events.jsonl'],
    ['steps', firstPart(fixture, 'steps')],
    ['steps', 'steps.parquet'],
    ['samples', firstPart(fixture, 'samples')],
    ['spans', firstPart(fixture, 'spans')],
  ];
}

describe('a file that is not a regular file', () => {
  test('the fixture reads whole', () => {
    const r = RunReader.open(fixture);
    assert.equal(r.steps().length, 20);
    assert.equal([...r.samples()].length, 40);
    assert.equal(r.spans().length, 20);
  });

  for (const [surface, rel] of [
    ['manifest', 'manifest.json'],
    ['events', 'events.jsonl'],
    ['steps', 'steps/part'],
    ['steps', 'steps.parquet'],
    ['samples', 'samples/part'],
    ['spans', 'spans/part'],
  ] as const) {
    test(`${rel} as a FIFO, a /dev/zero symlink, a directory, a symlink loop: probe info finishes, names it, shows the rest`, async () => {
      const target = targets().find(([s, t]) => s === surface && t.startsWith(rel))![1];
      await Promise.all(
        Object.entries(KINDS).map(async ([kind, { make, called }]) => {
          const dir = copyRun();
          const file = path.join(dir, target);
          rmSync(file, { force: true });
          make(file);
          const started = Date.now();
          const r = await runCli(['info', dir, '--json']);
          const what = `${target} as ${kind}: exit ${r.code}\n${r.stderr}`;
          assert.ok(Date.now() - started < 30_000, what);
          assert.equal(r.code, 1, what);
          assert.doesNotMatch(r.stderr, /^\s+at /m, `no stack trace: ${what}`);
          if (surface === 'manifest') {
            assert.match(r.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `), what);
            assert.match(r.stderr, called, what);
            assert.match(r.stderr, /restore it/, `says what to do: ${what}`);
            return;
          }
          const info = JSON.parse(r.stdout) as InfoJson;
          const damage = info.damaged.find((d) => d.surface === surface);
          assert.ok(damage, `${what}\n${r.stdout}`);
          assert.ok(damage.error.includes(file), `names the file: ${damage.error}`);
          assert.match(damage.error, called, what);
          assert.match(damage.error, /move it out of the run directory/, `says what to do: ${what}`);
          if (surface !== 'steps') assert.equal(info.rows, 20, what);
          if (surface !== 'samples') assert.equal(info.samples, 40, what);
          if (surface !== 'spans') assert.equal(info.spans, 20, what);
          if (surface !== 'events') assert.ok((info.events ?? 0) > 0, what);
        }),
      );
    });
  }

  test('RunReader says which file and what it is, for the manifest and for events.jsonl', () => {
    const dir = copyRun();
    rmSync(path.join(dir, 'manifest.json'));
    symlinkSync(path.join(dir, 'manifest.json'), path.join(dir, 'manifest.json'));
    throwsCode(() => RunReader.open(dir), 'RLPROBE_BAD_MANIFEST', /manifest\.json: a symbolic link loop/);

    const ok = copyRun();
    rmSync(path.join(ok, 'events.jsonl'));
    mkdirSync(path.join(ok, 'events.jsonl'));
    const reader = RunReader.open(ok);
    throwsCode(() => reader.events(), 'RLPROBE_IO', /events\.jsonl: a directory, not a regular file/);
    assert.equal(reader.steps().length, 20, 'the steps still read');
  });
});

/** Flips one byte in the middle of a file (a damaged page). */
function damage(file: string): void {
  const bytes = readFileSync(file);
  bytes[Math.floor(bytes.length / 2)] ^= 0x20;
  writeFileSync(file, bytes);
}

describe('a .writer.lock that is not a lock file', () => {
  // read on every status (probe info, probe serve's every look): it must never block or grow a read
  const LOCKS = { ...KINDS, huge: { make: (p: string) => writeFileSync(p, Buffer.alloc(64 << 20, 0x61)), called: /not ours/ } };
  for (const [kind, { make }] of Object.entries(LOCKS)) {
    test(`.writer.lock as ${kind}: probe info finishes, the lock read as not ours`, { timeout: 90_000 }, async () => {
      const dir = copyRun();
      const lock = path.join(dir, '.writer.lock');
      rmSync(lock, { force: true });
      make(lock);
      const started = Date.now();
      const r = await runCli(['info', dir]);
      assert.ok(Date.now() - started < 30_000, `took ${Date.now() - started} ms`);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /its \.writer\.lock is not ours/, r.stdout);
    });
  }
});

describe('a capture manifest that is not a regular file', () => {
  for (const [kind, { make, called }] of Object.entries(KINDS)) {
    test(`capture.json as ${kind}: the trials of the run are listed, this capture as broken, naming it`, async () => {
      const dir = copyRun();
      const capture = path.join(dir, 'trials', 'hello.0123456789ab');
      mkdirSync(capture, { recursive: true });
      const file = path.join(capture, 'capture.json');
      make(file);
      const reader = RunReader.open(dir);
      assert.deepEqual(reader.trials(), []);
      const broken = reader.brokenTrials();
      assert.equal(broken.length, 1);
      assert.ok(broken[0].error.includes(file), broken[0].error);
      assert.match(broken[0].error, called);
      const list = await runCli(['trial', 'list', dir]);
      assert.equal(list.code, 0, list.stderr);
    });
  }
});

describe('a damaged surface is reported and the rest is shown', () => {
  test('a damaged span file: probe info and probe report show the steps and samples', async () => {
    const dir = copyRun();
    const file = path.join(dir, firstPart(dir, 'spans'));
    damage(file);
    const reader = RunReader.open(dir);
    throwsCode(() => reader.spans(), 'RLPROBE_CORRUPT_FILE', new RegExp(`${path.basename(file)}: damaged Parquet file .*move it out of the run directory`));

    const info = await runCli(['info', dir, '--json']);
    assert.equal(info.code, 1, info.stderr);
    const j = JSON.parse(info.stdout) as InfoJson;
    assert.equal(j.rows, 20);
    assert.equal(j.samples, 40);
    assert.equal(j.spans, null);
    assert.deepEqual(j.damaged.map((d) => d.surface), ['spans']);
    assert.ok(j.damaged[0].error.includes(file));

    const text = await runCli(['info', dir]);
    assert.match(text.stdout, /damaged\s+spans: .*damaged Parquet file/);

    const out = path.join(dir, 'report.html');
    const report = await runCli(['report', dir, '--out', out]);
    assert.equal(report.code, 0, report.stderr);
    const html = readFileSync(out, 'utf8');
    assert.match(html, /class="damaged"/);
    assert.ok(html.includes(path.basename(file)), 'the report names the damaged file');
    const md = await runCli(['report', dir, '--format', 'md']);
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, /Damaged: spans/);
    assert.match(md.stdout, /20 steps/);
  });

  test('a damaged sample file: probe doctor diagnoses the steps and names the file it could not read', async () => {
    const dir = copyRun();
    const file = path.join(dir, firstPart(dir, 'samples'));
    damage(file);
    const json = await runCli(['doctor', dir, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const d = JSON.parse(json.stdout) as { points: number; samples: number; samples_error: string | null };
    assert.equal(d.points, 20);
    assert.equal(d.samples, 0);
    assert.ok(d.samples_error?.includes(file), `the diagnosis names the damaged file: ${d.samples_error}`);
    const text = await runCli(['doctor', dir]);
    assert.match(text.stdout, new RegExp(`Samples unreadable, so no finding cites sample evidence: .*${path.basename(file)}`));
  });

  test('a copied steps part is read once and listed as foreign', async () => {
    const dir = copyRun();
    const part = path.join(dir, firstPart(dir, 'steps'));
    const copy = path.join(dir, 'steps', 'part-00042.parquet');
    copyFileSync(part, copy);
    const reader = RunReader.open(dir);
    assert.deepEqual(reader.steps().map((s) => s.step), Array.from({ length: 20 }, (_, i) => i));
    const foreign = reader.foreignFiles();
    assert.equal(foreign.length, 1);
    assert.equal(foreign[0].path, copy);
    assert.equal(foreign[0].surface, 'steps');
    assert.match(foreign[0].reason, /a copy of part-\d+\.parquet/);
    const info = await runCli(['info', dir]);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /foreign files\s+1 skipped: .*part-00042\.parquet \(steps\): a copy of/);
  });

  test('a foreign Parquet file in samples/ is skipped and listed; the real samples read', async () => {
    const dir = copyRun();
    // a steps table under a shard's name, and a file of another name
    const shard = path.join(dir, 'samples', 'shard-00009.parquet');
    copyFileSync(path.join(dir, firstPart(dir, 'steps')), shard);
    writeFileSync(path.join(dir, 'samples', 'notes.txt'), 'not a sample');
    const reader = RunReader.open(dir);
    assert.equal([...reader.samples()].length, 40);
    assert.deepEqual(
      reader.foreignFiles().map((f) => [path.basename(f.path), f.surface]),
      [
        ['notes.txt', 'samples'],
        ['shard-00009.parquet', 'samples'],
      ],
    );
    const info = JSON.parse((await runCli(['info', dir, '--json'])).stdout) as InfoJson;
    assert.equal(info.samples, 40);
    assert.equal(info.foreign_files.length, 2);
    assert.match(info.foreign_files.find((f) => f.path === shard)!.reason, /not a samples table/);
  });
});
