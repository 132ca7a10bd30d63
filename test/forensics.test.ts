/**
 * Sample forensics (issue 5): the reader's and `probe samples`' reward-range, truncation,
 * text and around-a-finding filters, and `probe sample <run> <id>`. Every filtered read is
 * checked against the same filter applied in JavaScript to an unfiltered read.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Recorder, RunReader, diagnose, findingByCode } from '../ts/index.js';
import type { StoredSampleRecord } from '../ts/index.js';
import { healthyGrpo, injectTruncationCollapse, recordPointsSync } from './helpers/doctor-runs.js';
import { throwsCode } from './helpers/errors.js';
import { QUIET, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';

const STEPS = 300;
const ONSET = 180;
let dir = '';
let all: StoredSampleRecord[] = [];

before(() => {
  dir = path.join(tempDir('rlprobe-forensics-'), 'run');
  const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, flushSteps: 50 });
  recordPointsSync(rec, injectTruncationCollapse(healthyGrpo({ seed: 21, steps: STEPS, samplesPerStep: 8 }), ONSET));
  assert.equal(rec.close().counters.samplesWritten, STEPS * 8);
  all = [...RunReader.open(dir).samples()];
});
after(cleanupTempDirs);

const ids = (xs: Iterable<StoredSampleRecord>) => [...xs].map((s) => s.sample_id);

describe('sample forensics', { concurrency: true }, () => {
  test('reward range, truncation and text filters match the same filters applied in JS', () => {
    const reader = RunReader.open(dir);
    const high = all.filter((s) => s.reward_total !== undefined && s.reward_total >= 0.8);
    assert.ok(high.length > 0 && high.length < all.length);
    assert.deepEqual(ids(reader.samples({ rewardMin: 0.8 })), ids(high));
    const band = all.filter((s) => s.reward_total !== undefined && s.reward_total >= 0.2 && s.reward_total <= 0.4);
    assert.deepEqual(ids(reader.samples({ rewardMin: 0.2, rewardMax: 0.4 })), ids(band));
    const cut = all.filter((s) => s.truncated === true);
    assert.ok(cut.length > (STEPS - ONSET) * 4, 'most samples after the onset are cut at the cap');
    assert.deepEqual(ids(reader.samples({ truncated: true })), ids(cut));
    assert.deepEqual(ids(reader.samples({ truncated: false })), ids(all.filter((s) => s.truncated === false)));
    // case-insensitive, in the prompt or the completion, combined with AND
    const text = all.filter((s) => `${s.prompt_text}\n${s.completion_text}`.toLowerCase().includes('completion 25'));
    assert.ok(text.length > 0);
    assert.deepEqual(ids(reader.samples({ text: 'COMPLETION 25' })), ids(text));
    const both = all.filter((s) => s.truncated === true && s.reward_total !== undefined && s.reward_total <= 0.05 && s.step >= 200 && s.step <= 250);
    assert.ok(both.length > 0);
    assert.deepEqual(ids(reader.samples({ truncated: true, rewardMax: 0.05, stepRange: [200, 250] })), ids(both));
    assert.deepEqual(ids(reader.samples({ sampleId: all[123].sample_id })), [all[123].sample_id]);
    throwsCode(() => reader.samples({ rewardMin: 1, rewardMax: 0 }), 'RLPROBE_INVALID_QUERY', /rewardMin: 1 is above rewardMax 0/);
    throwsCode(() => reader.samples({ text: '' }), 'RLPROBE_INVALID_QUERY', /text/);
  });

  test('aroundFinding keeps the steps of the finding passed; findingByCode names the findings there are', () => {
    const reader = RunReader.open(dir);
    const diagnosis = diagnose(reader);
    const f = findingByCode(diagnosis, 'TRUNCATION_COLLAPSE');
    assert.ok(f, 'the injected collapse is found');
    const around = [...reader.samples({ aroundFinding: f })];
    assert.deepEqual(ids(around), ids(all.filter((s) => s.step >= f.onset_step && s.step <= f.last_step)));
    // combined with a step range: the intersection
    const narrowed = [...reader.samples({ aroundFinding: f, stepRange: [0, f.onset_step + 5] })];
    assert.deepEqual(ids(narrowed), ids(all.filter((s) => s.step >= f.onset_step && s.step <= f.onset_step + 5)));
    // the finding's evidence samples are among them
    for (const e of f.samples) assert.ok(around.some((s) => s.sample_id === e.sample_id), e.sample_id);
    throwsCode(() => findingByCode(diagnosis, 'KL_BLOWUP'), 'RLPROBE_INVALID_QUERY', /no KL_BLOWUP finding in this run \(its findings: .*TRUNCATION_COLLAPSE/);
    // the reader never diagnoses: a bare code is refused, saying what to pass instead
    throwsCode(
      () => reader.samples({ aroundFinding: 'TRUNCATION_COLLAPSE' as never }),
      'RLPROBE_INVALID_QUERY',
      /invalid sample filter aroundFinding: expected a finding from diagnose\(reader\)\.findings .*findingByCode.* \(got "TRUNCATION_COLLAPSE"\)/,
    );
  });

  test('probe samples: --reward, --truncated, --text and --around-finding; bad values are named', async () => {
    const r = await runCli(['samples', dir, '--reward', '..0.05', '--truncated', '--text', 'completion 2', '--limit', '0', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const got = r.stdout.trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as StoredSampleRecord).sample_id);
    const want = all.filter((s) => s.truncated === true && (s.reward_total ?? Infinity) <= 0.05 && (s.completion_text ?? '').includes('completion 2'));
    assert.ok(want.length > 0);
    assert.deepEqual(got, ids(want));
    const open = await runCli(['samples', dir, '--reward', '0.5..', '--no-truncated', '--limit', '0', '--json']);
    const terminatedHigh = all.filter((s) => s.truncated === false && (s.reward_total ?? -Infinity) >= 0.5).length;
    assert.ok(terminatedHigh > 0);
    assert.equal(open.stdout.trim().split('\n').filter(Boolean).length, terminatedHigh);
    const around = await runCli(['samples', dir, '--around-finding', 'TRUNCATION_COLLAPSE', '--limit', '3']);
    assert.equal(around.code, 0, around.stderr);
    assert.match(around.stdout, /^step \d+ /);
    const bad = await runCli(['samples', dir, '--reward', 'high']);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /invalid --reward "high": expected MIN\.\.MAX/);
    const none = await runCli(['samples', dir, '--around-finding', 'NAN_INF']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no NAN_INF finding in this run/);
  });

  test('probe sample prints one sample in full; an unknown id exits 1', async () => {
    const s = all.find((x) => x.truncated === true)!;
    const r = await runCli(['sample', dir, s.sample_id]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^step ${s.step}  .* id ${s.sample_id}$`, 'm'));
    assert.match(r.stdout, /TRUNCATED/);
    assert.ok(r.stdout.includes(`  prompt:\n    ${s.prompt_text}`), r.stdout);
    assert.ok(r.stdout.includes(`  completion:\n    ${s.completion_text}`), r.stdout);
    const j = await runCli(['sample', dir, s.sample_id, '--json']);
    assert.deepEqual(JSON.parse(j.stdout), JSON.parse(JSON.stringify(s)));
    const missing = await runCli(['sample', dir, 'no-such-id']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no sample with id "no-such-id"/);
  });
});
