/**
 * The training-thread half of spans: ids, parents from the ambient context, the list of
 * open spans, and the encoded batch handed to the writer thread.
 *
 * Cost: starting a span reads the ambient store, draws an id and the high-resolution
 * clock; ending it reads the clock and encodes ~100 bytes into a buffer. One native call
 * hands over up to 512 spans (or whatever a 1 s timer, a flush, a close or a crash
 * finds). Nothing here throws on data: refused arguments become `bad_record` events and
 * an inert span.
 */
import { performance } from 'node:perf_hooks';

import { AmbientContext } from './ambient.js';
import type { Ambient } from './ambient.js';
import { mergeCoords } from './coords.js';
import type { Coords, RefusedCoord } from './coords.js';
import { errorText, inertSpan, Span } from './span.js';
import type { EndOptions, SpanOptions, SpanOwner } from './span.js';
import { SPAN_ERROR, SPAN_OK, SPAN_OPEN, SpanEncoder } from '../wire/span-encoder.js';
import { KeyedIds, SpanIdSource } from '../wire/span-id.js';

/** Spans per native call, and bytes: bounds the buffer and what a SIGKILL can lose. */
const PUSH_SPANS = 512;
const PUSH_BYTES = 1 << 20;
/** A quiet loop's ended spans still reach the writer within this. */
const PUSH_INTERVAL_MS = 1000;

const TIME_ORIGIN = performance.timeOrigin;

export type ReportRefused = (what: string, refused: RefusedCoord, step: number | null) => void;

function attributesJson(a: Record<string, unknown> | null): string | null {
  if (a === null) return null;
  try {
    const s = JSON.stringify(a, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    return typeof s === 'string' && s.startsWith('{') ? (s === '{}' ? null : s) : null;
  } catch (error) {
    return JSON.stringify({ unserializable: errorText(error) });
  }
}

export class SpanRecorder implements SpanOwner {
  readonly ambient = new AmbientContext();
  private readonly ids = new SpanIdSource();
  private readonly keyed: KeyedIds;
  private readonly encoder = new SpanEncoder();
  /** Open spans, most recent first (a crash writes them as `open`). */
  private head: Span | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private stopped = false;

  constructor(
    private readonly push: (bytes: Uint8Array, count: number) => void,
    runId: string,
    rank: number,
    private readonly reportRefused: ReportRefused,
  ) {
    this.keyed = new KeyedIds(runId, rank);
  }

  /** Starts a span; its parent is `options.parent`, else the ambient span. */
  start(kind: unknown, name: unknown, options: SpanOptions | undefined): Span {
    if (this.stopped) return inertSpan(String(kind), String(name));
    const ambient = this.ambient.current();
    if (typeof kind !== 'string' || kind.length === 0) {
      this.reportRefused('span', { field: 'kind', reason: 'expected a non-empty string', value: kind }, ambient?.coords?.step ?? null);
      return inertSpan(String(kind), String(name));
    }
    if (typeof name !== 'string') {
      if (typeof name === 'number' || typeof name === 'boolean') name = String(name);
      else {
        this.reportRefused('span', { field: 'name', reason: 'expected a string', value: name }, ambient?.coords?.step ?? null);
        return inertSpan(kind, String(name));
      }
    }
    if (options !== undefined) return this.startWithOptions(kind, name as string, options, ambient);
    const parent = ambient?.span ?? null;
    const coords = ambient?.coords ?? null;
    return this.open(kind, name as string, parent, coords, null, null, null);
  }

  private startWithOptions(kind: string, name: string, options: SpanOptions, ambient: Ambient | undefined): Span {
    const coords = ambient?.coords ?? null;
    const step0 = coords?.step ?? null;
    if (options === null || typeof options !== 'object') {
      this.reportRefused('span', { field: 'options', reason: 'expected an object', value: options }, step0);
      return this.open(kind, name, ambient?.span ?? null, coords, null, null, null);
    }
    let parent = ambient?.span ?? null;
    if (options.parent !== undefined) {
      if (options.parent === null || options.parent instanceof Span) parent = options.parent;
      else this.reportRefused('span', { field: 'parent', reason: 'expected a Span or null', value: options.parent }, step0);
    }
    let key: string | null = null;
    if (options.key !== undefined) {
      if (typeof options.key === 'string' || (typeof options.key === 'number' && Number.isFinite(options.key))) key = String(options.key);
      else this.reportRefused('span', { field: 'key', reason: 'expected a string or a finite number', value: options.key }, step0);
    }
    let step: number | null = null;
    if (options.step !== undefined) {
      if (typeof options.step === 'number' && Number.isSafeInteger(options.step) && options.step >= 0) step = options.step;
      else this.reportRefused('span', { field: 'step', reason: 'expected a non-negative integer', value: options.step }, step0);
    }
    let attributes: Record<string, unknown> | null = null;
    if (options.attributes !== undefined) {
      if (options.attributes !== null && typeof options.attributes === 'object' && !Array.isArray(options.attributes)) attributes = { ...options.attributes };
      else this.reportRefused('span', { field: 'attributes', reason: 'expected an object', value: options.attributes }, step0);
    }
    let own: Coords | null = null;
    if (options.labels !== undefined && (options.labels === null || typeof options.labels !== 'object' || Array.isArray(options.labels))) {
      this.reportRefused('span', { field: 'labels', reason: 'expected an object of labels', value: options.labels }, step0);
    } else if (options.labels !== undefined) {
      const refused: RefusedCoord[] = [];
      // labels on a span merge over its base labels as a unit's would
      const base = coords ?? (parent === null ? null : parent._coords);
      own = mergeCoords(base, { ...(options.labels as Record<string, string>), step: undefined }, refused);
      for (const r of refused) this.reportRefused('span', { ...r, field: `labels.${r.field}` }, step0);
    }
    return this.open(kind, name, parent, own ?? coords, key, step, attributes);
  }

  private open(
    kind: string,
    name: string,
    parent: Span | null,
    coords: Coords | null,
    key: string | null,
    step: number | null,
    attributes: Record<string, unknown> | null,
  ): Span {
    if (parent !== null && parent._id === '') parent = null; // an inert parent: a new tree
    let block = null;
    let seq = 0;
    let id: string | null = null;
    if (key === null) {
      seq = this.ids.nextSeq();
      block = this.ids.block;
    } else id = this.keyed.id(key);
    const t0 = performance.now();
    const span = new Span(
      this,
      block,
      seq,
      id,
      parent,
      kind,
      name,
      key,
      step ?? coords?.step ?? parent?.step ?? null,
      (TIME_ORIGIN + t0) / 1000,
      t0,
      coords ?? (parent === null ? null : parent._coords),
      attributes,
    );
    const head = this.head;
    if (head !== null) {
      span._next = head;
      head._prev = span;
    }
    this.head = span;
    if (this.timer === null) {
      // made outside the ambient context: a timer keeps the store it was created in alive
      this.timer = this.ambient.outside(() => setInterval(() => this.pushPending(), PUSH_INTERVAL_MS));
      this.timer.unref();
    }
    return span;
  }

  /** SpanOwner: records the end of `span`. */
  end(span: Span, options: EndOptions | undefined): void {
    const t1 = performance.now();
    span._owner = null;
    // unlink from the open list
    const prev = span._prev;
    const next = span._next;
    if (prev !== null) prev._next = next;
    else if (this.head === span) this.head = next;
    if (next !== null) next._prev = prev;
    span._prev = span._next = null;
    span._endTime = span.startTime + (t1 - span._t0) / 1000;
    if (this.stopped) return;
    if (options !== undefined && options !== null) {
      if (options.error !== undefined) span._error = errorText(options.error);
      if (options.attributes !== null && typeof options.attributes === 'object') span._attributes = { ...span._attributes, ...options.attributes };
    }
    const error = span._error;
    try {
      this.encoder.add(span, span._endTime, error === null ? SPAN_OK : SPAN_ERROR, error, attributesJson(span._attributes));
    } catch (e) {
      // the encoder rolled back: this span is lost, said so, and end() still returns
      this.reportRefused('span', { field: 'span', reason: `could not be encoded: ${errorText(e)}`, value: span.name }, span.step);
      return;
    }
    if (this.encoder.count >= PUSH_SPANS || this.encoder.bytes >= PUSH_BYTES) this.pushPending();
  }

  /** SpanOwner: runs `fn` with `span` ambient, keeping the unit. */
  run<T>(span: Span, fn: () => T): T {
    return this.ambient.run({ span, coords: span._coords ?? this.ambient.current()?.coords ?? null }, fn);
  }

  /** Hands the encoded spans to the writer. Never throws. */
  pushPending(): void {
    if (this.encoder.count === 0) return;
    const { bytes, count } = this.encoder.take();
    try {
      this.push(bytes, count);
    } catch {
      // a closed native recorder: nothing left to write to
    }
  }

  /**
   * Writes every open span as `open` (no end time), then pushes: a flush, a crash or a
   * close shows the rollouts in flight. A span that ends later is written again, and
   * readers keep that last write.
   */
  writeOpen(): void {
    for (let s = this.head; s !== null; s = s._next) {
      try {
        this.encoder.add(s, NaN, SPAN_OPEN, s._error, attributesJson(s._attributes));
      } catch {
        // rolled back; never throws from a flush or crash path
      }
    }
    this.pushPending();
  }

  /** Close: open spans are written as `open`; later ends are ignored. */
  stop(): void {
    if (this.stopped) return;
    this.writeOpen();
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
