/**
 * A query's result as text: JSON (an array of row objects), CSV (RFC 4180 quoting) or an
 * aligned table for people. Each is produced a line at a time.
 */
import { terminalLine } from '../text/control-chars.js';
import { cutToWidth, displayWidth } from './display-width.js';
import type { SqlColumn, SqlResult } from './run-sql.js';
import type { SqlValue } from './sql-values.js';

/** JSON has no NaN, ±Infinity or bigints: they are written as strings ("NaN", "9007199254740993"). */
function jsonSafe(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return String(v);
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
}

/** A JSON column's text as the value it holds (kept as text if it is not JSON). */
function jsonColumnValue(v: SqlValue): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** `[`, one row object a line (keys: the columns' unique names), `]`. */
export function* jsonLines(result: SqlResult): Generator<string> {
  const { columns, rows } = result;
  if (rows.length === 0) {
    yield '[]\n';
    return;
  }
  yield '[\n';
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    const object = Object.fromEntries(columns.map((c, i) => [c.key, c.type === 'JSON' ? jsonColumnValue(row[i]) : row[i]]));
    yield `  ${JSON.stringify(object, jsonSafe)}${r < rows.length - 1 ? ',' : ''}\n`;
  }
  yield ']\n';
}

/** A value as text: numbers as JavaScript writes them (NaN, Infinity), lists and structs as JSON. */
function valueText(v: Exclude<SqlValue, null>): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v, jsonSafe);
}

/** RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled. */
function csvField(v: SqlValue): string {
  if (v === null) return '';
  const text = valueText(v);
  // an empty string is "" so that it reads back apart from a null (an empty field)
  return text === '' || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A header line of the column names, then one line per row (lines end in `\n`). */
export function* csvLines(result: SqlResult): Generator<string> {
  yield `${result.columns.map((c) => csvField(c.name)).join(',')}\n`;
  for (const row of result.rows) yield `${row.map(csvField).join(',')}\n`;
}

export interface TableOptions {
  /** Columns a cell may take before it is cut with `…`. */
  maxCellWidth: number;
}

/** DuckDB's number types: their columns are right-aligned. */
const NUMERIC_TYPE = /^(?:U?(?:TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\))$/;

/**
 * The result as an aligned table: a header, a rule, one line per row (number columns
 * right-aligned, NULL for a null), then the row count. Every cell is one line, its
 * control characters escaped; `cut` says whether a cell was cut to `maxCellWidth`.
 */
export function tableLines(result: SqlResult, options: TableOptions): { lines: string[]; cut: boolean } {
  let cut = false;
  const cellText = (text: string): string => {
    const c = cutToWidth(terminalLine(text), options.maxCellWidth);
    cut ||= c.cut;
    return c.text;
  };
  const right = result.columns.map((c: SqlColumn) => NUMERIC_TYPE.test(c.type));
  const header = result.columns.map((c) => cellText(c.name));
  const body = result.rows.map((row) => row.map((v) => cellText(v === null ? 'NULL' : valueText(v))));
  const widths = header.map(displayWidth);
  for (const row of body) row.forEach((text, i) => (widths[i] = Math.max(widths[i], displayWidth(text))));
  const last = widths.length - 1;
  const line = (cells: readonly string[]) =>
    cells
      .map((text, i) => {
        const pad = ' '.repeat(widths[i] - displayWidth(text));
        return right[i] ? pad + text : i === last ? text : text + pad;
      })
      .join('  ');
  const n = result.rows.length;
  const lines = [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line), `(${n} row${n === 1 ? '' : 's'})`];
  return { lines, cut };
}
