/**
 * DuckDB's side of the scale benchmark: one question (SQL on the run's files), in a fresh
 * process of its own that loads neither rlprobe's reader nor its native addon.
 *
 * What is timed is DuckDB's scan into its own columnar memory, the counterpart of reading
 * into Arrow (and of rlprobe's step table of typed arrays): `connection.run(sql)` runs the
 * query to the end and holds a materialised result, DuckDB's data chunks of typed vectors
 * in native memory, whose row and column counts are read without touching a value. Not
 * `runAndReadAll` + `getColumns` (what this benchmark timed before), which turns every value
 * into a JS value; not a streamed result read with `fetchChunk`, which crosses into JS every
 * 2,048 rows and drops them; not `CREATE TABLE … AS`, which also compresses the rows into
 * DuckDB's storage format. @duckdb/node-api 1.5.x has no Arrow export to time instead (the
 * C API's Arrow functions are not bound in @duckdb/node-bindings).
 */
import { DUCKDB_PACKAGE, importDuckDB } from '../sql/duckdb-loader.js';
import type { DuckDBLoader } from '../sql/duckdb-loader.js';
import { timeFreshCalls } from './fresh-process.js';
import type { CallFigures, ResultShape } from './fresh-process.js';

export type DuckDbAnswer =
  | {
      available: true;
      /** DuckDB's library version. */
      version: string;
      /** Importing @duckdb/node-api and opening an in-memory database: before the first call. */
      openMs: number;
      figures: CallFigures;
      shape: ResultShape;
    }
  | {
      available: false;
      /** The line the report prints instead of DuckDB's figures. */
      unavailable: string;
    };

/** The report's line saying why DuckDB cannot be compared against. */
function unavailableBecause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message.includes(DUCKDB_PACKAGE)) {
    return `DuckDB not installed: npm install ${DUCKDB_PACKAGE} to compare`;
  }
  return `DuckDB is installed but does not load (${message.split('\n')[0]}): npm install ${DUCKDB_PACKAGE} again to compare`;
}

/**
 * Times `sql` in this process: the first call, then the median of `warm` more. `loader`
 * is how DuckDB is imported (a machine without it is simulated with a loader that fails).
 */
export async function answerWithDuckDb(sql: string, warm: number, loader: DuckDBLoader = importDuckDB): Promise<DuckDbAnswer> {
  const opening = performance.now();
  let duckdb: Awaited<ReturnType<DuckDBLoader>>;
  try {
    duckdb = await loader();
  } catch (error) {
    return { available: false, unavailable: unavailableBecause(error) };
  }
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const openMs = performance.now() - opening;
  try {
    const { figures, shape } = await timeFreshCalls(
      () => connection.run(sql),
      warm,
      (result) => ({ rows: result.rowCount, columns: result.columnCount }),
    );
    return { available: true, version: duckdb.version(), openMs, figures, shape: shape! };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
