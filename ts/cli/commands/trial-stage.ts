import { Command, Option } from 'clipanion';

import { stageTrial } from '../../trials/staging.js';
import { ProbeCommand } from '../base-command.js';
import { isCount, isPositive, ledgerText, parseContext, rewardText } from './trial-common.js';

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
  to = Option.String('--to', { required: true, description: 'The staging directory (a spool: one subdirectory per trial)' });
  step = Option.String('--step', { required: true, description: 'The training step the trial belongs to', validator: isCount });
  sampleId = Option.String('--sample-id', { description: 'The sample id (becomes the label `sample`)' });
  groupId = Option.String('--group-id', { description: 'The group id (becomes the label `group`)' });
  contextPairs = Option.Array('--context', [], { description: 'A launcher correlation field KEY=VALUE (repeatable)' });
  maxFileBytes = Option.String('--max-file-bytes', { description: 'Skip files larger than this (default 268435456)', validator: isPositive });
  maxSpans = Option.String('--max-spans', { description: 'Write at most this many spans; the rest are cut, counted and reported (default 50000)', validator: isPositive });
  json = Option.Boolean('--json', false, { description: 'Print the staged record as JSON' });

  async exec(): Promise<number> {
    const { dir, staged } = await stageTrial(this.trialDir, {
      to: this.to,
      step: this.step,
      sampleId: this.sampleId,
      groupId: this.groupId,
      context: parseContext(this.contextPairs),
      maxFileBytes: this.maxFileBytes,
      maxSpans: this.maxSpans,
    });
    if (this.json) this.context.stdout.write(`${JSON.stringify({ dir, ...staged }, null, 2)}\n`);
    else this.context.stdout.write(`staged ${JSON.stringify(staged.trial.name)} for step ${staged.step} in ${dir}: ${rewardText(staged.trial.rewards)}; files ${ledgerText(staged.collection)}; delivery pending\n`);
    return 0;
  }
}
