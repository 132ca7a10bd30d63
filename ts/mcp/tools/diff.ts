/** diff: two runs compared — the first divergence, the lead metric, findings in one run only. */
import { z } from 'zod';

import { diffRuns } from '../../diff/run-diff.js';
import type { MetricComparison } from '../../diff/metric-diff.js';
import type { ObjectChange } from '../../diff/object-diff.js';
import type { Finding } from '../../doctor/finding.js';
import { boundJson, jsonNumberOrNull } from '../clip.js';
import { cursorArg, runArg } from '../args.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { itemBytes, pageOf } from '../paging.js';
import { JsonNumberSchema, JsonValueSchema, NextCursorSchema } from '../schemas.js';
import { line, num } from '../text.js';
import { defineTool } from '../tool.js';

/** Metric names listed as present in one run only (all are counted). */
const LISTED_NAMES = 50;

const Pair = z.object({ a: JsonNumberSchema.nullable(), b: JsonNumberSchema.nullable() });
const MetricSchema = z.object({
  metric: z.string(),
  final: Pair,
  best: Pair.nullable().describe('Max or min by the metric\'s direction (null: it has none)'),
  auc: Pair.describe('Area under the curve over the common steps'),
  divergence: z.object({ step: z.number(), difference: JsonNumberSchema, sigma: JsonNumberSchema }).nullable().describe('The first step where |B − A| stays past 3 σ for 3 points in a row'),
});

const pair = (p: { a: number | null; b: number | null }) => ({ a: jsonNumberOrNull(p.a), b: jsonNumberOrNull(p.b) });
function metricJson(m: MetricComparison): z.infer<typeof MetricSchema> {
  return {
    metric: m.metric,
    final: pair(m.final),
    best: m.best === null ? null : pair(m.best),
    auc: pair(m.auc),
    divergence: m.divergence === null ? null : { step: m.divergence.step, difference: jsonNumberOrNull(m.divergence.difference)!, sigma: jsonNumberOrNull(m.divergence.sigma)! },
  };
}

function metricText(m: z.infer<typeof MetricSchema>): string {
  const d = m.divergence ? `diverges at step ${m.divergence.step} (B − A ${num(m.divergence.difference)}, σ ${num(m.divergence.sigma)})` : 'no divergence';
  return line(`${m.metric}: final A ${num(m.final.a)} B ${num(m.final.b)}; best A ${num(m.best?.a)} B ${num(m.best?.b)}; AUC A ${num(m.auc.a)} B ${num(m.auc.b)}; ${d}`);
}

const brief = (f: Finding) => ({ code: f.code, severity: f.severity, onset_step: f.onset_step, message: f.message });

function changesText(title: string, list: ObjectChange[], shown: unknown): string {
  return line(`${title}: ${list.length === 0 ? 'same' : `${list.length} difference(s): ${JSON.stringify(shown)}`}`);
}

export const diff = defineTool({
  name: 'diff',
  title: 'Compare two runs',
  description:
    'Two runs compared: trainer config, environment and run facts (added, removed, changed keys); every metric both logged, on the steps ' +
    'both logged — final, best, area under the curve and the first divergence (|B − A| past 3 σ of its own past noise for 3 points) — ' +
    'earliest divergence first, the earliest being the lead indicator; and the doctor\'s findings present in one run only.',
  input: z.strictObject({ run_a: runArg('Run A (the baseline), a path inside a root'), run_b: runArg('Run B, a path inside a root'), cursor: cursorArg().optional() }),
  output: z.object({
    a: z.string(),
    b: z.string(),
    steps: z.object({ a: z.number().int(), b: z.number().int(), common: z.number().int(), first_common: z.number().nullable(), last_common: z.number().nullable() }),
    warnings: z.array(z.string()),
    lead: z.object({ metric: z.string(), step: z.number() }).nullable().describe('The metric that diverged first'),
    run_changes: JsonValueSchema.describe('algorithm, model, world size, schema differences'),
    trainer_config_changes: JsonValueSchema.describe('{path, kind, a, b} per difference; cut with a marker when long'),
    environment_changes: JsonValueSchema,
    findings_only_in_a: JsonValueSchema,
    findings_only_in_b: JsonValueSchema,
    only_in_a: z.array(z.string()).describe('Metrics only run A logged (the first ones)'),
    only_in_a_total: z.number().int(),
    only_in_b: z.array(z.string()),
    only_in_b_total: z.number().int(),
    metrics_total: z.number().int(),
    offset: z.number().int(),
    metrics: z.array(MetricSchema).describe('Earliest divergence first, then by name'),
    next_cursor: NextCursorSchema,
  }),
  async run(args, ctx) {
    const { offset = 0 } = readCursor('diff', args, ['offset']);
    const a = openRun(ctx, args.run_a, 'run_a');
    const b = openRun(ctx, args.run_b, 'run_b');
    const d = await diffRuns(a.reader, b.reader);
    // the header comes on every page: each part held to an eighth of the budget
    const part = Math.floor(ctx.budget / 16);
    const header = {
      run: boundJson(d.run, part).value,
      config: boundJson(d.trainer_config, part).value,
      environment: boundJson(d.environment, part).value,
      onlyA: boundJson(d.findings.only_in_a.map(brief), part).value,
      onlyB: boundJson(d.findings.only_in_b.map(brief), part).value,
    };
    const findingLines = (label: string, list: unknown) => (Array.isArray(list) ? list.map((f) => (typeof f === 'string' ? f : line(`finding only in ${label}: ${f.severity.toUpperCase()} ${f.code} onset ~step ${f.onset_step}: ${f.message}`))) : [line(String(list))]);
    const headText = [
      line(`A ${a.path}`),
      line(`B ${b.path}`),
      changesText('run', d.run, header.run),
      changesText('trainer config', d.trainer_config, header.config),
      changesText('environment', d.environment, header.environment),
      `steps: A ${d.steps.a}, B ${d.steps.b}, ${d.steps.common} in common${d.steps.common ? ` (${d.steps.first_common}–${d.steps.last_common})` : ''}`,
      ...d.warnings.map((w) => line(`warning: ${w}`)),
      d.lead ? line(`lead indicator: ${d.lead.metric} diverges first, at step ${d.lead.step}`) : 'no metric diverges (|B − A| never stays past 3 σ of its own past noise)',
      ...findingLines('A', header.onlyA),
      ...findingLines('B', header.onlyB),
      ...(d.findings.only_in_a.length + d.findings.only_in_b.length === 0 ? ['findings: the same codes in both runs'] : []),
      ...(d.only_in_a.length ? [line(`metrics only in A: ${d.only_in_a.slice(0, LISTED_NAMES).join(', ')}${d.only_in_a.length > LISTED_NAMES ? ` … ${d.only_in_a.length - LISTED_NAMES} more` : ''}`)] : []),
      ...(d.only_in_b.length ? [line(`metrics only in B: ${d.only_in_b.slice(0, LISTED_NAMES).join(', ')}${d.only_in_b.length > LISTED_NAMES ? ` … ${d.only_in_b.length - LISTED_NAMES} more` : ''}`)] : []),
    ];
    const items = d.metrics.slice(offset).map((m) => {
      const json = metricJson(m);
      return { json, text: metricText(json) };
    });
    return pageOf({
      tool: 'diff',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'metric',
      build: (page, next) => ({
        text: [...headText, `metrics both logged (${d.metrics.length}${page.length < d.metrics.length ? `; ${offset + 1}–${offset + page.length} here` : ''}):`, ...page.map((i) => i.text), ...(next ? ['More metrics: call diff again with cursor = next_cursor.'] : [])].join('\n'),
        structured: {
          a: a.path,
          b: b.path,
          steps: d.steps,
          warnings: d.warnings,
          lead: d.lead,
          run_changes: header.run,
          trainer_config_changes: header.config,
          environment_changes: header.environment,
          findings_only_in_a: header.onlyA,
          findings_only_in_b: header.onlyB,
          only_in_a: d.only_in_a.slice(0, LISTED_NAMES),
          only_in_a_total: d.only_in_a.length,
          only_in_b: d.only_in_b.slice(0, LISTED_NAMES),
          only_in_b_total: d.only_in_b.length,
          metrics_total: d.metrics.length,
          offset,
          metrics: page.map((i) => i.json),
          next_cursor: next,
        },
      }),
    });
  },
});
