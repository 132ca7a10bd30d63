/**
 * Encodes the samples `logSamples` keeps into the wire form the Rust writer decodes
 * (crates/rlprobe-core/src/samples/wire.rs has the grammar). Every value is written by
 * its JS type; judging it is the writer thread's job, so this side never throws on data:
 * a value it cannot represent (a function, a symbol, a nested object, a getter that
 * throws) is written as OTHER with a description, and the writer refuses that sample with
 * a `bad_record` event.
 */
import { grown } from '../wire/grow-bytes.js';
import { describeThrown, describeValue } from './describe-value.js';

/** The ambient span and unit a `logSamples` call was made in (recorder.ts). */
export interface SampleContext {
  spanId: string | null;
  labelsJson: string | null;
  step: number | null;
  sample: string | null;
  group: string | null;
}

const MAGIC = 0x31504d53;
const TAG_NULL = 0;
const TAG_NUMBER = 1;
const TAG_STRING = 2;
const TAG_BOOL = 3;
const TAG_NUMBERS = 4;
const TAG_OBJECT = 5;
const TAG_OTHER = 6;

/** Keys longer than this are cut (the wire stores key lengths in 16 bits). */
const MAX_KEY_BYTES = 1024;
/** Fields per sample and entries per dict beyond this are cut (16-bit counts). */
const MAX_FIELDS = 65_535;

const utf8 = new TextEncoder();

export class SampleEncoder {
  private buf = new Uint8Array(64 * 1024);
  private view = new DataView(this.buf.buffer);
  private at = 0;
  private readonly keyCache = new Map<string, Uint8Array>();

  /**
   * Encodes `samples[picks[2k]]` with reason code `picks[2k + 1]` for every k; returns a
   * view of the encoded bytes (valid until the next call).
   */
  encode(
    samples: ArrayLike<unknown>,
    picks: ArrayLike<number>,
    callStep: number | undefined,
    context: SampleContext | null = null,
    single = false,
  ): Uint8Array {
    this.at = 0;
    this.u32(MAGIC);
    this.f64(typeof callStep === 'number' ? callStep : NaN);
    const count = picks.length >> 1;
    this.u32(count);
    for (let k = 0; k < count; k++) {
      const index = picks[2 * k];
      const start = this.at;
      try {
        this.sample(samples[index], index, picks[2 * k + 1], context, single);
      } catch (error) {
        // a getter or proxy trap threw mid-sample: replace what was written by a marker
        this.at = start;
        this.u32(index);
        this.u8(picks[2 * k + 1]);
        this.u16(1);
        this.other('record', `reading the sample threw: ${describeThrown(error)}`);
      }
    }
    return this.buf.subarray(0, this.at);
  }

  private sample(s: unknown, index: number, reason: number, context: SampleContext | null, single: boolean): void {
    this.u32(index);
    this.u8(reason);
    if (s === null || typeof s !== 'object' || Array.isArray(s)) {
      this.u16(1);
      const d = describeValue(s);
      this.other('record', `expected a sample object, got ${d.type} ${d.preview}`);
      return;
    }
    const countAt = this.at;
    this.u16(0);
    // the ambient context first: the sample's own fields come later and win
    let fields = context === null ? 0 : this.contextFields(context, single);
    for (const key in s) {
      if (fields === MAX_FIELDS) break;
      this.value(key, (s as Record<string, unknown>)[key], true);
      fields++;
    }
    this.view.setUint16(countAt, fields, true);
  }

  private contextFields(c: SampleContext, single: boolean): number {
    let n = 0;
    if (c.spanId !== null) {
      this.key(TAG_STRING, 'span_id');
      this.str(c.spanId);
      n++;
    }
    if (c.labelsJson !== null) {
      this.key(TAG_STRING, 'labels');
      this.str(c.labelsJson);
      n++;
    }
    if (c.group !== null) {
      this.key(TAG_STRING, 'group_id');
      this.str(c.group);
      n++;
    }
    if (c.sample !== null && single) {
      this.key(TAG_STRING, 'sample_id');
      this.str(c.sample);
      n++;
    }
    return n;
  }

  private value(key: string, v: unknown, top: boolean): void {
    switch (typeof v) {
      case 'number':
        this.key(TAG_NUMBER, key);
        this.f64(v);
        return;
      case 'string':
        this.key(TAG_STRING, key);
        this.str(v);
        return;
      case 'boolean':
        this.key(TAG_BOOL, key);
        this.u8(v ? 1 : 0);
        return;
      case 'undefined':
        this.key(TAG_NULL, key);
        return;
      case 'object':
        if (v === null) {
          this.key(TAG_NULL, key);
          return;
        }
        if (top && (Array.isArray(v) || ArrayBuffer.isView(v))) {
          this.numbers(key, v as ArrayLike<unknown>);
          return;
        }
        if (top && !Array.isArray(v)) {
          this.object(key, v as Record<string, unknown>);
          return;
        }
        break;
      default:
        break;
    }
    const d = describeValue(v);
    this.other(key, `${d.type}: ${d.preview}`);
  }

  private numbers(key: string, xs: ArrayLike<unknown>): void {
    const n = xs.length;
    for (let i = 0; i < n; i++) {
      const x = xs[i];
      if (typeof x !== 'number') {
        const d = describeValue(x);
        this.other(key, `array with a non-number at [${i}]: ${d.type} ${d.preview}`);
        return;
      }
    }
    this.key(TAG_NUMBERS, key);
    this.u32(n);
    this.reserve(8 * n);
    for (let i = 0; i < n; i++) this.f64(xs[i] as number);
  }

  private object(key: string, o: Record<string, unknown>): void {
    this.key(TAG_OBJECT, key);
    const countAt = this.at;
    this.u16(0);
    let n = 0;
    for (const k in o) {
      if (n === MAX_FIELDS) break;
      this.value(k, o[k], false);
      n++;
    }
    this.view.setUint16(countAt, n, true);
  }

  private other(key: string, description: string): void {
    this.key(TAG_OTHER, key);
    this.str(description.length > 300 ? `${description.slice(0, 300)}…` : description);
  }

  private key(tag: number, key: string): void {
    let bytes = this.keyCache.get(key);
    if (bytes === undefined) {
      bytes = utf8.encode(key);
      if (bytes.length > MAX_KEY_BYTES) {
        // cut on a character boundary: a split UTF-8 sequence would void the whole call
        let cut = MAX_KEY_BYTES;
        while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut--;
        bytes = bytes.subarray(0, cut);
      }
      if (this.keyCache.size < 4096) this.keyCache.set(key, bytes);
    }
    this.reserve(3 + bytes.length);
    this.buf[this.at++] = tag;
    this.view.setUint16(this.at, bytes.length, true);
    this.at += 2;
    this.buf.set(bytes, this.at);
    this.at += bytes.length;
  }

  private str(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit
    this.reserve(4 + 3 * s.length);
    const lenAt = this.at;
    this.at += 4;
    const { written } = utf8.encodeInto(s, this.buf.subarray(this.at));
    this.view.setUint32(lenAt, written, true);
    this.at += written;
  }

  private u8(x: number): void {
    this.reserve(1);
    this.buf[this.at++] = x;
  }

  private u16(x: number): void {
    this.reserve(2);
    this.view.setUint16(this.at, x, true);
    this.at += 2;
  }

  private u32(x: number): void {
    this.reserve(4);
    this.view.setUint32(this.at, x, true);
    this.at += 4;
  }

  private f64(x: number): void {
    this.reserve(8);
    this.view.setFloat64(this.at, x, true);
    this.at += 8;
  }

  private reserve(n: number): void {
    if (this.at + n <= this.buf.length) return;
    this.buf = grown(this.buf, this.at, n);
    this.view = new DataView(this.buf.buffer);
  }

}
