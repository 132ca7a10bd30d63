/**
 * A followed run's charts: every scalar step column downsampled (live-downsample.ts), built
 * once a few columns at a time, as the report reads (chart-data.ts), then grown from the
 * rows the run adds — the only read per update is `stepTableFrom(rows read)`. A run whose
 * steps stop ascending (resumed from a checkpoint) or whose rows were rewritten is built
 * again, each step at its last write as the report and doctor chart it.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

import type { NativeColumn } from '../native.js';
import type { RunReader } from '../reader/run-reader.js';
import { REWARD_COMPONENT_PREFIX } from '../schema/step-record.js';
import { chartGroups } from '../report/chart-groups.js';
import type { ChartColumns, ChartSpec } from '../report/chart-groups.js';
import { stepRows } from '../report/downsample.js';
import { LiveDownsample } from '../report/live-downsample.js';
import type { AppendedColumn, LivePoints } from '../report/live-downsample.js';

/** Columns read at once while building: bounds memory as the report's reads do. */
const COLUMNS_PER_READ = 6;
/** Columns that are the x axis or bookkeeping, never a series. */
const NOT_SERIES = new Set(['step', 'timestamp', 'rank']);

/** Charts built in this process: part of each one's generation. */
let instances = 0;

/** How `follow` went: rows added, nothing new, or the run must be built again. */
export type FollowResult = 'grew' | 'same' | 'rebuild';

export class LiveCharts implements ChartColumns {
  private ds: LiveDownsample;
  /** Physical rows of the run read so far. */
  rowsRead = 0;
  /** The last row's step: the next tail's first row must be it (the prefix is unchanged). */
  private lastRowStep = NaN;
  /** Steps ascend strictly in every row read (else each step is charted at its last write). */
  private ordered = true;
  private readonly lists = new Set<string>();
  private order: string[] = ['step'];
  /** Bumped on each build, so a client holding points of an older build takes them all again. */
  build = 0;
  private readonly instance = ++instances;

  private constructor(private readonly buckets: number) {
    this.ds = new LiveDownsample(buckets);
  }

  /** Reads `reader`'s steps into charts (a few columns at a time, yielding between reads). */
  static async open(reader: RunReader, buckets: number): Promise<LiveCharts> {
    const charts = new LiveCharts(buckets);
    await charts.rebuild(reader);
    return charts;
  }

  async rebuild(reader: RunReader): Promise<void> {
    const ds = new LiveDownsample(this.buckets);
    const frame = reader.stepTable(['step', 'timestamp']);
    const rawSteps = column(frame.columns, 'step')?.values ?? new Float64Array(0);
    const n = rawSteps.length;
    const rows = stepRows(rawSteps);
    const gather = (xs: ArrayLike<number>): ArrayLike<number> => (rows === null ? xs : Float64Array.from(rows, (r) => xs[r]));
    const steps = gather(rawSteps);
    ds.sizeFor(steps.length);
    const times = column(frame.columns, 'timestamp');
    ds.append(steps, times ? gather(timesOf(times)) : null, new Map());
    const listed = reader.stepColumns().filter((c) => !NOT_SERIES.has(c.name));
    const lists = new Set(listed.filter((c) => c.kind === 'list_f64').map((c) => c.name));
    const scalars = listed.filter((c) => !lists.has(c.name)).map((c) => c.name);
    for (let i = 0; i < scalars.length; i += COLUMNS_PER_READ) {
      const group = scalars.slice(i, i + COLUMNS_PER_READ);
      const cols = prefix(reader.stepTable(['step', ...group]), rawSteps);
      for (const col of cols) ds.addRows(col.name, appended(col, n, rows), 0);
      await nextTurn();
    }
    this.ds = ds;
    this.lists.clear();
    for (const l of lists) this.lists.add(l);
    this.order = ['step', ...listed.map((c) => c.name)];
    // bands around means (reward_std around reward_mean): both columns read together
    for (const [mean, spread] of this.bandPairs()) {
      const key = ds.trackBand(mean, spread);
      const cols = prefix(reader.stepTable(['step', mean, spread]), rawSteps);
      const m = column(cols, mean);
      const s = column(cols, spread);
      if (m && s) ds.addBand(key, appended(m, n, rows), appended(s, n, rows), 0);
    }
    this.rowsRead = n;
    this.lastRowStep = n ? rawSteps[n - 1] : NaN;
    this.ordered = rows === null;
    this.build++;
  }

  /**
   * Adds the rows `reader` gained since the last read. Says 'rebuild' when they cannot simply
   * follow: the steps went back (a resumed run) or the rows read before are not there.
   */
  follow(reader: RunReader): FollowResult {
    const from = Math.max(0, this.rowsRead - 1);
    const tail = reader.stepTableFrom(from);
    if (tail.totalRows === this.rowsRead) return 'same';
    if (tail.totalRows < this.rowsRead) return 'rebuild';
    const steps = column(tail.table.columns, 'step')?.values ?? new Float64Array(0);
    const skip = this.rowsRead - tail.firstRow;
    // the last row read must be where it was: rows only ever append
    if (this.rowsRead > 0 && !Object.is(steps[skip - 1], this.lastRowStep)) return 'rebuild';
    if (!this.ordered) return 'rebuild';
    let last = this.lastRowStep;
    for (let i = skip; i < steps.length; i++) {
      if (!(steps[i] > last) && !Number.isNaN(last)) return 'rebuild';
      last = steps[i];
    }
    const cols = new Map<string, AppendedColumn>();
    for (const col of tail.table.columns) {
      if (NOT_SERIES.has(col.name)) continue;
      if (col.kind === 'list_f64') {
        this.lists.add(col.name);
        continue;
      }
      cols.set(col.name, { values: col.values.subarray(skip), valid: col.valid?.subarray(skip) ?? null });
    }
    const times = column(tail.table.columns, 'timestamp');
    const start = this.ds.rows;
    this.ds.append(steps.subarray(skip), times ? timesOf(times).subarray(skip) : null, cols);
    for (const col of tail.table.columns) if (!this.order.includes(col.name)) this.order.push(col.name);
    for (const [mean, spread] of this.bandPairs()) {
      const key = `${mean}\u0000${spread}`;
      if (this.ds.hasBand(key)) continue;
      // a spread first logged now: its band starts with these rows
      this.ds.trackBand(mean, spread);
      const m = cols.get(mean);
      const sp = cols.get(spread);
      if (m && sp) this.ds.addBand(key, m, sp, start);
    }
    this.rowsRead = tail.totalRows;
    this.lastRowStep = last;
    return 'grew';
  }

  /** Which (mean, spread) pairs the charts draw as bands. */
  private bandPairs(): Array<[string, string]> {
    const pairs: Array<[string, string]> = [];
    for (const chart of chartGroups(this)) for (const b of chart.bands) pairs.push([chart.series[b.of].column, b.column]);
    return pairs;
  }

  get generation(): string {
    // the instance too: charts dropped and built again start their counts again
    return `${this.instance}.${this.build}.${this.ds.generation}`;
  }

  get bucketCount(): number {
    return this.ds.bucketCount;
  }

  get rows(): number {
    return this.ds.rows;
  }

  specs(): ChartSpec[] {
    return chartGroups(this);
  }

  /** Points from bucket `fromBucket` on, every series and band. */
  points(fromBucket = 0): LivePoints & { generation: string } {
    return { ...this.ds.points(fromBucket), generation: this.generation };
  }

  summaries(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const c of this.ds.columns()) out[c] = this.ds.summary(c);
    return out;
  }

  // ChartColumns: what chartGroups asks
  columns(): string[] {
    return this.order.filter((c) => c === 'step' || this.lists.has(c) || this.ds.presentCount(c) > 0 || this.ds.columns().includes(c));
  }

  seriesNames(): string[] {
    return this.columns().filter((c) => c !== 'step' && !this.lists.has(c));
  }

  componentNames(): string[] {
    return this.columns()
      .filter((c) => c.startsWith(REWARD_COMPONENT_PREFIX))
      .map((c) => c.slice(REWARD_COMPONENT_PREFIX.length));
  }

  has(name: string): boolean {
    return name === 'step' || this.ds.columns().includes(name);
  }

  presentCount(name: string): number {
    return name === 'step' ? this.ds.rows : this.ds.presentCount(name);
  }
}

function column(cols: NativeColumn[], name: string): NativeColumn | undefined {
  return cols.find((c) => c.name === name);
}

/** Timestamps as numbers (NaN where a row has none). */
function timesOf(col: NativeColumn): Float64Array {
  if (!col.valid) return col.values;
  return Float64Array.from(col.values, (v, i) => (col.valid![i] ? v : NaN));
}

/** `col`'s first `n` rows, in chart order (`rows`, when steps were re-logged). */
function appended(col: NativeColumn, n: number, rows: Int32Array | null): AppendedColumn {
  const values = col.values.subarray(0, n);
  const valid = col.valid ? col.valid.subarray(0, n) : null;
  if (rows === null) return { values, valid };
  return { values: Float64Array.from(rows, (r) => values[r]), valid: valid ? Uint8Array.from(rows, (r) => valid[r]) : null };
}

/**
 * The columns of a read made after the steps were read: the run may have grown since, but
 * its first rows are the ones read first (rows only append); anything else is a rewrite.
 */
function prefix(table: { columns: NativeColumn[] }, steps: Float64Array): NativeColumn[] {
  const now = column(table.columns, 'step')?.values ?? new Float64Array(0);
  let same = now.length >= steps.length;
  for (let i = 0; same && i < steps.length; i++) same = Object.is(now[i], steps[i]);
  if (!same) throw new Error('the run was rewritten while it was read: it is read again on the next poll');
  return table.columns.filter((c) => c.name !== 'step');
}
