/**
 * A run whose columns appear mid-run (issue 20): what test/tool-recipes.test.ts and
 * test/python-interop.test.ts record (in process and through test/helpers/late-columns-child.ts)
 * and then expect every reader to give back.
 *
 * Steps are logged in chunks of CHUNK, each ended by flushSync, so part files break at known
 * steps and the first part holds none of the late columns:
 *   extra.eval_accuracy            an eval metric, a top-level key, every 50 steps from step 50
 *   reward_component.length_penalty from step 120
 *   extra.throughput.tok/s         from step 180 (a dotted name with a slash)
 * Samples (every SAMPLE_EVERY steps, three per call, select: false):
 *   reward_component.style         from step 100
 *   extra.judge_score              from step 150
 * Spans: a keyed rollout per sample step (with a turn under it), a keyed evaluation span
 * recorded again in a later chunk (the last write wins), and an epoch span never ended
 * (status `open` in every file a flush or crash leaves).
 */
import type { Recorder, SampleRecord, StepRecord } from '../../ts/index.js';

export const CHUNK = 30;
export const EVAL_EVERY = 50;
export const COMPONENT_FROM = 120;
export const EXTRA_FROM = 180;
export const SAMPLE_EVERY = 10;
export const SAMPLE_COMPONENT_FROM = 100;
export const SAMPLE_EXTRA_FROM = 150;
export const SAMPLES_PER_CALL = 3;

/** The step columns that appear mid-run, and the first step that has each. */
export const LATE_STEP_COLUMNS: Record<string, number> = {
  'extra.eval_accuracy': EVAL_EVERY,
  'reward_component.length_penalty': COMPONENT_FROM,
  'extra.throughput.tok/s': EXTRA_FROM,
};
/** The sample columns that appear mid-run, and the first step that has each. */
export const LATE_SAMPLE_COLUMNS: Record<string, number> = {
  'reward_component.style': SAMPLE_COMPONENT_FROM,
  'extra.judge_score': SAMPLE_EXTRA_FROM,
};

export type LoggedStep = StepRecord & Record<string, unknown>;

/** The step record logged at `step` by a recorder of `generation` (0 first, 1 for a resumed run). */
export function lateStep(step: number, generation = 0): LoggedStep {
  const r: LoggedStep = {
    step,
    timestamp: 1_760_000_000 + step + generation / 4,
    loss: step === 77 ? NaN : 1 / (step + 1) + generation,
    reward_mean: (step % 13) / 13,
    grad_norm: step === 133 ? Infinity : 0.5 + (step % 7) / 10,
    nan_count: step === 77 ? 3 : 0,
    reward_components: { format: (step % 3) / 2 },
    extra: { 'gpu.mem_gb': 40 + (step % 5) },
  };
  if (step % 5 === 0) r.kl_positional = [step / 100, 0.5, 1e-300];
  if (step >= EVAL_EVERY && step % EVAL_EVERY === 0) r.eval_accuracy = step / 1000 + generation;
  if (step >= COMPONENT_FROM) r.reward_components!.length_penalty = -(step % 11) / 10;
  if (step >= EXTRA_FROM) r.extra!['throughput.tok/s'] = 1000 + step + generation;
  return r;
}

/** The samples logged at `step` (a multiple of SAMPLE_EVERY) by `rank`. */
export function lateSamples(step: number, rank: number, generation = 0): SampleRecord[] {
  return Array.from({ length: SAMPLES_PER_CALL }, (_, i) => {
    const s: SampleRecord = {
      sample_id: `g${generation}-r${rank}-s${step}-${i}`,
      group_id: `grp-${step}`,
      prompt_id: `p-${step}`,
      prompt_text: `What is ${step} + ${i}? ✓`,
      completion_text: `${step + i}\nbecause…`,
      completion_token_ids: [step, i, 50256],
      reward_total: i === 1 && step === 40 ? NaN : i / 2 + rank,
      reward_components: { format: i % 2 },
      advantage: i - 1,
      completion_len: 10 + i,
      truncated: i === 2,
      labels: { difficulty: i === 0 ? 'easy' : 'hard' },
    };
    if (step >= SAMPLE_COMPONENT_FROM) s.reward_components!.style = step / 1000;
    if (step >= SAMPLE_EXTRA_FROM) s.extra = { judge_score: i / 4 + step };
    return s;
  });
}

/** A logged step as readers return it: top-level unknown keys (the eval metric) move into `extra`. */
export function storedStep(logged: LoggedStep, rank: number): Record<string, unknown> {
  const { eval_accuracy, extra, ...rest } = logged;
  return { ...rest, rank, extra: eval_accuracy === undefined ? extra : { ...extra, eval_accuracy } };
}

/** Every step [from, to) logged, in order. */
export function lateSteps(from: number, to: number, generation = 0): LoggedStep[] {
  return Array.from({ length: to - from }, (_, k) => lateStep(from + k, generation));
}

/** Every sample of steps [from, to) logged by `rank`, in order, as stored with select: false. */
export function lateSampleRows(from: number, to: number, rank: number, generation = 0): Array<SampleRecord & { step: number; rank: number; capture_reason: string }> {
  const out: Array<SampleRecord & { step: number; rank: number; capture_reason: string }> = [];
  for (let step = from; step < to; step++) {
    if (step % SAMPLE_EVERY !== 0) continue;
    for (const s of lateSamples(step, rank, generation)) out.push({ ...s, step, rank, capture_reason: 'all' });
  }
  return out;
}

/**
 * Logs steps [from, to) with their samples and spans, flushSync at every CHUNK boundary and
 * at the end (throws when a flush times out). The epoch span is left open.
 */
export function recordLateRun(rec: Recorder, from: number, to: number, generation = 0): void {
  const rank = rec.options.rank ?? 0;
  rec.startSpan('epoch', `epoch-g${generation}`, { step: from, parent: null });
  for (let step = from; step < to; step++) {
    rec.logStep(lateStep(step, generation));
    if (step % SAMPLE_EVERY === 0) {
      rec.span(
        'rollout',
        `rollout-${step}`,
        (rollout) => {
          rec.span('turn', 'turn-0', () => undefined, { parent: rollout, attributes: { tokens: step } });
          rec.logSamples(lateSamples(step, rank, generation), { step, select: false });
        },
        { step, key: `rollout-${step}`, parent: null, attributes: { generation, step } },
      );
    }
    // the same keyed evaluation span recorded twice, in different parts: the last write wins
    if (step === 60 || step === 150 || step === 200) {
      rec.startSpan('evaluation', 'eval', { key: 'eval', step, parent: null, attributes: { score: step + generation } }).end();
    }
    if ((step + 1) % CHUNK === 0 && !rec.flushSync(30_000)) throw new Error(`flushSync timed out at step ${step}`);
  }
  if (!rec.flushSync(30_000)) throw new Error('flushSync timed out at the end');
}
