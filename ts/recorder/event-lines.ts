/**
 * Every events.jsonl line the recorder writes (docs/format.md#eventsjsonl):
 * one builder for the line, and the lines of the recorder's own kinds — refused records,
 * fallbacks, and the lifecycle (close, process exit, crash, signal).
 */
import type { NativeCounters } from '../native.js';
import { RECORDER_EVENT_KINDS } from '../schema/event.js';
import type { RefusedCoord } from './coords.js';
import { WORKER_THREAD_ID } from './crash-hooks.js';
import type { ExitOrigin } from './crash-hooks.js';
import { clip, describeThrown, describeValue } from './describe-value.js';
import { eventDataObject } from './event-call.js';
import type { EventRefusal } from './event-call.js';
import type { BadField } from './step-encoder.js';

/** `data` as JSON: the object `logEvent` would write (bigints as decimal strings), never a throw. */
function dataJson(data: unknown): string {
  try {
    return JSON.stringify(eventDataObject(data), (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  } catch (error) {
    return JSON.stringify({ unserializable: describeThrown(error) });
  }
}

/**
 * Lifecycle event data of a recorder in a worker thread: which thread, and (for its end)
 * whether the worker ended or the main thread ended the process. Nothing on the main thread.
 */
function threadData(endedBy: 'worker' | 'main_thread' | null): Record<string, unknown> {
  if (WORKER_THREAD_ID === null) return {};
  return endedBy === null ? { worker_thread_id: WORKER_THREAD_ID } : { worker_thread_id: WORKER_THREAD_ID, ended_by: endedBy };
}

/** What a bad_record event says of a refused value: bounded (field names are user data too). */
function refusal(field: string, reason: string, value: unknown): { field: string; reason: string; value_type: string; value_preview: string } {
  const shown = describeValue(value);
  return { field: clip(field, 200), reason: clip(reason, 300), value_type: shown.type, value_preview: shown.preview };
}

export class EventLines {
  constructor(private readonly rank: number) {}

  /** A line whose data is JSON text already checked to be an object (a `logEvent` call's). */
  withDataJson(kind: string, step: number | null, message: string, data: string): string {
    return `{"timestamp":${Date.now() / 1000},"kind":${JSON.stringify(kind)},"step":${step},"rank":${this.rank},"message":${JSON.stringify(message)},"data":${data}}`;
  }

  /** A line of the recorder's own; `data` is written as `logEvent` writes it. */
  line(kind: string, step: number | null | undefined, message: string, data: unknown): string {
    const s = typeof step === 'number' && Number.isInteger(step) ? step : null;
    return this.withDataJson(kind, s, message, dataJson(data));
  }

  /** A step record the encoder refused. */
  badStep(bad: BadField, step: number | null): string {
    const data = refusal(bad.field, bad.reason, bad.value);
    const message = bad.value === undefined && data.reason !== 'missing'
      ? `step record dropped: ${data.field}: ${data.reason}`
      : `step record dropped: ${data.field}: ${data.reason}, got ${data.value_type} ${data.value_preview}`;
    return this.line(RECORDER_EVENT_KINDS.badRecord, step, message, data);
  }

  /** A step record that could not even be reported (neither path throws by design). */
  unreportableStep(): string {
    return this.line(RECORDER_EVENT_KINDS.badRecord, null, 'step record dropped: unreportable', { field: 'record' });
  }

  /** A field of a span's or unit's coordinates refused (`what`: span, unit). */
  refusedCoord(what: string, r: RefusedCoord, step: number | null): string {
    const data = refusal(r.field, r.reason, r.value);
    return this.line(RECORDER_EVENT_KINDS.badRecord, step, `${what} ${data.field} refused: ${r.reason}, got ${data.value_type} ${data.value_preview}`, {
      record: what,
      ...data,
      reason: r.reason,
    });
  }

  /** A `logEvent` call refused. */
  badEvent(kind: unknown, r: EventRefusal): string {
    const data = refusal(r.field, r.reason, r.value);
    const kindText = typeof kind === 'string' ? clip(kind, 120) : null;
    const what = kindText === null ? 'event' : `event ${JSON.stringify(kindText)}`;
    return this.line(RECORDER_EVENT_KINDS.badRecord, r.step, `${what} dropped: ${data.field}: ${data.reason}, got ${data.value_type} ${data.value_preview}`, {
      record: 'event',
      kind: kindText,
      ...data,
    });
  }

  /** A slower path this runtime forces (`fallback` names it), said once per recorder. */
  fallback(fallback: string, message: string, data: Record<string, unknown>): string {
    return this.line(RECORDER_EVENT_KINDS.fallback, null, message, { fallback, ...data });
  }

  close(c: NativeCounters): string {
    return this.line(RECORDER_EVENT_KINDS.close, null, 'recorder closed', { logged: c.logged, dropped: c.dropped, bad: c.bad });
  }

  processExit(code: number, origin: ExitOrigin, c: NativeCounters): string {
    const message =
      origin === 'worker'
        ? `worker thread ${WORKER_THREAD_ID} exiting with code ${code}`
        : origin === 'main-thread'
          ? `process exiting with code ${code}: the main thread ended it while worker thread ${WORKER_THREAD_ID} was recording`
          : `process exiting with code ${code}`;
    return this.line(RECORDER_EVENT_KINDS.processExit, null, message, {
      code,
      logged: c.logged,
      dropped: c.dropped,
      bad: c.bad,
      ...threadData(origin === 'main-thread' ? 'main_thread' : 'worker'),
    });
  }

  crash(error: unknown, origin: string): string {
    const e = error instanceof Error ? error : null;
    const message = e ? `${e.name}: ${e.message}` : `non-error thrown: ${describeValue(error).preview}`;
    return this.line(RECORDER_EVENT_KINDS.crash, null, message, { origin, name: e?.name ?? typeof error, stack: e?.stack ?? null, ...threadData(null) });
  }

  signal(signal: NodeJS.Signals): string {
    return this.line(RECORDER_EVENT_KINDS.signal, null, `received ${signal}`, { signal, ...threadData(null) });
  }
}
