/**
 * events.jsonl lines checked without loading zod, as manifest-check.ts does for the
 * manifest: a hand-written check vouches for an event RunEventSchema accepts and yields
 * what the schema would; anything else goes to the schema, loaded then.
 */
import type * as EventModule from './event.js';
import type { RunEvent } from './event.js';
import { copyUnknownKeys, isJsonObject, isSafeInt, recordOrDefault } from './json-values.js';
import { loadOnDemand } from './on-demand.js';

/** RunEventSchema's keys, in its order (the test compares them with the schema's shape). */
export const EVENT_KEYS = ['timestamp', 'kind', 'step', 'rank', 'message', 'data'] as const;

const KNOWN: ReadonlySet<string> = new Set(EVENT_KEYS);

/** `value` as RunEventSchema parses it, or null when this check does not vouch for it. */
export function acceptRunEvent(value: unknown): RunEvent | null {
  if (!isJsonObject(value)) return null;
  const e = value;
  const { timestamp, kind } = e;
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || typeof kind !== 'string') return null;
  const step = e.step === undefined ? null : e.step;
  if (step !== null && !isSafeInt(step)) return null;
  const rank = e.rank === undefined ? 0 : e.rank;
  if (!isSafeInt(rank)) return null;
  const message = e.message === undefined ? '' : e.message;
  if (typeof message !== 'string') return null;
  const data = recordOrDefault(e.data);
  if (data === undefined) return null;
  // the schema's key order, then the unknown keys: what zod's looseObject yields
  const out: Record<string, unknown> = { timestamp, kind, step, rank, message, data };
  copyUnknownKeys(e, out, KNOWN);
  return out as RunEvent;
}

/** `value` as RunEventSchema parses it, or null when it is not an event. */
export function parseRunEvent(value: unknown): RunEvent | null {
  const event = acceptRunEvent(value);
  if (event !== null) return event;
  const parsed = loadOnDemand<typeof EventModule>(import.meta.url, './event.js').RunEventSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}
