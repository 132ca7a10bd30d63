import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { valueOption } from '../named-options.js';
import { isCount } from '../option-values.js';

export class TrialShowCommand extends ProbeCommand {
  static paths = [['trial', 'show']];
  static usage = Command.Usage({
    category: 'Trials',
    description: 'Show one captured trial: rewards, exception, timings, warnings, files and ledger, and its span tree',
    details:
      'The capture is named by its capture key, trial id, trial name, or a unique prefix of its key. The output is bounded ' +
      'whatever the size of the trial: the ledger is summarised by role and reason with the first entries of each reason ' +
      '(--files lists every entry), and the span tree is cut at --tree-lines.',
    examples: [
      ['By trial name', '$0 trial show runs/exp1 hello__AbC1234'],
      ['Every file of the ledger', '$0 trial show runs/exp1 hello__AbC1234 --files'],
      ['As JSON with its tree', '$0 trial show runs/exp1 hello__AbC1234 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  capture = Option.String({ name: 'capture' });
  treeLimit = valueOption('--tree-lines', { value: 'N', description: 'Print at most N lines (JSON: nodes) of the span tree; 0: all', default: '400', validator: isCount });
  files = Option.Boolean('--files', false, { description: 'List every ledger entry, not only the first of each reason' });
  json = Option.Boolean('--json', false, { description: 'Print the manifest and the span tree as JSON' });

  async exec(): Promise<number> {
    const { execTrialShow } = await import('./trial-show-exec.js');
    return execTrialShow(this);
  }
}
