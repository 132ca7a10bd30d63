/** The span query's schema: loaded only for a query with filters (query-parse.ts). */
import { z } from 'zod';

const step = z.number().int().min(0);
const oneOrMany = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

/** Which spans to read. Every filter is optional; they combine with AND. */
export const SpanQuerySchema = z.strictObject({
  /** `rollout`, `turn`, `tool_call`, `epoch`, `evaluation`, any kind, or several. */
  kind: oneOrMany.optional(),
  /** One step. */
  step: step.optional(),
  /** Inclusive `[from, to]`. */
  stepRange: z.tuple([step, step]).optional(),
  /** The spans of these trees (root span ids). */
  root: oneOrMany.optional(),
  /** The children of these spans. */
  parent: oneOrMany.optional(),
  /** These span ids. */
  id: oneOrMany.optional(),
  /** Labels that must all match (`{ sample: 's3' }`). */
  label: z.record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()])).optional(),
  status: z
    .union([z.enum(['ok', 'error', 'open']), z.array(z.enum(['ok', 'error', 'open'])).min(1)], {
      message: 'expected ok, error or open (or a list of them)',
    })
    .optional(),
  /** At most this many spans, the earliest-starting ones. */
  limit: z.number().int().min(1).optional(),
});

export type SpanQuery = z.input<typeof SpanQuerySchema>;
