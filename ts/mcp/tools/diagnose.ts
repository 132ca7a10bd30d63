/** diagnose: the doctor's findings on a run, most severe first, with evidence and remedy. */
import { z } from 'zod';

import { diagnose as runDoctor } from '../../doctor/diagnose.js';
import type { Finding } from '../../doctor/finding.js';
import { formatFinding } from '../../doctor/format.js';
import { boolArg, cursorArg, runArg, stepArg } from '../args.js';
import { jsonNumber } from '../clip.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { itemBytes, pageOf } from '../paging.js';
import { FindingCountsSchema, JsonNumberSchema, NextCursorSchema } from '../schemas.js';
import { block, line, plural } from '../text.js';
import { defineTool } from '../tool.js';

export const FindingSchema = z.object({
  code: z.string().describe('Stable signature code, e.g. ENTROPY_COLLAPSE'),
  severity: z.enum(['info', 'warn', 'critical']),
  onset_step: z.number().describe('The step it started at'),
  last_step: z.number(),
  confidence: z.number().describe('0..1'),
  message: z.string(),
  remedy: z.string(),
  evidence: z.record(z.string(), JsonNumberSchema).describe('The numbers behind it'),
  columns: z.array(z.string()).describe('The step columns it read (series takes them)'),
  root_cause: z.string().nullable().describe('The finding this one is a consequence of'),
  samples: z.array(z.object({ step: z.number(), sample_id: z.string(), why: z.string() })).describe('Evidence samples: read them with the sample tool'),
  levels: z
    .object({
      column: z.string(),
      start: JsonNumberSchema,
      start_steps: z.tuple([z.number(), z.number()]),
      end: JsonNumberSchema,
      end_steps: z.tuple([z.number(), z.number()]),
      ratio: JsonNumberSchema,
    })
    .nullable()
    .describe('The start and end level it states: medians of the column over those steps (inclusive); check them with series'),
});

function findingJson(f: Finding): z.infer<typeof FindingSchema> {
  return {
    ...f,
    evidence: Object.fromEntries(Object.entries(f.evidence).map(([k, v]) => [k, jsonNumber(v)])),
    levels: f.levels && { ...f.levels, start: jsonNumber(f.levels.start), end: jsonNumber(f.levels.end), ratio: jsonNumber(f.levels.ratio) },
  };
}

export const diagnose = defineTool({
  name: 'diagnose',
  title: 'Diagnose a run',
  description:
    'What went wrong in a run, from which step, how sure: the doctor\'s findings (entropy collapse, reward hacking, KL blow-up, truncation ' +
    'collapse, NaN losses, …), most severe first, each with its code, severity, onset step, confidence, the evidence numbers, a remedy and the ' +
    'ids of evidence samples (read them with `sample`, or `samples` with around_finding = the code). Works on a live run.',
  input: z.strictObject({
    run: runArg(),
    since: stepArg('Only findings whose onset is at or after this step').optional(),
    samples: boolArg('Read per-sample records for evidence (default true; false is faster and cites no samples)').optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    points: z.number().int().describe('Step rows diagnosed'),
    samples: z.number().int().describe('Samples read for evidence'),
    samples_error: z.string().nullable(),
    findings_total: z.number().int(),
    counts: FindingCountsSchema,
    offset: z.number().int(),
    findings: z.array(FindingSchema),
    skipped: z.array(z.object({ detector: z.string(), codes: z.array(z.string()), reason: z.string() })).describe('Detectors that had no usable input: missing is not healthy'),
    ran: z.array(z.string()),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('diagnose', args, ['offset']);
    const { reader, path } = openRun(ctx, args.run);
    const d = runDoctor(reader, { since: args.since, samples: args.samples ?? true });
    const counts = { critical: 0, warn: 0, info: 0 };
    for (const f of d.findings) counts[f.severity]++;
    const shown = new Set(d.findings.map((f) => f.code));
    const items = d.findings.slice(offset).map((f) => ({ json: findingJson(f), text: formatFinding(f, shown) }));
    const skippedText = d.skipped.map((s) => line(`  not checked: ${s.detector} (${s.codes.join(', ')}): ${s.reason}`));
    return pageOf({
      tool: 'diagnose',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'finding',
      build: (page, next) => {
        const head =
          d.findings.length === 0
            ? `${path}: no problems found in ${d.points} logged points (${d.ran.length} detectors ran${args.since === undefined ? '' : `, onsets from step ${args.since}`}).`
            : `${path}: ${plural(d.findings.length, 'finding')} (${counts.critical} critical, ${counts.warn} warn, ${counts.info} info) in ${d.points} logged points${page.length < d.findings.length ? `; ${offset + 1}–${offset + page.length} here` : ''}:`;
        const text = [
          line(head),
          ...page.map((i) => block(i.text)),
          ...(d.samples_error ? [line(`samples unreadable, so no finding cites sample evidence: ${d.samples_error}`)] : []),
          ...(offset === 0 ? skippedText : []),
          ...(next ? ['More findings: call diagnose again with cursor = next_cursor.'] : []),
        ].join('\n');
        return {
          text,
          structured: {
            run: path,
            points: d.points,
            samples: d.samples,
            samples_error: d.samples_error,
            findings_total: d.findings.length,
            counts,
            offset,
            findings: page.map((i) => i.json),
            skipped: d.skipped,
            ran: d.ran,
            next_cursor: next,
          },
        };
      },
    });
  },
});
