/**
 * The training-thread half of `logSamples`. The call itself only checks its options and
 * takes a shallow copy of the batch (the hand-over); the stratified selection (in Rust:
 * synchronously, or on the libuv pool for a large batch), the encoding of the kept samples
 * and the native call happen at the event loop's next turn, or sooner: at the next
 * `logStep` (so a step never reaches the writer before the samples logged ahead of it), a
 * flush, a close, a crash, a counters read, or when too much is handed over. Never throws;
 * a refused call becomes a `bad_record` event.
 */
import { selectSamplesAsync, selectSamplesSync } from '../native.js';
import type { NativeRecorder } from '../native.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';
import { clip, describeThrown, describeValue } from './describe-value.js';
import { MAX_SAMPLES_PER_CALL } from './limits.js';
import { SampleEncoder } from './sample-encoder.js';
import type { SampleContext } from './sample-encoder.js';
import { resolveCallOptions } from './sampling.js';
import type { LogSamplesOptions, Sampling } from './sampling.js';

/** Reason codes of the wire (crates/rlprobe-core/src/samples/select.rs): `all`, none. */
const REASON_ALL = 4;
const REASON_NONE = 0;

/**
 * From this many samples a call's selection runs on the libuv pool, not on this thread: it
 * is O(n), about 12 µs per thousand samples here (0.2 ms at 10,000), so only large
 * batches are worth the hop.
 */
export const ASYNC_SELECT_MIN_SAMPLES = 4096;

/**
 * Handed-over samples (not yet selected and encoded) beyond which a call encodes the
 * oldest calls itself: a training loop that never yields to the event loop keeps a bounded
 * backlog and pays what it logs, a call at a time.
 */
export const MAX_HANDED_OVER_SAMPLES = 8192;
/** The same bound in calls (many one-sample calls). */
export const MAX_HANDED_OVER_CALLS = 256;

/** A call whose samples are not yet selected and encoded. */
interface HandedOver {
  /** The caller's array copied: a trainer refilling its array after the call changes nothing. */
  samples: unknown[];
  step: number | undefined;
  context: SampleContext | null;
  sampling: Sampling;
  select: boolean;
  call: number;
}

/** A large call whose selection is running off-thread. */
interface PendingSelection {
  samples: ArrayLike<unknown>;
  rewards: Float64Array;
  step: number | undefined;
  context: SampleContext | null;
  sampling: Sampling;
  call: number;
  done: boolean;
}

type EventLine = (kind: string, step: number | null, message: string, data: unknown) => string;

/** A sample's reward for ranking: NaN when missing, not a number, or unreadable. */
function rewardOf(sample: unknown): number {
  try {
    const r = sample !== null && typeof sample === 'object' ? (sample as { reward_total?: unknown }).reward_total : undefined;
    return typeof r === 'number' ? r : NaN;
  } catch {
    return NaN;
  }
}

/** The step a call's options give, for the event of a refused call (never throws). */
function stepOf(options: unknown): number | null {
  try {
    const step = options !== null && typeof options === 'object' ? (options as { step?: unknown }).step : undefined;
    return typeof step === 'number' ? step : null;
  } catch {
    return null; // a getter that throws: the event goes without a step
  }
}

export class SampleLogger {
  private calls = 0;
  private refused = 0;
  private readonly encoder = new SampleEncoder();
  private readonly pending = new Set<PendingSelection>();
  private handedOver: HandedOver[] = [];
  private handedOverSamples = 0;
  private turnScheduled = false;

  /**
   * `handOver` false: every call is selected and encoded in the call. For a recorder whose
   * process ending no JS of ours sees (a worker thread, which `terminate()` ends without
   * a turn; `installHandlers: false`), as a hand-over waiting for a turn would be lost.
   */
  constructor(
    private readonly native: NativeRecorder,
    private readonly defaults: Sampling,
    private readonly seed: number,
    private readonly eventLine: EventLine,
    private readonly handOver: boolean,
  ) {}

  /** Whether calls wait to be selected and encoded (`logStep` encodes them first). */
  hasHandedOver(): boolean {
    return this.handedOver.length !== 0;
  }

  log(samples: ArrayLike<unknown>, options: LogSamplesOptions | undefined, context: SampleContext | null = null): void {
    try {
      const o = resolveCallOptions(options, this.defaults);
      if (!o.ok) {
        this.reportBadCall(stepOf(options), o.field, o.reason, o.value);
        return;
      }
      if (samples === null || typeof samples !== 'object') {
        this.reportBadCall(stepOf(options), 'samples', 'expected an array of samples', samples);
        return;
      }
      // read once: a getter or a Proxy may answer differently each time
      const n: unknown = samples.length;
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
        this.reportBadCall(stepOf(options), 'samples.length', 'expected an array of samples (a non-negative integer length)', n);
        return;
      }
      if (n > MAX_SAMPLES_PER_CALL) {
        // refused before any sample is read: the work of a call stays bounded
        this.reportBadCall(stepOf(options), 'samples.length', `${n} samples in one call, over the limit of ${MAX_SAMPLES_PER_CALL}: split the batch`, n, {
          length: n,
          limit: MAX_SAMPLES_PER_CALL,
        });
        return;
      }
      if (n === 0) return;
      // the hand-over: one pointer copied a sample, nothing of a sample read
      const copy = new Array<unknown>(n);
      for (let i = 0; i < n; i++) copy[i] = samples[i];
      this.handedOver.push({ samples: copy, step: o.step ?? context?.step ?? undefined, context, sampling: o.sampling, select: o.select, call: this.calls++ });
      this.handedOverSamples += n;
      if (!this.handOver) this.encodeHandedOver();
      else if (this.handedOverSamples > MAX_HANDED_OVER_SAMPLES || this.handedOver.length > MAX_HANDED_OVER_CALLS) this.encodeOldest();
      else if (!this.turnScheduled) {
        this.turnScheduled = true;
        setImmediate(() => {
          this.turnScheduled = false;
          this.encodeHandedOver();
        });
      }
    } catch (error) {
      try {
        this.reportBadCall(stepOf(options), 'samples', `logSamples failed: ${describeThrown(error)}`, undefined);
      } catch {
        // training goes on
      }
    }
  }

  /** Selects and encodes every handed-over call now, in call order. */
  encodeHandedOver(): void {
    while (this.handedOver.length > 0) this.encodeOne();
  }

  /** Encodes the oldest calls until the backlog is back within its bounds. */
  private encodeOldest(): void {
    while (this.handedOverSamples > MAX_HANDED_OVER_SAMPLES || this.handedOver.length > MAX_HANDED_OVER_CALLS) this.encodeOne();
  }

  private encodeOne(): void {
    const h = this.handedOver.shift()!;
    this.handedOverSamples -= h.samples.length;
    try {
      this.selectAndPush(h);
    } catch (error) {
      try {
        this.reportBadCall(h.step ?? null, 'samples', `logSamples failed: ${describeThrown(error)}`, undefined);
      } catch {
        // training goes on
      }
    }
  }

  private selectAndPush(h: HandedOver): void {
    const { samples, step, context, sampling: s, call } = h;
    const n = samples.length;
    if (!h.select || n <= s.topK + s.bottomK + s.randomK) {
      // `all` from a selection that kept the whole batch; no reason when none ran, so a
      // sample's own capture_reason stands
      const reason = h.select ? REASON_ALL : REASON_NONE;
      const picks = new Uint32Array(2 * n);
      for (let i = 0; i < n; i++) {
        picks[2 * i] = i;
        picks[2 * i + 1] = reason;
      }
      this.push(samples, n, picks, step, context);
      return;
    }
    const rewards = new Float64Array(n);
    for (let i = 0; i < n; i++) rewards[i] = rewardOf(samples[i]);
    if (n < ASYNC_SELECT_MIN_SAMPLES) {
      this.push(samples, n, selectSamplesSync(rewards, this.nativeSampling(s, call)), step, context);
      return;
    }
    const p: PendingSelection = { samples, rewards, step, context, sampling: s, call, done: false };
    this.pending.add(p);
    selectSamplesAsync(rewards, this.nativeSampling(s, call)).then(
      (picks) => this.finish(p, picks),
      () => this.finish(p, null),
    );
  }

  /** Calls refused whole, each with a bad_record event. */
  get callsRefused(): number {
    return this.refused;
  }

  /** Handed-over calls and selections still off-thread are finished here, synchronously (flush, close, exit). */
  settle(): void {
    this.encodeHandedOver();
    // oxlint-disable-next-line no-useless-spread -- finish() deletes from the set being walked
    for (const p of [...this.pending]) this.finish(p, null);
  }

  private nativeSampling(s: Sampling, call: number) {
    return { topK: s.topK, bottomK: s.bottomK, randomK: s.randomK, seed: this.seed, call };
  }

  /** Encodes a finished off-thread selection, or redoes it here (same seed, same picks). */
  private finish(p: PendingSelection, picks: Uint32Array | null): void {
    if (p.done) return;
    p.done = true;
    this.pending.delete(p);
    try {
      this.push(p.samples, p.samples.length, picks ?? selectSamplesSync(p.rewards, this.nativeSampling(p.sampling, p.call)), p.step, p.context);
    } catch {
      // never throws (a recorder closed meanwhile refuses the push)
    }
  }

  private push(samples: ArrayLike<unknown>, n: number, picks: Uint32Array, step: number | undefined, context: SampleContext | null): void {
    // the unit's sample label names a sample only when the call logs one
    const bytes = this.encoder.encode(samples, picks, step, context, n === 1);
    this.native.pushSamples(bytes, picks.length >> 1);
  }

  private reportBadCall(step: number | null, field: string, reason: string, value: unknown, extra: Record<string, number> = {}): void {
    this.refused++;
    const shown = describeValue(value);
    const f = clip(field, 200);
    const r = clip(reason, 300);
    this.native.logEvent(
      this.eventLine(RECORDER_EVENT_KINDS.badRecord, step, `logSamples call dropped: ${f}: ${r}, got ${shown.type} ${shown.preview}`, {
        record: 'samples',
        field: f,
        reason: r,
        value_type: shown.type,
        value_preview: shown.preview,
        ...extra,
      }),
    );
  }
}
