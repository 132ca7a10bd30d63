import type { z } from 'zod';

import { RlprobeError } from '../errors.js';

/**
 * The first problem zod found in a reader query, as an RlprobeError RLPROBE_INVALID_QUERY
 * naming the filter and the value given: `invalid span filter status: … (got ["nope"])`.
 */
export function invalidQuery(what: string, query: unknown, error: z.ZodError): RlprobeError {
  const issue = error.issues[0];
  const keys = issue.code === 'unrecognized_keys' ? [issue.keys[0]] : issue.path;
  let value: unknown = query;
  for (const k of keys) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[k] : undefined;
  const shown = JSON.stringify(value) ?? String(value);
  const reason = issue.code === 'unrecognized_keys' ? 'unknown filter' : issue.message;
  return new RlprobeError('RLPROBE_INVALID_QUERY', `invalid ${what} ${keys.map(String).join('.') || 'query'}: ${reason} (got ${shown})`);
}
