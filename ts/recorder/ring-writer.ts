/**
 * The JS side of the step queue: writes records straight into the ring memory the native
 * writer thread consumes, and publishes them with `Atomics.store`. No native call per
 * record. Mirrors the layout and protocol of crates/rlprobe-core/src/ring.rs: u32 cursors
 * that wrap, records `[len, payload…]` always contiguous, `-1` meaning "skip to the start".
 */

const HEADER_WORDS = 32;
// indexes into the Int32Array view (2 per u64 word; the low half holds the u32)
const I32_TAIL_SLOT = 0;
const I32_TAIL_RECORDS = 2;
const I32_HEAD_SLOT = 32;
const I32_HEAD_RECORDS = 34;
// indexes into the Float64Array view
const F64_LOGGED = 2;
const F64_DROPPED = 3;
export const F64_MAGIC = 4;
const F64_NOW = 5;
const WRAP = -1;

export class RingWriter {
  /** The whole block (header + slots); record offsets index into it. */
  readonly f64: Float64Array;
  private readonly i32: Int32Array;
  private readonly capacity: number;
  private readonly mask: number;
  private readonly maxRecords: number;
  private tail: number;
  private records: number;
  private seenHead: number;
  private seenPopped: number;

  constructor(memory: Float64Array, maxRecords: number) {
    this.f64 = memory;
    this.i32 = new Int32Array(memory.buffer, memory.byteOffset, memory.length * 2);
    this.capacity = memory.length - HEADER_WORDS;
    this.mask = this.capacity - 1;
    this.maxRecords = maxRecords;
    this.tail = Atomics.load(this.i32, I32_TAIL_SLOT) >>> 0;
    this.records = Atomics.load(this.i32, I32_TAIL_RECORDS) >>> 0;
    this.seenHead = Atomics.load(this.i32, I32_HEAD_SLOT) >>> 0;
    this.seenPopped = Atomics.load(this.i32, I32_HEAD_RECORDS) >>> 0;
  }

  private fits(skip: number, maxLen: number): boolean {
    return (
      ((this.records - this.seenPopped) >>> 0) < this.maxRecords &&
      ((this.tail - this.seenHead) >>> 0) + skip + maxLen + 1 <= this.capacity
    );
  }

  /**
   * Where a record of at most `maxLen` slots can be written (its length slot; the payload
   * follows), or -1 when the queue is full. Reads the consumer's cursors only when the
   * cached ones say full.
   */
  reserve(maxLen: number): number {
    if (maxLen + 1 > this.capacity) return -1;
    const roomToEnd = this.capacity - (this.tail & this.mask);
    const skip = roomToEnd < maxLen + 1 ? roomToEnd : 0;
    if (!this.fits(skip, maxLen)) {
      this.seenHead = Atomics.load(this.i32, I32_HEAD_SLOT) >>> 0;
      this.seenPopped = Atomics.load(this.i32, I32_HEAD_RECORDS) >>> 0;
      if (!this.fits(skip, maxLen)) return -1;
    }
    if (skip > 0) {
      // published together with the next record
      this.f64[HEADER_WORDS + (this.tail & this.mask)] = WRAP;
      this.tail = (this.tail + skip) >>> 0;
    }
    return HEADER_WORDS + (this.tail & this.mask);
  }

  /** Publishes the record written at `offset` (from `reserve`) with `len` payload slots. */
  commit(offset: number, len: number): void {
    this.f64[offset] = len;
    this.tail = (this.tail + 1 + len) >>> 0;
    this.records = (this.records + 1) >>> 0;
    // The record count orders nothing (it bounds the queue and tells the writer there is
    // more to drain; a count ahead of the tail only sends it round once more): a plain store,
    // before the release below. `Atomics.store` is a builtin call here, 0.5–1 µs when cold.
    this.i32[I32_TAIL_RECORDS] = this.records | 0;
    // the release the writer thread's Acquire load pairs with: payload first, then the
    // cursor. On a non-shared buffer that order is V8's (xchg / stlr), not the spec's:
    // docs/architecture.md, "Why the ring's publication is ordered"
    Atomics.store(this.i32, I32_TAIL_SLOT, this.tail | 0);
  }

  /** The wall clock (Unix seconds) the writer thread publishes every tick (10 ms). */
  now(): number {
    return this.f64[F64_NOW];
  }

  countLogged(): void {
    this.f64[F64_LOGGED] += 1;
  }

  /** Counts a record the full queue refused: logged, and dropped. */
  countDropped(): void {
    this.f64[F64_LOGGED] += 1;
    this.f64[F64_DROPPED] += 1;
  }
}
