/**
 * The `Recorder`: the public face of recording. It owns the lifecycle — open (the writer,
 * the manifest), record, flush, close, and the process's ending — and hands each kind of
 * record to the module that does one job with it:
 *
 *   steps          step-logger.ts (the hot path) → ring-writer.ts, step-encoder.ts
 *   samples        sample-logger.ts → sample-encoder.ts
 *   spans, units   span-recorder.ts, scopes.ts, ambient.ts, coords.ts
 *   events         event-call.ts (checks), event-lines.ts (every line written)
 *   manifest       run-manifest.ts;   the writer: open-writer.ts
 *   live doctor    live-doctor.ts;    crash paths: crash-hooks.ts, crash-records.ts
 *   counters       counters.ts;       trial capture: ../trials/capture.ts
 */
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

import { RlprobeError, native } from '../errors.js';
import type { NativeRecorder } from '../native.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';
import type { Finding } from '../doctor/finding.js';
import type { SampleRecord } from '../schema/sample-record.js';
import type { StepRecord } from '../schema/step-record.js';
import { captureTrial } from '../trials/capture.js';
import type { CaptureOptions } from '../trials/capture-options.js';
import type { CaptureManifest } from '../trials/manifest.js';
import { eventAmbientOf, sampleContextOf } from './ambient.js';
import type { RefusedCoord, UnitCoords } from './coords.js';
import { closeSummaryOf, countersOf, zeroCounters } from './counters.js';
import type { CallCounters, CloseSummary, RecorderCounters } from './counters.js';
import { registerCrashHooks, unregisterCrashHooks } from './crash-hooks.js';
import type { CrashHookTarget, ExitOrigin } from './crash-hooks.js';
import { EXIT_CLOSE_MS, recordCrash, recordSignal } from './crash-records.js';
import type { CrashRecording } from './crash-records.js';
import { describeValue } from './describe-value.js';
import { resolveEventCall } from './event-call.js';
import type { EventOptions } from './event-call.js';
import { EventLines } from './event-lines.js';
import { startLiveDoctor } from './live-doctor.js';
import type { LiveDoctorHooks } from './live-doctor.js';
import { openWriter } from './open-writer.js';
import { resolveRecorderOptions } from './options.js';
import type { RecorderOptions, ResolvedRecorderOptions } from './options.js';
import { resumableRun, writeNewManifest } from './run-manifest.js';
import { SampleLogger } from './sample-logger.js';
import type { LogSamplesOptions } from './sampling.js';
import { runInSpan, runInUnit } from './scopes.js';
import { inertSpan } from './span.js';
import type { Span, SpanOptions } from './span.js';
import { SpanRecorder } from './span-recorder.js';
import { StepLogger } from './step-logger.js';

export type { CloseSummary, RecorderCounters } from './counters.js';
export type { EventOptions } from './event-call.js';

/** What a recording rank holds; an inert rank has none of it. */
interface Recording extends CrashRecording {
  readonly steps: StepLogger;
  readonly samples: SampleLogger;
  readonly spans: SpanRecorder;
  /** Live diagnosis (rank 0 with `doctor.live`), else null. */
  readonly liveDoctor: LiveDoctorHooks | null;
}

/**
 * Records a training run into a run directory (docs/format.md).
 *
 * `logStep` is the hot path: it never throws, never blocks, never waits for IO and makes
 * no native call. Everything else happens on the native writer thread.
 *
 * On a non-zero rank (from `rank` or the RANK variable) the recorder is inert unless
 * `recordAllRanks` is set: nothing is written, no handlers are installed, every method
 * is safe to call.
 */
export class Recorder implements CrashHookTarget {
  /** The directory this recorder writes (`<runDir>/rank-NNN` for a non-zero rank). */
  readonly runDir: string;
  readonly options: Readonly<ResolvedRecorderOptions>;
  /** False on an inert (non-recording) rank. */
  readonly active: boolean;
  /** The run directory as given (rank 0's). */
  private readonly rootDir: string;
  private readonly recording: Recording | null = null;
  /** Aborted by nothing: the halt signal of a recorder without live diagnosis. */
  private readonly idleHalt = new AbortController();
  private closed = false;
  /** Refused `logEvent` calls (the native counters know only the events it was handed). */
  private eventsBad = 0;
  private summary: CloseSummary | null = null;

  constructor(runDir: string, options?: RecorderOptions) {
    if (typeof runDir !== 'string' || runDir.length === 0) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid runDir: expected a non-empty path (got ${JSON.stringify(runDir)})`);
    }
    this.options = resolveRecorderOptions(options);
    const { rank, recordAllRanks } = this.options;
    this.active = rank === 0 || recordAllRanks;
    this.runDir = rank === 0 ? path.resolve(runDir) : path.join(path.resolve(runDir), `rank-${String(rank).padStart(3, '0')}`);
    this.rootDir = path.resolve(runDir);
    if (!this.active) return;
    mkdirSync(this.runDir, { recursive: true });
    // an existing run is checked before the writer opens; a new one's manifest is written
    // once the writer holds the directory's lock (a refused second writer writes nothing)
    const existing = resumableRun(this.runDir);
    // one rank, one guardian: live diagnosis runs on rank 0 only
    const live = this.options.doctor.live && rank === 0;
    const writer = openWriter(this.runDir, this.options, live);
    let runId: string;
    let resumedRun = existing;
    try {
      // a writer that finished between our look and our lock may have left a run here
      resumedRun ??= resumableRun(this.runDir);
      runId = resumedRun ? resumedRun.runId : writeNewManifest(this.runDir, this.options);
    } catch (error) {
      writer.close(false, 1000); // let go of the directory
      throw error;
    }
    const lines = new EventLines(rank);
    const reportRefused = (what: string, r: RefusedCoord, step: number | null) => this.reportRefused(writer, lines, what, r, step);
    const spans = new SpanRecorder((bytes, count) => writer.pushSpans(bytes, count), runId, rank, reportRefused);
    this.recording = {
      writer,
      lines,
      // ended spans go out with the steps, even in a loop that never yields to the timer
      steps: new StepLogger(writer, lines, () => spans.pushPending()),
      // the hand-over waits for a turn only where our exit hooks see the process end
      samples: new SampleLogger(writer, this.options.sampling, this.options.seed, (kind, step, message, data) => lines.line(kind, step, message, data), isMainThread && this.options.installHandlers),
      spans,
      liveDoctor: live ? startLiveDoctor(writer, this.options.doctor, (kind, o) => this.logEvent(kind, o)) : null,
      settle: () => {
        this.recording?.samples.settle();
        // spans still running are written as `open`; their end is written when they end
        this.recording?.spans.writeOpen();
      },
    };
    if (resumedRun !== null) this.logEvent(RECORDER_EVENT_KINDS.resume, { message: 'recording resumed in an existing run directory' });
    if (this.options.installHandlers) registerCrashHooks(this);
  }

  /**
   * Calls `callback` with each live finding (with `doctor: { live: true }`); returns a
   * function that unsubscribes. Findings arrive on the event loop, a poll interval after
   * the part that shows them is published.
   */
  onFinding(callback: (finding: Finding) => void): () => void {
    const doctor = this.recording?.liveDoctor;
    return doctor ? doctor.onFinding(callback) : () => false;
  }

  /**
   * Aborts when live diagnosis finds a problem at `doctor.haltOn` severity (reason: an
   * RlprobeError RLPROBE_AUTO_HALT); an `auto_halt` event records the finding. Check
   * `haltSignal.aborted` in the training loop or pass the signal on: the recorder never
   * stops the process itself.
   */
  get haltSignal(): AbortSignal {
    return this.recording?.liveDoctor?.signal ?? this.idleHalt.signal;
  }

  /** The finding that aborted `haltSignal`, if any. */
  get haltedBy(): Finding | null {
    return this.recording?.liveDoctor?.haltedBy ?? null;
  }

  /**
   * Records one optimizer step. Never throws. A malformed record is dropped and a
   * `bad_record` event names the field and the value; NaN and ±Inf are kept.
   */
  logStep(record: StepRecord): void {
    const r = this.recording;
    if (this.closed || r === null) return;
    // samples logged ahead of this step reach the writer ahead of it ("a step on disk
    // means the samples logged before it are too"), even in a loop that never yields
    if (r.samples.hasHandedOver()) r.samples.encodeHandedOver();
    r.steps.log(record);
  }

  /**
   * Records per-sample forensics for one step. Never throws. Unless `select: false`, the
   * batch is thinned by the stratified policy (top-k and bottom-k by `reward_total`, a
   * seeded random draw from the rest; see `sampling`), each kept sample tagged with its
   * `capture_reason`. Validation and writing happen on the writer thread; a malformed
   * sample becomes a `bad_record` event. The call hands the batch over (it copies the
   * array, not the samples): the selection and the encoding of the kept samples run at the
   * event loop's next turn (a batch of 4096 or more samples is selected off this thread),
   * at the latest at the next `logStep`, `flushSync`, `counters` read, `close` or exit, or
   * in a later call once 8192 samples wait. Do not mutate the sample objects themselves
   * until then. In a worker thread, or with `installHandlers: false`, the call selects and
   * encodes at once (no exit hook of ours would see a hand-over through).
   */
  logSamples(samples: ArrayLike<SampleRecord>, options?: LogSamplesOptions): void {
    const r = this.recording;
    if (this.closed || r === null) return;
    r.samples.log(samples, options, sampleContextOf(r.spans.ambient.current()));
  }

  // ---- spans and units (scopes.ts)

  /**
   * Runs `fn` inside a span and ends it when `fn` returns, throws, or (for a promise)
   * settles; a throw or a rejection ends it with status `error` and is passed on. Spans,
   * samples and events started inside (across `await` too) get it as parent / `span_id`.
   * Kinds: `rollout`, `turn`, `tool_call`, `epoch`, `evaluation`, or any other string.
   * Never throws on its arguments except a missing `fn`: a refused kind, name or option
   * is a `bad_record` event and `fn` still runs.
   */
  span<T>(kind: string, name: string, fn: (span: Span) => T, options?: SpanOptions): T {
    if (typeof fn !== 'function') {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid span fn: expected a function to run inside the span (got ${describeValue(fn).type} ${describeValue(fn).preview})`);
    }
    const spans = this.recording?.spans;
    if (spans === undefined) return fn(inertSpan(String(kind), String(name)));
    return runInSpan(spans, kind, name, fn, options);
  }

  /**
   * Starts a span for code that cannot be wrapped; call `end()` on it (`end({ error })`
   * for a failure). Its parent is the ambient span unless `options.parent` says otherwise.
   * It does not become ambient itself: use `span.run(fn)` for that.
   */
  startSpan(kind: string, name: string, options?: SpanOptions): Span {
    const spans = this.recording?.spans;
    if (spans === undefined) return inertSpan(String(kind), String(name));
    return spans.start(kind, name, options);
  }

  /**
   * Captures a Harbor trial directory into this run at `options.step` (`captureTrial` with
   * `run` set to this recorder's directory). Call it from the rollout's own lifecycle hook,
   * after the harness has written the trial directory and before anything deletes it. Files
   * are read and written asynchronously (the trajectory is parsed and the spans written
   * synchronously: milliseconds for hundreds of turns); a capture error rejects the promise
   * and never touches the recording. A trial is a set of files, not a rank's stream: an inert
   * rank (one not recording) captures into the run directory itself, which rank 0 created.
   */
  captureTrial(trialDir: string, options: Omit<CaptureOptions, 'run'>): Promise<CaptureManifest> {
    return captureTrial(trialDir, { ...options, run: this.active ? this.runDir : this.rootDir });
  }

  /** The ambient span, or null outside any. */
  currentSpan(): Span | null {
    return this.recording?.spans.ambient.current()?.span ?? null;
  }

  /**
   * Runs `fn` with coordinates and labels bound for everything logged inside it, across
   * `await`: samples, events and spans take `step` when they have none, and carry the
   * labels (`sample` and `group` among them; a sample also takes them as `sample_id` /
   * `group_id` when it has none — `sample_id` only when the call logs one sample). Nested
   * units merge, the inner winning per key. A refused field is a `bad_record` event and
   * is left out; `fn` always runs.
   */
  unit<T>(coords: UnitCoords, fn: () => T): T {
    if (typeof fn !== 'function') {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid unit fn: expected a function to run inside the unit (got ${describeValue(fn).type} ${describeValue(fn).preview})`);
    }
    const r = this.recording;
    if (r === null || this.closed) return fn();
    return runInUnit(r.spans, coords, fn, (what, refused, step) => this.reportRefused(r.writer, r.lines, what, refused, step));
  }

  /** A span's or unit's refused field, as a bad_record event. Never throws. */
  private reportRefused(writer: NativeRecorder, lines: EventLines, what: string, r: RefusedCoord, step: number | null): void {
    try {
      writer.logEvent(lines.refusedCoord(what, r, step));
    } catch {
      // never throws
    }
  }

  // ---- events

  /**
   * Appends an event to events.jsonl (written as it arrives). Never throws. `kind` is a
   * non-empty string, `message` a string, `step` a non-negative integer or null, `data`
   * anything JSON can write (bigints as decimal strings). `data` that is not a plain object
   * (a number, a string, an array, null, a Date…) is kept whole under `data.value`, inside
   * a span or unit and outside alike; inside one, `span_id` and `labels` are added unless
   * the data has its own. Within the limits of limits.ts. A call that breaks one of these
   * is not written: a `bad_record` event names the field, and `counters.eventsBad` counts it.
   */
  logEvent(kind: string, options?: EventOptions): void {
    const r = this.recording;
    if (r === null || this.closed) return;
    try {
      const call = resolveEventCall(kind, options, eventAmbientOf(r.spans.ambient.current()));
      if (call.ok) {
        const p = call.parts;
        r.writer.logEvent(r.lines.withDataJson(p.kind, p.step, p.message, p.dataJson));
        return;
      }
      this.eventsBad++;
      r.writer.logEvent(r.lines.badEvent(kind, call.refusal));
    } catch {
      // never throws (the checks above do not either: this is the last line of defence)
    }
  }

  // ---- flush, counters, close

  /**
   * Publishes everything logged so far and fsyncs events. True when done within the
   * timeout and nothing failed to write since the previous flush (a full disk, the run
   * directory removed: `counters.writeFailures` and a `recorder_error` event say more).
   */
  flushSync(timeoutMs = 5000): boolean {
    const r = this.recording;
    if (r === null || this.closed) return true;
    r.settle();
    return native(() => r.writer.flush(Math.max(0, Math.min(timeoutMs, 2 ** 31 - 1))));
  }

  get counters(): RecorderCounters {
    const r = this.recording;
    if (r === null) return zeroCounters();
    if (this.summary) return { ...this.summary.counters };
    // handed-over samples count as logged from the call on, not from the next turn
    r.samples.encodeHandedOver();
    return countersOf(native(() => r.writer.counters()), this.callCounters());
  }

  /** Calls refused on this thread before reaching Rust. */
  private callCounters(): CallCounters {
    return { eventsBad: this.eventsBad, sampleCallsBad: this.recording?.samples.callsRefused ?? 0 };
  }

  /**
   * Flushes, compacts the parts into steps.parquet, writes a `recorder_close` event and
   * stops the writer. Idempotent. Blocks up to `closeTimeoutMs`.
   */
  close(): CloseSummary {
    return this.closeWith(true, this.options.closeTimeoutMs, null);
  }

  private closeWith(compact: boolean, timeoutMs: number, finalEvent: string | null): CloseSummary {
    const r = this.recording;
    if (r === null) return { counters: zeroCounters(), compaction: null, error: null };
    if (this.summary) return this.summary;
    r.samples.settle();
    r.spans.stop();
    // one deadline for everything close does
    const deadline = Date.now() + timeoutMs;
    const left = () => Math.min(2 ** 31 - 1, Math.max(1, Math.ceil(deadline - Date.now())));
    // publish the last part before the closing event: a reader that sees the run has
    // ended (probe watch) must also see all of its steps
    if (r.liveDoctor) r.liveDoctor.finish(left());
    else native(() => r.writer.flush(left()));
    this.closed = true;
    if (this.options.installHandlers) unregisterCrashHooks(this);
    r.writer.logEvent(finalEvent ?? r.lines.close(r.writer.counters()));
    this.summary = closeSummaryOf(native(() => r.writer.close(compact, left())), this.callCounters());
    return this.summary;
  }

  // ---- crash hooks (crash-hooks.ts calls these; crash-records.ts); each is bounded and never throws

  /** @internal */
  onProcessExit(code: number, origin: ExitOrigin): void {
    const r = this.recording;
    if (this.closed || r === null) return;
    try {
      this.closeWith(true, EXIT_CLOSE_MS, r.lines.processExit(code, origin, r.writer.counters()));
    } catch {
      // the process is exiting: nothing left to do
    }
  }

  /** @internal */
  onCrash(error: unknown, origin: string): void {
    if (this.closed || this.recording === null) return;
    recordCrash(this.recording, error, origin);
  }

  /** @internal */
  onSignal(signal: NodeJS.Signals): void {
    if (this.closed || this.recording === null) return;
    recordSignal(this.recording, signal);
  }
}
