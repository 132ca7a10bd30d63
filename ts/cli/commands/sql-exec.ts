/** `probe sql`, loaded only when it runs: sql.ts declares its options and help. */
import type { Writable } from 'node:stream';

import type { BaseContext } from 'clipanion';

import type { DuckDBLoader } from '../../sql/duckdb-loader.js';
import { csvLines, jsonLines, tableLines } from '../../sql/result-formats.js';
import { querySql } from '../../sql/run-sql.js';
import { terminalLine } from '../terminal-text.js';

export interface SqlArgs {
  runs: string[];
  sql: string;
  json: boolean;
  csv: boolean;
  context: BaseContext;
  /** stdout as given, before ProbeCommand escapes it: piped CSV is written byte for byte. */
  rawStdout: Writable;
  loadDuckDB: DuckDBLoader;
  /** Columns a table cell may take before it is cut. */
  maxCellWidth: number;
}

export async function execSql(command: SqlArgs): Promise<number> {
  const result = await querySql(command.runs, command.sql, { loadDuckDB: command.loadDuckDB });
  for (const w of result.warnings) command.context.stderr.write(`probe: warning: ${terminalLine(w)}\n`);
  const out = command.context.stdout;
  if (command.csv) {
    // at a terminal a control character is an instruction to it: escaped, as all output;
    // into a pipe or a file CSV is data, and a CSV reader gets the recorded values
    const csvOut = (out as { isTTY?: boolean }).isTTY === true ? out : command.rawStdout;
    for (const line of csvLines(result)) csvOut.write(line);
    return 0;
  }
  if (command.json) {
    // JSON escapes control characters itself (the C1 ones by the escaping stream)
    for (const line of jsonLines(result)) out.write(line);
    return 0;
  }
  const table = tableLines(result, { maxCellWidth: command.maxCellWidth });
  out.write(`${table.lines.join('\n')}\n`);
  if (table.cut) out.write(`(cells longer than ${command.maxCellWidth} characters are cut: --json or --csv prints them whole)\n`);
  return 0;
}
