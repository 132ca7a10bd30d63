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
