/**
 * span_tree: the trajectory view. A span (a rollout, or any span of its tree) and the spans
 * under it, depth first, children by start time: each turn with its message, each tool
 * call with its arguments and result from the captured trajectory, timings, status and
 * attributes. Depth and breadth are limited, each cut counted on its node ("n more"), and
 * the nodes are paged: the pages put together are the whole limited tree.
 */
import { z } from 'zod';

import type { SpanRecord, SpanTreeNode } from '../../schema/span-record.js';
import { cursorArg, intArg, runArg, textArg } from '../args.js';
import { boundJson, clipJson, cutText, jsonNumberOrNull } from '../clip.js';
import { readCursor } from '../cursor.js';
import { openRun } from '../open-run.js';
import { longestFitting } from '../budget.js';
import { itemBytes, pageOf } from '../paging.js';
import { JsonNumberSchema, JsonValueSchema, NextCursorSchema } from '../schemas.js';
import { block, line, num } from '../text.js';
import { defineTool } from '../tool.js';
import { ToolError } from '../tool-error.js';

const DEFAULTS = { depth: 4, breadth: 25, text_chars: 400 } as const;
/** Bytes of a node's attributes at most, whatever text_chars allows. */
const ATTRIBUTE_BYTES = 8192;
/** Attributes that hold the trajectory's words: shown on lines of their own. */
const WORDS = ['message', 'reasoning_content', 'arguments', 'result', 'content'] as const;

const NodeSchema = z.object({
  span_id: z.string(),
  parent_id: z.string().nullable(),
  depth: z.number().int().describe('Levels below the span asked for (0: that span)'),
  kind: z.string(),
  name: z.string(),
  status: z.string().describe('ok, error or open (still running when last written, or cut off by a crash)'),
  error: z.string().nullable(),
  step: z.number().nullable(),
  start_time: JsonNumberSchema.nullable().describe('Unix seconds'),
  end_time: JsonNumberSchema.nullable(),
  duration_s: JsonNumberSchema.nullable(),
  sample_id: z.string().nullable(),
  group_id: z.string().nullable(),
  key: z.string().nullable(),
  labels: z.record(z.string(), z.string()),
  attributes: JsonValueSchema.describe('Strings cut at text_chars with a marker; message, arguments, result … are the trajectory\'s words'),
  children_total: z.number().int(),
  children_omitted: z.number().int().describe('Children past the breadth limit, not shown: ask span_tree for this span with a larger breadth'),
  below_omitted: z.number().int().describe('Spans below this one past the depth limit, not shown: ask span_tree for this span'),
});
type NodeJson = z.infer<typeof NodeSchema>;

function count(n: SpanTreeNode): number {
  let total = 1;
  const stack = [...n.children];
  while (stack.length) {
    const c = stack.pop()!;
    total++;
    stack.push(...c.children);
  }
  return total;
}

function duration(seconds: number | null): string {
  if (seconds === null) return 'open';
  if (!Number.isFinite(seconds)) return String(seconds);
  if (seconds < 1) return `${num(seconds * 1e3)} ms`;
  if (seconds < 120) return `${num(seconds)} s`;
  return `${Math.floor(seconds / 60)}m${String(Math.round(seconds % 60)).padStart(2, '0')}s`;
}

function nodeJson(s: SpanRecord, depth: number, node: SpanTreeNode, shown: number, textChars: number, depthLeft: boolean): NodeJson {
  const attributes = boundJson(clipJson(s.attributes, { text: textChars, items: 50, keys: 50, depth: 6 }), ATTRIBUTE_BYTES).value;
  return {
    span_id: s.span_id,
    parent_id: s.parent_id,
    depth,
    kind: s.kind,
    name: s.name,
    status: s.status,
    error: s.error,
    step: s.step,
    start_time: jsonNumberOrNull(s.start_time),
    end_time: jsonNumberOrNull(s.end_time),
    duration_s: jsonNumberOrNull(s.duration_s),
    sample_id: s.sample_id,
    group_id: s.group_id,
    key: s.key,
    labels: { ...s.labels },
    attributes,
    children_total: node.children.length,
    children_omitted: depthLeft ? node.children.length - shown : 0,
    below_omitted: depthLeft ? 0 : count(node) - 1,
  };
}

function nodeText(n: NodeJson): string {
  const pad = '  '.repeat(n.depth);
  const status = n.status === 'ok' ? '' : n.status === 'error' ? `  ERROR ${n.error ?? ''}` : '  OPEN';
  const labels = Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(' ');
  const attrs = (n.attributes ?? {}) as Record<string, unknown>;
  const others = Object.entries(attrs)
    .filter(([k]) => !(WORDS as readonly string[]).includes(k))
    .map(([k, v]) => `${k}=${cutText(typeof v === 'string' ? v : JSON.stringify(v), 60)}`);
  const lines = [
    `${pad}${n.depth ? '└ ' : ''}${line(`${n.kind} ${JSON.stringify(n.name)}  ${duration(typeof n.duration_s === 'number' ? n.duration_s : null)}${status}${n.step === null ? '' : `  step ${n.step}`}${labels ? `  [${labels}]` : ''}  id ${n.span_id}`)}`,
  ];
  if (others.length) lines.push(`${pad}    ${line(others.join(' '))}`);
  for (const k of WORDS) {
    const v = attrs[k];
    if (v === undefined || v === null) continue;
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    lines.push(`${pad}    ${k}: ${block(text).split('\n').join(`\n${pad}      `)}`);
  }
  if (n.children_omitted) lines.push(`${pad}    … ${n.children_omitted} more children (span_tree on ${n.span_id} with a larger breadth)`);
  if (n.below_omitted) lines.push(`${pad}    … ${n.below_omitted} more spans below (span_tree on ${n.span_id})`);
  return lines.join('\n');
}

interface Visit {
  node: SpanTreeNode;
  depth: number;
  shown: number;
  depthLeft: boolean;
}

/** The limited tree, depth first: each node with its first `breadth` children, to `maxDepth` levels. */
function* walk(target: SpanTreeNode, maxDepth: number, breadth: number): Generator<Visit> {
  const stack: Array<{ node: SpanTreeNode; depth: number }> = [{ node: target, depth: 0 }];
  while (stack.length) {
    const { node, depth } = stack.pop()!;
    const depthLeft = depth < maxDepth;
    const shown = depthLeft ? Math.min(breadth, node.children.length) : 0;
    yield { node, depth, shown, depthLeft };
    for (let i = shown - 1; i >= 0; i--) stack.push({ node: node.children[i], depth: depth + 1 });
  }
}

function findNode(root: SpanTreeNode, id: string): { node: SpanTreeNode; ancestors: SpanRecord[] } | null {
  const stack: Array<{ node: SpanTreeNode; path: SpanRecord[] }> = [{ node: root, path: [] }];
  while (stack.length) {
    const { node, path } = stack.pop()!;
    if (node.span.span_id === id) return { node, ancestors: path };
    for (const c of node.children) stack.push({ node: c, path: [...path, node.span] });
  }
  return null;
}

export const spanTree = defineTool({
  name: 'span_tree',
  title: 'Trajectory view (span tree)',
  description:
    'The trajectory view: a rollout\'s tree of spans (rollout → turn → tool_call, or any kinds the trainer named), from a span id (a ' +
    'sample\'s span_id, a trial\'s rollout_span_id, any span of the tree) or a sample id. Each span with its timings, status and attributes; ' +
    'each turn with its message, each tool call with its arguments and result text from the captured trajectory (cut at text_chars). The ' +
    'ancestors of the span are listed; depth and breadth are limited and each cut says how many spans it left out.',
  input: z.strictObject({
    run: runArg(),
    span_id: textArg('The span to show with the spans under it').optional(),
    sample_id: textArg('Or: the sample whose span to show').optional(),
    depth: intArg(0, 50, `Levels below the span shown (default ${DEFAULTS.depth})`).optional(),
    breadth: intArg(1, 1000, `Children shown per span (default ${DEFAULTS.breadth})`).optional(),
    text_chars: intArg(0, 4000, `Characters of each text attribute kept (default ${DEFAULTS.text_chars})`).optional(),
    cursor: cursorArg().optional(),
  }),
  output: z.object({
    run: z.string(),
    span_id: z.string().describe('The span shown at depth 0'),
    root_id: z.string(),
    ancestors: z.array(z.object({ span_id: z.string(), kind: z.string(), name: z.string() })).describe('From the root of the tree down to the span\'s parent'),
    spans_below: z.number().int().describe('Spans under the span, all of them'),
    offset: z.number().int().describe('Position of this page\'s first node in the limited tree'),
    nodes: z.array(NodeSchema).describe('Depth first, children by start time'),
    next_cursor: NextCursorSchema,
  }),
  run(args, ctx) {
    const { offset = 0 } = readCursor('span_tree', args, ['offset']);
    if ((args.span_id === undefined) === (args.sample_id === undefined)) {
      throw new ToolError(`span_id, sample_id: give exactly one (got ${args.span_id === undefined ? 'neither' : 'both'})`);
    }
    const { reader, path } = openRun(ctx, args.run);
    let id = args.span_id;
    if (id === undefined) {
      const found = [...reader.samples({ sampleId: args.sample_id!, columns: ['sample_id', 'span_id'] })];
      if (found.length === 0) throw new ToolError(`sample_id: no sample with id ${JSON.stringify(args.sample_id)} in ${path}`);
      id = found.find((s) => s.span_id !== undefined)?.span_id;
      if (id === undefined) throw new ToolError(`sample_id: sample ${JSON.stringify(args.sample_id)} was not logged under a span (no span_id)`);
    }
    const tree = reader.spanTree(id);
    if (tree === null) throw new ToolError(`span_id: no span ${JSON.stringify(id)} in ${path}`);
    const found = findNode(tree, id);
    if (found === null) throw new ToolError(`span_id: span ${JSON.stringify(id)} is not in the tree of its root ${tree.span.span_id}`);
    const { node: target, ancestors } = found;
    const depth = args.depth ?? DEFAULTS.depth;
    const breadth = args.breadth ?? DEFAULTS.breadth;
    const textChars = args.text_chars ?? DEFAULTS.text_chars;
    const below = count(target) - 1;
    const items = (function* () {
      let i = 0;
      for (const v of walk(target, depth, breadth)) {
        if (i++ < offset) continue;
        const json = nodeJson(v.node.span, v.depth, v.node, v.shown, textChars, v.depthLeft);
        yield { json, text: nodeText(json), visit: v };
      }
    })();
    const ancestry = ancestors.map((a) => ({ span_id: a.span_id, kind: a.kind, name: a.name }));
    return pageOf({
      tool: 'span_tree',
      args,
      budget: ctx.budget,
      offset,
      items,
      size: (i) => itemBytes(i.json, i.text),
      noun: 'span with these text_chars',
      // a span too large for a page at text_chars comes with its texts cut shorter (each cut marked)
      refit: (item, maxBytes) => {
        const v = item.visit;
        const render = (chars: number) => {
          const json = nodeJson(v.node.span, v.depth, v.node, v.shown, chars, v.depthLeft);
          return { json, text: nodeText(json), visit: v };
        };
        return longestFitting(textChars, maxBytes, render, (x) => itemBytes(x.json, x.text)) ?? item;
      },
      build: (page, next) => ({
        text: [
          line(`${path}: span ${id} and ${below} spans below it${ancestry.length ? `; inside ${ancestry.map((a) => `${a.kind} ${JSON.stringify(a.name)} (${a.span_id})`).join(' → ')}` : ''}`),
          ...page.map((i) => i.text),
          ...(next ? ['More spans: call span_tree again with cursor = next_cursor.'] : []),
        ].join('\n'),
        structured: { run: path, span_id: id, root_id: tree.span.span_id, ancestors: ancestry, spans_below: below, offset, nodes: page.map((i) => i.json), next_cursor: next },
      }),
    });
  },
});
