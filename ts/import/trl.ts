/**
 * `probe import trl`: a Hugging Face Trainer `trainer_state.json` written by TRL's
 * GRPOTrainer or PPOTrainer. Its `log_history` holds one entry per logging call: the
 * training metrics, the eval metrics (`eval_*`) and the final run summary of a step are
 * separate entries, merged here into one row per step.
 */
import { RlprobeError } from '../errors.js';
import { EXTRA_PREFIX, REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import { SourceSteps, stepOf } from './mapping.js';
import type { MappingRules } from './mapping.js';
import { isPlainObject, parsePythonJson } from '../files/python-json.js';
import { importRun, readSourceText } from './write-import.js';
import type { ImportOptions, ImportResult, ParsedImport } from './write-import.js';

/**
 * TRL metric names (GRPO old and new, PPO) → step columns; the first present source wins.
 * TensorBoard logs the same names behind `train/` (ts/import/tensorboard.ts).
 */
export const TRL_RULES: MappingRules = {
  fields: [
    // GRPO `reward`; PPO's raw reward-model score first (rlhf_reward has the KL penalty in it)
    ['reward_mean', ['reward', 'objective/scores', 'objective/rlhf_reward']],
    ['reward_std', ['reward_std']],
    ['zero_variance_group_frac', ['frac_reward_zero_std']],
    ['kl_mean', ['kl', 'objective/kl']],
    // PPO: per-token entropy from the optimisation; objective/entropy is a per-sequence sum of -logprobs
    ['entropy_mean', ['entropy', 'policy/entropy_avg', 'objective/entropy']],
    ['completion_len_mean', ['completions/mean_length', 'completion_length']],
    ['completion_len_max', ['completions/max_length']],
    // completions that hit max_completion_length without an EOS
    ['truncation_rate', ['completions/clipped_ratio']],
    ['max_len_hit_frac', ['completions/clipped_ratio']],
    ['clip_fraction', ['clip_ratio/region_mean', 'clip_ratio', 'policy/clipfrac_avg']],
    ['ratio_mean', ['val/ratio']],
    ['value_loss', ['loss/value_avg']],
    ['value_clip_fraction', ['val/clipfrac_avg']],
    ['loss', ['loss', 'loss/policy_avg']],
    ['lr', ['learning_rate', 'lr']],
    ['grad_norm', ['grad_norm']],
    ['step_time_s', ['step_time']],
  ],
  dynamic: (key) => {
    // `rewards/<fn>/mean` (TRL ≥ 0.16) and `rewards/<fn>` (older) are per-function rewards
    const m = /^rewards\/(.+)\/mean$/.exec(key) ?? /^rewards\/([^/]+)$/.exec(key);
    if (m) return REWARD_COMPONENT_PREFIX + m[1];
    // TRL's `val/` (PPO, RLOO, online DPO: ratio variance, EOS counts) is training data, not
    // validation (TRL's held-out metrics are `eval_*`): kept clear of the held-out prefix `val/`
    return key.startsWith('val/') ? `${EXTRA_PREFIX}trl/${key}` : null;
  },
};

/** grpo or ppo from the metric names, 'unknown' when neither (or both) is evident. */
export function trlAlgorithm(keys: Set<string>): string {
  const any = (test: (key: string) => boolean) => [...keys].some(test);
  const grpo = any((k) => k === 'frac_reward_zero_std' || k === 'reward_std' || k === 'completion_length' || k.startsWith('rewards/') || k.startsWith('completions/'));
  const ppo = any((k) => k.startsWith('objective/') || k.startsWith('policy/'));
  return grpo === ppo ? 'unknown' : grpo ? 'grpo' : 'ppo';
}

/** PPO's objective/kl is the per-sequence sum (kl.sum(1).mean()); GRPO's kl is per token. */
export function trlKlPerToken(keys: Set<string>): boolean {
  return !(keys.has('objective/kl') && !keys.has('kl'));
}

function parseTrl(file: string): ParsedImport {
  const { text, sha256 } = readSourceText(file);
  let state: unknown;
  try {
    state = parsePythonJson(text);
  } catch (error) {
    throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${file}: not valid JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(state) || !Array.isArray(state.log_history)) {
    throw new RlprobeError('RLPROBE_IMPORT_FAILED', `${file}: no "log_history" array; expected a Hugging Face trainer_state.json`);
  }
  const steps = new SourceSteps();
  let summary: Record<string, unknown> | undefined;
  state.log_history.forEach((entry: unknown, i) => {
    if (!isPlainObject(entry) || entry.step === undefined || entry.step === null) {
      steps.skipped++;
      return;
    }
    const step = stepOf(entry.step, `${file}: log_history[${i}]`);
    // the run summary Trainer.train() logs last: run-level figures, not a step's metrics
    if ('train_runtime' in entry) {
      const { step: _, ...figures } = entry;
      summary = { ...summary, ...figures };
      return;
    }
    let n = 0;
    for (const [key, value] of Object.entries(entry)) {
      if (key === 'step') continue;
      // null: the trainer averaged an all-NaN logging window
      const x = typeof value === 'number' ? value : value === null ? NaN : undefined;
      if (x === undefined) continue;
      steps.set(step, key, x);
      n++;
    }
    if (n === 0) steps.skipped++;
  });
  const { log_history: _, ...trainerConfig } = state;
  const keys = steps.keys();
  return {
    ...steps.map(TRL_RULES),
    sha256,
    skippedLines: steps.skipped,
    algorithm: trlAlgorithm(keys),
    klPerToken: trlKlPerToken(keys),
    trainerConfig,
    summary,
  };
}

/** Imports a TRL `trainer_state.json` into a new run directory. */
export function importTrl(trainerState: string, outDir: string, options: ImportOptions = {}): ImportResult {
  return importRun('trl', trainerState, outDir, options, parseTrl);
}
