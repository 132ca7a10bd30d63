/**
 * DuckDB's result values as plain JavaScript: numbers, strings, booleans, null, arrays and
 * objects. An integer beyond 2^53 stays a bigint and a wide decimal its exact text, so no
 * value is silently rounded; dates, times, intervals, UUIDs and blobs are DuckDB's text.
 */
import type { DuckDBValue } from '@duckdb/node-api';

import type { DuckDBModule } from './duckdb-loader.js';

export type SqlValue = null | boolean | number | bigint | string | SqlValue[] | { [key: string]: SqlValue };

/** Decimals with at most this many digits read back exactly from a double's shortest text. */
const EXACT_DECIMAL_DIGITS = 15n;

function decimal(value: bigint, text: string): number | string {
  const magnitude = value < 0n ? -value : value;
  return magnitude < 10n ** EXACT_DECIMAL_DIGITS ? Number(text) : text;
}

/** Converts one value; `duck` is the loaded module (its value classes). */
export function plainValue(v: DuckDBValue, duck: DuckDBModule): SqlValue {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (v instanceof duck.DuckDBListValue || v instanceof duck.DuckDBArrayValue) return v.items.map((i) => plainValue(i, duck));
  // fromEntries defines own properties: a field named `__proto__` stays a field
  if (v instanceof duck.DuckDBStructValue) return Object.fromEntries(Object.entries(v.entries).map(([k, x]) => [k, plainValue(x, duck)]));
  if (v instanceof duck.DuckDBMapValue) return Object.fromEntries(v.entries.map(({ key, value }) => [String(plainValue(key, duck)), plainValue(value, duck)]));
  if (v instanceof duck.DuckDBDecimalValue) return decimal(v.value, v.toString());
  if (v instanceof duck.DuckDBUnionValue || v instanceof duck.DuckDBVariantValue) return plainValue(v.value, duck);
  return v.toString();
}
