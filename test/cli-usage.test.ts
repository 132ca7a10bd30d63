/**
 * `probe` as a person uses it: help for every command and command group, option value
 * names and defaults in help, usage errors (exit 64 on stderr) kept apart from runtime
 * failures (1) and findings (2), the same option validation in every command, no colour
 * off a terminal or with NO_COLOR, and the exit codes documented in docs/cli.md.
 *
 * Most cases run the CLI in this process (test/helpers/in-process-cli.ts); the colour
 * cases that depend on the real process streams and environment run `ts/cli/bin.ts` as a
 * child.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';

import { Cli } from 'clipanion';

import { Recorder, RunReader } from '../ts/index.js';
import { buildCli } from '../ts/cli/main.js';
import { ROOT, cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { probe } from './helpers/in-process-cli.js';
import type { CliResult } from './helpers/in-process-cli.js';

/** EX_USAGE (sysexits.h): the command line is wrong. */
const USAGE = 64;
// eslint-disable-next-line no-control-regex
const ESC = /\u001b/;

/** Every registered command path, e.g. `trial capture` (from clipanion's own definitions). */
function commandPaths(): string[] {
  return buildCli()
    .definitions()
    .map((d) => d.path.replace(/^probe\s*/, ''))
    .filter((p) => p !== '' && !p.startsWith('-'));
}

/** The command groups: first words of multi-word commands (`trial`, `span`, `import`). */
function groups(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of commandPaths()) {
    const words = p.split(' ');
    if (words.length < 2) continue;
    out.set(words[0], [...(out.get(words[0]) ?? []), p]);
  }
  return out;
}

function assertUsageError(r: CliResult, what: string, ...patterns: RegExp[]): void {
  assert.equal(r.code, USAGE, `${what}: exit ${r.code} (want ${USAGE})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.equal(r.stdout, '', `${what}: nothing on stdout`);
  assert.match(r.stderr, /^probe: /, `${what}: the error on stderr starts "probe: "`);
  for (const p of patterns) assert.match(r.stderr, p, `${what}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
}

/** A writable that collects text and says it is (or is not) a terminal. */
function sink(isTTY: boolean): Writable & { text: string; isTTY: boolean } {
  const w = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      w.text += chunk.toString();
      callback();
    },
  }) as Writable & { text: string; isTTY: boolean };
  w.text = '';
  w.isTTY = isTTY;
  return w;
}

/** Runs the CLI in this process with stdout a terminal or not, and the given environment. */
async function probeWith(args: string[], opts: { tty: boolean; env: Record<string, string | undefined>; colorDepth: number }): Promise<CliResult> {
  const stdout = sink(opts.tty);
  const stderr = sink(opts.tty);
  const code = await buildCli().run(args, { ...Cli.defaultContext, stdout, stderr, env: opts.env, colorDepth: opts.colorDepth });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** `probe …` as a child with exactly `env` (plus PATH): no ANSI stripping, stdout a pipe. */
function childProbe(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'ts/cli/bin.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error && typeof (error as NodeJS.ErrnoException).code === 'string') reject(error);
        else resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
      },
    );
  });
}

let run: string;
let notARun: string;

before(() => {
  const root = tempDir('rlprobe-cli-usage-');
  notARun = tempDir('rlprobe-cli-usage-empty-');
  run = path.join(root, 'run');
  const rec = new Recorder(run, { installHandlers: false, captureEnvironment: false, runId: 'usage' });
  for (let step = 0; step < 4; step++) {
    rec.logStep({ step, loss: 1 / (step + 1) });
    rec.logSamples(
      Array.from({ length: 20 }, (_, i) => ({ sample_id: `${step}_${i}`, prompt_text: 'p', completion_text: 'c', reward_total: i })),
      { step },
    );
  }
  // a reason of the caller's own (select: false keeps it)
  rec.logSamples([{ sample_id: 'picked', prompt_text: 'p', completion_text: 'c', reward_total: 1, capture_reason: 'hand_picked' }], { step: 3, select: false });
  rec.span('rollout', 'r', () => undefined, { step: 1 });
  rec.close();
});

after(cleanupTempDirs);

describe('help', { concurrency: true }, () => {
  test('every command group lists its subcommands and exits 0 (--help, -h, or the group alone)', async () => {
    const all = groups();
    assert.deepEqual([...all.keys()].sort(), ['import', 'span', 'trial'], 'the groups this test expects');
    for (const [group, commands] of all) {
      for (const args of [[group, '--help'], [group, '-h'], [group]]) {
        const r = await probe(args);
        assert.equal(r.code, 0, `probe ${args.join(' ')}: exit ${r.code}\n${r.stdout}${r.stderr}`);
        assert.equal(r.stderr, '');
        for (const c of commands) assert.ok(r.stdout.includes(`probe ${c} `), `probe ${args.join(' ')} lists probe ${c}:\n${r.stdout}`);
        assert.doesNotMatch(r.stdout, /Command not found/);
      }
    }
  });

  test('a group lists each subcommand with its description', async () => {
    const r = await probe(['trial', '--help']);
    assert.match(r.stdout, /probe trial capture .*\n\s+Capture a Harbor trial directory into a run/);
    assert.match(r.stdout, /probe trial show .*\n\s+Show one captured trial/);
    const i = await probe(['import', '--help']);
    assert.match(i.stdout, /probe import jsonl .*--map MAP/);
  });

  test('no help shows an unnamed value (#0): root, every command, every group, and error candidates', async () => {
    const outputs: Array<[string, string]> = [];
    const root = await probe(['--help']);
    outputs.push(['probe --help', root.stdout]);
    for (const p of [...commandPaths(), ...groups().keys()]) {
      const r = await probe([...p.split(' '), '--help']);
      assert.equal(r.code, 0, `probe ${p} --help: ${r.stderr}`);
      outputs.push([`probe ${p} --help`, r.stdout]);
    }
    const candidates = await probe(['trial', 'captur']);
    outputs.push(['probe trial captur', candidates.stdout + candidates.stderr]);
    for (const [what, text] of outputs) assert.doesNotMatch(text, /#\d/, `${what}:\n${text}`);
  });

  test('options show their value names and defaults', async () => {
    const [samples, watch, report, trialShow, spanList] = await Promise.all([
      probe(['samples', '--help']),
      probe(['watch', '--help']),
      probe(['report', '--help']),
      probe(['trial', 'show', '--help']),
      probe(['span', 'list', '--help']),
    ]);
    const line = (text: string, option: string) => text.split('\n').find((l) => l.trimStart().startsWith(`${option} `)) ?? '';
    assert.match(line(samples.stdout, '--steps'), /--steps FROM\.\.TO\s/);
    assert.match(line(samples.stdout, '--reward'), /--reward MIN\.\.MAX\s/);
    assert.match(line(samples.stdout, '--limit'), /--limit N\s.*\[default: 50\]/);
    assert.match(line(samples.stdout, '--reason'), /--reason REASON\s.*top_k/);
    assert.match(line(watch.stdout, '--interval'), /--interval MS\s.*\[default: 2000\]/);
    assert.match(line(watch.stdout, '--halt-on'), /\[default: critical\]/);
    assert.match(line(watch.stdout, '--min-confidence'), /\[default: 0\.7\]/);
    assert.match(line(report.stdout, '--format'), /\[default: html\]/);
    assert.match(line(trialShow.stdout, '--tree-lines'), /--tree-lines N\s.*\[default: 400\]/);
    assert.match(line(spanList.stdout, '--label'), /--label KEY=VALUE\s/);
    assert.match(line(spanList.stdout, '--limit'), /\[default: 200\]/);
    // the usage lines of the root help name values too
    const root = await probe(['--help']);
    assert.match(root.stdout, /probe samples .*\[--steps FROM\.\.TO\]/);
    assert.match(root.stdout, /probe trial capture <--run RUN> <--step N>/);
  });
});

describe('exit codes: usage errors are 64 on stderr', { concurrency: true }, () => {
  test('unknown option, unknown command, missing argument, extra argument, missing required option', async () => {
    const cases: Array<[string[], RegExp[]]> = [
      [['samples', run, '--bogus'], [/--bogus/]],
      [['frobnicate', run], [/frobnicate|command not found/i]],
      [['info'], [/<run>/]],
      [['doctor'], [/run directory/, /--detectors/]],
      [['info', run, 'extra'], [/extra|positional/i]],
      [['trial', 'capture', run], [/--run|--step/]],
      [['trial', 'bogus'], [/probe trial capture/]],
      [['import', 'jsonl', 'a.jsonl', 'out'], [/--map/]],
    ];
    for (const [args, patterns] of cases) assertUsageError(await probe(args), `probe ${args.join(' ')}`, ...patterns);
  });

  test('the usage error shows the command\'s usage', async () => {
    const r = await probe(['events', run, '--last', 'x']);
    assertUsageError(r, 'events --last x', /^probe: invalid --last "x": expected /, /\$ probe events .*\[--last N\]/);
  });

  test('runtime failures stay 1, with one line on stderr', async () => {
    const r = await probe(['info', notARun]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^probe: not a run directory/);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1);
  });

  test('through bin.ts (a real process): 64 for a usage error, 1 for a failure', async () => {
    const [usage, failure] = await Promise.all([childProbe(['samples', run, '--limit', 'lots'], {}), childProbe(['info', notARun], {})]);
    assert.equal(usage.code, USAGE, usage.stderr);
    assert.equal(usage.stdout, '');
    assert.match(usage.stderr, /^probe: invalid --limit "lots"/);
    assert.equal(failure.code, 1, failure.stderr);
    assert.match(failure.stderr, /^probe: not a run directory/);
  });
});

describe('every command validates its options the same way', { concurrency: true }, () => {
  // [args, option, value, what the message says is expected]
  const missing = () => path.join(notARun, 'not-yet'); // watch waits for a missing run: validation must come first
  const cases: Array<[() => string[], string, string, RegExp?]> = [
    [() => ['events', run, '--last', '0'], '--last', '0'],
    [() => ['samples', run, '--step', 'x'], '--step', 'x'],
    [() => ['samples', run, '--steps', '9..x'], '--steps', '9..x', /FROM\.\.TO/],
    [() => ['samples', run, '--steps', '5..2'], '--steps', '5..2', /FROM\.\.TO/],
    [() => ['samples', run, '--reward', 'high'], '--reward', 'high', /MIN\.\.MAX/],
    [() => ['samples', run, '--rank', 'x'], '--rank', 'x'],
    [() => ['samples', run, '--rank=-1'], '--rank', '-1'],
    [() => ['samples', run, '--limit=-1'], '--limit', '-1'],
    [() => ['span', 'list', run, '--status', 'weird'], '--status', 'weird', /ok, error,? or open|ok, error, open/],
    [() => ['span', 'list', run, '--label', 'novalue'], '--label', 'novalue', /KEY=VALUE/],
    [() => ['span', 'list', run, '--steps', 'x'], '--steps', 'x'],
    [() => ['span', 'list', run, '--limit', 'x'], '--limit', 'x'],
    [() => ['trial', 'list', run, '--steps', '3'], '--steps', '3'],
    [() => ['trial', 'show', run, 'k', '--tree-lines', 'x'], '--tree-lines', 'x'],
    [() => ['trial', 'capture', notARun, '--run', run, '--step', '1', '--context', 'novalue'], '--context', 'novalue', /KEY=VALUE/],
    [() => ['trial', 'capture', notARun, '--run', run, '--step', 'abc'], '--step', 'abc'],
    [() => ['trial', 'stage', notARun, '--to', notARun, '--step', '1', '--max-spans', '0'], '--max-spans', '0'],
    [() => ['doctor', run, '--fail-on', 'sometimes'], '--fail-on', 'sometimes', /warn or critical/],
    [() => ['doctor', run, '--since', 'abc'], '--since', 'abc'],
    [() => ['watch', missing(), '--interval', '5'], '--interval', '5'],
    [() => ['watch', missing(), '--interval', 'soon'], '--interval', 'soon'],
    [() => ['watch', missing(), '--halt-on', 'maybe'], '--halt-on', 'maybe', /critical, warn or never/],
    [() => ['watch', missing(), '--min-confidence', '2'], '--min-confidence', '2'],
    [() => ['watch', missing(), '--halt-pid', '0'], '--halt-pid', '0'],
    [() => ['watch', missing(), '--halt-pid', 'abc'], '--halt-pid', 'abc'],
    [() => ['report', run, '--steps', '10,x'], '--steps', '10,x'],
    [() => ['report', run, '--format', 'pdf'], '--format', 'pdf', /html, md or both/],
    [() => ['report', run, '--buckets', 'x'], '--buckets', 'x'],
    [() => ['serve', notARun, '--port', '70000'], '--port', '70000', /0\.\.65535/],
    [() => ['serve', notARun, '--port', 'x'], '--port', 'x'],
    [() => ['serve', notARun, '--interval', '5'], '--interval', '5', /100\.\.60000/],
  ];
  for (const [args, option, value, expected] of cases) {
    test(`${option} ${value}`, { timeout: 30_000 }, async () => {
      const a = args();
      const r = await probe(a);
      const message = new RegExp(`^probe: invalid ${option} ${JSON.stringify(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: expected `);
      assertUsageError(r, `probe ${a.join(' ')}`, message, ...(expected ? [expected] : []));
    });
  }

  test('an unknown --reason is an error listing the valid reasons, not "no samples match"', async () => {
    const r = await probe(['samples', run, '--reason', 'topk']);
    assertUsageError(r, '--reason topk', /^probe: invalid --reason "topk": expected /, /top_k/, /bottom_k/, /random/, /\ball\b/, /hand_picked/);
    assert.doesNotMatch(r.stderr + r.stdout, /no samples match/);
  });

  test('a reason the run has (one of the caller\'s own) is accepted, and a standard one with no samples is no error', async () => {
    const [own, twice, standard, both] = await Promise.all([
      probe(['samples', run, '--reason', 'hand_picked', '--json']),
      probe(['samples', run, '--reason', 'hand_picked', '--reason', 'hand_picked', '--json']),
      probe(['samples', run, '--reason', 'all']),
      probe(['samples', run, '--reason', 'hand_picked', '--reason', 'top_k', '--json']),
    ]);
    assert.equal(own.code, 0, own.stderr);
    assert.deepEqual(own.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { sample_id: string }).sample_id), ['picked']);
    assert.equal(standard.code, 0, standard.stderr);
    assert.match(standard.stdout, /no samples match/);
    assert.equal(both.code, 0, both.stderr);
    assert.equal(both.stdout.trim().split('\n').length, 1 + 4 * 2);
    assert.equal(twice.code, 0, twice.stderr);
    assert.equal(twice.stdout, own.stdout, 'a reason given twice is the same filter');
  });

  test('valid values still work: ranges, lists, labels and defaults', async () => {
    const [steps, reward, rank, label, report] = await Promise.all([
      probe(['samples', run, '--steps', '1..2', '--limit', '0', '--json']),
      probe(['samples', run, '--reward', '6..', '--limit', '0', '--json']),
      probe(['samples', run, '--rank', '0', '--step', '0', '--json']),
      probe(['span', 'list', run, '--label', 'a=b=c', '--json']),
      probe(['report', run, '--steps', '1,2', '--format', 'md', '--no-samples']),
    ]);
    for (const r of [steps, reward, rank, label, report]) assert.equal(r.code, 0, r.stderr);
    const stepsOf = (r: CliResult) => r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { step: number }).step);
    assert.deepEqual([...new Set(stepsOf(steps))], [1, 2]);
    assert.ok(reward.stdout.trim().split('\n').every((l) => (JSON.parse(l) as { reward_total: number }).reward_total >= 6));
    assert.equal(stepsOf(rank).length, [...RunReader.open(run).samples({ step: 0, rank: 0 })].length);
    assert.deepEqual(JSON.parse(label.stdout), []);
  });
});

describe('colour', { concurrency: true }, () => {
  test('no ANSI when stdout is a pipe, even when TERM says the terminal has colours', async () => {
    const [help, commandHelp, usageError] = await Promise.all([
      childProbe(['--help'], { TERM: 'xterm-256color' }),
      childProbe(['trial', 'capture', '--help'], { TERM: 'xterm-256color', COLORTERM: 'truecolor' }),
      childProbe(['events', run, '--last', 'x'], { TERM: 'xterm-256color' }),
    ]);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(commandHelp.code, 0, commandHelp.stderr);
    for (const [r, what] of [[help, '--help'], [commandHelp, 'trial capture --help'], [usageError, 'a usage error']] as const) {
      assert.doesNotMatch(r.stdout + r.stderr, ESC, `${what}: ${JSON.stringify((r.stdout + r.stderr).slice(0, 200))}`);
    }
  });

  test('on a terminal: colour, unless NO_COLOR is set (to anything but the empty string) or TERM is dumb', async () => {
    const tty = { tty: true, colorDepth: 8 };
    const [colour, noColor, emptyNoColor, dumb, pipe] = await Promise.all([
      probeWith(['report', '--help'], { ...tty, env: { TERM: 'xterm-256color' } }),
      probeWith(['report', '--help'], { ...tty, env: { TERM: 'xterm-256color', NO_COLOR: '1' } }),
      probeWith(['report', '--help'], { ...tty, env: { TERM: 'xterm-256color', NO_COLOR: '' } }),
      probeWith(['report', '--help'], { ...tty, env: { TERM: 'dumb' } }),
      probeWith(['report', '--help'], { tty: false, colorDepth: 8, env: { TERM: 'xterm-256color' } }),
    ]);
    assert.match(colour.stdout, ESC, 'a terminal gets colour');
    assert.match(emptyNoColor.stdout, ESC, 'an empty NO_COLOR is unset (no-color.org)');
    assert.doesNotMatch(noColor.stdout, ESC, 'NO_COLOR=1');
    assert.doesNotMatch(dumb.stdout, ESC, 'TERM=dumb');
    assert.doesNotMatch(pipe.stdout, ESC, 'not a terminal');
    for (const group of [['trial', '--help'], ['trial']]) {
      const [g, gNo] = await Promise.all([
        probeWith(group, { ...tty, env: { TERM: 'xterm-256color' } }),
        probeWith(group, { ...tty, env: { TERM: 'xterm-256color', NO_COLOR: 'yes' } }),
      ]);
      assert.equal(g.code, 0, g.stderr);
      assert.doesNotMatch(gNo.stdout, ESC, `probe ${group.join(' ')} with NO_COLOR`);
    }
  });
});

describe('docs/cli.md', () => {
  test('documents every command and its exit codes in one table', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
    const table = doc.split('\n').filter((l) => l.startsWith('| `probe '));
    for (const p of commandPaths()) {
      const row = table.find((l) => l.startsWith(`| \`probe ${p}\``));
      assert.ok(row, `docs/cli.md has an exit-code row for probe ${p}`);
      assert.match(row, /\b0\b/, `probe ${p}: 0`);
      assert.match(row, /\b64\b/, `probe ${p}: 64`);
    }
    for (const [p, code] of [['doctor', 2], ['watch', 2], ['info', 1], ['sample', 1], ['trial deliver', 1]] as const) {
      const row = table.find((l) => l.startsWith(`| \`probe ${p}\``)) ?? '';
      assert.match(row, new RegExp(`\\b${code}\\b`), `probe ${p} documents exit ${code}: ${row}`);
    }
    for (const code of ['0', '1', '2', '64']) assert.match(doc, new RegExp(`^\\| ${code} \\|`, 'm'), `the meaning of exit ${code}`);
  });
});
