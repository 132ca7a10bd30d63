import { Command, Option } from 'clipanion';

import { ProbeCommand } from '../base-command.js';
import { EXIT_CODES } from '../exit-codes.js';
import { valueOption } from '../named-options.js';
import { isNumberIn, isOneOf, isPositive } from '../option-values.js';

/** Exit code after a halt: the run was stopped on a finding. */
export const HALTED_EXIT_CODE = EXIT_CODES.findings;

export class WatchCommand extends ProbeCommand {
  static paths = [['watch']];
  static usage = Command.Usage({
    description: 'Follow a live run and print findings as they appear; optionally halt it on a critical one',
    details: `
      Re-diagnoses the run whenever new step parts appear (and through its compaction and end),
      printing each finding once. On the first finding at \`--halt-on\` severity it records an
      \`auto_halt\` event in the run, sends SIGTERM to \`--halt-pid\` and runs \`--halt-command\`
      (with the finding as JSON in RLPROBE_FINDING). Exits when the run ends: code 0, or
      ${HALTED_EXIT_CODE} after a halt. Start it before the run: it waits for the run directory.
    `,
    examples: [
      ['Follow a run', '$0 watch runs/exp1'],
      ['Stop the trainer on a critical finding', '$0 watch runs/exp1 --halt-pid 4242'],
      ['Cancel a Slurm job instead', '$0 watch runs/exp1 --halt-command "scancel $SLURM_JOB_ID"'],
    ],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'One JSON object per finding (and per halt)' });
  interval = valueOption('--interval', { value: 'MS', description: 'Milliseconds between looks at the run (at least 10)', default: '2000', validator: isNumberIn(10, Infinity) });
  haltOn = valueOption('--halt-on', { value: 'SEVERITY', description: 'Severity that halts: critical, warn or never', default: 'critical', validator: isOneOf(['critical', 'warn', 'never']) });
  minConfidence = valueOption('--min-confidence', { value: 'P', description: 'A finding below this confidence (0..1) never halts', default: '0.7', validator: isNumberIn(0, 1) });
  haltPid = valueOption('--halt-pid', { value: 'PID', description: 'Send SIGTERM to this process on a halt', validator: isPositive });
  haltCommand = valueOption('--halt-command', { value: 'COMMAND', description: 'Run this shell command on a halt' });

  async exec(): Promise<number> {
    const { execWatch } = await import('./watch-exec.js');
    return execWatch(this);
  }
}
