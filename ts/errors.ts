/**
 * The one error type rlprobe throws, and every code it can carry. Native errors arrive with
 * their code set by the addon (`error.code`, see src/error.rs); test/error-codes.test.ts
 * checks this list against the codes the addon reports (`errorCodes()`) and the ones the
 * facade and the loader throw themselves.
 */
export const RLPROBE_ERROR_CODES = [
  // from the native addon (crates/rlprobe-core/src/error.rs, src/error.rs)
  /** The operating system refused a read or write (permissions, a full disk, not a regular file). */
  'RLPROBE_IO',
  /** A file of the run cannot be read as what it should be; the message names it and what to do. */
  'RLPROBE_CORRUPT_FILE',
  /** The files of one table disagree on a column's type. */
  'RLPROBE_SCHEMA_CONFLICT',
  /** Another recorder is writing the run directory (one writer per directory). */
  'RLPROBE_LOCKED',
  /** A value passed to the addon cannot be used (a step-record key, a capture key, an option). */
  'RLPROBE_INVALID',
  /** The writer did not finish in time. */
  'RLPROBE_TIMEOUT',
  /** A call on a recorder that is closed or belongs to another thread. */
  'RLPROBE_STATE',
  /** A Rust panic, caught at the boundary (the process keeps running). */
  'RLPROBE_PANIC',
  /** A failure no input explains (a bug), or an error from the addon without a code of ours. */
  'RLPROBE_NATIVE',
  // from the loader (native/index.js): no native addon loads on this machine
  'RLPROBE_NATIVE_MISSING',
  // from the facade
  /** A Recorder or capture option is invalid; the message names the option and the value. */
  'RLPROBE_INVALID_OPTION',
  /** A read filter is invalid (or names a finding the run does not have). */
  'RLPROBE_INVALID_QUERY',
  /** The directory has no manifest.json: it is not a run (yet). */
  'RLPROBE_NOT_A_RUN',
  /** manifest.json is not a valid manifest; the message names the first bad field. */
  'RLPROBE_BAD_MANIFEST',
  /** The run was written by a newer rlprobe than this one can read. */
  'RLPROBE_SCHEMA_TOO_NEW',
  /** The run's schema version is older and cannot be written to (only read, through migration). */
  'RLPROBE_SCHEMA_UNSUPPORTED',
  /** `probe import` could not turn the source into a run. */
  'RLPROBE_IMPORT_FAILED',
  /** The live doctor halted the run on a critical finding (`haltSignal`'s reason). */
  'RLPROBE_AUTO_HALT',
  /** The directory is not a Harbor trial directory. */
  'RLPROBE_NOT_A_TRIAL',
  /** A captured trial or other named thing is not in the run. */
  'RLPROBE_NOT_FOUND',
] as const;

export type RlprobeErrorCode = (typeof RLPROBE_ERROR_CODES)[number];

const KNOWN: ReadonlySet<string> = new Set(RLPROBE_ERROR_CODES);

export function isRlprobeErrorCode(code: unknown): code is RlprobeErrorCode {
  return typeof code === 'string' && KNOWN.has(code);
}

export class RlprobeError extends Error {
  readonly code: RlprobeErrorCode;

  constructor(code: RlprobeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RlprobeError';
    this.code = code;
  }
}

/** Folds an error thrown by the native binding into an RlprobeError, keeping it as the cause. */
export function foldNativeError(error: unknown): RlprobeError {
  if (error instanceof RlprobeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (isRlprobeErrorCode(code)) return new RlprobeError(code, message, { cause: error });
  return new RlprobeError('RLPROBE_NATIVE', `native error: ${message}`, { cause: error });
}

/** Runs a native call, rethrowing its error as an RlprobeError. */
export function native<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw foldNativeError(error);
  }
}

/** Awaits a native async call, rethrowing its error (sync or async) as an RlprobeError. */
export async function nativeAsync<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw foldNativeError(error);
  }
}
