/**
 * The library's text formatters (`formatRunDiff`, `formatDiagnosis`) print names that come
 * from a recording: trainer-config keys, sample ids, reasons. A newline or an escape
 * sequence in one of them must not start a line of its own or reach the terminal raw — the
 * CLI's escaping stream keeps line breaks, so these one-line fields are escaped here.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';

import { Recorder, RunReader, diffRuns, formatDiagnosis, formatRunDiff } from '../ts/index.js';
import type { Diagnosis } from '../ts/index.js';
import { QUIET, cleanupTempDirs, tempDir } from './helpers/fixtures.js';

after(cleanupTempDirs);

const FAKE = 'finding only in B: CRITICAL FAKE_FINDING';
const HOSTILE_KEY = `lr\n${FAKE}\u001b[2J`;

function record(dir: string, trainerConfig: Record<string, unknown>): void {
  const rec = new Recorder(dir, { ...QUIET, trainerConfig });
  for (let step = 0; step < 20; step++) rec.logStep({ step, loss: 1 / (step + 1) });
  rec.close();
}

test('a trainer-config key with a newline and ESC stays on its own line in probe diff text', async () => {
  const root = tempDir('rlprobe-format-escaping-');
  record(path.join(root, 'a'), { lr: 1e-5 });
  record(path.join(root, 'b'), { [HOSTILE_KEY]: 2e-5 });
  const text = formatRunDiff(await diffRuns(RunReader.open(path.join(root, 'a')), RunReader.open(path.join(root, 'b'))));
  assert.ok(!text.split('\n').some((line) => line.startsWith(FAKE)), `a config key started a line of its own:\n${text}`);
  assert.ok(!text.includes('\u001b'), 'a raw ESC reached the text');
  assert.match(text, /lr\\nfinding only in B: CRITICAL FAKE_FINDING\\u001b\[2J/);
});

test('sample ids, reasons and skip reasons stay on their line in probe doctor text', () => {
  const diagnosis: Diagnosis = {
    run_dir: 'runs/x',
    points: 10,
    samples: 1,
    samples_error: null,
    ran: ['entropy'],
    skipped: [{ detector: 'kl', codes: ['KL_BLOWUP'], reason: `no kl_mean\nCRITICAL  FAKE` }],
    findings: [
      {
        code: 'ENTROPY_COLLAPSE',
        severity: 'critical',
        onset_step: 3,
        last_step: 9,
        confidence: 0.9,
        message: 'entropy fell',
        remedy: 'raise the entropy bonus',
        evidence: {},
        columns: ['entropy_mean'],
        root_cause: null,
      levels: null,
        samples: [{ sample_id: `3_1\nCRITICAL  FAKE_FINDING`, step: 3, why: `top\u001b]0;pwned\u0007` } as Diagnosis['findings'][number]['samples'][number]],
      },
    ],
  };
  const text = formatDiagnosis(diagnosis);
  assert.ok(!text.split('\n').some((line) => line.startsWith('CRITICAL  FAKE')), `a recorded name started a line:\n${text}`);
  assert.ok(!text.includes('\u001b') && !text.includes('\u0007'), 'a raw ESC or BEL reached the text');
  assert.match(text, /3_1\\nCRITICAL  FAKE_FINDING/);
});
