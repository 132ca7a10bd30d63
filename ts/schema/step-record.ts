/**
 * StepRecord: one row per optimizer step (docs/format.md#steps). Field names are the format's
 * snake_case names. Only `step` is required. The Rust core holds the same vocabulary
 * (crates/rlprobe-core/src/schema.rs); test/native.test.ts checks the two agree.
 */
export interface StepRecord {
  step: number;
  /** Unix seconds; filled in with the wall clock at `logStep` time when absent. */
  timestamp?: number;
  // reward
  reward_mean?: number;
  reward_std?: number;
  reward_min?: number;
  reward_max?: number;
  reward_components?: Record<string, number>;
  // KL to reference
  kl_mean?: number;
  kl_max?: number;
  /** Coarse token-position buckets. */
  kl_positional?: ArrayLike<number>;
  // policy
  entropy_mean?: number;
  logprob_mean?: number;
  ratio_mean?: number;
  ratio_p95?: number;
  clip_fraction?: number;
  // advantages
  adv_mean?: number;
  adv_std?: number;
  adv_zero_frac?: number;
  // GRPO
  group_reward_std_mean?: number;
  zero_variance_group_frac?: number;
  // PPO value head
  value_loss?: number;
  value_explained_variance?: number;
  value_clip_fraction?: number;
  // optimization
  loss?: number;
  lr?: number;
  grad_norm?: number;
  grad_norm_post_clip?: number;
  /** Integer counts (int64 on disk, as the Python package writes them). */
  nan_count?: number;
  inf_count?: number;
  weight_update_ratio?: number;
  // generation
  completion_len_mean?: number;
  completion_len_p95?: number;
  completion_len_max?: number;
  max_len_hit_frac?: number;
  eos_rate?: number;
  repetition_rate?: number;
  truncation_rate?: number;
  // throughput
  step_time_s?: number;
  generation_time_s?: number;
  optimization_time_s?: number;
  /** Any other numeric metric. Unknown top-level numeric keys land here too. */
  extra?: Record<string, number>;
  [other: string]: unknown;
}

/** A step as read back: the recorder's rank and timestamp are always present. */
export interface StoredStepRecord extends StepRecord {
  timestamp?: number;
  rank?: number;
  kl_positional?: number[];
}

export const REWARD_COMPONENT_PREFIX = 'reward_component.';
export const EXTRA_PREFIX = 'extra.';

/** The optional scalar and list fields, in the format's order. */
export const STEP_FIELDS = [
  'reward_mean', 'reward_std', 'reward_min', 'reward_max',
  'kl_mean', 'kl_max', 'kl_positional',
  'entropy_mean', 'logprob_mean', 'ratio_mean', 'ratio_p95', 'clip_fraction',
  'adv_mean', 'adv_std', 'adv_zero_frac',
  'group_reward_std_mean', 'zero_variance_group_frac',
  'value_loss', 'value_explained_variance', 'value_clip_fraction',
  'loss', 'lr', 'grad_norm', 'grad_norm_post_clip', 'nan_count', 'inf_count', 'weight_update_ratio',
  'completion_len_mean', 'completion_len_p95', 'completion_len_max', 'max_len_hit_frac',
  'eos_rate', 'repetition_rate', 'truncation_rate',
  'step_time_s', 'generation_time_s', 'optimization_time_s',
] as const;

/** Columns every step table has, before the optional ones. */
export const FIXED_STEP_COLUMNS = ['step', 'timestamp', 'rank'] as const;
