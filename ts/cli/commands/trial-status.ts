import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';

export class TrialStatusCommand extends ProbeCommand {
  static paths = [['trial', 'status']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Show the collection and delivery status of staged trials',
    details:
      'Collection status is per file, fixed when the trial was staged: collected, missing, skipped (with the reason) or unknown. ' +
      'Delivery status is per collected file: pending, delivered, or failed with its attempts and last error.',
    examples: [['A spool', '$0 trial status /scratch/rlprobe-spool']],
  });

  staging = Option.String({ name: 'staging_dir' });
  files = Option.Boolean('--files', false, { description: 'List every file, not only those not collected or not delivered' });
  json = Option.Boolean('--json', false, { description: 'Print the staged records as JSON' });

  async exec(): Promise<number> {
    const { execTrialStatus } = await import('./trial-status-exec.js');
    return execTrialStatus(this);
  }
}
