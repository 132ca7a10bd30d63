/**
 * Span paths and span objects for the ATIF parser. Capture derives span ids from the paths,
 * so they must be unique among siblings and stable across re-parses; this is the one place
 * that builds them (escaped, bounded segments, `~2` suffixes for repeats) and the spans
 * that carry them, shared by the document expansion (`atif.ts`) and the turns (`atif-turns.ts`).
 */
import type { PlannedSpan } from './contract.js';
import type { TimeRange } from './times.js';
import { LIMITS } from './atif-values.js';
import type { Json } from './atif-values.js';

/** Unique path segments among one parent's children: a repeat gets `~2`, `~3`… */
export class Keys {
  private readonly used = new Set<string>();

  take(key: string): string {
    let k = key;
    for (let i = 2; this.used.has(k); i++) k = `${key}~${i}`;
    this.used.add(k);
    return k;
  }
}

export function newSpan(spanPath: string, parentPath: string | null, kind: string, name: string, attributes: Json, range: TimeRange = { start: null, end: null }): PlannedSpan {
  return { path: spanPath, parentPath, kind, name, start: range.start, end: range.end, status: 'ok', error: null, attributes };
}

export function setRange(span: PlannedSpan, range: TimeRange, estimated = false): void {
  span.start = range.start;
  span.end = range.end;
  if (estimated && range.start !== null) span.attributes.time_estimated = true;
}

export function child(parentPath: string | null, key: string): string {
  return parentPath === null ? key : `${parentPath}/${key}`;
}

/** An id or file name made safe as one path segment (`/` and `%` escaped), bounded. */
export function escapeKey(s: string): string {
  return s.replace(/%/g, '%25').replace(/\//g, '%2F').slice(0, LIMITS.key);
}
