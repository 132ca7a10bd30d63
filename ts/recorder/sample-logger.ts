/**
 * The training-thread half of `logSamples`: option checks, the stratified selection (in
 * Rust: synchronously, or on the libuv pool for a large batch), encoding of the kept
 * samples, one native call. Never throws; a refused call becomes a `bad_record` event.
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
 * From this many samples a call's selection runs on the libuv pool, not in the call: it
 * is O(n), about 12 µs per thousand samples here (0.2 ms at 10,000), so only large
 * batches are worth the hop. (The rewards are still read on this thread: one property
 * read a sample.)
 */
export const ASYNC_SELECT_MIN_SAMPLES = 4096;

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

export class SampleLogger {
  private calls = 0;
  private refused = 0;
  private readonly encoder = new SampleEncoder();
  private readonly pending = new Set<PendingSelection>();

  constructor(
    private readonly native: NativeRecorder,
    private readonly defaults: Sampling,
    private readonly seed: number,
    private readonly eventLine: EventLine,
  ) {}

  log(samples: ArrayLike<unknown>, options: LogSamplesOptions | undefined, context: SampleContext | null = null): void {
    try {
      const o = resolveCallOptions(options, this.defaults);
      if (!o.ok) {
        this.reportBadCall(options, o.field, o.reason, o.value);
        return;
      }
      if (samples === null || typeof samples !== 'object') {
        this.reportBadCall(options, 'samples', 'expected an array of samples', samples);
        return;
      }
      // read once: a getter or a Proxy may answer differently each time
      const n: unknown = samples.length;
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
        this.reportBadCall(options, 'samples.length', 'expected an array of samples (a non-negative integer length)', n);
        return;
      }
      if (n > MAX_SAMPLES_PER_CALL) {
        // refused before any sample is read: the work of a call stays bounded
        this.reportBadCall(options, 'samples.length', `${n} samples in one call, over the limit of ${MAX_SAMPLES_PER_CALL}: split the batch`, n, {
          length: n,
          limit: MAX_SAMPLES_PER_CALL,
        });
        return;
      }
      if (n === 0) return;
      const call = this.calls++;
      const s = o.sampling;
      // inside a unit or span: its step when the call gives none
      const step = o.step ?? context?.step ?? undefined;
      if (!o.select || n <= s.topK + s.bottomK + s.randomK) {
        // `all` from a selection that kept the whole batch; no reason when none ran, so a
        // sample's own capture_reason stands
        const reason = o.select ? REASON_ALL : REASON_NONE;
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
      // a shallow copy: a trainer that refills its rollout array after the call must not
      // change what is recorded (the sample objects themselves are still read later)
      const p: PendingSelection = { samples: Array.from({ length: n }, (_, i) => samples[i]), rewards, step, context, sampling: s, call, done: false };
      this.pending.add(p);
      selectSamplesAsync(rewards, this.nativeSampling(s, call)).then(
        (picks) => this.finish(p, picks),
        () => this.finish(p, null),
      );
    } catch (error) {
      try {
        this.reportBadCall(options, 'samples', `logSamples failed: ${describeThrown(error)}`, undefined);
      } catch {
        // training goes on
      }
    }
  }

  /** Calls refused whole, each with a bad_record event. */
  get callsRefused(): number {
    return this.refused;
  }

  /** Selections still off-thread are finished here, synchronously (flush, close, exit). */
  settle(): void {
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

  private reportBadCall(options: unknown, field: string, reason: string, value: unknown, extra: Record<string, number> = {}): void {
    this.refused++;
    let step: unknown;
    try {
      step = options !== null && typeof options === 'object' ? (options as { step?: unknown }).step : undefined;
    } catch {
      step = undefined; // a getter that throws: the event goes without a step
    }
    const shown = describeValue(value);
    const f = clip(field, 200);
    const r = clip(reason, 300);
    this.native.logEvent(
      this.eventLine(RECORDER_EVENT_KINDS.badRecord, typeof step === 'number' ? step : null, `logSamples call dropped: ${f}: ${r}, got ${shown.type} ${shown.preview}`, {
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
