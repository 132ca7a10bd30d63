/**
 * The ambient context of a recorder: the current span and the current unit's coordinates
 * and labels, carried across `await` by an AsyncLocalStorage.
 *
 * The storage is created on the first `span(…)`, `unit(…)` or `Span.run(…)`: Node
 * propagates an AsyncLocalStorage through a hook on every async resource (promises
 * included), a cost a recorder that never uses spans should not impose on the process.
 * Until then `current()` is a null check.
 *
 * Also what a sample or an event logged now takes from it (`sampleContextOf`,
 * `eventAmbientOf`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import type { Coords } from './coords.js';
import type { EventAmbient } from './event-call.js';
import type { SampleContext } from './sample-encoder.js';
import type { Span } from './span.js';

export interface Ambient {
  readonly span: Span | null;
  readonly coords: Coords | null;
}

export class AmbientContext {
  private storage: AsyncLocalStorage<Ambient> | null = null;

  /** The ambient span and unit, or undefined outside any (and before any was entered). */
  current(): Ambient | undefined {
    return this.storage === null ? undefined : this.storage.getStore();
  }

  /** Runs `fn` outside any span or unit (timers made there keep no store alive). */
  outside<T>(fn: () => T): T {
    return this.storage === null ? fn() : this.storage.exit(fn);
  }

  run<T>(ambient: Ambient, fn: () => T): T {
    if (this.storage === null) this.storage = new AsyncLocalStorage<Ambient>();
    return this.storage.run(ambient, fn);
  }
}

/** The ambient span as a logged record names it: none for an inert one (no id). */
function recordedSpan(a: Ambient): Span | null {
  return a.span !== null && a.span._id !== '' ? a.span : null;
}

/** The ambient span and unit as a logged sample carries them, or null outside any. */
export function sampleContextOf(a: Ambient | undefined): SampleContext | null {
  if (a === undefined) return null;
  const span = recordedSpan(a);
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

/** The span and unit an event logged now belongs to, or null outside any. */
export function eventAmbientOf(a: Ambient | undefined): EventAmbient | null {
  if (a === undefined) return null;
  const span = recordedSpan(a);
  const labels = (a.coords ?? span?._coords)?.labels ?? null;
  return {
    step: a.coords?.step ?? span?.step ?? null,
    spanId: span?.id ?? null,
    labels: labels !== null && Object.keys(labels).length > 0 ? labels : null,
  };
}
