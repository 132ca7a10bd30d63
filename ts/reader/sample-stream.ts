import { RlprobeError, native } from '../errors.js';
import { loadOnDemand } from '../schema/on-demand.js';
import { parseQuery } from './query-parse.js';
import type * as SampleQueryModule from './sample-query.js';
import { NativeSampleCursor, readSampleTable } from '../native.js';
import { SampleTable } from './sample-table.js';
import type { StoredSampleRecord } from '../schema/sample-record.js';
import type { ReadAdapter } from './migrations.js';
import { sampleRowsOf } from './sample-rows.js';

export type { SampleQuery } from './sample-query.js';

export interface ParsedSampleQuery {
  stepMin?: number;
  stepMax?: number;
  steps?: number[];
  reasons?: string[];
  group?: string;
  rewardMin?: number;
  rewardMax?: number;
  truncated?: boolean;
  text?: string;
  sampleId?: string;
  ranks: ReadonlySet<number> | null;
  columns?: string[];
  batchRows: number;
}

const DEFAULT_BATCH_ROWS = 1024;

/** Validates a query; throws RlprobeError RLPROBE_INVALID_QUERY naming the field and value. */
export function parseSampleQuery(query: unknown): ParsedSampleQuery {
  const q = parseQuery(() => loadOnDemand<typeof SampleQueryModule>(import.meta.url, './sample-query.js').SampleQuerySchema, 'sample filter', query ?? {});
  let stepMin: number | undefined;
  let stepMax: number | undefined;
  if (q.stepRange) {
    [stepMin, stepMax] = q.stepRange;
    if (stepMin > stepMax) {
      throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid sample filter stepRange: from ${stepMin} is after to ${stepMax}`);
    }
  }
  if (q.step !== undefined) {
    stepMin = Math.max(stepMin ?? q.step, q.step);
    stepMax = Math.min(stepMax ?? q.step, q.step);
  }
  if (q.aroundFinding !== undefined) {
    // combined with the other step filters: the intersection
    stepMin = Math.max(stepMin ?? q.aroundFinding.onset_step, q.aroundFinding.onset_step);
    stepMax = Math.min(stepMax ?? q.aroundFinding.last_step, q.aroundFinding.last_step);
  }
  if (q.rewardMin !== undefined && q.rewardMax !== undefined && q.rewardMin > q.rewardMax) {
    throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid sample filter rewardMin: ${q.rewardMin} is above rewardMax ${q.rewardMax}`);
  }
  return {
    stepMin,
    stepMax,
    steps: q.steps,
    reasons: q.reason === undefined ? undefined : Array.isArray(q.reason) ? q.reason : [q.reason],
    group: q.group === undefined ? undefined : String(q.group),
    rewardMin: q.rewardMin,
    rewardMax: q.rewardMax,
    truncated: q.truncated,
    text: q.text,
    sampleId: q.sampleId === undefined ? undefined : String(q.sampleId),
    ranks: q.rank === undefined ? null : new Set(Array.isArray(q.rank) ? q.rank : [q.rank]),
    columns: q.columns,
    batchRows: q.batchRows ?? DEFAULT_BATCH_ROWS,
  };
}

/** The query's filters as the native reads take them. */
export function nativeSampleFilter(q: ParsedSampleQuery) {
  return {
    stepMin: q.stepMin,
    stepMax: q.stepMax,
    steps: q.steps,
    reasons: q.reasons,
    group: q.group,
    rewardMin: q.rewardMin,
    rewardMax: q.rewardMax,
    truncated: q.truncated,
    text: q.text,
    sampleId: q.sampleId,
  };
}

/** Streams batches of sample records from each directory in turn, filtered in Rust. */
export function* streamSampleBatches(
  dirs: ReadonlyArray<{ rank: number; dir: string }>,
  q: ParsedSampleQuery,
  adapter: ReadAdapter,
): Generator<StoredSampleRecord[], void, undefined> {
  const filter = nativeSampleFilter(q);
  if (q.stepMin !== undefined && q.stepMax !== undefined && q.stepMin > q.stepMax) return;
  const columns = q.columns?.map((c) => adapter.physicalSampleColumn(c));
  for (const { rank, dir } of dirs) {
    const cursor = native(() => new NativeSampleCursor(dir, filter, columns, q.batchRows));
    try {
      for (;;) {
        const batch = native(() => cursor.next());
        if (batch === null || batch === undefined) break;
        if (adapter.migrated) for (const c of batch.columns) c.name = adapter.currentSampleColumn(c.name);
        yield sampleRowsOf(batch, rank);
      }
    } finally {
      // a loop left early: the reading threads stop now, not when the collector finds the cursor
      cursor.close();
    }
  }
}

/**
 * The matching samples of `dirs` as one columnar table (texts as UTF-8 buffers, numbers as
 * Float64Arrays), under current column names.
 */
export function readSampleTableOf(dirs: ReadonlyArray<{ rank: number; dir: string }>, q: ParsedSampleQuery, adapter: ReadAdapter): SampleTable {
  if (q.stepMin !== undefined && q.stepMax !== undefined && q.stepMin > q.stepMax) return new SampleTable({ rows: 0, columns: [] });
  const columns = q.columns?.map((c) => adapter.physicalSampleColumn(c));
  const native_ = native(() => readSampleTable(dirs.map(({ rank, dir }) => ({ rank, dir })), nativeSampleFilter(q), columns));
  if (adapter.migrated) for (const c of native_.columns) c.name = adapter.currentSampleColumn(c.name);
  return new SampleTable(native_);
}

/**
 * The distinct steps holding samples in `dirs`, ascending. Reads the step column alone as
 * raw numbers (no record per sample), so a million samples cost a few milliseconds.
 */
export function sampledStepsOf(dirs: ReadonlyArray<{ rank: number; dir: string }>, adapter: ReadAdapter): number[] {
  const column = adapter.physicalSampleColumn('step');
  // samples arrive grouped by step: keep each run of equal steps once, then sort and dedupe
  const runs: number[] = [];
  for (const { dir } of dirs) {
    const cursor = native(() => new NativeSampleCursor(dir, {}, [column], 65_536));
    for (;;) {
      const batch = native(() => cursor.next());
      if (batch === null || batch === undefined) break;
      const col = batch.columns.find((c) => c.name === column);
      const values = col?.values;
      if (!values) continue;
      let prev = NaN;
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (v !== prev && (!col.valid || col.valid[i])) runs.push((prev = v));
      }
    }
  }
  const sorted = Float64Array.from(runs).sort();
  const out: number[] = [];
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) out.push(sorted[i]);
  return out;
}
