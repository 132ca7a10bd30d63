/**
 * What a recorder writes when the process ends under it (crash-hooks.ts calls the
 * recorder's `onCrash` / `onSignal` / `onProcessExit`). A crash or a signal: the event is
 * written and fsynced on this thread before returning, then what is queued is published.
 * Every path is bounded and never throws.
 */
import type { NativeRecorder } from '../native.js';
import type { EventLines } from './event-lines.js';

/** Long enough to publish a part, short enough not to hang a dying process. */
const CRASH_FLUSH_MS = 5000;
/** How long the exit hook's close (flush and compaction) may take. */
export const EXIT_CLOSE_MS = 15_000;

/** What the crash paths need of a live recorder. */
export interface CrashRecording {
  readonly writer: NativeRecorder;
  readonly lines: EventLines;
  /** Finishes pending sample selections and writes open spans as `open`. */
  settle(): void;
}

/** An uncaught exception or unhandled rejection (`origin` says which); Node's own handling follows. */
export function recordCrash(r: CrashRecording, error: unknown, origin: string): void {
  try {
    r.settle();
    r.writer.writeEventNow(r.lines.crash(error, origin));
    r.writer.flush(CRASH_FLUSH_MS);
  } catch {
    // never throws from a crash path
  }
}

/** A terminating signal; crash-hooks.ts then gives it its normal effect. */
export function recordSignal(r: CrashRecording, signal: NodeJS.Signals): void {
  try {
    r.settle();
    r.writer.writeEventNow(r.lines.signal(signal));
    r.writer.flush(CRASH_FLUSH_MS);
  } catch {
    // never throws from a signal handler
  }
}
