/**
 * The one error type rlprobe throws. Native errors arrive as `[RLPROBE_CODE] message`
 * (see src/lib.rs); anything else from the binding (a caught Rust panic) is
 * `RLPROBE_NATIVE`.
 */
export type RlprobeErrorCode =
  | 'RLPROBE_INVALID_OPTION'
  | 'RLPROBE_INVALID'
  | 'RLPROBE_IO'
  | 'RLPROBE_TIMEOUT'
  | 'RLPROBE_STATE'
  /** Another recorder is writing the run directory (one writer per directory). */
  | 'RLPROBE_LOCKED'
  | 'RLPROBE_NOT_A_RUN'
  | 'RLPROBE_BAD_MANIFEST'
  | 'RLPROBE_SCHEMA_TOO_NEW'
  | 'RLPROBE_SCHEMA_UNSUPPORTED'
  | 'RLPROBE_INVALID_QUERY'
  | 'RLPROBE_IMPORT_FAILED'
  | 'RLPROBE_AUTO_HALT'
  | 'RLPROBE_NOT_A_TRIAL'
  | 'RLPROBE_NOT_FOUND'
  | 'RLPROBE_NATIVE';

export class RlprobeError extends Error {
  readonly code: RlprobeErrorCode;

  constructor(code: RlprobeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RlprobeError';
    this.code = code;
  }
}

const CODED = /^\[(RLPROBE_[A-Z_]+)\] ([\s\S]*)$/;

/** Folds an error thrown by the native binding into an RlprobeError. */
export function foldNativeError(error: unknown): RlprobeError {
  if (error instanceof RlprobeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const m = CODED.exec(message);
  if (m) return new RlprobeError(m[1] as RlprobeErrorCode, m[2], { cause: error });
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
