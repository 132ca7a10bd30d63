import type { z } from 'zod';

import { isJsonObject } from '../schema/json-values.js';
import { invalidQuery } from './query-error.js';

/**
 * A reader query checked by its schema, which `schema()` loads only for a query with
 * filters: `{}` is every reader query's empty query (each filter optional, none defaulted;
 * test/schema-checks.test.ts holds every query schema to that), so the reads that take no
 * filter (`probe info`'s) load no zod. Throws RLPROBE_INVALID_QUERY naming the filter.
 */
export function parseQuery<S extends z.ZodType>(schema: () => S, what: string, query: unknown): z.output<S> {
  if (isEmptyObject(query)) return {} as z.output<S>;
  const parsed = schema().safeParse(query);
  if (!parsed.success) throw invalidQuery(what, query, parsed.error);
  return parsed.data;
}

function isEmptyObject(query: unknown): boolean {
  if (!isJsonObject(query)) return false;
  // for…in, as zod's strict check does: an inherited enumerable key is an unknown filter too
  for (const _ in query) return false;
  return true;
}
