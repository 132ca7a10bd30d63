/** samples: recorded samples filtered as `probe samples` filters them, texts cut, paged. */
import { z } from 'zod';

import { diagnose } from '../../doctor/diagnose.js';
import { findingByCode } from '../../doctor/finding-by-code.js';
import type { RunReader } from '../../reader/run-reader.js';
import type { SampleQuery } from '../../reader/sample-stream.js';
import { CAPTURE_REASONS } from '../../schema/sample-record.js';
import { boolArg, cursorArg, intArg, numberArg, runArg, stepArg, stringsArg, textArg } from '../args.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { itemBytes, pageOf } from '../paging.js';
import { ListedSampleSchema, listedSample, listedSampleText, listedSampleWithin } from '../sample-json.js';
import { NextCursorSchema } from '../schemas.js';
import { line, plural } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';

const DEFAULT_TEXT_CHARS = 300;

/** The capture reasons a run's samples have (read only to explain an empty answer). */
function reasonsOf(reader: RunReader): string[] {
  return reader.sampleTextValues('capture_reason').filter((r) => r !== '');
}

export const samples = defineTool({
  name: 'samples',
  title: 'List samples',
  description:
    'Recorded samples (rollouts: prompt, completion, reward and its components, advantage, length, truncation, why it was kept) filtered ' +
    'like `probe samples`: by step or step range, capture reason (top_k, bottom_k, random, all, or the trainer\'s own), group, rank, reward ' +
    'range, truncation, text (case-insensitive, prompt or completion), or the steps of a doctor finding (around_finding = its code). Prompt ' +
    'and completion are cut at text_chars with a marker; `sample` gives one in full, and `span_tree` with its span_id shows its rollout.',
  input: z.strictObject({
    run: runArg(),
    step: stepArg('Only this step').optional(),
    from_step: stepArg('Only steps from this one').optional(),
    to_step: stepArg('Only steps up to this one (inclusive)').optional(),
    reason: stringsArg(`Only this capture reason (or any of a list): ${CAPTURE_REASONS.join(', ')}, or one of the run's own`).optional(),
    group: textArg('Only this group (GRPO prompt group) id').optional(),
    rank: intArg(0, 65_535, 'Only this rank').optional(),
    reward_min: numberArg('Only rewards ≥ this').optional(),
    reward_max: numberArg('Only rewards ≤ this').optional(),
    truncated: boolArg('Only truncated completions (true) or only terminated ones (false)').optional(),
    text: textArg('Only samples whose prompt or completion contains this (case-insensitive)').optional(),
    around_finding: textArg('Only the steps of this doctor finding, from its onset to its last step (a code diagnose gives, e.g. TRUNCATION_COLLAPSE)').optional(),
    text_chars: intArg(0, 20_000, `Characters of prompt and completion kept per sample (default ${DEFAULT_TEXT_CHARS}); the rest is cut with a marker`).optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    offset: z.number().int().describe('Position of this page\'s first sample among the matching ones'),
    samples: z.array(ListedSampleSchema),
    text_chars: z.number().int(),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('samples', args, ['offset']);
    const { reader, path } = openRun(ctx, args.run);
    const query: SampleQuery = {};
    if (args.step !== undefined) query.step = args.step;
    if (args.from_step !== undefined || args.to_step !== undefined) query.stepRange = [args.from_step ?? 0, args.to_step ?? Number.MAX_SAFE_INTEGER];
    if (args.reason !== undefined) query.reason = args.reason;
    if (args.group !== undefined) query.group = args.group;
    if (args.rank !== undefined) query.rank = args.rank;
    if (args.reward_min !== undefined) query.rewardMin = args.reward_min;
    if (args.reward_max !== undefined) query.rewardMax = args.reward_max;
    if (args.truncated !== undefined) query.truncated = args.truncated;
    if (args.text !== undefined) query.text = args.text;
    if (args.around_finding !== undefined) query.aroundFinding = findingByCode(diagnose(reader, { samples: false }), args.around_finding);
    const textChars = args.text_chars ?? DEFAULT_TEXT_CHARS;
    function* fromOffset() {
      let i = 0;
      for (const s of reader.samples(query)) if (i++ >= offset) yield s;
    }
    const items = (function* () {
      for (const s of fromOffset()) {
        const json = listedSample(s, textChars);
        yield { json, text: listedSampleText(json), record: s };
      }
    })();
    const answer = pageOf({
      tool: 'samples',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'sample with these text_chars',
      // a sample too long for a page at text_chars comes cut shorter (its markers say where)
      refit: (item, maxBytes) => ({ ...(listedSampleWithin(item.record, textChars, maxBytes) ?? item), record: item.record }),
      build: (page, next) => ({
        text: [
          line(page.length === 0 ? `${path}: no samples match${offset ? ` past the first ${offset}` : ''}.` : `${path}: ${plural(page.length, 'sample')} (${offset + 1}–${offset + page.length} of those matching${next ? ', more follow' : ''}), texts cut at ${textChars} chars:`),
          ...page.map((i) => i.text),
          ...(next ? ['More samples: call samples again with cursor = next_cursor.'] : []),
        ].join('\n\n'),
        structured: { run: path, offset, samples: page.map((i) => i.json), text_chars: textChars, next_cursor: next },
      }),
    });
    const own = [args.reason ?? []].flat().filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r));
    if (answer.structured.samples.length === 0 && offset === 0 && own.length > 0) {
      const inRun = reasonsOf(reader);
      const missing = own.filter((r) => !inRun.includes(r));
      if (missing.length) throw new ToolError(`reason: no sample of ${path} has reason ${missing.map((r) => JSON.stringify(r)).join(', ')}; expected ${[...CAPTURE_REASONS, ...inRun.filter((r) => !(CAPTURE_REASONS as readonly string[]).includes(r))].join(', ')}`);
    }
    return answer;
  },
});
