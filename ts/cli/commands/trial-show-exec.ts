/** `probe trial show`, loaded only when it runs: trial-show.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import type { TrialCapture } from '../../reader/trial-reader.js';
import type { SpanTreeNode } from '../../schema/span-record.js';
import { allLedgerEntries } from '../../trials/ledger-file.js';
import type { LedgerEntry } from '../../trials/ledger.js';
import { FILE_ROLES } from '../../trials/roles.js';
import { bytes, table } from '../format.js';
import { terminalLine, terminalText } from '../terminal-text.js';
import { formatDuration, treeLines } from './span-text.js';
import { ledgerText, rewardText, statusCountsText, statusText, trajectoryText } from './trial-common.js';

function countNodes(n: SpanTreeNode): number {
  return 1 + n.children.reduce((a, c) => a + countNodes(c), 0);
}

/** The tree as JSON, its first `limit` nodes depth-first (0: all), and how many were left out. */
function boundedTree(root: SpanTreeNode, limit: number): { tree: unknown; omitted: number } {
  let left = limit > 0 ? limit : Infinity;
  let omitted = 0;
  const json = (n: SpanTreeNode): unknown => {
    left--;
    const children: unknown[] = [];
    for (const c of n.children) {
      if (left > 0) children.push(json(c));
      else omitted += countNodes(c);
    }
    return { ...n.span, children };
  };
  return { tree: json(root), omitted };
}

function ledgerLine(e: LedgerEntry): string {
  const size = e.size === null ? '' : bytes(e.size);
  const sha = e.sha256 ? e.sha256.slice(0, 12) : '';
  return `${terminalLine(`  ${e.status.padEnd(9)} ${e.role.padEnd(15)} ${size.padStart(10)}  ${sha.padEnd(12)}  ${e.path}${e.reason ? `  — ${e.reason}` : ''}`)}\n`;
}

/** `config 1 collected; other 800 collected, 5 skipped`: every role that has entries, in role order. */
function byRoleText(t: TrialCapture): string | null {
  const byRole = t.ledger.by_role;
  if (!byRole) return null; // a capture written before the ledger was summarised
  return FILE_ROLES.map((r) => [r, statusCountsText(byRole[r] ?? {})] as const)
    .filter(([, text]) => text !== '')
    .map(([r, text]) => `${r} ${text}`)
    .join('; ');
}

export interface TrialShowArgs {
  run: string;
  capture: string;
  treeLimit: number;
  files: boolean;
  json: boolean;
  context: BaseContext;
}

export async function execTrialShow(command: TrialShowArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  const t = reader.trial(command.capture);
  const tree = reader.trialSpanTree(t);
  const out = command.context.stdout;
  if (command.json) {
    const bounded = tree ? boundedTree(tree, command.treeLimit) : null;
    const ledger = command.files ? { ...t.ledger, entries: [...allLedgerEntries(t.dir, t.ledger)] } : t.ledger;
    out.write(`${JSON.stringify({ ...t, ledger, span_tree: bounded?.tree ?? null, span_tree_omitted: bounded?.omitted ?? 0 }, null, 2)}\n`);
    return 0;
  }
  const tr = t.trial;
  const rows: Array<[string, string]> = [
    ['capture', `${t.capture_key}  (${t.dir})`],
    ['step', `${t.step}${t.sample_id ? `  sample ${t.sample_id}` : ''}${t.group_id ? `  group ${t.group_id}` : ''}`],
    ['trial', `${JSON.stringify(tr.name)}  id ${tr.id ?? '(none: no result.json)'}`],
    ['task', tr.task_name ?? '-'],
    ['agent', `${tr.agent ?? '-'}${tr.agent_version ? ` ${tr.agent_version}` : ''}  model ${tr.model ?? '-'}${tr.model_provider ? ` (${tr.model_provider})` : ''}`],
    ['outcome', statusText(t)],
    ['rewards', `${rewardText(tr.rewards)}${tr.reward_source ? `  (from ${tr.reward_source})` : ''}`],
  ];
  if (tr.tokens) rows.push(['tokens', `in ${tr.tokens.input ?? '-'}  cached ${tr.tokens.cached ?? '-'}  out ${tr.tokens.output ?? '-'}  cost ${tr.tokens.cost_usd === null ? '-' : `$${tr.tokens.cost_usd}`}`]);
  if (tr.started_at) rows.push(['time', `${tr.started_at} → ${tr.finished_at ?? 'unfinished'}`]);
  for (const [phase, p] of Object.entries(tr.timings)) rows.push([`  ${phase}`, formatDuration(p.seconds)]);
  if (Object.keys(t.source.context).length) rows.push(['context', Object.entries(t.source.context).map(([k, v]) => `${k}=${v}`).join(' ')]);
  rows.push(['source', `${t.source.trial_dir} on ${t.source.host}${t.source.staged_at ? `, staged ${t.source.staged_at}` : ''}; captured ${t.captured_at}`]);
  (tr.warnings ?? []).forEach((w, i) => rows.push([i === 0 ? 'warnings' : '', w]));
  rows.push(['trajectory', trajectoryText(t)]);
  for (const tj of t.trajectories) {
    if (tj.reason) rows.push(['', `${tj.path}: ${tj.reason}`]);
    for (const w of tj.warnings.slice(0, 5)) rows.push(['', `${tj.path}: ${w}`]);
  }
  out.write(`${table(rows)}\n`);
  if (tr.exception?.traceback || tr.exception?.text) {
    // the trial's own text, printed over several lines: each line escaped for the terminal
    const text = (tr.exception.traceback || tr.exception.text || '').trimEnd().split(/\r?\n/);
    out.write(`\nexception:\n${text.slice(-12).map((l) => `  ${terminalText(l)}`).join('\n')}\n`);
  }
  writeLedger(command, t);
  if (tree) {
    const lines = treeLines(tree);
    const shown = command.treeLimit > 0 ? lines.slice(0, command.treeLimit) : lines;
    const cut = t.spans.cut ? `; ${t.spans.cut} cut at the limit of ${t.spans.limit}` : '';
    out.write(`\nspans (${countNodes(tree)}${cut}):\n${shown.join('\n')}\n`);
    if (shown.length < lines.length) out.write(`… ${lines.length - shown.length} more lines (--tree-lines 0 prints all)\n`);
  } else out.write('\nspans: none found (the span file is missing)\n');
  return 0;
}

/** The ledger: counts, counts by role, the listed entries (or all, --files), what is not listed. */
function writeLedger(command: TrialShowArgs, t: TrialCapture): void {
  const out = command.context.stdout;
  out.write(`\nfiles: ${ledgerText(t.ledger)}\n`);
  const roles = byRoleText(t);
  if (roles !== null) out.write(`  by role   ${terminalLine(roles)}\n`);
  const entries = command.files ? allLedgerEntries(t.dir, t.ledger) : t.ledger.entries;
  for (const e of entries) out.write(ledgerLine(e));
  if (!command.files) {
    for (const r of t.ledger.by_reason ?? []) {
      if (r.count > r.listed) out.write(`${terminalLine(`  … ${r.count - r.listed} more ${r.status}${r.reason_code ? ` (${r.reason_code})` : ''} (--files lists all)`)}\n`);
    }
  }
  out.write(`  covers: ${t.ledger.covers}\n  sandbox: ${t.ledger.sandbox}\n`);
}
