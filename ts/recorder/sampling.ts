import { z } from 'zod';

/** How many samples each `logSamples` call keeps (docs/format.md#samples; defaults 2 + 2 + 4). */
export const SamplingSchema = z.strictObject({
  /** Highest `reward_total` (where reward hacking shows). */
  topK: z.number().int().min(0).max(65_535).default(2),
  /** Lowest `reward_total` (where reward bugs show). */
  bottomK: z.number().int().min(0).max(65_535).default(2),
  /** A seeded uniform draw from the rest, so the typical sample stays visible. */
  randomK: z.number().int().min(0).max(65_535).default(4),
});

export type SamplingOptions = z.input<typeof SamplingSchema>;
export type Sampling = z.output<typeof SamplingSchema>;

export const DEFAULT_SAMPLING: Sampling = { topK: 2, bottomK: 2, randomK: 4 };

export interface LogSamplesOptions {
  /** The training step of the batch (a sample's own `step` wins). */
  step?: number;
  /** false: keep every sample (tagged `all`). Default true: stratified selection. */
  select?: boolean;
  /** Overrides the recorder's sampling for this call (missing keys keep the recorder's). */
  sampling?: Partial<Sampling>;
}

const count = z.number().int().min(0).max(65_535);

// no defaults here: a key the call leaves out keeps the recorder's value
export const CallOptionsSchema = z.strictObject({
  step: z.number().int().min(0).optional(),
  select: z.boolean().optional(),
  sampling: z.strictObject({ topK: count.optional(), bottomK: count.optional(), randomK: count.optional() }).optional(),
});

/**
 * Validates one call's options without throwing: the resolved sampling, or the reason
 * the call is refused (it becomes a `bad_record` event).
 */
export function resolveCallOptions(
  options: unknown,
  recorder: Sampling,
): { ok: true; step: number | undefined; select: boolean; sampling: Sampling } | { ok: false; field: string; reason: string; value: unknown } {
  if (options === undefined) return { ok: true, step: undefined, select: true, sampling: recorder };
  const plain = plainCallOptions(options);
  if (plain !== null) return { ok: true, step: plain.step, select: plain.select ?? true, sampling: recorder };
  const parsed = CallOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const pathKeys = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path;
    let value: unknown = options;
    for (const k of pathKeys) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[k] : undefined;
    return { ok: false, field: ['options', ...pathKeys.map(String)].join('.'), reason: issue.message, value };
  }
  const o = parsed.data;
  const sampling = o.sampling ? { ...recorder, ...stripUndefined(o.sampling) } : recorder;
  return { ok: true, step: o.step, select: o.select ?? true, sampling };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The options of almost every call (`{ step }`, maybe `select`), checked by hand: zod's
 * parse, cold between training steps, cost more than the rest of the call. Null sends the
 * options to the schema, which stays the judge of everything else and words every refusal.
 * It accepts only what the schema accepts, with the same result (test/sampling-options.test.ts).
 */
export function plainCallOptions(options: unknown): { step: number | undefined; select: boolean | undefined } | null {
  if (options === null || typeof options !== 'object' || Object.getPrototypeOf(options) !== Object.prototype) return null;
  // the schema's own rules: unknown keys by `for…in`, declared keys read by name
  for (const key in options) if (key !== 'step' && key !== 'select') return null;
  const { step, select } = options as { step?: unknown; select?: unknown };
  if (step !== undefined && !(typeof step === 'number' && Number.isSafeInteger(step) && step >= 0)) return null;
  if (select !== undefined && typeof select !== 'boolean') return null;
  return { step, select };
}
