import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';

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
    const { execCompact } = await import('./compact-exec.js');
    return execCompact(this);
  }
}
