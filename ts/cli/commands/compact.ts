import { Command, Option } from 'clipanion';

import { compactRun } from '../../compact.js';
import { ProbeCommand } from '../base-command.js';
import { bytes } from '../format.js';

export class CompactCommand extends ProbeCommand {
  static paths = [['compact']];
  static usage = Command.Usage({
    description: 'Merge step part files into steps.parquet (atomic, idempotent; works on crashed and live runs)',
    examples: [['Compact a crashed run', '$0 compact runs/exp1']],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const result = compactRun(this.run);
    if (this.json) {
      this.context.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    }
    const what = result.partsMerged
      ? `merged ${result.partsMerged} part file${result.partsMerged === 1 ? '' : 's'}`
      : 'already compact';
    const cleanup = result.leftoversRemoved ? `, removed ${result.leftoversRemoved} part(s) left by an interrupted compaction` : '';
    this.context.stdout.write(`${this.run}: ${what}${cleanup}; steps.parquet has ${result.rows} rows (${bytes(result.bytes)})\n`);
    return 0;
  }
}
