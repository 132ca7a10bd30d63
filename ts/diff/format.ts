import { terminalLine as line } from '../text/control-chars.js';
import type { ObjectChange } from './object-diff.js';
import type { RunDiff } from './run-diff.js';

// Names below come from the recordings (config keys, metric names, paths, messages): each is
// one field of one line, so `line` escapes the control characters a newline included.
function show(v: unknown): string {
  const s = typeof v === 'number' ? fmt(v) : line(JSON.stringify(v) ?? String(v));
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

function fmt(x: number | null | undefined): string {
  if (x === null || x === undefined) return '—';
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(2) : String(Number(x.toPrecision(4)));
}

function changes(title: string, list: ObjectChange[]): string[] {
  if (list.length === 0) return [`${title}: same`];
  return [
    `${title}: ${list.length} difference(s)`,
    ...list.map((c) =>
      c.kind === 'added' ? `  + ${line(c.path)} = ${show(c.b)}` : c.kind === 'removed' ? `  - ${line(c.path)} = ${show(c.a)}` : `  ~ ${line(c.path)}: ${show(c.a)} → ${show(c.b)}`,
    ),
  ];
}

/** `probe diff`'s text output. */
export function formatRunDiff(d: RunDiff): string {
  const out = [`A ${line(d.a)}`, `B ${line(d.b)}`, ''];
  out.push(...changes('run', d.run), ...changes('trainer config', d.trainer_config), ...changes('environment', d.environment), '');
  out.push(`steps: A ${d.steps.a}, B ${d.steps.b}, ${d.steps.common} in common${d.steps.common ? ` (${d.steps.first_common}–${d.steps.last_common})` : ''}`);
  for (const w of d.warnings) out.push(`warning: ${line(w)}`);
  out.push(d.lead ? `lead indicator: ${line(d.lead.metric)} diverges first, at step ${d.lead.step}` : 'no metric diverges (|B − A| never stays past 3 σ of its own past noise)');
  out.push('');
  const rows = [['metric', 'final A', 'final B', 'best A', 'best B', 'AUC A', 'AUC B', 'diverges at']];
  for (const m of d.metrics) {
    rows.push([
      line(m.metric),
      fmt(m.final.a),
      fmt(m.final.b),
      fmt(m.best?.a),
      fmt(m.best?.b),
      fmt(m.auc.a),
      fmt(m.auc.b),
      m.divergence ? `step ${m.divergence.step} (${m.divergence.difference > 0 ? '+' : ''}${fmt(m.divergence.difference)})` : '—',
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) out.push(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ').trimEnd());
  if (d.only_in_a.length) out.push(`only in A: ${d.only_in_a.map(line).join(', ')}`);
  if (d.only_in_b.length) out.push(`only in B: ${d.only_in_b.map(line).join(', ')}`);
  out.push('');
  const f = d.findings;
  if (!f.only_in_a.length && !f.only_in_b.length) out.push('findings: the same codes in both runs');
  for (const x of f.only_in_a) out.push(`finding only in A: ${x.severity.toUpperCase()} ${x.code} onset ~step ${x.onset_step}: ${line(x.message)}`);
  for (const x of f.only_in_b) out.push(`finding only in B: ${x.severity.toUpperCase()} ${x.code} onset ~step ${x.onset_step}: ${line(x.message)}`);
  return out.join('\n');
}
