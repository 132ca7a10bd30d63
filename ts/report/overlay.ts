/**
 * The charts of several runs on one step axis (`probe report A B C`): one chart per metric,
 * a line per run in the run's colour, each run's spread a band in that colour. Each run was
 * downsampled on its own, as a one-run report is (at most 2 × buckets points a series); the
 * overlay only merges those points. Every step they hold is kept when that fits in
 * 2 × buckets points; otherwise a grid of `buckets` buckets over the runs' steps, in which
 * each run keeps its minimum and maximum per bucket in the order they happened (so a spike
 * stays, within one bucket of its step) and a band its outermost edges.
 */
import type { Finding } from '../doctor/finding.js';
import type { ChartMark, ReportBand, ReportChart, ReportSeries, RunReport } from './build-report.js';

/** A run on the page: its name, colour, id prefix and report (its charts are what is merged). */
export interface OverlaidRun {
  label: string;
  color: string;
  /** Prefix of its element ids (`run2-`): findings are `run2-finding-0`. */
  prefix: string;
  report: Pick<RunReport, 'x' | 'charts' | 'diagnosis'>;
}

export interface Overlay {
  x: number[];
  charts: ReportChart[];
  /** Whether the runs' points were merged onto a grid (else every step they hold is drawn). */
  gridded: boolean;
}

type Values = Array<number | null>;

/** How a run's points land on the shared axis. */
interface Axis {
  x: number[];
  gridded: boolean;
  /** A run's series (on its own x) on the shared x: lines keep min and max, band edges their outer bound. */
  place(runX: number[], ys: Values, keep: 'extremes' | 'lowest' | 'highest'): Values;
}

function exactAxis(steps: number[]): Axis {
  const index = new Map(steps.map((s, i) => [s, i]));
  return {
    x: steps,
    gridded: false,
    place(runX, ys) {
      const out: Values = new Array<number | null>(steps.length).fill(null);
      for (let i = 0; i < runX.length; i++) if (ys[i] !== null) out[index.get(runX[i])!] = ys[i];
      return out;
    },
  };
}

/** `buckets` buckets over the integer steps lo..hi (more than 2 × buckets of them: each bucket holds two or more). */
function gridAxis(lo: number, hi: number, buckets: number): Axis {
  const span = hi - lo + 1;
  const x = new Array<number>(2 * buckets);
  for (let b = 0; b < buckets; b++) {
    x[2 * b] = lo + Math.ceil((b * span) / buckets);
    x[2 * b + 1] = lo + Math.ceil(((b + 1) * span) / buckets) - 1;
  }
  const bucketOf = (s: number) => Math.min(buckets - 1, Math.max(0, Math.floor(((s - lo) * buckets) / span)));
  return {
    x,
    gridded: true,
    place(runX, ys, keep) {
      const out: Values = new Array<number | null>(2 * buckets).fill(null);
      const low = new Array<number>(buckets).fill(Infinity);
      const high = new Array<number>(buckets).fill(-Infinity);
      const lowAt = new Array<number>(buckets).fill(-1);
      const highAt = new Array<number>(buckets).fill(-1);
      for (let i = 0; i < runX.length; i++) {
        const v = ys[i];
        if (v === null) continue;
        const b = bucketOf(runX[i]);
        if (v < low[b]) {
          low[b] = v;
          lowAt[b] = i;
        }
        if (v > high[b]) {
          high[b] = v;
          highAt[b] = i;
        }
      }
      for (let b = 0; b < buckets; b++) {
        if (lowAt[b] < 0) continue;
        if (keep === 'extremes') {
          const lowFirst = lowAt[b] <= highAt[b];
          out[2 * b] = lowFirst ? low[b] : high[b];
          out[2 * b + 1] = lowFirst ? high[b] : low[b];
        } else out[2 * b] = out[2 * b + 1] = keep === 'lowest' ? low[b] : high[b];
      }
      return out;
    },
  };
}

/** The shared step axis of the runs' charted points. */
function sharedAxis(runs: OverlaidRun[], buckets: number): Axis {
  const steps = new Set<number>();
  for (const r of runs) for (const s of r.report.x.run) steps.add(s);
  if (steps.size <= 2 * buckets) return exactAxis([...steps].sort((a, b) => a - b));
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of steps) {
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  return gridAxis(lo, hi, buckets);
}

/** A run's charted columns: each line's values and the band around it, if any. */
function runColumns(r: OverlaidRun): Map<string, { values: Values; band?: ReportBand }> {
  const out = new Map<string, { values: Values; band?: ReportBand }>();
  for (const c of r.report.charts) {
    if (c.x !== 'run') continue;
    c.series.forEach((s, k) => {
      if (!out.has(s.column)) out.set(s.column, { values: c.values[k], band: c.bands.find((b) => b.of === k) });
    });
  }
  return out;
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'metric';
}

/** Each run's findings marked on the charts of their columns (else on the run's first chart). */
function markFindings(charts: ReportChart[], runs: OverlaidRun[]): void {
  runs.forEach((run, k) => {
    run.report.diagnosis.findings.forEach((f: Finding, i) => {
      const mark: ChartMark = { step: f.onset_step, to: f.last_step, label: `${run.label}: ${f.code}`, kind: f.severity, target: `${run.prefix}finding-${i}` };
      const mine = charts.filter((c) => c.series.some((s) => s.run === k));
      const on = mine.filter((c) => f.columns.includes(c.series[0].column) || c.bands.some((b) => b.run === k && f.columns.includes(b.column)));
      for (const c of on.length ? on : mine.slice(0, 1)) c.marks.push(mark);
    });
  });
}

/** The overlay of `runs` (each already downsampled with `buckets`). */
export function overlayCharts(runs: OverlaidRun[], buckets: number): Overlay {
  const axis = sharedAxis(runs, buckets);
  const columns = runs.map(runColumns);
  const order = [...new Set(columns.flatMap((m) => [...m.keys()]))];
  const ids = new Map<string, number>();
  const charts = order.map((column): ReportChart => {
    const base = `metric-${slug(column)}`;
    const n = ids.get(base) ?? 0;
    ids.set(base, n + 1);
    const series: ReportSeries[] = [];
    const values: Values[] = [];
    const bands: ReportBand[] = [];
    runs.forEach((run, k) => {
      const got = columns[k].get(column);
      if (!got) return;
      const runX = run.report.x.run;
      series.push({ column, label: run.label, axis: 0, color: run.color, run: k });
      values.push(axis.place(runX, got.values, 'extremes'));
      if (got.band) {
        bands.push({
          of: series.length - 1,
          column: got.band.column,
          label: `${run.label} ± ${got.band.column}`,
          color: run.color,
          run: k,
          values: axis.place(runX, got.band.values, 'extremes'),
          lo: axis.place(runX, got.band.lo, 'lowest'),
          hi: axis.place(runX, got.band.hi, 'highest'),
        });
      }
    });
    return { id: n === 0 ? base : `${base}-${n + 1}`, title: column, axes: [column, null], series, bands, x: 'run', values, marks: [] };
  });
  markFindings(charts, runs);
  return { x: axis.x, charts, gridded: axis.gridded };
}
