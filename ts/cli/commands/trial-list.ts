import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isCount, isStepRange } from '../option-values.js';

export class TrialListCommand extends ProbeCommand {
  static paths = [['trial', 'list']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'List the trials captured into a run',
    details: 'One line per capture, by step: capture key, trial name, outcome, rewards, sample and group, files, trajectory.',
    examples: [
      ['All captures', '$0 trial list runs/exp1'],
      ['Step 212 as JSON', '$0 trial list runs/exp1 --step 212 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  step = valueOption('--step', { value: 'N', description: 'Only this step', validator: isCount });
  steps = valueOption('--steps', { value: 'FROM..TO', description: 'Only steps FROM..TO (inclusive)', validator: isStepRange });
  json = Option.Boolean('--json', false, { description: 'Print the capture manifests as JSON' });

  async exec(): Promise<number> {
    const { execTrialList } = await import('./trial-list-exec.js');
    return execTrialList(this);
  }
}
