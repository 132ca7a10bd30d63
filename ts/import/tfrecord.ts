/**
 * TFRecord framing, the container of TensorBoard event files. Each record is
 *
 *   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
 *
 * Both checksums are verified. A record cut short by the end of the file is what a writer
 * that crashed (or is still writing) leaves: reading stops there and the tear is returned,
 * for the caller to report. A checksum that does not match is damage: an error naming the
 * file and the byte offset of the record.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readSync } from 'node:fs';

import { RlprobeError } from '../errors.js';
import { openSource, readError } from './read-error.js';
import { maskedCrc32c } from './tfrecord-crc32c.js';

const HEADER_BYTES = 12;
const FOOTER_BYTES = 4;
const READ_CHUNK = 1 << 20;

/** Where a file's last record stops short. */
export interface TfRecordTear {
  /** Byte offset of the torn record. */
  offset: number;
  /** Bytes of it in the file. */
  have: number;
  /** Bytes a whole record needs; null when its header is incomplete (the length is unknown). */
  need: number | null;
  /** `cut`: the file ends inside the record; `zeros`: only zero bytes follow (data that never reached the disk). */
  kind: 'cut' | 'zeros';
}

export interface TfRecordFile {
  /** Hex SHA-256 of the file's bytes. */
  sha256: string;
  bytes: number;
  /** Whole records read. */
  records: number;
  tear: TfRecordTear | null;
}


function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

/** Sequential reads of a file opened read-only, every byte read hashed once. */
class SequentialFile {
  private buf = Buffer.allocUnsafe(READ_CHUNK);
  /** Valid bytes in buf, and the read position in it. */
  private len = 0;
  private pos = 0;
  private readonly hash = createHash('sha256');
  /** File offset of buf[pos]. */
  offset = 0;

  constructor(
    private readonly fd: number,
    private readonly file: string,
  ) {}

  /** Makes `n` bytes available at the read position; false when the file ends first. */
  fill(n: number): boolean {
    if (this.len - this.pos >= n) return true;
    const rest = this.len - this.pos;
    if (n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(n, 2 * this.buf.length));
      this.buf.copy(bigger, 0, this.pos, this.len);
      this.buf = bigger;
    } else {
      this.buf.copy(this.buf, 0, this.pos, this.len);
    }
    this.len = rest;
    this.pos = 0;
    while (this.len < n) {
      let got: number;
      try {
        got = readSync(this.fd, this.buf, this.len, this.buf.length - this.len, null);
      } catch (error) {
        throw readError(this.file, error);
      }
      if (got === 0) return false;
      this.hash.update(this.buf.subarray(this.len, this.len + got));
      this.len += got;
    }
    return true;
  }

  /** The `n` bytes at the read position (valid until the next fill). */
  peek(n: number): Buffer {
    return this.buf.subarray(this.pos, this.pos + n);
  }

  skip(n: number): void {
    this.pos += n;
    this.offset += n;
  }

  /** Bytes buffered but not yet taken. */
  get buffered(): number {
    return this.len - this.pos;
  }

  /** Whether every byte from the read position to the end of the file is zero. */
  restIsZeros(): boolean {
    for (;;) {
      for (let i = this.pos; i < this.len; i++) if (this.buf[i] !== 0) return false;
      this.offset += this.len - this.pos;
      this.pos = this.len;
      if (!this.fill(1)) return true;
    }
  }

  /** Reads (and hashes) to the end of the file; returns the hex SHA-256 of all its bytes. */
  finish(): string {
    this.pos = this.len;
    while (this.fill(this.buf.length)) this.pos = this.len;
    return this.hash.digest('hex');
  }
}

/**
 * Calls `onRecord` with the data of each whole record of `file` and its byte offset, in file
 * order. Throws RlprobeError on a checksum mismatch (naming the file and offset) or a read error.
 */
export function readTfRecords(file: string, onRecord: (data: Buffer, offset: number) => void): TfRecordFile {
  const fd = openSource(file);
  try {
    const size = fstatSync(fd).size;
    const input = new SequentialFile(fd, file);
    let records = 0;
    let tear: TfRecordTear | null = null;
    while (input.fill(1)) {
      const offset = input.offset;
      if (!input.fill(HEADER_BYTES)) {
        tear = { offset, have: input.buffered, need: null, kind: 'cut' };
        break;
      }
      const header = input.peek(HEADER_BYTES);
      const stored = header.readUInt32LE(8);
      const computed = maskedCrc32c(header.subarray(0, 8));
      if (stored !== computed) {
        const have = size - offset;
        if (input.restIsZeros()) {
          tear = { offset, have, need: null, kind: 'zeros' };
          break;
        }
        const what = offset === 0 ? 'not a TFRecord file (a TensorBoard event file starts with a record header)' : 'the file is damaged here';
        throw new RlprobeError(
          'RLPROBE_IMPORT_FAILED',
          `${file}: byte ${offset}: record length checksum mismatch (stored ${hex(stored)}, computed ${hex(computed)}): ${what}`,
        );
      }
      const length = header.readBigUInt64LE(0);
      const need = BigInt(HEADER_BYTES + FOOTER_BYTES) + length;
      const n = Number(length);
      if (BigInt(offset) + need > BigInt(size)) {
        tear = { offset, have: size - offset, need: Number(need), kind: 'cut' };
        break;
      }
      // the file was cut while being read
      if (!input.fill(HEADER_BYTES + n + FOOTER_BYTES)) {
        tear = { offset, have: input.buffered, need: Number(need), kind: 'cut' };
        break;
      }
      const framed = input.peek(HEADER_BYTES + n + FOOTER_BYTES);
      const data = framed.subarray(HEADER_BYTES, HEADER_BYTES + n);
      const storedData = framed.readUInt32LE(HEADER_BYTES + n);
      const computedData = maskedCrc32c(data);
      if (storedData !== computedData) {
        // the last record's header reached the disk and its data did not (the file was
        // extended with zeros): a tear, as a zero-filled tail after a whole record is
        const zerosFrom = offset + HEADER_BYTES + zeroTailStart(framed.subarray(HEADER_BYTES));
        if (offset + Number(need) === size && zerosFrom <= offset + HEADER_BYTES + n) {
          tear = { offset: zerosFrom, have: size - zerosFrom, need: null, kind: 'zeros' };
          break;
        }
        throw new RlprobeError(
          'RLPROBE_IMPORT_FAILED',
          `${file}: byte ${offset}: record data checksum mismatch (${n} bytes of data; stored ${hex(storedData)}, computed ${hex(computedData)}): the file is damaged here`,
        );
      }
      onRecord(data, offset);
      records++;
      input.skip(HEADER_BYTES + n + FOOTER_BYTES);
    }
    return { sha256: input.finish(), bytes: size, records, tear };
  } finally {
    closeSync(fd);
  }
}

/** Where the run of zero bytes that ends `bytes` starts (bytes.length: none). */
function zeroTailStart(bytes: Buffer): number {
  let i = bytes.length;
  while (i > 0 && bytes[i - 1] === 0) i--;
  return i;
}
