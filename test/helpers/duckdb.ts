import { DuckDBInstance } from '@duckdb/node-api';
import type { DuckDBConnection } from '@duckdb/node-api';

/** Runs `fn` with a connection to a fresh in-memory DuckDB, closed afterwards. */
export async function withDuckDB<T>(fn: (con: DuckDBConnection) => Promise<T>): Promise<T> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    return await fn(con);
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

/** A path quoted for a SQL string literal. */
export function sqlPath(p: string): string {
  return p.replaceAll("'", "''");
}
