/**
 * Runs for the report tests: a GRPO run whose completions stop terminating from step 250
 * (findings with evidence samples), with reward components, extras on another cadence, a
 * list column, events, and one sample whose text tries to break out of the page.
 */
import path from 'node:path';

import { Recorder } from '../../ts/index.js';
import { healthyGrpo, injectEntropyCollapse, injectTruncationCollapse, recordPointsSync } from './doctor-runs.js';
import { QUIET, tempDir } from './fixtures.js';

export const STEPS = 400;
export const TRUNCATION_ONSET = 250;
/** A completion that would run script if the report did not escape it. */
export const HOSTILE_TEXT = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & <b>bold</b>';
export const HOSTILE_STEP = 300;

export function recordReportRun(label: string, options: { collapse?: 'truncation' | 'entropy' | 'none'; seed?: number } = {}): string {
  const dir = path.join(tempDir(`rlprobe-report-${label}-`), 'run');
  let points = healthyGrpo({ steps: STEPS, samplesPerStep: 8, seed: options.seed ?? 3 });
  const collapse = options.collapse ?? 'truncation';
  if (collapse === 'truncation') points = injectTruncationCollapse(points, TRUNCATION_ONSET);
  if (collapse === 'entropy') points = injectEntropyCollapse(points, 200);
  for (const p of points) {
    const r = p.record;
    r.reward_components = { correctness: (r.reward_mean as number) * 0.8, format: 0.2 };
    r.kl_positional = [0.01, 0.02, 0.03];
    if (r.step % 10 === 0) r.extra = { 'eval/acc': 0.3 + r.step / 2000 };
  }
  const hostile = points.find((p) => p.record.step === HOSTILE_STEP)!;
  hostile.samples![0].completion_text = HOSTILE_TEXT;
  hostile.samples![0].prompt_text = '<!-- not a comment --> "quoted" \'single\'';
  const rec = new Recorder(dir, {
    ...QUIET,
    captureEnvironment: false,
    runId: label,
    algorithm: 'grpo',
    modelName: 'qwen2.5-0.5b',
    trainerConfig: { lr: 1e-6, beta: 0.04, note: '</script><script>window.__pwned = 3</script>' },
  });
  recordPointsSync(rec, points);
  rec.logEvent('checkpoint', { step: 200, message: 'saved ckpt-200' });
  // steps carry the writer's clock, published every 10 ms tick: an event logged within a
  // tick of the last step can read earlier than it. Wait past a few ticks so the event is
  // unambiguously after every step (a loaded machine made this flaky).
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  rec.logEvent('eval', { message: 'no step: placed by its time' });
  rec.close();
  return dir;
}
