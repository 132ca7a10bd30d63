/**
 * The SQL of the views `steps`, `samples` and `spans`: each recording directory's files read
 * with `read_parquet(…, union_by_name = true)` (a column that first appears mid-run is
 * there, null in the files without it), its rank filled in where a row has none, the runs
 * and ranks stacked with `UNION ALL BY NAME`.
 */
import type { SourceGroup, SqlTable } from './table-sources.js';
import type { FixedColumns } from './fixed-columns.js';
import { parquetPath, sqlIdentifier, sqlString } from './sql-literals.js';

/** `read_parquet` over a group's files, in the listing's order. */
export function readParquetSql(files: readonly string[]): string {
  return `read_parquet([${files.map(parquetPath).join(', ')}], union_by_name = true)`;
}

/**
 * One directory's rows of `table`. `columns` are the names its files hold (DESCRIBE of
 * `readParquetSql`); `renames` maps an older schema's column names to today's (a migrated
 * run, ts/reader/migrations.ts).
 */
export function groupSql(table: SqlTable, group: SourceGroup, columns: readonly string[], renames: ReadonlyMap<string, string>): string {
  let sql = `SELECT * FROM ${readParquetSql(group.files)}`;
  if (table === 'spans') {
    // each span at its last write: the last file holding it in read order, its last row
    // there (crates/rlprobe-core/src/spans/read.rs `last_writes`; a row without an id is
    // no span). file_index and file_row_number are read_parquet's virtual columns.
    sql += ' WHERE "span_id" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "span_id" ORDER BY file_index DESC, file_row_number DESC) = 1';
  }
  const renamed = [...renames].filter(([physical]) => columns.includes(physical));
  // a renamed column whose new name the files also hold (a fixed column, null in an old
  // run's rows) fills it, as the readers' later column overwrites the earlier one
  const merged = renamed.filter(([, current]) => columns.includes(current));
  if (merged.length > 0) {
    const from = merged.map(([physical]) => sqlIdentifier(physical)).join(', ');
    const into = merged.map(([physical, current]) => `COALESCE(${sqlIdentifier(physical)}, ${sqlIdentifier(current)}) AS ${sqlIdentifier(current)}`).join(', ');
    sql = `SELECT * EXCLUDE (${from}) REPLACE (${into}) FROM (${sql})`;
  }
  const moved = renamed.filter(([, current]) => !columns.includes(current));
  if (moved.length > 0) {
    sql = `SELECT * RENAME (${moved.map(([physical, current]) => `${sqlIdentifier(physical)} AS ${sqlIdentifier(current)}`).join(', ')}) FROM (${sql})`;
  }
  const current = columns.map((c) => renames.get(c) ?? c);
  const rank = `CAST(${group.rank} AS BIGINT)`;
  // the row's own rank (a sample may carry another rank than its directory's), else the directory's
  return current.includes('rank')
    ? `SELECT * REPLACE (COALESCE("rank", ${rank}) AS "rank") FROM (${sql})`
    : `SELECT *, ${rank} AS "rank" FROM (${sql})`;
}

/** One view part: a directory's rows, and the run it belongs to when several are queried. */
export interface ViewPart {
  run: string | null;
  sql: string;
}

/**
 * The view over every part; without parts, empty with the table's fixed columns. A table
 * that cannot be read gets no view at all (run-sql.ts): a query naming it then fails when
 * DuckDB binds it, whatever the optimizer would make of an empty or filtered read.
 */
export function viewSql(parts: readonly ViewPart[], fixed: FixedColumns, withRun: boolean): string {
  const tagged = (p: ViewPart) => (withRun ? `SELECT ${sqlString(p.run ?? '')} AS "run", * FROM (${p.sql})` : p.sql);
  if (parts.length > 0) return parts.map((p) => `(${tagged(p)})`).join('\nUNION ALL BY NAME\n');
  const columns = [...(withRun ? [['run', 'VARCHAR'] as const] : []), ...fixed];
  return `SELECT ${columns.map(([name, type]) => `CAST(NULL AS ${type}) AS ${sqlIdentifier(name)}`).join(', ')} WHERE false`;
}
