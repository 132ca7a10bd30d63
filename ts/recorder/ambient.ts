/**
 * The ambient context of a recorder: the current span and the current unit's coordinates
 * and labels, carried across `await` by an AsyncLocalStorage.
 *
 * The storage is created on the first `span(…)`, `unit(…)` or `Span.run(…)`: Node
 * propagates an AsyncLocalStorage through a hook on every async resource (promises
 * included), a cost a recorder that never uses spans should not impose on the process.
 * Until then `current()` is a null check.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import type { Span } from './span.js';

/** What `unit(…)` binds. `sample` and `group` become the labels `sample` and `group`. */
export interface UnitCoords {
  step?: number;
  sample?: string | number;
  group?: string | number;
  [label: string]: string | number | boolean | undefined;
}

/** A unit's resolved coordinates (nested units merged, the inner winning per key). */
export interface Coords {
  readonly step: number | null;
  readonly sample: string | null;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
  /** `labels` as a JSON object, made once per unit; null when there are none. */
  readonly labelsJson: string | null;
}

export interface Ambient {
  readonly span: Span | null;
  readonly coords: Coords | null;
}

/** A field `unit` refused (reported as a bad_record event; the unit goes on without it). */
export interface RefusedCoord {
  field: string;
  reason: string;
  value: unknown;
}

export function labelsJsonOf(labels: Readonly<Record<string, string>>): string | null {
  for (const _ in labels) return JSON.stringify(labels);
  return null;
}

/** Merges `given` over `outer`; bad fields are left out and listed in `refused`. */
export function mergeCoords(outer: Coords | null, given: UnitCoords, refused: RefusedCoord[]): Coords {
  let step = outer?.step ?? null;
  const labels: Record<string, string> = { ...outer?.labels };
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    refused.push({ field: 'unit', reason: 'expected an object of coordinates and labels', value: given });
    return outer ?? { step: null, sample: null, group: null, labels: {}, labelsJson: null };
  }
  for (const key of Object.keys(given)) {
    const v = given[key];
    if (v === undefined) continue;
    if (key === 'step') {
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) step = v;
      else refused.push({ field: 'step', reason: 'expected a non-negative integer', value: v });
      continue;
    }
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      labels[key] = String(v);
    } else {
      refused.push({ field: key, reason: 'expected a label value that is a string, a finite number or a boolean', value: v });
    }
  }
  return {
    step,
    sample: labels.sample ?? null,
    group: labels.group ?? null,
    labels,
    labelsJson: labelsJsonOf(labels),
  };
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
