/**
 * Min/max downsampling that grows with a live run. The rows are cut into buckets of `width`
 * rows (a power of two, aligned to row 0); each bucket keeps its first and last step and
 * time, and for each series its lowest and highest value in the order they happened, as
 * downsample.ts does. Appending touches only the last buckets; when they reach twice the
 * target count, neighbours merge pairwise (the width doubles), keeping the lower low and
 * the higher high, so every spike survives and memory stays O(buckets) however long the
 * run grows. A follower therefore never re-reads what it has seen.
 */
import type { SeriesSummary } from './chart-data.js';
import { compact, DEFAULT_BUCKETS } from './downsample.js';

/** The running figures of one series: chart-data.ts `SeriesSummary`, kept as rows arrive. */
export type LiveSummary = SeriesSummary;

/** Points of a snapshot from bucket `from` on: what a client replaces from that point. */
export interface LivePoints {
  rows: number;
  width: number;
  /** First point index these points replace (0: all). */
  from: number;
  x: { step: number[]; time: Array<number | null> };
  series: Record<string, Array<number | null>>;
  bands: Record<string, { lo: Array<number | null>; hi: Array<number | null> }>;
}

/** One series' buckets: lo, hi and whether lo came first (NaN: no finite value). */
class Extremes {
  lo: number[] = [];
  hi: number[] = [];
  loFirst: boolean[] = [];

  /** Folds `v` (row order) into bucket `b`; a bucket not reached yet starts empty. */
  add(b: number, v: number): void {
    while (this.lo.length <= b) {
      this.lo.push(NaN);
      this.hi.push(NaN);
      this.loFirst.push(true);
    }
    // ±Inf and NaN are no points of a chart (counted as non-finite in the summary)
    if (!Number.isFinite(v)) return;
    if (Number.isNaN(this.lo[b])) {
      this.lo[b] = v;
      this.hi[b] = v;
      this.loFirst[b] = true;
      return;
    }
    if (v < this.lo[b]) {
      this.lo[b] = v;
      this.loFirst[b] = false;
    } else if (v > this.hi[b]) {
      this.hi[b] = v;
      this.loFirst[b] = true;
    }
  }

  pad(buckets: number): void {
    while (this.lo.length < buckets) this.add(this.lo.length, NaN);
  }

  /** Buckets 2k and 2k+1 become bucket k: lower low, higher high, in the order they happened. */
  halve(): void {
    const n = Math.ceil(this.lo.length / 2);
    const lo: number[] = [];
    const hi: number[] = [];
    const loFirst: boolean[] = [];
    for (let k = 0; k < n; k++) {
      const a = 2 * k;
      const b = a + 1;
      if (b >= this.lo.length || Number.isNaN(this.lo[b])) {
        lo.push(this.lo[a]);
        hi.push(this.hi[a]);
        loFirst.push(this.loFirst[a]);
        continue;
      }
      if (Number.isNaN(this.lo[a])) {
        lo.push(this.lo[b]);
        hi.push(this.hi[b]);
        loFirst.push(this.loFirst[b]);
        continue;
      }
      // when each extreme happened: bucket a's before bucket b's; within one, loFirst says
      const loFromB = this.lo[b] < this.lo[a];
      const hiFromB = this.hi[b] > this.hi[a];
      lo.push(loFromB ? this.lo[b] : this.lo[a]);
      hi.push(hiFromB ? this.hi[b] : this.hi[a]);
      const loAt = loFromB ? 2 + (this.loFirst[b] ? 0 : 1) : this.loFirst[a] ? 0 : 1;
      const hiAt = hiFromB ? 2 + (this.loFirst[b] ? 1 : 0) : this.loFirst[a] ? 1 : 0;
      loFirst.push(loAt <= hiAt);
    }
    this.lo = lo;
    this.hi = hi;
    this.loFirst = loFirst;
  }
}

/** A band mean ± spread: each bucket's lowest mean − spread and highest mean + spread. */
class BandEdges {
  lo: number[] = [];
  hi: number[] = [];

  add(b: number, mean: number, spread: number): void {
    while (this.lo.length <= b) {
      this.lo.push(Infinity);
      this.hi.push(-Infinity);
    }
    // a spread logged negative (a sign slip) still draws its band, as downsampleBand does
    const s = Math.abs(spread);
    if (!Number.isFinite(mean) || !Number.isFinite(s)) return;
    if (mean - s < this.lo[b]) this.lo[b] = mean - s;
    if (mean + s > this.hi[b]) this.hi[b] = mean + s;
  }

  pad(buckets: number): void {
    while (this.lo.length < buckets) this.add(this.lo.length, NaN, NaN);
  }

  halve(): void {
    const lo: number[] = [];
    const hi: number[] = [];
    for (let a = 0; a < this.lo.length; a += 2) {
      lo.push(Math.min(this.lo[a], this.lo[a + 1] ?? Infinity));
      hi.push(Math.max(this.hi[a], this.hi[a + 1] ?? -Infinity));
    }
    this.lo = lo;
    this.hi = hi;
  }
}

function emptySummary(): LiveSummary {
  return { first: null, last: null, min: null, max: null, points: 0, non_finite: 0 };
}

/** Rows a table's rows are appended in: values (NaN where null) and whether each is logged. */
export interface AppendedColumn {
  values: ArrayLike<number>;
  /** 1 where the row holds a value; absent when every row does. */
  valid?: ArrayLike<number> | null;
}

export class LiveDownsample {
  readonly buckets: number;
  /** Rows per bucket: a power of two. */
  width = 1;
  rows = 0;
  private firstStep: number[] = [];
  private lastStep: number[] = [];
  private firstTime: number[] = [];
  private lastTime: number[] = [];
  private readonly series = new Map<string, Extremes>();
  private readonly summaries = new Map<string, LiveSummary>();
  private readonly present = new Map<string, number>();
  private readonly bands = new Map<string, { mean: string; spread: string; edges: BandEdges }>();
  /** Bumped on each merge: a client holding points of an older width must take them all again. */
  generation = 0;

  constructor(buckets = DEFAULT_BUCKETS) {
    if (!Number.isInteger(buckets) || buckets < 1) throw new RangeError(`buckets: expected a positive integer (got ${buckets})`);
    this.buckets = buckets;
  }

  /** Sets the width `rows` rows need, before any row is added (a build of a known prefix). */
  sizeFor(rows: number): void {
    if (this.rows > 0) throw new Error('sizeFor: rows were added already');
    while (Math.ceil(rows / this.width) >= 2 * this.buckets) this.width *= 2;
  }

  get bucketCount(): number {
    return this.firstStep.length;
  }

  /** Column names with at least one row, in the order first met. */
  columns(): string[] {
    return [...this.present.keys()];
  }

  presentCount(name: string): number {
    return this.present.get(name) ?? 0;
  }

  summary(name: string): LiveSummary | undefined {
    return this.summaries.get(name);
  }

  /** Tracks the band `mean ± spread` from now on; rows already added must be given through `addBandRows`. */
  trackBand(mean: string, spread: string): string {
    const key = `${mean}\u0000${spread}`;
    if (!this.bands.has(key)) this.bands.set(key, { mean, spread, edges: new BandEdges() });
    return key;
  }

  hasBand(key: string): boolean {
    return this.bands.has(key);
  }

  /**
   * Appends rows: their steps and times (NaN when a row has none) and any columns of them.
   * A column first met here has no value in the earlier rows. Merges buckets when needed.
   */
  append(steps: ArrayLike<number>, times: ArrayLike<number> | null, columns: Map<string, AppendedColumn>): void {
    const n = steps.length;
    // merge first, so the new rows land in buckets of the width they will keep
    while (Math.ceil((this.rows + n) / this.width) >= 2 * this.buckets) this.halve();
    const start = this.rows;
    for (let i = 0; i < n; i++) {
      const b = Math.floor((start + i) / this.width);
      const t = times ? times[i] : NaN;
      if (b >= this.firstStep.length) {
        this.firstStep.push(steps[i]);
        this.firstTime.push(t);
        this.lastStep.push(steps[i]);
        this.lastTime.push(t);
      } else {
        this.lastStep[b] = steps[i];
        this.lastTime[b] = t;
      }
    }
    this.rows += n;
    for (const [name, col] of columns) this.addRows(name, col, start);
    for (const band of this.bands.values()) {
      const mean = columns.get(band.mean);
      const spread = columns.get(band.spread);
      if (mean && spread) this.addBandRows(band.edges, mean, spread, start);
    }
    this.padAll();
  }

  /**
   * Adds a column's values for rows `start…` already appended (a build reads the steps
   * first, then the columns a few at a time).
   */
  addRows(name: string, col: AppendedColumn, start: number): void {
    let ext = this.series.get(name);
    if (!ext) {
      ext = new Extremes();
      this.series.set(name, ext);
      this.summaries.set(name, emptySummary());
      this.present.set(name, 0);
    }
    const sum = this.summaries.get(name)!;
    let present = 0;
    const n = Math.min(col.values.length, this.rows - start);
    for (let i = 0; i < n; i++) {
      if (col.valid && !col.valid[i]) continue;
      present++;
      const v = col.values[i];
      ext.add(Math.floor((start + i) / this.width), v);
      if (!Number.isFinite(v)) {
        sum.non_finite++;
        continue;
      }
      sum.first ??= v;
      sum.last = v;
      if (sum.min === null || v < sum.min) sum.min = v;
      if (sum.max === null || v > sum.max) sum.max = v;
      sum.points++;
    }
    this.present.set(name, this.present.get(name)! + present);
    ext.pad(this.bucketCount);
  }

  /** Adds a band's rows `start…` (both its columns from one read). */
  addBand(key: string, mean: AppendedColumn, spread: AppendedColumn, start: number): void {
    const band = this.bands.get(key);
    if (band) this.addBandRows(band.edges, mean, spread, start);
  }

  private addBandRows(edges: BandEdges, mean: AppendedColumn, spread: AppendedColumn, start: number): void {
    const n = Math.min(mean.values.length, spread.values.length, this.rows - start);
    for (let i = 0; i < n; i++) {
      const m = mean.valid && !mean.valid[i] ? NaN : mean.values[i];
      const s = spread.valid && !spread.valid[i] ? NaN : spread.values[i];
      edges.add(Math.floor((start + i) / this.width), m, s);
    }
    edges.pad(this.bucketCount);
  }

  private padAll(): void {
    for (const ext of this.series.values()) ext.pad(this.bucketCount);
    for (const band of this.bands.values()) band.edges.pad(this.bucketCount);
  }

  private halve(): void {
    const fs: number[] = [];
    const ls: number[] = [];
    const ft: number[] = [];
    const lt: number[] = [];
    for (let a = 0; a < this.firstStep.length; a += 2) {
      const b = Math.min(a + 1, this.firstStep.length - 1);
      fs.push(this.firstStep[a]);
      ft.push(this.firstTime[a]);
      ls.push(this.lastStep[b]);
      lt.push(this.lastTime[b]);
    }
    this.firstStep = fs;
    this.lastStep = ls;
    this.firstTime = ft;
    this.lastTime = lt;
    for (const ext of this.series.values()) ext.halve();
    for (const band of this.bands.values()) band.edges.halve();
    this.width *= 2;
    this.generation++;
  }

  /** Points per bucket: one while each bucket is one row, then its two extremes. */
  private get perBucket(): 1 | 2 {
    return this.width === 1 ? 1 : 2;
  }

  /** The first point index of bucket `b`. */
  pointOf(b: number): number {
    return b * this.perBucket;
  }

  /** The points from bucket `fromBucket` on, for `names` (every series when absent). */
  points(fromBucket = 0, names?: Iterable<string>, bandKeys?: Iterable<string>): LivePoints {
    const two = this.perBucket === 2;
    const from = Math.max(0, Math.min(fromBucket, this.bucketCount));
    const step: number[] = [];
    const time: Array<number | null> = [];
    for (let b = from; b < this.bucketCount; b++) {
      step.push(this.firstStep[b]);
      time.push(finiteOrNull(this.firstTime[b]));
      if (two) {
        step.push(this.lastStep[b]);
        time.push(finiteOrNull(this.lastTime[b]));
      }
    }
    const series: LivePoints['series'] = {};
    for (const name of names ?? this.series.keys()) {
      const ext = this.series.get(name);
      if (!ext) continue;
      const ys: Array<number | null> = [];
      for (let b = from; b < this.bucketCount; b++) {
        const lo = ext.lo[b];
        if (Number.isNaN(lo)) {
          ys.push(null);
          if (two) ys.push(null);
        } else if (!two) {
          ys.push(compact(lo));
        } else {
          const [p, q] = ext.loFirst[b] ? [lo, ext.hi[b]] : [ext.hi[b], lo];
          ys.push(compact(p), compact(q));
        }
      }
      series[name] = ys;
    }
    const bands: LivePoints['bands'] = {};
    for (const key of bandKeys ?? this.bands.keys()) {
      const band = this.bands.get(key);
      if (!band) continue;
      const lo: Array<number | null> = [];
      const hi: Array<number | null> = [];
      for (let b = from; b < this.bucketCount; b++) {
        const ok = band.edges.lo[b] <= band.edges.hi[b];
        for (let k = 0; k < (two ? 2 : 1); k++) {
          lo.push(ok ? compact(band.edges.lo[b]) : null);
          hi.push(ok ? compact(band.edges.hi[b]) : null);
        }
      }
      bands[key] = { lo, hi };
    }
    return { rows: this.rows, width: this.width, from: this.pointOf(from), x: { step, time }, series, bands };
  }
}

function finiteOrNull(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}
