/**
 * The values `probe` options take, as typanion validators: each parses the option's text
 * into what the command uses (a number, a range, a pair) while clipanion reads the command
 * line, so a bad value is a usage error (exit 64) before anything is read or written.
 * Every failure reads `expected <what> (got "<text>")`; the CLI prints it as
 * `invalid --option "<text>": expected <what>` (ts/cli/usage-error.ts).
 */
import * as t from 'typanion';
import type { StrictValidator } from 'typanion';

/** Reads one option text: the value, or undefined when the text is not one. */
type Parse<T> = (text: string) => T | undefined;

function fail(state: t.ValidationState | undefined, expected: string, value: unknown): false {
  state?.errors?.push(`${state.p ?? '.'}: expected ${expected} (got ${JSON.stringify(value)})`);
  return false;
}

/** A validator from a parser: the option's text is replaced by the parsed value. */
export function optionValue<T>(expected: string, parse: Parse<T>): StrictValidator<unknown, T> {
  return t.makeValidator<unknown, T>({
    test: (value, state): value is T => {
      const parsed = typeof value === 'string' ? parse(value) : undefined;
      if (parsed === undefined) return fail(state, expected, value);
      if (state?.coercions && state.coercion) state.coercions.push([state.p ?? '.', state.coercion.bind(null, parsed)]);
      return true;
    },
  });
}

/** The same for a repeatable option: each text parsed; the first bad one is named. */
export function optionValues<T>(expected: string, parse: Parse<T>): StrictValidator<unknown, T[]> {
  return t.makeValidator<unknown, T[]>({
    test: (value, state): value is T[] => {
      if (!Array.isArray(value)) return fail(state, expected, value);
      const parsed: T[] = [];
      for (const text of value as unknown[]) {
        const one = typeof text === 'string' ? parse(text) : undefined;
        if (one === undefined) return fail(state, expected, text);
        parsed.push(one);
      }
      if (state?.coercions && state.coercion) state.coercions.push([state.p ?? '.', state.coercion.bind(null, parsed)]);
      return true;
    },
  });
}

// ---- parsers

const integer = (min: number): Parse<number> => (text) => {
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= min ? n : undefined;
};

const number: Parse<number> = (text) => {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
};

/** `a, b or c` */
export function orList(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

/** `100..200` (also `100-200`, `100:200`), FROM ≤ TO. */
const stepRange: Parse<[number, number]> = (text) => {
  const m = /^\s*(\d+)\s*(?:\.\.|-|:)\s*(\d+)\s*$/.exec(text);
  if (!m) return undefined;
  const [from, to] = [Number(m[1]), Number(m[2])];
  return Number.isSafeInteger(from) && Number.isSafeInteger(to) && from <= to ? [from, to] : undefined;
};

/** `0.9..`, `..0`, `0.2..0.8`: inclusive bounds, either side open, MIN ≤ MAX. */
const rewardRange: Parse<{ rewardMin?: number; rewardMax?: number }> = (text) => {
  const m = /^\s*([-+0-9.eE]*)\s*\.\.\s*([-+0-9.eE]*)\s*$/.exec(text);
  if (!m) return undefined;
  const bound = (s: string) => (s === '' ? null : number(s));
  const [lo, hi] = [bound(m[1]), bound(m[2])];
  if (lo === undefined || hi === undefined || (lo === null && hi === null)) return undefined;
  if (lo !== null && hi !== null && lo > hi) return undefined;
  return { ...(lo === null ? {} : { rewardMin: lo }), ...(hi === null ? {} : { rewardMax: hi }) };
};

/** `100,2000,5000` */
const stepList: Parse<number[]> = (text) => {
  const parts = text.split(',').map((s) => s.trim()).filter(Boolean);
  const steps = parts.map(integer(0));
  return parts.length > 0 && steps.every((s) => s !== undefined) ? (steps as number[]) : undefined;
};

/** `KEY=VALUE`: a non-empty key; the value may hold `=`. */
const keyValue: Parse<[string, string]> = (text) => {
  const at = text.indexOf('=');
  return at > 0 ? [text.slice(0, at), text.slice(at + 1)] : undefined;
};

// ---- the validators the commands use

/** An integer ≥ 0 (a step, a count where 0 often means "all"). */
export const isCount = optionValue('an integer ≥ 0', integer(0));
/** A TCP port: an integer 0..65535 (0: the system picks a free one). */
export const isPort = optionValue('a port number in 0..65535', (text) => {
  const n = integer(0)(text);
  return n !== undefined && n <= 65535 ? n : undefined;
});
/** An integer ≥ 1. */
export const isPositive = optionValue('an integer ≥ 1', integer(1));
export const isStepRange = optionValue('FROM..TO, two steps with FROM ≤ TO, e.g. 100..200', stepRange);
export const isRewardRange = optionValue('MIN..MAX, MIN.. or ..MAX with MIN ≤ MAX, e.g. 0.9..', rewardRange);
export const isStepList = optionValue('step numbers separated by commas, e.g. 100,2000', stepList);
export const areCounts = optionValues('an integer ≥ 0', integer(0));
export const areKeyValues = (example: string) => optionValues(`KEY=VALUE, e.g. ${example}`, keyValue);

/** A number in [min, max]. */
export function isNumberIn(min: number, max: number): StrictValidator<unknown, number> {
  return optionValue(max === Infinity ? `a number ≥ ${min}` : `a number in ${min}..${max}`, (text) => {
    const n = number(text);
    return n !== undefined && n >= min && n <= max ? n : undefined;
  });
}

/** One of `values`. */
export function isOneOf<const V extends string>(values: readonly V[]): StrictValidator<unknown, V> {
  return optionValue(orList(values), (text) => (values as readonly string[]).includes(text) ? (text as V) : undefined);
}

/** Each one of `values` (a repeatable option). */
export function areOneOf<const V extends string>(values: readonly V[]): StrictValidator<unknown, V[]> {
  return optionValues(orList(values), (text) => (values as readonly string[]).includes(text) ? (text as V) : undefined);
}
