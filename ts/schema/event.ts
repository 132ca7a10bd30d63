import { z } from 'zod';

/**
 * One line of events.jsonl (docs/format.md#eventsjsonl). `kind` is an open string. The reader
 * checks lines with event-check.ts first (no zod) and comes here for what that check does not
 * vouch for: a change here is a change there (test/schema-checks.test.ts fails until it is).
 */
export const RunEventSchema = z.looseObject({
  timestamp: z.number(),
  kind: z.string(),
  step: z.number().int().nullable().default(null),
  rank: z.number().int().default(0),
  message: z.string().default(''),
  data: z.record(z.string(), z.unknown()).default({}),
});

export type RunEvent = z.infer<typeof RunEventSchema>;

// its own module, so the reader and the CLI can name them without loading zod
export { RECORDER_EVENT_KINDS } from './event-kinds.js';
