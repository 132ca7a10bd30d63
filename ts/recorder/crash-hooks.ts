/**
 * Process-level hooks shared by every live recorder in the process: one set of listeners
 * however many recorders, removed when the last one closes.
 *
 * - `exit` is synchronous: each recorder flushes and compacts through a bounded native
 *   wait. (The writer thread is not joined by Node on exit, so nothing async would run.)
 * - `uncaughtExceptionMonitor` sees uncaught exceptions and unhandled rejections without
 *   changing what Node does next.
 * - SIGTERM, SIGINT, SIGHUP: record, flush, then give the signal its normal effect: when
 *   no other listener handles it, remove ours and re-raise it so the process dies by the
 *   signal, exactly as it would have without rlprobe. Never swallowed.
 */

export interface CrashHookTarget {
  onProcessExit(code: number): void;
  onCrash(error: unknown, origin: string): void;
  onSignal(signal: NodeJS.Signals): void;
}

const SIGNALS: NodeJS.Signals[] = process.platform === 'win32' ? ['SIGINT', 'SIGTERM'] : ['SIGTERM', 'SIGINT', 'SIGHUP'];
const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

const targets = new Set<CrashHookTarget>();
let installed = false;

function each(fn: (t: CrashHookTarget) => void): void {
  // copy: a target may unregister itself while we iterate
  for (const t of [...targets]) {
    try {
      fn(t);
    } catch {
      // a failing recorder must not stop the others, nor the process's own exit path
    }
  }
}

function onExit(code: number): void {
  each((t) => t.onProcessExit(code));
}

function onUncaught(error: unknown, origin: string): void {
  each((t) => t.onCrash(error, origin));
}

function onSignal(signal: NodeJS.Signals): void {
  each((t) => t.onSignal(signal));
  if (process.listenerCount(signal) > 1) return; // someone else handles it: their call
  process.removeListener(signal, onSignal);
  try {
    process.kill(process.pid, signal);
  } catch {
    // fall through to the exit below
  }
  // Where re-raising cannot work (Windows emulates signals), exit the conventional way.
  setTimeout(() => process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 0)), 500);
}

function install(): void {
  process.on('exit', onExit);
  process.on('uncaughtExceptionMonitor', onUncaught);
  // First in line: when we run, a user's `once` listener has not been consumed yet, so
  // listenerCount still tells us whether someone else handles the signal.
  for (const s of SIGNALS) process.prependListener(s, onSignal);
  installed = true;
}

function uninstall(): void {
  process.removeListener('exit', onExit);
  process.removeListener('uncaughtExceptionMonitor', onUncaught);
  for (const s of SIGNALS) process.removeListener(s, onSignal);
  installed = false;
}

export function registerCrashHooks(target: CrashHookTarget): void {
  targets.add(target);
  if (!installed) install();
}

export function unregisterCrashHooks(target: CrashHookTarget): void {
  targets.delete(target);
  if (targets.size === 0 && installed) uninstall();
}
