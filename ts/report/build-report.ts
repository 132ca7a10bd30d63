/**
 * Everything `probe report` shows, gathered once and rendered as HTML or Markdown: the
 * charts' downsampled series, the doctor's findings and their evidence samples, sample
 * forensics, events placed on the step axis, the run's manifest, and optionally a diff
 * against a second run.
 */
import { z } from 'zod';

import { runStatus, settleRunStatus } from '../reader/run-status.js';
import { writerLock } from '../reader/writer-lock.js';
import type { RunStatus } from '../reader/run-status.js';
import { diagnoseAsync } from '../doctor/diagnose.js';
import type { Diagnosis } from '../doctor/diagnose.js';
import type { Finding, Severity } from '../doctor/finding.js';
import { align, diffRuns, gather } from '../diff/run-diff.js';
import type { RunDiff } from '../diff/run-diff.js';
import type { RunReader, SkippedRunFile } from '../reader/run-reader.js';
import type { RunView } from '../reader/run-view.js';
import { SurfaceReads } from '../reader/surface-reads.js';
import type { DamagedSurface } from '../reader/surface-reads.js';
import type { RunEvent } from '../schema/event.js';
import type { RunManifest } from '../schema/manifest.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import { RlprobeError } from '../errors.js';
import { VERSION } from '../version.js';
import { chartGroups } from './chart-groups.js';
import type { BandSpec, ChartSeriesSpec, ChartSpec } from './chart-groups.js';
import { seriesColour } from './colours.js';
import { bandKey, readBands, readChartData, summarise } from './chart-data.js';
import { DEFAULT_BUCKETS, downsample, stepRows } from './downsample.js';
import { trialLinks } from './trial-links.js';
import type { ReportTrials } from './trial-links.js';
import { chooseSteps, evidenceSamples, evidenceSteps, sampleSpanTrees, samplesAt, stepSamples } from './forensics.js';
import type { SampleSpans, StepSamples } from './forensics.js';
import type { SpanKindCount } from '../schema/span-record.js';

export interface ReportOptions {
  /** A second run: adds the diff section (`probe report A --against B`). */
  against?: RunReader;
  /** Steps to show samples of (default: first and last sampled steps, findings' onsets). */
  steps?: number[];
  /** Samples shown per capture reason at each forensics step (4). */
  samplesPerReason?: number;
  /** Downsampling buckets per chart (1,000: at most 2,000 points a series). */
  buckets?: number;
  /** Read per-sample records (forensics and evidence); false skips them (true). */
  samples?: boolean;
  /** Events listed in the table (500); all are counted. */
  maxEvents?: number;
  /** Called as each stage starts. */
  onProgress?: (done: number, total: number, stage: string) => void;
}

/** The report's plain options, checked before anything is read. */
const ReportOptionsSchema = z.object({
  steps: z.array(z.number().int().min(0)).optional(),
  samplesPerReason: z.number().int().min(0).max(1000).optional(),
  buckets: z.number().int().min(10).max(1_000_000).optional(),
  samples: z.boolean().optional(),
  maxEvents: z.number().int().min(0).optional(),
});

function validate(options: ReportOptions): void {
  const { against: _a, onProgress: _p, ...plain } = options;
  const parsed = ReportOptionsSchema.safeParse(plain);
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  let value: unknown = plain;
  for (const k of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey];
  throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid report option ${issue.path.map(String).join('.')}: ${issue.message} (got ${JSON.stringify(value) ?? String(value)})`);
}

/** A vertical mark on a chart: a finding's onset (to its last step) or a divergence. */
export interface ChartMark {
  step: number;
  to: number | null;
  label: string;
  kind: Severity | 'divergence';
  /** The id of the page element it explains. */
  target: string;
}

export interface ReportSeries extends ChartSeriesSpec {
  color: string;
  /** On a chart of several runs: the index of the run this line is. */
  run?: number;
}

/** A band mean ± spread around series `of`, downsampled like the lines. */
export interface ReportBand extends BandSpec {
  color: string;
  /** On a chart of several runs: the index of the run this band is. */
  run?: number;
  /** The spread itself (for the legend), and the band's edges. */
  values: Array<number | null>;
  lo: Array<number | null>;
  hi: Array<number | null>;
}

export interface ReportChart extends Omit<ChartSpec, 'series' | 'bands'> {
  series: ReportSeries[];
  bands: ReportBand[];
  /** Which x axis of `RunReport.x` the values align to. */
  x: 'run' | 'diff';
  values: Array<Array<number | null>>;
  marks: ChartMark[];
}

import type { SeriesSummary } from './chart-data.js';
export type { SeriesSummary };


/** An event placed on the step axis (by its step, else by its time among the steps'). */
export interface ReportEvent extends RunEvent {
  at_step: number | null;
}

export interface RunReport {
  generated_at: string;
  rlprobe_version: string;
  run: {
    dir: string;
    manifest: RunManifest;
    status: Pick<RunStatus, 'state' | 'summary'>;
    rows: number;
    first_step: number | null;
    last_step: number | null;
    step_columns: number;
    samples: number;
  };
  x: { run: number[]; diff?: number[] };
  /** Exact figures of every charted column (the charts are downsampled). */
  summaries: Record<string, SeriesSummary>;
  downsampling: { rows: number; points: number; buckets: number; reduced: boolean };
  charts: ReportChart[];
  diagnosis: Diagnosis;
  /** Evidence samples by `step/sample_id` (see forensics.sampleKey). */
  evidence: Record<string, StoredSampleRecord>;
  forensics: StepSamples[];
  /** Span counts per kind, and the rollout trees of the samples shown (when the run has spans). */
  spans: { counts: SpanKindCount[] } & SampleSpans;
  /** Captured trials at the shown steps, linked from their samples. */
  trials: ReportTrials;
  events: { total: number; by_kind: Record<string, number>; listed: ReportEvent[] };
  diff: { b: { dir: string; manifest: RunManifest }; result: RunDiff; charts: ReportChart[] } | null;
  /**
   * Parts of the run that could not be read (samples, spans, trials, events), with the
   * error naming the file: shown instead of failing the report. (Damaged steps fail it:
   * every chart is made of them.)
   */
  damaged: DamagedSurface[];
  /** Files skipped as not the recorder's (or copies). */
  foreign_files: SkippedRunFile[];
}

/** A run's report without its charts: one run of several on a page, whose charts are merged. */
export type RunFacts = Omit<RunReport, 'charts' | 'x' | 'diff'>;

/** Where (by step) an event without one happened: the last step logged at or before it. */
function stepAtTime(steps: Float64Array, times: Float64Array): (t: number) => number | null {
  let idx: number[] | null = null;
  return (t) => {
    // built on the first event without a step (most runs have none)
    if (idx === null) {
      idx = [];
      let ascending = true;
      for (let i = 0; i < times.length; i++) {
        if (!Number.isFinite(times[i])) continue;
        if (idx.length && times[i] < times[idx[idx.length - 1]]) ascending = false;
        idx.push(i);
      }
      if (!ascending) idx.sort((a, b) => times[a] - times[b]);
    }
    let lo = 0;
    let hi = idx.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (times[idx[mid]] <= t) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found >= 0) return steps[idx[found]];
    return idx.length ? steps[idx[0]] : null;
  };
}

/** How a run ended or was stopped: always listed. */
const ENDING_KINDS = /crash|signal|error|auto_halt|process_exit|recorder_close/;
/** Kinds that can flood a run (one per bad record): listed last. */
const NOISY_KINDS = new Set(['bad_record', 'recorder_drops']);

/**
 * At most `max` events, in time order: endings and halts first, then the other kinds, then
 * the floods (bad records, drops), so a crash is never crowded out.
 */
function listedEvents(events: RunEvent[], max: number): RunEvent[] {
  if (events.length <= max) return events;
  const tier = (e: RunEvent) => (ENDING_KINDS.test(e.kind) ? 0 : NOISY_KINDS.has(e.kind) ? 2 : 1);
  const keep = new Set<RunEvent>();
  for (const t of [0, 1, 2]) {
    for (const e of events) {
      if (keep.size >= max) break;
      if (tier(e) === t) keep.add(e);
    }
  }
  return events.filter((e) => keep.has(e));
}

function extent(steps: Float64Array): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of steps) {
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  return steps.length ? [lo, hi] : null;
}

/** The chart marks of each finding: on every chart showing one of its columns (else the first). */
function findingMarks(charts: ReportChart[], findings: Finding[]): void {
  findings.forEach((f, i) => {
    const mark: ChartMark = { step: f.onset_step, to: f.last_step, label: f.code, kind: f.severity, target: `finding-${i}` };
    const on = charts.filter((c) => [...c.series, ...c.bands].some((s) => f.columns.includes(s.column)));
    for (const c of on.length ? on : charts.slice(0, 1)) c.marks.push(mark);
  });
}

/** Diff charts: the earliest-diverging metrics (else the headline ones), A over B. */
const DIFF_CHARTS = 6;
const HEADLINE = ['reward_mean', 'kl_mean', 'entropy_mean', 'completion_len_mean', 'loss', 'grad_norm'];

function diffCharts(d: RunDiff, va: RunView, vb: RunView, buckets: number): { x: number[]; charts: ReportChart[] } {
  const diverged = d.metrics.filter((m) => m.divergence);
  const chosen = (diverged.length ? diverged : d.metrics.filter((m) => HEADLINE.includes(m.metric))).slice(0, DIFF_CHARTS);
  const common = align(va.steps, vb.steps);
  const series = chosen.flatMap((m) => [gather(va.series(m.metric), common.ia), gather(vb.series(m.metric), common.ib)]);
  const ds = downsample(common.steps, series, buckets);
  const charts = chosen.map((m, k): ReportChart => ({
    id: `diff-${m.metric.replace(/[^A-Za-z0-9]+/g, '-')}`,
    title: m.metric,
    axes: [m.metric, null],
    series: [
      { column: m.metric, label: 'A', axis: 0, color: seriesColour(0) },
      { column: m.metric, label: 'B', axis: 0, color: seriesColour(1) },
    ],
    bands: [],
    x: 'diff',
    values: [ds.ys[2 * k], ds.ys[2 * k + 1]],
    marks: m.divergence
      ? [{ step: m.divergence.step, to: null, label: `diverges (${(m.divergence.difference / m.divergence.sigma).toFixed(1)} σ)`, kind: 'divergence', target: `diff-metric-${k}` }]
      : [],
  }));
  return { x: ds.x, charts };
}

/** Gathers the report of `reader` (the libuv pool diagnoses while this thread reads). */
export async function buildReport(reader: RunReader, options: ReportOptions = {}): Promise<RunReport> {
  validate(options);
  const withSamples = options.samples ?? true;
  const buckets = options.buckets ?? DEFAULT_BUCKETS;
  const stages = options.against ? 6 : 5;
  let stage = 0;
  const progress = (what: string) => options.onProgress?.(stage++, stages, what);

  progress('reading steps, diagnosing');
  const reads = new SurfaceReads();
  // one listing for the damaged, sample and foreign files (each opens every shard's footer)
  const files = reader.fileListing();
  for (const d of files.damaged) if (d.surface !== 'steps') reads.mark(d.surface, d.reason);
  const diagnosisP = diagnoseAsync(reader, { samples: withSamples });
  // a rejected diagnosis must not go unhandled while the steps are read
  diagnosisP.catch(() => undefined);
  // the doctor holds its own copy of the steps (and the samples' figures) while it runs: a
  // one-run report reads its charts' columns after it, so the two never add up (at 1M steps
  // × 47 columns with 8M samples, 1.66 GiB together); a comparison reads both runs beside it
  if (!options.against) await diagnosisP.catch(() => undefined);
  const base = reader.view(['timestamp']);
  let diffP: Promise<RunDiff> | null = null;
  let viewA: RunView | null = null;
  let viewB: RunView | null = null;
  if (options.against) {
    viewA = reader.view();
    viewB = options.against.view();
    diffP = diffRuns(reader, options.against, { findingsA: diagnosisP.then((d) => d.findings), samples: withSamples, viewA, viewB });
    diffP.catch(() => undefined);
  }

  progress('downsampling charts');
  const rows = stepRows(base.steps);
  // a group of columns at a time, each let go before the next is read
  const ds = await readChartData(reader, base.steps, rows, buckets);
  const specs = chartGroups(ds.facts);
  const bandPairs = specs.flatMap((spec) => spec.bands.map((b): [string, string] => [spec.series[b.of].column, b.column]));
  const bands = readBands(reader, base.steps, rows, buckets, bandPairs);
  const column = (c: string) => ds.ys.get(c) ?? new Array<number | null>(ds.x.length).fill(null);
  const columns = [...new Set(specs.flatMap((c) => [...c.series, ...c.bands].map((s) => s.column)))];
  const summaries = Object.fromEntries(columns.map((c) => [c, ds.summaries.get(c) ?? summarise([], 0, null)]));
  const charts: ReportChart[] = specs.map((spec) => ({
    ...spec,
    series: spec.series.map((s, k) => ({ ...s, color: seriesColour(k) })),
    bands: spec.bands.map((b) => ({
      ...b,
      color: seriesColour(b.of),
      values: column(b.column),
      ...bands.get(bandKey(spec.series[b.of].column, b.column))!,
    })),
    x: 'run',
    values: spec.series.map((s) => column(s.column)),
    marks: [],
  }));

  progress('reading samples');
  const range = extent(base.steps);
  // needs no findings: read while the pool is still diagnosing
  const sampled = withSamples && !options.steps?.length ? reads.attempt('samples', [], () => reader.sampledSteps()) : [];
  const diagnosis = await diagnosisP;
  findingMarks(charts, diagnosis.findings);
  let forensics: StepSamples[] = [];
  let evidence: Record<string, StoredSampleRecord> = {};
  if (withSamples) {
    const chosen = chooseSteps(diagnosis.findings, sampled, options.steps);
    // one pass over the sample files for the shown steps and the evidence together
    const byStep = reads.attempt('samples', new Map<number, StoredSampleRecord[]>(), () => samplesAt(reader, [...chosen.map((c) => c.step), ...evidenceSteps(diagnosis.findings)]));
    forensics = stepSamples(chosen, byStep, options.samplesPerReason ?? 4);
    evidence = Object.fromEntries(evidenceSamples(diagnosis.findings, byStep));
  }
  const sampleCount = reads.isDamaged('samples') ? 0 : (files.sampleFiles?.reduce((n, f) => n + f.rows, 0) ?? 0);
  const spanCounts = reads.attempt('spans', [], () => reader.spanCounts());
  const shownSamples = [...forensics.flatMap((f) => f.samples), ...Object.values(evidence)];
  const noSpans: SampleSpans = { rootOf: {}, trees: {} };
  const sampleSpans = spanCounts.length ? reads.attempt('spans', noSpans, () => sampleSpanTrees(reader, shownSamples)) : noSpans;
  const trials = reads.attempt('trials', { total: 0, at: {} }, () => trialLinks(reader, [...forensics.map((f) => f.step), ...shownSamples.map((x) => x.step)]));

  progress('reading events');
  const events = reads.attempt('events', [], () => reader.events());
  const at = stepAtTime(base.steps, base.series('timestamp'));
  // keyed by event kinds, which any writer can set: no prototype to collide with
  const byKind = Object.create(null) as Record<string, number>;
  for (const e of events) byKind[e.kind] = (byKind[e.kind] ?? 0) + 1;
  const listed = listedEvents(events, options.maxEvents ?? 500).map((e): ReportEvent => ({ ...e, at_step: e.step ?? at(e.timestamp) }));
  const storage = reads.attempt('steps', null, () => reader.storage());
  const status = storage ? settleRunStatus(runStatus(events), { layout: storage.layout, lock: writerLock(reader.runDir) }) : runStatus(events);

  let diff: RunReport['diff'] = null;
  const x: RunReport['x'] = { run: ds.x };
  if (diffP && options.against && viewA && viewB) {
    progress('comparing runs');
    const result = await diffP;
    const dc = diffCharts(result, viewA, viewB, buckets);
    x.diff = dc.x;
    diff = { b: { dir: options.against.runDir, manifest: options.against.manifest }, result, charts: dc.charts };
  }
  progress('rendering');
  return {
    generated_at: new Date().toISOString(),
    rlprobe_version: VERSION,
    run: {
      dir: reader.runDir,
      manifest: reader.manifest,
      status: { state: status.state, summary: status.summary },
      rows: ds.rows,
      first_step: range?.[0] ?? null,
      last_step: range?.[1] ?? null,
      step_columns: ds.facts.columns().length,
      samples: sampleCount,
    },
    x,
    summaries,
    downsampling: { rows: ds.rows, points: ds.x.length, buckets, reduced: ds.reduced },
    charts,
    diagnosis,
    evidence,
    forensics,
    spans: { counts: spanCounts, ...sampleSpans },
    trials,
    events: { total: events.length, by_kind: byKind, listed },
    diff,
    damaged: reads.damaged,
    foreign_files: files.foreign,
  };
}
