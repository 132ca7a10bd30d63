/** series: metrics over a step range, downsampled to a point budget, with summary statistics. */
import { z } from 'zod';

import { downsample, rowsInRange } from '../../report/downsample.js';
import { sparkline } from '../../report/markdown.js';
import { cursorArg, expecting, intArg, runArg, stepArg } from '../args.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { itemBytes, pageOf } from '../paging.js';
import { NextCursorSchema } from '../schemas.js';
import { line, num } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';

const DEFAULT_POINTS = 200;
const MAX_POINTS = 500;
/** Metric names listed in the error for an unknown one. */
const LISTED_NAMES = 60;

const SummarySchema = z.object({
  first: z.number().nullable(),
  last: z.number().nullable(),
  min: z.number().nullable(),
  min_step: z.number().nullable(),
  max: z.number().nullable(),
  max_step: z.number().nullable(),
  mean: z.number().nullable(),
  points: z.number().int().describe('Finite values in the range'),
  non_finite: z.number().int().describe('Rows in the range holding NaN, ±Infinity or no value'),
});

const SeriesSchema = z.object({
  metric: z.string(),
  x: z.array(z.number()).describe('Steps of the kept points'),
  y: z.array(z.number().nullable()).describe('Values, aligned to x (null: no finite value in that bucket); 6 significant digits'),
  reduced: z.boolean().describe('Whether the rows were downsampled (each bucket keeps its minimum and maximum, so spikes survive)'),
  summary: SummarySchema.describe('Over every row in the range, not only the kept points'),
});

/** The statistics of `values` at `rows` (every row in order when null). */
function summarise(steps: Float64Array, values: Float64Array, rows: ArrayLike<number>): z.infer<typeof SummarySchema> {
  let first: number | null = null;
  let last: number | null = null;
  let min = Infinity;
  let max = -Infinity;
  let minStep: number | null = null;
  let maxStep: number | null = null;
  let sum = 0;
  let points = 0;
  for (let k = 0; k < rows.length; k++) {
    const i = rows[k];
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    first ??= v;
    last = v;
    if (v < min) [min, minStep] = [v, steps[i]];
    if (v > max) [max, maxStep] = [v, steps[i]];
    sum += v;
    points++;
  }
  return { first, last, min: points ? min : null, min_step: minStep, max: points ? max : null, max_step: maxStep, mean: points ? sum / points : null, points, non_finite: rows.length - points };
}

/** The rows to use, by ascending step, each step once (its last write), within [from, to]. */

function seriesText(s: z.infer<typeof SeriesSchema>): string {
  const m = s.summary;
  const head = line(`${s.metric}: ${m.points} values, first ${num(m.first)} → last ${num(m.last)}, min ${num(m.min)} at step ${num(m.min_step)}, max ${num(m.max)} at step ${num(m.max_step)}, mean ${num(m.mean)}${m.non_finite ? `, ${m.non_finite} rows NaN/Inf/missing` : ''}`);
  const points = s.x.map((x, i) => `${x}:${s.y[i] === null ? '—' : s.y[i]}`).join(' ');
  return `${head}\n  ${sparkline(s.y, 40)}\n  ${s.reduced ? `${s.x.length} points (min and max of each bucket)` : `${s.x.length} points`} step:value ${points}`;
}

export const series = defineTool({
  name: 'series',
  title: 'Metric series',
  description:
    'One or more step metrics (reward_mean, kl_mean, entropy_mean, loss, reward_component.<name>, extra.<name>, …; run_info lists the columns) ' +
    'over a step range, downsampled to at most `points` points per metric by keeping each bucket\'s minimum and maximum (a one-step spike ' +
    'survives), with summary statistics over every row of the range: first, last, min and max with their steps, mean, and how many rows are ' +
    'NaN, infinite or missing. A finding\'s `columns` are good metrics to ask for, around its onset step.',
  input: z.strictObject({
    run: runArg(),
    metrics: z.array(z.string(expecting('a metric name')).min(1, expecting('a metric name')), expecting('a list of metric names')).min(1, expecting('at least one metric name')).max(20, expecting('at most 20 metric names')).describe('Metric (step column) names'),
    from_step: stepArg('First step of the range (default: the first logged)').optional(),
    to_step: stepArg('Last step of the range, inclusive (default: the last logged)').optional(),
    points: intArg(10, MAX_POINTS, `Points per metric at most (default ${DEFAULT_POINTS}): the minimum and maximum of points/2 buckets`).optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    from_step: z.number().nullable(),
    to_step: z.number().nullable(),
    rows: z.number().int().describe('Step rows in the range'),
    series: z.array(SeriesSchema),
    offset: z.number().int().describe('Position of this page\'s first metric among those asked for'),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('series', args, ['offset']);
    if (args.from_step !== undefined && args.to_step !== undefined && args.from_step > args.to_step) {
      throw new ToolError(`from_step ${args.from_step} is after to_step ${args.to_step}`);
    }
    const { reader, path } = openRun(ctx, args.run);
    const known = reader.stepColumns().map((c) => c.name);
    const unknown = args.metrics.filter((m) => !known.includes(m) || m === 'step');
    if (unknown.length) {
      const names = known.filter((n) => n !== 'step');
      throw new ToolError(
        `metrics: no column ${unknown.map((u) => JSON.stringify(u)).join(', ')} in ${path}; its metrics: ${names.slice(0, LISTED_NAMES).join(', ')}${names.length > LISTED_NAMES ? ` … ${names.length - LISTED_NAMES} more (run_info lists them)` : ''}`,
      );
    }
    const view = reader.view(args.metrics);
    const rows = rowsInRange(view.steps, args.from_step ?? -Infinity, args.to_step ?? Infinity);
    const buckets = Math.floor((args.points ?? DEFAULT_POINTS) / 2);
    const items = args.metrics.slice(offset).map((metric) => {
      const values = view.series(metric);
      const d = downsample(view.steps, [values], buckets, rows);
      const s = { metric, x: d.x, y: d.ys[0], reduced: d.reduced, summary: summarise(view.steps, values, rows) };
      return { json: s, text: seriesText(s) };
    });
    const range = rows.length ? { from: view.steps[rows[0]], to: view.steps[rows[rows.length - 1]] } : null;
    return pageOf({
      tool: 'series',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'metric at this many points',
      build: (page, next) => ({
        text: [
          line(`${path}: ${rows.length} step rows${range ? ` from step ${range.from} to ${range.to}` : ' in the range'}`),
          ...page.map((i) => i.text),
          ...(next ? ['More metrics: call series again with cursor = next_cursor.'] : []),
        ].join('\n'),
        structured: { run: path, from_step: range?.from ?? null, to_step: range?.to ?? null, rows: rows.length, series: page.map((i) => i.json), offset, next_cursor: next },
      }),
    });
  },
});
