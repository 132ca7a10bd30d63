/**
 * A report's chart data, read a few step columns at a time: each group is downsampled and
 * summarised, then let go before the next is read, so a 1,000,000-step run of 47 columns
 * never holds more than the steps and one group (the whole table is 376 MB of doubles).
 * Every series is downsampled on its own (downsample.ts), so reading them in groups gives
 * exactly what reading them together gave.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

import { RlprobeError } from '../errors.js';
import type { NativeColumn } from '../native.js';
import type { RunReader } from '../reader/run-reader.js';
import { REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import type { ChartColumns } from './chart-groups.js';
import { downsample, downsampleBand } from './downsample.js';
import type { DownsampledBand } from './downsample.js';

/** Columns read at once: small enough to bound memory, large enough to keep reads few. */
const COLUMNS_PER_READ = 6;

/** A column's logged values in numbers: first and last logged, extremes, count. */
export interface SeriesSummary {
  first: number | null;
  last: number | null;
  min: number | null;
  max: number | null;
  /** Finite values logged. */
  points: number;
  /** NaN or ±Inf logged (a missing value is not counted). */
  non_finite: number;
}

/**
 * The figures of `xs` over `rows` (every row when null: see downsample.stepRows); `present`
 * is how many of its rows hold a value.
 */
export function summarise(xs: ArrayLike<number>, present: number, rows: Int32Array | null): SeriesSummary {
  const n = rows === null ? xs.length : rows.length;
  let logged = rows === null ? present : 0;
  let first: number | null = null;
  let last: number | null = null;
  let min = Infinity;
  let max = -Infinity;
  let points = 0;
  for (let i = 0; i < n; i++) {
    const v = xs[rows === null ? i : rows[i]];
    // a re-logged run: NaN rows cannot tell missing from logged NaN here, count them as missing
    if (!Number.isFinite(v)) continue;
    first ??= v;
    last = v;
    if (v < min) min = v;
    if (v > max) max = v;
    points++;
  }
  if (rows !== null) logged = points;
  return { first, last, min: points ? min : null, max: points ? max : null, points, non_finite: logged - points };
}

/** Which columns a run has and how many rows each holds: what chartGroups asks. */
class ColumnFacts implements ChartColumns {
  constructor(
    private readonly order: string[],
    private readonly lists: ReadonlySet<string>,
    private readonly present: ReadonlyMap<string, number>,
  ) {}

  columns(): string[] {
    return this.order;
  }

  seriesNames(): string[] {
    return this.order.filter((c) => c !== 'step' && !this.lists.has(c));
  }

  componentNames(): string[] {
    return this.order.filter((c) => c.startsWith(REWARD_COMPONENT_PREFIX)).map((c) => c.slice(REWARD_COMPONENT_PREFIX.length));
  }

  has(name: string): boolean {
    return this.present.has(name);
  }

  presentCount(name: string): number {
    return this.present.get(name) ?? 0;
  }
}

export interface ChartData {
  facts: ChartColumns;
  /** The downsampled series of every scalar column, on `x`. */
  ys: Map<string, Array<number | null>>;
  summaries: Map<string, SeriesSummary>;
  x: number[];
  rows: number;
  reduced: boolean;
}

/**
 * `names` of `reader` (with `step`), row for row with `steps` (read first). A live run may
 * have gained rows since: they come after (parts are appended, a compaction keeps the
 * order), so its first `steps.length` rows are the ones read first; anything else means
 * the run was rewritten under the report, which is said rather than charted wrong.
 */
function readPrefix(reader: RunReader, names: string[], steps: Float64Array): NativeColumn[] {
  const table = reader.stepTable(['step', ...names]);
  const now = table.columns.find((c) => c.name === 'step')?.values ?? new Float64Array(0);
  let same = now.length >= steps.length;
  for (let i = 0; same && i < steps.length; i++) same = Object.is(now[i], steps[i]);
  if (!same) {
    throw new RlprobeError('RLPROBE_IO', `run ${reader.runDir} changed while it was read for the report (its first ${steps.length} rows are no longer the ones read first): report it again`);
  }
  return table.columns.filter((c) => c.name !== 'step');
}

/** Rows among the first `n` of `col` that hold a value. */
function presentIn(col: NativeColumn, n: number): number {
  if (col.kind === 'list_f64') {
    let k = 0;
    for (let i = 0; i < n; i++) if (!col.valid || col.valid[i]) k++;
    return col.valid ? k : Math.min(n, (col.offsets?.length ?? 1) - 1);
  }
  if (!col.valid) return Math.min(n, col.values.length);
  let k = 0;
  for (let i = 0; i < n; i++) k += col.valid[i];
  return k;
}

/**
 * Reads every step column of `reader` but `steps` (given) a group at a time, downsampling
 * and summarising each scalar column, yielding to the event loop between groups so the
 * collector can free the last group's columns (their memory is native: V8 frees it only
 * when it collects the arrays).
 */
export async function readChartData(reader: RunReader, steps: Float64Array, rows: Int32Array | null, buckets: number): Promise<ChartData> {
  const listed = reader.stepColumns().filter((c) => c.name !== 'step');
  const lists = new Set(listed.filter((c) => c.kind === 'list_f64').map((c) => c.name));
  const present = new Map<string, number>([['step', steps.length]]);
  const ys = new Map<string, Array<number | null>>();
  const summaries = new Map<string, SeriesSummary>();
  const n = steps.length;
  let frame = downsample(steps, [], buckets, rows);
  for (let i = 0; i < listed.length; i += COLUMNS_PER_READ) {
    const group = listed.slice(i, i + COLUMNS_PER_READ).map((c) => c.name);
    const cols = readPrefix(reader, group, steps);
    for (const col of cols) {
      present.set(col.name, presentIn(col, n));
      if (col.kind === 'list_f64') continue;
      const xs = col.values.subarray(0, n);
      frame = downsample(steps, [xs], buckets, rows);
      ys.set(col.name, frame.ys[0]);
      summaries.set(col.name, summarise(xs, present.get(col.name)!, rows));
    }
    await nextTurn();
  }
  // the table's own order (a column no file of the read holds is not a column of it)
  const order = ['step', ...listed.map((c) => c.name).filter((c) => present.has(c))];
  return { facts: new ColumnFacts(order, lists, present), ys, summaries, x: frame.x, rows: frame.rows, reduced: frame.reduced };
}

/** The band mean ± spread of each (mean, spread) pair, its two columns read together. */
export function readBands(reader: RunReader, steps: Float64Array, rows: Int32Array | null, buckets: number, pairs: Array<[mean: string, spread: string]>): Map<string, DownsampledBand> {
  const out = new Map<string, DownsampledBand>();
  for (const [mean, spread] of pairs) {
    const key = bandKey(mean, spread);
    if (out.has(key)) continue;
    const cols = readPrefix(reader, [mean, spread], steps);
    const series = (name: string) => cols.find((c) => c.name === name)?.values.subarray(0, steps.length) ?? new Float64Array(steps.length).fill(NaN);
    out.set(key, downsampleBand(steps, series(mean), series(spread), buckets, rows));
  }
  return out;
}

export function bandKey(mean: string, spread: string): string {
  return `${mean}\u0000${spread}`;
}
