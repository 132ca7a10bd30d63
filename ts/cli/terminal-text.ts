/**
 * The CLI's side of control-character escaping (ts/text/control-chars.ts): a stream that
 * escapes everything a command writes, and the two escapes re-exported for the commands.
 */
import type { Writable } from 'node:stream';

import { terminalText } from '../text/control-chars.js';

export { terminalLine, terminalText } from '../text/control-chars.js';

/**
 * `stream` with every string written through `terminalText`: the last line of defence for
 * text a command prints whole (diff, doctor, Markdown) or a field a command forgot. A
 * proxy, so `isTTY`, `columns` and events are the stream's own.
 */
export function escapingStream<S extends Writable>(stream: S): S {
  const write = (chunk: unknown, ...rest: unknown[]) =>
    (stream.write as (...args: unknown[]) => boolean)(typeof chunk === 'string' ? terminalText(chunk) : Buffer.isBuffer(chunk) ? terminalText(chunk.toString('utf8')) : chunk, ...rest);
  return new Proxy(stream, {
    get(target, key) {
      if (key === 'write') return write;
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
