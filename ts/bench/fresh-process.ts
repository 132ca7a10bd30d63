/**
 * How the scale benchmark times one surface in a fresh process of its own, the same way
 * for rlprobe's side and DuckDB's: the first call (what a command line pays), then the
 * median of the warm calls after it, and the process's peak RSS at both points. Kept
 * apart from scale.ts so that DuckDB's process loads neither rlprobe's reader nor its
 * native addon (their memory would count in DuckDB's peak).
 */
import { readFileSync } from 'node:fs';

/**
 * This process's peak RSS in MiB. On Linux from VmHWM: `ru_maxrss` survives exec, so a
 * child would report its parent's peak at fork time as its own.
 */
export function processPeakRssMiB(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS / 1024;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** How many rows and columns a surface answered with: DuckDB must answer with the same. */
export interface ResultShape {
  rows: number;
  /** null where the two sides shape the same rows differently (records against a table). */
  columns: number | null;
}

export interface CallFigures {
  /** The first call in the process, in ms. */
  firstMs: number;
  /** The median of the calls after the first, in ms. */
  warmMedianMs: number;
  /** How many calls the median is of. */
  warmRuns: number;
  /** Peak RSS before the first call: the process with its modules loaded, nothing read yet. */
  startRssMiB: number;
  /** Peak RSS (VmHWM) after the first call: what one run of the surface costs. */
  peakRssFirstMiB: number;
  /** Peak RSS after every call (garbage of earlier calls may not be collected yet). */
  peakRssMiB: number;
}

/**
 * Calls `call` once, then `warm` more times, each result's shape taken by `shapeOf` while
 * it is still held (so the peak RSS includes it). Every call must answer with the first
 * one's shape: a surface that answers differently when asked again is no figure.
 */
export async function timeFreshCalls<T>(
  call: () => T | Promise<T>,
  warm: number,
  shapeOf: (out: T) => ResultShape | null,
): Promise<{ figures: CallFigures; last: T; shape: ResultShape | null }> {
  if (!Number.isInteger(warm) || warm < 1) throw new RangeError(`warm calls must be an integer of at least 1 (got ${warm})`);
  const startRssMiB = processPeakRssMiB();
  let t = performance.now();
  let last = await call();
  const firstMs = performance.now() - t;
  const shape = shapeOf(last);
  const peakRssFirstMiB = processPeakRssMiB();
  const warmMs: number[] = [];
  for (let i = 0; i < warm; i++) {
    // untimed: a turn of the event loop, as an application takes between reads. Node runs
    // the finalizers that free native buffers (a step table's columns) on a later turn; a
    // loop that never yields piles up every table it read and faults in fresh memory each call
    await new Promise<void>((resolve) => setImmediate(resolve));
    t = performance.now();
    last = await call();
    warmMs.push(performance.now() - t);
    const again = shapeOf(last);
    if (JSON.stringify(again) !== JSON.stringify(shape)) {
      throw new Error(`call ${i + 2} answered ${JSON.stringify(again)}, the first ${JSON.stringify(shape)}: the same question must get the same answer`);
    }
  }
  return {
    figures: { firstMs, warmMedianMs: median(warmMs), warmRuns: warm, startRssMiB, peakRssFirstMiB, peakRssMiB: processPeakRssMiB() },
    last,
    shape,
  };
}
