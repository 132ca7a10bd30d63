import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { areKeyValues, isCount, isPositive } from '../option-values.js';

export class TrialStageCommand extends ProbeCommand {
  static paths = [['trial', 'stage']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Stage a trial for later delivery, when the run\'s storage is not reachable now',
    details:
      'Copies the trial\'s durable bytes into <staging_dir>/<capture key>/files/ and writes .probe-capture.json beside them, ' +
      'with the collection status of every file (collected, missing, skipped, unknown) and a delivery status (pending). ' +
      '`probe trial deliver` copies it into the run later; `probe trial status` shows both.',
    examples: [['Stage to local disk', '$0 trial stage jobs/j1/hello__AbC1234 --step 212 --to /scratch/rlprobe-spool']],
  });

  trialDir = Option.String({ name: 'trial_dir' });
  to = valueOption('--to', { value: 'DIR', required: true, description: 'The staging directory (a spool: one subdirectory per trial)' });
  step = valueOption('--step', { value: 'N', required: true, description: 'The training step the trial belongs to', validator: isCount });
  sampleId = valueOption('--sample-id', { value: 'ID', description: 'The sample id (becomes the label `sample`)' });
  groupId = valueOption('--group-id', { value: 'ID', description: 'The group id (becomes the label `group`)' });
  contextPairs = listOption('--context', { value: 'KEY=VALUE', description: 'A launcher correlation field', validator: areKeyValues('rollout_id=r-17') });
  maxFileBytes = valueOption('--max-file-bytes', { value: 'BYTES', description: 'Skip files larger than this (default 268435456)', validator: isPositive });
  maxSpans = valueOption('--max-spans', { value: 'N', description: 'Write at most this many spans; the rest are cut, counted and reported (default 50000)', validator: isPositive });
  json = Option.Boolean('--json', false, { description: 'Print the staged record as JSON' });

  async exec(): Promise<number> {
    const { execTrialStage } = await import('./trial-stage-exec.js');
    return execTrialStage(this);
  }
}
