/** The sample query's schema: loaded only for a query with filters (query-parse.ts). */
import { z } from 'zod';

const step = z.number().int().min(0);

/** Which samples to read. Every filter is optional; they combine with AND. */
export const SampleQuerySchema = z.strictObject({
  /** One step. */
  step: step.optional(),
  /** Inclusive `[from, to]`. */
  stepRange: z.tuple([step, step]).optional(),
  /** Only these steps, read in one pass (a report's chosen steps). */
  steps: z.array(step).min(1).optional(),
  /** `top_k`, `bottom_k`, `random`, `all` (or any reason a caller gave), or several. */
  reason: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  /** A GRPO group id (integer ids match their string form). */
  group: z.union([z.string(), z.number().int()]).optional(),
  /** Inclusive `reward_total` bounds (a sample without a reward never matches them). */
  rewardMin: z.number().optional(),
  rewardMax: z.number().optional(),
  /** Only truncated (true) or only terminated (false) completions. */
  truncated: z.boolean().optional(),
  /** Case-insensitive substring of the prompt or the completion. */
  text: z.string().min(1).optional(),
  /** One sample id (integer ids match their string form). */
  sampleId: z.union([z.string().min(1), z.number().int()]).optional(),
  /**
   * The steps of this doctor finding, from its onset to its last step. The caller passes
   * the finding (from `diagnose(reader).findings`, or `findingByCode`): the reader never
   * runs a diagnosis itself.
   */
  aroundFinding: z
    .object(
      { code: z.string().min(1), onset_step: step, last_step: step },
      { error: 'expected a finding from diagnose(reader).findings (code, onset_step, last_step); for a finding code, pass findingByCode(diagnose(reader), code)' },
    )
    .optional(),
  /** One rank or several (rank 0 is the run directory itself). */
  rank: z.union([z.number().int().min(0), z.array(z.number().int().min(0)).min(1)]).optional(),
  /** Only these columns (e.g. leave out the texts for a fast scan). */
  columns: z.array(z.string().min(1)).optional(),
  /** Samples per batch read from disk (bounds memory with long completions). */
  batchRows: z.number().int().min(1).max(65_536).optional(),
});

export type SampleQuery = z.input<typeof SampleQuerySchema>;
