/**
 * The `events` table: every rank's events.jsonl read by the library's events reader (merged
 * by time; a torn or garbage line is skipped and counted, as everywhere else), appended to
 * an in-memory DuckDB table. DuckDB's own JSON reader would stop at a torn last line.
 */
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';

import type { RunEvent } from '../schema/event.js';
import type { RunReader } from '../reader/run-reader.js';
import type { FixedColumns } from './fixed-columns.js';
import { sqlIdentifier } from './sql-literals.js';

/** The six keys of an event line (docs/format.md#eventsjsonl); `data` is JSON text. */
export const EVENT_COLUMNS: FixedColumns = [
  ['timestamp', 'DOUBLE'],
  ['kind', 'VARCHAR'],
  ['step', 'BIGINT'],
  ['rank', 'BIGINT'],
  ['message', 'VARCHAR'],
  ['data', 'JSON'],
];

export function eventsTableSql(name: string, withRun: boolean): string {
  const columns = [...(withRun ? [['run', 'VARCHAR'] as const] : []), ...EVENT_COLUMNS];
  return `CREATE TABLE ${sqlIdentifier(name)} (${columns.map(([n, t]) => `${sqlIdentifier(n)} ${t}`).join(', ')})`;
}

function appendEvent(app: DuckDBAppender, e: RunEvent, run: string | null): void {
  if (run !== null) app.appendVarchar(run);
  app.appendDouble(e.timestamp);
  app.appendVarchar(e.kind);
  if (e.step === null) app.appendNull();
  else app.appendBigInt(BigInt(e.step));
  app.appendBigInt(BigInt(e.rank));
  app.appendVarchar(e.message);
  app.appendVarchar(JSON.stringify(e.data));
  app.endRow();
}

/**
 * Appends the run's events (every rank, in time order, streamed: never all in memory) to
 * table `name`; returns how many lines were skipped as unreadable. Throws RlprobeError
 * when events.jsonl cannot be read (not a regular file).
 */
export async function appendEvents(con: DuckDBConnection, name: string, reader: RunReader, run: string | null): Promise<number> {
  const app = await con.createAppender(name);
  const diagnostics = { skippedLines: 0 };
  try {
    for (const e of reader.streamEvents({}, diagnostics)) appendEvent(app, e, run);
    app.flushSync();
  } finally {
    app.closeSync();
  }
  return diagnostics.skippedLines;
}
