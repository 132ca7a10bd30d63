import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';

export class DiffCommand extends ProbeCommand {
  static paths = [['diff']];
  static usage = Command.Usage({
    description: 'Compare two runs: config, environment, every shared metric, where they diverge, and findings in one only',
    details: `
      Trainer config, environment and run facts as added (+), removed (-) and changed (~) keys.
      Per metric present in both, on the steps both logged: final, best (by the metric's
      direction), area under the curve, and the first divergence — the first step where |B − A|
      stays past 3 σ for 3 points in a row, σ the noise of the difference estimated from past
      points only. The earliest diverging metric is the lead indicator. Warns when the step axes
      differ. Then the doctor's findings present in one run and not the other.
    `,
    examples: [
      ['Compare two runs', '$0 diff runs/baseline runs/lr-2x'],
      ['As JSON', '$0 diff runs/baseline runs/lr-2x --json'],
    ],
  });

  a = Option.String({ name: 'runA' });
  b = Option.String({ name: 'runB' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const { execDiff } = await import('./diff-exec.js');
    return execDiff(this);
  }
}
