/**
 * `node --import ./test/helpers/no-duckdb.mjs …`: the process (and, through execArgv, its
 * children) resolves `@duckdb/node-api` as a machine without it would: not found.
 */
import { register } from 'node:module';

const hook = `
export async function resolve(specifier, context, next) {
  if (specifier === '@duckdb/node-api' || specifier.startsWith('@duckdb/node-api/')) {
    const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
