/**
 * A folder of runs for the probe serve tests: runs nested at several depths, one with an
 * entropy collapse (a finding), one with a captured Harbor trial linked to a sample, a
 * hostile one (markup and escape sequences in its names and texts), a rank directory
 * inside a run (not a run of its own), and a symbolic link to a run outside the folder
 * (not served).
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { Recorder } from '../../ts/index.js';
import { healthyGrpo, injectEntropyCollapse, recordPointsSync } from './doctor-runs.js';
import { QUIET, tempDir } from './fixtures.js';
import { HOSTILE_TEXT } from './report-runs.js';
import { PASS_NAME, buildPassingTrial } from './trial-fixtures.js';

/** A run id and a folder name no page may run or render as markup. */
export const HOSTILE_ID = `<script>window.__pwned = 4</script>\u001b[31mred "q" 'a'`;
export const HOSTILE_DIR = `<img src=x onerror="window.__pwned=5">`;

export interface ServeFleet {
  root: string;
  /** Run directories by role. */
  runs: { healthy: string; collapse: string; trial: string; hostile: string; outside: string };
}

function record(dir: string, runId: string, points: ReturnType<typeof healthyGrpo>, extra: Record<string, unknown> = {}): Recorder {
  const rec = new Recorder(dir, { ...QUIET, captureEnvironment: false, runId, algorithm: 'grpo', modelName: 'qwen-0.5b', ...extra });
  recordPointsSync(rec, points);
  return rec;
}

export async function makeServeFleet(): Promise<ServeFleet> {
  const base = tempDir('rlprobe-serve-');
  const root = path.join(base, 'runs');
  const healthy = path.join(root, 'sweep', 'a-healthy');
  const collapse = path.join(root, 'sweep', 'b-collapse');
  const trial = path.join(root, 'deep', 'x', 'y', 'trial-run');
  const hostile = path.join(root, HOSTILE_DIR);
  const outside = path.join(base, 'elsewhere', 'outside-run');
  const a = record(healthy, 'a-healthy', healthyGrpo({ steps: 300, samplesPerStep: 4, seed: 1 }));
  a.logEvent('checkpoint', { step: 200, message: 'saved ckpt-200' });
  a.close();
  const rec = record(collapse, 'b-collapse', injectEntropyCollapse(healthyGrpo({ steps: 300, samplesPerStep: 12, seed: 2 }), 120), { algorithm: 'ppo', modelName: 'llama-1b' });
  rec.close();
  // a rank directory inside a run: part of the run, never a run of its own
  mkdirSync(path.join(collapse, 'rank-001'));
  writeFileSync(path.join(collapse, 'rank-001', 'manifest.json'), JSON.stringify({ schema_version: 1, run_id: 'b-collapse', rank: 1 }));

  const trialDir = path.join(base, 'trials', PASS_NAME);
  buildPassingTrial(trialDir);
  const t = new Recorder(trial, { ...QUIET, captureEnvironment: false, runId: 'trial-run', algorithm: 'grpo' });
  for (let step = 0; step < 6; step++) t.logStep({ step, reward_mean: step / 10, entropy_mean: 0.5 });
  t.logSamples([{ sample_id: 's-17', prompt_text: 'say hello', completion_text: 'hello world', reward_total: 1 }], { step: 3, select: false });
  await t.captureTrial(trialDir, { step: 3, sampleId: 's-17', groupId: 'g-3' });
  t.close();

  const points = healthyGrpo({ steps: 60, samplesPerStep: 2, seed: 4 });
  for (const p of points) for (const s of p.samples ?? []) s.completion_text = HOSTILE_TEXT;
  const h = record(hostile, HOSTILE_ID, points, { modelName: `<b>${HOSTILE_ID}</b>` });
  h.close();

  record(outside, 'outside', healthyGrpo({ steps: 20, seed: 6 })).close();
  symlinkSync(outside, path.join(root, 'link-to-outside'));
  return { root, runs: { healthy, collapse, trial, hostile, outside } };
}
