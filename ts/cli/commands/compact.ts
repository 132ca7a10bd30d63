import path from 'node:path';

import { Command, Option } from 'clipanion';

import { compactRun } from '../../compact.js';
import type { CompactProgress } from '../../compact.js';
import { ProbeCommand } from '../base-command.js';
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

export class CompactCommand extends ProbeCommand {
  static paths = [['compact']];
  static usage = Command.Usage({
    description: 'Merge part files into steps.parquet, 4096-row sample shards and spans/spans.parquet, in the run and every rank directory',
    details: 'Atomic and idempotent; works on crashed and live runs. Only merges part files: no recorded value is rewritten.',
    examples: [['Compact a crashed run', '$0 compact runs/exp1']],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const progress = this.json ? null : new Progress(this.context.stderr, 'compacting');
    const result = compactRun(this.run, (p) => progress?.update(p.done, p.total, `${p.unit.rank === 0 ? '' : `${path.basename(p.unit.dir)} `}${p.unit.what}`));
    progress?.done();
    if (this.json) {
      this.context.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    }
    for (const p of result.units) this.context.stdout.write(`${terminalLine(`${this.run}: ${describe(p)}`)}\n`);
    return 0;
  }
}
