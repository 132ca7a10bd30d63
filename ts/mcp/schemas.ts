/** Pieces of the tools' output schemas that several tools share. */
import { z } from 'zod';

import { RUN_STATUSES } from '../reader/run-state.js';

/** A recorded number: NaN and ±Infinity as strings (JSON has no such numbers). */
export const JsonNumberSchema = z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]);

/** A page's continuation: pass it back as `cursor`; null on the last page. */
export const NextCursorSchema = z.string().nullable().describe('Pass back as `cursor` (with the same other arguments) for the next page; null: this is the last page');

export const RunStatusSchema = z.object({
  status: z.enum(RUN_STATUSES).describe('live (being recorded now), closed cleanly, ended without a close (crashed, signalled, exited without close() or killed), or unknown'),
  detail: z.string(),
});

export const FindingCountsSchema = z.object({ critical: z.number().int(), warn: z.number().int(), info: z.number().int() });

/** Anything JSON (config, attributes): numbers JSON-safe, clipped with markers. */
export const JsonValueSchema = z.unknown();
