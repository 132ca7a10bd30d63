import { closeSync, fstatSync, readSync } from 'node:fs';

import type { RunEvent } from '../schema/event.js';
import { parseRunEvent } from '../schema/event-check.js';
import { openRegularFile } from '../files/regular-file.js';

export interface EventsRead {
  events: RunEvent[];
  /** Lines that were not a valid event (a torn last line after a crash, garbage). */
  skippedLines: number;
}

/** Skipped lines, counted as a stream is read. */
export interface EventsDiagnostics {
  skippedLines: number;
}

export interface EventsFileOptions {
  migrate?: (raw: Record<string, unknown>) => Record<string, unknown>;
  /** Bytes read at a time (tests use tiny ones to cross every boundary). */
  chunkBytes?: number;
  /** Skipped lines are added here as the stream goes. */
  diagnostics?: EventsDiagnostics;
}

/** Bytes read at a time: the memory a read holds beyond the events it keeps. */
export const EVENTS_CHUNK_BYTES = 1 << 20;
/**
 * Longest line read as an event. The recorder writes lines of a few KiB (limits.ts); a
 * longer line is garbage or a foreign writer's and is skipped (counted) without being
 * decoded, so a damaged file cannot make the reader hold a huge string.
 */
export const MAX_EVENT_LINE_BYTES = 16 << 20;

const NEWLINE = 0x0a;

/**
 * The lines of a file, read `chunkBytes` at a time: never the whole file in memory, so a
 * file larger than V8's longest string reads like a small one. Splitting on the byte 0x0A
 * is safe in UTF-8 (it never occurs inside a multi-byte character). A line over
 * `MAX_EVENT_LINE_BYTES` is yielded as null (its bytes are dropped as they are read).
 * Yields nothing for a file that does not exist; anything but a regular file throws
 * RLPROBE_IO naming it.
 */
export function* fileLines(file: string, chunkBytes = EVENTS_CHUNK_BYTES): Generator<string | null> {
  // a FIFO or /dev/zero in its place must not hang the reader: regular files only
  const fd = openRegularFile(file, 'RLPROBE_IO', 'move it out of the run directory to read the rest (the run has no readable events then)');
  if (fd === null) return;
  try {
    const chunk = Buffer.allocUnsafe(Math.max(1, chunkBytes));
    // the start of a line that continues into the next chunk
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let overlong = false;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      const bytes = n === chunk.length ? chunk : chunk.subarray(0, n);
      let start = 0;
      for (;;) {
        const nl = bytes.indexOf(NEWLINE, start);
        const end = nl < 0 ? n : nl;
        if (!overlong && pendingBytes + (end - start) > MAX_EVENT_LINE_BYTES) {
          overlong = true;
          pending = [];
          pendingBytes = 0;
        }
        if (nl < 0) {
          // copied: the chunk buffer is reused by the next read
          if (!overlong) {
            pending.push(Buffer.from(bytes.subarray(start, end)));
            pendingBytes += end - start;
          }
          break;
        }
        if (overlong) yield null;
        else if (pending.length === 0) yield bytes.toString('utf8', start, end);
        else yield Buffer.concat([...pending, bytes.subarray(start, end)], pendingBytes + end - start).toString('utf8');
        pending = [];
        pendingBytes = 0;
        overlong = false;
        start = nl + 1;
      }
    }
    // the last line has no newline: a torn write, or a file written by hand
    if (overlong) yield null;
    else if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Streams the events of an events.jsonl. A line that does not parse as an event —
 * typically the torn last line of a crashed writer — is skipped and counted in
 * `options.diagnostics`, never fatal.
 */
export function* streamEventsFile(file: string, options: EventsFileOptions = {}): Generator<RunEvent> {
  const { migrate, diagnostics } = options;
  for (const line of fileLines(file, options.chunkBytes)) {
    if (line !== null && line.trim() === '') continue;
    const event = line === null ? null : parseEventLine(line, migrate);
    if (event === null) {
      if (diagnostics) diagnostics.skippedLines++;
      continue;
    }
    yield event;
  }
}

function parseEventLine(line: string, migrate: EventsFileOptions['migrate']): RunEvent | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  if (migrate && parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    parsed = migrate(parsed as Record<string, unknown>);
  }
  return parseRunEvent(parsed);
}

/**
 * Reads events.jsonl, keeping the events `keep` accepts (all by default), and of those only
 * the `last` ones when given: memory grows with the events kept, never with the file.
 */
export function readEventsFile(
  file: string,
  migrate?: (raw: Record<string, unknown>) => Record<string, unknown>,
  keep?: (event: RunEvent) => boolean,
  last?: number,
): EventsRead {
  const diagnostics: EventsDiagnostics = { skippedLines: 0 };
  let events: RunEvent[] = [];
  for (const e of streamEventsFile(file, { migrate, diagnostics })) {
    if (keep && !keep(e)) continue;
    events.push(e);
    // trimmed in batches: amortised O(1) an event, at most 2 × last held
    if (last !== undefined && events.length >= 2 * last + 1024) events = events.slice(-last);
  }
  if (last !== undefined) events = events.slice(Math.max(0, events.length - last));
  return { events, skippedLines: diagnostics.skippedLines };
}

/** What a follower read of events.jsonl since its last offset. */
export interface EventsFrom extends EventsRead {
  /** Where the next read starts: after the last complete line read. */
  next: number;
  /** The file was shorter than the offset (replaced or truncated): read again from its start. */
  restarted: boolean;
  /** The file's inode, so a follower notices a file replaced by one as long. */
  ino: number;
  /** The file's size when read: `next < size` means there is more (a torn line, or `maxBytes` reached). */
  size: number;
}

/**
 * The complete lines of `file` from byte `offset` on, as events: a line still being
 * written (no newline yet) is left for the next read, so a follower never sees it torn.
 * A file shorter than `offset`, or another file (`ino` differs), is read from its start.
 * A line longer than MAX_EVENT_LINE_BYTES is skipped and counted.
 */
export function readEventsFrom(
  file: string,
  offset: number,
  options: { migrate?: EventsFileOptions['migrate']; ino?: number; chunkBytes?: number; maxBytes?: number } = {},
): EventsFrom {
  const fd = openRegularFile(file, 'RLPROBE_IO', 'move it out of the run directory to read the rest (the run has no readable events then)');
  if (fd === null) return { events: [], skippedLines: 0, next: 0, restarted: offset > 0, ino: 0, size: 0 };
  try {
    const stat = fstatSync(fd);
    const restarted = stat.size < offset || (options.ino !== undefined && options.ino !== 0 && options.ino !== stat.ino);
    let at = restarted ? 0 : offset;
    const events: RunEvent[] = [];
    let skippedLines = 0;
    const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(options.chunkBytes ?? EVENTS_CHUNK_BYTES, MAX_EVENT_LINE_BYTES + 1)));
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let overlong = false;
    let pos = at;
    // a follower reads a bounded stretch at a time: a huge backlog is read over several calls
    const stopAt = options.maxBytes === undefined ? Infinity : at + Math.max(1, options.maxBytes);
    while (pos < stat.size && at < stopAt) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, stat.size - pos), pos);
      if (n === 0) break;
      const bytes = chunk.subarray(0, n);
      let start = 0;
      for (let nl = bytes.indexOf(NEWLINE, start); nl >= 0; nl = bytes.indexOf(NEWLINE, start)) {
        if (!overlong && pendingBytes + (nl - start) > MAX_EVENT_LINE_BYTES) overlong = true;
        if (overlong) {
          skippedLines++;
        } else {
          const line = Buffer.concat([...pending, bytes.subarray(start, nl)], pendingBytes + nl - start).toString('utf8');
          if (line.trim() !== '') {
            const event = parseEventLine(line, options.migrate);
            if (event === null) skippedLines++;
            else events.push(event);
          }
        }
        pending = [];
        pendingBytes = 0;
        overlong = false;
        start = nl + 1;
        at = pos + start;
      }
      // the start of a line that goes on past this chunk (copied: the chunk is reused)
      if (!overlong && pendingBytes + (n - start) > MAX_EVENT_LINE_BYTES) {
        overlong = true;
        pending = [];
        pendingBytes = 0;
      }
      if (!overlong && start < n) {
        pending.push(Buffer.from(bytes.subarray(start, n)));
        pendingBytes += n - start;
      }
      pos += n;
    }
    return { events, skippedLines, next: at, restarted, ino: stat.ino, size: stat.size };
  } finally {
    closeSync(fd);
  }
}
