/** The trial query's schema: loaded only for a query with filters (query-parse.ts). */
import { z } from 'zod';

const Step = z.number().int().nonnegative();

export const TrialQuerySchema = z.strictObject({
  step: Step.optional(),
  /** Inclusive `[first, last]`. */
  stepRange: z.tuple([Step, Step]).optional(),
  /** Only captures labelled with this sample id. */
  sampleId: z.string().min(1).optional(),
});
export type TrialQuery = z.input<typeof TrialQuerySchema>;
