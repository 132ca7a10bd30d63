/**
 * Reading spans back: the query (validated with zod, span-query.ts), the native read of
 * each rank directory (each span once, at its last write), records, trees and counts.
 */
import { RlprobeError, native } from '../errors.js';
import { loadOnDemand } from '../schema/on-demand.js';
import { parseQuery } from './query-parse.js';
import type * as SpanQueryModule from './span-query.js';
import type { SpanQuery } from './span-query.js';
import { readSpans, spanCounts } from '../native.js';
import type { NativeSampleBatch, NativeSampleColumn } from '../native.js';
import type { SpanKindCount, SpanRecord, SpanTreeNode } from '../schema/span-record.js';
import type { RankDir } from './rank-dirs.js';
import { parseLabels } from './sample-rows.js';

export type { SpanQuery } from './span-query.js';

const list = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

function nativeFilter(query: unknown) {
  const q = parseQuery(() => loadOnDemand<typeof SpanQueryModule>(import.meta.url, './span-query.js').SpanQuerySchema, 'span filter', query ?? {});
  let stepMin = q.step;
  let stepMax = q.step;
  if (q.stepRange) {
    if (q.step !== undefined) throw new RlprobeError('RLPROBE_INVALID_QUERY', 'invalid span filter: give step or stepRange, not both');
    [stepMin, stepMax] = q.stepRange;
    if (stepMin > stepMax) throw new RlprobeError('RLPROBE_INVALID_QUERY', `invalid span filter stepRange: from > to (got ${JSON.stringify(q.stepRange)})`);
  }
  return {
    kinds: list(q.kind),
    stepMin,
    stepMax,
    spanIds: list(q.id),
    rootIds: list(q.root),
    parentIds: list(q.parent),
    labels: q.label ? Object.entries(q.label).map(([k, v]) => [k, String(v)]) : undefined,
    statuses: list(q.status),
    limit: q.limit,
  };
}

function column(batch: NativeSampleBatch, name: string): NativeSampleColumn | undefined {
  return batch.columns.find((c) => c.name === name);
}

function parseObject(v: string | null | undefined): Record<string, unknown> {
  if (v === null || v === undefined) return {};
  try {
    const o = JSON.parse(v) as unknown;
    return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : { value: o };
  } catch {
    return { unparsed: v };
  }
}

type TextAt = (row: number) => string | null;

/** A text column's per-row reader: plain texts, or a dictionary and its codes. */
function textColumn(batch: NativeSampleBatch, name: string): TextAt {
  const c = column(batch, name);
  const texts = c?.texts;
  if (!c || !texts) return () => null;
  const codes = c.codes;
  if (c.kind === 'dict' && codes) return (i) => (codes[i] === 0xffffffff ? null : (texts[codes[i]] ?? null));
  return (i) => texts[i] ?? null;
}

/** Parses each distinct JSON text once: labels repeat across a tree's spans. */
function cachedParse<T>(parse: (v: string | null) => T): (v: string | null) => T {
  const cache = new Map<string | null, T>();
  return (v) => {
    let out = cache.get(v);
    if (out === undefined) {
      out = parse(v);
      if (cache.size < 100_000) cache.set(v, out);
    }
    return out;
  };
}

/**
 * Records from a native batch of span columns. Spans with the same labels share one
 * (frozen) labels object.
 */
function recordsOf(batch: NativeSampleBatch, dirRank: number): SpanRecord[] {
  const numbers = (name: string) => {
    const c = column(batch, name);
    if (!c?.values) return null;
    return { values: c.values, valid: c.valid ?? null };
  };
  const id = textColumn(batch, 'span_id');
  const parent = textColumn(batch, 'parent_id');
  const root = textColumn(batch, 'root_id');
  const kind = textColumn(batch, 'kind');
  const name = textColumn(batch, 'name');
  const status = textColumn(batch, 'status');
  const error = textColumn(batch, 'error');
  const sample = textColumn(batch, 'sample_id');
  const group = textColumn(batch, 'group_id');
  const labels = textColumn(batch, 'labels');
  const attributes = textColumn(batch, 'attributes');
  const key = textColumn(batch, 'key');
  const labelsOf = cachedParse((v) => Object.freeze(parseLabels(v) ?? {}));
  const n = { step: numbers('step'), start: numbers('start_time'), end: numbers('end_time'), duration: numbers('duration_s'), rank: numbers('rank') };
  const num = (c: { values: Float64Array; valid: Uint8Array | null } | null, i: number) =>
    c === null || (c.valid !== null && c.valid[i] === 0) ? null : c.values[i];
  const out: SpanRecord[] = new Array(batch.rows);
  for (let i = 0; i < batch.rows; i++) {
    const spanId = id(i) ?? '';
    out[i] = {
      span_id: spanId,
      parent_id: parent(i),
      root_id: root(i) ?? spanId,
      kind: kind(i) ?? '',
      name: name(i) ?? '',
      step: num(n.step, i),
      start_time: num(n.start, i) ?? NaN,
      end_time: num(n.end, i),
      duration_s: num(n.duration, i),
      status: status(i) ?? 'ok',
      error: error(i),
      sample_id: sample(i),
      group_id: group(i),
      labels: labelsOf(labels(i)),
      attributes: parseObject(attributes(i)),
      key: key(i),
      rank: num(n.rank, i) ?? dirRank,
    };
  }
  return out;
}

/**
 * Spans of the given rank directories matching `query`, earliest start first. Throws
 * RlprobeError RLPROBE_INVALID_QUERY naming the field and value for a bad filter.
 */
export function readSpansOf(dirs: readonly RankDir[], query: SpanQuery = {}): { spans: SpanRecord[]; total: number; matched: number } {
  const filter = nativeFilter(query);
  let spans: SpanRecord[] = [];
  let total = 0;
  let matched = 0;
  for (const { rank, dir } of dirs) {
    const read = native(() => readSpans(dir, filter));
    total += read.total;
    matched += read.matched;
    spans = spans.concat(recordsOf(read.batch, rank));
  }
  if (dirs.length > 1) {
    spans.sort((a, b) => a.start_time - b.start_time);
    if (filter.limit !== undefined) spans = spans.slice(0, filter.limit);
  }
  return { spans, total, matched };
}

/** Spans per kind across the rank directories, kinds by name. */
export function spanCountsOf(dirs: readonly RankDir[]): SpanKindCount[] {
  const byKind = new Map<string, SpanKindCount>();
  for (const { dir } of dirs) {
    for (const c of native(() => spanCounts(dir))) {
      const have = byKind.get(c.kind);
      if (have) {
        have.spans += c.spans;
        have.open += c.open;
        have.error += c.error;
      } else byKind.set(c.kind, { kind: c.kind, spans: c.spans, open: c.open, error: c.error });
    }
  }
  return [...byKind.values()].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

/**
 * The forest the spans form: a span whose parent is not among them is a root. Children
 * are ordered by start time.
 */
export function spanForest(spans: readonly SpanRecord[]): SpanTreeNode[] {
  const nodes = new Map<string, SpanTreeNode>();
  for (const s of spans) nodes.set(s.span_id, { span: s, children: [] });
  const roots: SpanTreeNode[] = [];
  const parentOf = new Map<SpanTreeNode, SpanTreeNode>();
  for (const node of nodes.values()) {
    const parent = node.span.parent_id === null ? undefined : nodes.get(node.span.parent_id);
    if (parent !== undefined && parent !== node) parentOf.set(node, parent);
    else roots.push(node);
  }
  // a parent cycle (keyed spans re-recorded under each other) has no root: each node on
  // the cycle that is reached from no root is shown as a root, never lost or looped on
  const reached = new Set<SpanTreeNode>();
  for (const [child, parent] of parentOf) parent.children.push(child);
  const stack = [...roots];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (reached.has(n)) continue;
    reached.add(n);
    stack.push(...n.children);
  }
  for (const node of nodes.values()) {
    if (reached.has(node)) continue;
    const parent = parentOf.get(node)!;
    parent.children.splice(parent.children.indexOf(node), 1);
    roots.push(node);
    const rest = [node];
    while (rest.length > 0) {
      const n = rest.pop()!;
      if (reached.has(n)) continue;
      reached.add(n);
      rest.push(...n.children);
    }
  }
  const byStart = (a: SpanTreeNode, b: SpanTreeNode) => a.span.start_time - b.span.start_time;
  const sort = (list: SpanTreeNode[]) => {
    list.sort(byStart);
    for (const n of list) sort(n.children);
  };
  sort(roots);
  return roots;
}

/** The ids of `id` and every span under it in `spans`. */
export function subtreeIds(spans: readonly SpanRecord[], id: string): Set<string> {
  const children = new Map<string, string[]>();
  for (const s of spans) {
    if (s.parent_id === null) continue;
    const list = children.get(s.parent_id);
    if (list) list.push(s.span_id);
    else children.set(s.parent_id, [s.span_id]);
  }
  const out = new Set<string>([id]);
  const stack = [id];
  while (stack.length > 0) {
    for (const c of children.get(stack.pop()!) ?? []) {
      if (!out.has(c)) {
        out.add(c);
        stack.push(c);
      }
    }
  }
  return out;
}
