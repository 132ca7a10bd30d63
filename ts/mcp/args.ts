/**
 * The arguments tools take, as zod schemas with descriptions an agent can act on. The SDK
 * checks them before a tool runs and answers a bad one with a tool error ending `at
 * <field>`; the messages here add the value: `expected an integer ≥ 0 (got -3) at since`.
 */
import { z } from 'zod';

function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** The `error` option of a zod schema or check: what was expected, and what came. */
export function expecting(what: string): { error: (issue: { input?: unknown }) => string } {
  return { error: (issue) => `expected ${what} (got ${shown(issue.input)})` };
}

export function runArg(description = 'The run directory (as list_runs gives it: relative to the server\'s working directory, or absolute), inside a root'): z.ZodString {
  const e = expecting('a run directory path');
  return z.string(e).min(1, e).describe(description);
}

export function textArg(description: string): z.ZodString {
  const e = expecting('a non-empty string');
  return z.string(e).min(1, e).describe(description);
}

export function intArg(min: number, max: number, description: string): z.ZodNumber {
  const e = expecting(max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer in ${min}..${max}`);
  return z.number(e).int(e).min(min, e).max(max, e).describe(description);
}

export function stepArg(description: string): z.ZodNumber {
  return intArg(0, Number.MAX_SAFE_INTEGER, description);
}

export function numberArg(description: string): z.ZodNumber {
  return z.number(expecting('a finite number')).describe(description);
}

export function boolArg(description: string): z.ZodBoolean {
  return z.boolean(expecting('true or false')).describe(description);
}

/** One string or a list of them. */
export function stringsArg(description: string) {
  const e = expecting('a non-empty string or a list of them');
  return z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], e).describe(description);
}

export function cursorArg(): z.ZodString {
  return textArg('next_cursor from the previous answer, to read the next page (with the same other arguments)');
}
