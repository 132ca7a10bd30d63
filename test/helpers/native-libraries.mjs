/**
 * `node --import ./test/helpers/native-libraries.mjs …`: at exit, prints on stderr the
 * native libraries of rlprobe and DuckDB the process mapped, one line:
 * `native libraries: <path>, <path>` (or `none`).
 */
import { readFileSync } from 'node:fs';

process.on('exit', () => {
  const mapped = readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .map((line) => line.split(/\s+/).slice(5).join(' '))
    .filter((file) => /\.(node|so)$/.test(file) && /rlprobe|duckdb/.test(file));
  process.stderr.write(`native libraries: ${[...new Set(mapped)].join(', ') || 'none'}\n`);
});
