/**
 * Process-level hooks shared by every live recorder of a thread: one set of listeners
 * however many recorders, removed when the last one closes.
 *
 * - `exit` is synchronous: each recorder flushes and compacts through a bounded native
 *   wait. (The writer thread is not joined by Node on exit, so nothing async would run.)
 * - `uncaughtExceptionMonitor` sees uncaught exceptions and unhandled rejections without
 *   changing what Node does next.
 * - SIGTERM, SIGINT, SIGHUP (main thread only: Node delivers signals nowhere else): record,
 *   flush, then give the signal its normal effect: when no other listener handles it,
 *   remove ours and re-raise it so the process dies by the signal, exactly as it would have
 *   without rlprobe. Never swallowed.
 * - `beforeExit` (main thread): a listener makes Node hold a signal until the event loop
 *   runs, so a signal that arrived during synchronous code is still pending when the loop
 *   finds nothing to do. Without rlprobe it would have killed the process; one more turn
 *   of the loop delivers it.
 * - In a worker thread the hooks are the worker's (its `exit` is the worker's end), and the
 *   main thread's ending reaches it through worker-relay.ts.
 */
import { isMainThread, threadId } from 'node:worker_threads';

import { listenToMainThread, liveWorkers, relayToWorkers, watchWorkers } from './worker-relay.js';
import type { RelayedEnding } from './worker-relay.js';

/** Who ends the recording: this process's main thread, this worker thread, or the main thread of a worker's process. */
export type ExitOrigin = 'process' | 'worker' | 'main-thread';

export interface CrashHookTarget {
  onProcessExit(code: number, origin: ExitOrigin): void;
  onCrash(error: unknown, origin: string): void;
  onSignal(signal: NodeJS.Signals): void;
}

const SIGNALS: NodeJS.Signals[] = !isMainThread ? [] : process.platform === 'win32' ? ['SIGINT', 'SIGTERM'] : ['SIGTERM', 'SIGINT', 'SIGHUP'];
const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** How long the main thread waits for worker recorders: as long as its own exit close. */
const WORKER_EXIT_WAIT_MS = 15_000;
const WORKER_SIGNAL_WAIT_MS = 5000;

const targets = new Set<CrashHookTarget>();
let installed = false;
/** Worker thread: counts this thread out of the main thread's relay. */
let leaveRelay: (() => void) | null = null;
/** Main thread: set once the beforeExit turn that delivers held signals has been taken. */
let signalTurnTaken = false;
/** Main thread: during that turn (a signal delivered now was held through synchronous code). */
let inSignalTurn = false;

function each(fn: (t: CrashHookTarget) => void): void {
  // copy: a target may unregister itself while we iterate
  // oxlint-disable-next-line no-useless-spread -- the copy is the point: a target may unregister mid-loop
  for (const t of [...targets]) {
    try {
      fn(t);
    } catch {
      // a failing recorder must not stop the others, nor the process's own exit path
    }
  }
}

function onExit(code: number): void {
  each((t) => t.onProcessExit(code, isMainThread ? 'process' : 'worker'));
}

function onUncaught(error: unknown, origin: string): void {
  each((t) => t.onCrash(error, origin));
}

function onSignal(signal: NodeJS.Signals): void {
  if (inSignalTurn && process.listenerCount(signal) > 1) {
    // held until the loop had nothing left to do, and someone else listens: without
    // rlprobe the loop would have ended there, the signal never delivered to them; end
    // the same way (process.exitCode, the exit hooks), before their listener runs
    process.exit();
  }
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

/**
 * The loop is empty: a signal held for it (it arrived during synchronous code) has not
 * been delivered yet. One turn of the loop polls for it; one turn only, or an empty loop
 * would turn forever. A held signal that a user's listener also handles is not theirs to
 * see (see onSignal).
 */
function onBeforeExit(): void {
  if (signalTurnTaken) {
    signalTurnTaken = false; // the next beforeExit (after more work) takes a turn again
    return;
  }
  signalTurnTaken = true;
  inSignalTurn = true;
  setImmediate(() => {
    inSignalTurn = false;
  });
}

/** Worker thread: the main thread ended the process; record it as this thread's end. */
function onMainThreadEnding(ending: RelayedEnding): void {
  if (ending.type === 'exit') each((t) => t.onProcessExit(ending.code, 'main-thread'));
  else each((t) => t.onSignal(ending.signal));
}

function install(): void {
  process.on('exit', onExit);
  process.on('uncaughtExceptionMonitor', onUncaught);
  // First in line: when we run, a user's `once` listener has not been consumed yet, so
  // listenerCount still tells us whether someone else handles the signal.
  for (const s of SIGNALS) process.prependListener(s, onSignal);
  if (isMainThread) process.on('beforeExit', onBeforeExit);
  else leaveRelay = listenToMainThread(onMainThreadEnding);
  installed = true;
}

function uninstall(): void {
  process.removeListener('exit', onExit);
  process.removeListener('uncaughtExceptionMonitor', onUncaught);
  for (const s of SIGNALS) process.removeListener(s, onSignal);
  process.removeListener('beforeExit', onBeforeExit);
  leaveRelay?.();
  leaveRelay = null;
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

/**
 * Main thread: stands in for the recorders of worker threads. Its hooks are installed
 * while any worker records (so a signal is recorded there before the process dies by
 * it); the process's exit is relayed by a listener of its own, installed when rlprobe is
 * loaded, because a worker may start recording and the main thread exit before the
 * notice of it arrives.
 */
const workerRecorders: CrashHookTarget = {
  onProcessExit(code) {
    relayExit(code);
  },
  onCrash() {
    // the exit that follows is relayed
  },
  onSignal(signal) {
    relayToWorkers({ type: 'signal', signal }, WORKER_SIGNAL_WAIT_MS);
  },
};

let exitRelayed = false;
function relayExit(code: number): void {
  if (exitRelayed || liveWorkers() === 0) return;
  exitRelayed = true;
  relayToWorkers({ type: 'exit', code }, WORKER_EXIT_WAIT_MS);
}

if (isMainThread) {
  process.on('exit', relayExit);
  watchWorkers((live) => {
    if (live > 0) registerCrashHooks(workerRecorders);
    else unregisterCrashHooks(workerRecorders);
  });
}

/** This thread's id in event data: null on the main thread. */
export const WORKER_THREAD_ID: number | null = isMainThread ? null : threadId;
