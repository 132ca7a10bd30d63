/**
 * Encodes ended (or still open) spans into the wire form the Rust writer decodes
 * (crates/rlprobe-core/src/spans/wire.rs has the grammar). Spans accumulate in one
 * growing buffer; the recorder hands it over in one native call per batch, trial capture
 * writes its rows with it too.
 */
import { grown } from './grow-bytes.js';
import { HEX_CODES } from './span-id.js';
import type { IdBlock } from './span-id.js';

const MAGIC = 0x314e5053;
const NULL_LEN = 0xffffffff;

/** Wire status codes. */
export const SPAN_OK = 0;
export const SPAN_ERROR = 1;
export const SPAN_OPEN = 2;

const utf8 = new TextEncoder();

/**
 * What the encoder reads of a recorder's span handle (recorder/span.ts): its id as a block
 * and counter, so the hot path never builds the id string. Declared here, not imported, so
 * that trial capture can use the encoder without depending on the recorder.
 */
export interface EncodableSpan {
  readonly _block: IdBlock | null;
  readonly _seq: number;
  readonly _id: string | null;
  readonly id: string;
  readonly _parent: EncodableSpan | null;
  readonly _root: EncodableSpan;
  readonly kind: string;
  readonly name: string;
  readonly key: string | null;
  readonly step: number | null;
  readonly startTime: number;
  readonly _coords: { readonly sample: string | null; readonly group: string | null; readonly labelsJson: string | null } | null;
}

/** One span as plain values, for `SpanEncoder.addRow`. Times are Unix seconds. */
export interface SpanRowInput {
  spanId: string;
  parentId: string | null;
  rootId: string;
  kind: string;
  name: string;
  key: string | null;
  step: number | null;
  startTime: number;
  /** Null while open. */
  endTime: number | null;
  /** SPAN_OK, SPAN_ERROR or SPAN_OPEN. */
  status: number;
  error: string | null;
  sampleId: string | null;
  groupId: string | null;
  labelsJson: string | null;
  attributesJson: string | null;
}

export class SpanEncoder {
  private buf = new Uint8Array(64 * 1024);
  private view = new DataView(this.buf.buffer);
  private at = 8;
  /** Spans encoded since the last `take`. */
  count = 0;

  get bytes(): number {
    return this.at;
  }

  /** Appends one span; on a throw (an allocation failure) the buffer is as it was before. */
  add(s: EncodableSpan, endTime: number, status: number, error: string | null, attributesJson: string | null): void {
    const at = this.at;
    try {
      this.encode(s, endTime, status, error, attributesJson);
    } catch (e) {
      this.at = at;
      throw e;
    }
    this.count++;
  }

  private encode(s: EncodableSpan, endTime: number, status: number, error: string | null, attributesJson: string | null): void {
    this.id(s);
    if (s._parent === null) this.str(null);
    else this.id(s._parent);
    this.id(s._root);
    this.str(s.kind);
    this.str(s.name);
    this.str(s.key);
    this.fixed(s.step ?? NaN, s.startTime, endTime, status);
    this.str(error);
    const c = s._coords;
    if (c === null) {
      this.str(null);
      this.str(null);
      this.str(null);
    } else {
      this.str(c.sample);
      this.str(c.group);
      this.str(c.labelsJson);
    }
    this.str(attributesJson);
  }

  /** The fixed-width middle of a span: step, start, end (NaN: none / open), status. */
  private fixed(step: number, start: number, end: number, status: number): void {
    this.reserve(25);
    this.view.setFloat64(this.at, step, true);
    this.view.setFloat64(this.at + 8, start, true);
    this.view.setFloat64(this.at + 16, end, true);
    this.buf[this.at + 24] = status;
    this.at += 25;
  }

  /** Appends a span given as plain values (a captured trial's), not a recorder's handle. */
  addRow(r: SpanRowInput): void {
    const at = this.at;
    try {
      this.str(r.spanId);
      this.str(r.parentId);
      this.str(r.rootId);
      this.str(r.kind);
      this.str(r.name);
      this.str(r.key);
      this.fixed(r.step ?? NaN, r.startTime, r.endTime ?? NaN, r.status);
      this.str(r.error);
      this.str(r.sampleId);
      this.str(r.groupId);
      this.str(r.labelsJson);
      this.str(r.attributesJson);
    } catch (e) {
      this.at = at;
      throw e;
    }
    this.count++;
  }

  /** A span's id: from its block's prefix bytes and its counter, without making the string. */
  private id(s: EncodableSpan): void {
    const block = s._block;
    if (block === null || s._id !== null) {
      this.str(s.id);
      return;
    }
    this.reserve(20);
    const buf = this.buf;
    this.view.setUint32(this.at, 16, true);
    buf.set(block.prefixBytes, this.at + 4);
    let at = this.at + 14;
    const seq = s._seq;
    for (let shift = 20; shift >= 0; shift -= 4) buf[at++] = HEX_CODES[(seq >>> shift) & 15];
    this.at = at;
  }

  /** The encoded batch (valid until the next `add`), and resets for the next one. */
  take(): { bytes: Uint8Array; count: number } {
    this.view.setUint32(0, MAGIC, true);
    this.view.setUint32(4, this.count, true);
    const out = { bytes: this.buf.subarray(0, this.at), count: this.count };
    this.at = 8;
    this.count = 0;
    return out;
  }

  /** Length-prefixed UTF-8; ASCII (ids, kinds, most names) is copied by hand, cheaper than encodeInto for short strings. */
  private str(s: string | null): void {
    if (s === null) {
      this.reserve(4);
      this.view.setUint32(this.at, NULL_LEN, true);
      this.at += 4;
      return;
    }
    const n = s.length;
    this.reserve(4 + 3 * n);
    const buf = this.buf;
    const start = this.at + 4;
    let at = start;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      buf[at++] = c;
    }
    if (i < n) at += utf8.encodeInto(s.slice(i), buf.subarray(at)).written;
    this.view.setUint32(this.at, at - start, true);
    this.at = at;
  }

  private reserve(n: number): void {
    if (this.at + n <= this.buf.length) return;
    this.buf = grown(this.buf, this.at, n);
    this.view = new DataView(this.buf.buffer);
  }

}
