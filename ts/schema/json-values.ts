/**
 * The building blocks of the hand-written checks in front of the zod schemas
 * (manifest-check.ts, event-check.ts). Each accepts a subset of what its zod counterpart
 * accepts, and yields what zod would yield for it; anything else is left to zod.
 */

/** An object as JSON.parse makes them (a plain prototype, no symbol keys): zod's `isPlainObject` holds. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  // an own `constructor` function is what zod's isPlainObject looks at; JSON never has one
  const ctor = (value as { constructor?: unknown }).constructor;
  if (typeof ctor === 'function' && ctor !== Object) return false;
  // a symbol key fails z.record(z.string(), …)'s key check
  return Object.getOwnPropertySymbols(value).length === 0;
}

/** `z.number().int()`: a finite number, integral and within ±(2^53 − 1). */
export function isSafeInt(value: unknown): value is number {
  return Number.isSafeInteger(value);
}

/**
 * `z.record(z.string(), z.unknown()).default({})`: undefined becomes a fresh `{}`, a JSON
 * object a copy of its own keys (zod leaves out `__proto__`, so a copy cannot change its
 * prototype), anything else undefined (not vouched for).
 */
export function recordOrDefault(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return {};
  if (!isJsonObject(value)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key !== '__proto__') out[key] = value[key];
  }
  return out;
}

/**
 * What `z.looseObject` adds after its own keys: every other key `for…in` visits (as zod
 * does), `__proto__` left out, in the order met.
 */
export function copyUnknownKeys(from: Record<string, unknown>, to: Record<string, unknown>, known: ReadonlySet<string>): void {
  for (const key in from) {
    if (!known.has(key) && key !== '__proto__') to[key] = from[key];
  }
}
