/**
 * `probe diff` (issue 5): config and environment diffs, per-metric final/best/AUC, the first
 * divergence (σ from past points only) and its lead indicator, step-axis warnings, and the
 * doctor's findings present in one run only.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { direction, firstDivergence } from '../ts/diff/metric-diff.js';
import { diffObjects } from '../ts/diff/object-diff.js';
import { Recorder, RunReader, diffRuns } from '../ts/index.js';
import type { RecorderOptions } from '../ts/index.js';
import { healthyGrpo, injectEntropyCollapse, recordPointsSync } from './helpers/doctor-runs.js';
import type { RunPoint } from './helpers/doctor-runs.js';
import { QUIET, cleanupTempDirs, runCli, tempDir } from './helpers/fixtures.js';
import { prng } from './helpers/prng.js';

const STEPS = 400;
const ONSET = 200;
let baseline = '';
let collapsed = '';
let everyOther = '';

function record(label: string, points: RunPoint[], options: RecorderOptions): string {
  const dir = path.join(tempDir(`rlprobe-diff-${label}-`), 'run');
  const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, runId: label, ...options });
  recordPointsSync(rec, points);
  rec.close();
  return dir;
}

before(() => {
  const config = { lr: 1e-6, beta: 0.04, generation: { temperature: 1.0, max_tokens: 1024 }, seed: 1 };
  baseline = record('baseline', healthyGrpo({ seed: 31, steps: STEPS }), { algorithm: 'grpo', trainerConfig: config });
  collapsed = record('collapsed', injectEntropyCollapse(healthyGrpo({ seed: 31, steps: STEPS }), ONSET), {
    algorithm: 'grpo',
    modelName: 'qwen2.5-1.5b',
    trainerConfig: { lr: 2e-6, beta: 0.04, generation: { temperature: 0.7, max_tokens: 1024 }, warmup: 20 },
  });
  everyOther = record('every-other', healthyGrpo({ seed: 31, steps: STEPS }).filter((p) => p.record.step % 2 === 0), { algorithm: 'grpo', trainerConfig: config });
});
after(cleanupTempDirs);

describe('probe diff', { concurrency: true }, () => {
  test('object diff: added, removed and changed keys, nested, arrays compared whole', () => {
    assert.deepEqual(diffObjects({ a: 1, n: { x: 1, y: [1, 2] }, gone: true }, { a: 1, n: { x: 2, y: [1, 2], z: null } }), [
      { path: 'gone', kind: 'removed', a: true },
      { path: 'n.x', kind: 'changed', a: 1, b: 2 },
      { path: 'n.z', kind: 'added', b: null },
    ]);
    assert.deepEqual(diffObjects({ y: [1, 2] }, { y: [2, 1] }), [{ path: 'y', kind: 'changed', a: [1, 2], b: [2, 1] }]);
  });

  test('best follows the metric: higher rewards and accuracies, lower losses and KL, none for spreads or entropy', () => {
    const dirs = Object.fromEntries(
      ['reward_mean', 'reward_component.format', 'extra.val/acc', 'value_explained_variance', 'loss', 'kl_mean', 'step_time_s', 'reward_std', 'entropy_mean', 'grad_norm'].map((n) => [n, direction(n)]),
    );
    assert.deepEqual(dirs, {
      reward_mean: 'higher', 'reward_component.format': 'higher', 'extra.val/acc': 'higher', value_explained_variance: 'higher',
      loss: 'lower', kl_mean: 'lower', step_time_s: 'lower', reward_std: null, entropy_mean: null, grad_norm: null,
    });
  });

  test('first divergence: 3 σ for 3 points in a row, σ from past points only', () => {
    const rand = prng(5);
    const n = 300;
    const steps = Float64Array.from({ length: n }, (_, i) => i * 10);
    const a = Float64Array.from({ length: n }, () => rand());
    const same = Float64Array.from(a, (x) => x + (rand() - 0.5) * 0.02);
    assert.equal(firstDivergence(steps, a, same), null, 'noise alone never diverges');
    const shifted = Float64Array.from(same, (x, i) => (i >= 150 ? x + 0.5 : x));
    const d = firstDivergence(steps, a, shifted);
    assert.deepEqual([d?.step, d && Number(d.difference.toFixed(1))], [1500, 0.5]);
    // what happens after a divergence cannot change where it was found (no future in σ)
    const later = Float64Array.from(shifted, (x, i) => (i > 160 ? x + 100 * rand() : x));
    assert.deepEqual(firstDivergence(steps, a, later), d);
    // a single outlier is not a divergence
    const blip = Float64Array.from(same, (x, i) => (i === 100 ? x + 5 : x));
    assert.equal(firstDivergence(steps, a, blip), null);
  });

  test('two runs: config and run facts, the lead indicator at the injected onset, findings only in one', async () => {
    const d = await diffRuns(RunReader.open(baseline), RunReader.open(collapsed));
    assert.deepEqual(d.run, [{ path: 'model_name', kind: 'changed', a: null, b: 'qwen2.5-1.5b' }]);
    assert.deepEqual(
      d.trainer_config.map((c) => [c.kind, c.path]),
      [['changed', 'generation.temperature'], ['changed', 'lr'], ['removed', 'seed'], ['added', 'warmup']],
    );
    assert.deepEqual(d.warnings, []);
    assert.equal(d.steps.common, STEPS);
    // the same seed: only entropy differs, from the onset
    assert.equal(d.lead?.metric, 'entropy_mean');
    assert.ok(Math.abs(d.lead!.step - ONSET) <= 5, `lead at ${d.lead!.step}`);
    assert.deepEqual(d.metrics.filter((m) => m.divergence).map((m) => m.metric), ['entropy_mean']);
    const entropy = d.metrics.find((m) => m.metric === 'entropy_mean')!;
    assert.ok(entropy.final.b! < entropy.final.a! * 0.1);
    assert.equal(entropy.best, null, 'entropy has no better direction');
    const reward = d.metrics.find((m) => m.metric === 'reward_mean')!;
    assert.deepEqual(reward.final.a, reward.final.b);
    assert.ok(reward.best && reward.auc.a !== null && reward.auc.a === reward.auc.b);
    assert.deepEqual(d.findings.only_in_b.map((f) => f.code), ['ENTROPY_COLLAPSE']);
    assert.deepEqual(d.findings.only_in_a, []);
  });

  test('different step axes are aligned on the common steps, with a warning', async () => {
    const d = await diffRuns(RunReader.open(baseline), RunReader.open(everyOther));
    assert.equal(d.steps.common, STEPS / 2);
    assert.match(d.warnings[0], /the step axes differ \(400 steps in A, 200 in B, 200 in common\)/);
    assert.equal(d.lead, null, 'identical values on the common steps');
  });

  test('CLI: text names the lead indicator and the finding in one run only; --json parses', async () => {
    const r = await runCli(['diff', baseline, collapsed]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^trainer config: 4 difference\(s\)$/m);
    assert.match(r.stdout, /^ {2}~ lr: 1\.00e-6 → 2\.00e-6$/m);
    assert.match(r.stdout, /^lead indicator: entropy_mean diverges first, at step \d+$/m);
    assert.match(r.stdout, /^finding only in B: CRITICAL ENTROPY_COLLAPSE onset ~step \d+/m);
    const j = await runCli(['diff', baseline, collapsed, '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(JSON.parse(j.stdout).lead.metric, 'entropy_mean');
    const bad = await runCli(['diff', baseline, path.join(baseline, 'nope')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /not a run directory/);
  });

  test('a run still recording: the metrics, read a few columns at a time, are compared on the rows read first', async () => {
    const dir = path.join(tempDir('rlprobe-diff-live-'), 'run');
    const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false });
    const row = (step: number) => ({ step, loss: 1 / (step + 1), reward_mean: step, kl_mean: 0.01 * step, entropy_mean: 2, grad_norm: 1, lr: 1e-6, extra: { a: step, b: -step, c: 2 * step } });
    try {
      for (let step = 0; step < 100; step++) rec.logStep(row(step));
      assert.equal(rec.flushSync(), true);
      const diff = diffRuns(RunReader.open(dir), RunReader.open(dir));
      // the first pass has been read: the run grows before the next ones
      for (let step = 100; step < 150; step++) rec.logStep(row(step));
      assert.equal(rec.flushSync(), true);
      const d = await diff;
      assert.deepEqual([d.steps.a, d.steps.b], [100, 100]);
      const byName = new Map(d.metrics.map((m) => [m.metric, m]));
      assert.ok(byName.size >= 9, `every shared metric compared: ${[...byName.keys()].join(', ')}`);
      assert.equal(byName.get('reward_mean')?.final.a, 99);
      assert.equal(byName.get('loss')?.final.a, 1 / 100);
      assert.equal(byName.get('kl_mean')?.final.a, 0.99);
    } finally {
      rec.close();
    }
  });
});
