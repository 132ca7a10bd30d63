/**
 * The main thread's ending, relayed to recorders in worker threads.
 *
 * Node runs no more JavaScript in a worker once the main thread ends the process
 * (`process.exit`, the end of its event loop, an uncaught exception), and delivers signals
 * to the main thread only. Left alone, a worker's recording would keep whatever its last
 * flush published and look live forever. So the main thread, when rlprobe is loaded there
 * before the worker starts, shares a small counter block with the workers it starts
 * (`setEnvironmentData`): a worker with live recorders counts itself in and listens on a
 * BroadcastChannel; the main thread broadcasts its ending and waits, bounded, until each
 * worker has recorded it.
 */
import { BroadcastChannel, getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';

export type RelayedEnding = { type: 'exit'; code: number } | { type: 'signal'; signal: NodeJS.Signals };

/** What workers tell the main thread: it installs signal hooks while any worker records. */
type WorkerNotice = { type: 'joined' } | { type: 'left' };

const SHARED_KEY = 'rlprobe:worker-relay';
const CHANNEL_NAME = 'rlprobe:worker-relay';
// indexes into the shared Int32Array
const LIVE = 0;
const ACKED = 1;

/** The counters shared by the main thread and its workers; null when the main thread has none. */
const shared: Int32Array | null = (() => {
  if (isMainThread) {
    const block = new Int32Array(new SharedArrayBuffer(8));
    setEnvironmentData(SHARED_KEY, block.buffer);
    return block;
  }
  const buffer = getEnvironmentData(SHARED_KEY);
  return buffer instanceof SharedArrayBuffer ? new Int32Array(buffer) : null;
})();

/** Worker threads that have live recorders and can hear the main thread. */
export function liveWorkers(): number {
  return shared === null ? 0 : Atomics.load(shared, LIVE);
}

/**
 * Main thread: tells every listening worker how the process ends and waits until each one
 * has recorded it, at most `timeoutMs`. Returns how many answered. A worker busy in
 * synchronous code cannot answer: the wait ends at the deadline.
 */
export function relayToWorkers(ending: RelayedEnding, timeoutMs: number): number {
  if (shared === null || !isMainThread) return 0;
  const expected = Atomics.load(shared, LIVE);
  if (expected === 0) return 0;
  Atomics.store(shared, ACKED, 0);
  const channel = new BroadcastChannel(CHANNEL_NAME);
  try {
    channel.postMessage(ending);
  } finally {
    channel.close();
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const acked = Atomics.load(shared, ACKED);
    const left = deadline - Date.now();
    if (acked >= expected || left <= 0) return acked;
    Atomics.wait(shared, ACKED, acked, left);
  }
}

/**
 * Main thread: calls `onChange` with the number of live worker recorders as workers join
 * and leave (on the event loop, a moment after the worker's recorder starts).
 */
export function watchWorkers(onChange: (live: number) => void): void {
  if (shared === null || !isMainThread) return;
  const channel = new BroadcastChannel(CHANNEL_NAME);
  channel.unref(); // listening must not keep the process alive
  channel.onmessage = (event) => {
    const notice = (event as { data: WorkerNotice | RelayedEnding }).data;
    if (notice.type === 'joined' || notice.type === 'left') onChange(Atomics.load(shared, LIVE));
  };
}

/**
 * Worker thread: counts this thread in and calls `onEnding` when the main thread relays
 * its ending (then answers). Returns the function that counts the thread out; a no-op
 * where the main thread shares no counters (rlprobe not loaded there before the worker).
 */
export function listenToMainThread(onEnding: (ending: RelayedEnding) => void): () => void {
  if (shared === null || isMainThread) return () => {};
  const block = shared;
  const channel = new BroadcastChannel(CHANNEL_NAME);
  channel.unref(); // a worker whose work is done still exits
  channel.onmessage = (event) => {
    const ending = (event as { data: WorkerNotice | RelayedEnding }).data;
    if (ending.type !== 'exit' && ending.type !== 'signal') return;
    try {
      onEnding(ending);
    } finally {
      Atomics.add(block, ACKED, 1);
      Atomics.notify(block, ACKED);
    }
  };
  Atomics.add(block, LIVE, 1);
  channel.postMessage({ type: 'joined' } satisfies WorkerNotice);
  let left = false;
  return () => {
    if (left) return;
    left = true;
    Atomics.sub(block, LIVE, 1);
    channel.postMessage({ type: 'left' } satisfies WorkerNotice);
    channel.close();
  };
}
