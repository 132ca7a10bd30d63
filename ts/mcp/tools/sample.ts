/**
 * sample: one sample in full. Its fields come on every page; its prompt, completion and
 * completion token ids follow one another across pages as long as they need, so the
 * pieces of all pages put together are the recorded texts exactly.
 */
import { z } from 'zod';

import type { StoredSampleRecord } from '../../schema/sample-record.js';
import { largestFitting } from '../budget.js';
import { textSlice } from '../clip.js';
import { cursorArg, intArg, runArg, textArg } from '../args.js';
import { makeCursor, readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { SampleFieldsSchema, indented, sampleFields, sampleHead } from '../sample-json.js';
import { NextCursorSchema } from '../schemas.js';
import { line } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';

const PARTS = ['prompt', 'completion', 'token_ids'] as const;

const PieceSchema = z.object({
  offset: z.number().int().describe('Where this piece starts in the whole (characters, or ids)'),
  total: z.number().int().describe('Length of the whole'),
});
const TextPieceSchema = PieceSchema.extend({ text: z.string() });
const IdsPieceSchema = PieceSchema.extend({ ids: z.array(z.number()) });

type Piece = { part: (typeof PARTS)[number]; offset: number; total: number };

export const sample = defineTool({
  name: 'sample',
  title: 'One sample in full',
  description:
    'One sample by id (samples and diagnose give ids): every field, and its whole prompt, completion and completion token ids. Long texts ' +
    'continue on the next page (next_cursor): each page holds the next piece, with its offset and the whole length, so the pieces put ' +
    'together are the recorded text.',
  input: z.strictObject({
    run: runArg(),
    sample_id: textArg('The sample id'),
    rank: intArg(0, 65_535, 'The rank, when several ranks recorded the same id').optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    sample: SampleFieldsSchema,
    matches: z.number().int().describe('Samples with this id (on every rank, or the rank asked for); this is the first'),
    other_ranks: z.array(z.number().int()).describe('Ranks of the other matches: ask again with rank'),
    prompt: TextPieceSchema.nullable(),
    completion: TextPieceSchema.nullable(),
    completion_token_ids: IdsPieceSchema.nullable(),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const at = readCursor('sample', args, ['part', 'offset']);
    const { reader, path } = openRun(ctx, args.run);
    const found: StoredSampleRecord[] = [...reader.samples({ sampleId: args.sample_id, ...(args.rank === undefined ? {} : { rank: args.rank }) })];
    if (found.length === 0) throw new ToolError(`sample_id: no sample with id ${JSON.stringify(args.sample_id)}${args.rank === undefined ? '' : ` on rank ${args.rank}`} in ${path}`);
    const s = found[0];
    const fields = sampleFields(s);
    const wholes = { prompt: s.prompt_text, completion: s.completion_text, token_ids: s.completion_token_ids } as const;
    // the pieces still to give, in order, from the cursor's place
    const start = { part: at.part ?? 0, offset: at.offset ?? 0 };
    const todo: Piece[] = [];
    PARTS.forEach((part, i) => {
      const whole = wholes[part];
      if (whole === undefined || i < start.part) return;
      const offset = i === start.part ? Math.min(start.offset, whole.length) : 0;
      todo.push({ part, offset, total: whole.length });
    });
    // the answer giving `n` units (characters or ids) from the pieces to give
    const build = (n: number) => {
      let left = n;
      const given: Record<string, { offset: number; total: number; text?: string; ids?: number[] }> = {};
      let next: { part: number; offset: number } | null = null;
      for (const piece of todo) {
        const whole = wholes[piece.part]!;
        const want = Math.min(left, piece.total - piece.offset);
        const text = piece.part === 'token_ids' ? null : textSlice(whole as string, piece.offset, want);
        const took = text === null ? want : text.length;
        given[piece.part] = text === null ? { offset: piece.offset, total: piece.total, ids: (whole as number[]).slice(piece.offset, piece.offset + took) } : { offset: piece.offset, total: piece.total, text };
        left -= took;
        if (piece.offset + took < piece.total) {
          next = { part: PARTS.indexOf(piece.part), offset: piece.offset + took };
          break;
        }
      }
      const cursor = next === null ? null : makeCursor('sample', args, next);
      const textPiece = (p: 'prompt' | 'completion') => (given[p] ? { offset: given[p].offset, total: given[p].total, text: given[p].text! } : null);
      const ids = given.token_ids ? { offset: given.token_ids.offset, total: given.token_ids.total, ids: given.token_ids.ids! } : null;
      const structured = {
        run: path,
        sample: fields,
        matches: found.length,
        other_ranks: found.slice(1).map((f) => f.rank),
        prompt: textPiece('prompt'),
        completion: textPiece('completion'),
        completion_token_ids: ids,
        next_cursor: cursor,
      };
      const pieceHead = (label: string, p: { offset: number; total: number }, len: number) =>
        p.offset === 0 && len === p.total ? label : `${label} (characters ${p.offset}–${p.offset + len} of ${p.total})`;
      const text = [
        line(`${path}: sample ${args.sample_id}${found.length > 1 ? ` (${found.length} samples have this id: this is rank ${s.rank}'s; ranks ${structured.other_ranks.join(', ')} also)` : ''}`),
        sampleHead(fields),
        ...(structured.prompt ? [indented(pieceHead('prompt', structured.prompt, structured.prompt.text.length), structured.prompt.text)] : []),
        ...(structured.completion ? [indented(pieceHead('completion', structured.completion, structured.completion.text.length), structured.completion.text)] : []),
        ...(ids ? [`  completion token ids ${ids.offset}–${ids.offset + ids.ids.length} of ${ids.total}: ${ids.ids.join(' ')}`] : []),
        ...(cursor ? ['The rest follows: call sample again with cursor = next_cursor.'] : []),
      ].join('\n');
      return { text, structured };
    };
    const units = todo.reduce((a, p) => a + p.total - p.offset, 0);
    const fit = largestFitting(units, ctx.budget, build);
    if (fit === null || (fit.n === 0 && units > 0)) throw new ToolError(`the fields of sample ${JSON.stringify(args.sample_id)} alone are over the byte budget of ${ctx.budget} bytes (raise --max-bytes)`);
    return fit.answer;
  },
});
