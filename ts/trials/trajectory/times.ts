/**
 * Trajectory timestamps. ATIF says "ISO 8601", producers write what their language prints:
 * `2026-06-16T12:35:24.221Z`, Python's naive `2025-10-11T10:30:00.123456`, offsets with or
 * without a colon, sometimes a space instead of the `T`. Date.parse reads a naive date-time
 * as *local* time, which would make a capture depend on the machine's zone, so the grammar
 * is parsed here and naive values are read as UTC (and reported as such).
 */

/** What one timestamp value turned out to be. */
export interface ParsedTime {
  /** Unix seconds, or null when absent or unusable. */
  t: number | null;
  /** The value had no zone and was read as UTC. */
  naive: boolean;
  /** The value was present but unusable (not a date, out of range, non-finite). */
  bad: boolean;
  /** The value was a number, read as Unix seconds (or milliseconds when that large). */
  numeric: boolean;
}

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,12}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** Above this a numeric timestamp is taken to be milliseconds (1e12 s is the year 33658). */
const MS_THRESHOLD = 1e12;

const ABSENT: ParsedTime = { t: null, naive: false, bad: false, numeric: false };
const BAD: ParsedTime = { t: null, naive: false, bad: true, numeric: false };

/** Reads a trajectory timestamp; never throws. */
export function parseTimestamp(value: unknown): ParsedTime {
  if (value === undefined || value === null) return ABSENT;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return BAD;
    return { t: value >= MS_THRESHOLD ? value / 1000 : value, naive: false, bad: false, numeric: true };
  }
  if (typeof value !== 'string') return BAD;
  const m = ISO.exec(value.trim());
  if (m === null) return BAD;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return BAD;
  if (hour > 23 || minute > 59 || second > 60) return BAD;
  const offset = m[8] === undefined ? 0 : offsetSeconds(m[8]);
  if (offset === null) return BAD;
  // whole milliseconds as Date.parse would count them (so `x/1000` agrees to the bit),
  // then any finer digits (Python writes microseconds) as a fraction of a millisecond
  const digits = m[7] ?? '';
  const ms = Number(digits.slice(0, 3).padEnd(3, '0'));
  const finer = digits.length > 3 ? Number(`0.${digits.slice(3)}`) : 0;
  const utcMs = Date.UTC(year, month - 1, day, hour, minute, second) + ms + finer - offset * 1000;
  return { t: utcMs / 1000, naive: m[8] === undefined, bad: false, numeric: false };
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** `Z`, `+05:30`, `-0800`, `+01` as seconds east of UTC, or null when out of range. */
function offsetSeconds(zone: string): number | null {
  if (zone === 'Z' || zone === 'z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  if (hours > 23 || minutes > 59) return null;
  return sign * (hours * 3600 + minutes * 60);
}

/** A time range in Unix seconds; either end may be unknown. */
export interface TimeRange {
  start: number | null;
  end: number | null;
}

/** Per-turn times of one trajectory document, after filling the gaps. */
export interface FilledTimes {
  start: (number | null)[];
  end: (number | null)[];
  /** True where the start is not the turn's own timestamp (inherited, clamped or spread). */
  estimated: boolean[];
  /** How many known timestamps went backwards and were clamped to the previous one. */
  clamped: number;
}

/**
 * Fills the start and end of each turn (in step order) from the turns' own timestamps.
 *
 * A turn starts at its timestamp and ends where the next turn starts; the last ends at its
 * own start. A turn without a timestamp inherits the previous turn's start (the next known
 * one before the first known), and a timestamp earlier than its predecessor's is clamped to
 * it, so that sorting by start keeps step order and no span ends before it starts.
 * When no turn has a timestamp, the turns are spread evenly over `fallback` (the span the
 * trajectory hangs from), or left null when that is unknown too.
 */
export function fillTimes(known: readonly (number | null)[], fallback: TimeRange | null): FilledTimes {
  const n = known.length;
  const firstKnown = known.find((t): t is number => t !== null);
  if (firstKnown === undefined) return spread(n, fallback);
  const start: number[] = [];
  const estimated: boolean[] = [];
  let clamped = 0;
  let previous = firstKnown;
  for (const t of known) {
    if (t === null) {
      start.push(previous);
      estimated.push(true);
    } else if (t < previous) {
      start.push(previous);
      estimated.push(true);
      clamped += 1;
    } else {
      start.push(t);
      estimated.push(false);
      previous = t;
    }
  }
  const end = start.map((s, i) => (i + 1 < n ? start[i + 1] : s));
  return { start, end, estimated, clamped };
}

/** n turns laid end to end over `range` (all at its start when it has no known end). */
function spread(n: number, range: TimeRange | null): FilledTimes {
  const s = range?.start ?? null;
  if (s === null) {
    return { start: new Array<null>(n).fill(null), end: new Array<null>(n).fill(null), estimated: new Array<boolean>(n).fill(false), clamped: 0 };
  }
  const e = Math.max(range?.end ?? s, s);
  const width = n === 0 ? 0 : (e - s) / n;
  const start = Array.from({ length: n }, (_, i) => s + width * i);
  const end = Array.from({ length: n }, (_, i) => (i + 1 === n ? e : s + width * (i + 1)));
  return { start, end, estimated: new Array<boolean>(n).fill(true), clamped: 0 };
}

/** The smallest range covering all known values of `ranges` (null ends when none known). */
export function coverRange(ranges: readonly TimeRange[]): TimeRange {
  let start: number | null = null;
  let end: number | null = null;
  for (const r of ranges) {
    if (r.start !== null) start = start === null ? r.start : Math.min(start, r.start);
    const e = r.end ?? r.start;
    if (e !== null) end = end === null ? e : Math.max(end, e);
  }
  return { start, end };
}
