/**
 * `probe serve` options, validated before anything starts (the CLI checks its flags first;
 * a library caller gets the same checks): a bad option throws RLPROBE_INVALID_OPTION
 * naming the option and the value.
 */
import { z } from 'zod';

import { RlprobeError } from '../errors.js';

export const ServeOptionsSchema = z.strictObject({
  /** Folders searched for runs (nested, as TensorBoard's --logdir). */
  roots: z.array(z.string().min(1)).min(1),
  /** The interface to listen on: loopback unless the caller says otherwise. */
  host: z.string().min(1).default('127.0.0.1'),
  /** 0 picks a free port. */
  port: z.number().int().min(0).max(65535).default(6007),
  /** How often live runs are looked at for new parts and events. */
  pollMs: z.number().int().min(50).max(60_000).default(500),
  /** How often the folders are searched again for new runs. */
  rescanMs: z.number().int().min(100).max(3_600_000).default(5000),
  /** Buckets per chart: each keeps a min and a max, so a series is at most 4 × this points. */
  buckets: z.number().int().min(10).max(100_000).default(1000),
  /** Runs whose chart state is kept at once (the least recently used is dropped). */
  maxChartRuns: z.number().int().min(1).max(10_000).default(32),
  /** Let the server's own diagnoses run (off: only findings from a recorder's live doctor). */
  diagnose: z.boolean().default(true),
});

export type ServeOptionsInput = z.input<typeof ServeOptionsSchema>;
export type ServeOptions = z.output<typeof ServeOptionsSchema>;

export function parseServeOptions(options: ServeOptionsInput): ServeOptions {
  const parsed = ServeOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  let value: unknown = options;
  for (const k of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey];
  const name = issue.path.map(String).join('.') || 'options';
  throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid serve option ${name}: ${issue.message} (got ${JSON.stringify(value) ?? String(value)})`);
}

/** Whether `host` only reaches this machine (anything else exposes the runs). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
