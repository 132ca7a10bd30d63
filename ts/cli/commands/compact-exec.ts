/** `probe compact`, loaded only when it runs: compact.ts declares its options and help. */
import path from 'node:path';

import type { BaseContext } from 'clipanion';

import { compactRun } from '../../compact.js';
import type { CompactProgress } from '../../compact.js';
import { bytes } from '../format.js';
import { Progress } from '../progress.js';
import { terminalLine } from '../terminal-text.js';

function describe(p: CompactProgress): string {
  const r = p.result;
  const where = p.unit.rank === 0 ? '' : `${path.basename(p.unit.dir)} `;
  const merged = r.partsMerged ? `merged ${r.partsMerged} part file${r.partsMerged === 1 ? '' : 's'}` : 'already compact';
  const cleanup = r.leftoversRemoved ? `, removed ${r.leftoversRemoved} part(s) left by an interrupted compaction` : '';
  const size =
    p.unit.what === 'steps'
      ? `; steps.parquet has ${r.rows} rows (${bytes(r.bytes)})`
      : p.unit.what === 'spans'
        ? `; spans/spans.parquet has ${r.rows} spans (${bytes(r.bytes)})`
        : r.partsMerged
        ? `; ${r.rows} samples into new shards (${bytes(r.bytes)})`
        : '';
  return `${where}${p.unit.what}: ${merged}${cleanup}${size}`;
}

export interface CompactArgs {
  run: string;
  json: boolean;
  context: BaseContext;
}

export async function execCompact(command: CompactArgs): Promise<number> {
  const progress = command.json ? null : new Progress(command.context.stderr, 'compacting');
  const result = compactRun(command.run, (p) => progress?.update(p.done, p.total, `${p.unit.rank === 0 ? '' : `${path.basename(p.unit.dir)} `}${p.unit.what}`));
  progress?.done();
  if (command.json) {
    command.context.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  }
  for (const p of result.units) command.context.stdout.write(`${terminalLine(`${command.run}: ${describe(p)}`)}\n`);
  return 0;
}
