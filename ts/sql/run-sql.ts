/**
 * SQL over recordings, in an in-memory DuckDB (nothing is written to the runs): the views
 * `steps` (rank 0's), `samples` and `spans` (every rank) over the files the library's
 * readers would read, and the table `events` from the events reader. With several runs,
 * each view has a `run` column first.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { DuckDBConnection, DuckDBResultReader } from '@duckdb/node-api';

import { RlprobeError } from '../errors.js';
import type { Migration } from '../reader/migrations.js';
import { RunReader } from '../reader/run-reader.js';
import { loadDuckDB } from './duckdb-loader.js';
import type { DuckDBLoader, DuckDBModule } from './duckdb-loader.js';
import { appendEvents, eventsTableSql } from './events-table.js';
import { changedFiles, goneFiles, snapshotFiles, unlistedFiles } from './file-snapshot.js';
import { FIXED_COLUMNS } from './fixed-columns.js';
import { runNames } from './run-names.js';
import { sqlIdentifier, unopenablePathReason } from './sql-literals.js';
import { plainValue } from './sql-values.js';
import type { SqlValue } from './sql-values.js';
import { listedFiles, runSources, SQL_TABLES } from './table-sources.js';
import type { RunSources, SourceGroup, SqlTable } from './table-sources.js';
import { groupSql, readParquetSql, viewSql } from './view-sql.js';
import type { ViewPart } from './view-sql.js';

export type { SqlValue } from './sql-values.js';

export interface SqlOptions {
  /** How DuckDB is loaded (default: `import('@duckdb/node-api')`). */
  loadDuckDB?: DuckDBLoader;
  /** The migration chain the runs are opened with (see `RunReader.open`). */
  migrations?: readonly Migration[];
  /**
   * Called after each listing of the runs' files (`attempt` from 1), before their identities
   * are taken: tests land a compaction there, where a real one can land.
   */
  onListed?: (attempt: number) => void;
}

export interface SqlColumn {
  /** The column's name as the query gave it. */
  name: string;
  /** A name unique among the result's columns (DuckDB's: a repeated `x` becomes `x:1`). */
  key: string;
  /** DuckDB's type (`BIGINT`, `DOUBLE[]`, `JSON`, …). */
  type: string;
}

export interface SqlResult {
  columns: SqlColumn[];
  rows: SqlValue[][];
  /** What the read skipped, one line each (foreign files, unreadable event lines). */
  warnings: string[];
}

interface QueriedRun {
  reader: RunReader;
  /** The directory as given, for messages. */
  label: string;
  /** The `run` column's value, or null when one run is queried. */
  name: string | null;
}

/**
 * The tables that cannot be read, by name: they get no view, so a query naming one fails
 * to bind, and that failure is reported as this error.
 */
type Unreadable = Map<string, RlprobeError>;

/** Listings before the query is given up as racing a compaction (as the native readers). */
const MAX_ATTEMPTS = 8;

const EVENTS = 'events';

/**
 * Runs `sql` over the runs in `runDirs` and returns its last statement's result, held in
 * memory (`COPY (…) TO 'file'` in the SQL writes a large result without holding it).
 * Throws RlprobeError: RLPROBE_NATIVE_MISSING (DuckDB is not installed), the errors of
 * `RunReader.open`, RLPROBE_INVALID_QUERY (DuckDB refused the SQL; its message on one line),
 * RLPROBE_IO, and the error of a table that cannot be read when the query names it.
 */
export async function querySql(runDirs: readonly string[], sql: string, options: SqlOptions = {}): Promise<SqlResult> {
  if (runDirs.length === 0) throw new RlprobeError('RLPROBE_INVALID_QUERY', 'invalid SQL query: no run given');
  if (sql.trim() === '') throw new RlprobeError('RLPROBE_INVALID_QUERY', 'invalid SQL query: the SQL is empty');
  const duck = await loadDuckDB(options.loadDuckDB);
  const names = runDirs.length > 1 ? runNames(runDirs) : [null];
  const runs: QueriedRun[] = runDirs.map((dir, i) => ({ reader: RunReader.open(dir, { migrations: options.migrations }), label: dir, name: names[i] }));
  const listAll = () => runs.map((r) => runSources(r.reader.runDir));
  for (let attempt = 1; ; attempt++) {
    const sources = listAll();
    options.onListed?.(attempt);
    const listed = sources.flatMap(listedFiles);
    const snapshot = snapshotFiles(listed);
    // a file gone before its identity was taken: the listing is already stale
    let changed = goneFiles(snapshot);
    if (changed.length === 0) {
      let result: SqlResult | null = null;
      let failure: unknown = null;
      try {
        result = await queryOnce(duck, runs, sources, sql);
      } catch (error) {
        failure = error;
      }
      changed = changedFiles(snapshot);
      // a file replaced before the snapshot leaves no trace in it, but the compaction that
      // replaced it drops the parts it absorbed from the next listing
      if (changed.length === 0) changed = unlistedFiles(listed, listAll().flatMap(listedFiles));
      if (changed.length === 0) {
        if (result === null) throw failure;
        if (attempt > 1) result.warnings.push(`the run's files changed under the query (a compaction): they were listed ${attempt} times, the result is from the last listing, whose files did not change`);
        return result;
      }
    }
    if (attempt === MAX_ATTEMPTS) {
      throw new RlprobeError('RLPROBE_IO', `the run's files kept changing while the query read them (${attempt} attempts; last changed: ${changed[0]}): run it again`);
    }
  }
}

async function queryOnce(duck: DuckDBModule, runs: readonly QueriedRun[], sources: readonly RunSources[], sql: string): Promise<SqlResult> {
  // DuckDB spills to `.tmp` in the working directory by default: never inside a run
  const spill = path.join(os.tmpdir(), `rlprobe-sql-${process.pid}-${randomBytes(6).toString('hex')}`);
  const instance = await duck.DuckDBInstance.create(':memory:', { temp_directory: spill });
  try {
    const con = await instance.connect();
    try {
      const unreadable: Unreadable = new Map();
      const warnings: string[] = [];
      runs.forEach((r, i) => {
        for (const f of sources[i].foreign) warnings.push(`${r.label}: skipped ${f.path} (${f.reason})`);
      });
      for (const table of SQL_TABLES) await createView(con, table, runs, sources, unreadable);
      await createEvents(con, runs, unreadable, warnings);
      let reader: DuckDBResultReader;
      try {
        reader = await con.streamAndReadAll(sql);
      } catch (error) {
        throw sqlError(error, unreadable, sql);
      }
      return { ...resultOf(reader, duck), warnings };
    } finally {
      con.closeSync();
    }
  } finally {
    instance.closeSync();
    rmSync(spill, { recursive: true, force: true });
  }
}

function resultOf(reader: DuckDBResultReader, duck: DuckDBModule): Omit<SqlResult, 'warnings'> {
  const names = reader.columnNames();
  const keys = reader.deduplicatedColumnNames();
  const columns = names.map((name, i) => ({ name, key: keys[i], type: reader.columnLogicalType(i).alias ?? String(reader.columnType(i)) }));
  const rows = reader.getRows().map((row) => row.map((v) => plainValue(v, duck)));
  return { columns, rows };
}

function renamesOf(table: SqlTable, reader: RunReader): ReadonlyMap<string, string> {
  if (table === 'steps') return reader.adapter.stepRenames;
  if (table === 'samples') return reader.adapter.sampleRenames;
  return new Map();
}

async function columnsOf(con: DuckDBConnection, files: readonly string[]): Promise<string[]> {
  const described = await con.streamAndReadAll(`DESCRIBE SELECT * FROM ${readParquetSql(files)}`);
  return described.getRowObjects().map((r) => String(r.column_name));
}

/** DuckDB's failure to read a group's files, with the reason when it is the path itself. */
function groupError(table: SqlTable, group: SourceGroup, error: unknown): RlprobeError {
  const reason = group.files.map(unopenablePathReason).find((r) => r !== null);
  return new RlprobeError('RLPROBE_IO', `the ${table} of ${group.dir} cannot be read: ${oneLine(errorText(error))}${reason ? ` (${reason})` : ''}`, { cause: error });
}

/** Creates the view `table`, or records why it cannot be read (then there is no view). */
async function createView(con: DuckDBConnection, table: SqlTable, runs: readonly QueriedRun[], sources: readonly RunSources[], unreadable: Unreadable): Promise<void> {
  const parts: ViewPart[] = [];
  for (let i = 0; i < runs.length; i++) {
    const { reader, name } = runs[i];
    const table_ = sources[i].tables[table];
    if (table_.unreadable !== null) {
      unreadable.set(table, table_.unreadable);
      return;
    }
    for (const group of table_.groups) {
      let columns: string[];
      try {
        columns = await columnsOf(con, group.files);
      } catch (error) {
        unreadable.set(table, groupError(table, group, error));
        return;
      }
      parts.push({ run: name, sql: groupSql(table, group, columns, renamesOf(table, reader)) });
    }
  }
  await con.run(`CREATE VIEW ${sqlIdentifier(table)} AS ${viewSql(parts, FIXED_COLUMNS[table], runs.length > 1)}`);
}

async function createEvents(con: DuckDBConnection, runs: readonly QueriedRun[], unreadable: Unreadable, warnings: string[]): Promise<void> {
  await con.run(eventsTableSql(EVENTS, runs.length > 1));
  for (const { reader, label, name } of runs) {
    let skipped: number;
    try {
      skipped = await appendEvents(con, EVENTS, reader, name);
    } catch (error) {
      if (!(error instanceof RlprobeError)) throw error;
      // fails as the other tables do: when a query names it, not before
      unreadable.set(EVENTS, error);
      await con.run(`DROP TABLE ${sqlIdentifier(EVENTS)}`);
      return;
    }
    if (skipped > 0) warnings.push(`${label}: skipped ${skipped} unreadable line${skipped === 1 ? '' : 's'} of events.jsonl (a line torn by a crash, or not an event)`);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * DuckDB's message on one line: without the Node binding's "Failed to …:" prefix, the
 * caret line dropped and the rest (`LINE 1: …`, `Did you mean …`) joined with spaces.
 */
export function oneLine(message: string): string {
  return message
    .replace(/^(?:Fail(?:ed|ure)[^:\n]*: )+(?=[A-Z][A-Za-z ]* Error: )/, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^\^+$/.test(l))
    .join(' ');
}

/**
 * `reward_component.correctness` unquoted reads as column `correctness` of a table
 * `reward_component`: DuckDB says that table does not exist, so the quoted form is added.
 */
function dottedNameHint(message: string, sql: string): string {
  if (!/^Binder Error: .*"(?:reward_component|extra)"/.test(message)) return '';
  const dotted = /(?<!["\w.])(reward_component|extra)\.(\w+)/.exec(sql);
  const example = dotted ? `"${dotted[1]}.${dotted[2]}"` : '"reward_component.correctness"';
  return ` (a dotted column name needs double quotes: ${example})`;
}

/** DuckDB's words when a query names a table that has no view (identifiers fold case). */
const NO_SUCH_TABLE = /Catalog Error: Table with name (.+?) does not exist!/;

function sqlError(error: unknown, unreadable: Unreadable, sql: string): RlprobeError {
  const text = errorText(error);
  const missing = NO_SUCH_TABLE.exec(text)?.[1].toLowerCase();
  const failure = missing === undefined ? undefined : unreadable.get(missing);
  if (failure !== undefined) return failure;
  const line = oneLine(text);
  return new RlprobeError(line.startsWith('IO Error:') ? 'RLPROBE_IO' : 'RLPROBE_INVALID_QUERY', `${line}${dottedNameHint(line, sql)}`, { cause: error });
}
