/**
 * The runs test/mcp.test.ts reads through `probe mcp`, recorded through the public
 * Recorder in a temporary root:
 *  - `runs/collapse`: a GRPO run whose completions stop terminating from step 250
 *    (TRUNCATION_COLLAPSE, with evidence samples), every 25th step's first two samples
 *    logged inside a rollout span with turns and tool calls (messages, arguments, results,
 *    one with control characters in its name and message);
 *  - `runs/baseline`: the same run, healthy (for diff);
 *  - `runs/texts`: 240 samples with ~2 KB completions holding control characters and
 *    astral characters (pagination), and one sample with a 100,000-character completion;
 *  - `runs/trial`: a run with the Harbor claude-code trial captured at step 3;
 *  - `outside/run` beside the root (refused), and `runs/escape`, a link to it.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';

import { Recorder } from '../../ts/index.js';
import type { SampleRecord } from '../../ts/index.js';
import { healthyGrpo, injectTruncationCollapse } from './doctor-runs.js';
import type { RunPoint } from './doctor-runs.js';
import { prng } from './prng.js';
import { FAST, PASS_NAME, buildPassingTrial } from './trial-fixtures.js';

export const COLLAPSE_ONSET = 250;
export const STEPS = 400;
/** Steps whose first two samples were logged inside a rollout span. */
export const SPAN_EVERY = 25;
export const TEXT_SAMPLES = 240;
export const LONG_SAMPLE_ID = 'long-1';
export const LONG_TEXT_CHARS = 100_000;
export const TRIAL_STEP = 3;
export const TRIAL_SAMPLE = 's-17';
/** A name and a message holding an escape sequence and a newline. */
export const HOSTILE_NAME = 'bash\u001b]0;pwned\u0007\nfake line';
export const HOSTILE_MESSAGE = 'clear \u001b[2J the screen';

export interface McpRuns {
  root: string;
  collapse: string;
  baseline: string;
  texts: string;
  trial: string;
  outside: string;
  escape: string;
}

/** One rollout with two turns, each with a tool call, the sample logged inside. */
async function rollout(rec: Recorder, step: number, s: SampleRecord, k: number): Promise<void> {
  await rec.unit({ step, sample: String(s.sample_id), group: String(s.group_id) }, () =>
    rec.span(
      'rollout',
      `rollout ${step}/${k}`,
      async (r) => {
        for (let t = 0; t < 2; t++) {
          await rec.span('turn', `turn ${t}`, async (turn) => {
            turn.setAttributes({ message: t === 0 ? `solve task ${step}/${k}` : HOSTILE_MESSAGE, source: t === 0 ? 'user' : 'agent' });
            await rec.span('tool_call', t === 1 ? HOSTILE_NAME : 'read_file', (call) => {
              call.setAttributes({ arguments: JSON.stringify({ path: `src/${step}.py` }), result: `contents of src/${step}.py` });
            });
          });
        }
        r.setAttribute('reward', s.reward_total ?? null);
        rec.logSamples([s], { step, select: false });
      },
      { key: `${step}/${k}` },
    ),
  );
}

async function recordGrpo(dir: string, runId: string, points: RunPoint[], spans: boolean): Promise<void> {
  const rec = new Recorder(dir, { ...FAST, runId, algorithm: 'grpo', modelName: 'qwen2.5-0.5b', trainerConfig: { lr: 1e-6, group_size: 8 } });
  for (const p of points) {
    rec.logStep(p.record);
    const samples = p.samples ?? [];
    const inSpans = spans && p.record.step % SPAN_EVERY === 0 ? samples.slice(0, 2) : [];
    for (const [k, s] of inSpans.entries()) await rollout(rec, p.record.step, s, k);
    if (samples.length > inSpans.length) rec.logSamples(samples.slice(inSpans.length), { step: p.record.step, select: false });
  }
  rec.close();
}

/** A text of about `chars` characters with control and astral characters and newlines. */
function noisyText(rand: () => number, chars: number, tag: string): string {
  const parts = [`${tag}:`];
  let n = parts[0].length;
  const words = ['alpha', 'beta\u001b[31m', 'γάμμα', 'delta\r', '𝔡𝔢𝔩𝔱𝔞', 'tab\there', 'line\n', '😀', 'quote"s', 'back\\slash'];
  while (n < chars) {
    const w = words[Math.floor(rand() * words.length)];
    parts.push(w);
    n += w.length + 1;
  }
  return parts.join(' ');
}

async function recordTexts(dir: string): Promise<void> {
  const rand = prng(5);
  const rec = new Recorder(dir, { ...FAST, runId: 'texts', algorithm: 'grpo' });
  const perStep = 4;
  for (let step = 0; step < TEXT_SAMPLES / perStep; step++) {
    rec.logStep({ step, reward_mean: rand(), loss: rand() });
    const samples: SampleRecord[] = Array.from({ length: perStep }, (_, k) => ({
      sample_id: `t${step}-${k}`,
      group_id: `g${step}`,
      prompt_text: noisyText(rand, 300, `prompt ${step}/${k}`),
      completion_text: noisyText(rand, 1800 + Math.floor(rand() * 600), `completion ${step}/${k}`),
      reward_total: k === 3 && step === 7 ? NaN : rand(),
      completion_len: 400,
      truncated: k === 0,
    }));
    rec.logSamples(samples, { step, select: false });
  }
  rec.logSamples(
    [{ sample_id: LONG_SAMPLE_ID, prompt_text: noisyText(rand, 5_000, 'long prompt'), completion_text: noisyText(rand, LONG_TEXT_CHARS, 'long completion'), completion_token_ids: Array.from({ length: 3000 }, (_, i) => i * 7), reward_total: 0.5 }],
    { step: TEXT_SAMPLES / perStep - 1, select: false },
  );
  rec.close();
}

async function recordTrial(dir: string, trialDir: string): Promise<void> {
  buildPassingTrial(trialDir);
  const rec = new Recorder(dir, { ...FAST, runId: 'trial', algorithm: 'grpo' });
  for (let step = 0; step < 6; step++) rec.logStep({ step, reward_mean: step / 10 });
  await rec.captureTrial(trialDir, { step: TRIAL_STEP, sampleId: TRIAL_SAMPLE, groupId: 'g-3' });
  rec.close();
}

/** Records every run under `base` (a fresh temporary directory). */
export async function recordMcpRuns(base: string): Promise<McpRuns> {
  const root = path.join(base, 'root');
  const runs = path.join(root, 'runs');
  mkdirSync(runs, { recursive: true });
  const out: McpRuns = {
    root,
    collapse: path.join(runs, 'collapse'),
    baseline: path.join(runs, 'baseline'),
    texts: path.join(runs, 'texts'),
    trial: path.join(runs, 'trial'),
    outside: path.join(base, 'outside', 'run'),
    escape: path.join(runs, 'escape'),
  };
  await recordGrpo(out.collapse, 'collapse', injectTruncationCollapse(healthyGrpo({ seed: 14, steps: STEPS, samplesPerStep: 8 }), COLLAPSE_ONSET), true);
  await recordGrpo(out.baseline, 'baseline', healthyGrpo({ seed: 14, steps: STEPS, samplesPerStep: 8 }), false);
  await recordTexts(out.texts);
  await recordTrial(out.trial, path.join(base, 'trials', PASS_NAME));
  await recordGrpo(out.outside, 'outside', healthyGrpo({ seed: 3, steps: 20 }), false);
  symlinkSync(out.outside, out.escape);
  return out;
}
