/**
 * What a trajectory, a tool call, a file name or a logged message can make `probe` print:
 * its control characters are escaped, never sent to the terminal raw (an escape sequence
 * can clear the screen, set the window title, or a newline fake a line of output).
 *
 * First ts/cli/terminal-text.ts on its own, then every command that prints user or
 * trajectory data, run on a recording and a Harbor trial whose names carry
 * "\x1b[2J\x1b]0;pwned\x07" (clear screen, window title), a C1 CSI and newlines.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RunReader } from '../ts/index.js';
import type { SpanRecord, StoredSampleRecord } from '../ts/index.js';
import { terminalLine, terminalText } from '../ts/cli/terminal-text.js';
import { cleanupTempDirs, tempDir } from './helpers/fixtures.js';
import { probe } from './helpers/in-process-cli.js';
import type { CliResult } from './helpers/in-process-cli.js';
import { smallAtif, writeTree } from './helpers/trial-fixtures.js';

/** Clear screen, then set the window title to "pwned" (an OSC ended by BEL). */
const HOSTILE = '\x1b[2J\x1b]0;pwned\x07';
/** The same clear screen as one 8-bit C1 CSI (U+009B), which JSON.stringify leaves raw. */
const C1 = '\u009b2J';
/** What may never reach the terminal: ESC, BEL, CR, the C1 range, DEL, NUL. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Fails naming the first raw control character and where it is. */
function assertNoRawControls(r: CliResult, what: string): void {
  for (const [stream, text] of [['stdout', r.stdout], ['stderr', r.stderr]] as const) {
    const m = RAW_CONTROL.exec(text);
    assert.equal(m, null, `${what}: raw U+${m?.[0].charCodeAt(0).toString(16).padStart(4, '0')} on ${stream} at ${m?.index}: ${JSON.stringify(text.slice(Math.max(0, (m?.index ?? 0) - 40), (m?.index ?? 0) + 40))}`);
  }
}

/** The escaped form is shown: the value is printed, not dropped. */
function assertShowsEscaped(r: CliResult, what: string): void {
  assert.ok(r.stdout.includes('\\u001b[2J\\u001b]0;pwned\\u0007'), `${what} shows the escaped sequence:\n${r.stdout}`);
}

/** No line of output starts with what followed a newline inside a single-line field. */
function assertNoFakeLine(r: CliResult, fake: string, what: string): void {
  const line = r.stdout.split('\n').find((l) => l.trimStart().startsWith(fake));
  assert.equal(line, undefined, `${what}: a newline inside a one-line field made the line ${JSON.stringify(line)}`);
}

describe('terminalLine and terminalText', () => {
  test('every C0 control, DEL and C1 control is escaped; printable text is untouched', () => {
    for (let c = 0; c <= 0x9f; c++) {
      const ch = String.fromCharCode(c);
      const control = c < 0x20 || (c >= 0x7f && c <= 0x9f);
      const line = terminalLine(`a${ch}b`);
      if (control) {
        assert.doesNotMatch(line, RAW_CONTROL, `U+${c.toString(16)} escaped in a line`);
        assert.ok(line.length > 3, `U+${c.toString(16)} shown, not dropped: ${JSON.stringify(line)}`);
      } else assert.equal(line, `a${ch}b`);
    }
    const printable = 'déjà vu 漢字 ✓ 🙂 \\ " \' $ % ~';
    assert.equal(terminalLine(printable), printable);
    assert.equal(terminalText(printable), printable);
  });

  test('terminalLine escapes line breaks and tabs; terminalText keeps \\n and \\t and escapes the rest', () => {
    assert.equal(terminalLine(`x${HOSTILE}\ny\tz\r`), 'x\\u001b[2J\\u001b]0;pwned\\u0007\\ny\\tz\\r');
    assert.equal(terminalText(`x${HOSTILE}\ny\tz\r`), 'x\\u001b[2J\\u001b]0;pwned\\u0007\ny\tz\\r');
    assert.equal(terminalText(`a${C1}b\u007f`), 'a\\u009b2Jb\\u007f');
  });

  test('the escapes are JSON escapes: a JSON string stays valid and means the same', () => {
    const value = `name${HOSTILE}${C1}\u0000\u007f\b\f\r\n\tend`;
    // JSON.stringify leaves C1 and DEL raw; the escaped JSON parses back to the same value
    const json = JSON.stringify({ value });
    assert.match(json, RAW_CONTROL, 'precondition: JSON.stringify leaves some controls raw');
    assert.deepEqual(JSON.parse(terminalText(json)), { value });
    assert.deepEqual(JSON.parse(`"${terminalLine(value)}"`), value);
  });
});

describe('commands print user and trajectory data escaped', { concurrency: true }, () => {
  let run: string;
  let other: string;
  let staging: string;
  let captureKey: string;
  let sampleId: string;

  before(async () => {
    const root = tempDir('rlprobe-cli-hostile-');
    run = path.join(root, 'run');
    const rec = new Recorder(run, {
      installHandlers: false,
      captureEnvironment: false,
      runId: 'hostile',
      modelName: `model${HOSTILE}`,
      trainerConfig: { [`lr${HOSTILE}`]: `0.1${HOSTILE}` },
    });
    for (let step = 0; step < 3; step++) rec.logStep({ step, loss: 1 });
    rec.span('rollout', `roll${HOSTILE}`, () => {
      rec.span('tool_call', `tool${HOSTILE}\nFAKE span line`, () => undefined, {
        attributes: { cmd: `rm -rf${HOSTILE}` },
        labels: { sample: `s${HOSTILE}\nFAKE label line` },
      });
    }, { step: 1 });
    sampleId = `id${HOSTILE}`;
    rec.logSamples(
      [
        {
          sample_id: sampleId,
          group_id: `g${HOSTILE}`,
          prompt_text: `prompt${HOSTILE}${C1}\nsecond prompt line`,
          completion_text: `completion${HOSTILE}\n\tindented`,
          reward_total: 1,
          reward_components: { [`fmt${HOSTILE}`]: 1 },
        },
      ],
      { step: 1, select: false },
    );
    rec.logEvent(`kind${HOSTILE}`, { step: 2, message: `message${HOSTILE}\nFAKE event line` });
    const summary = rec.close();
    assert.equal(summary.counters.bad, 0, 'precondition: the recorder keeps names with control characters');
    assert.equal(summary.counters.spansBad, 0);

    other = path.join(root, 'other');
    const rec2 = new Recorder(other, { installHandlers: false, captureEnvironment: false, runId: 'other', trainerConfig: { lr: 1 } });
    for (let step = 0; step < 3; step++) rec2.logStep({ step, loss: 2 });
    rec2.close();

    const trial = path.join(root, 'evil__T0000001');
    const atif = smallAtif('hostile-session', [0, 1]) as { steps: Array<{ tool_calls?: Array<{ function_name: string }>; message: string }> };
    atif.steps[1].tool_calls![0].function_name = `bash${HOSTILE}\nFAKE tool line`;
    atif.steps[1].message = `step message${HOSTILE}`;
    writeTree(trial, {
      'result.json': {
        id: 'evil-1',
        trial_name: `evil${HOSTILE}\nFAKE name line`,
        task_name: `task${HOSTILE}`,
        verifier_result: { rewards: { [`reward${HOSTILE}`]: 1 } },
        exception_info: { exception_type: `Boom${HOSTILE}`, exception_message: `failed${HOSTILE}`, exception_traceback: `Traceback${HOSTILE}\n  File "a.py"\r\nBoom: failed\n` },
      },
      'agent/trajectory.json': atif,
      [`agent/log${HOSTILE}.txt`]: 'log\n',
    });
    const captured = await probe(['trial', 'capture', trial, '--run', run, '--step', '1', '--context', `k=v${HOSTILE}`, '--json']);
    assert.equal(captured.code, 0, captured.stderr);
    captureKey = (JSON.parse(captured.stdout) as { capture_key: string }).capture_key;
    staging = path.join(root, 'spool');
    mkdirSync(staging);
    const staged = await probe(['trial', 'stage', trial, '--to', staging, '--step', '1', '--json']);
    assert.equal(staged.code, 0, staged.stderr);
  });

  after(cleanupTempDirs);

  const cases: Array<[string, () => string[], { shows?: boolean; fake?: string[] }]> = [
    ['span list', () => ['span', 'list', run], { shows: true, fake: ['FAKE'] }],
    ['span list --tree', () => ['span', 'list', run, '--tree'], { shows: true, fake: ['FAKE'] }],
    ['samples', () => ['samples', run], { shows: true, fake: ['FAKE'] }],
    ['samples --full', () => ['samples', run, '--full'], { shows: true }],
    ['sample', () => ['sample', run, sampleId], { shows: true }],
    ['events', () => ['events', run], { shows: true, fake: ['FAKE'] }],
    ['info', () => ['info', run], { shows: true }],
    ['diff', () => ['diff', run, other], { shows: true }],
    ['report --format md', () => ['report', run, '--format', 'md', '--no-samples'], {}],
    ['trial list', () => ['trial', 'list', run], { shows: true, fake: ['FAKE'] }],
    ['trial show', () => ['trial', 'show', run, captureKey], { shows: true, fake: ['FAKE'] }],
    ['trial show --files', () => ['trial', 'show', run, captureKey, '--files'], { shows: true, fake: ['FAKE'] }],
    ['trial status', () => ['trial', 'status', staging, '--files'], { shows: true, fake: ['FAKE'] }],
    ['a missing sample id echoed in the error', () => ['sample', run, `nope${HOSTILE}`], {}],
    ['a missing run named in the error', () => ['info', path.join(run, `nope${HOSTILE}`)], {}],
  ];
  for (const [what, args, expect] of cases) {
    test(what, async () => {
      const r = await probe(args());
      assertNoRawControls(r, what);
      if (expect.shows) assertShowsEscaped(r, what);
      for (const fake of expect.fake ?? []) assertNoFakeLine(r, fake, what);
    });
  }

  test('trial capture, stage and deliver: the one-line summaries', async () => {
    const root = tempDir('rlprobe-cli-hostile-capture-');
    const trial = path.join(root, 'evil2__T0000002');
    writeTree(trial, { 'result.json': { id: 'evil-2', trial_name: `evil2${HOSTILE}\nFAKE`, verifier_result: { rewards: { [`r${HOSTILE}`]: 0.5 } } } });
    const target = path.join(root, 'run');
    new Recorder(target, { installHandlers: false, captureEnvironment: false, runId: 'target' }).close();
    const spool = path.join(root, 'spool');
    mkdirSync(spool);
    const capture = await probe(['trial', 'capture', trial, '--run', target, '--step', '0']);
    const stage = await probe(['trial', 'stage', trial, '--to', spool, '--step', '0']);
    const deliver = await probe(['trial', 'deliver', spool, '--run', target]);
    for (const [r, what] of [[capture, 'capture'], [stage, 'stage'], [deliver, 'deliver']] as const) {
      assert.equal(r.code, 0, `${what}: ${r.stderr}`);
      assertNoRawControls(r, `trial ${what}`);
      assertShowsEscaped(r, `trial ${what}`);
      assert.equal(r.stdout.trimEnd().split('\n').length, 1, `trial ${what}: one line\n${r.stdout}`);
    }
  });

  test('JSON output keeps the values: it parses back to exactly what was recorded', async () => {
    const [spans, samples] = await Promise.all([probe(['span', 'list', run, '--json']), probe(['samples', run, '--json'])]);
    for (const [r, what] of [[spans, 'span list --json'], [samples, 'samples --json']] as const) {
      assert.equal(r.code, 0, r.stderr);
      assertNoRawControls(r, what);
    }
    const names = (JSON.parse(spans.stdout) as SpanRecord[]).map((s) => s.name).sort();
    assert.deepEqual(names, RunReader.open(run).spans().map((s) => s.name).sort());
    assert.ok(names.includes(`roll${HOSTILE}`));
    const got = samples.stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredSampleRecord);
    assert.equal(got.length, 1);
    assert.equal(got[0].sample_id, sampleId);
    assert.equal(got[0].prompt_text, `prompt${HOSTILE}${C1}\nsecond prompt line`);
  });

  test('--full prints prompt and completion on their own lines, tabs kept, controls escaped', async () => {
    const r = await probe(['samples', run, '--full']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes('    second prompt line\n'), r.stdout);
    assert.ok(r.stdout.includes('    \tindented\n'), r.stdout);
    assert.ok(r.stdout.includes('prompt\\u001b[2J\\u001b]0;pwned\\u0007\\u009b2J\n'), r.stdout);
  });
});
