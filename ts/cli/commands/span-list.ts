import { Command, Option } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { spanForest } from '../../reader/span-reader.js';
import type { SpanQuery } from '../../reader/span-reader.js';
import type { SpanRecord, SpanTreeNode } from '../../schema/span-record.js';
import { ProbeCommand } from '../base-command.js';
import { isoSeconds } from '../format.js';
import { listOption, valueOption } from '../named-options.js';
import { areKeyValues, areOneOf, isCount, isStepRange } from '../option-values.js';
import { terminalLine } from '../terminal-text.js';

const SPAN_STATUSES = ['ok', 'error', 'open'] as const;

/** 0.0123 → "12.3 ms", 75 → "1m15s"; open spans read "open". */
export function formatDuration(seconds: number | null): string {
  if (seconds === null) return 'open';
  if (!Number.isFinite(seconds)) return String(seconds);
  if (seconds < 1e-3) return `${(seconds * 1e6).toFixed(0)} µs`;
  if (seconds < 1) return `${(seconds * 1e3).toPrecision(3)} ms`;
  if (seconds < 60) return `${seconds.toPrecision(3)} s`;
  const m = Math.floor(seconds / 60);
  return `${m}m${String(Math.round(seconds - 60 * m)).padStart(2, '0')}s`;
}

/** The few attributes and labels worth a line: `k=v`, each bounded. */
export function keyAttributes(s: SpanRecord, max = 4): string {
  const shown = (v: unknown) => {
    const text = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
    const flat = text.replace(/\s+/g, ' ');
    return flat.length > 40 ? `${flat.slice(0, 40)}…` : flat;
  };
  const parts = Object.entries(s.attributes).slice(0, max).map(([k, v]) => `${k}=${shown(v)}`);
  const more = Object.keys(s.attributes).length - max;
  if (more > 0) parts.push(`+${more} more`);
  return parts.join(' ');
}

/**
 * One span on one line: kind and name, duration, status, step, labels, attributes, id.
 * Names, labels and attributes come from the trainer or a trajectory: escaped for the terminal.
 */
export function spanLine(s: SpanRecord): string {
  const status = s.status === 'ok' ? '' : s.status === 'error' ? `  ERROR ${s.error ?? ''}` : '  OPEN';
  const step = s.step === null ? '' : `  step ${s.step}`;
  const labels = Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(' ');
  const attrs = keyAttributes(s);
  return terminalLine(`${s.kind} ${JSON.stringify(s.name)}  ${formatDuration(s.duration_s)}${status}${step}${labels ? `  [${labels}]` : ''}${attrs ? `  ${attrs}` : ''}  id ${s.span_id}`);
}

/** A tree as indented lines, children by start time. */
export function treeLines(node: SpanTreeNode, depth = 0, out: string[] = []): string[] {
  out.push(`${'  '.repeat(depth)}${depth === 0 ? '' : '└ '}${spanLine(node.span)}`);
  for (const c of node.children) treeLines(c, depth + 1, out);
  return out;
}

function treeJson(node: SpanTreeNode): unknown {
  return { ...node.span, children: node.children.map(treeJson) };
}

export class SpanListCommand extends ProbeCommand {
  static paths = [['span', 'list']];
  static usage = Command.Usage({
    description: 'List the spans of a run (rollouts, turns, tool calls, …), or show them as trees',
    details:
      'Each span once, at its last write: a span still running when the run was flushed or crashed reads OPEN. ' +
      'Filters combine with AND. With `--tree`, the whole tree of every matching span is printed, indented, ' +
      'children by start time, with durations, status, labels and key attributes.',
    examples: [
      ['The rollouts of step 212 as trees', '$0 span list runs/exp1 --step 212 --kind rollout --tree'],
      ['Failed tool calls', '$0 span list runs/exp1 --kind tool_call --status error'],
      ['One sample\'s spans', '$0 span list runs/exp1 --label sample=s-17 --tree'],
      ['Everything, for jq', '$0 span list runs/exp1 --limit 0 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  step = valueOption('--step', { value: 'N', description: 'Only this step', validator: isCount });
  steps = valueOption('--steps', { value: 'FROM..TO', description: 'Only steps FROM..TO (inclusive)', validator: isStepRange });
  kinds = listOption('--kind', { value: 'KIND', description: 'Only this kind: rollout, turn, tool_call, epoch, evaluation, …' });
  roots = listOption('--root', { value: 'ID', description: 'Only the tree with this root span id' });
  ids = listOption('--id', { value: 'ID', description: 'Only this span id' });
  labels = listOption('--label', { value: 'KEY=VALUE', description: 'Only spans with this label (all given must match)', validator: areKeyValues('sample=s-17') });
  status = listOption('--status', { value: 'STATUS', description: `Only this status: ${SPAN_STATUSES.join(', ')}`, validator: areOneOf(SPAN_STATUSES) });
  tree = Option.Boolean('--tree', false, { description: 'Print the trees the matching spans belong to' });
  limit = valueOption('--limit', { value: 'N', description: 'At most N spans (N trees with --tree); 0: all', default: '200', validator: isCount });
  json = Option.Boolean('--json', false, { description: 'Print JSON (an array of spans, or of trees with --tree)' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    const query: SpanQuery = {};
    if (this.step !== undefined) query.step = this.step;
    if (this.steps !== undefined) query.stepRange = this.steps;
    if (this.kinds.length) query.kind = this.kinds;
    if (this.roots.length) query.root = this.roots;
    if (this.ids.length) query.id = this.ids;
    if (this.status.length) query.status = this.status;
    if (this.labels.length) query.label = Object.fromEntries(this.labels);
    const out = this.context.stdout;
    if (!this.tree) {
      if (this.limit > 0) query.limit = this.limit;
      const { spans, total, matched } = reader.spanRead(query);
      if (this.json) {
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
    const shown = this.limit > 0 ? roots.slice(0, this.limit) : roots;
    const forest = shown.length ? spanForest(reader.spans({ root: shown })) : [];
    // keep the root order of the first matching span of each tree
    const order = new Map(shown.map((r, i) => [r, i]));
    forest.sort((a, b) => (order.get(a.span.root_id) ?? Infinity) - (order.get(b.span.root_id) ?? Infinity));
    if (this.json) {
      out.write(`${JSON.stringify(forest.map(treeJson))}\n`);
      return 0;
    }
    for (const node of forest) out.write(`${treeLines(node).join('\n')}\n\n`);
    if (roots.length > shown.length) out.write(`… ${roots.length - shown.length} more trees (--limit 0 prints all)\n`);
    if (forest.length === 0) out.write('no spans match\n');
    return 0;
  }
}
