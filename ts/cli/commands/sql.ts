import type { Writable } from 'node:stream';

import { Command, Option, UsageError } from 'clipanion';

import { importDuckDB } from '../../sql/duckdb-loader.js';
import type { DuckDBLoader } from '../../sql/duckdb-loader.js';
import { ProbeCommand } from '../base-command.js';

/** Columns a table cell may take before it is cut (`--json` and `--csv` print every value whole). */
const MAX_CELL_WIDTH = 80;

export class SqlCommand extends ProbeCommand {
  static paths = [['sql']];
  static usage = Command.Usage({
    description: 'Query one or more runs with SQL (DuckDB), whatever their state: live, crashed or closed',
    details:
      'Views: `steps` (the run\'s step table, read from rank 0 as every reader does; a rank\'s own steps: give its ' +
      '`rank-NNN` directory as the run), `samples` and `spans` (every rank), ' +
      'and `events` (every rank; `data` is JSON, e.g. `data->>\'path\'`). Each row is there once whatever the layout ' +
      '(compacted, part files, or both after a resume or a crash), spans at their last write, and a column logged from ' +
      'some step on is there, NULL before it. Every view has a `rank` column; with several runs each has a `run` column ' +
      'first (the directory name, with its parents when two runs share one). ' +
      'Dotted column names need double quotes: `"reward_component.correctness"`, `"extra.eval_acc"`. ' +
      'The runs are only read (DuckDB runs in memory). DuckDB is an optional dependency: `npm install @duckdb/node-api`. ' +
      `The table cuts a cell at ${MAX_CELL_WIDTH} characters; \`--json\` (an array of row objects; NaN, Infinity and integers past 2^53 as strings) ` +
      'and `--csv` (RFC 4180 quoting, a NULL as an empty field; control characters escaped at a terminal, written as ' +
      'they are into a pipe or a file) print every value whole. A result is held in memory: ' +
      "to export a large one, `COPY (SELECT …) TO 'out.parquet'` in the SQL.",
    examples: [
      ['The last 5 steps of a run', '$0 sql runs/exp1 "SELECT step, reward_mean, kl_mean FROM steps ORDER BY step DESC LIMIT 5"'],
      ['A reward component (dotted names in double quotes)', '$0 sql runs/exp1 \'SELECT step, "reward_component.correctness" FROM steps ORDER BY step\''],
      ['Mean reward per run, as CSV', '$0 sql runs/a runs/b "SELECT run, avg(reward_mean) AS reward FROM steps GROUP BY run" --csv'],
      ['Truncated samples per rank', '$0 sql runs/exp1 "SELECT rank, count(*) FROM samples WHERE truncated GROUP BY rank"'],
      ['The slowest tool calls, as JSON', '$0 sql runs/exp1 "SELECT name, duration_s FROM spans WHERE kind = \'tool_call\' ORDER BY duration_s DESC LIMIT 10" --json'],
      ['Crashes and signals', '$0 sql runs/exp1 "SELECT timestamp, kind, message FROM events WHERE kind IN (\'crash\', \'signal\')"'],
    ],
  });

  /** How DuckDB is loaded: replaced in tests to play a machine without it. */
  static loadDuckDB: DuckDBLoader = importDuckDB;

  /** stdout as given, before ProbeCommand escapes it: piped CSV is written byte for byte. */
  private rawStdout: Writable | null = null;

  runs = Option.Rest({ name: 'run', required: 1 });
  sql = Option.String({ name: 'sql' });
  json = Option.Boolean('--json', false, { description: 'Print a JSON array of row objects instead of a table' });
  csv = Option.Boolean('--csv', false, { description: 'Print CSV (a header line, then one line per row) instead of a table' });

  override async execute(): Promise<number> {
    this.rawStdout = this.context.stdout;
    return super.execute();
  }

  async exec(): Promise<number> {
    if (this.json && this.csv) throw new UsageError('--json and --csv cannot be given together: choose one output');
    if (this.sql.trim() === '') throw new UsageError('the SQL is empty: give a query, e.g. "SELECT * FROM steps LIMIT 5"');
    const { execSql } = await import('./sql-exec.js');
    return execSql({
      runs: this.runs,
      sql: this.sql,
      json: this.json,
      csv: this.csv,
      context: this.context,
      rawStdout: this.rawStdout ?? this.context.stdout,
      loadDuckDB: SqlCommand.loadDuckDB,
      maxCellWidth: MAX_CELL_WIDTH,
    });
  }
}
