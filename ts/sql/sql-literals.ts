/**
 * Text spliced into the SQL the views are built from: string literals, identifiers, and
 * file paths for `read_parquet` (which reads `*`, `?` and `[` in a path as a glob).
 */

/** A SQL string literal. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A quoted identifier: dotted step columns (`reward_component.x`) need the quotes. */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * A path `read_parquet` opens as exactly that file. DuckDB globs a path holding `*`, `?` or
 * `[`: each is put in a bracket class of its own (`[*]`), which matches only itself, so a
 * run directory named `exp[1]` can never read `exp1`'s files.
 */
export function parquetPath(file: string): string {
  return sqlString(file.replace(/[*?[\]]/g, (c) => `[${c}]`));
}

/**
 * Why DuckDB found no file at `file` when the file is there: DuckDB 1.5.6 globs a path
 * holding a backslash together with `*`, `?`, `[` or `]` so that no escaping tried matches it
 * (`[c]` classes, `\c`, the backslash as `[\]`); the path as it is stays a glob, which can
 * read a sibling's file. Null when the path is not such a one.
 */
export function unopenablePathReason(file: string): string | null {
  if (!file.includes('\\') || !/[*?[\]]/.test(file)) return null;
  return 'DuckDB cannot open a path holding a backslash together with *, ?, [ or ], however it is escaped: rename the run directory or move it to a path without them';
}
