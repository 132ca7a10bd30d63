import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';

export class TrialDeliverCommand extends ProbeCommand {
  static paths = [['trial', 'deliver']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Deliver staged trials into a run (resumable)',
    details:
      'Copies each pending file into the run, verifies it against the sha256 taken at staging, and records each confirmation ' +
      'before the next file. If the run\'s storage fails part way, the files not confirmed stay listed with their error; ' +
      'running deliver again finishes the job without duplicates. The capture appears in the run once every file is in. ' +
      'Exits 1 when any staged trial is not fully delivered.',
    examples: [
      ['Deliver one staged trial', '$0 trial deliver /scratch/rlprobe-spool/hello__AbC1234.3f2a9c1d0b7e --run runs/exp1'],
      ['Deliver a whole spool', '$0 trial deliver /scratch/rlprobe-spool --run runs/exp1'],
    ],
  });

  staging = Option.String({ name: 'staging_dir' });
  run = valueOption('--run', { value: 'RUN', required: true, description: 'The run directory to deliver into' });
  json = Option.Boolean('--json', false, { description: 'Print the delivery results as JSON' });

  async exec(): Promise<number> {
    const { execTrialDeliver } = await import('./trial-deliver-exec.js');
    return execTrialDeliver(this);
  }
}
