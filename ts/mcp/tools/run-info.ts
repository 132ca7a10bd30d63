/** run_info: one run's manifest, config, environment, columns, counts, span kinds and trials. */
import { z } from 'zod';

import { RECORDER_EVENT_KINDS } from '../../schema/event.js';
import { largestFitting } from '../budget.js';
import { boundJson } from '../clip.js';
import { runArg } from '../args.js';
import { openRun } from '../open-run.js';
import { RunSummarySchema, summarizeRun, summaryText } from '../run-summary.js';
import { JsonValueSchema } from '../schemas.js';
import { line } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';

/** Ever more detail, while it fits: config bytes, columns and trials listed. */
const DETAIL = [
  { json: 256, columns: 20, trials: 5 },
  { json: 1024, columns: 60, trials: 10 },
  { json: 4096, columns: 200, trials: 20 },
  { json: 12_288, columns: 1000, trials: 20 },
  { json: Infinity, columns: Infinity, trials: 20 },
];

const Counts = z.object({
  samples: z.number().int().nullable(),
  sample_ranks: z.array(z.number().int()),
  spans: z.number().int().nullable(),
  events: z.number().int().nullable(),
  unreadable_event_lines: z.number().int(),
  trials: z.number().int().nullable(),
  trials_failed: z.number().int(),
  trials_unfinished: z.number().int(),
  dropped_steps: z.number().int(),
  dropped_samples: z.number().int(),
  dropped_spans: z.number().int(),
  bad_records: z.number().int(),
});

export const runInfo = defineTool({
  name: 'run_info',
  title: 'Run facts',
  description:
    'One run in detail: its summary (status, steps, finding counts), the manifest (created, world size, schema), the trainer config and ' +
    'environment, the step columns (the metric names `series` takes), counts (samples, spans, events, trials, drops), span kinds with open ' +
    'and error counts, and the first captured trials. Large configs and long column lists are cut with a marker saying how much.',
  input: z.strictObject({ run: runArg() }),
  output: z.object({
    summary: RunSummarySchema,
    created_at: z.string(),
    world_size: z.number().int(),
    schema_version: z.number().int(),
    migrated_from: z.number().int().nullable(),
    notes: z.string().nullable(),
    columns: z.array(z.string()).describe('Step columns: the metrics `series` takes (reward_component.<name>, extra.<name> included)'),
    columns_total: z.number().int(),
    counts: Counts,
    events_by_kind: z.record(z.string(), z.number().int()),
    span_kinds: z.array(z.object({ kind: z.string(), spans: z.number().int(), open: z.number().int(), error: z.number().int() })),
    trials: z.array(z.object({ capture_key: z.string(), step: z.number().int(), trial_name: z.string(), sample_id: z.string().nullable() })),
    trainer_config: JsonValueSchema,
    environment: JsonValueSchema,
    extra: JsonValueSchema,
    clipped: z.boolean().describe('Whether the config, environment, extra, columns or trials were cut to fit the byte budget'),
  }),
  run(args, ctx) {
    const { reader, path } = openRun(ctx, args.run);
    const { reads, events, summary } = summarizeRun(reader, path);
    const columns = reads.attempt('steps', [] as string[], () => reader.stepColumns().map((c) => c.name));
    const sampleFiles = reads.attempt('samples', null, () => reader.sampleFiles());
    const spanKinds = reads.attempt('spans', null, () => reader.spanCounts());
    const trials = reads.attempt('trials', null, () => reader.trials());
    const unfinished = reads.attempt('trials', [] as string[], () => reader.unfinishedTrials());
    const eventsRead = reads.attempt('events', null, () => reader.eventsWithDiagnostics());
    const byKind: Record<string, number> = {};
    const dropped = { steps: 0, samples: 0, spans: 0 };
    for (const e of events) {
      byKind[e.kind] = (byKind[e.kind] ?? 0) + 1;
      if (e.kind !== RECORDER_EVENT_KINDS.drops || typeof e.data.count !== 'number') continue;
      if (e.data.record === 'sample') dropped.samples += e.data.count;
      else if (e.data.record === 'span') dropped.spans += e.data.count;
      else dropped.steps += e.data.count;
    }
    const counts: z.infer<typeof Counts> = {
      samples: sampleFiles ? sampleFiles.reduce((a, f) => a + f.rows, 0) : null,
      sample_ranks: [...new Set((sampleFiles ?? []).map((f) => f.rank))],
      spans: spanKinds ? spanKinds.reduce((a, c) => a + c.spans, 0) : null,
      events: eventsRead ? eventsRead.events.length : null,
      unreadable_event_lines: eventsRead?.skippedLines ?? 0,
      trials: trials ? trials.length : null,
      trials_failed: (trials ?? []).filter((t) => t.trial.exception !== null).length,
      trials_unfinished: unfinished.length,
      dropped_steps: dropped.steps,
      dropped_samples: dropped.samples,
      dropped_spans: dropped.spans,
      bad_records: byKind[RECORDER_EVENT_KINDS.badRecord] ?? 0,
    };
    // the summary's damaged list grew with the reads above: it is the same array
    const m = reader.manifest;
    const build = (level: number) => {
      const d = DETAIL[level];
      const config = boundJson(m.trainer_config, d.json);
      const environment = boundJson(m.environment, d.json);
      const extra = boundJson(m.extra, d.json);
      const shownColumns = columns.slice(0, d.columns);
      const shownTrials = (trials ?? []).slice(0, d.trials).map((t) => ({ capture_key: t.capture_key, step: t.step, trial_name: t.trial.name, sample_id: t.sample_id }));
      const clipped = config.clipped || environment.clipped || extra.clipped || shownColumns.length < columns.length || shownTrials.length < (trials?.length ?? 0);
      const structured = {
        summary,
        created_at: m.created_at,
        world_size: m.world_size,
        schema_version: m.schema_version,
        migrated_from: reader.adapter.migrated ? reader.adapter.fromVersion : null,
        notes: m.notes ?? null,
        columns: shownColumns,
        columns_total: columns.length,
        counts,
        events_by_kind: byKind,
        span_kinds: spanKinds ?? [],
        trials: shownTrials,
        trainer_config: config.value,
        environment: environment.value,
        extra: extra.value,
        clipped,
      };
      const text = [
        summaryText(summary),
        line(`created ${m.created_at}, world size ${m.world_size}, schema ${m.schema_version}${reader.adapter.migrated ? ` (migrated from ${reader.adapter.fromVersion})` : ''}${m.notes ? `, notes: ${m.notes}` : ''}`),
        line(`columns (${columns.length}): ${shownColumns.join(', ')}${shownColumns.length < columns.length ? ` … ${columns.length - shownColumns.length} more` : ''}`),
        `counts: ${Object.entries(counts).map(([k, v]) => `${k} ${Array.isArray(v) ? `[${v.join(',')}]` : v ?? 'damaged'}`).join(', ')}`,
        line(`events by kind: ${Object.entries(byKind).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`),
        line(`span kinds: ${(spanKinds ?? []).map((c) => `${c.kind} ${c.spans}${c.open ? ` (${c.open} open)` : ''}${c.error ? ` (${c.error} error)` : ''}`).join(', ') || 'none'}`),
        ...shownTrials.map((t) => line(`trial ${t.capture_key} at step ${t.step}: ${t.trial_name}${t.sample_id ? ` (sample ${t.sample_id})` : ''}`)),
        ...(shownTrials.length < (trials?.length ?? 0) ? [`… ${(trials?.length ?? 0) - shownTrials.length} more trials (the trials tool lists them)`] : []),
        line(`trainer_config: ${JSON.stringify(config.value)}`),
        line(`environment: ${JSON.stringify(environment.value)}`),
        ...(Object.keys(m.extra).length ? [line(`extra: ${JSON.stringify(extra.value)}`)] : []),
        ...(clipped ? ['(cut to fit the byte budget: each cut says how much was left out)'] : []),
      ].join('\n');
      return { text, structured };
    };
    const fit = largestFitting(DETAIL.length - 1, ctx.budget, build);
    if (fit === null) throw new ToolError(`run_info of ${path} does not fit the byte budget of ${ctx.budget} bytes even cut down (raise --max-bytes)`);
    return fit.answer;
  },
});
