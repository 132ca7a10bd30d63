import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isMainThread, threadId } from 'node:worker_threads';

import { RlprobeError, native } from '../errors.js';
import { NativeRecorder, pushStep, stepColumnKind, writeFileAtomic } from '../native.js';
import { captureTrial } from '../trials/capture.js';
import type { CaptureOptions } from '../trials/capture-options.js';
import type { CaptureManifest } from '../trials/manifest.js';
import type { NativeCloseReport, NativeCounters } from '../native.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';
import { SCHEMA_VERSION } from '../schema/manifest.js';
import type { RunManifest } from '../schema/manifest.js';
import { importHints } from '../doctor/diagnose.js';
import type { Finding } from '../doctor/finding.js';
import type { SampleRecord } from '../schema/sample-record.js';
import type { StepRecord } from '../schema/step-record.js';
import { registerCrashHooks, unregisterCrashHooks, WORKER_THREAD_ID } from './crash-hooks.js';
import type { CrashHookTarget, ExitOrigin } from './crash-hooks.js';
import { clip, describeThrown, describeValue } from './describe-value.js';
import { resolveEventCall } from './event-call.js';
import type { EventAmbient, EventRefusal } from './event-call.js';
import { captureEnvironment } from './environment.js';
import { resolveRecorderOptions } from './options.js';
import type { RecorderOptions, ResolvedRecorderOptions } from './options.js';
import { LiveDoctorHooks } from './live-doctor.js';
import { F64_MAGIC, RingWriter } from './ring-writer.js';
import { SampleLogger } from './sample-logger.js';
import type { SampleContext } from './sample-logger.js';
import { mergeCoords } from './ambient.js';
import type { Ambient, RefusedCoord, UnitCoords } from './ambient.js';
import { inertSpan, Span } from './span.js';
import type { SpanOptions } from './span.js';
import { SpanRecorder } from './span-recorder.js';
import type { LogSamplesOptions } from './sampling.js';
import { StepEncoder } from './step-encoder.js';

export interface RecorderCounters {
  /** Step records handed to `logStep`. */
  logged: number;
  /** Rows in published part files. */
  written: number;
  /** Refused by a full queue (or lost to a writer failure; see recorder_error events). */
  dropped: number;
  /** Malformed records, each with a bad_record event. */
  bad: number;
  /** Accepted, not yet published. `written + dropped + bad + pending == logged`. */
  pending: number;
  eventsWritten: number;
  eventsDropped: number;
  /** `logEvent` calls refused (bad kind, options, message or data), each with a bad_record event. */
  eventsBad: number;
  /** Samples kept by selection and handed to the writer. */
  samplesLogged: number;
  samplesWritten: number;
  /** Refused by a full sample queue. */
  samplesDropped: number;
  /** Malformed samples, each with a bad_record event. */
  samplesBad: number;
  /** `samplesWritten + samplesDropped + samplesBad + samplesPending == samplesLogged`. */
  samplesPending: number;
  /**
   * `logSamples` calls refused whole (bad options, not an array, too long), each with a
   * bad_record event; their samples are in none of the sample counters.
   */
  sampleCallsBad: number;
  /**
   * Span writes handed to the writer: one per ended span, plus one per span a flush,
   * crash or close found open (readers keep each span's last write).
   */
  spansLogged: number;
  spansWritten: number;
  /** Refused by a full span queue. */
  spansDropped: number;
  spansBad: number;
  /** `spansWritten + spansDropped + spansBad + spansPending == spansLogged`. */
  spansPending: number;
  /**
   * Failed writes (a part file, event lines, the run directory removed mid-run): each one
   * also prints a rate-limited stderr line, and is written to events.jsonl as a
   * `recorder_error` once writing works again. Its rows count as `dropped`.
   */
  writeFailures: number;
}

export interface CloseSummary {
  counters: RecorderCounters;
  compaction: {
    partsMerged: number;
    rows: number;
    bytes: number;
    samplePartsMerged: number;
    sampleRows: number;
    spanPartsMerged: number;
    spanRows: number;
  } | null;
  /** The last error the writer met, if any (the recording is still readable). */
  error: string | null;
}

export interface EventOptions {
  step?: number | null;
  message?: string;
  data?: Record<string, unknown>;
}

/** Bounds for the crash paths: long enough to publish a part, short enough not to hang. */
const CRASH_FLUSH_MS = 5000;
const EXIT_CLOSE_MS = 15_000;

const ZERO: RecorderCounters = {
  logged: 0, written: 0, dropped: 0, bad: 0, pending: 0, eventsWritten: 0, eventsDropped: 0, eventsBad: 0,
  samplesLogged: 0, samplesWritten: 0, samplesDropped: 0, samplesBad: 0, samplesPending: 0, sampleCallsBad: 0,
  spansLogged: 0, spansWritten: 0, spansDropped: 0, spansBad: 0, spansPending: 0, writeFailures: 0,
};

/**
 * Lifecycle event data of a recorder in a worker thread: which thread, and (for its end)
 * whether the worker ended or the main thread ended the process. Nothing on the main thread.
 */
function threadData(endedBy: 'worker' | 'main_thread' | null): Record<string, unknown> {
  if (WORKER_THREAD_ID === null) return {};
  return endedBy === null ? { worker_thread_id: WORKER_THREAD_ID } : { worker_thread_id: WORKER_THREAD_ID, ended_by: endedBy };
}

/** The ambient span and unit as a logged sample carries them. */
function sampleContextOf(a: Ambient): SampleContext | null {
  const span = a.span !== null && a.span._id !== '' ? a.span : null;
  // the innermost unit (a span with its own labels runs its body in them)
  const c = a.coords ?? span?._coords ?? null;
  if (span === null && c === null) return null;
  return {
    spanId: span?.id ?? null,
    labelsJson: c?.labelsJson ?? null,
    step: a.coords?.step ?? span?.step ?? null,
    sample: c?.sample ?? null,
    group: c?.group ?? null,
  };
}

/** Runs `fn(span)` and ends the span when it settles: a throw or a rejection ends it as `error`. */
function runAndEnd<T>(span: Span, fn: (span: Span) => T): T {
  let result: T;
  try {
    result = fn(span);
  } catch (error) {
    span.end({ error });
    throw error;
  }
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    return (result as unknown as PromiseLike<unknown>).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.end({ error });
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

function defaultRunId(): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
  return `run-${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Marks the record bad because reading it threw (a getter or proxy trap). */
function refuseThrown(encoder: StepEncoder, error: unknown): -1 {
  encoder.bad = { field: 'record', reason: `reading the record threw: ${describeThrown(error)}`, value: undefined };
  return -1;
}

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

function safeJson(data: unknown): string {
  try {
    const s = JSON.stringify(data ?? {}, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    return s && s.startsWith('{') ? s : '{}';
  } catch (error) {
    return JSON.stringify({ unserializable: (error as Error).message });
  }
}

/**
 * Records a training run into a run directory (format: docs/recording-format.md).
 *
 * `logStep` is the hot path: it never throws, never blocks, never waits for IO and makes
 * one native call. Everything else happens on the native writer thread.
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
  private readonly native: NativeRecorder | null;
  /** The queue's memory, written directly by `logStep`; null where it cannot be shared. */
  private readonly ring: RingWriter | null;
  /** The native recorder's handle for `pushStep` (the fallback when `ring` is null). */
  private readonly handle: number;
  private readonly encoder: StepEncoder | null;
  private readonly wakeEvery: number;
  private sinceWake = 0;
  private readonly sampleLogger: SampleLogger | null;
  /** Spans and the ambient context (units); null on an inert rank. */
  private readonly spans: SpanRecorder | null;
  /** Live diagnosis (rank 0 with `doctor.live`), else null. */
  private readonly liveDoctor: LiveDoctorHooks | null = null;
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
    if (!this.active) {
      this.native = null;
      this.ring = null;
      this.handle = -1;
      this.encoder = null;
      this.wakeEvery = 0;
      this.sampleLogger = null;
      this.spans = null;
      return;
    }
    mkdirSync(this.runDir, { recursive: true });
    // an existing run is checked before the writer opens; a new one's manifest is written
    // once the writer holds the directory's lock (a refused second writer writes nothing)
    const existing = this.existingManifest();
    // one rank, one guardian: live diagnosis runs on rank 0 only
    const live = this.options.doctor.live && rank === 0;
    const nativeRecorder = native(
      () =>
        new NativeRecorder({
          runDir: this.runDir,
          rank,
          flushIntervalMs: this.options.flushIntervalMs,
          flushSteps: this.options.flushSteps,
          queueCapacity: this.options.queueCapacity,
          sampleQueueBytes: this.options.sampleQueueBytes,
          liveDoctor: live ? { minEvery: this.options.doctor.evaluateEvery, ...importHints(this.options.manifestExtra) } : undefined,
          // a worker's last resort when no JS runs to close it (see close_on_teardown)
          closeOnTeardown: !isMainThread && this.options.installHandlers,
          threadId,
        }),
    );
    this.native = nativeRecorder;
    let runId: string;
    let resumedRun = existing;
    try {
      // a writer that finished between our look and our lock may have left a run here
      resumedRun ??= this.existingManifest();
      runId = resumedRun ? resumedRun.runId : this.writeNewManifest();
    } catch (error) {
      nativeRecorder.close(false, 1000); // let go of the directory
      throw error;
    }
    const resumed = resumedRun !== null;
    this.handle = nativeRecorder.handle;
    this.ring = native(() => sharedRing(nativeRecorder));
    this.wakeEvery = native(() => nativeRecorder.wakeEvery());
    this.encoder = new StepEncoder({
      kindOf: (key) => stepColumnKind(key),
      registerAll: (keys) => nativeRecorder.registerAll(keys),
      bindScratch: (slots) => nativeRecorder.bindScratch(slots),
    });
    this.sampleLogger = new SampleLogger(nativeRecorder, this.options.sampling, this.options.seed, (kind, step, message, data) =>
      this.eventLine(kind, step, message, data),
    );
    this.spans = new SpanRecorder(
      (bytes, count) => nativeRecorder.pushSpans(bytes, count),
      runId,
      rank,
      (what, r, step) => this.reportRefused(what, r, step),
    );
    if (live) {
      this.liveDoctor = new LiveDoctorHooks(
        {
          takeFindings: () => nativeRecorder.takeFindings(),
          finish: (ms) => {
            const end = Date.now() + ms;
            nativeRecorder.flush(ms);
            return nativeRecorder.finishDoctor(Math.max(1, end - Date.now()));
          },
        },
        this.options.doctor,
        (kind, o) => this.logEvent(kind, o),
      );
    }
    if (resumed) this.logEvent(RECORDER_EVENT_KINDS.resume, { message: 'recording resumed in an existing run directory' });
    if (this.options.installHandlers) registerCrashHooks(this);
  }

  /**
   * Calls `callback` with each live finding (with `doctor: { live: true }`); returns a
   * function that unsubscribes. Findings arrive on the event loop, a poll interval after
   * the part that shows them is published.
   */
  onFinding(callback: (finding: Finding) => void): () => void {
    return this.liveDoctor ? this.liveDoctor.onFinding(callback) : () => false;
  }

  /**
   * Aborts when live diagnosis finds a problem at `doctor.haltOn` severity (reason: an
   * RlprobeError RLPROBE_AUTO_HALT); an `auto_halt` event records the finding. Check
   * `haltSignal.aborted` in the training loop or pass the signal on: the recorder never
   * stops the process itself.
   */
  get haltSignal(): AbortSignal {
    return this.liveDoctor?.signal ?? this.idleHalt.signal;
  }

  /** The finding that aborted `haltSignal`, if any. */
  get haltedBy(): Finding | null {
    return this.liveDoctor?.haltedBy ?? null;
  }

  /** An existing run's manifest (resuming into it), checked; null for a new run. */
  private existingManifest(): { runId: string } | null {
    const file = path.join(this.runDir, 'manifest.json');
    if (existsSync(file)) {
      // resuming: only into a recording of this format version, never mixing two
      let version: unknown;
      let runId: unknown;
      try {
        ({ schema_version: version, run_id: runId } = JSON.parse(readFileSync(file, 'utf8')) as { schema_version?: unknown; run_id?: unknown });
      } catch (error) {
        throw new RlprobeError('RLPROBE_BAD_MANIFEST', `cannot resume ${this.runDir}: manifest.json is not valid JSON (${(error as Error).message})`);
      }
      if (version !== SCHEMA_VERSION) {
        throw new RlprobeError(
          typeof version === 'number' && version > SCHEMA_VERSION ? 'RLPROBE_SCHEMA_TOO_NEW' : 'RLPROBE_SCHEMA_UNSUPPORTED',
          `cannot resume ${this.runDir}: it has format schema_version ${JSON.stringify(version)} and this rlprobe writes ${SCHEMA_VERSION}; record into a new directory${typeof version === 'number' && version > SCHEMA_VERSION ? ' or upgrade rlprobe' : ''}`,
        );
      }
      // keyed span ids derive from the run id: a resumed run keeps its ids
      return { runId: typeof runId === 'string' ? runId : this.runDir };
    }
    return null;
  }

  /** Writes a new run's manifest.json atomically; returns its run id. */
  private writeNewManifest(): string {
    const file = path.join(this.runDir, 'manifest.json');
    const o = this.options;
    const manifest: RunManifest = {
      schema_version: SCHEMA_VERSION,
      run_id: o.runId ?? defaultRunId(),
      created_at: new Date().toISOString(),
      algorithm: o.algorithm,
      model_name: o.modelName,
      world_size: o.worldSize,
      trainer_config: o.trainerConfig,
      environment: o.captureEnvironment ? captureEnvironment() : {},
      notes: o.notes,
      extra: o.rank === 0 ? { ...o.manifestExtra } : { ...o.manifestExtra, rank: o.rank },
    };
    native(() => writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`));
    return manifest.run_id;
  }

  /**
   * Records one optimizer step. Never throws. A malformed record is dropped and a
   * `bad_record` event names the field and the value; NaN and ±Inf are kept.
   */
  logStep(record: StepRecord): void {
    const encoder = this.encoder;
    if (encoder === null || this.closed) return;
    if (this.ring !== null) {
      this.logStepToRing(record, encoder, this.ring);
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
        this.native!.reportBad(this.eventLine(RECORDER_EVENT_KINDS.badRecord, null, 'step record dropped: unreportable', { field: 'record' }));
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
   */
  private logStepToRing(record: StepRecord, encoder: StepEncoder, ring: RingWriter): void {
    try {
      const limit = FAST_RECORD_SLOTS;
      let offset = ring.reserve(limit);
      if (offset < 0) {
        ring.countDropped();
        return;
      }
      let n = record !== null && typeof record === 'object' ? encoder.encodeFast(record, ring.f64, offset + 1, limit) : -1;
      if (n < 0) {
        try {
          n = encoder.encodeChecked(record);
        } catch (error) {
          n = refuseThrown(encoder, error);
        }
        if (n < 0) {
          this.reportBad(encoder); // counts logged and bad natively
          return;
        }
        if (n > limit) {
          offset = ring.reserve(n);
          if (offset < 0) {
            ring.countDropped();
            return;
          }
        }
        ring.f64.set(encoder.scratch.subarray(0, n), offset + 1);
      }
      const f64 = ring.f64;
      // no timestamp given (NaN): the writer's published clock, accurate to its 10 ms tick
      if (f64[offset + 2] !== f64[offset + 2]) f64[offset + 2] = ring.now();
      ring.countLogged();
      ring.commit(offset, n);
      if (++this.sinceWake >= this.wakeEvery) {
        this.sinceWake = 0;
        this.native!.wake();
        // ended spans go out with the steps, even in a loop that never yields to the timer
        this.spans!.pushPending();
      }
    } catch (error) {
      // a getter that threw on the fast path: reported, not re-read (it may throw again);
      // nothing was published, and a dropped record never gets here
      try {
        refuseThrown(encoder, error);
        this.reportBad(encoder);
      } catch {
        // training goes on
      }
    }
  }

  /**
   * Records per-sample forensics for one step. Never throws. Unless `select: false`, the
   * batch is thinned by the stratified policy (top-k and bottom-k by `reward_total`, a
   * seeded random draw from the rest; see `sampling`), each kept sample tagged with its
   * `capture_reason`. Validation and writing happen on the writer thread; a malformed
   * sample becomes a `bad_record` event. A batch of 4096 or more samples is selected off
   * this thread and its kept samples are encoded when that finishes (at the latest at the
   * next `flushSync`, `close` or exit): the array is copied, but do not mutate the sample
   * objects themselves until then.
   */
  logSamples(samples: ArrayLike<SampleRecord>, options?: LogSamplesOptions): void {
    if (this.closed || this.sampleLogger === null) return;
    const ambient = this.spans!.ambient.current();
    this.sampleLogger.log(samples, options, ambient === undefined ? null : sampleContextOf(ambient));
  }

  // ---- spans and units

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
    const spans = this.spans;
    if (spans === null) return fn(inertSpan(String(kind), String(name)));
    const span = spans.start(kind, name, options);
    if (span._id === '') return runAndEnd(span, fn);
    return spans.ambient.run({ span, coords: span._coords }, () => runAndEnd(span, fn));
  }

  /**
   * Starts a span for code that cannot be wrapped; call `end()` on it (`end({ error })`
   * for a failure). Its parent is the ambient span unless `options.parent` says otherwise.
   * It does not become ambient itself: use `span.run(fn)` for that.
   */
  startSpan(kind: string, name: string, options?: SpanOptions): Span {
    const spans = this.spans;
    if (spans === null) return inertSpan(String(kind), String(name));
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
    return this.spans?.ambient.current()?.span ?? null;
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
    const spans = this.spans;
    if (spans === null || this.closed) return fn();
    const ambient = spans.ambient.current();
    const refused: RefusedCoord[] = [];
    const coordsIn = mergeCoords(ambient?.coords ?? null, coords, refused);
    for (const r of refused) this.reportRefused('unit', r, coordsIn.step);
    return spans.ambient.run({ span: ambient?.span ?? null, coords: coordsIn }, fn);
  }

  private reportRefused(what: string, r: RefusedCoord, step: number | null): void {
    try {
      const field = clip(r.field, 200);
      const shown = describeValue(r.value);
      this.native?.logEvent(
        this.eventLine(RECORDER_EVENT_KINDS.badRecord, step, `${what} ${field} refused: ${r.reason}, got ${shown.type} ${shown.preview}`, {
          record: what,
          field,
          reason: r.reason,
          value_type: shown.type,
          value_preview: shown.preview,
        }),
      );
    } catch {
      // never throws
    }
  }

  private reportBad(encoder: StepEncoder): void {
    // field names and reasons come from user data too: bound them like values
    const field = clip(encoder.bad.field, 200);
    const reason = clip(encoder.bad.reason, 300);
    const value = encoder.bad.value;
    const shown = describeValue(value);
    const message = value === undefined && reason !== 'missing'
      ? `step record dropped: ${field}: ${reason}`
      : `step record dropped: ${field}: ${reason}, got ${shown.type} ${shown.preview}`;
    const line = this.eventLine(RECORDER_EVENT_KINDS.badRecord, encoder.badStep, message, {
      field,
      reason,
      value_type: shown.type,
      value_preview: shown.preview,
    });
    this.native!.reportBad(line);
  }

  /** An event line of the recorder's own (its data is always serialisable). */
  private eventLine(kind: string, step: number | null | undefined, message: string, data: unknown): string {
    const s = typeof step === 'number' && Number.isInteger(step) ? step : null;
    return this.eventLineJson(kind, s, message, safeJson(data));
  }

  private eventLineJson(kind: string, step: number | null, message: string, dataJson: string): string {
    return `{"timestamp":${Date.now() / 1000},"kind":${JSON.stringify(kind)},"step":${step},"rank":${this.options.rank},"message":${JSON.stringify(message)},"data":${dataJson}}`;
  }

  /**
   * Appends an event to events.jsonl (written as it arrives). Never throws. `kind` is a
   * non-empty string, `message` a string, `step` a non-negative integer or null, `data`
   * anything JSON can write (bigints as decimal strings; a value that is not a plain object
   * is kept under `data.value`), within the limits of limits.ts. A call that breaks one of
   * these is not written: a `bad_record` event names the field, and `counters.eventsBad`
   * counts it.
   */
  logEvent(kind: string, options?: EventOptions): void {
    if (this.native === null || this.closed) return;
    try {
      const call = resolveEventCall(kind, options, this.eventAmbient());
      if (call.ok) {
        const p = call.parts;
        this.native.logEvent(this.eventLineJson(p.kind, p.step, p.message, p.dataJson));
        return;
      }
      this.eventsBad++;
      this.reportBadEvent(kind, call.refusal);
    } catch {
      // never throws (the checks above do not either: this is the last line of defence)
    }
  }

  /** The span and unit an event logged now belongs to, or null outside any. */
  private eventAmbient(): EventAmbient | null {
    const ambient = this.spans?.ambient.current();
    if (ambient === undefined) return null;
    const span = ambient.span !== null && ambient.span._id !== '' ? ambient.span : null;
    const labels = (ambient.coords ?? span?._coords)?.labels ?? null;
    return {
      step: ambient.coords?.step ?? span?.step ?? null,
      spanId: span?.id ?? null,
      labels: labels !== null && Object.keys(labels).length > 0 ? labels : null,
    };
  }

  private reportBadEvent(kind: unknown, r: EventRefusal): void {
    const field = clip(r.field, 200);
    const reason = clip(r.reason, 300);
    const shown = describeValue(r.value);
    const kindText = typeof kind === 'string' ? clip(kind, 120) : null;
    const what = kindText === null ? 'event' : `event ${JSON.stringify(kindText)}`;
    this.native!.logEvent(
      this.eventLine(RECORDER_EVENT_KINDS.badRecord, r.step, `${what} dropped: ${field}: ${reason}, got ${shown.type} ${shown.preview}`, {
        record: 'event',
        kind: kindText,
        field,
        reason,
        value_type: shown.type,
        value_preview: shown.preview,
      }),
    );
  }

  /**
   * Publishes everything logged so far and fsyncs events. True when done within the
   * timeout and nothing failed to write since the previous flush (a full disk, the run
   * directory removed: `counters.writeFailures` and a `recorder_error` event say more).
   */
  flushSync(timeoutMs = 5000): boolean {
    if (this.native === null || this.closed) return true;
    this.sampleLogger?.settle();
    // spans still running are written as `open`; their end is written when they end
    this.spans?.writeOpen();
    return native(() => this.native!.flush(Math.max(0, Math.min(timeoutMs, 2 ** 31 - 1))));
  }

  get counters(): RecorderCounters {
    if (this.native === null) return { ...ZERO };
    if (this.summary) return { ...this.summary.counters };
    return this.withCallCounters(native(() => this.native!.counters()));
  }

  /** The native counters plus the calls refused on this thread before reaching Rust. */
  private withCallCounters(c: NativeCounters): RecorderCounters {
    return { ...c, eventsBad: this.eventsBad, sampleCallsBad: this.sampleLogger?.callsRefused ?? 0 };
  }

  /**
   * Flushes, compacts the parts into steps.parquet, writes a `recorder_close` event and
   * stops the writer. Idempotent. Blocks up to `closeTimeoutMs`.
   */
  close(): CloseSummary {
    return this.closeWith(true, this.options.closeTimeoutMs, null);
  }

  private closeWith(compact: boolean, timeoutMs: number, finalEvent: string | null): CloseSummary {
    if (this.native === null) return { counters: { ...ZERO }, compaction: null, error: null };
    if (this.summary) return this.summary;
    this.sampleLogger?.settle();
    this.spans?.stop();
    // one deadline for everything close does
    const deadline = Date.now() + timeoutMs;
    const left = () => Math.min(2 ** 31 - 1, Math.max(1, Math.ceil(deadline - Date.now())));
    // publish the last part before the closing event: a reader that sees the run has
    // ended (probe watch) must also see all of its steps
    if (this.liveDoctor) this.liveDoctor.finish(left());
    else native(() => this.native!.flush(left()));
    this.closed = true;
    if (this.options.installHandlers) unregisterCrashHooks(this);
    const c = this.native.counters();
    this.native.logEvent(
      finalEvent ??
        this.eventLine(RECORDER_EVENT_KINDS.close, null, 'recorder closed', {
          logged: c.logged,
          dropped: c.dropped,
          bad: c.bad,
        }),
    );
    const report: NativeCloseReport = native(() => this.native!.close(compact, left()));
    this.summary = {
      counters: this.withCallCounters(report.counters),
      compaction: report.compaction
        ? {
            partsMerged: report.compaction.partsMerged,
            rows: report.compaction.rows,
            bytes: report.compaction.bytes,
            samplePartsMerged: report.compaction.samplePartsMerged,
            sampleRows: report.compaction.sampleRows,
            spanPartsMerged: report.compaction.spanPartsMerged,
            spanRows: report.compaction.spanRows,
          }
        : null,
      error: report.error ?? null,
    };
    return this.summary;
  }

  // ---- crash hooks (see crash-hooks.ts); each is bounded and never throws

  /** @internal */
  onProcessExit(code: number, origin: ExitOrigin): void {
    if (this.closed || this.native === null) return;
    try {
      const c = this.native.counters();
      const message =
        origin === 'worker'
          ? `worker thread ${WORKER_THREAD_ID} exiting with code ${code}`
          : origin === 'main-thread'
            ? `process exiting with code ${code}: the main thread ended it while worker thread ${WORKER_THREAD_ID} was recording`
            : `process exiting with code ${code}`;
      this.closeWith(true, EXIT_CLOSE_MS, this.eventLine(RECORDER_EVENT_KINDS.processExit, null, message, {
        code,
        logged: c.logged,
        dropped: c.dropped,
        bad: c.bad,
        ...threadData(origin === 'main-thread' ? 'main_thread' : 'worker'),
      }));
    } catch {
      // the process is exiting: nothing left to do
    }
  }

  /** @internal */
  onCrash(error: unknown, origin: string): void {
    if (this.closed || this.native === null) return;
    try {
      const e = error instanceof Error ? error : null;
      const message = e ? `${e.name}: ${e.message}` : `non-error thrown: ${describeValue(error).preview}`;
      this.sampleLogger?.settle();
      this.spans?.writeOpen();
      this.native.writeEventNow(this.eventLine(RECORDER_EVENT_KINDS.crash, null, message, {
        origin,
        name: e?.name ?? typeof error,
        stack: e?.stack ?? null,
        ...threadData(null),
      }));
      this.native.flush(CRASH_FLUSH_MS);
    } catch {
      // never throws from a crash path
    }
  }

  /** @internal */
  onSignal(signal: NodeJS.Signals): void {
    if (this.closed || this.native === null) return;
    try {
      this.sampleLogger?.settle();
      this.spans?.writeOpen();
      this.native.writeEventNow(this.eventLine(RECORDER_EVENT_KINDS.signal, null, `received ${signal}`, { signal, ...threadData(null) }));
      this.native.flush(CRASH_FLUSH_MS);
    } catch {
      // never throws from a signal handler
    }
  }
}
