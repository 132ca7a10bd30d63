/** `probe trial status`, loaded only when it runs: trial-status.ts declares its options and help. */
import type { BaseContext } from 'clipanion';

import { LISTED_PER_REASON } from '../../trials/ledger.js';
import { stagingStatus } from '../../trials/staging.js';
import { terminalLine } from '../terminal-text.js';
import { ledgerText, rewardText } from './trial-common.js';

export interface TrialStatusArgs {
  staging: string;
  files: boolean;
  json: boolean;
  context: BaseContext;
}

export async function execTrialStatus(command: TrialStatusArgs): Promise<number> {
  const all = stagingStatus(command.staging);
  const out = command.context.stdout;
  if (command.json) {
    out.write(`${JSON.stringify(all.map(({ dir, staged }) => ({ dir, ...staged })), null, 2)}\n`);
    return 0;
  }
  for (const { dir, staged: s } of all) {
    const d = s.delivery;
    const files = Object.entries(d.files);
    const done = files.filter(([, f]) => f.status === 'delivered').length;
    // staged records hold the trial's names, paths and errors: each line escaped for the terminal
    out.write(`${terminalLine(dir)}\n`);
    out.write(`${terminalLine(`  trial       ${JSON.stringify(s.trial.name)}  step ${s.step}  ${rewardText(s.trial.rewards)}${s.trial.exception ? `  FAILED ${s.trial.exception.type ?? ''}` : ''}`)}\n`);
    out.write(`${terminalLine(`  collection  ${ledgerText(s.collection)}  (staged ${s.source.staged_at})`)}\n`);
    out.write(
      terminalLine(
        `  delivery    ${d.status.toUpperCase()}  ${done}/${files.length} files confirmed` +
          `${d.attempts ? `, ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}` : ''}${d.run_dir ? ` into ${d.run_dir}` : ''}` +
          `${d.delivered_at ? ` at ${d.delivered_at}` : ''}`,
      ) + `${d.status !== 'delivered' && d.last_error ? `\n              last error: ${terminalLine(d.last_error)}` : ''}\n`,
    );
    // bounded: the first LISTED_PER_REASON of each collection and delivery status (--files: all)
    const shown = new Map<string, number>();
    for (const e of s.collection.entries) {
      const f = d.files[e.path];
      const interesting = e.status !== 'collected' || (f && f.status !== 'delivered');
      if (!command.files && !interesting) continue;
      const group = `${e.status} ${e.reason_code ?? ''} ${f?.status ?? '-'}`;
      const n = (shown.get(group) ?? 0) + 1;
      shown.set(group, n);
      if (!command.files && n > LISTED_PER_REASON) continue;
      const delivery = f ? `${f.status}${f.attempts > 1 || f.status === 'failed' ? ` (attempts ${f.attempts}${f.last_error ? `; ${f.last_error}` : ''})` : ''}` : '-';
      out.write(`${terminalLine(`    ${e.status.padEnd(9)} ${delivery.padEnd(9)} ${e.path}${e.reason ? `  — ${e.reason}` : ''}`)}\n`);
    }
    const more = [...shown.values()].reduce((a, n) => a + Math.max(0, n - LISTED_PER_REASON), 0);
    if (!command.files && more > 0) out.write(`    … ${more} more not collected or not delivered (--files lists all)\n`);
  }
  return 0;
}
