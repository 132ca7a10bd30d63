/**
 * Loads a module the first time a caller needs it, synchronously: the zod schemas (zod
 * costs tens of milliseconds to load) stay out of `probe info` and the other reads that
 * never meet a malformed manifest, event or query.
 *
 * Synchronous because the reader's API is (`RunReader.open`, `reader.trials()` …), so
 * `await import()` cannot defer them; `require()` of an ES module is synchronous since
 * Node 20.19, this package's minimum, and returns the instance an `import` already loaded.
 * (Under tsx the module is compiled to CommonJS and loads a second, CommonJS zod: the same
 * schemas, the same messages.)
 */
import { createRequire } from 'node:module';

/** `specifier`, resolved from the module at `parentUrl` (its `import.meta.url`). */
export function loadOnDemand<T>(parentUrl: string, specifier: string): T {
  return createRequire(parentUrl)(specifier) as T;
}
