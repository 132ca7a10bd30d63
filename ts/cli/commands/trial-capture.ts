import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { areKeyValues, isCount, isPositive } from '../option-values.js';

export class TrialCaptureCommand extends ProbeCommand {
  static paths = [['trial', 'capture']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Capture a Harbor trial directory into a run, keyed to a training step',
    details:
      'Copies the declared regular files of the trial (each with its role, size and sha256), records what is missing, skipped or unknown, ' +
      'reads result.json (trial id, names, agent and model, rewards, exception, phase timings) and expands a recognised trajectory ' +
      '(ATIF-v1.0 to ATIF-v1.8) into turn and tool_call spans under a rollout span at the step. Capturing the same trial again ' +
      'replaces the capture in place. Symbolic links and hidden files are listed, never followed; nothing from the trial is executed.',
    examples: [
      ['Capture a trial at step 212', '$0 trial capture jobs/j1/hello__AbC1234 --run runs/exp1 --step 212'],
      ['With the launcher\'s ids', '$0 trial capture trials/t7 --run runs/exp1 --step 212 --sample-id s-17 --group-id g-4 --context rollout_id=r-9'],
    ],
  });

  trialDir = Option.String({ name: 'trial_dir' });
  run = valueOption('--run', { value: 'RUN', required: true, description: 'The run directory to capture into' });
  step = valueOption('--step', { value: 'N', required: true, description: 'The training step the trial belongs to', validator: isCount });
  sampleId = valueOption('--sample-id', { value: 'ID', description: 'The sample id (becomes the label `sample`)' });
  groupId = valueOption('--group-id', { value: 'ID', description: 'The group id (becomes the label `group`)' });
  contextPairs = listOption('--context', { value: 'KEY=VALUE', description: 'A launcher correlation field, kept under source.context', validator: areKeyValues('rollout_id=r-17') });
  maxFileBytes = valueOption('--max-file-bytes', { value: 'BYTES', description: 'Skip files larger than this (default 268435456)', validator: isPositive });
  maxSpans = valueOption('--max-spans', { value: 'N', description: 'Write at most this many spans; the rest are cut, counted and reported (default 50000)', validator: isPositive });
  parserModules = listOption('--parser-module', { value: 'FILE', description: 'A JS module registering trajectory parsers' });
  json = Option.Boolean('--json', false, { description: 'Print the capture manifest as JSON' });

  async exec(): Promise<number> {
    const { execTrialCapture } = await import('./trial-capture-exec.js');
    return execTrialCapture(this);
  }
}
