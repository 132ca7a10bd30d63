/**
 * Starts the native writer of a run directory (a thread that owns the directory's lock,
 * publishes part files and appends events), with the recorder's options.
 */
import { isMainThread, threadId } from 'node:worker_threads';

import { native } from '../errors.js';
import { importHints } from '../doctor/diagnose.js';
import { NativeRecorder } from '../native.js';
import type { ResolvedRecorderOptions } from './options.js';

/** `live`: with the live doctor's thread (rank 0 with `doctor.live`). Throws RlprobeError (RLPROBE_LOCKED: another writer). */
export function openWriter(runDir: string, options: Readonly<ResolvedRecorderOptions>, live: boolean): NativeRecorder {
  return native(
    () =>
      new NativeRecorder({
        runDir,
        rank: options.rank,
        flushIntervalMs: options.flushIntervalMs,
        flushSteps: options.flushSteps,
        queueCapacity: options.queueCapacity,
        sampleQueueBytes: options.sampleQueueBytes,
        liveDoctor: live ? { minEvery: options.doctor.evaluateEvery, ...importHints(options.manifestExtra) } : undefined,
        // a worker's last resort when no JS runs to close it (see close_on_teardown)
        closeOnTeardown: !isMainThread && options.installHandlers,
        threadId,
      }),
  );
}
