/**
 * A byte buffer with room for `need` more bytes after the first `used`: the same one when
 * it has room, else one twice as large (or more) holding the used bytes. The wire encoders
 * (samples, spans) grow their buffers this way.
 */
export function grown(buf: Uint8Array<ArrayBuffer>, used: number, need: number): Uint8Array<ArrayBuffer> {
  if (used + need <= buf.length) return buf;
  let size = buf.length * 2;
  while (size < used + need) size *= 2;
  const next = new Uint8Array(size);
  next.set(buf.subarray(0, used));
  return next;
}
