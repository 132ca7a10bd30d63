import { z } from 'zod';

/** One line of events.jsonl (docs/format.md#eventsjsonl). `kind` is an open string. */
export const RunEventSchema = z.looseObject({
  timestamp: z.number(),
  kind: z.string(),
  step: z.number().int().nullable().default(null),
  rank: z.number().int().default(0),
  message: z.string().default(''),
  data: z.record(z.string(), z.unknown()).default({}),
});

export type RunEvent = z.infer<typeof RunEventSchema>;

/** Event kinds the recorder itself writes. */
export const RECORDER_EVENT_KINDS = {
  badRecord: 'bad_record',
  drops: 'recorder_drops',
  error: 'recorder_error',
  crash: 'crash',
  signal: 'signal',
  processExit: 'process_exit',
  close: 'recorder_close',
  resume: 'recorder_resume',
  /** A slower path taken because this runtime forbids the fast one (data.fallback says which). */
  fallback: 'recorder_fallback',
} as const;
