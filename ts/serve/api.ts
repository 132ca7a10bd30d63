/**
 * The dashboard's JSON answers, each over the library (RunReader, the doctor, the report's
 * forensics, diffRuns): no second reading or diagnosis. Handlers take parsed parameters and
 * return plain values; http.ts writes them (non-finite numbers as strings).
 */
import { diffRuns } from '../diff/run-diff.js';
import { RlprobeError } from '../errors.js';
import type { SampleQuery } from '../reader/sample-stream.js';
import type { TrialCapture } from '../reader/trial-reader.js';
import { alongX, downsample, downsampleBand, rowsInRange } from '../report/downsample.js';
import { evidenceSamples, evidenceSteps, samplesAt } from '../report/forensics.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import type { SpanTreeNode } from '../schema/span-record.js';
import type { ChartsCache } from './charts-cache.js';
import type { DiagnosisQueue } from './diagnosis.js';
import type { RunEntry } from './run-entry.js';
import type { RunIndex } from './run-index.js';
import type { EventHub } from './sse.js';

export interface ServeContext {
  index: RunIndex;
  charts: ChartsCache;
  diagnosis: DiagnosisQueue;
  hub: EventHub;
}

/** An answer other than 200: the status and a message for the page. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Samples a list answer holds at most, and the characters of text each shows. */
const MAX_LISTED_SAMPLES = 200;
const LISTED_TEXT_CHARS = 400;
/** Spans a tree answer holds at most (a runaway agent can log thousands). */
const MAX_TREE_NODES = 2000;

export function entryOf(ctx: ServeContext, key: string): RunEntry {
  const entry = ctx.index.get(key);
  if (!entry) throw new HttpError(404, `no run ${JSON.stringify(key)} is served (the run list gives each run's key)`);
  return entry;
}

function readerOf(entry: RunEntry): NonNullable<RunEntry['reader']> {
  if (entry.reader === null) throw new HttpError(409, `run ${entry.shownPath} cannot be read: ${entry.error ?? 'not read yet'}`);
  return entry.reader;
}

export function listRuns(ctx: ServeContext): unknown {
  const runs = [...ctx.index.entries.values()].map((e) => e.row()).sort((a, b) => a.path.localeCompare(b.path));
  // the server's own counts: what it built, followed, put off, failed, dropped (nothing silently)
  const server = { charts: ctx.charts.counts, diagnoses: ctx.diagnosis.counts, streams: { open: ctx.hub.size, sent: ctx.hub.sent, dropped: ctx.hub.dropped } };
  return { roots: ctx.index.roots, runs, not_searched: ctx.index.notSearched, not_searched_total: ctx.index.notSearchedTotal, server };
}

export function runInfo(ctx: ServeContext, key: string): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const listing = reader.fileListing();
  return {
    run: entry.row(),
    manifest: reader.manifest,
    layout: entry.layout,
    columns: reader.stepColumns(),
    damaged: listing.damaged,
    foreign: listing.foreign,
    marks: entry.marks,
    rank_dirs: reader.rankDirs().length,
  };
}

export async function chartSnapshot(ctx: ServeContext, key: string): Promise<unknown> {
  const entry = entryOf(ctx, key);
  const charts = await ctx.charts.of(entry);
  return { run: key, specs: charts.specs(), points: charts.points(0), summaries: charts.summaries(), marks: entry.marks };
}

/** A finding's id in URLs and on the page: its code (one finding per code per run). */
export function findingsOf(entry: RunEntry): unknown {
  const live = new Set(entry.liveFindings.keys());
  const diagnosed = new Set(entry.diagnosed.map((f) => f.code));
  return {
    run: entry.key,
    state: entry.diagnosis,
    findings: entry.findings().map((f) => ({ ...f, source: diagnosed.has(f.code) ? 'diagnosis' : live.has(f.code) ? 'live doctor' : 'diagnosis' })),
  };
}

export function findingDetail(ctx: ServeContext, key: string, code: string): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const found = entry.findings().find((f) => f.code === code);
  if (!found) throw new HttpError(404, `run ${entry.shownPath} has no finding ${JSON.stringify(code)} (yet)`);
  const byStep = samplesAt(reader, evidenceSteps([found]));
  const samples = [...evidenceSamples([found], byStep).values()];
  return { finding: found, samples: samples.map((s) => sampleItem(s, null)), related: entry.findings().filter((f) => f.root_cause === found.code).map((f) => f.code) };
}

/** `probe samples` filters from a query string (the same names as its flags). */
export function sampleQuery(entry: RunEntry, q: URLSearchParams): SampleQuery {
  const query: SampleQuery = {};
  const int = (name: string): number | undefined => {
    const v = q.get(name);
    if (v === null || v === '') return undefined;
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new HttpError(400, `invalid ${name} ${JSON.stringify(v)}: expected a non-negative integer`);
    return Number(v);
  };
  const step = int('step');
  if (step !== undefined) query.step = step;
  const steps = q.get('steps');
  if (steps) {
    const m = /^(\d+)\.\.(\d+)$/.exec(steps);
    if (!m) throw new HttpError(400, `invalid steps ${JSON.stringify(steps)}: expected FROM..TO`);
    query.stepRange = [Number(m[1]), Number(m[2])];
  }
  const reasons = q.getAll('reason').filter((r) => r !== '');
  if (reasons.length) query.reason = reasons;
  const group = q.get('group');
  if (group) query.group = group;
  const rank = int('rank');
  if (rank !== undefined) query.rank = [rank];
  const reward = q.get('reward');
  if (reward) {
    const m = /^(-?[\d.e+-]*)\.\.(-?[\d.e+-]*)$/.exec(reward);
    const lo = m?.[1] ? Number(m[1]) : undefined;
    const hi = m?.[2] ? Number(m[2]) : undefined;
    if (!m || (lo !== undefined && !Number.isFinite(lo)) || (hi !== undefined && !Number.isFinite(hi))) throw new HttpError(400, `invalid reward ${JSON.stringify(reward)}: expected MIN..MAX (either side may be open)`);
    if (lo !== undefined) query.rewardMin = lo;
    if (hi !== undefined) query.rewardMax = hi;
  }
  const truncated = q.get('truncated');
  if (truncated === 'true' || truncated === 'false') query.truncated = truncated === 'true';
  else if (truncated) throw new HttpError(400, `invalid truncated ${JSON.stringify(truncated)}: expected true or false`);
  const text = q.get('text');
  if (text) query.text = text;
  const around = q.get('around_finding');
  if (around) {
    const f = entry.findings().find((x) => x.code === around);
    if (!f) throw new HttpError(400, `invalid around_finding ${JSON.stringify(around)}: the run has no such finding (its findings: ${entry.findings().map((x) => x.code).join(', ') || 'none'})`);
    query.aroundFinding = f;
  }
  return query;
}

export function listSamples(ctx: ServeContext, key: string, q: URLSearchParams): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const query = sampleQuery(entry, q);
  const offsetText = q.get('offset') ?? '0';
  if (!/^\d+$/.test(offsetText)) throw new HttpError(400, `invalid offset ${JSON.stringify(offsetText)}: expected a non-negative integer`);
  const offset = Number(offsetText);
  const samples: unknown[] = [];
  let matched = 0;
  try {
    for (const s of reader.samples(query)) {
      if (matched >= offset && samples.length < MAX_LISTED_SAMPLES) samples.push(sampleItem(s, LISTED_TEXT_CHARS));
      matched++;
      // enough to say there is a next page; the count stops there
      if (samples.length === MAX_LISTED_SAMPLES && matched > offset + MAX_LISTED_SAMPLES) break;
    }
  } catch (error) {
    if (error instanceof RlprobeError && error.code === 'RLPROBE_INVALID_QUERY') throw new HttpError(400, error.message);
    throw error;
  }
  return { run: key, offset, samples, more: matched > offset + samples.length };
}

/** One sample in full, its trial (when one was captured for it) and its span tree. */
export function sampleDetail(ctx: ServeContext, key: string, q: URLSearchParams): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const count = (name: string, fallback?: number): number => {
    const v = q.get(name);
    if (v === null && fallback !== undefined) return fallback;
    if (v === null || !/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new HttpError(400, `invalid ${name} ${JSON.stringify(v)}: a sample is named by step and rank (non-negative integers; rank 0 when left out) and id`);
    return Number(v);
  };
  const step = count('step');
  const rank = count('rank', 0);
  const id = q.get('id');
  if (!id) throw new HttpError(400, 'invalid id "": a sample is named by step, id and optionally rank');
  const sample = [...reader.samples({ step, sampleId: id, rank: [rank] })][0];
  if (!sample) throw new HttpError(404, `run ${entry.shownPath} has no sample ${JSON.stringify(id)} at step ${step} of rank ${rank}`);
  const span = sample.span_id ? reader.span(sample.span_id) : null;
  const trial = trialOfSpan(reader.trials({ step }), span?.root_id ?? null, id, rank);
  // its rollout: the sample's own span tree, else the rollout of the trial captured for it
  const rootId = span?.root_id ?? (trial as { rollout_span_id?: string } | null)?.rollout_span_id ?? null;
  const tree = rootId ? reader.spanTree(rootId) : null;
  return { sample: sampleItem(sample, null), span_id: sample.span_id ?? null, tree: tree ? treeItem(tree, sample.span_id ?? null) : null, trial };
}

export function spanDetail(ctx: ServeContext, key: string, spanId: string): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const span = reader.span(spanId);
  if (!span) throw new HttpError(404, `run ${entry.shownPath} has no span ${JSON.stringify(spanId)}`);
  const tree = reader.spanTree(span.root_id);
  const trials = span.step === null ? reader.trials() : reader.trials({ step: span.step });
  return { span, tree: tree ? treeItem(tree, spanId) : null, trial: trialOfSpan(trials, span.root_id, null, span.rank) };
}

export function runEvents(ctx: ServeContext, key: string, q: URLSearchParams): unknown {
  const reader = readerOf(entryOf(ctx, key));
  const kinds = q.getAll('kind').filter((k) => k !== '');
  return { run: key, events: reader.events({ ...(kinds.length ? { kinds } : {}), last: 500 }) };
}

/** `probe diff` of two runs; their findings from the server's diagnoses (queued when stale). */
export async function runDiff(ctx: ServeContext, a: string, b: string): Promise<unknown> {
  const ea = entryOf(ctx, a);
  const eb = entryOf(ctx, b);
  const ra = readerOf(ea);
  const rb = readerOf(eb);
  // both asked now, so the queue runs them back to back ahead of the runs merely due
  return diffRuns(ra, rb, { findingsA: ctx.diagnosis.findings(ea), findingsB: ctx.diagnosis.findings(eb) });
}

/** A sample for the page: texts whole (`chars` null) or cut with a marker, token ids left out. */
function sampleItem(s: StoredSampleRecord, chars: number | null): Record<string, unknown> {
  const { completion_token_ids: _ids, ...rest } = s as StoredSampleRecord & { completion_token_ids?: unknown };
  const cut = (t: unknown) => (typeof t === 'string' && chars !== null && t.length > chars ? `${t.slice(0, chars)}… (${t.length} characters)` : t);
  return { ...rest, prompt_text: cut(s.prompt_text), completion_text: cut(s.completion_text) };
}

interface TreeItem {
  span: SpanTreeNode['span'];
  here: boolean;
  children: TreeItem[];
  more: number;
}

function treeItem(root: SpanTreeNode, here: string | null): { root: TreeItem; nodes: number; clipped: boolean } {
  let nodes = 0;
  let clipped = false;
  const walk = (n: SpanTreeNode): TreeItem => {
    nodes++;
    const children: TreeItem[] = [];
    let more = 0;
    for (const c of n.children) {
      if (nodes >= MAX_TREE_NODES) {
        more++;
        clipped = true;
      } else children.push(walk(c));
    }
    return { span: n.span, here: n.span.span_id === here, children, more };
  };
  return { root: walk(root), nodes, clipped };
}

/** The capture of a rollout (by its root span), else the one labelled with the sample. */
function trialOfSpan(trials: TrialCapture[], rootId: string | null, sampleId: string | null, rank: number): unknown {
  const t = trials.find((x) => rootId !== null && x.spans.rollout_span_id === rootId) ?? trials.find((x) => sampleId !== null && x.sample_id === sampleId && x.rank === rank);
  if (!t) return null;
  const ex = t.trial.exception;
  return {
    capture_key: t.capture_key,
    name: t.trial.name,
    step: t.step,
    rank: t.rank,
    sample_id: t.sample_id,
    outcome: ex ? `failed: ${ex.type ?? 'exception'}${ex.message ? `: ${ex.message}` : ''}` : t.trial.finished ? 'finished' : 'unfinished',
    rewards: t.trial.rewards,
    timings: t.trial.timings,
    agent: t.trial.agent,
    model: t.trial.model,
    started_at: t.trial.started_at,
    finished_at: t.trial.finished_at,
    trajectories: t.trajectories.map((x) => ({ path: x.path, turns: x.turns, tool_calls: x.tool_calls })),
    rollout_span_id: t.spans.rollout_span_id,
  };
}


/** Points a zoom may ask for, at most (a chart is ~1,300 pixels wide). */
const MAX_ZOOM_POINTS = 20_000;

/**
 * A step range of some columns at full resolution (or min/max buckets of `points` when
 * more rows lie in it): what a page shows once zoomed in past its live buckets. The one
 * answer that reads whole columns — only the columns asked for, only when asked.
 */
export function seriesRange(ctx: ServeContext, key: string, q: URLSearchParams): unknown {
  const entry = entryOf(ctx, key);
  const reader = readerOf(entry);
  const known = new Set(reader.stepColumns().map((c) => c.name));
  const columns = (q.get('columns') ?? '').split(',').filter((c) => c !== '');
  if (columns.length === 0 || columns.length > 64) throw new HttpError(400, `invalid columns ${JSON.stringify(q.get('columns') ?? '')}: expected 1 to 64 step columns separated by commas`);
  const unknown = columns.find((c) => !known.has(c));
  if (unknown !== undefined) throw new HttpError(400, `invalid columns: run ${entry.shownPath} has no step column ${JSON.stringify(unknown)}`);
  const bands = (q.get('bands') ?? '').split(',').filter((b) => b !== '').map((b) => b.split(':'));
  if (bands.some((b) => b.length !== 2 || !known.has(b[0]) || !known.has(b[1]))) throw new HttpError(400, `invalid bands ${JSON.stringify(q.get('bands'))}: expected MEAN:SPREAD pairs of step columns`);
  const number = (name: string): number => {
    const v = Number(q.get(name) ?? 'NaN');
    if (!Number.isFinite(v)) throw new HttpError(400, `invalid ${name} ${JSON.stringify(q.get(name))}: expected a step number`);
    return v;
  };
  const from = number('from');
  const to = number('to');
  if (from > to) throw new HttpError(400, `invalid range ${from}..${to}: from is after to`);
  const points = q.get('points') === null ? 2000 : number('points');
  if (!Number.isInteger(points) || points < 10 || points > MAX_ZOOM_POINTS) throw new HttpError(400, `invalid points ${points}: expected an integer in 10..${MAX_ZOOM_POINTS}`);
  const wanted = [...new Set([...columns, ...bands.flat(), 'timestamp'])].filter((c) => known.has(c));
  const table = reader.stepTable(['step', ...wanted]);
  const col = (name: string) => table.columns.find((c) => c.name === name);
  const steps = col('step')?.values ?? new Float64Array(0);
  // each step once at its last write, by ascending step (as the charts and the doctor read it)
  const rows = rowsInRange(steps, from, to);
  const values = (name: string): Float64Array => {
    const c = col(name);
    if (!c || c.kind === 'list_f64') return new Float64Array(steps.length).fill(NaN);
    return c.valid ? Float64Array.from(c.values, (v, i) => (c.valid![i] ? v : NaN)) : c.values;
  };
  const buckets = Math.floor(points / 2);
  const d = downsample(steps, columns.map(values), buckets, rows);
  const time = alongX(steps, values('timestamp'), buckets, rows);
  const series: Record<string, Array<number | null>> = {};
  columns.forEach((c, k) => (series[c] = d.ys[k]));
  const bandPoints: Record<string, unknown> = {};
  for (const [mean, spread] of bands) bandPoints[`${mean}\u0000${spread}`] = downsampleBand(steps, values(mean), values(spread), buckets, rows);
  return { run: key, from, to, rows: d.rows, reduced: d.reduced, x: { step: d.x, time }, series, bands: bandPoints };
}
