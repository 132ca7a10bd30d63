/**
 * A span: a named, typed interval of a run (a rollout, a turn, a tool call, an epoch, an
 * evaluation pass, or any kind you name). Spans nest; a trajectory is a tree of them.
 * Made by `recorder.span(…)` (ended when its function settles) or `recorder.startSpan(…)`
 * (ended by `end()`).
 */
import type { Coords } from './coords.js';
import { clip, describeThrown } from './describe-value.js';
import { idOf } from '../wire/span-id.js';
import type { IdBlock } from '../wire/span-id.js';

/** Kinds the tools know by name; any other non-empty string is a kind too. */
export type SpanKind = 'rollout' | 'turn' | 'tool_call' | 'epoch' | 'evaluation' | (string & {});

export type SpanStatus = 'ok' | 'error' | 'open';

export interface SpanOptions {
  /** Free-form attributes, stored as JSON (see also `setAttribute`). */
  attributes?: Record<string, unknown>;
  /**
   * A stable key: the span id is derived from the run and the key, so recording the same
   * key again (a retried rollout, a resumed run) replaces the span instead of adding one.
   */
  key?: string | number;
  /** The training step; default: the ambient unit's step, else the parent span's. */
  step?: number;
  /** Labels added to the ambient unit's (this span's win per key). */
  labels?: Record<string, string | number | boolean>;
  /** The parent; default: the ambient span. `null` starts a new tree. */
  parent?: Span | null;
}

export interface EndOptions {
  /** Ends the span with status `error` and this error's name and message. */
  error?: unknown;
  /** Attributes merged into the span's before it is written. */
  attributes?: Record<string, unknown>;
}

/** What a span reports back to its recorder. */
export interface SpanOwner {
  end(span: Span, endOptions: EndOptions | undefined): void;
  run<T>(span: Span, fn: () => T): T;
}

/** An error as the span's `error` text: `Name: message`, bounded. */
export function errorText(error: unknown): string {
  try {
    if (error instanceof Error) return clip(`${error.name}: ${error.message}`, 2000);
  } catch {
    // a throwing getter: described below
  }
  return describeThrown(error);
}

export class Span {
  /** @internal the recorder while open; null once ended (or inert) */ _owner: SpanOwner | null;
  /** @internal the id's block (null: `_id` was given, a keyed or inert span) */ readonly _block: IdBlock | null;
  /** @internal the id's counter in `_block` */ readonly _seq: number;
  /** @internal the id string, made on first use */ _id: string | null;
  /** @internal */ readonly _parent: Span | null;
  /** @internal the root of the tree (this span for a root) */ readonly _root: Span;
  /** @internal the unit coordinates and labels it carries */ readonly _coords: Coords | null;
  /** @internal performance.now() at start */ readonly _t0: number;
  /** @internal */ _attributes: Record<string, unknown> | null;
  /** @internal */ _error: string | null = null;
  /** @internal */ _endTime = NaN;
  /** @internal open-span list */ _prev: Span | null = null;
  /** @internal open-span list */ _next: Span | null = null;

  /** @internal use `recorder.span` / `recorder.startSpan` */
  constructor(
    owner: SpanOwner | null,
    block: IdBlock | null,
    seq: number,
    id: string | null,
    parent: Span | null,
    readonly kind: string,
    readonly name: string,
    readonly key: string | null,
    readonly step: number | null,
    /** Unix seconds. */
    readonly startTime: number,
    t0: number,
    coords: Coords | null,
    attributes: Record<string, unknown> | null,
  ) {
    this._owner = owner;
    this._block = block;
    this._seq = seq;
    this._id = id;
    this._parent = parent;
    this._root = parent === null ? this : parent._root;
    this._coords = coords;
    this._t0 = t0;
    this._attributes = attributes;
  }

  /** 16 hex characters ('' for an inert span). */
  get id(): string {
    if (this._id === null) this._id = idOf(this._block!, this._seq);
    return this._id;
  }

  get parentId(): string | null {
    return this._parent === null ? null : this._parent.id;
  }

  get rootId(): string {
    return this._root.id;
  }

  /** The unit's `sample` label, if any. */
  get sample(): string | null {
    return this._coords === null ? null : this._coords.sample;
  }

  get group(): string | null {
    return this._coords === null ? null : this._coords.group;
  }

  /** The span's labels as a JSON object, or null. */
  get labelsJson(): string | null {
    return this._coords === null ? null : this._coords.labelsJson;
  }

  /** True once ended (or when the span is inert: an inactive rank, a closed recorder). */
  get ended(): boolean {
    return this._owner === null;
  }

  /** `ok`, `error` (ended with an error) or `open` (not ended yet). */
  get status(): SpanStatus {
    if (this._owner !== null) return 'open';
    return this._error === null ? 'ok' : 'error';
  }

  /** Unix seconds, NaN while open. */
  get endTime(): number {
    return this._endTime;
  }

  /** Sets one attribute (written when the span ends). */
  setAttribute(key: string, value: unknown): this {
    if (this._owner !== null) (this._attributes ??= {})[key] = value;
    return this;
  }

  setAttributes(attributes: Record<string, unknown>): this {
    if (this._owner !== null && attributes !== null && typeof attributes === 'object') {
      this._attributes = { ...this._attributes, ...attributes };
    }
    return this;
  }

  /** Marks the span as failed with `error` (status `error` when it ends). */
  recordError(error: unknown): this {
    if (this._owner !== null) this._error = errorText(error);
    return this;
  }

  /** Ends the span. Idempotent; never throws. */
  end(options?: EndOptions): void {
    const owner = this._owner;
    if (owner !== null) owner.end(this, options);
  }

  /** Runs `fn` with this span as the ambient one (spans started inside get it as parent). */
  run<T>(fn: () => T): T {
    const owner = this._owner;
    return owner === null ? fn() : owner.run(this, fn);
  }
}

/** A span that records nothing (an inactive rank, a closed recorder, refused arguments). */
export function inertSpan(kind: string, name: string): Span {
  return new Span(null, null, 0, '', null, kind, name, null, null, Date.now() / 1000, 0, null, null);
}
