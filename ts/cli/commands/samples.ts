import { Command, Option } from 'clipanion';

import { CAPTURE_REASONS } from '../../schema/sample-record.js';
import { ProbeCommand } from '../base-command.js';
import { listOption, valueOption } from '../named-options.js';
import { areCounts, isCount, isRewardRange, isStepRange } from '../option-values.js';

export class SamplesCommand extends ProbeCommand {
  static paths = [['samples']];
  static usage = Command.Usage({
    description: 'List recorded samples and why each was kept (streams; filters run before loading)',
    details:
      'Samples of every rank, filtered by step, step range, capture reason, group, rank, reward range, ' +
      'truncation, text (case-insensitive, prompt or completion) and the steps of a doctor finding. ' +
      'Text output shows reward, components, advantage, length and the start of prompt and completion; ' +
      '`--json` prints one JSON object per line.',
    examples: [
      ['The samples of one step', '$0 samples runs/exp1 --step 212'],
      ['Top-reward samples of a step range', '$0 samples runs/exp1 --steps 200..300 --reason top_k'],
      ['One GRPO group on rank 1, in full', '$0 samples runs/exp1 --group 17 --rank 1 --full'],
      ['Everything, for jq', '$0 samples runs/exp1 --limit 0 --json'],
      ['High-reward truncated completions that mention "step"', '$0 samples runs/exp1 --reward 0.9.. --truncated --text step'],
      ['The samples behind a doctor finding', '$0 samples runs/exp1 --around-finding TRUNCATION_COLLAPSE'],
    ],
  });

  run = Option.String({ name: 'run' });
  step = valueOption('--step', { value: 'N', description: 'Only this step', validator: isCount });
  steps = valueOption('--steps', { value: 'FROM..TO', description: 'Only steps FROM..TO (inclusive)', validator: isStepRange });
  reasons = listOption('--reason', {
    value: 'REASON',
    description: `Only this capture reason: ${CAPTURE_REASONS.join(', ')}, or one of the run's own`,
  });
  group = valueOption('--group', { value: 'ID', description: 'Only this group id' });
  ranks = listOption('--rank', { value: 'N', description: 'Only this rank', validator: areCounts });
  limit = valueOption('--limit', { value: 'N', description: 'Print at most N samples (0: all)', default: '50', validator: isCount });
  reward = valueOption('--reward', { value: 'MIN..MAX', description: 'Only rewards in MIN..MAX (either side may be open: 0.9.. or ..0)', validator: isRewardRange });
  truncated = Option.Boolean('--truncated', { description: 'Only truncated completions (--no-truncated: only terminated ones)' });
  text = valueOption('--text', { value: 'TEXT', description: 'Only samples whose prompt or completion contains this (case-insensitive)' });
  aroundFinding = valueOption('--around-finding', { value: 'CODE', description: 'Only the steps of this doctor finding (e.g. ENTROPY_COLLAPSE), from onset to last step' });
  full = Option.Boolean('--full', false, { description: 'Print prompt and completion in full' });
  json = Option.Boolean('--json', false, { description: 'One JSON object per line instead of text' });

  async exec(): Promise<number> {
    const { execSamples } = await import('./samples-exec.js');
    return execSamples(this);
  }
}
