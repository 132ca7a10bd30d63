/**
 * The columns the recorder writes in every file of a table (docs/format.md: Steps,
 * Samples, Spans), as DuckDB types: the columns a view has when the run holds no file of
 * that table yet, so a query over an empty table returns no rows instead of failing to
 * bind. test/sql.test.ts checks them against the files a recorder writes.
 */
import type { SqlTable } from './table-sources.js';

export type FixedColumns = ReadonlyArray<readonly [name: string, type: string]>;

/** A step part holds only the columns its rows used, plus these three. */
const STEPS: FixedColumns = [
  ['step', 'BIGINT'],
  ['timestamp', 'DOUBLE'],
  ['rank', 'BIGINT'],
];

const SAMPLES: FixedColumns = [
  ['step', 'BIGINT'],
  ['sample_id', 'VARCHAR'],
  ['rank', 'BIGINT'],
  ['group_id', 'VARCHAR'],
  ['prompt_id', 'VARCHAR'],
  ['prompt_text', 'VARCHAR'],
  ['completion_text', 'VARCHAR'],
  ['completion_token_ids', 'BIGINT[]'],
  ['reward_total', 'DOUBLE'],
  ['advantage', 'DOUBLE'],
  ['logprob_mean', 'DOUBLE'],
  ['kl_contribution', 'DOUBLE'],
  ['completion_len', 'BIGINT'],
  ['truncated', 'BOOLEAN'],
  ['capture_reason', 'VARCHAR'],
  ['span_id', 'VARCHAR'],
  ['labels', 'VARCHAR'],
];

const SPANS: FixedColumns = [
  ['span_id', 'VARCHAR'],
  ['parent_id', 'VARCHAR'],
  ['root_id', 'VARCHAR'],
  ['kind', 'VARCHAR'],
  ['name', 'VARCHAR'],
  ['step', 'BIGINT'],
  ['start_time', 'DOUBLE'],
  ['end_time', 'DOUBLE'],
  ['duration_s', 'DOUBLE'],
  ['status', 'VARCHAR'],
  ['error', 'VARCHAR'],
  ['sample_id', 'VARCHAR'],
  ['group_id', 'VARCHAR'],
  ['labels', 'VARCHAR'],
  ['attributes', 'VARCHAR'],
  ['key', 'VARCHAR'],
  ['rank', 'BIGINT'],
];

export const FIXED_COLUMNS: Readonly<Record<SqlTable, FixedColumns>> = { steps: STEPS, samples: SAMPLES, spans: SPANS };
