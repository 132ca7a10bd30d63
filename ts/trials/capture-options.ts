/** Options of capture and staging, checked before anything is read or written. */
import { z } from 'zod';

import { RlprobeError } from '../errors.js';

const Context = z.record(z.string().min(1), z.string());

const Common = {
  /** The training step the trial belongs to. */
  step: z.number().int().nonnegative(),
  sampleId: z.string().min(1).optional(),
  groupId: z.string().min(1).optional(),
  /** Launcher correlation fields (Miles, Osmosis…: rollout id, sample id, session id), kept under `source.context`. */
  context: Context.optional(),
  /** Files larger than this are skipped and listed with their size (default 256 MiB). */
  maxFileBytes: z.number().int().positive().optional(),
  /** Spans written per capture (default DEFAULT_MAX_SPANS); planned spans past it are cut, counted and reported. */
  maxSpans: z.number().int().positive().optional(),
};

/**
 * Spans per capture by default: a long agent run (thousands of turns) fits; a runaway one
 * (100,000 steps) is cut rather than making every read of the run pay for it.
 */
export const DEFAULT_MAX_SPANS = 50_000;

export const CaptureOptionsSchema = z.strictObject({ run: z.string().min(1), ...Common });
export type CaptureOptions = z.input<typeof CaptureOptionsSchema>;

export const StageOptionsSchema = z.strictObject({ to: z.string().min(1), ...Common });
export type StageOptions = z.input<typeof StageOptionsSchema>;

/** Parses options, or throws RLPROBE_INVALID_OPTION naming the field and the value. */
export function parseOptions<T extends z.ZodType>(schema: T, what: string, value: unknown): z.output<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue.path.join('.') || 'options';
  let got: unknown = value;
  for (const k of issue.path) got = got !== null && typeof got === 'object' ? (got as Record<PropertyKey, unknown>)[k as PropertyKey] : undefined;
  throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid ${what} option ${field}: ${issue.message} (got ${JSON.stringify(got) ?? String(got)})`);
}
