/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing,
 * and TFRecord's masking of it. Node's zlib has only the IEEE CRC-32. Slicing by 8: event
 * files of long runs are tens of megabytes, and every byte is checked.
 */

const POLY = 0x82f63b78;
/** TABLES[k][b]: the CRC of byte b followed by k zero bytes. */
const TABLES: Uint32Array[] = buildTables();

function buildTables(): Uint32Array[] {
  const tables = Array.from({ length: 8 }, () => new Uint32Array(256));
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    tables[0][b] = c >>> 0;
  }
  for (let b = 0; b < 256; b++) {
    for (let k = 1; k < 8; k++) tables[k][b] = (tables[k - 1][b] >>> 8) ^ tables[0][tables[k - 1][b] & 0xff];
  }
  return tables;
}

/** The CRC-32C of `bytes`. */
export function crc32c(bytes: Uint8Array): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES;
  let crc = 0xffffffff;
  let i = 0;
  const end8 = bytes.length - (bytes.length % 8);
  for (; i < end8; i += 8) {
    const lo = crc ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    crc =
      t7[lo & 0xff] ^ t6[(lo >>> 8) & 0xff] ^ t5[(lo >>> 16) & 0xff] ^ t4[lo >>> 24] ^
      t3[bytes[i + 4]] ^ t2[bytes[i + 5]] ^ t1[bytes[i + 6]] ^ t0[bytes[i + 7]];
  }
  for (; i < bytes.length; i++) crc = t0[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord stores its CRCs masked (rotated, plus a constant): a CRC of CRC'd data is not trivially valid. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}
