/**
 * SampleRecord: per-sample forensics (docs/format.md#samples). Field names are the format's
 * snake_case names; the Rust writer (crates/rlprobe-core/src/samples/wire.rs) validates
 * them on its thread, so a malformed sample becomes a `bad_record` event, never a throw.
 */
export interface SampleRecord {
  /** Defaults to the `step` given to `logSamples`. */
  step?: number;
  /** Defaults to `<step>_<index in the batch>`. An integer id is stored as its string. */
  sample_id?: string | number;
  /** Defaults to the recorder's rank. */
  rank?: number;
  /** The GRPO group (prompt group) the sample belongs to. */
  group_id?: string | number;
  prompt_id?: string | number;
  prompt_text?: string;
  completion_text?: string;
  completion_token_ids?: ArrayLike<number>;
  /** Ranks the sample for top-k / bottom-k selection; missing or NaN: never an extreme. */
  reward_total?: number;
  reward_components?: Record<string, number>;
  advantage?: number;
  logprob_mean?: number;
  kl_contribution?: number;
  completion_len?: number;
  truncated?: boolean;
  /** Set by the recorder's selection; with `select: false`, yours is kept (else `all`). */
  capture_reason?: string;
  /** Any other numeric metric, stored as `extra.<name>` (as are unknown numeric fields). */
  extra?: Record<string, number>;
  /** The span the sample belongs to; defaults to the ambient span (`recorder.span`). */
  span_id?: string;
  /** Labels; default: the ambient unit's (`recorder.unit`). */
  labels?: Record<string, string | number | boolean>;
}

/** Why a sample was kept. */
export const CAPTURE_REASONS = ['top_k', 'bottom_k', 'random', 'all'] as const;
export type CaptureReason = (typeof CAPTURE_REASONS)[number];

/**
 * A sample as read back: ids are strings, the rank is always known. (A read restricted to
 * some `columns` leaves the others out; `step` then reads NaN and `sample_id` '' unless
 * they were asked for.)
 */
export interface StoredSampleRecord {
  step: number;
  sample_id: string;
  rank: number;
  group_id?: string;
  prompt_id?: string;
  prompt_text?: string;
  completion_text?: string;
  completion_token_ids?: number[];
  reward_total?: number;
  reward_components?: Record<string, number>;
  advantage?: number;
  logprob_mean?: number;
  kl_contribution?: number;
  completion_len?: number;
  truncated?: boolean;
  capture_reason?: string;
  extra?: Record<string, number>;
  /** The span it was logged under (see `RunReader.spanOfSample`). */
  span_id?: string;
  /** The unit's labels it was logged with. */
  labels?: Record<string, string>;
}

/** Fields stored as text even when another writer stored them as numbers. */
export const SAMPLE_TEXT_FIELDS = new Set(['sample_id', 'group_id', 'prompt_id', 'prompt_text', 'completion_text', 'capture_reason', 'span_id']);
