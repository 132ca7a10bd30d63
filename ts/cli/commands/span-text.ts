/** Spans as `probe span list` and `probe trial show` print them: one line each, or an indented tree. */
import type { SpanRecord, SpanTreeNode } from '../../schema/span-record.js';
import { terminalLine } from '../terminal-text.js';

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
