import { RlprobeError } from '../errors.js';
import { formatConfidence } from '../doctor/format.js';
import { atLeast, findingOf } from '../doctor/finding.js';
import type { Finding } from '../doctor/finding.js';
import type { NativeFinding, NativeRecorder } from '../native.js';
import type { EventOptions } from './event-call.js';
import type { ResolvedRecorderOptions } from './options.js';

/** Event kinds the live doctor writes. */
export const DOCTOR_EVENT_KINDS = { finding: 'finding', autoHalt: 'auto_halt' } as const;

/** Where findings come from: the native recorder's doctor thread. */
export interface FindingSource {
  takeFindings(): NativeFinding[];
  /** Publishes what is queued and has the doctor evaluate it; returns what it found. */
  finish(timeoutMs: number): NativeFinding[];
}

type Log = (kind: string, options: EventOptions) => void;

/** Live diagnosis fed by `nativeRecorder`'s doctor thread; findings are logged through `log`. */
export function startLiveDoctor(nativeRecorder: NativeRecorder, policy: ResolvedRecorderOptions['doctor'], log: Log): LiveDoctorHooks {
  const source: FindingSource = {
    takeFindings: () => nativeRecorder.takeFindings(),
    finish: (ms) => {
      // one deadline for both: publish what is queued, then evaluate it
      const end = Date.now() + ms;
      nativeRecorder.flush(ms);
      return nativeRecorder.finishDoctor(Math.max(1, end - Date.now()));
    },
  };
  return new LiveDoctorHooks(source, policy, log);
}

/**
 * The JS half of live diagnosis. The detectors run on a native thread fed by the writer;
 * this side polls for their findings off a timer that never keeps the process alive, turns
 * each into a `finding` event and the `onFinding` callbacks, and applies the halt policy:
 * a graceful halt through an AbortSignal the training loop checks, never a kill.
 */
export class LiveDoctorHooks {
  private readonly listeners = new Set<(f: Finding) => void>();
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setInterval> | null = null;
  haltedBy: Finding | null = null;

  constructor(
    private readonly source: FindingSource,
    private readonly policy: ResolvedRecorderOptions['doctor'],
    private readonly log: Log,
  ) {
    // the timer holds the hooks weakly: a recorder dropped without close() stays collectable
    const self = new WeakRef(this);
    const timer: ReturnType<typeof setInterval> = setInterval(() => {
      const hooks = self.deref();
      if (hooks) hooks.poll();
      else clearInterval(timer);
    }, policy.pollMs);
    timer.unref();
    this.timer = timer;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  onFinding(callback: (f: Finding) => void): () => void {
    this.listeners.add(callback);
    return () => this.listeners.delete(callback);
  }

  /** Takes the findings made since the last poll. Never throws. */
  poll(): void {
    try {
      this.handle(this.source.takeFindings());
    } catch {
      // a failed poll is retried on the next tick
    }
  }

  /** Final evaluation at close; stops polling. Never throws. */
  finish(timeoutMs: number): void {
    this.stop();
    try {
      this.handle(this.source.finish(timeoutMs));
    } catch {
      this.poll(); // closing must go on, with what was found already
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private handle(found: NativeFinding[]): void {
    for (const n of found) {
      const f = findingOf(n);
      this.log(DOCTOR_EVENT_KINDS.finding, { step: f.last_step, message: `${f.severity} ${f.code}: ${f.message}`, data: { ...f } });
      for (const cb of this.listeners) {
        try {
          cb(f);
        } catch {
          // a failing callback must not stop the others or the halt
        }
      }
      this.maybeHalt(f);
    }
  }

  private maybeHalt(f: Finding): void {
    const { haltOn, minConfidence } = this.policy;
    if (this.haltedBy || haltOn === 'never' || !atLeast(f, haltOn) || f.confidence < minConfidence) return;
    this.haltedBy = f;
    const message = `halted by ${f.code} (${f.severity}, confidence ${formatConfidence(f.confidence)}): ${f.message}`;
    // `signature_id` is the key the Python package's auto_halt events carry
    this.log(DOCTOR_EVENT_KINDS.autoHalt, { step: f.last_step, message, data: { signature_id: f.code, finding: f } });
    this.controller.abort(new RlprobeError('RLPROBE_AUTO_HALT', message));
  }
}
