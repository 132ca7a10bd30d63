/**
 * Span ids: 16 lower-case hex characters (64 bits, as OpenTelemetry's).
 *
 * - Unique ids are a random 40-bit block prefix and a 24-bit counter; a fresh random
 *   block is drawn every 16,777,216 spans. Two recorders (or a resumed run) collide only
 *   if they draw the same 40-bit block. The hot path never builds the id string: a span
 *   keeps its block and counter, the encoder writes the bytes, and `span.id` makes the
 *   string on first use.
 * - Keyed ids are FNV-1a 64 of the UTF-8 bytes of `<run_id>\0<key>`: the same run and key
 *   give the same id, so re-recording a keyed span upserts it (readers keep the last
 *   write). FNV-1a is not a cryptographic hash; a key is a name, not a secret.
 */
import { randomBytes } from 'node:crypto';

const BLOCK = 0x1000000;
const HEX = '0123456789abcdef';
/** Character codes of the hex digits. */
export const HEX_CODES = Uint8Array.from(HEX, (c) => c.charCodeAt(0));

/** A block of 2^24 unique ids sharing a random 10-hex-digit prefix. */
export interface IdBlock {
  readonly prefix: string;
  /** `prefix` as ASCII bytes, for the encoder. */
  readonly prefixBytes: Uint8Array;
}

/** The id string of counter `seq` in `block`. */
export function idOf(block: IdBlock, seq: number): string {
  // BLOCK + seq has 7 hex digits: drop the leading 1 to pad the counter to 6
  return block.prefix + (BLOCK + seq).toString(16).slice(1);
}

export class SpanIdSource {
  block: IdBlock = SpanIdSource.newBlock();
  private next = 0;

  private static newBlock(): IdBlock {
    const prefix = randomBytes(5).toString('hex');
    return { prefix, prefixBytes: Uint8Array.from(prefix, (c) => c.charCodeAt(0)) };
  }

  /** The next counter value in `this.block` (read `block` after calling). */
  nextSeq(): number {
    if (this.next === BLOCK) {
      this.block = SpanIdSource.newBlock();
      this.next = 0;
    }
    return this.next++;
  }

  /** A new unique id as a string. */
  nextId(): string {
    const seq = this.nextSeq();
    return idOf(this.block, seq);
  }
}

const utf8 = new TextEncoder();

/** FNV-1a 64 state as four 16-bit limbs, low first. */
type Fnv = [number, number, number, number];

/** Folds the first `n` bytes of `bytes` into the state. */
function fnv(h: Fnv, bytes: Uint8Array, n: number): void {
  let [h0, h1, h2, h3] = h;
  for (let i = 0; i < n; i++) {
    h0 ^= bytes[i];
    // h * 0x100000001b3 = h * 0x1b3 + (h << 40), modulo 2^64
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3;
    const t2 = h2 * 0x1b3 + (h0 << 8);
    const t3 = h3 * 0x1b3 + (h1 << 8);
    const c1 = t1 + (t0 >>> 16);
    const c2 = t2 + (c1 >>> 16);
    h0 = t0 & 0xffff;
    h1 = c1 & 0xffff;
    h2 = c2 & 0xffff;
    h3 = (t3 + (c2 >>> 16)) & 0xffff;
  }
  h[0] = h0;
  h[1] = h1;
  h[2] = h2;
  h[3] = h3;
}

/** Reused for ASCII keys: their char codes are their UTF-8 bytes. */
let scratch = new Uint8Array(256);

function fnvUtf8(h: Fnv, s: string): void {
  const n = s.length;
  if (scratch.length < n) scratch = new Uint8Array(Math.max(n, 2 * scratch.length));
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) {
      const bytes = utf8.encode(s);
      fnv(h, bytes, bytes.length);
      return;
    }
    scratch[i] = c;
  }
  fnv(h, scratch, n);
}

function hexOf(h: Fnv): string {
  const hex = (x: number) => (0x10000 + x).toString(16).slice(1);
  return hex(h[3]) + hex(h[2]) + hex(h[1]) + hex(h[0]);
}

/**
 * The keyed span id: FNV-1a 64 of the UTF-8 bytes of `<runId>\0<key>` on rank 0, and of
 * `<runId>\0rank-<rank>\0<key>` on another rank (ranks share the run id and often reuse
 * keys such as a local rollout index; their spans must stay apart), in hex.
 */
export function keyedSpanId(runId: string, key: string, rank = 0): string {
  return new KeyedIds(runId, rank).id(key);
}

/** Keyed ids of one run and rank: the prefix is hashed once, then only each key's bytes. */
export class KeyedIds {
  private readonly base: Fnv = [0x2325, 0x8422, 0x9ce4, 0xcbf2]; // offset basis 0xcbf29ce484222325
  private readonly h: Fnv = [0, 0, 0, 0];

  constructor(runId: string, rank = 0) {
    fnvUtf8(this.base, rank === 0 ? `${runId}\u0000` : `${runId}\u0000rank-${rank}\u0000`);
  }

  id(key: string): string {
    const h = this.h;
    h[0] = this.base[0];
    h[1] = this.base[1];
    h[2] = this.base[2];
    h[3] = this.base[3];
    fnvUtf8(h, key);
    return hexOf(h);
  }
}
