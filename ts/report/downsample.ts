/**
 * Min/max-per-bucket downsampling for the report's charts. The rows are cut into at most
 * `buckets` consecutive buckets; each bucket keeps its lowest and its highest value, in the
 * order they happened, at the bucket's first and last step (so a point can sit up to a
 * bucket's width from its true step: 0.1 % of the axis). A one-step spike therefore
 * survives any reduction (LTTB can drop it), and every series of a chart shares one x axis,
 * so a 1,000,000-step run costs at most 2 × buckets points per series.
 */

/** Default bucket count: ≤ 2,000 points per series, about a screen's width twice over. */
export const DEFAULT_BUCKETS = 1000;

export interface Downsampled {
  /** Steps of the kept points (ascending). */
  x: number[];
  /** One array per input series, aligned to `x`; null where the series has no finite value. */
  ys: Array<Array<number | null>>;
  /** Input rows, and whether they were reduced at all. */
  rows: number;
  reduced: boolean;
}

const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * Six significant digits: what a chart can show, and a third of the JSON. (Scaling by an
 * exact power of ten, not `toPrecision`, which costs ten times as much.)
 */
export function compact(v: number): number {
  const a = Math.abs(v);
  if (a === 0 || !(a >= 1e-15 && a < 1e15)) return a === 0 ? 0 : Number(v.toPrecision(6));
  const k = 5 - Math.floor(Math.log10(a));
  return k >= 0 ? Math.round(v * POW10[k]) / POW10[k] : Math.round(v / POW10[-k]) * POW10[-k];
}

/**
 * The rows to chart, by ascending step, each step once at its last write (a run resumed
 * from a checkpoint logs steps again; the doctor keeps the last write too). Null when the
 * rows already are that: strictly ascending, the usual case.
 */
export function stepRows(steps: ArrayLike<number>): Int32Array | null {
  let ascending = true;
  for (let i = 1; i < steps.length && ascending; i++) ascending = steps[i] > steps[i - 1];
  if (ascending) return null;
  const last = new Map<number, number>();
  for (let i = 0; i < steps.length; i++) last.set(steps[i], i);
  return Int32Array.from(last.values()).sort((a, b) => steps[a] - steps[b]);
}

/** The rows whose step lies in `from`..`to` (inclusive), in chart order: by ascending step, each step at its last write. */
export function rowsInRange(steps: ArrayLike<number>, from: number, to: number): Int32Array {
  const ordered = stepRows(steps);
  const out: number[] = [];
  const n = ordered === null ? steps.length : ordered.length;
  for (let k = 0; k < n; k++) {
    const i = ordered === null ? k : ordered[k];
    if (steps[i] >= from && steps[i] <= to) out.push(i);
  }
  return Int32Array.from(out);
}

export function downsample(steps: ArrayLike<number>, series: ArrayLike<number>[], buckets = DEFAULT_BUCKETS, rows: Int32Array | null = stepRows(steps)): Downsampled {
  // gathered one column at a time (rare: unsorted or re-logged steps), so the loops index directly
  const gather = (s: ArrayLike<number>): ArrayLike<number> => (rows === null ? s : Float64Array.from(rows, (r) => s[r]));
  const xs = gather(steps);
  const n = xs.length;
  if (n <= 2 * buckets) {
    return {
      x: Array.from(xs),
      ys: series.map((col) => {
        const s = gather(col);
        return Array.from({ length: n }, (_, i) => (Number.isFinite(s[i]) ? compact(s[i]) : null));
      }),
      rows: n,
      reduced: false,
    };
  }
  const x = new Array<number>(2 * buckets);
  for (let b = 0; b < buckets; b++) {
    x[2 * b] = xs[Math.floor((b * n) / buckets)];
    x[2 * b + 1] = xs[Math.floor(((b + 1) * n) / buckets) - 1];
  }
  const ys = series.map((col) => {
    const s = gather(col);
    const out = new Array<number | null>(2 * buckets);
    for (let b = 0; b < buckets; b++) {
      const r1 = Math.floor(((b + 1) * n) / buckets);
      let lo = Infinity;
      let hi = -Infinity;
      let iLo = -1;
      let iHi = -1;
      for (let i = Math.floor((b * n) / buckets); i < r1; i++) {
        const v = s[i];
        // NaN fails both comparisons; ±Inf is excluded explicitly
        if (v < lo && v !== -Infinity) {
          lo = v;
          iLo = i;
        }
        if (v > hi && v !== Infinity) {
          hi = v;
          iHi = i;
        }
      }
      if (iLo < 0) {
        out[2 * b] = null;
        out[2 * b + 1] = null;
      } else {
        const first = iLo <= iHi ? lo : hi;
        const second = iLo <= iHi ? hi : lo;
        out[2 * b] = compact(first);
        out[2 * b + 1] = compact(second);
      }
    }
    return out;
  });
  return { x, ys, rows: n, reduced: true };
}

/**
 * `col` at the rows `downsample` puts on its x (each row; else each bucket's first and last),
 * exact, null where not finite: the wall time under a chart's points, which six digits
 * would blur to a quarter of an hour.
 */
export function alongX(steps: ArrayLike<number>, col: ArrayLike<number>, buckets = DEFAULT_BUCKETS, rows: Int32Array | null = stepRows(steps)): Array<number | null> {
  const n = rows === null ? steps.length : rows.length;
  const at = (k: number) => {
    const v = col[rows === null ? k : rows[k]];
    return Number.isFinite(v) ? v : null;
  };
  if (n <= 2 * buckets) return Array.from({ length: n }, (_, k) => at(k));
  const out = new Array<number | null>(2 * buckets);
  for (let b = 0; b < buckets; b++) {
    out[2 * b] = at(Math.floor((b * n) / buckets));
    out[2 * b + 1] = at(Math.floor(((b + 1) * n) / buckets) - 1);
  }
  return out;
}

export interface DownsampledBand {
  /** mean − spread and mean + spread, aligned to `downsample`'s x; null where either is missing. */
  lo: Array<number | null>;
  hi: Array<number | null>;
}

/**
 * The band mean ± spread around a charted mean, on the x `downsample` gives the same rows
 * and buckets: each row's bounds when nothing is reduced, else each bucket's lowest
 * mean − spread and highest mean + spread at both its points, so the band covers every row
 * it stands for. Computed row by row: nothing the size of the run is allocated.
 */
export function downsampleBand(
  steps: ArrayLike<number>,
  mean: ArrayLike<number>,
  spread: ArrayLike<number>,
  buckets = DEFAULT_BUCKETS,
  rows: Int32Array | null = stepRows(steps),
): DownsampledBand {
  const n = rows === null ? steps.length : rows.length;
  const row = (i: number) => (rows === null ? i : rows[i]);
  const bounds = (from: number, to: number): [number, number] | null => {
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = from; i < to; i++) {
      const r = row(i);
      const m = mean[r];
      // a spread logged negative (a sign slip) still draws its band
      const s = Math.abs(spread[r]);
      if (!Number.isFinite(m) || !Number.isFinite(s)) continue;
      if (m - s < lo) lo = m - s;
      if (m + s > hi) hi = m + s;
    }
    return lo <= hi ? [compact(lo), compact(hi)] : null;
  };
  const reduced = n > 2 * buckets;
  const cells = reduced ? buckets : n;
  const lo = new Array<number | null>(reduced ? 2 * buckets : n);
  const hi = new Array<number | null>(lo.length);
  for (let b = 0; b < cells; b++) {
    const got = reduced ? bounds(Math.floor((b * n) / buckets), Math.floor(((b + 1) * n) / buckets)) : bounds(b, b + 1);
    const points = reduced ? [2 * b, 2 * b + 1] : [b];
    for (const p of points) {
      lo[p] = got ? got[0] : null;
      hi[p] = got ? got[1] : null;
    }
  }
  return { lo, hi };
}
