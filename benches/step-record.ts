import type { StepRecord } from '../dist/index.js';

/** A GRPO step as a trainer logs it: 33 metrics, 3 components, 3 extras, 8 KL buckets. */
export function makeRecord(step: number): StepRecord {
  const n = Math.sin(step) * 0.01;
  return {
    step,
    reward_mean: 0.5 + n, reward_std: 0.2 + n, reward_min: -1 + n, reward_max: 1 + n,
    kl_mean: 0.01 + n, kl_max: 0.1 + n, entropy_mean: 1.2 + n, logprob_mean: -0.8 + n,
    ratio_mean: 1 + n, ratio_p95: 1.2 + n, clip_fraction: 0.05 + n,
    adv_mean: n, adv_std: 1 + n, adv_zero_frac: 0.1 + n,
    group_reward_std_mean: 0.3 + n, zero_variance_group_frac: 0.1 + n,
    loss: 0.7 + n, lr: 1e-6, grad_norm: 1.5 + n, grad_norm_post_clip: 1 + n,
    nan_count: 0, inf_count: 0, weight_update_ratio: 1e-4 + n,
    completion_len_mean: 300 + n, completion_len_p95: 600, completion_len_max: 1024,
    max_len_hit_frac: 0.02 + n, eos_rate: 0.97 + n, repetition_rate: 0.01 + n, truncation_rate: 0.02 + n,
    step_time_s: 12 + n, generation_time_s: 9 + n, optimization_time_s: 3 + n,
    reward_components: { format: 0.9 + n, correctness: 0.4 + n, length_penalty: -0.1 + n },
    extra: { tokens_per_s: 1000 + n, gpu_mem_gb: 70 + n, queue_depth: 3 },
    kl_positional: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08 + n],
  };
}

