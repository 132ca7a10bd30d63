/** trials: the Harbor trials captured into a run, at a step, a step range or a sample. */
import { z } from 'zod';

import { cursorArg, runArg, stepArg, textArg } from '../args.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { itemBytes, pageOf } from '../paging.js';
import { NextCursorSchema } from '../schemas.js';
import { line, plural } from '../text.js';
import { defineTool } from '../tool.js';
import { TrialItemSchema, trialItem, trialItemText } from '../trial-json.js';

/** Unfinished and broken captures listed (all are counted). */
const LISTED_PROBLEMS = 20;

export const trials = defineTool({
  name: 'trials',
  title: 'List captured trials',
  description:
    'The Harbor trials captured into a run (an agent\'s attempt at a task that fed a training step), by step: each with its rewards, outcome ' +
    'and exception, files collected, trajectory (turns, tool calls) and the rollout span id (span_tree shows the transcript). Filter by ' +
    'step, step range or sample id; trial gives one in detail.',
  input: z.strictObject({
    run: runArg(),
    step: stepArg('Only this step').optional(),
    from_step: stepArg('Only steps from this one').optional(),
    to_step: stepArg('Only steps up to this one (inclusive)').optional(),
    sample_id: textArg('Only the trials captured for this sample').optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    trials_total: z.number().int().describe('Captures matching (all pages)'),
    offset: z.number().int(),
    trials: z.array(TrialItemSchema),
    unfinished: z.array(z.string()).describe('Capture directories still being written, or interrupted (capture or deliver again)'),
    unfinished_total: z.number().int(),
    broken: z.array(z.object({ dir: z.string(), error: z.string() })).describe('Captures whose manifest cannot be read, and why'),
    broken_total: z.number().int(),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('trials', args, ['offset']);
    const { reader, path } = openRun(ctx, args.run);
    const stepRange: [number, number] | undefined = args.from_step !== undefined || args.to_step !== undefined ? [args.from_step ?? 0, args.to_step ?? Number.MAX_SAFE_INTEGER] : undefined;
    const all = reader.trials({ step: args.step, stepRange, sampleId: args.sample_id });
    const unfinished = reader.unfinishedTrials();
    const broken = reader.brokenTrials();
    const items = all.slice(offset).map((t) => {
      const json = trialItem(t);
      return { json, text: trialItemText(json) };
    });
    return pageOf({
      tool: 'trials',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'trial',
      build: (page, next) => ({
        text: [
          line(all.length === 0 ? `${path}: no trials captured${args.step !== undefined || stepRange || args.sample_id ? ' matching' : ''}.` : `${path}: ${plural(all.length, 'captured trial')}${page.length < all.length ? `; ${offset + 1}–${offset + page.length} here` : ''}:`),
          ...page.map((i) => i.text),
          ...unfinished.slice(0, LISTED_PROBLEMS).map((u) => line(`unfinished capture (being written, or interrupted): ${u}`)),
          ...broken.slice(0, LISTED_PROBLEMS).map((b) => line(`unreadable capture ${b.dir}: ${b.error}`)),
          ...(next ? ['More trials: call trials again with cursor = next_cursor.'] : []),
        ].join('\n'),
        structured: {
          run: path,
          trials_total: all.length,
          offset,
          trials: page.map((i) => i.json),
          unfinished: unfinished.slice(0, LISTED_PROBLEMS),
          unfinished_total: unfinished.length,
          broken: broken.slice(0, LISTED_PROBLEMS),
          broken_total: broken.length,
          next_cursor: next,
        },
      }),
    });
  },
});
