/** list_runs: the runs under the roots, each with its status and finding counts. */
import { z } from 'zod';

import { RlprobeError } from '../../errors.js';
import { RunReader } from '../../reader/run-reader.js';
import { cursorArg } from '../args.js';
import { readCursor } from '../cursor.js';
import { itemBytes, pageOf } from '../paging.js';
import { findRuns, SEARCH_DEPTH } from '../../reader/run-finder.js';
import { RunSummarySchema, summarizeRun, summaryText } from '../run-summary.js';
import type { RunSummary } from '../run-summary.js';
import { NextCursorSchema } from '../schemas.js';
import { line, plural } from '../text.js';
import { defineTool } from '../tool.js';

const Unreadable = z.object({ path: z.string(), error: z.string() });

type Entry = { run: RunSummary; text: string } | { unreadable: z.infer<typeof Unreadable>; text: string };

export const listRuns = defineTool({
  name: 'list_runs',
  title: 'List runs',
  description:
    'The rlprobe runs (recordings of RL fine-tuning) under the server\'s roots: for each its id, path (pass it as `run` to the other tools), ' +
    'algorithm, model, steps logged and the last step, status (live = being recorded now; closed cleanly; ended without a close = crashed, ' +
    'signalled or killed) and the doctor\'s findings counted by severity. Start here, then run_info or diagnose on a run.',
  input: z.strictObject({ cursor: cursorArg().optional() }),
  output: z.object({
    roots: z.array(z.string()),
    runs_total: z.number().int().describe('Run directories found under the roots (all pages)'),
    offset: z.number().int().describe('Position of this page\'s first run among them'),
    runs: z.array(RunSummarySchema),
    unreadable: z.array(Unreadable).describe('Directories with a manifest.json that cannot be opened as a run, and why'),
    not_searched: z.array(z.object({ path: z.string(), reason: z.string() })).describe('The first directories the search did not enter, and why'),
    not_searched_total: z.number().int(),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('list_runs', args, ['offset']);
    const roots = ctx.roots.list();
    const search = findRuns(roots);
    const shownRoots = roots.map((r) => ctx.roots.display(r));
    function* entries(): Generator<Entry> {
      for (const dir of search.runs.slice(offset)) {
        const shown = ctx.roots.display(dir);
        let reader: RunReader;
        try {
          reader = RunReader.open(dir);
        } catch (error) {
          if (!(error instanceof RlprobeError)) throw error;
          const unreadable = { path: shown, error: error.message };
          yield { unreadable, text: line(`${shown}  unreadable: ${error.message}`) };
          continue;
        }
        const { summary } = summarizeRun(reader, shown);
        yield { run: summary, text: summaryText(summary) };
      }
    }
    return pageOf({
      tool: 'list_runs',
      args,
      budget: ctx.budget,
      offset,
      items: entries(),
      size: (e) => itemBytes('run' in e ? e.run : e.unreadable, e.text),
      noun: 'run',
      build: (page, next) => {
        const runs = page.flatMap((e) => ('run' in e ? [e.run] : []));
        const unreadable = page.flatMap((e) => ('unreadable' in e ? [e.unreadable] : []));
        const head =
          search.runs.length === 0
            ? `No runs under ${shownRoots.join(', ')} (searched ${plural(search.directories, 'directory', 'directories')}, ${SEARCH_DEPTH} levels deep).`
            : `${plural(search.runs.length, 'run')} under ${shownRoots.join(', ')}${page.length < search.runs.length ? `; ${offset + 1}–${offset + page.length} here` : ''}:`;
        const notSearched = search.not_searched.map((n) => line(`not searched: ${n.path}: ${n.reason}`));
        if (search.not_searched_total > search.not_searched.length) notSearched.push(`… ${search.not_searched_total - search.not_searched.length} more not searched`);
        const text = [head, ...page.map((e) => e.text), ...(offset === 0 ? notSearched : []), ...(next ? ['More runs: call list_runs again with cursor = next_cursor.'] : [])].join('\n');
        return {
          text,
          structured: {
            roots: shownRoots,
            runs_total: search.runs.length,
            offset,
            runs,
            unreadable,
            not_searched: search.not_searched,
            not_searched_total: search.not_searched_total,
            next_cursor: next,
          },
        };
      },
    });
  },
});
