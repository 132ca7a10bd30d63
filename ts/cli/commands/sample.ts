import { Command, Option } from 'clipanion';

import { RlprobeError } from '../../errors.js';
import { RunReader } from '../../reader/run-reader.js';
import { ProbeCommand } from '../base-command.js';
import { formatSample, sampleJsonLine } from './samples.js';

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
    const found = [...RunReader.open(this.run).samples({ sampleId: this.id })];
    if (found.length === 0) throw new RlprobeError('RLPROBE_INVALID_QUERY', `no sample with id ${JSON.stringify(this.id)} in ${this.run}`);
    // the same id on several ranks (or logged twice): every match, in reading order
    for (const s of found) {
      this.context.stdout.write(this.json ? sampleJsonLine(s) : formatSample(s, true));
    }
    return 0;
  }
}
