/**
 * `logStep`, the hot path: it never throws, never blocks, never waits for IO and makes no
 * native call per record. A record is encoded straight into the ring the writer thread
 * consumes and published with `Atomics.store` (ring-writer.ts); the checked encoder (and a
 * copy) only for a new shape or a bad record, which becomes a `bad_record` event.
 *
 * Two fallbacks, each said once in events.jsonl as a `recorder_fallback` event: where the
 * runtime copies external memory instead of sharing it, one `pushStep` call per record;
 * where code generation from strings is forbidden, no compiled shapes (the checked
 * encoder for every record).
 */
import { native } from '../errors.js';
import { pushStep, stepColumnKind } from '../native.js';
import type { NativeRecorder } from '../native.js';
import type { StepRecord } from '../schema/step-record.js';
import { describeThrown } from './describe-value.js';
import type { EventLines } from './event-lines.js';
import { F64_MAGIC, RingWriter } from './ring-writer.js';
import { shapeCompilation } from './shape-compiler.js';
import { StepEncoder } from './step-encoder.js';

/** Room reserved per record on the fast path; larger records take the checked path. */
const FAST_RECORD_SLOTS = 512;

/**
 * The ring's memory shared with the writer thread, or null where the runtime copies
 * external memory instead of sharing it (then `pushStep` carries each record).
 */
function sharedRing(nativeRecorder: NativeRecorder): RingWriter | null {
  const memory = nativeRecorder.sharedRing();
  const probe = Math.random() + 1;
  memory[F64_MAGIC] = probe;
  if (nativeRecorder.ringMagic() !== probe) return null;
  return new RingWriter(memory, nativeRecorder.ringMaxRecords());
}

/** Marks the record bad because reading it threw (a getter or proxy trap). */
function refuseThrown(encoder: StepEncoder, error: unknown): -1 {
  encoder.bad = { field: 'record', reason: `reading the record threw: ${describeThrown(error)}`, value: undefined };
  return -1;
}

export class StepLogger {
  private readonly encoder: StepEncoder;
  /** The queue's memory, written directly by `log`; null where it cannot be shared. */
  private readonly ring: RingWriter | null;
  /** The native recorder's handle for `pushStep` (the fallback when `ring` is null). */
  private readonly handle: number;
  private readonly wakeEvery: number;
  private sinceWake = 0;

  /** `onWake` runs with every wake-up of the writer (every `wakeEvery` records). */
  constructor(
    private readonly nativeRecorder: NativeRecorder,
    private readonly lines: EventLines,
    private readonly onWake: () => void,
  ) {
    this.handle = nativeRecorder.handle;
    this.ring = native(() => sharedRing(nativeRecorder));
    this.wakeEvery = native(() => nativeRecorder.wakeEvery());
    const compilation = shapeCompilation();
    this.encoder = new StepEncoder(
      {
        kindOf: (key) => stepColumnKind(key),
        registerAll: (keys) => nativeRecorder.registerAll(keys),
        bindScratch: (slots) => nativeRecorder.bindScratch(slots),
      },
      256,
      { compileShapes: compilation.available, onCompileError: (error) => this.reportNoShapes(error) },
    );
    if (!compilation.available) this.reportNoShapes(compilation.error);
    if (this.ring === null) {
      this.reportFallback('push_step', 'step records cross to the writer one native call each: this runtime copies external memory instead of sharing it', {});
    }
  }

  /**
   * Records one optimizer step. Never throws. A malformed record is dropped and a
   * `bad_record` event names the field and the value; NaN and ±Inf are kept.
   */
  log(record: StepRecord): void {
    const encoder = this.encoder;
    if (this.ring !== null) {
      this.logToRing(record, encoder, this.ring);
      return;
    }
    let n: number;
    try {
      n = encoder.encode(record);
    } catch (error) {
      n = refuseThrown(encoder, error);
    }
    try {
      if (n < 0) this.reportBad(encoder);
      else pushStep(this.handle, n);
    } catch {
      // neither throws by design; should one ever, the record is still accounted for
      try {
        this.nativeRecorder.reportBad(this.lines.unreportableStep());
      } catch {
        // training goes on
      }
    }
  }

  /**
   * The hot path: reserve room in the shared ring, encode straight into it (compiled shape),
   * stamp the time, publish. The checked encoder (and a copy) only for a new shape or a
   * bad record. `logged` is counted exactly once on every branch. A full queue drops the
   * record before it is read, so under overflow a malformed record counts as dropped.
   * Everything rare is out of line: a call that comes after milliseconds of other work
   * finds its code cold and pays for every cache line of it, taken or not.
   */
  private logToRing(record: StepRecord, encoder: StepEncoder, ring: RingWriter): void {
    try {
      const offset = ring.reserve(FAST_RECORD_SLOTS);
      if (offset < 0) {
        ring.countDropped();
        return;
      }
      const n = record !== null && typeof record === 'object' ? encoder.encodeFast(record, ring.f64, offset + 1, FAST_RECORD_SLOTS) : -1;
      if (n >= 0) this.publish(ring, offset, n);
      else this.logChecked(record, encoder, ring, offset);
    } catch (error) {
      // a getter that threw on the fast path: reported, not re-read (it may throw again);
      // nothing was published, and a dropped record never gets here
      this.reportThrown(encoder, error);
    }
  }

  /**
   * A record no compiled shape took, with room reserved at `offset`: the checked encoder
   * refuses it (a `bad_record` event) or encodes it into its scratch (learning its shape),
   * which is copied into the ring and published.
   */
  private logChecked(record: StepRecord, encoder: StepEncoder, ring: RingWriter, offset: number): void {
    let n: number;
    try {
      n = encoder.encodeChecked(record);
    } catch (error) {
      n = refuseThrown(encoder, error);
    }
    if (n < 0) {
      this.reportBad(encoder); // counts logged and bad natively
      return;
    }
    if (n > FAST_RECORD_SLOTS) {
      offset = ring.reserve(n);
      if (offset < 0) {
        ring.countDropped();
        return;
      }
    }
    ring.f64.set(encoder.scratch.subarray(0, n), offset + 1);
    this.publish(ring, offset, n);
  }

  private reportThrown(encoder: StepEncoder, error: unknown): void {
    try {
      refuseThrown(encoder, error);
      this.reportBad(encoder);
    } catch {
      // training goes on
    }
  }

  /**
   * The last stage: stamps a record that has no timestamp, counts it as logged, publishes
   * it, and wakes the writer every `wakeEvery` records.
   */
  private publish(ring: RingWriter, offset: number, n: number): void {
    const f64 = ring.f64;
    // no timestamp given (NaN): the writer's published clock, accurate to its 10 ms tick
    if (f64[offset + 2] !== f64[offset + 2]) f64[offset + 2] = ring.now();
    ring.countLogged();
    ring.commit(offset, n);
    if (++this.sinceWake >= this.wakeEvery) this.wakeWriter();
  }

  /** Every `wakeEvery` records: the one native call of the ring path (out of line, as it is rare). */
  private wakeWriter(): void {
    this.sinceWake = 0;
    this.nativeRecorder.wake();
    this.onWake();
  }

  /**
   * What `log` runs on the ring path, one stage at a time, for benches/overhead.ts: the
   * shape check (`encoder.shapeFor`), validation and copy (the shape's `encode` into
   * `ring.f64` at `ring.reserve(limit) + 1`), and `publish`. Null without a shared ring.
   */
  stages(): { encoder: StepEncoder; ring: RingWriter; limit: number; publish: (offset: number, n: number) => void } | null {
    const ring = this.ring;
    if (ring === null) return null;
    return { encoder: this.encoder, ring, limit: FAST_RECORD_SLOTS, publish: (offset, n) => this.publish(ring, offset, n) };
  }

  private reportBad(encoder: StepEncoder): void {
    this.nativeRecorder.reportBad(this.lines.badStep(encoder.bad, encoder.badStep));
  }

  private reportNoShapes(error: string): void {
    this.reportFallback(
      'checked_step_encoder',
      `step records take the checked encoder, without compiled shapes (slower, nothing refused): this runtime refuses code generation from strings (${error})`,
      { error },
    );
  }

  private reportFallback(fallback: string, message: string, data: Record<string, unknown>): void {
    try {
      this.nativeRecorder.logEvent(this.lines.fallback(fallback, message, data));
    } catch {
      // never throws: the recording goes on, on the slower path
    }
  }
}
