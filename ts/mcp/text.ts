/**
 * The text half of an answer. Names and texts from a recording can hold control characters
 * (an escape sequence in a trajectory, a newline in a sample id): they are escaped as the
 * CLI escapes them (ts/text/control-chars.ts), so an agent's terminal or log shows them
 * as `\u001b`, and a one-line field cannot fake a line.
 */
export { terminalLine as line, terminalText as block } from '../text/control-chars.js';

/** A number for reading: integers whole, others to 4 significant digits, NaN and ±Inf by name. */
export function num(x: number | string | null | undefined): string {
  if (x === null || x === undefined) return '—';
  if (typeof x === 'string') return x;
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x)) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(3) : String(Number(x.toPrecision(4)));
}

/** `n thing` / `n things`. */
export function plural(n: number, thing: string, things = `${thing}s`): string {
  return `${n} ${n === 1 ? thing : things}`;
}
