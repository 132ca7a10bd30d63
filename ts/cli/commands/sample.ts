import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';

export class SampleCommand extends ProbeCommand {
  static paths = [['sample']];
  static usage = Command.Usage({
    description: 'Print one sample in full: why it was kept, reward and components, advantage, length, prompt and completion',
    details: 'Looks the id up in every rank (filtered in Rust, a shard at a time). Exits 1 when no sample has it.',
    examples: [
      ['One sample', '$0 sample runs/exp1 212_3'],
      ['As JSON', '$0 sample runs/exp1 212_3 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  id = Option.String({ name: 'sample-id' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const { execSample } = await import('./sample-exec.js');
    return execSample(this);
  }
}
