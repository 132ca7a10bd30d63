/**
 * Recorder options: validation errors, the manifest a recorder writes, environment
 * capture, rank handling (inert ranks, recordAllRanks), shared process handlers, resume.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { Recorder, RlprobeError, RunReader } from '../ts/index.js';
import type { RecorderOptions } from '../ts/index.js';
import { spawnChild, waitForExit } from './helpers/child.js';
import { QUIET, cleanupTempDirs, listenerCounts, tempDir, withEnv } from './helpers/fixtures.js';

after(cleanupTempDirs);

function readManifest(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
}

function assertInvalidOption(fn: () => unknown, ...mustMention: RegExp[]): RlprobeError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught !== undefined, 'expected a throw');
  assert.ok(caught instanceof RlprobeError, `expected RlprobeError, got ${String(caught)}`);
  assert.equal(caught.code, 'RLPROBE_INVALID_OPTION');
  for (const re of mustMention) assert.match(caught.message, re);
  return caught;
}

describe('invalid options', () => {
  const cases: Array<[string, RecorderOptions, RegExp[]]> = [
    ['flushSteps -3', { flushSteps: -3 }, [/flushSteps/, /-3/]],
    ['flushSteps 0', { flushSteps: 0 }, [/flushSteps/, /\b0\b/]],
    ['flushSteps 2.5', { flushSteps: 2.5 }, [/flushSteps/, /2\.5/]],
    ['flushIntervalMs 0', { flushIntervalMs: 0 }, [/flushIntervalMs/, /\(got 0\)/]],
    ['flushIntervalMs as a string', { flushIntervalMs: '5000' as unknown as number }, [/flushIntervalMs/, /"5000"/]],
    ['queueCapacity 1.5', { queueCapacity: 1.5 }, [/queueCapacity/, /1\.5/]],
    ['queueCapacity NaN', { queueCapacity: NaN }, [/queueCapacity/]],
    // below the minimum the queue cannot hold one record on the hot path: every record dropped
    ['queueCapacity 0', { queueCapacity: 0 }, [/queueCapacity/, /\(got 0\)/]],
    ['rank -1', { rank: -1 }, [/rank/, /-1/]],
    ['rank 1.5', { rank: 1.5 }, [/rank/, /1\.5/]],
    ['worldSize 0', { worldSize: 0 }, [/worldSize/, /\(got 0\)/]],
    ['algorithm 42', { algorithm: 42 as unknown as string }, [/algorithm/, /42/]],
    ['algorithm empty', { algorithm: '' }, [/algorithm/, /""/]],
    ['runId empty', { runId: '' }, [/runId/, /""/]],
    ['closeTimeoutMs 0', { closeTimeoutMs: 0 }, [/closeTimeoutMs/, /\(got 0\)/]],
    ['installHandlers "yes"', { installHandlers: 'yes' as unknown as boolean }, [/installHandlers/, /"yes"/]],
    ['recordAllRanks 1', { recordAllRanks: 1 as unknown as boolean }, [/recordAllRanks/, /\b1\b/]],
    ['flushSteps as a BigInt', { flushSteps: 5n as unknown as number }, [/flushSteps/, /5n/]],
    ['trainerConfig an array', { trainerConfig: [1, 2] as unknown as Record<string, unknown> }, [/trainerConfig/, /\[1,2\]/]],
    ['unknown option flushInterval', { flushInterval: 5000 } as unknown as RecorderOptions, [/unknown recorder option/, /"flushInterval"/, /5000/]],
    ['unknown option in snake_case', { flush_steps: 10 } as unknown as RecorderOptions, [/"flush_steps"/, /10/]],
  ];
  for (const [name, options, mention] of cases) {
    test(name, () => {
      const dir = path.join(tempDir(), 'run');
      assertInvalidOption(() => new Recorder(dir, options), ...mention);
      assert.equal(existsSync(dir), false, 'a refused option must not create the run directory');
    });
  }

  for (const queueCapacity of [1, 5, 6]) {
    // before the fix a queue of 1-5 records dropped every step, even with an idle writer
    test(`queueCapacity ${queueCapacity} records every step while the writer keeps up`, (t) => {
      const dir = path.join(tempDir(), 'run');
      const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, queueCapacity });
      t.after(() => rec.close());
      for (let step = 0; step < 20; step++) {
        rec.logStep({ step, loss: step / 10 });
        assert.equal(rec.flushSync(10_000), true);
      }
      // a burst as long as the queue, into an empty queue
      const end = 20 + queueCapacity;
      for (let step = 20; step < end; step++) rec.logStep({ step, loss: step / 10 });
      assert.equal(rec.flushSync(10_000), true);
      const c = rec.close().counters;
      assert.equal(c.dropped, 0, 'nothing dropped with an idle writer');
      assert.equal(c.written, end);
      assert.deepEqual(RunReader.open(dir).steps().map((s) => s.step), Array.from({ length: end }, (_, i) => i));
    });
  }

  test('trainerConfig with a BigInt names the option and the problem', () => {
    const dir = path.join(tempDir(), 'run');
    assertInvalidOption(() => new Recorder(dir, { trainerConfig: { lr: 1e-5, seed: 42n } }), /trainerConfig/, /BigInt/i);
    assert.equal(existsSync(dir), false);
  });

  test('trainerConfig with a cycle names the option and the problem', () => {
    const dir = path.join(tempDir(), 'run');
    const cfg: Record<string, unknown> = { a: 1 };
    cfg.self = cfg;
    assertInvalidOption(() => new Recorder(dir, { trainerConfig: cfg }), /trainerConfig/, /circular/i);
    assert.equal(existsSync(dir), false);
  });

  test('an empty runDir is refused', () => {
    assertInvalidOption(() => new Recorder('', QUIET), /runDir/);
  });

  for (const bad of ['abc', '-1', '1.5']) {
    test(`RANK=${bad} in the environment is refused, naming the variable and the value`, async () => {
      const dir = path.join(tempDir(), 'run');
      await withEnv({ RANK: bad }, () => {
        assertInvalidOption(() => new Recorder(dir, QUIET), /RANK/, new RegExp(`"${bad.replace('.', '\\.')}"`));
      });
      assert.equal(existsSync(dir), false);
    });
  }

  test('a bad WORLD_SIZE in the environment is refused', async () => {
    await withEnv({ WORLD_SIZE: 'four' }, () => {
      assertInvalidOption(() => new Recorder(path.join(tempDir(), 'run'), QUIET), /WORLD_SIZE/, /"four"/);
    });
  });

  test('an explicit rank wins over a bad RANK variable', async () => {
    const dir = path.join(tempDir(), 'run');
    await withEnv({ RANK: 'abc' }, () => {
      const rec = new Recorder(dir, { ...QUIET, rank: 0 });
      assert.equal(rec.active, true);
      rec.close();
    });
  });
});

describe('manifest', () => {
  test('a recorder writes a complete manifest with the given options', async () => {
    const dir = path.join(tempDir(), 'run');
    const before = Date.now();
    const rec = await withEnv({ RANK: undefined, WORLD_SIZE: undefined }, () =>
      new Recorder(dir, {
        ...QUIET,
        runId: 'exp-42',
        algorithm: 'grpo',
        modelName: 'tiny-llm',
        worldSize: 4,
        trainerConfig: { lr: 1e-5, nested: { beta: 0.04, tags: ['a', 'b'] } },
        notes: 'baseline',
        captureEnvironment: false,
      }),
    );
    const after = Date.now();
    try {
      // published atomically: only final names in the directory, complete JSON with a newline
      const names = readdirSync(dir).sort();
      assert.ok(names.includes('manifest.json'));
      assert.deepEqual(names.filter((n) => n.includes('tmp')), [], `no temporary files: ${names.join(', ')}`);
      const text = readFileSync(path.join(dir, 'manifest.json'), 'utf8');
      assert.ok(text.endsWith('\n'));
      const m = JSON.parse(text) as Record<string, unknown>;
      assert.deepEqual(Object.keys(m).sort(), [
        'algorithm', 'created_at', 'environment', 'extra', 'model_name', 'notes', 'run_id', 'schema_version', 'trainer_config', 'world_size',
      ]);
      assert.equal(m.schema_version, 1);
      assert.equal(m.run_id, 'exp-42');
      assert.equal(m.algorithm, 'grpo');
      assert.equal(m.model_name, 'tiny-llm');
      assert.equal(m.world_size, 4);
      assert.deepEqual(m.trainer_config, { lr: 1e-5, nested: { beta: 0.04, tags: ['a', 'b'] } });
      assert.deepEqual(m.environment, {});
      assert.equal(m.notes, 'baseline');
      assert.deepEqual(m.extra, {});
      assert.match(String(m.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const t = Date.parse(String(m.created_at));
      assert.ok(t >= before - 1000 && t <= after + 1000, `created_at ${String(m.created_at)} is now`);
      // the reader agrees
      const reader = RunReader.open(dir);
      assert.equal(reader.manifest.run_id, 'exp-42');
      assert.equal(reader.manifest.schema_version, 1);
    } finally {
      rec.close();
    }
  });

  test('defaults: generated run id, unknown algorithm, world size from WORLD_SIZE', async () => {
    const dir = path.join(tempDir(), 'run');
    await withEnv({ RANK: undefined, WORLD_SIZE: '3' }, () => {
      const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
      rec.close();
    });
    const m = readManifest(dir);
    const id = String(m.run_id);
    const match = /^run-(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)-[0-9a-f]{6}$/.exec(id);
    assert.ok(match, `run id ${id} matches run-YYYYMMDD-HHMMSS-xxxxxx`);
    const [, y, mo, d, h, mi, s] = match;
    const stamp = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
    const created = Date.parse(String(m.created_at));
    assert.ok(Math.abs(stamp - created) <= 2000, `run id stamp ${id} is the UTC creation time ${String(m.created_at)}`);
    assert.equal(m.algorithm, 'unknown');
    assert.equal(m.model_name, null);
    assert.equal(m.notes, null);
    assert.equal(m.world_size, 3);
    assert.deepEqual(m.trainer_config, {});
    assert.deepEqual(m.environment, {});
  });

  test('two default run ids differ', () => {
    const a = path.join(tempDir(), 'a');
    const b = path.join(tempDir(), 'b');
    new Recorder(a, { ...QUIET, captureEnvironment: false }).close();
    new Recorder(b, { ...QUIET, captureEnvironment: false }).close();
    assert.notEqual(readManifest(a).run_id, readManifest(b).run_id);
  });

  test('captureEnvironment (the default) records node, platform, argv, packages and git', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, QUIET);
    rec.close();
    const env = readManifest(dir).environment as Record<string, unknown>;
    assert.equal(env.node, process.version);
    assert.equal(typeof env.platform, 'string');
    assert.ok(String(env.platform).includes(process.arch));
    assert.deepEqual(env.argv, process.argv);
    const pkg = JSON.parse(readFileSync(path.join(process.cwd(), 'package.json'), 'utf8')) as { version: string };
    assert.equal((env.packages as Record<string, string>).rlprobe, pkg.version);
    // the tests run from the repository root, a git checkout
    assert.match(String(env.git_sha), /^[0-9a-f]{40}$/);
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    assert.equal(env.git_sha, head);
    assert.equal(typeof env.git_dirty, 'boolean');
  });

  test('environment in a controlled git repo: clean, dirty, no nvidia-smi → no gpus key', async () => {
    const gitPath = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const root = tempDir();
    const bin = path.join(root, 'bin');
    mkdirSync(bin);
    symlinkSync(gitPath, path.join(bin, 'git'));
    const repo = path.join(root, 'repo');
    mkdirSync(repo);
    const git = (...args: string[]) =>
      execFileSync(gitPath, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args], {
        cwd: repo,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
    git('init', '-q');
    writeFileSync(path.join(repo, 'train.txt'), 'v1\n');
    git('add', 'train.txt');
    git('commit', '-q', '-m', 'init');
    const sha = git('rev-parse', 'HEAD');
    const cwd = process.cwd();
    const envOf = (name: string) => {
      const dir = path.join(root, name);
      new Recorder(dir, QUIET).close();
      return readManifest(dir).environment as Record<string, unknown>;
    };
    try {
      await withEnv({ PATH: bin }, () => {
        process.chdir(repo);
        const clean = envOf('clean');
        assert.equal(clean.git_sha, sha);
        assert.equal(clean.git_dirty, false);
        assert.equal('gpus' in clean, false, 'no gpus key without nvidia-smi');

        writeFileSync(path.join(repo, 'train.txt'), 'v2\n');
        const dirty = envOf('dirty');
        assert.equal(dirty.git_sha, sha);
        assert.equal(dirty.git_dirty, true);

        // a fake nvidia-smi on PATH: the CSV it prints is parsed into gpus
        const smi = path.join(bin, 'nvidia-smi');
        writeFileSync(smi, '#!/bin/sh\necho "Fake GPU A100, 81920 MiB, 550.54"\necho "Fake GPU H100, 81559 MiB, 550.54"\n');
        chmodSync(smi, 0o755);
        const withGpu = envOf('gpu');
        assert.deepEqual(withGpu.gpus, [
          { name: 'Fake GPU A100', memory_total: '81920 MiB', driver_version: '550.54' },
          { name: 'Fake GPU H100', memory_total: '81559 MiB', driver_version: '550.54' },
        ]);

        // outside a git repository: no git keys at all, the rest still captured
        process.chdir(root);
        const noGit = envOf('nogit');
        assert.equal('git_sha' in noGit, false);
        assert.equal('git_dirty' in noGit, false);
        assert.equal(noGit.node, process.version);
      });
    } finally {
      process.chdir(cwd);
    }
  });

  test('captureEnvironment false writes an empty environment', () => {
    const dir = path.join(tempDir(), 'run');
    new Recorder(dir, { ...QUIET, captureEnvironment: false }).close();
    assert.deepEqual(readManifest(dir).environment, {});
  });
});

describe('ranks', () => {
  test('rank from the option: a non-zero rank is inert and writes nothing', () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    const before = listenerCounts();
    const rec = new Recorder(dir, { rank: 1, installHandlers: true });
    assert.equal(rec.active, false);
    assert.equal(rec.options.rank, 1);
    assert.deepEqual(listenerCounts(), before, 'an inert recorder installs no process listeners');
    // every method is safe and neutral
    rec.logStep({ step: 0, loss: 1 });
    rec.logStep({ step: -1 } as never);
    rec.logStep(null as never);
    rec.logEvent('checkpoint', { step: 0, message: 'x', data: { a: 1 } });
    assert.equal(rec.flushSync(), true);
    rec.logSamples([{ completion_text: 'x', reward_total: 1 }], { step: 0 });
    assert.deepEqual(rec.counters, {
      logged: 0, written: 0, dropped: 0, bad: 0, pending: 0, eventsWritten: 0, eventsDropped: 0, eventsBad: 0,
      samplesLogged: 0, samplesWritten: 0, samplesDropped: 0, samplesBad: 0, samplesPending: 0, sampleCallsBad: 0,
      spansLogged: 0, spansWritten: 0, spansDropped: 0, spansBad: 0, spansPending: 0, writeFailures: 0,
    });
    const summary = rec.close();
    assert.deepEqual(summary, {
      counters: {
        logged: 0, written: 0, dropped: 0, bad: 0, pending: 0, eventsWritten: 0, eventsDropped: 0, eventsBad: 0,
        samplesLogged: 0, samplesWritten: 0, samplesDropped: 0, samplesBad: 0, samplesPending: 0, sampleCallsBad: 0,
        spansLogged: 0, spansWritten: 0, spansDropped: 0, spansBad: 0, spansPending: 0, writeFailures: 0,
      },
      compaction: null,
      error: null,
    });
    assert.deepEqual(rec.close(), summary, 'close is idempotent');
    rec.logStep({ step: 1 });
    assert.deepEqual(listenerCounts(), before);
    assert.deepEqual(readdirSync(root), [], 'nothing written, not even the run directory');
  });

  test('rank from the RANK variable', async () => {
    const root = tempDir();
    const dir = path.join(root, 'run');
    await withEnv({ RANK: '3' }, () => {
      const before = listenerCounts();
      const rec = new Recorder(dir, { installHandlers: true });
      assert.equal(rec.active, false);
      assert.equal(rec.options.rank, 3);
      assert.deepEqual(listenerCounts(), before);
      rec.logStep({ step: 0 });
      rec.close();
    });
    assert.deepEqual(readdirSync(root), []);
    // RANK=0 records
    await withEnv({ RANK: '0' }, () => {
      const rec = new Recorder(dir, QUIET);
      assert.equal(rec.active, true);
      assert.equal(rec.options.rank, 0);
      rec.close();
    });
    assert.ok(existsSync(path.join(dir, 'manifest.json')));
  });

  test('an explicit rank 0 records even when RANK says otherwise', async () => {
    const dir = path.join(tempDir(), 'run');
    await withEnv({ RANK: '5' }, () => {
      const rec = new Recorder(dir, { ...QUIET, rank: 0 });
      assert.equal(rec.active, true);
      assert.equal(rec.runDir, path.resolve(dir));
      rec.close();
    });
  });

  test('recordAllRanks with rank 2 writes a complete rank-002/ sub-recording', () => {
    const dir = path.join(tempDir(), 'run');
    const rec = new Recorder(dir, { ...QUIET, rank: 2, recordAllRanks: true, runId: 'multi', captureEnvironment: false });
    assert.equal(rec.active, true);
    assert.equal(rec.runDir, path.join(path.resolve(dir), 'rank-002'));
    for (let step = 0; step < 5; step++) rec.logStep({ step, loss: step / 10 });
    rec.logEvent('checkpoint', { step: 4 });
    const summary = rec.close();
    assert.equal(summary.counters.written, 5);
    assert.deepEqual(readdirSync(dir), ['rank-002'], 'the rank writes only its own sub-directory');
    const m = readManifest(path.join(dir, 'rank-002'));
    assert.deepEqual(m.extra, { rank: 2 });
    assert.equal(m.run_id, 'multi');
    const sub = RunReader.open(path.join(dir, 'rank-002'));
    assert.equal(sub.layout(), 'compacted');
    const steps = sub.steps();
    assert.deepEqual(steps.map((s) => s.step), [0, 1, 2, 3, 4]);
    assert.ok(steps.every((s) => s.rank === 2), 'rows carry the rank');
    const events = sub.events();
    assert.ok(events.length > 0 && events.every((e) => e.rank === 2), 'events carry the rank');
    assert.ok(events.some((e) => e.kind === 'checkpoint' && e.step === 4));
  });
});

describe('process handlers', () => {
  test('recorders share one set of handlers, removed when the last one closes', () => {
    const root = tempDir();
    const base = listenerCounts();
    const beforeExit = process.listenerCount('beforeExit');
    const plusOne = Object.fromEntries(Object.entries(base).map(([k, v]) => [k, v + 1]));
    const a = new Recorder(path.join(root, 'a'), { installHandlers: true, captureEnvironment: false });
    let b: Recorder | undefined;
    let c: Recorder | undefined;
    try {
      assert.deepEqual(listenerCounts(), plusOne, 'first recorder installs exactly one listener per event');
      b = new Recorder(path.join(root, 'b'), { installHandlers: true, captureEnvironment: false });
      assert.deepEqual(listenerCounts(), plusOne, 'second recorder shares them');
      c = new Recorder(path.join(root, 'c'), { ...QUIET, captureEnvironment: false });
      assert.deepEqual(listenerCounts(), plusOne, 'installHandlers false adds none');
      c.close();
      assert.deepEqual(listenerCounts(), plusOne);
      a.close();
      assert.deepEqual(listenerCounts(), plusOne, 'still one live recorder with handlers');
      a.close();
      assert.deepEqual(listenerCounts(), plusOne, 'closing twice does not unregister the other');
      assert.equal(process.listenerCount('beforeExit'), beforeExit + 1, 'one beforeExit listener (signals held during synchronous code)');
      b.close();
      assert.deepEqual(listenerCounts(), base, 'the last close removes them');
      assert.equal(process.listenerCount('beforeExit'), beforeExit);
      // and a new recorder installs them again
      const d = new Recorder(path.join(root, 'd'), { installHandlers: true, captureEnvironment: false });
      assert.deepEqual(listenerCounts(), plusOne);
      d.close();
      assert.deepEqual(listenerCounts(), base);
    } finally {
      a.close();
      b?.close();
      c?.close();
    }
  });
});

describe('resume', () => {
  test('a recorder on an existing run keeps the manifest, logs recorder_resume, reads both sessions once', () => {
    const dir = path.join(tempDir(), 'run');
    const first = new Recorder(dir, { ...QUIET, runId: 'original', algorithm: 'grpo', flushSteps: 2, captureEnvironment: false });
    for (let step = 0; step < 5; step++) first.logStep({ step, loss: step });
    first.close();
    const manifestBefore = readFileSync(path.join(dir, 'manifest.json'), 'utf8');

    const second = new Recorder(dir, { ...QUIET, runId: 'other', algorithm: 'ppo', flushSteps: 2, notes: 'second', captureEnvironment: false });
    try {
      for (let step = 5; step < 8; step++) second.logStep({ step, loss: step });
      assert.equal(second.flushSync(), true);
      assert.equal(readFileSync(path.join(dir, 'manifest.json'), 'utf8'), manifestBefore, 'manifest untouched');
      const live = RunReader.open(dir);
      assert.deepEqual(Array.from(live.view().steps), [0, 1, 2, 3, 4, 5, 6, 7]);
    } finally {
      second.close();
    }
    const reader = RunReader.open(dir);
    assert.equal(reader.manifest.run_id, 'original');
    assert.equal(reader.manifest.algorithm, 'grpo');
    assert.deepEqual(reader.steps().map((s) => [s.step, s.loss]), [0, 1, 2, 3, 4, 5, 6, 7].map((s) => [s, s]));
    const kinds = reader.events().map((e) => e.kind);
    assert.deepEqual(kinds, ['recorder_close', 'recorder_resume', 'recorder_close']);
  });

  test('resuming a crashed (part-layout) run does not overwrite its parts', async () => {
    const dir = path.join(tempDir(), 'run');
    // the first recorder dies with its parts published and its directory lock held
    const first = spawnChild('kill-writer.ts', [dir, 'range', '0', '5']);
    await first.waitForLine(/^flushed 5$/, 60_000);
    first.proc.kill('SIGKILL');
    assert.deepEqual(await waitForExit(first, 30_000), { code: null, signal: 'SIGKILL' });
    assert.equal(RunReader.open(dir).layout(), 'parts');
    const second = new Recorder(dir, { ...QUIET, flushSteps: 2, captureEnvironment: false });
    for (let step = 5; step < 9; step++) second.logStep({ step });
    second.close();
    assert.deepEqual(RunReader.open(dir).steps().map((s) => s.step), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert.ok(RunReader.open(dir).events().some((e) => e.kind === 'recorder_resume'));
  });
});
