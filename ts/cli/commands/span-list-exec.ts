/** `probe span list`, loaded only when it runs: span-list.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { spanForest } from '../../reader/span-reader.js';
import type { SpanQuery } from '../../reader/span-reader.js';
import type { SpanTreeNode } from '../../schema/span-record.js';
import { isoSeconds } from '../format.js';
import { spanLine, treeLines } from './span-text.js';

function treeJson(node: SpanTreeNode): unknown {
  return { ...node.span, children: node.children.map(treeJson) };
}

export interface SpanListArgs {
  run: string;
  step: number | undefined;
  steps: [number, number] | undefined;
  kinds: string[];
  roots: string[];
  ids: string[];
  labels: Array<[string, string]>;
  status: Array<'ok' | 'error' | 'open'>;
  tree: boolean;
  limit: number;
  json: boolean;
  context: BaseContext;
}

export async function execSpanList(command: SpanListArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  const query: SpanQuery = {};
  if (command.step !== undefined) query.step = command.step;
  if (command.steps !== undefined) query.stepRange = command.steps;
  if (command.kinds.length) query.kind = command.kinds;
  if (command.roots.length) query.root = command.roots;
  if (command.ids.length) query.id = command.ids;
  if (command.status.length) query.status = command.status;
  if (command.labels.length) query.label = Object.fromEntries(command.labels);
  const out = command.context.stdout;
  if (!command.tree) {
    if (command.limit > 0) query.limit = command.limit;
    const { spans, total, matched } = reader.spanRead(query);
    if (command.json) {
      out.write(`${JSON.stringify(spans)}\n`);
      return 0;
    }
    for (const s of spans) out.write(`${isoSeconds(s.start_time)}  ${spanLine(s)}\n`);
    if (matched > spans.length) out.write(`… ${matched - spans.length} more of ${matched} matching (--limit 0 prints all)\n`);
    if (spans.length === 0) out.write(total === 0 ? 'no spans recorded in this run\n' : `no spans match (the run has ${total})\n`);
    return 0;
  }
  // the trees of the matching spans: read every span of those roots, then build them
  const matching = reader.spans(query);
  const roots = [...new Set(matching.map((s) => s.root_id))];
  const shown = command.limit > 0 ? roots.slice(0, command.limit) : roots;
  const forest = shown.length ? spanForest(reader.spans({ root: shown })) : [];
  // keep the root order of the first matching span of each tree
  const order = new Map(shown.map((r, i) => [r, i]));
  forest.sort((a, b) => (order.get(a.span.root_id) ?? Infinity) - (order.get(b.span.root_id) ?? Infinity));
  if (command.json) {
    out.write(`${JSON.stringify(forest.map(treeJson))}\n`);
    return 0;
  }
  for (const node of forest) out.write(`${treeLines(node).join('\n')}\n\n`);
  if (roots.length > shown.length) out.write(`… ${roots.length - shown.length} more trees (--limit 0 prints all)\n`);
  if (forest.length === 0) out.write('no spans match\n');
  return 0;
}
