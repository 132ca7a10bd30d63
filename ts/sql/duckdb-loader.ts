/**
 * DuckDB is an optional dependency (a peer dependency marked optional): it is loaded only
 * when SQL is asked for, and its absence is one clear message saying how to install it.
 */
import { RlprobeError } from '../errors.js';

export type DuckDBModule = typeof import('@duckdb/node-api');

/** How DuckDB is loaded; tests inject one that fails, as a machine without it would. */
export type DuckDBLoader = () => Promise<DuckDBModule>;

export const DUCKDB_PACKAGE = '@duckdb/node-api';

export const importDuckDB: DuckDBLoader = () => import('@duckdb/node-api');

/** Loads DuckDB, or throws RLPROBE_NATIVE_MISSING saying how to install it. */
export async function loadDuckDB(loader: DuckDBLoader = importDuckDB): Promise<DuckDBModule> {
  try {
    return await loader();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown } | null)?.code;
    const missing = (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message.includes(DUCKDB_PACKAGE);
    throw new RlprobeError(
      'RLPROBE_NATIVE_MISSING',
      missing
        ? `SQL queries need DuckDB, an optional dependency that is not installed: npm install ${DUCKDB_PACKAGE}`
        : `SQL queries need DuckDB (${DUCKDB_PACKAGE}), which is installed but does not load (${message.split('\n')[0]}): reinstall it with npm install ${DUCKDB_PACKAGE}`,
      { cause: error },
    );
  }
}
