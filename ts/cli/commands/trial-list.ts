import { Command, Option } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isCount, isStepRange } from '../option-values.js';
import { terminalLine } from '../terminal-text.js';
import { ledgerText, rewardText, spansText, statusText, trajectoryText } from './trial-common.js';

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
    const reader = RunReader.open(this.run);
    const trials = reader.trials({ step: this.step, stepRange: this.steps });
    const out = this.context.stdout;
    if (this.json) {
      out.write(`${JSON.stringify(trials)}\n`);
      return 0;
    }
    for (const t of trials) {
      const ids = [t.sample_id ? `sample=${t.sample_id}` : '', t.group_id ? `group=${t.group_id}` : ''].filter(Boolean).join(' ');
      out.write(`${terminalLine(`step ${t.step}  ${t.capture_key}  ${JSON.stringify(t.trial.name)}  ${statusText(t)}  ${rewardText(t.trial.rewards)}${ids ? `  [${ids}]` : ''}`)}\n`);
      out.write(`${terminalLine(`    files ${ledgerText(t.ledger)}; ${trajectoryText(t)}; ${spansText(t)}`)}\n`);
    }
    if (trials.length === 0) out.write(this.step === undefined && this.steps === undefined ? 'no trials captured in this run\n' : 'no trials captured at those steps\n');
    for (const b of reader.brokenTrials()) out.write(`${terminalLine(`unreadable capture ${b.dir}: ${b.error}`)}\n`);
    const unfinished = reader.unfinishedTrials();
    if (unfinished.length) out.write(`${terminalLine(`${unfinished.length} capture(s) unfinished (being written, or interrupted: capture or deliver again): ${unfinished.join(', ')}`)}\n`);
    return 0;
  }
}
